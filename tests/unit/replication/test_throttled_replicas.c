/* follower.replication.throttled.replicas values as Kafka writes them: "*"
 * or partition:broker pairs, blanks around each tolerated, anything else
 * naming nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replication/replication.h"

static void test_lists(void **state)
{
    (void)state;
    assert_true(replication_throttled_replica("*", 3, 7));
    assert_true(replication_throttled_replica(" * ", 0, 1));
    assert_true(replication_throttled_replica("0:4", 0, 4));
    assert_true(replication_throttled_replica("0:1,0:4, 1:2", 1, 2));
    assert_true(replication_throttled_replica("0:1 , 12:40", 12, 40));
    assert_false(replication_throttled_replica("0:4", 0, 3));
    assert_false(replication_throttled_replica("0:4", 1, 4));
    assert_false(replication_throttled_replica("", 0, 4));
    assert_false(replication_throttled_replica(NULL, 0, 4));
    assert_false(replication_throttled_replica("0:", 0, 4));
    assert_false(replication_throttled_replica(":4", 0, 4));
    assert_false(replication_throttled_replica("0:4x", 0, 4));
    assert_false(replication_throttled_replica("0-4", 0, 4));
    assert_false(replication_throttled_replica("**", 0, 4));
    assert_false(replication_throttled_replica("10:4", 0, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lists)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
