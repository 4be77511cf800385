/* TLS listeners with real processes: cairnd serving a PLAINTEXT and an SSL
 * listener at once, librdkafka producing and consuming over SSL, client
 * fetches of several MiB over SSL through a small receive window, client
 * certificates required (none, expired, signed by an unknown CA, good),
 * garbage and a stalled handshake, certificates reloaded on SIGHUP, and the
 * auth-mtls principal in the audit log. The certificates are made by
 * tls/make_certs.sh with the openssl command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
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

#define RECORDS 300
#define RECORD_BYTES 1024

static char certs_dir[256];

static const char *cert_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", certs_dir, name);
    return buf;
}

static int group_setup(void **state)
{
    (void)state;
    return tls_certs_make("cairn-tls-certs", certs_dir, sizeof certs_dir);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

struct tls_broker {
    struct test_broker b;
    int ssl_port;
    char ssl_bootstrap[64];
};

/* PLAINTEXT on the harness port plus SSL on another; extra overrides after. */
static void start_tls_broker(struct tls_broker *tb, const char *const *extra)
{
    tb->ssl_port = harness_free_port();
    assert_true(tb->ssl_port > 0);
    snprintf(tb->ssl_bootstrap, sizeof tb->ssl_bootstrap, "127.0.0.1:%d", tb->ssl_port);
    char listeners[160], keystore[400];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d", tb->ssl_port);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", certs_dir);
    const char *overrides[BROKER_MAX_OVERRIDES] = {listeners, keystore};
    int n = 2;
    for (int i = 0; extra && extra[i]; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_start(&tb->b, overrides);
}

static void fill_record(char *buf, int i)
{
    memset(buf, 'a' + i % 26, RECORD_BYTES);
    snprintf(buf, RECORD_BYTES, "record-%06d", i);
}

