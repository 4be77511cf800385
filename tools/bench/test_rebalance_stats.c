/* The pause and summary arithmetic of cairn-rebalance-bench. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rebalance.h"

uint64_t bench_now_us(void)
{
    return 0;
}

static void test_longest_gap_inside_window(void **state)
{
    (void)state;
    const uint64_t t[] = {100, 110, 120, 400, 410};
    /* 120 -> 400 is the longest silence. */
    assert_int_equal(rebalance_longest_gap(t, 5, 100, 410), 280);
}

static void test_longest_gap_counts_silence_from_before_the_window(void **state)
{
    (void)state;
    const uint64_t t[] = {10, 20, 500, 510};
    /* The pause began at 20, before the window opened at 100. */
    assert_int_equal(rebalance_longest_gap(t, 4, 100, 510), 480);
}

static void test_longest_gap_counts_silence_to_the_end(void **state)
{
    (void)state;
    const uint64_t t[] = {100, 150};
    assert_int_equal(rebalance_longest_gap(t, 2, 100, 1000), 850);
    assert_int_equal(rebalance_longest_gap(NULL, 0, 100, 1000), 900);
    assert_int_equal(rebalance_longest_gap(t, 2, 1000, 1000), 0);
}

static void test_longest_gap_ignores_events_after_the_window(void **state)
{
    (void)state;
    const uint64_t t[] = {100, 200, 5000};
    assert_int_equal(rebalance_longest_gap(t, 3, 100, 300), 100);
}

static void test_median_and_max(void **state)
{
    (void)state;
    double odd[] = {5, 1, 3};
    assert_true(rebalance_median(odd, 3) == 3);
    double even[] = {4, 1, 3, 2};
    assert_true(rebalance_median(even, 4) == 2.5);
    const double v[] = {-1, 7, 2};
    assert_true(rebalance_max(v, 3) == 7);
    assert_true(rebalance_median(NULL, 0) == 0);
}

static void test_assignment_complete(void **state)
{
    (void)state;
    bool a[4] = {true, true, false, false}, b[4] = {false, false, true, true};
    bool *owned[2] = {a, b};
    assert_true(rebalance_assignment_complete(owned, 2, 4));
    b[1] = true; /* partition 1 owned twice */
    assert_false(rebalance_assignment_complete(owned, 2, 4));
    b[1] = false;
    b[3] = false; /* partition 3 owned by nobody */
    assert_false(rebalance_assignment_complete(owned, 2, 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_longest_gap_inside_window),
        cmocka_unit_test(test_longest_gap_counts_silence_from_before_the_window),
        cmocka_unit_test(test_longest_gap_counts_silence_to_the_end),
        cmocka_unit_test(test_longest_gap_ignores_events_after_the_window),
        cmocka_unit_test(test_median_and_max),
        cmocka_unit_test(test_assignment_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
