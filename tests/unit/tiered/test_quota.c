/* The remote copy and fetch quotas' rate (core/tiered/tiered_quota.c),
 * measured as Kafka's Rate over SampledStat: the young-history divisor,
 * sample expiry, the bounded throttle time and a new bound at runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tiered/tiered_quota.h"

static void test_unlimited_never_throttles(void **state)
{
    (void)state;
    struct tiered_quota q;
    tiered_quota_init(&q, INT64_MAX, 11, 1000);
    tiered_quota_record_at(&q, INT64_MAX / 4, 0);
    assert_int_equal(tiered_quota_throttle_ms_at(&q, 1), 0);
    tiered_quota_destroy(&q);
}

/* A young history counts as (samples - 1) windows: 5000 bytes at once is
 * 500 bytes/s over 10 s, within 1000; 11000 is 1100, over by a tenth of
 * 10 s. */
static void test_young_history_spans_samples_minus_one(void **state)
{
    (void)state;
    struct tiered_quota q;
    tiered_quota_init(&q, 1000, 11, 1000);
    tiered_quota_record_at(&q, 5000, 0);
    assert_true(tiered_quota_rate_at(&q, 0) > 499.0 && tiered_quota_rate_at(&q, 0) < 501.0);
    assert_int_equal(tiered_quota_throttle_ms_at(&q, 0), 0);
    tiered_quota_record_at(&q, 6000, 0);
    int64_t wait = tiered_quota_throttle_ms_at(&q, 0);
    assert_true(wait >= 1000 && wait <= 1001);
    tiered_quota_destroy(&q);
}

/* A huge record waits at most the whole span, and the samples expire after it. */
static void test_throttle_bounded_and_samples_expire(void **state)
{
    (void)state;
    struct tiered_quota q;
    tiered_quota_init(&q, 1000, 2, 1000);
    tiered_quota_record_at(&q, 1000000, 0);
    int64_t wait = tiered_quota_throttle_ms_at(&q, 0);
    assert_true(wait > 0 && wait <= 2001);
    assert_true(tiered_quota_throttle_ms_at(&q, 1999) > 0);
    assert_int_equal(tiered_quota_throttle_ms_at(&q, 2000), 0);
    assert_true(tiered_quota_rate_at(&q, 2000) == 0.0);
    tiered_quota_destroy(&q);
}

/* Steady recording at the bound over many windows stays at about the bound;
 * twice the bound is throttled. */
static void test_steady_rate(void **state)
{
    (void)state;
    struct tiered_quota q;
    tiered_quota_init(&q, 1000, 11, 1000);
    for (int64_t t = 0; t <= 30000; t += 100)
        tiered_quota_record_at(&q, 100, t);
    double rate = tiered_quota_rate_at(&q, 30000);
    assert_true(rate > 900.0 && rate < 1100.0);
    for (int64_t t = 30100; t <= 60000; t += 100)
        tiered_quota_record_at(&q, 200, t);
    assert_true(tiered_quota_throttle_ms_at(&q, 60000) > 0);
    tiered_quota_destroy(&q);
}

static void test_new_bound_at_once(void **state)
{
    (void)state;
    struct tiered_quota q;
    tiered_quota_init(&q, INT64_MAX, 2, 1000);
    tiered_quota_record_at(&q, 10000, 0);
    assert_int_equal(tiered_quota_throttle_ms_at(&q, 10), 0);
    tiered_quota_set_bound(&q, 1000);
    assert_true(tiered_quota_throttle_ms_at(&q, 10) > 0);
    tiered_quota_set_bound(&q, INT64_MAX);
    assert_int_equal(tiered_quota_throttle_ms_at(&q, 10), 0);
    tiered_quota_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlimited_never_throttles),
        cmocka_unit_test(test_young_history_spans_samples_minus_one),
        cmocka_unit_test(test_throttle_bounded_and_samples_expire),
        cmocka_unit_test(test_steady_rate),
        cmocka_unit_test(test_new_bound_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
