/* Dynamic broker configs in the registry: which keys may be set at
 * runtime and the layered config (broker over default over static). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/config_registry.h"
#include "config/topic_config.h"

#include <string.h>

static void test_check_key(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(config_dynamic_check_key("message.max.bytes", true, err, sizeof err), CONFIG_DYNAMIC_OK);
    assert_int_equal(config_dynamic_check_key("max.connections", false, err, sizeof err), CONFIG_DYNAMIC_OK);
    assert_int_equal(config_dynamic_check_key("log.dirs", false, err, sizeof err), CONFIG_DYNAMIC_READ_ONLY);
    assert_non_null(strstr(err, "log.dirs"));
    assert_int_equal(config_dynamic_check_key("num.io.threads", false, err, sizeof err), CONFIG_DYNAMIC_NOT_RUNTIME);
    assert_non_null(strstr(err, "num.io.threads"));
    assert_int_equal(config_dynamic_check_key("no.such.key", false, err, sizeof err), CONFIG_DYNAMIC_UNKNOWN);
    assert_non_null(strstr(err, "no.such.key"));
    assert_true(config_key_runtime("log.retention.ms"));
    assert_false(config_key_runtime("log.dirs"));
}

/* Every runtime key is dynamic in Kafka and none is Kafka's per-broker
 * kind (a per-broker key Cairn applied would need the default-level
 * refusal tested end to end). Every per-broker key is dynamic. */
static void test_flags_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < config_broker_key_count(); i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        if (def->flags & CONFIG_FLAG_RUNTIME) {
            if (!(def->flags & CONFIG_FLAG_DYNAMIC) || (def->flags & (CONFIG_FLAG_PER_BROKER | CONFIG_FLAG_UNUSED)))
                fail_msg("%s: runtime but not a plain implemented dynamic key", def->name);
        }
        if ((def->flags & CONFIG_FLAG_PER_BROKER) && !(def->flags & CONFIG_FLAG_DYNAMIC))
            fail_msg("%s: per-broker but not dynamic", def->name);
    }
    char err[256];
    assert_int_equal(config_dynamic_check_key("ssl.keystore.location", false, err, sizeof err),
                     CONFIG_DYNAMIC_NOT_RUNTIME);
}

static void test_layers(void **state)
{
    (void)state;
    const char *keys[] = {"log.retention.hours", "message.max.bytes"};
    const char *values[] = {"100", "5000"};
    struct broker_config *base = NULL, *layered = NULL;
    char err[256] = "";
    assert_int_equal(config_build(keys, values, 2, &base, err, sizeof err), 0);
    struct config_kv dflt[] = {{"message.max.bytes", "3000"}, {"log.retention.ms", "60000"}};
    struct config_kv mine[] = {{"message.max.bytes", "2000"}};
    assert_int_equal(config_build_layered(base, dflt, 2, mine, 1, &layered, err, sizeof err), 0);
    assert_int_equal(config_get_int(layered, "message.max.bytes"), 2000);
    assert_int_equal(config_source(layered, "message.max.bytes"), CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    assert_int_equal(config_get_long(layered, "log.retention.ms"), 60000);
    assert_int_equal(config_source(layered, "log.retention.ms"), CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
    assert_int_equal(config_source(layered, "log.retention.hours"), CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    assert_int_equal(config_source(layered, "num.io.threads"), CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_int_equal(config_log_retention_ms(layered), 60000); /* ms over hours */
    /* Topic defaults resolve through the layers, with their source. */
    struct topic_config_describe_entry e;
    size_t total = topic_config_key_count();
    bool seen = false;
    for (size_t i = 0; i < total; i++) {
        if (topic_config_describe(layered, NULL, 0, i, &e) != 0 || strcmp(e.name, "max.message.bytes") != 0)
            continue;
        seen = true;
        assert_string_equal(e.value, "2000");
        assert_int_equal(e.source, CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    }
    assert_true(seen);
    /* The base is untouched. */
    assert_int_equal(config_get_int(base, "message.max.bytes"), 5000);
    config_free(layered);

    struct config_kv bad[] = {{"message.max.bytes", "lots"}};
    assert_int_equal(config_build_layered(base, bad, 1, NULL, 0, &layered, err, sizeof err), -1);
    assert_non_null(strstr(err, "message.max.bytes"));
    config_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_key),
        cmocka_unit_test(test_flags_consistent),
        cmocka_unit_test(test_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
