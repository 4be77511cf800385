/* A TLS listener's ssl.* keys changed at runtime, as Kafka's dynamic broker
 * configs do it: IncrementalAlterConfigs (raw: librdkafka 2.0.2 has no call
 * for it) sets listener.name.ssl.ssl.keystore.location on a running cairnd.
 * A bad file or a key that does not match the certificate is refused with
 * INVALID_CONFIG naming the key while the old certificate keeps serving;
 * a good one serves every new librdkafka connection while one opened
 * before goes on working; DescribeConfigs shows the value as
 * DYNAMIC_BROKER_CONFIG; deleting it goes back to the config file's. A
 * SIGHUP afterwards re-reads the dynamically named file, and
 * ssl.crl.location set at runtime refuses a revoked client certificate.
 * Certificates come from tls/make_certs.sh (the openssl command line). */
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

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "tls_client.h"
#include "tls_cluster.h"

#define SELF "1" /* the harness node's id */
#define ERR_INVALID_CONFIG 40
#define ERR_INVALID_REQUEST 42
#define OP_SET 0
#define OP_DELETE 1
#define KEYSTORE_KEY "listener.name.ssl.ssl.keystore.location"
#define CRL_KEY "listener.name.ssl.ssl.crl.location"
#define APPLIED "new TLS settings applied"

static char certs_dir[256];

static int group_setup(void **state)
{
    (void)state;
    return tls_certs_make("cairn-tls-dynamic", certs_dir, sizeof certs_dir);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

struct tls_broker {
    struct test_broker b;
    char ssl_bootstrap[64];
};

/* PLAINTEXT on the harness port plus SSL (keystore server.pem, signed by
 * ca.pem) on another; extra overrides after. */
static void start_tls_broker(struct tls_broker *tb, const char *const *extra)
{
    int ssl_port = harness_free_port();
    assert_true(ssl_port > 0);
    snprintf(tb->ssl_bootstrap, sizeof tb->ssl_bootstrap, "127.0.0.1:%d", ssl_port);
    char listeners[160], keystore[400];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d", ssl_port);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", certs_dir);
    const char *overrides[BROKER_MAX_OVERRIDES] = {listeners, keystore};
    int n = 2;
    for (int i = 0; extra && extra[i]; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_start(&tb->b, overrides);
}

/* One IncrementalAlterConfigs change on this broker over PLAINTEXT; file
 * (NULL for a delete) is a name in certs_dir. Returns the error code. */
static int alter_file_key(struct tls_broker *tb, const char *key, const char *file, char *msg, size_t msglen)
{
    char path[400];
    if (file)
        snprintf(path, sizeof path, "%s/%s", certs_dir, file);
    int code = raw_incremental_alter_broker(broker_port(&tb->b), SELF, key, file ? OP_SET : OP_DELETE,
                                            file ? path : NULL, msg, msglen);
    if (code < 0)
        fail_msg("no IncrementalAlterConfigs answer for %s", key);
    return code;
}

static void expect_refused(struct tls_broker *tb, const char *key, const char *file, const char *reason)
{
    char msg[512] = "";
    int code = alter_file_key(tb, key, file, msg, sizeof msg);
    if (code != ERR_INVALID_CONFIG || !strstr(msg, key) || !strstr(msg, reason))
        fail_msg("%s=%s: error %d '%s', expected INVALID_CONFIG naming the key and '%s'", key, file, code, msg, reason);
}

static void expect_altered(struct tls_broker *tb, const char *key, const char *file)
{
    char msg[512] = "";
    int code = alter_file_key(tb, key, file, msg, sizeof msg);
    if (code != 0)
        fail_msg("%s=%s: error %d '%s'", key, file ? file : "(deleted)", code, msg);
}

/* DescribeConfigs of this broker through librdkafka: name's value and
 * source (value "" and source -1 when name is not listed). */
static void describe_key(const char *bootstrap, const char *name, char *value, size_t len, int *source)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, NULL);
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, SELF);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rk_admin_result(queue, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, 20000);
    if (rd_kafka_event_error(ev))
        fail_msg("DescribeConfigs: %s", rd_kafka_event_error_string(ev));
    size_t n = 0, count = 0;
    const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    assert_int_equal(n, 1);
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(res[0], &count);
    value[0] = '\0';
    *source = -1;
    for (size_t i = 0; i < count; i++)
        if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), name) == 0) {
            const char *v = rd_kafka_ConfigEntry_value(entries[i]);
            snprintf(value, len, "%s", v ? v : "");
            *source = (int)rd_kafka_ConfigEntry_source(entries[i]);
            assert_false(rd_kafka_ConfigEntry_is_read_only(entries[i]));
        }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    rk_producer_destroy(rk);
}

