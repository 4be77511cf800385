/* The partition log's leader epoch cache: appends start epochs, the
 * leader-epoch-checkpoint file follows every change, truncation and
 * start-offset moves trim it, and opening the log reloads it, rebuilds a
 * missing or malformed file from the batches, and adds the epochs that
 * segments rescanned after an unclean stop start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/leader_epoch_cache.h"
#include "log_test_util.h"
#include "../../common/test_file.h"
#include "protocol/generated/errors.h"

struct fixture {
    char *dir;
    char path[512]; /* the checkpoint file */
    struct log_config cfg;
    struct partition_log *log;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    f->dir = test_make_dir();
    log_config_defaults(&f->cfg);
    if (f->dir)
        snprintf(f->path, sizeof f->path, "%s/%s", f->dir, LEADER_EPOCH_CHECKPOINT_FILE);
    *state = f;
    return f->dir ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->log)
        partition_log_close(f->log);
    test_remove_tree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void open_log(struct fixture *f, bool recover)
{
    char err[256] = "";
    if (f->log)
        partition_log_close(f->log);
    f->log = NULL;
    if (partition_log_open(f->dir, &f->cfg, recover, &f->log, err, sizeof err) != 0)
        fail_msg("open failed: %s", err);
}

/* One batch of `records` records stamped with epoch (leader_epoch). With
 * as_follower, the batch carries the epoch itself and the append keeps it
 * (leader_epoch -1), as a follower's copy of a leader's batch would. */
static void append(struct fixture *f, int records, int32_t epoch, bool as_follower)
{
    size_t len;
    uint8_t *batch = test_batch(records, 1700000000000LL, 100, &len);
    assert_non_null(batch);
    if (as_follower)
        record_batch_set_partition_leader_epoch(batch, epoch);
    struct log_append_result res;
    assert_int_equal(partition_log_append(f->log, batch, len, as_follower ? -1 : epoch, &res), KAFKA_ERR_NONE);
    free(batch);
}

static void expect_checkpoint(const struct fixture *f, const char *want)
{
    char *text = test_read_file(f->path, NULL);
    if (!text)
        fail_msg("no %s", f->path);
    if (strcmp(text, want) != 0)
        fail_msg("checkpoint is \"%s\", expected \"%s\"", text, want);
    free(text);
}

