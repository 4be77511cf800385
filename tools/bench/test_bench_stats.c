/* Unit tests for the latency histogram and the /proc stat parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_cpu.h"
#include "bench_histogram.h"

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
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_proc_stat_rejects_garbage),
        cmocka_unit_test(test_read_own_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
