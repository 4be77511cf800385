#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coordinator/coordinator_partition.h"

static int32_t hash_of(const char *s)
{
    return coordinator_key_hash(s, strlen(s));
}

/* Values of java.lang.String#hashCode for the same strings. */
static void test_java_hash_vectors(void **state)
{
    (void)state;
    assert_int_equal(hash_of(""), 0);
    assert_int_equal(hash_of("hello"), 99162322);
    assert_int_equal(hash_of("Hello World"), -862545276);
    /* U+00E9 is one UTF-16 unit; U+1F600 is a surrogate pair. */
    assert_int_equal(hash_of("\xc3\xa9"), 0xe9);
    assert_int_equal(hash_of("\xf0\x9f\x98\x80"), 0xd83d * 31 + 0xde00);
    /* A stray continuation byte decodes as U+FFFD. */
    assert_int_equal(hash_of("\x80"), 0xfffd);
    /* Truncated sequence: each byte becomes U+FFFD. */
    assert_int_equal(hash_of("\xe2\x82"), 0xfffd * 31 + 0xfffd);
}

static void test_partition_is_abs_modulo(void **state)
{
    (void)state;
    /* "Hello World" hashes negative: Kafka's partitionFor takes
     * Utils.abs(hashCode) (862545276 % 50 = 26), not the sign mask (22). */
    assert_int_equal(coordinator_partition_for("Hello World", 11, 50), 26);
    /* "polygenelubricants" hashes to INT32_MIN, which Utils.abs maps to 0. */
    assert_int_equal(hash_of("polygenelubricants"), INT32_MIN);
    assert_int_equal(coordinator_partition_for("polygenelubricants", 18, 7), 0);
    assert_int_equal(coordinator_partition_for("hello", 5, 50), 99162322 % 50);
    assert_int_equal(coordinator_partition_for("hello", 5, 0), 0);
    for (int n = 1; n < 64; n++) {
        int32_t p = coordinator_partition_for("group-x", 7, n);
        assert_true(p >= 0 && p < n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_vectors),
        cmocka_unit_test(test_partition_is_abs_modulo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
