/* Client certificates on an SSL listener of a real cairnd, with librdkafka:
 * a revoked certificate refused once the CA's CRL names it
 * (ssl.crl.location, re-read on SIGHUP), a not-yet-valid one refused with
 * the reason in the log, ssl.client.auth=requested (no certificate:
 * ANONYMOUS; a certificate: the principal auth-mtls maps from its SPIFFE
 * URI SAN), and inline PEM stores with the principal from the DNS SAN.
 * The certificates and CRLs come from tls/make_certs.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"
#include "tls_client.h"
#include "tls_cluster.h"

static char certs_dir[256];

static int group_setup(void **state)
{
    (void)state;
    return tls_certs_make("cairn-tls-client-certs", certs_dir, sizeof certs_dir);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

struct ssl_broker {
    struct test_broker b;
    char ssl_bootstrap[64];
};

/* PLAINTEXT on the harness port plus an SSL listener, with the overrides
 * in extra (the keystore among them). */
static void start_ssl_broker(struct ssl_broker *sb, const char *const *extra)
{
    int ssl_port = harness_free_port();
    assert_true(ssl_port > 0);
    snprintf(sb->ssl_bootstrap, sizeof sb->ssl_bootstrap, "127.0.0.1:%d", ssl_port);
    char listeners[160];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d", ssl_port);
    const char *overrides[BROKER_MAX_OVERRIDES] = {listeners};
    int n = 1;
    for (int i = 0; extra[i]; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_start(&sb->b, overrides);
}

static bool client_gets_in(const struct ssl_broker *sb, const char *client)
{
    struct ssl_conf c;
    return rk_metadata_works(sb->ssl_bootstrap, ssl_client_conf(&c, certs_dir, NULL, client), 5000);
}

static const char *file_setting(char *buf, size_t len, const char *key, const char *file)
{
    snprintf(buf, len, "%s=%s/%s", key, certs_dir, file);
    return buf;
}

/* The CRL is checked from the listener's own key, and a new CRL written
 * over the file takes effect on SIGHUP; a broken one keeps the last. Both
 * CAs are trusted, but only one has a CRL: the other's clients are
 * refused (revocation fails closed). */
static void test_revoked_client_refused_after_crl_reload(void **state)
{
    (void)state;
    const char *before[] = {"crl-before.pem", NULL}, *after[] = {"crl.pem", NULL};
    const char *both_cas[] = {"ca.pem", "other-ca.pem", NULL};
    tls_certs_write(certs_dir, "live-crl.pem", before);
    tls_certs_write(certs_dir, "both-cas.pem", both_cas);
    char keystore[400], trust[400], crl[400];
    const char *extra[] = {file_setting(keystore, sizeof keystore, "ssl.keystore.location", "server.pem"),
                           file_setting(trust, sizeof trust, "ssl.truststore.location", "both-cas.pem"),
                           file_setting(crl, sizeof crl, "listener.name.ssl.ssl.crl.location", "live-crl.pem"),
                           "ssl.client.auth=required", NULL};
    struct ssl_broker sb;
    start_ssl_broker(&sb, extra);
    /* The CRL of before bob's revocation: both get in. */
    assert_true(client_gets_in(&sb, "client"));
    assert_true(client_gets_in(&sb, "revoked"));
    assert_false(client_gets_in(&sb, "stranger"));
    broker_wait_log_count(&sb.b, "client certificate refused: unable to get certificate CRL", 1, 5000);

    tls_certs_write(certs_dir, "live-crl.pem", after);
    assert_int_equal(kill(broker_pid(&sb.b), SIGHUP), 0);
    broker_wait_log_count(&sb.b, "listener SSL: TLS certificates and keys reloaded", 1, 10000);
    assert_false(client_gets_in(&sb, "revoked"));
    broker_wait_log_count(&sb.b, "client certificate refused: certificate revoked", 1, 5000);
    assert_true(client_gets_in(&sb, "client"));

    /* Not a CRL: the reload fails and the last CRL stays in force. */
    FILE *f = fopen(crl + strlen("listener.name.ssl.ssl.crl.location="), "w");
    assert_non_null(f);
    fputs("not a CRL\n", f);
    fclose(f);
    assert_int_equal(kill(broker_pid(&sb.b), SIGHUP), 0);
    broker_wait_log_count(&sb.b, "TLS reload failed, keeping the previous certificates", 1, 10000);
    assert_int_equal(broker_log_count(&sb.b, "listener.name.ssl.ssl.crl.location: no CRL found"), 1);
    int refused = broker_log_count(&sb.b, "certificate revoked");
    assert_false(client_gets_in(&sb, "revoked"));
    broker_wait_log_count(&sb.b, "certificate revoked", refused + 1, 5000);
    assert_true(client_gets_in(&sb, "client"));
    broker_stop(&sb.b); /* a clean exit, so a sanitizer build reports leaks */
    broker_mark_passed(&sb.b);
    broker_cleanup(&sb.b);
}

/* A certificate whose validity starts in 2090, from the trusted CA. */
static void test_not_yet_valid_client_refused(void **state)
{
    (void)state;
    char keystore[400], trust[400];
    const char *extra[] = {file_setting(keystore, sizeof keystore, "ssl.keystore.location", "server.pem"),
                           file_setting(trust, sizeof trust, "ssl.truststore.location", "ca.pem"),
                           "ssl.client.auth=required", NULL};
    struct ssl_broker sb;
    start_ssl_broker(&sb, extra);
    assert_false(client_gets_in(&sb, "future"));
    broker_wait_log_count(&sb.b, "client certificate refused: certificate is not yet valid", 1, 5000);
    assert_true(client_gets_in(&sb, "client"));
    broker_mark_passed(&sb.b);
    broker_cleanup(&sb.b);
}

static void create_topic_over_ssl(const struct ssl_broker *sb, const char *client, const char *topic)
{
    struct ssl_conf c;
    rd_kafka_t *rk = rk_producer_new(sb->ssl_bootstrap, ssl_client_conf(&c, certs_dir, NULL, client));
    char errstr[512];
    if (rk_create_topic_result(rk, topic, 1, 1, NULL, false, errstr, sizeof errstr) != 0)
        fail_msg("creating %s as %s: %s", topic, client ? client : "no certificate", errstr);
    rk_producer_destroy(rk);
}

/* Fails the test, showing the audit log, unless a line names both. */
static void expect_audit(const char *audit_path, const char *principal, const char *what)
{
    if (file_lines_with(audit_path, principal, what, NULL) >= 1)
        return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat '%s' >&2", audit_path);
    assert_int_equal(system(cmd), 0);
    fail_msg("no audit line names %s with %s", principal, what);
}

/* Audit and auth-mtls of this build, the audit log in certs_dir/<audit>. */
struct plugin_settings {
    char path[400], audit_path[400], audit_file[500];
};

static void plugin_settings(struct plugin_settings *p, const char *audit)
{
    snprintf(p->path, sizeof p->path, "plugin.path=%s/plugins", CAIRN_BINARY_DIR);
    snprintf(p->audit_path, sizeof p->audit_path, "%s/%s", certs_dir, audit);
    unlink(p->audit_path);
    snprintf(p->audit_file, sizeof p->audit_file, "plugin.audit.file.path=%s", p->audit_path);
}

/* requested: a client without a certificate is ANONYMOUS, one with a
 * certificate acts as auth-mtls maps its SPIFFE id, and one with a
 * certificate that fails verification is refused. */
static void test_requested_client_auth_maps_spiffe_id(void **state)
{
    (void)state;
    char keystore[400], trust[400];
    struct plugin_settings p;
    plugin_settings(&p, "audit-requested.log");
    const char *extra[] = {file_setting(keystore, sizeof keystore, "ssl.keystore.location", "server.pem"),
                           file_setting(trust, sizeof trust, "ssl.truststore.location", "ca.pem"),
                           "ssl.client.auth=requested",
                           p.path,
                           "plugins=audit,auth-mtls",
                           p.audit_file,
                           "plugin.auth-mtls.principal.source=san.uri",
                           "plugin.auth-mtls.ssl.principal.mapping.rules="
                           "RULE:^spiffe:\\/\\/example.org\\/ns\\/([^\\/]*)\\/sa\\/(.*)$/$2.$1/",
                           NULL};
    struct ssl_broker sb;
    start_ssl_broker(&sb, extra);
    create_topic_over_ssl(&sb, NULL, "by-nobody");
    create_topic_over_ssl(&sb, "client", "by-spiffe-alice");
    assert_false(client_gets_in(&sb, "stranger"));
    broker_wait_log_count(&sb.b, "client certificate refused: unable to get local issuer certificate", 1, 5000);
    broker_stop(&sb.b); /* the audit plugin writes everything before exiting */

    expect_audit(p.audit_path, "\"User:ANONYMOUS\"", "by-nobody");
    expect_audit(p.audit_path, "\"User:alice.prod\"", "by-spiffe-alice");
    assert_int_equal(file_lines_with(p.audit_path, "User:alice.prod", "by-nobody", NULL), 0);
    broker_mark_passed(&sb.b);
    broker_cleanup(&sb.b);
}

/* "key=" followed by the whole of file, into a malloc'd string. */
static char *inline_setting(const char *key, const char *file)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", certs_dir, file);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t cap = strlen(key) + 16384;
    char *kv = malloc(cap);
    assert_non_null(kv);
    size_t used = (size_t)snprintf(kv, cap, "%s=", key);
    used += fread(kv + used, 1, cap - used - 1, f);
    assert_true(feof(f));
    kv[used] = '\0';
    fclose(f);
    return kv;
}

