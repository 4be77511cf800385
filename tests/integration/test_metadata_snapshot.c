/* Metadata snapshots end to end: with
 * metadata.log.max.record.bytes.between.snapshots=1 every controller commit
 * writes a snapshot; the data dir keeps the last two, in Kafka's file
 * names; after kill -9 the broker starts from the newest one and clients
 * see every topic, and controller writes keep working on top of it. With
 * a short metadata.log.max.snapshot.interval.ms and a bytes trigger that
 * never fires, a change is snapshotted once the interval has passed, with
 * no commit after it, and a node where nothing changes writes none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../common/test_file.h"
#include "harness.h"
#include "rk_helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Snapshot files in the metadata log dir; checks each name's shape. */
static int count_snapshots(const struct test_broker *b)
{
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/__cluster_metadata-0", b->data_dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || strcmp(dot, ".checkpoint") != 0)
            continue;
        /* <20-digit offset>-<10-digit epoch>.checkpoint */
        assert_int_equal(dot - e->d_name, 31);
        assert_int_equal(e->d_name[20], '-');
        n++;
    }
    closedir(d);
    return n;
}

/* The end offset of the newest snapshot file, -1 when none. */
static long long newest_snapshot(const struct test_broker *b)
{
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/__cluster_metadata-0", b->data_dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    long long newest = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || strcmp(dot, ".checkpoint") != 0)
            continue;
        long long end = strtoll(e->d_name, NULL, 10);
        if (end > newest)
            newest = end;
    }
    closedir(d);
    return newest;
}

static void pause_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls (generously: the machine may be loaded) until the newest snapshot
 * ends past `after`; returns its end offset, -1 on timeout. */
static long long wait_snapshot_past(const struct test_broker *b, long long after)
{
    for (long long deadline = harness_now_ms() + 30000; harness_now_ms() < deadline; pause_ms(50)) {
        long long newest = newest_snapshot(b);
        if (newest > after)
            return newest;
    }
    return -1;
}

/* Snapshots are written on a thread of their own, and pruned just after
 * the newest is renamed into place: polls until there are n. */
static bool wait_snapshot_count(const struct test_broker *b, int n)
{
    for (long long deadline = harness_now_ms() + 30000; harness_now_ms() < deadline; pause_ms(50))
        if (count_snapshots(b) == n)
            return true;
    return false;
}

#define INTERVAL_MS 700

static void test_interval_snapshots_a_change_once_it_passes(void **state)
{
    struct test_broker *b = *state;
    /* The registration at start is new: snapshotted by time alone. Then
     * wait for quiet (a later start-up commit gets its own snapshot). */
    long long newest = wait_snapshot_past(b, -1);
    assert_true(newest > 0);
    long long deadline = harness_now_ms() + 30000;
    for (long long next;; newest = next) {
        pause_ms(3 * INTERVAL_MS);
        if ((next = newest_snapshot(b)) == newest)
            break;
        assert_true(harness_now_ms() < deadline);
    }

    /* Nothing changes: no snapshot, however many intervals pass. */
    pause_ms(4 * INTERVAL_MS);
    assert_int_equal(newest_snapshot(b), newest);

    /* A change long after the last snapshot is snapshotted at once; one
     * right after that snapshot, followed by silence, still is once the
     * interval has passed (no commit after it to trigger one). */
    rk_create_topic(broker_bootstrap(b), "timed-1", 1, NULL);
    long long first = wait_snapshot_past(b, newest);
    if (first < 0)
        fail_msg("no snapshot after the first change (newest still ends at %lld)", newest);
    rk_create_topic(broker_bootstrap(b), "timed-2", 1, NULL);
    long long after = wait_snapshot_past(b, first);
    if (after < 0)
        fail_msg("no snapshot after the second change (newest still ends at %lld)", first);
    /* Logged once the file is in place. */
    char line[96];
    snprintf(line, sizeof(line), "wrote metadata snapshot at offset %lld,", after);
    bool logged = false;
    for (long long until = harness_now_ms() + 30000; !logged && harness_now_ms() < until; pause_ms(50)) {
        char *log = test_read_file(b->log_path, NULL);
        assert_non_null(log);
        logged = strstr(log, line) != NULL;
        free(log);
    }
    assert_true(logged);
    pause_ms(4 * INTERVAL_MS);
    assert_int_equal(newest_snapshot(b), after);
    broker_mark_passed(b);
}

static void expect_topics(const struct test_broker *b, const char *const *names, const int *partitions, int count)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    for (int i = 0; i < count; i++)
        if (!rk_wait_topic(rk, names[i], partitions[i], 10000))
            fail_msg("topic %s with %d partitions is missing after the restart", names[i], partitions[i]);
    rk_producer_destroy(rk);
}

static void test_restart_from_snapshot_keeps_topics(void **state)
{
    struct test_broker *b = *state;
    const char *names[] = {"snap-a", "snap-b", "snap-c"};
    const int partitions[] = {3, 2, 1};
    const char *configs[] = {"retention.ms", "123456", NULL};
    rk_create_topic(broker_bootstrap(b), names[0], partitions[0], configs);
    rk_create_topic(broker_bootstrap(b), names[1], partitions[1], NULL);
    assert_true(wait_snapshot_count(b, 2));

    broker_kill9(b);
    broker_restart(b);
    char *log = test_read_file(b->log_path, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "loaded the metadata snapshot at offset"));
    free(log);
    expect_topics(b, names, partitions, 2);

    /* Writes go on from the loaded image, and survive a clean restart. */
    rk_create_topic(broker_bootstrap(b), names[2], partitions[2], NULL);
    broker_stop(b);
    broker_restart(b);
    expect_topics(b, names, partitions, 3);
    assert_true(wait_snapshot_count(b, 2));
    broker_mark_passed(b);
}

static int setup(void **state)
{
    struct test_broker *b = calloc(1, sizeof(*b));
    const char *overrides[] = {"metadata.log.max.record.bytes.between.snapshots=1", NULL};
    broker_start(b, overrides);
    *state = b;
    return 0;
}

static int setup_interval(void **state)
{
    struct test_broker *b = calloc(1, sizeof(*b));
    const char *overrides[] = {"metadata.log.max.record.bytes.between.snapshots=1073741824",
                               "metadata.log.max.snapshot.interval.ms=700", NULL};
    broker_start(b, overrides);
    *state = b;
    return 0;
}

static int teardown(void **state)
{
    struct test_broker *b = *state;
    broker_cleanup(b);
    free(b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_from_snapshot_keeps_topics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interval_snapshots_a_change_once_it_passes, setup_interval, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
