/* A plugin built against the frozen ABI v1.0 headers (tests/abi) in the
 * cairnd built from the live headers: its authorizer's denials, its quota's
 * throttle answers and its audit events all take effect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int max_throttle_ms;

static void abi_throttle_cb(rd_kafka_t *rk, const char *broker_name, int32_t broker_id, int throttle_ms, void *opaque)
{
    (void)rk;
    (void)broker_name;
    (void)broker_id;
    (void)opaque;
    int seen = atomic_load(&max_throttle_ms);
    while (throttle_ms > seen && !atomic_compare_exchange_weak(&max_throttle_ms, &seen, throttle_ms)) {
    }
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* name: abi_v1_0 (built against the 1.0 headers) or abi_v1_2 (1.2). */
static void check_old_plugin_in_live_broker(struct test_broker *b, const char *name)
{
    char path_kv[600], audit_kv[700], audit_path[600], plugins_kv[64], deny_kv[80], throttle_kv[80];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", ABI_PLUGIN_DIR);
    snprintf(audit_path, sizeof audit_path, "/tmp/cairn-abi-audit-%s-%d.log", name, (int)getpid());
    remove(audit_path);
    snprintf(audit_kv, sizeof audit_kv, "plugin.%s.audit.file=%s", name, audit_path);
    snprintf(plugins_kv, sizeof plugins_kv, "plugins=%s", name);
    snprintf(deny_kv, sizeof deny_kv, "plugin.%s.deny.topic=abi-denied", name);
    snprintf(throttle_kv, sizeof throttle_kv, "plugin.%s.throttle.ms=250", name);
    atomic_store(&max_throttle_ms, 0);
    const char *ov[] = {path_kv, plugins_kv, audit_kv, deny_kv, throttle_kv, NULL};
    broker_start(b, ov);
    const char *bs = broker_bootstrap(b);

    rd_kafka_t *admin = rk_producer_new(bs, NULL);
    char errstr[256];
    assert_int_equal(rk_create_topic_result(admin, "abi-allowed", 1, 1, NULL, false, errstr, sizeof errstr),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_create_topic_result(admin, "abi-denied", 1, 1, NULL, false, errstr, sizeof errstr),
                     RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    rk_producer_destroy(admin);

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", bs, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "client.id", "abi-client", errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_conf_set_throttle_cb(conf, abi_throttle_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("abi-allowed"), RD_KAFKA_V_VALUE("v", 1),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    rd_kafka_poll(rk, 200);
    rd_kafka_destroy(rk);
    broker_stop(b);

    /* The quota answer reached the client as throttle_time_ms. */
    assert_int_equal(atomic_load(&max_throttle_ms), 250);
    char *text = read_text(audit_path);
    const char *want[] = {
        /* ADMIN (3): the allowed create */
        "type=3 principal=User:ANONYMOUS client_id=", "resource=2:abi-allowed success=1 admin=CreateTopics error=0",
        /* AUTHORIZATION (2): CREATE (5) denied on the denied topic */
        "type=2 principal=User:ANONYMOUS", "op=5 resource=2:abi-denied success=0",
        /* WRITE (4) allowed for the producer, with its client id, api key 0 */
        "client_id=abi-client api_key=0 op=4 resource=2:abi-allowed success=1", NULL};
    for (int i = 0; want[i]; i++) {
        if (!strstr(text, want[i]))
            fprintf(stderr, "missing '%s' in:\n%s\n", want[i], text);
        assert_non_null(strstr(text, want[i]));
    }
    free(text);
    remove(audit_path);
    broker_mark_passed(b);
}

static void test_v1_0_plugin_in_live_broker(void **state)
{
    check_old_plugin_in_live_broker(*state, "abi_v1_0");
}

/* A 1.2 descriptor ends before the 1.3 policy table: the broker must not read past it. */
static void test_v1_2_plugin_in_live_broker(void **state)
{
    check_old_plugin_in_live_broker(*state, "abi_v1_2");
}

static int abi_setup(void **state)
{
    struct test_broker *broker = calloc(1, sizeof *broker);
    *state = broker;
    return broker ? 0 : -1;
}

static int abi_teardown(void **state)
{
    broker_cleanup(*state);
    free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v1_0_plugin_in_live_broker, abi_setup, abi_teardown),
        cmocka_unit_test_setup_teardown(test_v1_2_plugin_in_live_broker, abi_setup, abi_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
