/* config_check_known_keys, cairnd --check-config's reading of the keys
 * set, and the parsing errors --check-config shares with start-up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"

#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Builds keys/values and runs the strict check; returns the error text of
 * whichever step refused, "" when both accepted. */
static const char *check(const char *const *keys, const char *const *values, size_t n)
{
    static char err[1024];
    struct broker_config *cfg = NULL;
    err[0] = '\0';
    if (config_build(keys, values, n, &cfg, err, sizeof err) != 0)
        return err;
    if (config_check_known_keys(cfg, err, sizeof err) != 0) {
        config_free(cfg);
        return err;
    }
    config_free(cfg);
    return "";
}

static void assert_contains(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("expected '%s' in '%s'", needle, text);
}

static void test_known_keys_pass(void **state)
{
    (void)state;
    const char *keys[] = {"listeners",
                          "listener.security.protocol.map",
                          "listener.name.internal.scram-sha-512.sasl.jaas.config",
                          "listener.name.INTERNAL.ssl.client.auth",
                          "listener.name.internal.sasl.enabled.mechanisms",
                          "plugins",
                          "plugin.auth-sasl.realm",
                          "plugin.path"};
    const char *values[] = {"PLAINTEXT://:9092,INTERNAL://:9094",
                            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
                            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"b\" "
                            "password=\"p\";",
                            "required",
                            "SCRAM-SHA-512",
                            "auth-sasl",
                            "cairn",
                            "/opt/cairn/plugins"};
    assert_string_equal(check(keys, values, ARRAY_LEN(keys)), "");
}

static void test_unknown_key_refused(void **state)
{
    (void)state;
    const char *keys[] = {"num.partitionz"};
    const char *values[] = {"3"};
    assert_contains(check(keys, values, 1), "unknown configuration key 'num.partitionz'");
}

static void test_bad_integer_refused(void **state)
{
    (void)state;
    const char *keys[] = {"num.partitions"};
    const char *values[] = {"three"};
    assert_contains(check(keys, values, 1), "invalid value 'three' for 'num.partitions': expected an integer");
}

static void test_listener_without_protocol_refused(void **state)
{
    (void)state;
    const char *keys[] = {"listeners"};
    const char *values[] = {"PLAINTEXT://:9092,INTERNAL://:9094"};
    assert_contains(check(keys, values, 1),
                    "invalid value 'PLAINTEXT://:9092,INTERNAL://:9094' for 'listeners': listener name INTERNAL has "
                    "no entry in listener.security.protocol.map");
}

static void test_listener_keys(void **state)
{
    (void)state;
    /* A listener that is not configured: a misspelt listener name. */
    const char *keys[] = {"listener.name.internl.ssl.client.auth"};
    const char *values[] = {"required"};
    assert_contains(check(keys, values, 1), "no listener internl in listeners or listener.security.protocol.map");
    /* A misspelt key after a configured listener. */
    const char *keys2[] = {"listener.name.plaintext.plain.sasl.jaas.confg"};
    assert_contains(check(keys2, values, 1), "sasl.jaas.confg is not a broker key");
    /* The value is checked as the broker-wide key's. */
    const char *keys3[] = {"listener.name.plaintext.ssl.client.auth"};
    const char *values3[] = {"sometimes"};
    assert_contains(check(keys3, values3, 1), "for 'ssl.client.auth'");
    assert_contains(check(keys3, values3, 1), "set as 'listener.name.plaintext.ssl.client.auth'");
}

static void test_plugin_key_of_unlisted_plugin(void **state)
{
    (void)state;
    const char *keys[] = {"plugins", "plugin.auth-sals.realm"};
    const char *values[] = {"auth-sasl", "cairn"};
    assert_contains(check(keys, values, 2), "no plugin 'auth-sals' is listed in plugins=");
}

static void test_voters_format_refused(void **state)
{
    (void)state;
    const char *keys[] = {"controller.quorum.voters"};
    const char *values[] = {"1@10.0.0.1"};
    assert_contains(check(keys, values, 1), "for 'controller.quorum.voters'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_keys_pass),       cmocka_unit_test(test_unknown_key_refused),
        cmocka_unit_test(test_bad_integer_refused),   cmocka_unit_test(test_listener_without_protocol_refused),
        cmocka_unit_test(test_listener_keys),         cmocka_unit_test(test_plugin_key_of_unlisted_plugin),
        cmocka_unit_test(test_voters_format_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
