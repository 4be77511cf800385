/* The cleaner's I/O throttle (log.cleaner.io.max.bytes.per.second): the
 * default lets everything through, a rate holds for one thread and for
 * several together, cancel ends a sleep, and a cleaner pass given a
 * throttle takes as long as its bytes need. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <float.h>
#include <pthread.h>

#include "log/log_throttler.h"
#include "cleaner_test_util.h"

#define CHUNK (64 * 1024)
#define MIB (1024 * 1024)

static int64_t observe_all(struct log_throttler *t, int64_t bytes)
{
    int64_t started = clock_mono_ms();
    for (int64_t done = 0; done < bytes; done += CHUNK)
        log_throttler_observe(t, CHUNK);
    return clock_mono_ms() - started;
}

static void test_default_throttles_nothing(void **state)
{
    (void)state;
    struct log_throttler t;
    log_throttler_init(&t, DBL_MAX);
    assert_false(t.enabled);
    assert_true(observe_all(&t, 1024LL * MIB) < 200);
    log_throttler_destroy(&t);
}

/* 4 MiB at 4 MiB/s: about a second, less at most one check interval
 * observed before the first check. */
static void test_rate_holds(void **state)
{
    (void)state;
    struct log_throttler t;
    log_throttler_init(&t, 4.0 * MIB);
    int64_t ms = observe_all(&t, 4LL * MIB);
    assert_true(ms >= 1000 - LOG_THROTTLER_CHECK_INTERVAL_MS - 50);
    assert_true(ms < 3000);
    log_throttler_destroy(&t);
}

struct observer {
    struct log_throttler *t;
    int64_t bytes;
};

static void *observe_thread(void *arg)
{
    struct observer *o = arg;
    observe_all(o->t, o->bytes);
    return NULL;
}

/* Two threads of 2 MiB each share the 4 MiB/s: a second together, where
 * a throttle per thread would let them finish in half of that. */
static void test_rate_shared_by_threads(void **state)
{
    (void)state;
    struct log_throttler t;
    log_throttler_init(&t, 4.0 * MIB);
    struct observer o = {&t, 2LL * MIB};
    pthread_t threads[2];
    int64_t started = clock_mono_ms();
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, observe_thread, &o), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    int64_t ms = clock_mono_ms() - started;
    fprintf(stderr, "two threads: %lld ms\n", (long long)ms);
    assert_true(ms >= 1000 - LOG_THROTTLER_CHECK_INTERVAL_MS - 50);
    assert_true(ms < 3000);
    log_throttler_destroy(&t);
}

static void *cancel_later(void *arg)
{
    usleep(100000);
    log_throttler_cancel(arg);
    return NULL;
}

/* 1 MiB at 1 byte/s would sleep for days: cancel ends it. */
static void test_cancel_ends_sleep(void **state)
{
    (void)state;
    struct log_throttler t;
    log_throttler_init(&t, 1.0);
    usleep((LOG_THROTTLER_CHECK_INTERVAL_MS + 50) * 1000);
    pthread_t canceller;
    assert_int_equal(pthread_create(&canceller, NULL, cancel_later, &t), 0);
    int64_t started = clock_mono_ms();
    log_throttler_observe(&t, MIB);
    int64_t ms = clock_mono_ms() - started;
    pthread_join(canceller, NULL);
    assert_true(ms >= 50);
    assert_true(ms < 2000);
    log_throttler_destroy(&t);
}

/* A pass reads the dirty segments twice (map, rewrite) and writes what
 * survives: at 256 KiB/s over some 220 KB of segments it cannot finish in
 * much under 1.7 s less a check interval. The wall-clock bound is a lower
 * one (a busy machine only makes the pass slower); that the time comes from
 * the throttle is shown by the throttle having seen every byte of the
 * pass's I/O, and test_rate_holds shows what it does with them. */
static void test_cleaner_pass_throttled(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    char key[16], value[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "k%d", i % 50);
        snprintf(value, sizeof value, "value-%d", i);
        put(log, key, value);
    }
    int64_t bytes = partition_log_size_bytes(log);
    assert_true(bytes > 200000);

    struct log_throttler t;
    log_throttler_init(&t, 256.0 * 1024);
    struct log_clean_options opts = default_opts;
    opts.throttler = &t;
    struct log_clean_result res;
    int64_t started = clock_mono_ms();
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opts, &res), 0);
    int64_t ms = clock_mono_ms() - started;
    assert_true(res.cleaned);
    int64_t io = 2 * res.bytes_before + res.bytes_after;
    int64_t least = io * 1000 / (256 * 1024) - LOG_THROTTLER_CHECK_INTERVAL_MS - 100;
    fprintf(stderr, "throttled pass: %lld bytes of I/O in %lld ms (at least %lld), throttle saw %lld\n", (long long)io,
            (long long)ms, (long long)least, (long long)t.observed_total);
    assert_true(least > 1000);
    assert_true(ms >= least);
    assert_true(t.observed_total >= io);
    log_throttler_destroy(&t);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_throttles_nothing),
        cmocka_unit_test(test_rate_holds),
        cmocka_unit_test(test_rate_shared_by_threads),
        cmocka_unit_test(test_cancel_ends_sleep),
        cmocka_unit_test_setup_teardown(test_cleaner_pass_throttled, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
