/* core/tls: contexts built from ssl.* settings (and the errors that name
 * the key), and the transport driven over a nonblocking socketpair against
 * an OpenSSL client: handshake through recv, data both ways, file regions,
 * a client certificate's principal, garbage instead of a ClientHello. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls/tls.h"

static char certs[256];

static const char *path(const char *name)
{
    static char buf[4][400];
    static int next;
    char *out = buf[next++ % 4];
    snprintf(out, 400, "%s/%s", certs, name);
    return out;
}

static char *read_text(const char *file)
{
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    static char text[2][16384];
    static int next;
    char *out = text[next++ % 2];
    size_t n = fread(out, 1, sizeof text[0] - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(certs, sizeof certs, "/tmp/cairn-unit-tls-XXXXXX");
    if (!mkdtemp(certs))
        return -1;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, certs);
    return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", certs);
    return system(cmd) == 0 ? 0 : -1;
}

/* Creates a listener from key/value pairs (NULL-terminated); returns it,
 * or NULL with err filled. */
static struct tls_listener *listener_with(char *err, size_t errlen, ...)
{
    struct tls_settings s;
    memset(&s, 0, sizeof s);
    va_list ap;
    va_start(ap, errlen);
    int key;
    while ((key = va_arg(ap, int)) >= 0)
        assert_int_equal(tls_settings_set(&s, (enum tls_key)key, va_arg(ap, const char *)), 0);
    va_end(ap);
    struct tls_listener *l = NULL;
    err[0] = '\0';
    tls_listener_create("SSL", &s, NULL, NULL, &l, err, errlen);
    tls_settings_clear(&s);
    return l;
}

static void expect_refused(struct tls_listener *l, const char *err, const char *want)
{
    assert_null(l);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_context_errors_name_the_key(void **state)
{
    (void)state;
    char err[1024];
    expect_refused(listener_with(err, sizeof err, -1), err, "an SSL listener needs ssl.keystore.location");
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), TLS_ENABLED_PROTOCOLS,
                                 "TLSv1.2,TLSv9", -1),
                   err, "ssl.enabled.protocols: unknown protocol 'TLSv9'");
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), TLS_CIPHER_SUITES,
                                 "NO_SUCH_SUITE", -1),
                   err, "ssl.cipher.suites: no usable TLS 1.2 cipher suite");
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), TLS_KEYSTORE_KEY, "x", -1),
                   err, "are both set");
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("missing.pem"), -1), err,
                   "ssl.keystore.location: cannot open");
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), TLS_TRUSTSTORE_LOCATION,
                                 path("server.key"), -1),
                   err, "ssl.truststore.location: no certificate found");
    expect_refused(
        listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), TLS_KEYSTORE_TYPE, "JKS", -1), err,
        "ssl.keystore.type: type JKS is not supported (only PEM)");
    /* A key that belongs to another certificate. */
    char chain[16384];
    snprintf(chain, sizeof chain, "%s", read_text(path("server.crt")));
    expect_refused(listener_with(err, sizeof err, TLS_KEYSTORE_CERTIFICATE_CHAIN, chain, TLS_KEYSTORE_KEY,
                                 read_text(path("client.key")), -1),
                   err, "ssl.keystore.key: the private key does not match the certificate");

    /* Inline PEM, IANA suite names and an explicit protocol range work. */
    struct tls_listener *l = listener_with(
        err, sizeof err, TLS_KEYSTORE_CERTIFICATE_CHAIN, chain, TLS_KEYSTORE_KEY, read_text(path("server.key")),
        TLS_CIPHER_SUITES, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256", TLS_ENABLED_PROTOCOLS,
        "TLSv1.2,TLSv1.3", TLS_TRUSTSTORE_CERTIFICATES, read_text(path("ca.pem")), -1);
    if (!l)
        fail_msg("%s", err);
    assert_int_equal(tls_listener_reload(l, err, sizeof err), 0);
    tls_listener_free(l);
}

/* New settings for a running listener (a dynamic config change): the
 * same ones are a no-op, bad ones are refused naming the key and leave the
 * listener as it was, good ones are taken (and reloaded from then on). */
