#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/topic_config.h"
#include "protocol/generated/errors.h"

#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static struct broker_config *build_ok(const char *const *keys, const char *const *values, size_t n)
{
    struct broker_config *cfg = NULL;
    char err[512] = "";
    if (config_build(keys, values, n, &cfg, err, sizeof err) != 0)
        fail_msg("config_build failed: %s", err);
    return cfg;
}

static void test_validate(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(topic_config_validate("cleanup.policy", "compact,delete", err, sizeof err), 0);
    assert_int_equal(topic_config_validate("cleanup.policy", "compact", err, sizeof err), 0);
    assert_int_equal(topic_config_validate("retention.ms", "-1", err, sizeof err), 0);
    assert_int_equal(topic_config_validate("min.cleanable.dirty.ratio", "0.25", err, sizeof err), 0);
    assert_int_equal(topic_config_validate("compression.type", "zstd", err, sizeof err), 0);

    assert_int_equal(topic_config_validate("retention.ms", "-2", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_string_equal(err, "invalid value '-2' for 'retention.ms': expected an integer in [-1, 9223372036854775807]");
    assert_int_equal(topic_config_validate("cleanup.policy", "purge", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_string_equal(
        err, "invalid value 'purge' for 'cleanup.policy': expected a comma-separated list of: compact, delete");
    assert_int_equal(topic_config_validate("cleanup.policy", "", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(topic_config_validate("compression.type", "brotli", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(topic_config_validate("segment.bytes", "13", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_string_equal(err, "invalid value '13' for 'segment.bytes': expected an integer in [14, 2147483647]");
    assert_int_equal(topic_config_validate("preallocate", "maybe", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(topic_config_validate("min.cleanable.dirty.ratio", "nan", err, sizeof err),
                     KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(topic_config_validate("min.insync.replicas", "0", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_int_equal(topic_config_validate("no.such.key", "1", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_string_equal(err, "unknown topic config 'no.such.key'");
    assert_int_equal(topic_config_validate("retention.ms", NULL, err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
}

/* Kafka's ThrottledReplicaListValidator: "*" or partitionId:brokerId pairs. */
static void test_validate_throttled_replicas(void **state)
{
    (void)state;
    char err[256];
    static const char *const keys[] = {"leader.replication.throttled.replicas",
                                       "follower.replication.throttled.replicas"};
    static const char *const good[] = {"", "*", " * ", "0:1", "0:1,1:2", "0:1 , 12:304", "0:1,", "0:1,,1:2"};
    static const char *const bad[] = {"x",     "0",   "0:",  ":1",   "0:1:2",   "a:1",  "0:b",
                                      "*,0:1", "0:*", "* *", "-1:2", "0:1;1:2", "0 :1", "1:-2"};
    for (size_t k = 0; k < 2; k++) {
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
            if (topic_config_validate(keys[k], good[i], err, sizeof err) != 0)
                fail_msg("'%s' refused for %s: %s", good[i], keys[k], err);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            if (topic_config_validate(keys[k], bad[i], err, sizeof err) != KAFKA_ERR_INVALID_CONFIG)
                fail_msg("'%s' accepted for %s", bad[i], keys[k]);
            assert_non_null(strstr(err, keys[k]));
        }
    }
    assert_int_equal(topic_config_validate(keys[0], "0:x", err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_string_equal(err, "invalid value '0:x' for 'leader.replication.throttled.replicas': expected the literal "
                             "'*' or a comma-separated list of partitionId:brokerId pairs");
}

static void test_resolve_kafka_defaults_without_broker(void **state)
{
    (void)state;
    struct topic_config_values v;
    char err[256];
    assert_int_equal(topic_config_resolve(NULL, NULL, 0, &v, err, sizeof err), 0);
    assert_true(v.cleanup_delete);
    assert_false(v.cleanup_compact);
    assert_string_equal(v.compression_type, "producer");
    assert_int_equal(v.retention_ms, 604800000);
    assert_int_equal(v.retention_bytes, -1);
    assert_int_equal(v.segment_bytes, 1073741824);
    assert_int_equal(v.max_message_bytes, 1048588);
    assert_int_equal(v.flush_messages, INT64_MAX);
    assert_int_equal(v.message_timestamp_type, TOPIC_TIMESTAMP_CREATE_TIME);
    assert_true(v.min_cleanable_dirty_ratio == 0.5);
    assert_int_equal(v.min_insync_replicas, 1);
    assert_true(v.message_downconversion_enable);
}

static void test_resolve_precedence(void **state)
{
    (void)state;
    const char *keys[] = {"log.retention.minutes", "message.max.bytes", "log.cleanup.policy", "log.roll.ms",
                          "compression.type"};
    const char *values[] = {"10", "2000000", "compact", "5000", "lz4"};
    struct broker_config *cfg = build_ok(keys, values, ARRAY_LEN(keys));
    struct topic_config_values v;
    char err[256];
    assert_int_equal(topic_config_resolve(cfg, NULL, 0, &v, err, sizeof err), 0);
    assert_int_equal(v.retention_ms, 600000);
    assert_int_equal(v.max_message_bytes, 2000000);
    assert_true(v.cleanup_compact);
    assert_false(v.cleanup_delete);
    assert_int_equal(v.segment_ms, 5000);
    assert_string_equal(v.compression_type, "lz4");
    assert_int_equal(v.segment_bytes, 1073741824);

    struct config_kv overrides[] = {{"retention.ms", "1234"},
                                    {"cleanup.policy", "compact, delete"},
                                    {"message.timestamp.type", "LogAppendTime"},
                                    {"max.message.bytes", "100"},
                                    {"max.message.bytes", "200"}};
    assert_int_equal(topic_config_resolve(cfg, overrides, ARRAY_LEN(overrides), &v, err, sizeof err), 0);
    assert_int_equal(v.retention_ms, 1234);
    assert_true(v.cleanup_compact && v.cleanup_delete);
    assert_int_equal(v.message_timestamp_type, TOPIC_TIMESTAMP_LOG_APPEND_TIME);
    assert_int_equal(v.max_message_bytes, 200);

    struct config_kv bad[] = {{"segment.ms", "0"}};
    assert_int_equal(topic_config_resolve(cfg, bad, 1, &v, err, sizeof err), KAFKA_ERR_INVALID_CONFIG);
    assert_non_null(strstr(err, "'segment.ms'"));
    config_free(cfg);
}

static const struct topic_config_describe_entry *describe(const struct broker_config *cfg,
                                                          const struct config_kv *overrides, size_t n, const char *name,
                                                          struct topic_config_describe_entry *out)
{
    for (size_t i = 0; i < topic_config_key_count(); i++) {
        assert_int_equal(topic_config_describe(cfg, overrides, n, i, out), 0);
        if (strcmp(out->name, name) == 0)
            return out;
    }
    fail_msg("no topic key %s", name);
    return NULL;
}

static void test_describe_synonyms(void **state)
{
    (void)state;
    const char *keys[] = {"log.retention.ms"};
    const char *values[] = {"3600000"};
    struct broker_config *cfg = build_ok(keys, values, 1);
    struct topic_config_describe_entry e;

    describe(cfg, NULL, 0, "retention.ms", &e);
    assert_string_equal(e.value, "3600000");
    assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    assert_int_equal(e.synonym_count, 2);
    assert_string_equal(e.synonyms[0].name, "log.retention.ms");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    assert_string_equal(e.synonyms[1].name, "log.retention.hours");
    assert_string_equal(e.synonyms[1].value, "168");
    assert_int_equal(e.synonyms[1].source, CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_false(e.read_only);
    assert_int_equal(e.type, CONFIG_TYPE_LONG);

    struct config_kv overrides[] = {{"retention.ms", "99"}};
    describe(cfg, overrides, 1, "retention.ms", &e);
    assert_string_equal(e.value, "99");
    assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
    assert_int_equal(e.synonym_count, 3);
    assert_string_equal(e.synonyms[0].name, "retention.ms");
    assert_int_equal(e.synonyms[0].source, CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);

    describe(cfg, NULL, 0, "segment.bytes", &e);
    assert_string_equal(e.value, "1073741824");
    assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_int_equal(e.synonym_count, 1);
    assert_string_equal(e.synonyms[0].name, "log.segment.bytes");
    assert_int_equal(topic_config_describe(cfg, NULL, 0, topic_config_key_count(), &e), -1);
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_validate_throttled_replicas),
        cmocka_unit_test(test_resolve_kafka_defaults_without_broker),
        cmocka_unit_test(test_resolve_precedence),
        cmocka_unit_test(test_describe_synonyms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
