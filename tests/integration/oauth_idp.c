/* The test identity provider (oauth_idp.h): one thread accepting on the
 * HTTP and HTTPS ports, one thread per connection so a client slow to send
 * its request (a loaded machine) holds up no other. */
#include "oauth_idp.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "jwt_forge.h"

struct idp_conn {
    struct idp *idp;
    int fd;
    SSL *ssl; /* NULL on the HTTP port */
};

static ssize_t conn_read(struct idp_conn *c, char *buf, size_t cap)
{
    if (!c->ssl)
        return read(c->fd, buf, cap);
    int n = SSL_read(c->ssl, buf, (int)cap);
    return n > 0 ? n : -1;
}

static void conn_write(struct idp_conn *c, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = c->ssl ? SSL_write(c->ssl, buf, (int)len) : write(c->fd, buf, len);
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 503:
        return "Service Unavailable";
    default:
        return "Bad Request";
    }
}

static void answer(struct idp_conn *c, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: "
                     "close\r\n\r\n",
                     status, status_text(status), strlen(body));
    conn_write(c, head, (size_t)n);
    conn_write(c, body, strlen(body));
}

/* The client id and secret of "Authorization: Basic ..." in the request. */
static int basic_credentials(const char *req, char *out, size_t cap)
{
    for (const char *p = req; (p = strchr(p, '\n')); p++) {
        if (strncasecmp(p + 1, "authorization: basic ", 21) != 0)
            continue;
        const char *b64 = p + 22;
        size_t len = strcspn(b64, "\r\n");
        if (len == 0 || len / 4 * 3 + 1 > cap)
            return -1;
        int n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b64, (int)len);
        if (n < 0)
            return -1;
        out[n] = '\0';
        return 0;
    }
    return -1;
}

static void serve_jwks(struct idp_conn *c)
{
    struct idp *idp = c->idp;
    pthread_mutex_lock(&idp->mu);
    char *body = idp->jwks ? strdup(idp->jwks) : NULL;
    pthread_mutex_unlock(&idp->mu);
    if (!body) {
        answer(c, 404, "{\"error\":\"no JWK set published\"}");
        return;
    }
    atomic_fetch_add(&idp->jwks_served, 1);
    answer(c, 200, body);
    free(body);
}

static void serve_token(struct idp_conn *c, const char *req, const char *body)
{
    struct idp *idp = c->idp;
    const struct idp_options *o = &idp->o;
    if (atomic_load(&idp->down)) {
        atomic_fetch_add(&idp->refused, 1);
        answer(c, 503, "{\"error\":\"temporarily_unavailable\",\"error_description\":\"down for the test\"}");
        return;
    }
    char want_scope[128] = "";
    if (o->scope)
        snprintf(want_scope, sizeof want_scope, "scope=%s", o->scope);
    if (!strstr(body, "grant_type=client_credentials") || (o->scope && !strstr(body, want_scope))) {
        atomic_fetch_add(&idp->refused, 1);
        answer(c, 400, "{\"error\":\"invalid_request\",\"error_description\":\"not a client-credentials grant\"}");
        return;
    }
    char creds[512], expected[512];
    snprintf(expected, sizeof expected, "%s:%s", o->client_id, o->secret);
    if (basic_credentials(req, creds, sizeof creds) != 0 || strcmp(creds, expected) != 0) {
        atomic_fetch_add(&idp->refused, 1);
        answer(c, 401, "{\"error\":\"invalid_client\",\"error_description\":\"client authentication failed\"}");
        return;
    }
    char claims[768];
    long now = (long)time(NULL);
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"aud\":\"%s\",\"iss\":\"%s\",\"iat\":%ld,\"exp\":%ld,\"scope\":\"%s\"}", o->client_id,
             o->audience, o->issuer, now - 1, now + o->lifetime_s, o->scope ? o->scope : "kafka");
    pthread_mutex_lock(&idp->mu);
    char *token = forge_token(o->key, o->alg, o->kid, claims);
    pthread_mutex_unlock(&idp->mu);
    if (!token) {
        answer(c, 400, "{\"error\":\"server_error\"}");
        return;
    }
    char reply[8192];
    snprintf(reply, sizeof reply, "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":%d}", token,
             o->lifetime_s);
    free(token);
    atomic_fetch_add(&idp->issued, 1);
    answer(c, 200, reply);
}

