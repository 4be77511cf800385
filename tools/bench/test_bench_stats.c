/* Unit tests for the latency histogram, the fixed-rate send schedule and
 * the /proc stat parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_cpu.h"
#include "bench_histogram.h"
#include "bench_schedule.h"

static void test_bucket_ranges_are_contiguous(void **state)
{
    (void)state;
    uint64_t expected_low = 0;
    for (size_t b = 0; b < 128 + 50 * 64; b++) {
        uint64_t low, high;
        bench_histogram_bucket_range(b, &low, &high);
        assert_int_equal(low, expected_low);
        assert_true(high >= low);
        /* Both ends map back to this bucket. */
        assert_int_equal(bench_histogram_bucket_of(low), b);
        assert_int_equal(bench_histogram_bucket_of(high), b);
        expected_low = high + 1;
    }
}

static void test_bucket_width_is_bounded(void **state)
{
    (void)state;
    uint64_t values[] = {127, 128, 1000, 123456, 9876543210ull, UINT64_MAX};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        uint64_t low, high;
        bench_histogram_bucket_range(bench_histogram_bucket_of(values[i]), &low, &high);
        assert_true(values[i] >= low && values[i] <= high);
        /* Width is at most 1/64 of the lower bound (exact below 128). */
        assert_true((high - low) <= low / 64);
    }
}

static void test_quantiles_of_uniform_samples(void **state)
{
    (void)state;
    struct bench_histogram *h = malloc(sizeof(*h));
    assert_non_null(h);
    bench_histogram_init(h);
    assert_int_equal(bench_histogram_quantile(h, 0.5), 0);
    for (uint64_t v = 1; v <= 100000; v++)
        bench_histogram_record(h, v);
    assert_int_equal(h->total, 100000);
    assert_int_equal(h->max_us, 100000);

    struct {
        double q;
        double exact;
    } cases[] = {{0.5, 50000}, {0.99, 99000}, {0.999, 99900}, {1.0, 100000}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got = (double)bench_histogram_quantile(h, cases[i].q);
        double relative = (got - cases[i].exact) / cases[i].exact;
        assert_true(relative < 0.016 && relative > -0.016);
    }
    free(h);
}

static void test_quantile_small_values_exact(void **state)
{
    (void)state;
    struct bench_histogram *h = malloc(sizeof(*h));
    assert_non_null(h);
    bench_histogram_init(h);
    /* 90 samples of 5 us, 10 of 100 us: p50 is 5, p99 is 100. */
    for (int i = 0; i < 90; i++)
        bench_histogram_record(h, 5);
    for (int i = 0; i < 10; i++)
        bench_histogram_record(h, 100);
    assert_int_equal(bench_histogram_quantile(h, 0.5), 5);
    assert_int_equal(bench_histogram_quantile(h, 0.90), 5);
    assert_int_equal(bench_histogram_quantile(h, 0.91), 100);
    assert_int_equal(bench_histogram_quantile(h, 0.99), 100);
    free(h);
}

static void test_schedule_due_times_are_exact(void **state)
{
    (void)state;
    /* 2 000 records/s: one every 500 us, from the start on. */
    assert_int_equal(bench_schedule_due_us(1000, 0, 2000), 1000);
    assert_int_equal(bench_schedule_due_us(1000, 1, 2000), 1500);
    assert_int_equal(bench_schedule_due_us(1000, 1999, 2000), 1000 + 999500);
    assert_int_equal(bench_schedule_due_us(1000, 2000, 2000), 1000 + 1000000);
    /* A rate that does not divide a second: truncated per record, but no
     * drift accumulates (record 3 at exactly one second, 3 000 at 1 000 s). */
    assert_int_equal(bench_schedule_due_us(0, 1, 3), 333333);
    assert_int_equal(bench_schedule_due_us(0, 2, 3), 666666);
    assert_int_equal(bench_schedule_due_us(0, 3, 3), 1000000);
    assert_int_equal(bench_schedule_due_us(0, 3000, 3), 1000000000ull);
    assert_int_equal(bench_schedule_due_us(0, 7, 7000000), 1);
}

static void test_schedule_is_monotonic_and_even(void **state)
{
    (void)state;
    uint64_t rates[] = {1, 3, 999, 2000, 10000, 333333, 10000000};
    for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
        uint64_t prev = bench_schedule_due_us(5, 0, rates[r]);
        for (uint64_t i = 1; i < 20000; i++) {
            uint64_t due = bench_schedule_due_us(5, i, rates[r]);
            assert_true(due >= prev);
            /* Gaps differ by at most the 1 us of truncation. */
            uint64_t gap = due - prev;
            assert_true(gap * rates[r] <= 1000000u + rates[r]);
            assert_true(gap * rates[r] + rates[r] >= 1000000u);
            prev = due;
        }
    }
}

