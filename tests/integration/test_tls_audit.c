/* TLS handshake refusals reach the audit log as failed authentications
 * (mechanism "SSL", principal User:ANONYMOUS, OpenSSL's reason), as SASL
 * failures do: a real cairnd with ssl.client.auth=required and the audit
 * plugin, librdkafka clients with no certificate and with one signed by
 * another CA, and one with a good certificate that is let in. Then raw
 * sockets: bytes that are no TLS, and a ClientHello that stalls past
 * ssl.handshake.timeout.ms, each refused on an SSL and a SASL_SSL listener
 * and recorded with that listener's security protocol. The certificates
 * are made by tls/make_certs.sh. */
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
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "tls_client.h"
#include "tls_cluster.h"

static char certs_dir[256];

static int group_setup(void **state)
{
    (void)state;
    return tls_certs_make("cairn-tls-audit", certs_dir, sizeof certs_dir);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

/* True when a Metadata request over SSL gets through within timeout_ms;
 * client names a certificate/key pair in certs_dir, or NULL for none. */
static bool ssl_metadata_works(const char *bootstrap, const char *client, int timeout_ms)
{
    struct ssl_conf c;
    return rk_metadata_works(bootstrap, ssl_client_conf(&c, certs_dir, NULL, client), timeout_ms);
}

/* The same over SASL_SSL: the TLS handshake comes before any SASL. */
static bool sasl_ssl_metadata_works(const char *bootstrap, int timeout_ms)
{
    struct ssl_conf c;
    ssl_client_conf(&c, certs_dir, NULL, NULL);
    const char *kv[24];
    int n = 0;
    for (; c.kv[n]; n++)
        kv[n] = c.kv[n];
    kv[1] = "sasl_ssl";
    const char *sasl[] = {"sasl.mechanisms", "SCRAM-SHA-256", "sasl.username", "alice", "sasl.password", "secret"};
    for (size_t i = 0; i < sizeof sasl / sizeof sasl[0]; i++)
        kv[n++] = sasl[i];
    kv[n] = NULL;
    return rk_metadata_works(bootstrap, kv, timeout_ms);
}

static void test_handshake_refusals_are_audited(void **state)
{
    (void)state;
    int ssl_port = harness_free_port(), sasl_ssl_port = harness_free_port();
    assert_true(ssl_port > 0 && sasl_ssl_port > 0);
    char listeners[200], keystore[400], trust[400], plugin_path[600], audit_path[400], audit_file[500], bootstrap[64],
        sasl_bootstrap[64];
    snprintf(listeners, sizeof listeners,
             "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", ssl_port,
             sasl_ssl_port);
    snprintf(sasl_bootstrap, sizeof sasl_bootstrap, "127.0.0.1:%d", sasl_ssl_port);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", certs_dir);
    snprintf(trust, sizeof trust, "ssl.truststore.location=%s/ca.pem", certs_dir);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(audit_path, sizeof audit_path, "%s/audit.log", certs_dir);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", audit_path);
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", ssl_port);
    const char *overrides[] = {listeners,   keystore,        trust,      "ssl.client.auth=required",
                               plugin_path, "plugins=audit", audit_file, "sasl.enabled.mechanisms=SCRAM-SHA-256",
                               NULL};
    struct test_broker b;
    broker_start(&b, overrides);

    assert_false(ssl_metadata_works(bootstrap, NULL, 3000));
    assert_false(ssl_metadata_works(bootstrap, "stranger", 3000));
    assert_true(ssl_metadata_works(bootstrap, "client", 15000));
    assert_false(sasl_ssl_metadata_works(sasl_bootstrap, 3000));
    broker_stop(&b); /* the audit plugin writes everything before exiting */

    int no_certificate = file_lines_with(audit_path, "\"User:ANONYMOUS\"", "\"SSL\"",
                                         "peer did not return a certificate");
    int untrusted = file_lines_with(audit_path, "\"User:ANONYMOUS\"", "\"SSL\"",
                                    "unable to get local issuer certificate");
    int admitted = file_lines_with(audit_path, "CN=alice", "\"SSL\"", "\"success\":true");
    /* On the SASL_SSL listener the refusal says so (mechanism SSL: TLS refused it). */
    int sasl_ssl_refused = file_lines_with(audit_path, "\"listener\":\"SASL_SSL\",\"security_protocol\":\"SASL_SSL\"",
                                           "\"mechanism\":\"SSL\",\"success\":false",
                                           "peer did not return a certificate");
    if (no_certificate < 1 || untrusted < 1 || admitted < 1 || sasl_ssl_refused < 1) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", audit_path);
        assert_int_equal(system(cmd), 0);
        fail_msg("audit log: %d refusals for a missing certificate, %d for an untrusted one, %d admissions, %d "
                 "refusals on SASL_SSL",
                 no_certificate, untrusted, admitted, sasl_ssl_refused);
    }
    /* A refusal is never recorded as a success. */
    assert_int_equal(file_lines_with(audit_path, "\"User:ANONYMOUS\"", "\"SSL\"", "\"success\":true"), 0);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* Lines of the audit log naming the listener (its name is its protocol
 * here) and its protocol, a failed TLS authentication, and reason. */
static int refusals_on(const char *audit_path, const char *protocol, const char *reason)
{
    char listener[80], security[80];
    snprintf(listener, sizeof listener, "\"listener\":\"%s\"", protocol);
    snprintf(security, sizeof security, "\"security_protocol\":\"%s\",", protocol);
    FILE *f = fopen(audit_path, "r");
    if (!f)
        return 0;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, listener) && strstr(line, security) && strstr(line, "\"mechanism\":\"SSL\"") &&
             strstr(line, "\"success\":false") && strstr(line, "\"User:ANONYMOUS\"") && strstr(line, reason);
    fclose(f);
    return n;
}

