/* The cleaner on a tiered compacted log (remote.storage.enable with
 * cleanup.policy=compact): nothing is cleaned before the remote log
 * manager has published its offsets; a segment is claimable for a copy
 * only once cleaned; a claimed segment is never rewritten again, however
 * dirty the log gets; tombstones stay whatever delete.retention.ms says;
 * each segment keeps a batch at its last offset; a pass during which the
 * copier claims one of its segments swaps nothing in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>

#include "log/log_throttler.h"

#include "cleaner_test_util.h"

static void tiered_compact_config(struct log_config *cfg)
{
    compact_config(cfg);
    cfg->remote_storage_enable = true;
    cfg->delete_retention_ms = 0; /* untiered, tombstones would go on the second clean */
}

/* The bytes of <base>.log (caller frees), its size in *len. */
static uint8_t *segment_bytes(int64_t base, size_t *len)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%020lld.log", g_dir, (long long)base);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size >= 0);
    rewind(f);
    uint8_t *buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

/* Each closed segment holds a batch ending at its last offset. */
static void check_segment_ends(struct partition_log *log)
{
    struct log_segment_info *segs = NULL;
    size_t n = 0;
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    for (size_t i = 0; i < n; i++) {
        int64_t last = segs[i].next_offset - 1;
        struct log_read_result r;
        assert_int_equal(partition_log_read(log, last, 1, INT64_MAX, &r), KAFKA_ERR_NONE);
        assert_true(r.len > 0);
        uint8_t *buf = test_read_region(&r);
        assert_non_null(buf);
        struct record_batch_header h;
        assert_int_equal(record_batch_parse_header(buf, (size_t)r.len, &h), 0);
        assert_true(h.base_offset <= last);
        assert_int_equal(record_batch_last_offset(&h), last);
        free(buf);
    }
    free(segs);
}

static void test_claimed_segments_stay_as_copied(void **state)
{
    (void)state;
    struct log_config cfg;
    tiered_compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    struct log_clean_result res;

    /* The copied end is not known yet (as after a start): no pass. */
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_false(res.cleaned);
    partition_log_set_remote_offsets(log, -1, -1);

    /* Not cleaned yet: not claimable. */
    struct log_segment_info *segs = NULL;
    size_t n = 0;
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    assert_true(n > 2);
    struct log_segment_info first = segs[0];
    free(segs);
    assert_int_equal(partition_log_claim_for_copy(log, &first), EAGAIN);
    assert_int_equal(partition_log_tier_floor(log), -1);

    struct log_clean_options force = default_opts;
    force.force = true;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &force, &res), 0);
    assert_true(res.cleaned);
    int64_t first_dirty = res.first_dirty_offset;
    check_segment_ends(log);

    /* Cleaned: claimable; the claim refreshes what the listing said. */
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    struct log_segment_info claimed = segs[0];
    free(segs);
    claimed.size = -1;
    assert_int_equal(partition_log_claim_for_copy(log, &claimed), 0);
    assert_true(claimed.size > 0);
    assert_true(claimed.next_offset <= first_dirty);
    assert_int_equal(partition_log_tier_floor(log), claimed.next_offset);
    size_t before_len = 0;
    uint8_t *before = segment_bytes(claimed.base_offset, &before_len);

    /* Newer values of every key and a tombstone, then more passes: the
     * claimed segment keeps its bytes and its offsets. */
    write_overwrites(log);
    put(log, "k0", NULL);
    for (int i = 0; i < 60; i++) /* past the tombstone's segment */
        put(log, i % 2 ? "k1" : "k2", "filler");
    assert_int_equal(partition_log_clean(log, first_dirty, clock_wall_ms(), &force, &res), 0);
    assert_true(res.cleaned);
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms() + 1000, &force, &res), 0);
    size_t after_len = 0;
    uint8_t *after = segment_bytes(claimed.base_offset, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    assert_int_equal(segs[0].base_offset, claimed.base_offset);
    assert_int_equal(segs[0].next_offset, claimed.next_offset);
    free(segs);
    check_segment_ends(log);

    /* The tombstone stays although delete.retention.ms is 0: older values
     * of k0 may be in remote segments. */
    struct rec *recs = calloc(4 * WRITES, sizeof *recs);
    assert_non_null(recs);
    size_t count = read_all(log, recs, 4 * WRITES);
    size_t tombstones = 0;
    for (size_t i = 0; i < count; i++)
        tombstones += strcmp(recs[i].key, "k0") == 0 && recs[i].tombstone;
    assert_int_equal(tombstones, 1);
    free(recs);
    partition_log_close(log);
}

