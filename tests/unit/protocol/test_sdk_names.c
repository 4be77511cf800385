/* The SDK's names.h against the broker's own tables: every API key the
 * generated codecs know has the same name there, and the ACL enums' names
 * are Kafka's. names.h is header-only, so a plugin's names come from the
 * SDK it was built with; this keeps the SDK in step with the codecs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cairn/names.h"
#include "protocol/messages.h"

static void test_api_key_names_match_the_codecs(void **state)
{
    (void)state;
    int count = kafka_api_count();
    assert_true(count > 60);
    for (int i = 0; i < count; i++) {
        const struct kafka_api_desc *d = kafka_api_at(i);
        if (strcmp(cairn_api_key_name(d->api_key), d->name) != 0)
            fail_msg("api key %d: names.h says %s, the codecs %s", d->api_key, cairn_api_key_name(d->api_key),
                     d->name);
    }
    assert_string_equal(cairn_api_key_name(-1), "UNKNOWN");
    assert_string_equal(cairn_api_key_name(30000), "UNKNOWN");
}

static void test_acl_enum_names(void **state)
{
    (void)state;
    assert_string_equal(cairn_operation_name(CAIRN_OP_READ), "READ");
    assert_string_equal(cairn_operation_name(CAIRN_OP_DESCRIBE_TOKENS), "DESCRIBE_TOKENS");
    assert_string_equal(cairn_operation_name(99), "UNKNOWN");
    assert_string_equal(cairn_resource_type_name(CAIRN_RESOURCE_TRANSACTIONAL_ID), "TRANSACTIONAL_ID");
    assert_string_equal(cairn_resource_type_name(CAIRN_RESOURCE_USER), "USER");
    assert_string_equal(cairn_resource_type_name(-3), "UNKNOWN");
    assert_string_equal(cairn_pattern_type_name(CAIRN_PATTERN_PREFIXED), "PREFIXED");
    assert_string_equal(cairn_pattern_type_name(CAIRN_PATTERN_LITERAL), "LITERAL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_key_names_match_the_codecs),
        cmocka_unit_test(test_acl_enum_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