static void test_schedule_large_index_does_not_overflow(void **state)
{
    (void)state;
    /* index * 10^6 would wrap at these indexes; the exact value does not. */
    uint64_t index = 4000000000000000000ull, rate = 10000000;
    unsigned __int128 exact = (unsigned __int128)index * 1000000u / rate;
    assert_true(exact < UINT64_MAX);
    assert_int_equal(bench_schedule_due_us(0, index, rate), (uint64_t)exact);
    index = 18000000000000ull * 7 + 5;
    rate = 7;
    exact = (unsigned __int128)index * 1000000u / rate;
    assert_true(exact < UINT64_MAX);
    assert_int_equal(bench_schedule_due_us(0, index, rate), (uint64_t)exact);
}

static void test_schedule_achieved_rate(void **state)
{
    (void)state;
    /* On schedule: 10 000 records at 2 000/s, the last sent when due. */
    uint64_t last = bench_schedule_due_us(100, 9999, 2000);
    double on_time = bench_schedule_achieved_rate(10000, 100, last, 2000);
    assert_true(on_time > 1999.99 && on_time < 2000.01);
    /* The last record sent 5 s late: 10 000 records over 10 s. */
    double behind = bench_schedule_achieved_rate(10000, 100, last + 5000000, 2000);
    assert_true(behind > 999.9 && behind < 1000.1);
    assert_true(bench_schedule_achieved_rate(0, 100, 100, 2000) == 0.0);
    /* One record: one interval. */
    double one = bench_schedule_achieved_rate(1, 100, 100, 2000);
    assert_true(one > 1999.99 && one < 2000.01);
}

static void test_proc_stat_parse(void **state)
{
    (void)state;
    /* Command name with spaces and a ')' inside, as the kernel allows. */
    const char *line = "1234 (cairn d) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 "
                       "250 75 0 0 20 0 9 0 100 200000000 5000 18446744073709551615\n";
    struct bench_cpu_sample s;
    char err[128];
    assert_int_equal(bench_cpu_parse_proc_stat(line, 100, &s, err, sizeof(err)), 0);
    assert_int_equal(s.user_us, 2500000);
    assert_int_equal(s.system_us, 750000);
}

static void test_proc_stat_rejects_garbage(void **state)
{
    (void)state;
    struct bench_cpu_sample s;
    char err[128];
    assert_int_equal(bench_cpu_parse_proc_stat("no paren here", 100, &s, err, sizeof(err)), -1);
    assert_int_equal(bench_cpu_parse_proc_stat("1 (x) S 1 2", 100, &s, err, sizeof(err)), -1);
    assert_int_equal(bench_cpu_parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 3", 100, &s, err, sizeof(err)), -1);
    assert_int_equal(bench_cpu_parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 3", 0, &s, err, sizeof(err)), -1);
}

static void test_read_own_process(void **state)
{
    (void)state;
    /* Burn some CPU so the sample is non-zero at clock-tick resolution. */
    volatile uint64_t x = 0;
    struct bench_cpu_sample self;
    do {
        for (int i = 0; i < 10000000; i++)
            x += (uint64_t)i * 7;
        bench_cpu_read_self(&self);
    } while (self.user_us + self.system_us < 30000);
    struct bench_cpu_sample s;
    char err[128];
    assert_int_equal(bench_cpu_read_process(getpid(), &s, err, sizeof(err)), 0);
    assert_true(s.user_us + s.system_us > 0);
    assert_true(bench_cpu_read_rss_kib(getpid()) > 0);
    assert_int_equal(bench_cpu_read_process(-5, &s, err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_ranges_are_contiguous),
        cmocka_unit_test(test_bucket_width_is_bounded),
        cmocka_unit_test(test_quantiles_of_uniform_samples),
        cmocka_unit_test(test_quantile_small_values_exact),
        cmocka_unit_test(test_schedule_due_times_are_exact),
        cmocka_unit_test(test_schedule_is_monotonic_and_even),
        cmocka_unit_test(test_schedule_large_index_does_not_overflow),
        cmocka_unit_test(test_schedule_achieved_rate),
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_proc_stat_rejects_garbage),
        cmocka_unit_test(test_read_own_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
