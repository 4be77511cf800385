/* remote.storage.enable=true on a topic of a broker without
 * remote.log.storage.system.enable is refused, as Kafka refuses it (KIP-405):
 * INVALID_CONFIG naming the broker key, from CreateTopics, AlterConfigs and
 * IncrementalAlterConfigs alike; nothing is created or changed. The same
 * requests with remote.storage.enable=false go through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"
#include "topic_configs.h"

#define BROKER_KEY "remote.log.storage.system.enable"

/* Runs AlterConfigs (replacing the topic's configs) with one key; returns
 * the resource's error and its message in errstr. */
static rd_kafka_resp_err_t alter_one(rd_kafka_t *rk, const char *topic, const char *name, const char *value,
                                     char *errstr, size_t errlen)
{
    const struct alter_kv kv = {name, value};
    return alter_topic_configs(rk, topic, &kv, 1, false, errstr, errlen);
}

/* One IncrementalAlterConfigs SET on a topic; returns the error, msg the message. */
static int16_t incremental_set(const struct test_broker *b, const char *topic, const char *name, const char *value,
                               char *msg, size_t msglen)
{
    return incremental_alter(broker_port(b), topic, name, 0, value, msg, msglen);
}

static void test_remote_storage_needs_broker_key(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL); /* remote.log.storage.system.enable defaults to false */
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    char err[512];

    assert_int_equal(rk_create_topic_result(rk, "tiered-refused", 1, 1,
                                            (const char *const[]){"remote.storage.enable", "true", NULL}, false, err,
                                            sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("CreateTopics message does not name " BROKER_KEY ": %s", err);
    /* Nothing was created: the name is still free. */
    assert_int_equal(rk_create_topic_result(rk, "tiered-refused", 1, 1,
                                            (const char *const[]){"remote.storage.enable", "false", NULL}, false, err,
                                            sizeof err),
                     RD_KAFKA_RESP_ERR_NO_ERROR);

    assert_int_equal(alter_one(rk, "tiered-refused", "remote.storage.enable", "true", err, sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("AlterConfigs message does not name " BROKER_KEY ": %s", err);
    assert_int_equal(incremental_set(b, "tiered-refused", "remote.storage.enable", "TRUE", err, sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("IncrementalAlterConfigs message does not name " BROKER_KEY ": %s", err);
    /* Other changes still go through. */
    assert_int_equal(alter_one(rk, "tiered-refused", "retention.ms", "3600000", err, sizeof err),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(incremental_set(b, "tiered-refused", "remote.storage.enable", "false", err, sizeof err), 0);
    rk_producer_destroy(rk);
    broker_mark_passed(b);
}

static int setup(void **state)
{
    struct test_broker *b = calloc(1, sizeof *b);
    assert_non_null(b);
    *state = b;
    return 0;
}

static int teardown(void **state)
{
    struct test_broker *b = *state;
    broker_cleanup(b);
    free(b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_remote_storage_needs_broker_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