static void serve(struct idp_conn *c)
{
    struct timeval tv = {15, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (c->ssl && SSL_accept(c->ssl) != 1)
        return; /* a client that does not trust the certificate hangs up here */
    char req[8192];
    size_t len = 0;
    const char *body = NULL;
    while (len + 1 < sizeof req) {
        ssize_t got = conn_read(c, req + len, sizeof req - 1 - len);
        if (got <= 0)
            return;
        len += (size_t)got;
        req[len] = '\0';
        char *end = strstr(req, "\r\n\r\n");
        const char *cl = strcasestr(req, "content-length:");
        if (end && (!cl || cl > end || strlen(end + 4) >= (size_t)atoi(cl + 15))) {
            body = end + 4;
            break;
        }
    }
    if (!body) {
        fprintf(stderr, "[idp] incomplete request (%zu bytes): %.300s\n", len, req);
        return;
    }
    if (strncmp(req, "GET /jwks.json ", 15) == 0)
        serve_jwks(c);
    else if (strncmp(req, "POST /token ", 12) == 0 && !c->ssl)
        serve_token(c, req, body);
    else
        answer(c, 404, "{\"error\":\"not found\"}");
}

static void *conn_main(void *arg)
{
    struct idp_conn *c = arg;
    serve(c);
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    close(c->fd);
    atomic_fetch_sub(&c->idp->serving, 1);
    free(c);
    return NULL;
}

static void accept_one(struct idp *idp, int listen_fd, bool tls)
{
    /* CLOEXEC: the cairnd processes forked meanwhile must not hold them. */
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    struct idp_conn *c = calloc(1, sizeof *c);
    if (c) {
        c->idp = idp;
        c->fd = fd;
    }
    if (c && tls && (!(c->ssl = SSL_new(idp->tls)) || SSL_set_fd(c->ssl, fd) != 1)) {
        SSL_free(c->ssl);
        free(c);
        c = NULL;
    }
    pthread_t t;
    atomic_fetch_add(&idp->serving, 1);
    if (!c || pthread_create(&t, NULL, conn_main, c) != 0) {
        atomic_fetch_sub(&idp->serving, 1);
        close(fd);
        if (c)
            SSL_free(c->ssl);
        free(c);
        return;
    }
    pthread_detach(t);
}

static void *idp_main(void *arg)
{
    struct idp *idp = arg;
    while (!atomic_load(&idp->stop)) {
        struct pollfd p[2] = {{idp->fd, POLLIN, 0}, {idp->tls_fd, POLLIN, 0}};
        if (poll(p, idp->tls_fd >= 0 ? 2 : 1, 200) <= 0)
            continue;
        if (p[0].revents & POLLIN)
            accept_one(idp, idp->fd, false);
        if (idp->tls_fd >= 0 && (p[1].revents & POLLIN))
            accept_one(idp, idp->tls_fd, true);
    }
    while (atomic_load(&idp->serving) > 0)
        usleep(10000);
    return NULL;
}

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

void idp_start(struct idp *idp, const struct idp_options *options)
{
    signal(SIGPIPE, SIG_IGN); /* a client that hung up fails a write, not the test */
    memset(idp, 0, sizeof *idp);
    idp->o = *options;
    if (!idp->o.audience)
        idp->o.audience = "cairn";
    if (!idp->o.issuer)
        idp->o.issuer = "https://issuer.test";
    pthread_mutex_init(&idp->mu, NULL);
    idp->fd = listen_loopback(&idp->port);
    idp->tls_fd = -1;
    if (options->tls_cert) {
        idp->tls = SSL_CTX_new(TLS_server_method());
        assert_non_null(idp->tls);
        if (SSL_CTX_use_certificate_chain_file(idp->tls, options->tls_cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(idp->tls, options->tls_key, SSL_FILETYPE_PEM) != 1)
            fail_msg("idp: cannot load %s / %s", options->tls_cert, options->tls_key);
        idp->tls_fd = listen_loopback(&idp->tls_port);
    }
    assert_int_equal(pthread_create(&idp->thread, NULL, idp_main, idp), 0);
}

void idp_sign_with(struct idp *idp, EVP_PKEY *key, const char *alg, const char *kid)
{
    pthread_mutex_lock(&idp->mu);
    idp->o.key = key;
    idp->o.alg = alg;
    idp->o.kid = kid;
    pthread_mutex_unlock(&idp->mu);
}

void idp_publish(struct idp *idp, const char *const *jwks, size_t count)
{
    size_t len = 16;
    for (size_t i = 0; i < count; i++)
        len += strlen(jwks[i]) + 1;
    char *doc = malloc(len);
    assert_non_null(doc);
    size_t at = (size_t)snprintf(doc, len, "{\"keys\":[");
    for (size_t i = 0; i < count; i++)
        at += (size_t)snprintf(doc + at, len - at, "%s%s", i ? "," : "", jwks[i]);
    snprintf(doc + at, len - at, "]}");
    pthread_mutex_lock(&idp->mu);
    free(idp->jwks);
    idp->jwks = doc;
    pthread_mutex_unlock(&idp->mu);
}

void idp_stop(struct idp *idp)
{
    atomic_store(&idp->stop, true);
    pthread_join(idp->thread, NULL);
    close(idp->fd);
    if (idp->tls_fd >= 0)
        close(idp->tls_fd);
    SSL_CTX_free(idp->tls);
    free(idp->jwks);
    pthread_mutex_destroy(&idp->mu);
}
