/* The replication quota's token bucket on a clock the test drives: a
 * fetch may overdraw it, the debt is paid back at the rate, idle time
 * earns at most the burst, and a new rate counts from the moment it is
 * set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replication/quota.h"

#define MS 1000000LL

static void test_unlimited_never_exceeded(void **state)
{
    (void)state;
    struct replication_quota q;
    replication_quota_init(&q, INT64_MAX);
    replication_quota_record_at(&q, 1 << 30, q.last_ns);
    assert_false(replication_quota_exceeded_at(&q, q.last_ns));
    assert_false(replication_quota_enabled(&q));
    assert_int_equal(replication_quota_wait_ms_at(&q, q.last_ns), 0);
    replication_quota_destroy(&q);
}

static void test_debt_paid_at_the_rate(void **state)
{
    (void)state;
    struct replication_quota q;
    replication_quota_init(&q, 1000); /* 1000 bytes/s */
    int64_t t = q.last_ns;
    assert_true(replication_quota_enabled(&q));
    assert_false(replication_quota_exceeded_at(&q, t)); /* nothing owed yet */
    replication_quota_record_at(&q, 2000, t);           /* one fetch overdraws */
    assert_true(replication_quota_exceeded_at(&q, t));
    int64_t wait = replication_quota_wait_ms_at(&q, t + 1000 * MS);
    assert_true(wait >= 999 && wait <= 1001);
    assert_true(replication_quota_exceeded_at(&q, t + 1999 * MS));
    assert_false(replication_quota_exceeded_at(&q, t + 2000 * MS));
    /* Idle for a minute: at most the burst is saved up. */
    replication_quota_record_at(&q, 1000 * REPLICATION_QUOTA_BURST_MS / 1000 + 1, t + 62000 * MS);
    assert_true(replication_quota_exceeded_at(&q, t + 62000 * MS));
    replication_quota_destroy(&q);
}

static void test_new_rate_applies_at_once(void **state)
{
    (void)state;
    struct replication_quota q;
    replication_quota_init(&q, 100);
    replication_quota_record_at(&q, 100000, q.last_ns); /* 1000 s of debt at 100 bytes/s */
    assert_true(replication_quota_exceeded(&q));
    replication_quota_set_rate(&q, INT64_MAX); /* lifted: nothing owed */
    assert_false(replication_quota_exceeded(&q));
    replication_quota_set_rate(&q, 100);
    assert_false(replication_quota_exceeded(&q)); /* starts again from nothing owed */
    replication_quota_record(&q, 1000);
    assert_true(replication_quota_exceeded(&q));
    replication_quota_set_rate(&q, 1000000000); /* 1 GB/s: the 1000 bytes are paid in a microsecond */
    int64_t later = q.last_ns + 1 * MS;
    assert_false(replication_quota_exceeded_at(&q, later));
    replication_quota_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlimited_never_exceeded),
        cmocka_unit_test(test_debt_paid_at_the_rate),
        cmocka_unit_test(test_new_rate_applies_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
