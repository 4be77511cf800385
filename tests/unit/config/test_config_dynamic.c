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

#include <stdlib.h>
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

/* Every runtime key is dynamic in Kafka and implemented; the per-broker
 * ones Cairn applies are the TLS listeners' ssl.* keys (their refusal at
 * the default level runs end to end in test_tls_dynamic). Every per-broker
 * key is dynamic. */
static void test_flags_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < config_broker_key_count(); i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        if (def->flags & CONFIG_FLAG_RUNTIME) {
            if (!(def->flags & CONFIG_FLAG_DYNAMIC) || (def->flags & CONFIG_FLAG_UNUSED))
                fail_msg("%s: runtime but not an implemented dynamic key", def->name);
            if ((def->flags & CONFIG_FLAG_PER_BROKER) && strncmp(def->name, "ssl.", 4) != 0)
                fail_msg("%s: a per-broker runtime key other than ssl.*", def->name);
        }
        if ((def->flags & CONFIG_FLAG_PER_BROKER) && !(def->flags & CONFIG_FLAG_DYNAMIC))
            fail_msg("%s: per-broker but not dynamic", def->name);
    }
    char err[256];
    assert_int_equal(config_dynamic_check_key("ssl.keystore.password", false, err, sizeof err),
                     CONFIG_DYNAMIC_NOT_RUNTIME);
    assert_int_equal(config_dynamic_check_key("ssl.endpoint.identification.algorithm", false, err, sizeof err),
                     CONFIG_DYNAMIC_NOT_RUNTIME);
}

/* listener.name.<l>.ssl.* keys check as their ssl.* key; other
 * per-listener keys are unknown to dynamic configs. */
static void test_listener_keys(void **state)
{
    (void)state;
    char err[256];
    assert_true(config_listener_key_index("listener.name.ssl.ssl.keystore.location") ==
                config_broker_key_index("ssl.keystore.location"));
    assert_true(config_listener_key_index("listener.name..ssl.keystore.location") < 0);
    assert_true(config_listener_key_index("listener.name.ssl.sasl.enabled.mechanisms") < 0);
    assert_true(config_listener_key_index("listener.name.ssl.ssl.no.such") < 0);
    assert_int_equal(config_dynamic_check_key("listener.name.ssl.ssl.keystore.location", false, err, sizeof err),
                     CONFIG_DYNAMIC_OK);
    assert_int_equal(config_dynamic_check_key("listener.name.ssl.ssl.crl.location", true, err, sizeof err),
                     CONFIG_DYNAMIC_PER_BROKER_ONLY);
    assert_int_equal(config_dynamic_check_key("listener.name.ssl.ssl.keystore.password", false, err, sizeof err),
                     CONFIG_DYNAMIC_NOT_RUNTIME);
    assert_true(config_key_runtime("listener.name.internal.ssl.truststore.location"));

    /* Layered, they join the per-listener entries the TLS settings read;
     * the broker's own layer wins over the default's. */
    const char *keys[] = {"listener.name.ssl.ssl.keystore.location"};
    const char *values[] = {"/static.pem"};
    struct broker_config *base = NULL, *layered = NULL;
    assert_int_equal(config_build(keys, values, 1, &base, err, sizeof err), 0);
    struct config_kv dflt[] = {{"listener.name.ssl.ssl.truststore.location", "/default-ca.pem"}};
    struct config_kv mine[] = {{"listener.name.ssl.ssl.keystore.location", "/dynamic.pem"},
                               {"listener.name.ssl.ssl.truststore.location", "/mine-ca.pem"}};
    assert_int_equal(config_build_layered(base, dflt, 1, mine, 2, &layered, err, sizeof err), 0);
    struct config_kv *found = NULL;
    size_t count = 0;
    assert_int_equal(config_keys_with_prefix(layered, "listener.name.ssl.", &found, &count), 0);
    assert_int_equal(count, 2);
    for (size_t i = 0; i < count; i++)
        assert_string_equal(found[i].value, strstr(found[i].key, "keystore") ? "/dynamic.pem" : "/mine-ca.pem");
    free(found);
    config_free(layered);
    /* A bad value is refused naming the key. */
    struct config_kv bad[] = {{"listener.name.ssl.ssl.client.auth", "sometimes"}};
    assert_int_equal(config_build_layered(base, NULL, 0, bad, 1, &layered, err, sizeof err), -1);
    assert_non_null(strstr(err, "listener.name.ssl.ssl.client.auth"));
    assert_non_null(strstr(err, "sometimes"));
    config_free(base);
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
        cmocka_unit_test(test_listener_keys),
        cmocka_unit_test(test_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
