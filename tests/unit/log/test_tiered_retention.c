/* The log's side of tiered storage: with remote.storage.enable, retention
 * follows local.retention.* and deletes a local segment only once the
 * remote log manager confirmed its copy; the log start offset counts the
 * remote segments while the local one (earliest-local) does not; closed
 * segments are listed for copying. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log_test_util.h"

/* Appends n batches of 10 records each, ~1 KB, in segments of ~2 KB. */
static void fill(struct partition_log *log, int n)
{
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *batch = test_batch(10, 1000 + i, 80, &len);
        assert_non_null(batch);
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, batch, len, 0, &res), 0);
        free(batch);
    }
}

static void open_tiered(struct log_fixture *f, int64_t local_ms, int64_t local_bytes)
{
    f->cfg.segment_bytes = 2048;
    f->cfg.remote_storage_enable = true;
    f->cfg.retention_ms = -1;
    f->cfg.local_retention_ms = local_ms;
    f->cfg.local_retention_bytes = local_bytes;
    char err[256] = "";
    if (partition_log_open(f->dir, &f->cfg, false, &f->log, err, sizeof err) != 0)
        fail_msg("open: %s", err);
}

static void test_local_retention_waits_for_copies(void **state)
{
    struct log_fixture *f = *state;
    open_tiered(f, -2, 1); /* keep nothing locally once copied */
    fill(f->log, 12);
    struct log_segment_info *segs;
    size_t n;
    assert_int_equal(partition_log_closed_segments(f->log, &segs, &n), 0);
    assert_true(n >= 4);
    assert_int_equal(segs[0].base_offset, 0);
    for (size_t i = 1; i < n; i++)
        assert_int_equal(segs[i].base_offset, segs[i - 1].next_offset);
    assert_false(segs[0].has_txn_index);
    int before = partition_log_segment_count(f->log);

    /* Nothing copied: nothing goes, whatever local.retention.bytes says. */
    assert_int_equal(partition_log_apply_retention(f->log, 5000), 0);
    assert_int_equal(partition_log_segment_count(f->log), before);
    assert_int_equal(partition_log_remote_copied_end(f->log), -1);

    /* The first two copied: exactly those two go. */
    partition_log_set_remote_offsets(f->log, 0, segs[1].next_offset);
    assert_int_equal(partition_log_apply_retention(f->log, 5000), 2);
    assert_int_equal(partition_log_local_start_offset(f->log), segs[2].base_offset);
    assert_int_equal(partition_log_start_offset(f->log), 0); /* earliest counts remote data */
    struct log_read_result rr;
    assert_int_equal(partition_log_read(f->log, 0, 1 << 20, INT64_MAX, &rr), 1 /* OFFSET_OUT_OF_RANGE */);

    /* DeleteRecords into the remote part moves the whole log's start only;
     * a restored start below the local one (a checkpoint written before the
     * remote start was known) never sets it. */
    partition_log_restore_start_offset(f->log, 7);
    assert_int_equal(partition_log_remote_floor(f->log), -1);
    assert_int_equal(partition_log_delete_records_before(f->log, 5), 0);
    assert_int_equal(partition_log_start_offset(f->log), 5);
    assert_int_equal(partition_log_remote_floor(f->log), 5);
    assert_int_equal(partition_log_local_start_offset(f->log), segs[2].base_offset);
    assert_int_equal(partition_log_delete_records_before(f->log, 3), 0);
    assert_int_equal(partition_log_start_offset(f->log), 5);

    /* A copy recorded up to the middle of a segment does not free it. */
    partition_log_set_remote_offsets(f->log, 0, segs[2].next_offset - 1);
    assert_int_equal(partition_log_apply_retention(f->log, 5000), 0);

    /* Without tiering the same log falls back to retention.*: kept forever. */
    struct log_config plain = f->cfg;
    plain.remote_storage_enable = false;
    partition_log_set_config(f->log, &plain);
    partition_log_set_remote_offsets(f->log, -1, -1);
    assert_int_equal(partition_log_apply_retention(f->log, 5000), 0);
    assert_int_equal(partition_log_start_offset(f->log), segs[2].base_offset); /* the floor is below it */
    free(segs);
}

static void test_local_retention_ms_and_minus_two(void **state)
{
    struct log_fixture *f = *state;
    /* local.retention.ms 10: segments older than 10 ms past their max
     * timestamp go once copied, while retention.ms (-1) keeps all. */
    open_tiered(f, 10, -2);
    fill(f->log, 8);
    int before = partition_log_segment_count(f->log);
    partition_log_set_remote_offsets(f->log, 0, partition_log_end_offset(f->log));
    assert_int_equal(partition_log_apply_retention(f->log, 1000), 0); /* not old enough yet */
    assert_int_equal(partition_log_apply_retention(f->log, 100000), before - 1);
    /* -2 falls back to retention.ms, which is -1 here: nothing more to drop. */
    struct log_config cfg = f->cfg;
    cfg.local_retention_ms = -2;
    partition_log_set_config(f->log, &cfg);
    fill(f->log, 8);
    partition_log_set_remote_offsets(f->log, 0, partition_log_end_offset(f->log));
    assert_int_equal(partition_log_apply_retention(f->log, 100000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_FIXTURE_TEST(test_local_retention_waits_for_copies),
        LOG_FIXTURE_TEST(test_local_retention_ms_and_minus_two),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
