/* topic_name_valid: Kafka's rules and messages, on C strings and on
 * length-delimited names that may hold a NUL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/topic_name.h"

static bool valid(const char *name)
{
    return topic_name_valid(name, strlen(name), NULL, 0);
}

static void test_legal_names(void **state)
{
    (void)state;
    assert_true(valid("orders"));
    assert_true(valid("a"));
    assert_true(valid("..."));
    assert_true(valid(".hidden"));
    assert_true(valid("Orders_2026-12.v1"));
    assert_true(valid("__consumer_offsets"));
    char longest[TOPIC_NAME_MAX_LEN + 1];
    memset(longest, 'x', TOPIC_NAME_MAX_LEN);
    longest[TOPIC_NAME_MAX_LEN] = '\0';
    assert_true(valid(longest));
}

static void test_illegal_names_with_kafkas_messages(void **state)
{
    (void)state;
    char err[512];
    assert_false(topic_name_valid("", 0, err, sizeof err));
    assert_string_equal(err, "Topic name is illegal, it can't be empty");
    assert_false(topic_name_valid(NULL, 0, err, sizeof err));
    assert_false(topic_name_valid(".", 1, err, sizeof err));
    assert_string_equal(err, "Topic name cannot be \".\" or \"..\"");
    assert_false(topic_name_valid("..", 2, err, sizeof err));
    char too_long[TOPIC_NAME_MAX_LEN + 2];
    memset(too_long, 'x', TOPIC_NAME_MAX_LEN + 1);
    too_long[TOPIC_NAME_MAX_LEN + 1] = '\0';
    assert_false(topic_name_valid(too_long, strlen(too_long), err, sizeof err));
    assert_string_equal(err, "Topic name is illegal, it can't be longer than 249 characters");
    assert_false(topic_name_valid("a b", 3, err, sizeof err));
    assert_string_equal(err, "Topic name \"a b\" is illegal, it contains a character other than ASCII "
                             "alphanumerics, '.', '_' and '-'");
    const char *bad[] = {"a/b", "a:b", "caf\xc3\xa9", "tab\t", "star*", "a+b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(valid(bad[i]));
}

static void test_length_delimited_names(void **state)
{
    (void)state;
    /* Only len bytes count: a prefix of an illegal string can be legal, and
     * a NUL inside the name is an illegal character, not its end. */
    assert_true(topic_name_valid("ok/not", 2, NULL, 0));
    assert_false(topic_name_valid("ok\0x", 4, NULL, 0));
    assert_false(topic_name_valid("..x", 2, NULL, 0));
    char err[8];
    assert_false(topic_name_valid("", 0, err, sizeof err)); /* a short err is cut, not overrun */
    assert_int_equal(strlen(err), sizeof err - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legal_names),
        cmocka_unit_test(test_illegal_names_with_kafkas_messages),
        cmocka_unit_test(test_length_delimited_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