static void produce_records(const char *bootstrap, const char *const *conf, const char *topic, int first, int count)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    char value[RECORD_BYTES];
    for (int i = first; i < first + count; i++) {
        fill_record(value, i);
        assert_int_equal(rk_produce_blocking(rk, topic, 0, NULL, 0, value, sizeof value, 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    struct rk_delivery_stats *stats = rk_producer_stats(rk);
    if (stats->delivered != count)
        fail_msg("delivered %ld of %d over %s: %s", stats->delivered, count, bootstrap, stats->first_error_text);
    rk_producer_destroy(rk);
}

/* Reads partition 0 from the start and checks every record's bytes, within
 * timeout_ms. */
static void consume_and_check_within(const char *bootstrap, const char *const *conf, const char *topic, int count,
                                     int timeout_ms)
{
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    int got = 0;
    long long deadline = harness_now_ms() + timeout_ms;
    char want[RECORD_BYTES];
    while (got < count && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 500);
        if (!m)
            continue;
        if (!m->err) {
            fill_record(want, got);
            assert_int_equal(m->len, RECORD_BYTES);
            assert_memory_equal(m->payload, want, RECORD_BYTES);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (got != count)
        fail_msg("consumed %d of %d records over %s", got, count, bootstrap);
}

static void consume_and_check(const char *bootstrap, const char *const *conf, const char *topic, int count)
{
    consume_and_check_within(bootstrap, conf, topic, count, 30000);
}

static int log_count(const struct test_broker *b, const char *needle)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Waits up to timeout_ms for the broker log to name needle. */
static bool log_shows(const struct test_broker *b, const char *needle, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    while (log_count(b, needle) == 0) {
        if (harness_now_ms() > deadline)
            return false;
        usleep(50 * 1000);
    }
    return true;
}

static void test_produce_consume_over_ssl_next_to_plaintext(void **state)
{
    (void)state;
    struct tls_broker tb;
    start_tls_broker(&tb, NULL);
    struct ssl_conf c;
    const char *const *ssl = ssl_client_conf(&c, certs_dir, "ca.pem", NULL);
    /* Written over SSL, read over SSL (file regions through SSL_write)
     * and over PLAINTEXT (sendfile), and the other way round. */
    produce_records(tb.ssl_bootstrap, ssl, "over-ssl", 0, RECORDS);
    consume_and_check(tb.ssl_bootstrap, ssl, "over-ssl", RECORDS);
    consume_and_check(broker_bootstrap(&tb.b), NULL, "over-ssl", RECORDS);
    produce_records(broker_bootstrap(&tb.b), NULL, "over-plain", 0, RECORDS);
    consume_and_check(tb.ssl_bootstrap, ssl, "over-plain", RECORDS);
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

/* 8 MiB fetched over SSL in fetches of 1 MiB by a broker whose socket send
 * buffer (16 KiB asked, 32 KiB granted) is smaller than one batch of TLS
 * records (256 KiB sealed): every batch goes out in part, is held and is
 * finished on later writes. Every record must arrive once, in order, byte
 * for byte. */
static void test_large_fetches_over_ssl_under_backpressure(void **state)
{
    (void)state;
    enum { LARGE_RECORDS = 8000 };
    const char *small_send_buffer[] = {"socket.send.buffer.bytes=16384", NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, small_send_buffer);
    produce_records(broker_bootstrap(&tb.b), NULL, "large", 0, LARGE_RECORDS);
    struct ssl_conf c;
    ssl_client_conf(&c, certs_dir, "ca.pem", NULL);
    const char *conf[32];
    int n = 0;
    for (; c.kv[n]; n++)
        conf[n] = c.kv[n];
    /* A socket timeout for a slow machine (later keys win). */
    conf[n++] = "socket.timeout.ms";
    conf[n++] = "60000";
    conf[n] = NULL;
    consume_and_check_within(tb.ssl_bootstrap, conf, "large", LARGE_RECORDS, 120000);
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

static void test_client_auth_required(void **state)
{
    (void)state;
    char trust[400];
    snprintf(trust, sizeof trust, "ssl.truststore.location=%s/ca.pem", certs_dir);
    const char *extra[] = {"ssl.client.auth=required", trust, NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);
    struct ssl_conf good, none, expired;
    const char *const *good_conf = ssl_client_conf(&good, certs_dir, "ca.pem", "client");
    rd_kafka_t *kept = rk_producer_new(tb.ssl_bootstrap, good_conf);
    char value[RECORD_BYTES];
    fill_record(value, 0);
    assert_int_equal(rk_produce_blocking(kept, "mtls", 0, NULL, 0, value, sizeof value, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(kept, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);

    assert_false(rk_metadata_works(tb.ssl_bootstrap, ssl_client_conf(&none, certs_dir, "ca.pem", NULL), 3000));
    assert_true(log_shows(&tb.b, "peer did not return a certificate", 3000));
    assert_false(rk_metadata_works(tb.ssl_bootstrap, ssl_client_conf(&expired, certs_dir, "ca.pem", "expired"), 3000));
    assert_true(log_shows(&tb.b, "client certificate refused: certificate has expired", 3000));
    struct ssl_conf stranger;
    assert_false(
        rk_metadata_works(tb.ssl_bootstrap, ssl_client_conf(&stranger, certs_dir, "ca.pem", "stranger"), 3000));
    assert_true(log_shows(&tb.b, "client certificate refused: unable to get local issuer certificate", 3000));

    /* The good client's connection went on working meanwhile. */
    for (int i = 1; i < 10; i++) {
        fill_record(value, i);
        assert_int_equal(rk_produce_blocking(kept, "mtls", 0, NULL, 0, value, sizeof value, 0, NULL, NULL), 0);
    }
    assert_int_equal(rd_kafka_flush(kept, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(kept)->delivered, 10);
    rk_producer_destroy(kept);
    consume_and_check(tb.ssl_bootstrap, good_conf, "mtls", 10);
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

/* Returns once the broker closed fd (read gives 0 or an error), or -1
 * after timeout_ms. */
static long long ms_until_closed(int fd, int timeout_ms)
{
    long long start = harness_now_ms();
    while (harness_now_ms() - start < timeout_ms) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            char buf[512];
            ssize_t n = read(fd, buf, sizeof buf);
            if (n <= 0)
                return harness_now_ms() - start;
        }
    }
    return -1;
}

static void test_garbage_and_stalled_handshakes(void **state)
{
    (void)state;
    const char *extra[] = {"ssl.handshake.timeout.ms=1500", NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);

    /* A Kafka request where a ClientHello belongs. */
    int garbage = raw_connect(tb.ssl_port, 2000);
    assert_true(garbage >= 0);
    uint8_t junk[300];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    assert_int_equal(write(garbage, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_true(ms_until_closed(garbage, 3000) >= 0);
    close(garbage);
    assert_true(log_shows(&tb.b, "TLS handshake with 127.0.0.1:", 2000));

    /* Half a ClientHello, then silence, and one that trickles a byte at a
     * time: both closed at the handshake deadline, not the idle one. */
    int stalled = raw_connect(tb.ssl_port, 2000);
    int trickle = raw_connect(tb.ssl_port, 2000);
    assert_true(stalled >= 0 && trickle >= 0);
    const uint8_t hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};
    assert_int_equal(write(stalled, hello_start, sizeof hello_start), (ssize_t)sizeof hello_start);
    struct ssl_conf c;
    const char *const *ssl = ssl_client_conf(&c, certs_dir, "ca.pem", NULL);
    long long start = harness_now_ms();
    size_t sent = 0;
    bool trickle_closed = false;
    while (!trickle_closed && harness_now_ms() - start < 6000) {
        if (sent < sizeof hello_start && write(trickle, &hello_start[sent], 1) == 1)
            sent++;
        struct pollfd p = {trickle, POLLIN, 0};
        if (poll(&p, 1, 250) > 0) {
            char buf[64];
            trickle_closed = read(trickle, buf, sizeof buf) <= 0;
        }
    }
    long long trickle_ms = harness_now_ms() - start;
    assert_true(trickle_closed);
    assert_true(trickle_ms >= 1000 && trickle_ms < 4000);
    assert_true(ms_until_closed(stalled, 3000) >= 0);
    close(stalled);
    close(trickle);
    assert_true(log_shows(&tb.b, "TLS setup did not finish in time", 1000));
    /* Nobody else noticed. */
    assert_true(rk_metadata_works(tb.ssl_bootstrap, ssl, 5000));
    assert_true(rk_metadata_works(broker_bootstrap(&tb.b), NULL, 5000));
    assert_true(broker_alive(&tb.b));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

static void copy_file(const char *from, const char *to)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", from, to, to, to);
    assert_int_equal(system(cmd), 0);
}

static void test_sighup_reloads_certificates(void **state)
{
    (void)state;
    char keystore[500], src[400], live[400];
    cert_path(live, sizeof live, "live-keystore.pem");
    copy_file(cert_path(src, sizeof src, "server.pem"), live);
    snprintf(keystore, sizeof keystore, "listener.name.ssl.ssl.keystore.location=%s", live);
    const char *extra[] = {keystore, NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);
    struct ssl_conf old_trust, new_trust;
    const char *const *old_conf = ssl_client_conf(&old_trust, certs_dir, "ca.pem", NULL);
    const char *const *new_conf = ssl_client_conf(&new_trust, certs_dir, "other-ca.pem", NULL);

    /* A connection opened on the old certificate. */
    rd_kafka_t *kept = rk_producer_new(tb.ssl_bootstrap, old_conf);
    char value[RECORD_BYTES];
    fill_record(value, 0);
    assert_int_equal(rk_produce_blocking(kept, "reload", 0, NULL, 0, value, sizeof value, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(kept, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_false(rk_metadata_works(tb.ssl_bootstrap, new_conf, 3000));

    /* A broken file on SIGHUP keeps the old certificate. */
    FILE *f = fopen(live, "w");
    assert_non_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    assert_int_equal(kill(broker_pid(&tb.b), SIGHUP), 0);
    assert_true(log_shows(&tb.b, "TLS reload failed, keeping the previous certificates", 5000));
    assert_true(rk_metadata_works(tb.ssl_bootstrap, old_conf, 5000));

    copy_file(cert_path(src, sizeof src, "other-server.pem"), live);
    assert_int_equal(kill(broker_pid(&tb.b), SIGHUP), 0);
    assert_true(log_shows(&tb.b, "TLS certificates and keys reloaded", 5000));
    assert_true(rk_metadata_works(tb.ssl_bootstrap, new_conf, 5000));
    assert_false(rk_metadata_works(tb.ssl_bootstrap, old_conf, 3000));

    /* The connection made before the reload still works. */
    fill_record(value, 1);
    assert_int_equal(rk_produce_blocking(kept, "reload", 0, NULL, 0, value, sizeof value, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(kept, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(kept)->delivered, 2);
    rk_producer_destroy(kept);
    assert_true(broker_alive(&tb.b));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

/* Runs cairnd with one SSL listener and the given overrides until it exits
 * (20 s at most); returns its output in out. */
static int run_ssl_cairnd(const char *o1, const char *o2, char *out, size_t outlen)
{
    char cmd[3072];
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d) && timeout -s KILL 20 '%s' --override 'listeners=SSL://127.0.0.1:%d' "
             "--override \"log.dirs=$d/data\" --override '%s' --override '%s' 2>&1; rc=$?; rm -rf \"$d\"; exit $rc",
             broker_binary(), harness_free_port(), o1, o2);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    return pclose(p);
}

/* Start-up refuses bad TLS material with the key and OpenSSL's reason. */
static void test_bad_keystores_are_refused_at_start(void **state)
{
    (void)state;
    static const struct {
        const char *keystore; /* a file in certs_dir, or NULL */
        const char *first, *second;
        const char *message;
    } cases[] = {
        /* Inline PEM that is not one. */
        {NULL, "ssl.keystore.certificate.chain=junk", "ssl.keystore.key=junk",
         "listener SSL: ssl.keystore.certificate.chain: no usable certificate: error:"},
        /* A certificate without its key. */
        {"client.pem", NULL, "ssl.client.auth=none", "ssl.keystore.location: cannot read the private key"},
        {"server-encrypted.pem", NULL, "ssl.key.password=wrong",
         "ssl.keystore.location: cannot read the private key (is ssl.key.password right?): error:"},
        /* required without anything to check clients against. */
        {"server.pem", NULL, "ssl.client.auth=required", "ssl.client.auth=required needs trusted certificates"},
        /* CRLs without the CAs that sign them. */
        {"server.pem", NULL, "ssl.crl.location=/nonexistent/crl.pem",
         "ssl.crl.location needs the certificates of the CAs that signed the CRLs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16384], keystore[600];
        snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/%s", certs_dir,
                 cases[i].keystore ? cases[i].keystore : "");
        const char *first = cases[i].keystore ? keystore : cases[i].first;
        assert_true(run_ssl_cairnd(first, cases[i].second, out, sizeof out) != 0);
        if (!strstr(out, cases[i].message))
            fail_msg("case %zu: no '%s' in the output:\n%s", i, cases[i].message, out);
    }
}

/* The right password opens the encrypted key, from a per-listener key. */
static void test_encrypted_key_with_password(void **state)
{
    (void)state;
    char keystore[600];
    snprintf(keystore, sizeof keystore, "listener.name.ssl.ssl.keystore.location=%s/server-encrypted.pem", certs_dir);
    const char *extra[] = {keystore, "listener.name.ssl.ssl.key.password=secret", NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);
    struct ssl_conf c;
    assert_true(rk_metadata_works(tb.ssl_bootstrap, ssl_client_conf(&c, certs_dir, "ca.pem", NULL), 5000));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

/* Lines of the file at path containing both a and b. */
/* auth-mtls maps the client certificate's subject through Kafka's rules;
 * the principal reaches the audit log with the TLS authentication and with
 * the client's requests, and a PLAINTEXT client stays ANONYMOUS. */
static void test_principal_from_certificate_reaches_audit(void **state)
{
    (void)state;
    char trust[400], plugin_path[400], audit_path[400], audit_file[500];
    snprintf(trust, sizeof trust, "ssl.truststore.location=%s/ca.pem", certs_dir);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s/plugins", CAIRN_BINARY_DIR);
    cert_path(audit_path, sizeof audit_path, "audit.log");
    unlink(audit_path);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", audit_path);
    const char *extra[] = {"ssl.client.auth=required",
                           trust,
                           plugin_path,
                           "plugins=audit,auth-mtls",
                           audit_file,
                           "plugin.auth-mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=Streams,.*$/$1/U,DEFAULT",
                           NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);
    struct ssl_conf c;
    const char *const *conf = ssl_client_conf(&c, certs_dir, "ca.pem", "client");
    rd_kafka_t *rk = rk_producer_new(tb.ssl_bootstrap, conf);
    char errstr[512];
    assert_int_equal(rk_create_topic_result(rk, "by-alice", 1, 1, NULL, false, errstr, sizeof errstr), 0);
    rk_producer_destroy(rk);
    rk = rk_producer_new(broker_bootstrap(&tb.b), NULL);
    assert_int_equal(rk_create_topic_result(rk, "by-anonymous", 1, 1, NULL, false, errstr, sizeof errstr), 0);
    rk_producer_destroy(rk);
    broker_stop(&tb.b); /* the audit plugin writes everything before exiting */

    if (file_lines_with(audit_path, "\"User:ALICE\"", "\"SSL\"", NULL) < 1 ||
        file_lines_with(audit_path, "\"User:ALICE\"", "by-alice", NULL) < 1 ||
        file_lines_with(audit_path, "\"User:ANONYMOUS\"", "by-anonymous", NULL) < 1) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", audit_path);
        assert_int_equal(system(cmd), 0);
        fail_msg("the audit log lacks the mapped principal");
    }
    assert_int_equal(file_lines_with(audit_path, "User:ALICE", "by-anonymous", NULL), 0);
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_produce_consume_over_ssl_next_to_plaintext),
        cmocka_unit_test(test_large_fetches_over_ssl_under_backpressure),
        cmocka_unit_test(test_client_auth_required),
        cmocka_unit_test(test_garbage_and_stalled_handshakes),
        cmocka_unit_test(test_sighup_reloads_certificates),
        cmocka_unit_test(test_bad_keystores_are_refused_at_start),
        cmocka_unit_test(test_encrypted_key_with_password),
        cmocka_unit_test(test_principal_from_certificate_reaches_audit),
    };
    /* CAIRN_TEST_FILTER=<glob> runs only the matching tests (by hand). */
    if (getenv("CAIRN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CAIRN_TEST_FILTER"));
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
