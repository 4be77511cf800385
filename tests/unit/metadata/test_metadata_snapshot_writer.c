/* The snapshot writer thread: commits are applied and published while a
 * snapshot is being written (the thread that delivers them, a quorum's
 * raft thread, no longer writes snapshots), commits meanwhile share one
 * next snapshot, and the time trigger (metadata.log.max.snapshot.interval.ms,
 * KIP-876) writes a snapshot of new records once the interval has passed,
 * with no further commit, and none while nothing changed. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "metadata/metadata_snapshot.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

/* Generous: the machine may be loaded. */
#define WAIT_MS 20000

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-mdwriter-XXXXXX");
    if (!f)
        return -1;
    f->opts.default_num_partitions = 1;
    f->opts.default_replication_factor = 1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->store) {
        pthread_mutex_lock(&f->store->snap_mu);
        f->store->snap_test_hold = false;
        pthread_cond_broadcast(&f->store->snap_cond);
        pthread_mutex_unlock(&f->store->snap_mu);
    }
    return fixture_free(f);
}

static void create_topic(struct fixture *f, const char *name)
{
    char err[256] = "";
    int16_t rc = metadata_create_topic(f->store, name, 1, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err));
    if (rc != KAFKA_ERR_NONE)
        fail_msg("create %s: %d %s", name, rc, err);
}

static int64_t snapshots_written(struct fixture *f)
{
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    return stats.snapshots_written;
}

static int64_t last_offset(struct fixture *f)
{
    const struct metadata_image *img = metadata_image_acquire(f->store);
    int64_t last = img->last_offset;
    metadata_image_release(img);
    return last;
}

/* The newest snapshot's end offset in the log dir, -1 when none. */
static int64_t newest_snapshot(struct fixture *f)
{
    struct metadata_snapshot_id id;
    char err[256];
    return metadata_snapshot_latest(f->log_dir, &id, err, sizeof(err)) == 1 ? id.end_offset : -1;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Polls until the newest snapshot ends at end_offset, then lets the
 * writer finish its cycle (the count moves after the file is in place);
 * false on timeout. */
static bool wait_for_snapshot(struct fixture *f, int64_t end_offset)
{
    for (int64_t deadline = clock_mono_ms() + WAIT_MS; clock_mono_ms() < deadline; sleep_ms(20)) {
        if (newest_snapshot(f) == end_offset) {
            metadata_snapshot_writer_flush(f->store);
            return true;
        }
    }
    return false;
}

static void test_commits_go_on_while_a_snapshot_is_written(void **state)
{
    struct fixture *f = *state;
    f->opts.snapshot_bytes = 1; /* every commit makes one due */
    f->opts.snapshot_interval_ms = 0;
    open_store(f);
    close_store(f); /* the registration's snapshot is written */
    open_store(f);
    int64_t before = newest_snapshot(f);
    assert_true(before > 0);

    /* The writer takes the next image and stalls on it, as on a slow disk. */
    pthread_mutex_lock(&f->store->snap_mu);
    f->store->snap_test_hold = true;
    pthread_mutex_unlock(&f->store->snap_mu);
    create_topic(f, "first");
    int64_t first_end = last_offset(f) + 1;
    pthread_mutex_lock(&f->store->snap_mu);
    while (!f->store->snap_test_held)
        pthread_cond_wait(&f->store->snap_cond, &f->store->snap_mu);
    pthread_mutex_unlock(&f->store->snap_mu);

    /* Commits are applied and published meanwhile: the loader (the raft
     * thread with a quorum) is not the one writing. */
    create_topic(f, "second");
    create_topic(f, "third");
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_non_null(metadata_image_topic_by_name(img, "third", 5));
    int64_t live_end = img->last_offset + 1;
    metadata_image_release(img);
    assert_int_equal(snapshots_written(f), 0);
    assert_int_equal(newest_snapshot(f), before);

    /* Released: the held image's snapshot, then one more for both later
     * commits together (at most one in progress). */
    pthread_mutex_lock(&f->store->snap_mu);
    f->store->snap_test_hold = false;
    pthread_cond_broadcast(&f->store->snap_cond);
    pthread_mutex_unlock(&f->store->snap_mu);
    metadata_snapshot_writer_flush(f->store);
    assert_int_equal(snapshots_written(f), 2);
    assert_int_equal(newest_snapshot(f), live_end);
    assert_true(first_end < live_end);

    /* The newest snapshot holds them all. */
    close_store(f);
    f->opts.snapshot_bytes = -1;
    open_store(f);
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, live_end);
    assert_int_equal(stats.log_records, 0);
    img = metadata_image_acquire(f->store);
    assert_non_null(metadata_image_topic_by_name(img, "second", 6));
    metadata_image_release(img);
}

static void test_interval_snapshots_new_records_only(void **state)
{
    struct fixture *f = *state;
    f->opts.snapshot_bytes = 1LL << 30; /* the bytes trigger never fires here */
    f->opts.snapshot_interval_ms = 300;
    open_store(f);
    /* The registration at open is new: snapshotted once the interval passes. */
    assert_true(wait_for_snapshot(f, last_offset(f) + 1));
    int64_t written = snapshots_written(f);
    assert_true(written >= 1);

    /* Nothing committed: several intervals pass without a snapshot. */
    sleep_ms(5 * 300);
    assert_int_equal(snapshots_written(f), written);

    /* One change, and nothing after it: its snapshot comes by time alone. */
    create_topic(f, "later");
    int64_t end = last_offset(f) + 1;
    assert_true(wait_for_snapshot(f, end));
    assert_int_equal(snapshots_written(f), written + 1);

    /* Quiet again: no more. */
    sleep_ms(5 * 300);
    assert_int_equal(snapshots_written(f), written + 1);
    assert_int_equal(newest_snapshot(f), end);
}

static void test_interval_zero_never_snapshots(void **state)
{
    struct fixture *f = *state;
    f->opts.snapshot_bytes = 1LL << 30;
    f->opts.snapshot_interval_ms = 0; /* Kafka's meaning: no time trigger */
    open_store(f);
    create_topic(f, "quiet");
    sleep_ms(1500); /* more than one check of the writer's clock */
    assert_int_equal(snapshots_written(f), 0);
    assert_int_equal(newest_snapshot(f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commits_go_on_while_a_snapshot_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interval_snapshots_new_records_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interval_zero_never_snapshots, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