static void test_listener_update(void **state)
{
    (void)state;
    char err[1024];
    struct tls_listener *l = listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), -1);
    if (!l)
        fail_msg("%s", err);
    struct tls_settings s;
    memset(&s, 0, sizeof s);
    assert_int_equal(tls_settings_set(&s, TLS_KEYSTORE_LOCATION, path("server.pem")), 0);
    assert_int_equal(tls_listener_check(l, &s, err, sizeof err), 0);
    assert_int_equal(tls_listener_update(l, &s, err, sizeof err), 0);
    assert_int_equal(tls_settings_set(&s, TLS_KEYSTORE_LOCATION, path("missing.pem")), 0);
    assert_int_equal(tls_listener_check(l, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "listener SSL: ssl.keystore.location: cannot open"));
    assert_int_equal(tls_listener_update(l, &s, err, sizeof err), -1);
    assert_int_equal(tls_listener_reload(l, err, sizeof err), 0); /* still the old, good file */
    assert_int_equal(tls_settings_set(&s, TLS_KEYSTORE_LOCATION, path("other-server.pem")), 0);
    assert_int_equal(tls_listener_check(l, &s, err, sizeof err), 0);
    assert_int_equal(tls_listener_update(l, &s, err, sizeof err), 1);
    assert_int_equal(tls_listener_update(l, &s, err, sizeof err), 0);
    tls_settings_clear(&s);
    tls_listener_free(l);
}

/* A link client from key/value pairs (NULL-terminated); NULL with err. */
static struct tls_client *link_client_with(char *err, size_t errlen, ...)
{
    struct tls_settings s;
    memset(&s, 0, sizeof s);
    va_list ap;
    va_start(ap, errlen);
    int key;
    while ((key = va_arg(ap, int)) >= 0)
        assert_int_equal(tls_settings_set(&s, (enum tls_key)key, va_arg(ap, const char *)), 0);
    va_end(ap);
    struct tls_client *c = NULL;
    err[0] = '\0';
    tls_client_create("controller", &s, &c, err, errlen);
    tls_settings_clear(&s);
    return c;
}

/* The outgoing links' contexts: a truststore is required (the server is
 * always verified), the keystore optional, the endpoint check https or
 * off; errors name the link and the key. */
static void test_link_client_settings(void **state)
{
    (void)state;
    char err[1024];
    struct tls_client *c = link_client_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"), -1);
    assert_null(c);
    if (!strstr(err, "controller link: an SSL link needs trusted certificates"))
        fail_msg("%s", err);
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_ENDPOINT_IDENTIFICATION, "dns",
                         -1);
    assert_null(c);
    if (!strstr(err, "ssl.endpoint.identification.algorithm: 'dns' is not supported"))
        fail_msg("%s", err);
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_KEYSTORE_LOCATION,
                         path("missing.pem"), -1);
    assert_null(c);
    if (!strstr(err, "ssl.keystore.location: cannot open"))
        fail_msg("%s", err);
    /* Truststore only (no client certificate), and with a keystore and
     * the host check off. */
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), -1);
    if (!c)
        fail_msg("%s", err);
    tls_client_free(c);
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_KEYSTORE_LOCATION,
                         path("server.pem"), TLS_ENDPOINT_IDENTIFICATION, "", -1);
    if (!c)
        fail_msg("%s", err);
    tls_client_free(c);
    /* The links load ssl.crl.location as the listeners do. */
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_CRL_LOCATION,
                         path("missing-crl.pem"), -1);
    assert_null(c);
    if (!strstr(err, "controller link: ssl.crl.location: cannot open"))
        fail_msg("%s", err);
    c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_CRL_LOCATION, path("crl.pem"),
                         -1);
    if (!c)
        fail_msg("%s", err);
    /* New settings at runtime: a link needs its truststore still. */
    struct tls_settings s;
    memset(&s, 0, sizeof s);
    assert_int_equal(tls_settings_set(&s, TLS_TRUSTSTORE_LOCATION, path("ca.pem")), 0);
    assert_int_equal(tls_settings_set(&s, TLS_CRL_LOCATION, path("crl.pem")), 0);
    assert_int_equal(tls_client_update(c, &s, err, sizeof err), 0); /* the same */
    assert_int_equal(tls_settings_set(&s, TLS_TRUSTSTORE_LOCATION, NULL), 0);
    assert_int_equal(tls_client_check(c, &s, err, sizeof err), -1);
    if (!strstr(err, "controller link: an SSL link needs trusted certificates"))
        fail_msg("%s", err);
    assert_int_equal(tls_client_update(c, &s, err, sizeof err), -1);
    assert_int_equal(tls_settings_set(&s, TLS_TRUSTSTORE_LOCATION, path("other-ca.pem")), 0);
    assert_int_equal(tls_settings_set(&s, TLS_CRL_LOCATION, NULL), 0);
    assert_int_equal(tls_client_check(c, &s, err, sizeof err), 0);
    assert_int_equal(tls_client_update(c, &s, err, sizeof err), 1);
    assert_int_equal(tls_client_reload(c, err, sizeof err), 0);
    tls_settings_clear(&s);
    tls_client_free(c);
}