/* Keystore and truststore as inline PEM values (KIP-651), mutual TLS with
 * librdkafka, the principal from the certificate's DNS SAN. */
static void test_inline_pem_stores_with_dns_san_principal(void **state)
{
    (void)state;
    char *chain = inline_setting("ssl.keystore.certificate.chain", "server.crt");
    char *key = inline_setting("ssl.keystore.key", "server.key");
    char *trusted = inline_setting("ssl.truststore.certificates", "ca.pem");
    struct plugin_settings p;
    plugin_settings(&p, "audit-inline.log");
    const char *extra[] = {"ssl.keystore.type=PEM",
                           chain,
                           key,
                           "ssl.truststore.type=PEM",
                           trusted,
                           "ssl.client.auth=required",
                           p.path,
                           "plugins=audit,auth-mtls",
                           p.audit_file,
                           "plugin.auth-mtls.principal.source=san.dns",
                           NULL};
    struct ssl_broker sb;
    start_ssl_broker(&sb, extra);
    free(chain);
    free(key);
    free(trusted);
    assert_false(client_gets_in(&sb, NULL));
    broker_wait_log_count(&sb.b, "peer did not return a certificate", 1, 5000);
    assert_false(client_gets_in(&sb, "stranger"));

    create_topic_over_ssl(&sb, "client", "inline-pem");
    struct ssl_conf c;
    rd_kafka_t *rk = rk_producer_new(sb.ssl_bootstrap, ssl_client_conf(&c, certs_dir, NULL, "client"));
    for (int i = 0; i < 20; i++) {
        char value[64];
        int len = snprintf(value, sizeof value, "inline-%d", i);
        assert_int_equal(rk_produce_blocking(rk, "inline-pem", 0, NULL, 0, value, (size_t)len, 0, NULL, NULL), 0);
    }
    assert_int_equal(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(rk)->delivered, 20);
    rk_producer_destroy(rk);
    broker_stop(&sb.b);

    expect_audit(p.audit_path, "\"User:alice.example\"", "\"authentication\"");
    expect_audit(p.audit_path, "\"User:alice.example\"", "inline-pem");
    broker_mark_passed(&sb.b);
    broker_cleanup(&sb.b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revoked_client_refused_after_crl_reload),
        cmocka_unit_test(test_not_yet_valid_client_refused),
        cmocka_unit_test(test_requested_client_auth_maps_spiffe_id),
        cmocka_unit_test(test_inline_pem_stores_with_dns_san_principal),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