static void produce_one(rd_kafka_t *rk, int i)
{
    char value[32];
    int n = snprintf(value, sizeof value, "record-%d", i);
    assert_int_equal(rk_produce_blocking(rk, "dynamic", 0, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void test_keystore_altered_at_runtime(void **state)
{
    (void)state;
    struct tls_broker tb;
    start_tls_broker(&tb, NULL);
    struct ssl_conf a, b;
    const char *const *trusts_a = ssl_client_conf(&a, certs_dir, "ca.pem", NULL);
    const char *const *trusts_b = ssl_client_conf(&b, certs_dir, "other-ca.pem", NULL);
    rd_kafka_t *kept = rk_producer_new(tb.ssl_bootstrap, trusts_a);
    produce_one(kept, 0);
    assert_false(rk_metadata_works(tb.ssl_bootstrap, trusts_b, 3000));

    /* Checked before it is recorded: the old certificate stays. */
    expect_refused(&tb, KEYSTORE_KEY, "no-such-keystore.pem", "cannot open");
    const char *mismatch[] = {"other-server.crt", "server.key", NULL};
    tls_certs_write(certs_dir, "mismatch.pem", mismatch);
    expect_refused(&tb, KEYSTORE_KEY, "mismatch.pem", "does not match the certificate");
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_a, 10000));
    /* A keystore is one broker's: never the cluster-wide default. */
    char msg[512], path[400];
    snprintf(path, sizeof path, "%s/other-server.pem", certs_dir);
    assert_int_equal(raw_incremental_alter_broker(broker_port(&tb.b), "", KEYSTORE_KEY, OP_SET, path, msg, sizeof msg),
                     ERR_INVALID_REQUEST);
    char value[512];
    int source;
    describe_key(broker_bootstrap(&tb.b), KEYSTORE_KEY, value, sizeof value, &source);
    assert_int_equal(source, -1);

    expect_altered(&tb, KEYSTORE_KEY, "other-server.pem");
    broker_wait_log_count(&tb.b, APPLIED, 1, 20000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_b, 10000));
    assert_false(rk_metadata_works(tb.ssl_bootstrap, trusts_a, 3000));
    /* The connection made on the old certificate goes on working. */
    produce_one(kept, 1);
    assert_int_equal(rk_producer_stats(kept)->delivered, 2);
    rk_producer_destroy(kept);

    char want[400];
    snprintf(want, sizeof want, "%s/other-server.pem", certs_dir);
    describe_key(broker_bootstrap(&tb.b), KEYSTORE_KEY, value, sizeof value, &source);
    assert_string_equal(value, want);
    assert_int_equal(source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);

    /* Deleted: the config file's keystore again. */
    expect_altered(&tb, KEYSTORE_KEY, NULL);
    broker_wait_log_count(&tb.b, APPLIED, 2, 20000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_a, 10000));
    assert_false(rk_metadata_works(tb.ssl_bootstrap, trusts_b, 3000));
    assert_true(broker_alive(&tb.b));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

static void test_sighup_rereads_the_dynamic_file(void **state)
{
    (void)state;
    struct tls_broker tb;
    start_tls_broker(&tb, NULL);
    struct ssl_conf a, b;
    const char *const *trusts_a = ssl_client_conf(&a, certs_dir, "ca.pem", NULL);
    const char *const *trusts_b = ssl_client_conf(&b, certs_dir, "other-ca.pem", NULL);
    const char *other[] = {"other-server.pem", NULL}, *first[] = {"server.pem", NULL};
    tls_certs_write(certs_dir, "dynamic-live.pem", other);
    expect_altered(&tb, KEYSTORE_KEY, "dynamic-live.pem");
    broker_wait_log_count(&tb.b, APPLIED, 1, 20000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_b, 10000));

    /* The dynamically named file is rewritten; SIGHUP reads it, not the
     * config file's (which still holds the certificate it had). */
    tls_certs_write(certs_dir, "dynamic-live.pem", first);
    int reloads = broker_log_count(&tb.b, "TLS certificates and keys reloaded");
    assert_int_equal(kill(broker_pid(&tb.b), SIGHUP), 0);
    broker_wait_log_count(&tb.b, "TLS certificates and keys reloaded", reloads + 1, 20000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_a, 10000));

    tls_certs_write(certs_dir, "dynamic-live.pem", other);
    assert_int_equal(kill(broker_pid(&tb.b), SIGHUP), 0);
    broker_wait_log_count(&tb.b, "TLS certificates and keys reloaded", reloads + 2, 20000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, trusts_b, 10000));
    assert_false(rk_metadata_works(tb.ssl_bootstrap, trusts_a, 3000));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

static void test_crl_location_at_runtime(void **state)
{
    (void)state;
    char trust[400];
    snprintf(trust, sizeof trust, "ssl.truststore.location=%s/ca.pem", certs_dir);
    const char *extra[] = {"ssl.client.auth=required", trust, NULL};
    struct tls_broker tb;
    start_tls_broker(&tb, extra);
    struct ssl_conf alice, bob;
    const char *const *alice_conf = ssl_client_conf(&alice, certs_dir, "ca.pem", "client");
    const char *const *bob_conf = ssl_client_conf(&bob, certs_dir, "ca.pem", "revoked");
    assert_true(rk_metadata_works(tb.ssl_bootstrap, bob_conf, 10000));

    expect_refused(&tb, CRL_KEY, "no-such-crl.pem", "cannot open");
    expect_altered(&tb, CRL_KEY, "crl.pem");
    broker_wait_log_count(&tb.b, APPLIED, 1, 20000);
    assert_false(rk_metadata_works(tb.ssl_bootstrap, bob_conf, 3000));
    broker_wait_log_count(&tb.b, "certificate revoked", 1, 10000);
    assert_true(rk_metadata_works(tb.ssl_bootstrap, alice_conf, 10000));
    broker_mark_passed(&tb.b);
    broker_cleanup(&tb.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keystore_altered_at_runtime),
        cmocka_unit_test(test_sighup_rereads_the_dynamic_file),
        cmocka_unit_test(test_crl_location_at_runtime),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