static void write_text(const char *file, const char *text)
{
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A link's reload re-reads the files; a bad one is refused with the link,
 * the key and the file named (the old context stays in use). */
static void test_link_client_reload(void **state)
{
    (void)state;
    char err[1024], trust[400];
    snprintf(trust, sizeof trust, "%s", path("link-trust.pem"));
    write_text(trust, read_text(path("ca.pem")));
    struct tls_client *c = link_client_with(err, sizeof err, TLS_TRUSTSTORE_LOCATION, trust, -1);
    if (!c)
        fail_msg("%s", err);
    assert_int_equal(tls_client_reload(c, err, sizeof err), 0);
    write_text(trust, "not a certificate\n");
    assert_int_equal(tls_client_reload(c, err, sizeof err), -1);
    if (!strstr(err, "controller link: ssl.truststore.location: no certificate found") || !strstr(err, trust))
        fail_msg("%s", err);
    assert_int_equal(unlink(trust), 0);
    assert_int_equal(tls_client_reload(c, err, sizeof err), -1);
    if (!strstr(err, "cannot open") || !strstr(err, trust))
        fail_msg("%s", err);
    write_text(trust, read_text(path("other-ca.pem")));
    assert_int_equal(tls_client_reload(c, err, sizeof err), 0);
    tls_client_free(c);
}

struct pair {
    int server_fd, client_fd;
    struct net_transport server;
    SSL_CTX *client_ctx;
    SSL *client;
};

static void pair_open(struct pair *p, struct tls_listener *l, const char *client_cert)
{
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    p->server_fd = fds[0];
    p->client_fd = fds[1];
    p->server = (struct net_transport){&net_plain_transport_ops, NULL, p->server_fd};
    assert_int_equal(tls_listener_transport_init(l, &p->server), 0);
    assert_ptr_equal(p->server.ops, &tls_transport_ops);
    p->client_ctx = SSL_CTX_new(TLS_client_method());
    assert_int_equal(SSL_CTX_load_verify_locations(p->client_ctx, path("ca.pem"), NULL), 1);
    SSL_CTX_set_verify(p->client_ctx, SSL_VERIFY_PEER, NULL);
    if (client_cert) {
        char name[64];
        snprintf(name, sizeof name, "%s.pem", client_cert);
        assert_int_equal(SSL_CTX_use_certificate_file(p->client_ctx, path(name), SSL_FILETYPE_PEM), 1);
        snprintf(name, sizeof name, "%s.key", client_cert);
        assert_int_equal(SSL_CTX_use_PrivateKey_file(p->client_ctx, path(name), SSL_FILETYPE_PEM), 1);
    }
    p->client = SSL_new(p->client_ctx);
    SSL_set_fd(p->client, p->client_fd);
    SSL_set_connect_state(p->client);
}

static void pair_close(struct pair *p)
{
    if (p->server.ops->close)
        p->server.ops->close(&p->server);
    SSL_free(p->client);
    SSL_CTX_free(p->client_ctx);
    close(p->server_fd);
    close(p->client_fd);
}

/* Drives both sides until the client finished its handshake and the
 * server's recv went past it. Returns the server's last recv errno. */
static void pair_handshake(struct pair *p)
{
    char byte;
    assert_true(p->server.ops->deadline_ms(&p->server) > 0);
    for (int i = 0; i < 100; i++) {
        int c = SSL_do_handshake(p->client);
        ssize_t n = p->server.ops->recv(&p->server, &byte, 1);
        assert_true(n < 0 && errno == EAGAIN);
        if (c == 1 && p->server.ops->deadline_ms(&p->server) == 0)
            return;
    }
    fail_msg("handshake did not finish");
}

/* Reads exactly len bytes on the server side. */
static void server_read(struct pair *p, char *buf, size_t len)
{
    size_t got = 0;
    for (int i = 0; got < len && i < 1000; i++) {
        ssize_t n = p->server.ops->recv(&p->server, buf + got, len - got);
        if (n > 0)
            got += (size_t)n;
        else
            assert_true(n < 0 && errno == EAGAIN);
    }
    assert_int_equal(got, len);
}

static struct tls_listener *server_listener(const char *client_auth)
{
    char err[1024];
    struct tls_listener *l = listener_with(err, sizeof err, TLS_KEYSTORE_LOCATION, path("server.pem"),
                                           TLS_TRUSTSTORE_LOCATION, path("ca.pem"), TLS_CLIENT_AUTH, client_auth, -1);
    if (!l)
        fail_msg("%s", err);
    return l;
}

static void test_transport_round_trip(void **state)
{
    (void)state;
    struct tls_listener *l = server_listener("none");
    struct pair p;
    pair_open(&p, l, NULL);
    pair_handshake(&p);
    char type[64], name[512];
    assert_int_equal(p.server.ops->peer_principal(&p.server, type, sizeof type, name, sizeof name), 0);

    /* Client to server, the server reading in small pieces. */
    assert_int_equal(SSL_write(p.client, "hello, broker", 13), 13);
    char buf[64] = "";
    server_read(&p, buf, 5);
    assert_true(p.server.ops->pending(&p.server) > 0);
    server_read(&p, buf + 5, 8);
    assert_string_equal(buf, "hello, broker");

    /* Server to client: iovecs, then a file region read and encrypted. */
    struct iovec iov[2] = {{"head", 4}, {"er:", 3}};
    assert_int_equal(p.server.ops->send(&p.server, iov, 2, NET_TRANSPORT_MORE), 7);
    char file_path[] = "/tmp/cairn-unit-tls-file-XXXXXX";
    int fd = mkstemp(file_path);
    assert_true(fd >= 0);
    static char content[200000], received[200000];
    for (size_t i = 0; i < sizeof content; i++)
        content[i] = (char)('a' + i % 23);
    assert_int_equal(write(fd, content, sizeof content), (ssize_t)sizeof content);
    size_t sent = 0, got = 0;
    char header[8] = "";
    while (got < 7) {
        int n = SSL_read(p.client, header + got, (int)(7 - got));
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_string_equal(header, "header:");
    got = 0;
    /* Offset 1000 onwards; the socketpair is small, so both sides take turns. */
    size_t want = sizeof content - 1000;
    for (int i = 0; got < want && i < 100000; i++) {
        if (sent < want) {
            ssize_t n = p.server.ops->send_file(&p.server, fd, 1000 + (int64_t)sent, want - sent);
            if (n > 0)
                sent += (size_t)n;
            else
                assert_true(n < 0 && errno == EAGAIN);
        }
        int n = SSL_read(p.client, received + got, (int)(want - got));
        if (n > 0)
            got += (size_t)n;
    }
    assert_int_equal(got, want);
    assert_memory_equal(received, content + 1000, want);
    /* Past the end of the file: 0, which the write path treats as an error. */
    assert_int_equal(p.server.ops->send_file(&p.server, fd, sizeof content, 10), 0);
    close(fd);
    unlink(file_path);

    /* A close_notify from the client reads as the end of the stream. */
    SSL_shutdown(p.client);
    assert_int_equal(p.server.ops->recv(&p.server, buf, sizeof buf), 0);
    pair_close(&p);
    tls_listener_free(l);
}

static void test_client_certificate_principal(void **state)
{
    (void)state;
    struct tls_listener *l = server_listener("required");
    struct pair p;
    pair_open(&p, l, "client");
    pair_handshake(&p);
    char type[64], name[512];
    assert_int_equal(p.server.ops->peer_principal(&p.server, type, sizeof type, name, sizeof name), 1);
    assert_string_equal(type, "User");
    assert_string_equal(name, "CN=alice,OU=Streams,O=Example,C=US");
    /* Reported once. */
    assert_int_equal(p.server.ops->peer_principal(&p.server, type, sizeof type, name, sizeof name), 0);
    pair_close(&p);

    /* Without a certificate the server's handshake fails. */
    pair_open(&p, l, NULL);
    char byte;
    bool refused = false;
    for (int i = 0; i < 100 && !refused; i++) {
        SSL_do_handshake(p.client);
        ssize_t n = p.server.ops->recv(&p.server, &byte, 1);
        refused = n < 0 && errno == ECONNRESET;
    }
    assert_true(refused);
    pair_close(&p);
    ERR_clear_error();
    tls_listener_free(l);
}

static void test_garbage_instead_of_client_hello(void **state)
{
    (void)state;
    struct tls_listener *l = server_listener("none");
    struct pair p;
    pair_open(&p, l, NULL);
    static const char request[] = "\0\0\0\x15\0\x12\0\0\0\0\0\x01\0\x07rdkafka\0";
    assert_int_equal(write(p.client_fd, request, sizeof request), (ssize_t)sizeof request);
    char buf[16];
    ssize_t n = p.server.ops->recv(&p.server, buf, sizeof buf);
    assert_int_equal(n, -1);
    assert_int_equal(errno, ECONNRESET);
    assert_false(p.server.ops->wants_write(&p.server));
    pair_close(&p);
    tls_listener_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_errors_name_the_key),
        cmocka_unit_test(test_listener_update),
        cmocka_unit_test(test_link_client_settings),
        cmocka_unit_test(test_link_client_reload),
        cmocka_unit_test(test_transport_round_trip),
        cmocka_unit_test(test_client_certificate_principal),
        cmocka_unit_test(test_garbage_instead_of_client_hello),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