static void test_checkpoint_below_floor_starts_at_floor(void **state)
{
    (void)state;
    struct log_config cfg;
    tiered_compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    int64_t end = write_overwrites(log);
    /* Copied up to the middle of the log (as a restart finds it when the
     * cleaner's checkpoint file is older than the copies). */
    struct log_segment_info *segs = NULL;
    size_t n = 0;
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    assert_true(n > 2);
    int64_t copied_end = segs[1].next_offset;
    free(segs);
    partition_log_set_remote_offsets(log, 0, copied_end);
    struct log_clean_dirtiness d;
    partition_log_dirtiness(log, -1, clock_wall_ms(), &d);
    assert_int_equal(d.first_dirty_offset, copied_end);
    assert_int_equal(d.first_cleanable_segment, 2);

    struct log_clean_options force = default_opts;
    force.force = true;
    struct log_clean_result res;
    size_t len0 = 0;
    uint8_t *seg0 = segment_bytes(0, &len0);
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &force, &res), 0);
    assert_true(res.cleaned);
    size_t len_after = 0;
    uint8_t *seg0_after = segment_bytes(0, &len_after);
    assert_int_equal(len_after, len0); /* below the floor: untouched */
    assert_memory_equal(seg0_after, seg0, len0);
    free(seg0);
    free(seg0_after);
    assert_int_equal(partition_log_end_offset(log), end);
    check_segment_ends(log);
    partition_log_close(log);
}

struct pass_run {
    struct partition_log *log;
    int64_t first_dirty;
    struct log_clean_options opt;
    struct log_clean_result res;
    int rc;
};

static void *pass_main(void *arg)
{
    struct pass_run *run = arg;
    run->rc = partition_log_clean(run->log, run->first_dirty, clock_wall_ms(), &run->opt, &run->res);
    return NULL;
}

static void test_claim_during_a_pass_keeps_the_segment(void **state)
{
    (void)state;
    struct log_config cfg;
    tiered_compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    partition_log_set_remote_offsets(log, -1, -1);
    struct log_clean_options force = default_opts;
    force.force = true;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &force, &res), 0);
    assert_true(res.cleaned);
    write_overwrites(log); /* the next pass rewrites segment 0 again */

    /* A slow pass (its reads throttled to a few KB/s: seconds between its
     * first output file and its swap), and a claim of segment 0 meanwhile. */
    struct log_throttler throttler;
    log_throttler_init(&throttler, 4000);
    struct pass_run run = {.log = log, .first_dirty = res.first_dirty_offset, .opt = force};
    run.opt.throttler = &throttler;
    pthread_t pass;
    assert_int_equal(pthread_create(&pass, NULL, pass_main, &run), 0);
    int64_t deadline = clock_mono_ms() + 30000;
    while (count_files(".log.cleaned") == 0 && clock_mono_ms() < deadline)
        usleep(1000);
    assert_true(count_files(".log.cleaned") > 0);
    struct log_segment_info *segs = NULL;
    size_t n = 0;
    assert_int_equal(partition_log_closed_segments(log, &segs, &n), 0);
    struct log_segment_info claimed = segs[0];
    free(segs);
    assert_int_equal(partition_log_claim_for_copy(log, &claimed), 0);
    size_t before_len = 0;
    uint8_t *before = segment_bytes(claimed.base_offset, &before_len);
    assert_int_equal(pthread_join(pass, NULL), 0);
    log_throttler_destroy(&throttler);

    /* The swap found segment 0 claimed: nothing swapped, nothing left over. */
    assert_int_equal(run.rc, 0);
    assert_false(run.res.cleaned);
    assert_int_equal(count_files(".log.cleaned"), 0);
    size_t after_len = 0;
    uint8_t *after = segment_bytes(claimed.base_offset, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);

    /* The next pass starts above the claim and succeeds. */
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms(), &force, &res), 0);
    assert_true(res.cleaned);
    after = segment_bytes(claimed.base_offset, &after_len);
    assert_int_equal(after_len, before_len);
    free(after);
    check_segment_ends(log);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claimed_segments_stay_as_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_below_floor_starts_at_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_during_a_pass_keeps_the_segment, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