/* Waits for the broker to close fd (it refused or timed the client out). */
static void expect_closed(int fd)
{
    assert_true(raw_wait_closed(fd, 30000));
    close(fd);
}

static void test_garbage_and_timeouts_are_audited_per_protocol(void **state)
{
    (void)state;
    int ssl_port = harness_free_port(), sasl_ssl_port = harness_free_port();
    assert_true(ssl_port > 0 && sasl_ssl_port > 0);
    char listeners[200], keystore[400], trust[400], plugin_path[600], audit_path[400], audit_file[500];
    snprintf(listeners, sizeof listeners,
             "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", ssl_port,
             sasl_ssl_port);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", certs_dir);
    snprintf(trust, sizeof trust, "ssl.truststore.location=%s/ca.pem", certs_dir);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(audit_path, sizeof audit_path, "%s/audit-raw.log", certs_dir);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", audit_path);
    const char *overrides[] = {listeners,   keystore,        trust,      "ssl.handshake.timeout.ms=1500",
                               plugin_path, "plugins=audit", audit_file, "sasl.enabled.mechanisms=SCRAM-SHA-256",
                               NULL};
    struct test_broker b;
    broker_start(&b, overrides);

    const int ports[] = {ssl_port, sasl_ssl_port};
    /* A Kafka-ish stream where a ClientHello belongs, and the first bytes
     * of a ClientHello followed by silence. */
    uint8_t junk[300];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    const uint8_t hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};
    int stalled[2];
    for (int i = 0; i < 2; i++) {
        int garbage = raw_connect(ports[i], 5000);
        assert_true(garbage >= 0);
        assert_int_equal(write(garbage, junk, sizeof junk), (ssize_t)sizeof junk);
        expect_closed(garbage);
        stalled[i] = raw_connect(ports[i], 5000);
        assert_true(stalled[i] >= 0);
        assert_int_equal(write(stalled[i], hello_start, sizeof hello_start), (ssize_t)sizeof hello_start);
    }
    for (int i = 0; i < 2; i++)
        expect_closed(stalled[i]);
    broker_stop(&b); /* the audit plugin writes everything before exiting */

    int garbage_ssl = refusals_on(audit_path, "SSL", "TLS handshake failed");
    int garbage_sasl_ssl = refusals_on(audit_path, "SASL_SSL", "TLS handshake failed");
    int timeout_ssl = refusals_on(audit_path, "SSL", "ssl.handshake.timeout.ms (1500 ms)");
    int timeout_sasl_ssl = refusals_on(audit_path, "SASL_SSL", "ssl.handshake.timeout.ms (1500 ms)");
    if (garbage_ssl != 1 || garbage_sasl_ssl != 1 || timeout_ssl != 1 || timeout_sasl_ssl != 1) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", audit_path);
        assert_int_equal(system(cmd), 0);
        fail_msg("audit log: garbage refused %d on SSL, %d on SASL_SSL; timeouts %d on SSL, %d on SASL_SSL "
                 "(expected one each)",
                 garbage_ssl, garbage_sasl_ssl, timeout_ssl, timeout_sasl_ssl);
    }
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_refusals_are_audited),
        cmocka_unit_test(test_garbage_and_timeouts_are_audited_per_protocol),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
