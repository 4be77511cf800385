/* message.format.version: deprecated by Kafka but still accepted on topics
 * (old tools and client test suites set it); Cairn validates the version
 * name and otherwise ignores it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config/topic_config.h"
#include "protocol/generated/errors.h"

#include <string.h>

static void test_accepts_kafka_version_names(void **state)
{
    (void)state;
    char err[256];
    const char *valid[] = {"0.10.0.0", "0.10.0", "0.10.0-IV1", "0.8.2",   "0.11.0",
                           "1.0",      "2.8",    "2.8.1",      "3.0-IV1", "3.9"};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
        if (topic_config_validate("message.format.version", valid[i], err, sizeof err) != 0)
            fail_msg("'%s' refused: %s", valid[i], err);
}

static void test_refuses_other_values(void **state)
{
    (void)state;
    char err[256];
    const char *invalid[] = {
        "", "banana", "4.0", "0.7.0", "3.0-IV", "3.0-IVx", "2", "0.10", "99999999999999999999999999999999999"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        if (topic_config_validate("message.format.version", invalid[i], err, sizeof err) != KAFKA_ERR_INVALID_CONFIG)
            fail_msg("'%s' accepted", invalid[i]);
    }
    assert_non_null(strstr(err, "message.format.version"));
}

static void test_is_a_known_topic_key(void **state)
{
    (void)state;
    const struct topic_key_def *def = topic_config_find("message.format.version");
    assert_non_null(def);
    assert_string_equal(def->def.default_value, "3.0-IV1");
    assert_string_equal(def->synonyms[0], "log.message.format.version");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_kafka_version_names),
        cmocka_unit_test(test_refuses_other_values),
        cmocka_unit_test(test_is_a_known_topic_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