static void write_checkpoint(const struct fixture *f, const char *text)
{
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void expect_end(struct fixture *f, int32_t requested, int32_t epoch, int64_t offset)
{
    int32_t found = 99;
    int64_t got = partition_log_end_offset_for_epoch(f->log, requested, &found);
    if (found != epoch || got != offset)
        fail_msg("end offset for epoch %d: (%d, %lld), expected (%d, %lld)", requested, found, (long long)got, epoch,
                 (long long)offset);
}

/* Epochs 1 (offsets 0-9), 3 (10-14), 4 (15-19): 5-record batches. */
static void append_three_epochs(struct fixture *f, bool as_follower)
{
    append(f, 5, 1, as_follower);
    append(f, 5, 1, as_follower);
    append(f, 5, 3, as_follower);
    append(f, 5, 4, as_follower);
}

#define THREE_EPOCHS "0\n3\n1 0\n3 10\n4 15\n"

static void test_appends_start_epochs(void **state)
{
    struct fixture *f = *state;
    open_log(f, false);
    /* A fresh log has no entry and no file yet. */
    assert_int_equal(partition_log_latest_epoch(f->log), -1);
    expect_end(f, 0, -1, -1);
    assert_null(test_read_file(f->path, NULL));
    append_three_epochs(f, false);
    expect_checkpoint(f, THREE_EPOCHS);
    assert_int_equal(partition_log_latest_epoch(f->log), 4);
    expect_end(f, 4, 4, 20);
    expect_end(f, 3, 3, 15);
    expect_end(f, 2, 1, 10);
    expect_end(f, 0, 0, 0);
    expect_end(f, 5, -1, -1);
    /* The end offset of the latest epoch moves with the log end. */
    append(f, 2, 4, false);
    expect_end(f, 4, 4, 22);
    expect_checkpoint(f, THREE_EPOCHS);

    struct leader_epoch_entry *entries;
    size_t n;
    assert_int_equal(partition_log_epoch_entries(f->log, &entries, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(entries[2].epoch, 4);
    assert_int_equal(entries[2].start_offset, 15);
    free(entries);

    /* Reopened cleanly, the file is the cache. */
    open_log(f, false);
    expect_end(f, 3, 3, 15);
    expect_end(f, 4, 4, 22);
}

static void test_leader_epoch_starts_at_log_end(void **state)
{
    struct fixture *f = *state;
    open_log(f, false);
    /* Becoming leader of an empty log: the epoch is known at once. */
    assert_int_equal(partition_log_assign_leader_epoch(f->log, 0), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n1\n0 0\n");
    expect_end(f, 0, 0, 0);
    /* A restart of the still empty log neither drops nor rewrites it (every
     * rewrite is a new file): starting many empty partitions writes
     * nothing. */
    struct stat before, after;
    assert_int_equal(stat(f->path, &before), 0);
    open_log(f, false);
    expect_end(f, 0, 0, 0);
    assert_int_equal(partition_log_assign_leader_epoch(f->log, 0), KAFKA_ERR_NONE);
    assert_int_equal(stat(f->path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    append(f, 5, 0, false);
    /* Leading again at the same epoch (a restart) changes nothing. */
    assert_int_equal(partition_log_assign_leader_epoch(f->log, 0), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n1\n0 0\n");
    /* A new leader epoch starts where the log ends, before its first
     * record, and closes the previous one there. */
    assert_int_equal(partition_log_assign_leader_epoch(f->log, 2), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n2\n0 0\n2 5\n");
    expect_end(f, 0, 0, 5);
    expect_end(f, 1, 0, 5);
    expect_end(f, 2, 2, 5);
    append(f, 3, 2, false);
    expect_end(f, 2, 2, 8);
    expect_checkpoint(f, "0\n2\n0 0\n2 5\n");
    /* An unknown epoch (-1) is no leader epoch. */
    assert_int_equal(partition_log_assign_leader_epoch(f->log, -1), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n2\n0 0\n2 5\n");
}

static void test_follower_appends_keep_batch_epochs(void **state)
{
    struct fixture *f = *state;
    open_log(f, false);
    append_three_epochs(f, true);
    expect_checkpoint(f, THREE_EPOCHS);
    /* A batch without an epoch adds nothing. */
    append(f, 1, -1, true);
    expect_checkpoint(f, THREE_EPOCHS);
    /* An older epoch after newer ones (a leader's log that diverged):
     * Kafka's assign drops the entries it contradicts. */
    append(f, 1, 2, true);
    expect_checkpoint(f, "0\n2\n1 0\n2 21\n");
}

static void test_truncation_trims(void **state)
{
    struct fixture *f = *state;
    f->cfg.segment_bytes = 1024; /* several segments */
    open_log(f, false);
    append_three_epochs(f, false);
    assert_true(partition_log_segment_count(f->log) > 1);

    /* Cutting into epoch 4's batch keeps the entry only if a batch of it
     * survives: offset 15 is epoch 4's first batch, so it goes. */
    assert_int_equal(partition_log_truncate_to(f->log, 17), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(f->log), 15);
    expect_checkpoint(f, "0\n2\n1 0\n3 10\n");
    expect_end(f, 3, 3, 15);
    expect_end(f, 4, -1, -1);
    /* Epoch 4 again, from the new end. */
    append(f, 5, 4, false);
    expect_checkpoint(f, "0\n3\n1 0\n3 10\n4 15\n");

    /* The log start moves into epoch 1, then past it. */
    assert_int_equal(partition_log_delete_records_before(f->log, 7), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n3\n1 7\n3 10\n4 15\n");
    assert_int_equal(partition_log_delete_records_before(f->log, 12), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n2\n3 12\n4 15\n");
    /* Below the earliest epoch: its start offset. */
    expect_end(f, 1, 1, 12);

    /* Retention deleting whole segments moves the start too. */
    f->cfg.retention_bytes = 0;
    partition_log_set_config(f->log, &f->cfg);
    assert_true(partition_log_apply_retention(f->log, 0) > 0);
    int64_t start = partition_log_start_offset(f->log);
    assert_true(start > 12);
    struct leader_epoch_entry *entries;
    size_t n;
    assert_int_equal(partition_log_epoch_entries(f->log, &entries, &n), 0);
    assert_true(n >= 1);
    assert_int_equal(entries[0].start_offset, start);
    assert_int_equal(entries[n - 1].epoch, 4);
    free(entries);
    open_log(f, false);
    assert_int_equal(partition_log_latest_epoch(f->log), 4);

    /* Truncating everything empties it. */
    assert_int_equal(partition_log_truncate_to(f->log, 0), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n0\n");
    assert_int_equal(partition_log_latest_epoch(f->log), -1);
}

/* A replica that led an epoch without writing in it, then follows a
 * leader that never had that epoch: the fetcher's truncation at its log
 * end drops the entry (Kafka's truncateTo), so its next fetch names the
 * last epoch it holds records of. Kept, every fetch got the same
 * divergence back and the follower never moved. */
static void test_truncation_at_end_drops_an_epoch_without_records(void **state)
{
    struct fixture *f = *state;
    open_log(f, false);
    append(f, 5, 0, false);
    assert_int_equal(partition_log_assign_leader_epoch(f->log, 1), KAFKA_ERR_NONE);
    expect_checkpoint(f, "0\n2\n0 0\n1 5\n");
    assert_int_equal(partition_log_latest_epoch(f->log), 1);
    assert_int_equal(partition_log_truncate_to(f->log, 5), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(f->log), 5);
    expect_checkpoint(f, "0\n1\n0 0\n");
    assert_int_equal(partition_log_latest_epoch(f->log), 0);
    /* Past the end, an epoch with records stays, and nothing is cut. */
    assert_int_equal(partition_log_truncate_to(f->log, 9), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(f->log), 5);
    expect_checkpoint(f, "0\n1\n0 0\n");
    open_log(f, false);
    assert_int_equal(partition_log_latest_epoch(f->log), 0);
}

static void test_missing_or_malformed_file_rebuilt(void **state)
{
    struct fixture *f = *state;
    f->cfg.segment_bytes = 1024;
    open_log(f, false);
    append_three_epochs(f, false);
    partition_log_close(f->log);
    f->log = NULL;

    static const char *const damaged[] = {NULL, "", "0\n3\n1 0\n3 10\n", "1\n0\n", "garbage"};
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        if (damaged[i])
            write_checkpoint(f, damaged[i]);
        else
            unlink(f->path);
        /* A clean open: only the damaged file makes it read the batches. */
        open_log(f, false);
        expect_checkpoint(f, THREE_EPOCHS);
        expect_end(f, 3, 3, 15);
        partition_log_close(f->log);
        f->log = NULL;
    }
    /* A file missing on an empty log stays missing: nothing to rebuild. */
    char *empty = test_make_dir();
    assert_non_null(empty);
    struct partition_log *log;
    char err[256];
    assert_int_equal(partition_log_open(empty, &f->cfg, false, &log, err, sizeof err), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", empty, LEADER_EPOCH_CHECKPOINT_FILE);
    assert_int_equal(access(path, F_OK), -1);
    partition_log_close(log);
    test_remove_tree(empty);
    free(empty);
}

static void test_unclean_open_fixes_stale_file(void **state)
{
    struct fixture *f = *state;
    open_log(f, false);
    append_three_epochs(f, false);
    partition_log_close(f->log);
    f->log = NULL;

    /* The file names an epoch whose batches the crash lost, and lacks
     * epoch 4 (as a file written before that epoch began would): recovery
     * drops the first and rescans the batches for the second. */
    write_checkpoint(f, "0\n3\n1 0\n3 10\n7 40\n");
    open_log(f, true);
    expect_checkpoint(f, THREE_EPOCHS);
    expect_end(f, 4, 4, 20);
    expect_end(f, 7, -1, -1);

    /* A clean open trusts the file, except for entries past the log end. */
    partition_log_close(f->log);
    f->log = NULL;
    write_checkpoint(f, "0\n3\n1 0\n3 10\n7 40\n");
    open_log(f, false);
    expect_checkpoint(f, "0\n2\n1 0\n3 10\n");
}

/* Recovery from a checkpoint in the middle of the log: the segments from
 * there were rescanned by the open (their epochs come from that scan), the
 * ones before it are read only when the file has to be rebuilt. */
static void test_partial_recovery(void **state)
{
    struct fixture *f = *state;
    f->cfg.segment_bytes = 1024; /* one batch per segment: bases 0, 5, 10, 15 */
    open_log(f, false);
    append_three_epochs(f, false);
    assert_int_equal(partition_log_segment_count(f->log), 4);
    partition_log_close(f->log);
    f->log = NULL;

    char err[256];
    static const char *const files[] = {"0\n1\n1 0\n", NULL, "0\n2\n1 0\n3 10\n", "bad"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (files[i])
            write_checkpoint(f, files[i]);
        else
            unlink(f->path);
        if (partition_log_open_from(f->dir, &f->cfg, 10, &f->log, err, sizeof err) != 0)
            fail_msg("open failed: %s", err);
        struct partition_log_recovery_stats st;
        partition_log_recovery_stats(f->log, &st);
        assert_true(st.scanned_bytes > 0);
        expect_checkpoint(f, THREE_EPOCHS);
        expect_end(f, 1, 1, 10);
        expect_end(f, 4, 4, 20);
        partition_log_close(f->log);
        f->log = NULL;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_appends_start_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leader_epoch_starts_at_log_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follower_appends_keep_batch_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_trims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncation_at_end_drops_an_epoch_without_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_or_malformed_file_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclean_open_fixes_stale_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_recovery, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
