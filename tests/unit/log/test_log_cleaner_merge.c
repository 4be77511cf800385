/* Log cleaner merging small segments: consecutive cleanable segments are
 * grouped within segment.bytes and segment.index.bytes and each group is
 * rewritten into one segment; a crash at any step of the swap reopens to
 * the same records; the aborted-transaction entries of merged members
 * move to the merged segment's .txnindex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cleaner_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

#define UNIQUES 300
#define MAX_UNIQUES (UNIQUES + 64)
#define MAX_SEGMENTS 512
#define MAX_RECORDS 1024

/* Segment files on disk, ascending: base, .log size, .index size. */
struct seg_list {
    int64_t base[MAX_SEGMENTS];
    int64_t size[MAX_SEGMENTS];
    int64_t index_size[MAX_SEGMENTS];
    size_t n;
};

static void file_size_of(int64_t base, const char *ext, int64_t *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%020lld%s", g_dir, (long long)base, ext);
    *out = test_file_size(path);
}

static void list_segments(struct seg_list *l)
{
    l->n = 0;
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (strlen(ent->d_name) == 24 && strcmp(ent->d_name + 20, ".log") == 0) {
            assert_true(l->n < MAX_SEGMENTS);
            l->base[l->n++] = atoll(ent->d_name);
        }
    closedir(d);
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = i + 1; j < l->n; j++)
            if (l->base[j] < l->base[i]) {
                int64_t t = l->base[i];
                l->base[i] = l->base[j];
                l->base[j] = t;
            }
    for (size_t i = 0; i < l->n; i++) {
        file_size_of(l->base[i], ".log", &l->size[i]);
        file_size_of(l->base[i], ".index", &l->index_size[i]);
    }
}

/* Each segment of after (but the active one) replaced the old segments
 * whose bases lie in its range: several only while their sizes and index
 * sizes together stay within the bounds. Returns the most members any
 * merged segment has. */
static size_t check_groups(const struct seg_list *before, const struct seg_list *after, int64_t segment_bytes,
                           int64_t index_bytes)
{
    size_t most = 0;
    for (size_t i = 0; i + 1 < after->n; i++) {
        size_t members = 0;
        int64_t bytes = 0, idx = 0;
        bool has_own_base = false;
        for (size_t j = 0; j < before->n; j++)
            if (before->base[j] >= after->base[i] && before->base[j] < after->base[i + 1]) {
                members++;
                bytes += before->size[j];
                idx += before->index_size[j];
                has_own_base = has_own_base || before->base[j] == after->base[i];
            }
        assert_true(has_own_base); /* named after its group's first base */
        if (members > 1) {
            assert_true(bytes <= segment_bytes);
            assert_true(idx <= index_bytes);
            assert_true(after->size[i] <= segment_bytes);
        }
        if (members > most)
            most = members;
    }
    return most;
}

/* ---- writes: unique keys that survive, overwritten ones that do not ---- */

struct written {
    int64_t offset[MAX_UNIQUES];
    int n;
};

/* count unique records u<n> (value x<n>), every third one followed by an
 * overwrite of one of four keys k<i>. */
static void write_uniques(struct partition_log *log, struct written *w, int count)
{
    char key[16], value[16];
    for (int i = 0; i < count; i++) {
        assert_true(w->n < MAX_UNIQUES);
        snprintf(key, sizeof key, "u%d", w->n);
        snprintf(value, sizeof value, "x%d", w->n);
        w->offset[w->n++] = put(log, key, value);
        if (i % 3 == 0) {
            snprintf(key, sizeof key, "k%d", i % 4);
            snprintf(value, sizeof value, "y%d", w->n);
            put(log, key, value);
        }
    }
}

/* Offsets only grow (no duplicate), and every unique record reads back
 * once, at its offset, with its value. */
static void check_uniques(struct partition_log *log, const struct written *w)
{
    struct rec *recs = calloc(MAX_RECORDS, sizeof *recs);
    assert_non_null(recs);
    size_t n = read_all(log, recs, MAX_RECORDS);
    for (size_t i = 1; i < n; i++)
        assert_true(recs[i].offset > recs[i - 1].offset);
    for (int u = 0; u < w->n; u++) {
        char key[16], value[16];
        snprintf(key, sizeof key, "u%d", u);
        snprintf(value, sizeof value, "x%d", u);
        size_t hits = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(recs[i].key, key) == 0) {
                hits++;
                assert_int_equal(recs[i].offset, w->offset[u]);
                assert_string_equal(recs[i].value, value);
            }
        assert_int_equal(hits, 1);
    }
    free(recs);
}

static size_t count_all_records(struct partition_log *log)
{
    struct rec *recs = calloc(MAX_RECORDS, sizeof *recs);
    assert_non_null(recs);
    size_t n = read_all(log, recs, MAX_RECORDS);
    free(recs);
    return n;
}

static struct partition_log *reopen(struct partition_log *log, const struct log_config *cfg)
{
    partition_log_close(log);
    return open_log(cfg);
}

static void clean(struct partition_log *log, enum log_clean_stop stop)
{
    struct log_clean_options opt = default_opts;
    opt.force = true;
    opt.stop_after = stop;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    assert_true(res.cleaned);
}

/* ---- grouping ---- */

static void test_small_segments_merge(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_uniques(log, &w, UNIQUES);
    int64_t start = partition_log_start_offset(log), end = partition_log_end_offset(log);
    struct seg_list before, after;
    list_segments(&before);
    assert_true(before.n > 12);

    cfg.segment_bytes = 4096;
    log = reopen(log, &cfg);
    clean(log, LOG_CLEAN_STOP_NONE);
    list_segments(&after);
    /* About four 1 KiB segments to a group. */
    assert_true(after.n * 2 < before.n);
    assert_int_equal(partition_log_segment_count(log), (int)after.n);
    assert_true(check_groups(&before, &after, cfg.segment_bytes, cfg.segment_index_bytes) >= 3);
    assert_int_equal(partition_log_start_offset(log), start);
    assert_int_equal(partition_log_end_offset(log), end);
    check_uniques(log, &w);

    log = reopen(log, &cfg);
    assert_int_equal(partition_log_segment_count(log), (int)after.n);
    assert_int_equal(partition_log_start_offset(log), start);
    assert_int_equal(partition_log_end_offset(log), end);
    check_uniques(log, &w);
    /* Appends go on after the merged segments. */
    write_uniques(log, &w, 10);
    check_uniques(log, &w);
    partition_log_close(log);
}

static void test_big_segment_stays_alone(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_uniques(log, &w, 60);
    /* One segment of about 8 KiB between small ones. */
    cfg.segment_bytes = 8192;
    log = reopen(log, &cfg);
    int64_t big_base = active_base(log);
    write_uniques(log, &w, 120);
    cfg.segment_bytes = 1024;
    log = reopen(log, &cfg);
    write_uniques(log, &w, 60);
    struct seg_list before, after;
    list_segments(&before);
    int64_t big_size = -1;
    for (size_t i = 0; i < before.n; i++)
        if (before.base[i] == big_base)
            big_size = before.size[i];
    assert_true(big_size > 4096);

    cfg.segment_bytes = 4096;
    log = reopen(log, &cfg);
    clean(log, LOG_CLEAN_STOP_NONE);
    list_segments(&after);
    assert_true(after.n < before.n);
    assert_true(check_groups(&before, &after, cfg.segment_bytes, cfg.segment_index_bytes) >= 2);
    /* The big one is still its own segment: neither it nor its neighbours
     * were folded together. */
    size_t at = SIZE_MAX;
    for (size_t i = 0; i < after.n; i++)
        if (after.base[i] == big_base)
            at = i;
    assert_true(at != SIZE_MAX && at + 1 < after.n);
    for (size_t j = 0; j + 1 < before.n; j++)
        if (before.base[j] == big_base)
            assert_int_equal(after.base[at + 1], before.base[j + 1]);
    check_uniques(log, &w);
    partition_log_close(log);
}

static void test_index_bound(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    cfg.index_interval_bytes = 1; /* an index entry per batch */
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_uniques(log, &w, UNIQUES);
    struct seg_list before, after;
    list_segments(&before);
    int64_t largest = 0;
    for (size_t i = 0; i + 1 < before.n; i++)
        if (before.index_size[i] > largest)
            largest = before.index_size[i];
    assert_true(largest > 0);

    /* segment.bytes would allow eight members; the index allows two. */
    cfg.segment_bytes = 8192;
    cfg.segment_index_bytes = largest * 2 + largest / 2;
    log = reopen(log, &cfg);
    clean(log, LOG_CLEAN_STOP_NONE);
    list_segments(&after);
    size_t most = check_groups(&before, &after, cfg.segment_bytes, cfg.segment_index_bytes);
    assert_true(most >= 2 && most <= 3);
    assert_true(after.n < before.n);
    check_uniques(log, &w);
    partition_log_close(log);
}

/* ---- crash points ---- */

/* Small segments cleaned with room for four to a group, stopped at stop,
 * then reopened as after a crash. */
static void crash_at(enum log_clean_stop stop)
{
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_uniques(log, &w, UNIQUES);
    int64_t start = partition_log_start_offset(log), end = partition_log_end_offset(log);
    size_t records = count_all_records(log);
    struct seg_list before, after;
    list_segments(&before);

    cfg.segment_bytes = 4096;
    log = reopen(log, &cfg);
    clean(log, stop);
    size_t swaps = count_files(".log.swap");
    if (stop == LOG_CLEAN_STOP_AFTER_CLEANED) {
        assert_true(count_files(".log.cleaned") > 0);
        assert_int_equal(swaps, 0);
    } else {
        assert_int_equal(count_files(".log.cleaned"), 0);
        assert_true(swaps > 0);
    }
    if (stop == LOG_CLEAN_STOP_AFTER_MEMBERS) {
        /* Only the groups' first segments are left beside the swaps. */
        list_segments(&after);
        assert_true(after.n * 2 < before.n);
    }
    /* The in-memory log still reads the old files. */
    assert_int_equal(count_all_records(log), records);
    check_uniques(log, &w);

    log = reopen(log, &cfg);
    assert_int_equal(count_files(".log.cleaned") + count_files(".log.swap"), 0);
    list_segments(&after);
    assert_int_equal(partition_log_segment_count(log), (int)after.n);
    assert_int_equal(partition_log_start_offset(log), start);
    assert_int_equal(partition_log_end_offset(log), end);
    check_uniques(log, &w);
    if (stop == LOG_CLEAN_STOP_AFTER_CLEANED) {
        assert_int_equal(after.n, before.n);
        assert_int_equal(count_all_records(log), records);
    } else {
        assert_true(after.n * 2 < before.n);
        assert_true(count_all_records(log) < records);
        check_groups(&before, &after, cfg.segment_bytes, cfg.segment_index_bytes);
    }
    /* A later pass over the recovered log finds nothing inconsistent. */
    clean(log, LOG_CLEAN_STOP_NONE);
    check_uniques(log, &w);
    assert_int_equal(partition_log_end_offset(log), end);
    partition_log_close(log);
}

static void test_crash_after_cleaned(void **state)
{
    (void)state;
    crash_at(LOG_CLEAN_STOP_AFTER_CLEANED);
}

static void test_crash_after_swap(void **state)
{
    (void)state;
    crash_at(LOG_CLEAN_STOP_AFTER_SWAP);
}

static void test_crash_after_members(void **state)
{
    (void)state;
    crash_at(LOG_CLEAN_STOP_AFTER_MEMBERS);
}

/* The last cleanable segment holds only tombstones, which a second pass
 * past delete.retention.ms drops: cleaned to nothing, it leaves the group. */
static void emptied_tail(enum log_clean_stop stop)
{
    struct log_config cfg;
    compact_config(&cfg);
    cfg.delete_retention_ms = 0;
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_uniques(log, &w, 40);
    char key[16];
    int tombstones = 0;
    int64_t b0 = active_base(log);
    while (active_base(log) == b0) {
        snprintf(key, sizeof key, "t%d", tombstones++);
        put(log, key, NULL);
    }
    int64_t b1 = active_base(log);
    while (active_base(log) == b1) {
        snprintf(key, sizeof key, "t%d", tombstones++);
        put(log, key, NULL);
    }
    int64_t end = partition_log_end_offset(log);
    /* The first pass keeps the tombstones and starts their clock. */
    struct log_clean_options opt = default_opts;
    opt.force = true;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    assert_true(res.cleaned);

    cfg.segment_bytes = 1 << 20;
    log = reopen(log, &cfg);
    opt.stop_after = stop;
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms() + 1000, &opt, &res), 0);
    assert_true(res.cleaned);
    if (stop == LOG_CLEAN_STOP_AFTER_SWAP)
        assert_int_equal(count_files(".log.swap"), 2); /* the merged and the emptied */
    log = reopen(log, &cfg);
    assert_int_equal(count_files(".log.swap"), 0);
    assert_int_equal(partition_log_end_offset(log), end);
    check_uniques(log, &w);
    struct rec *recs = calloc(MAX_RECORDS, sizeof *recs);
    assert_non_null(recs);
    size_t n = read_all(log, recs, MAX_RECORDS);
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += recs[i].tombstone;
    assert_int_equal(left, 1); /* the active segment's */
    free(recs);
    /* The segment cleaned to nothing is gone, or left empty by the crash. */
    assert_int_equal(partition_log_segment_count(log), stop == LOG_CLEAN_STOP_NONE ? 2 : 3);
    partition_log_close(log);
}

static void test_emptied_tail(void **state)
{
    (void)state;
    emptied_tail(LOG_CLEAN_STOP_NONE);
}

static void test_emptied_tail_crash(void **state)
{
    (void)state;
    emptied_tail(LOG_CLEAN_STOP_AFTER_SWAP);
}

/* ---- transactions across merged members ---- */

/* Two aborted and two committed transactions whose batches and markers lie
 * in different small segments. */
static void write_transactions(struct partition_log *log, struct written *w)
{
    write_uniques(log, w, 20);
    put_txn(log, 9, 0, "a9", "bad");
    write_uniques(log, w, 20);
    marker(log, 9, false);
    write_uniques(log, w, 20);
    put_txn(log, 10, 0, "c10", "good");
    write_uniques(log, w, 20);
    marker(log, 10, true);
    write_uniques(log, w, 20);
    put_txn(log, 11, 0, "a11", "bad");
    write_uniques(log, w, 20);
    marker(log, 11, false);
    put_txn(log, 9, 1, "c9", "good");
    marker(log, 9, true);
    write_uniques(log, w, 40);
}

static void check_committed_view(struct partition_log *log, const struct written *w)
{
    assert_int_equal(partition_log_aborted_txns(log, partition_log_start_offset(log), INT64_MAX, NULL, NULL), 2);
    assert_int_equal(txnindex_file_entries(), 2);
    struct rec *recs = calloc(MAX_RECORDS, sizeof *recs);
    assert_non_null(recs);
    size_t n = read_committed(log, recs, MAX_RECORDS);
    assert_int_equal(count_key(recs, n, "a9", NULL) + count_key(recs, n, "a11", NULL), 0);
    assert_int_equal(count_key(recs, n, "c9", "good"), 1);
    assert_int_equal(count_key(recs, n, "c10", "good"), 1);
    for (int u = 0; u < w->n; u++) {
        char key[16];
        snprintf(key, sizeof key, "u%d", u);
        assert_int_equal(count_key(recs, n, key, NULL), 1);
    }
    free(recs);
}

static void merge_transactions(enum log_clean_stop stop)
{
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct written w = {0};
    write_transactions(log, &w);
    assert_int_equal(count_files(".txnindex"), 2);
    check_committed_view(log, &w);

    /* Everything below the active segment fits one group. */
    cfg.segment_bytes = 1 << 20;
    log = reopen(log, &cfg);
    clean(log, stop);
    if (stop == LOG_CLEAN_STOP_NONE) {
        assert_int_equal(partition_log_segment_count(log), 2);
        assert_int_equal(count_files(".txnindex"), 1);
        check_committed_view(log, &w);
    }
    log = reopen(log, &cfg);
    assert_int_equal(partition_log_segment_count(log), 2);
    assert_int_equal(count_files(".txnindex"), 1);
    check_committed_view(log, &w);
    check_uniques(log, &w);
    partition_log_close(log);
}

static void test_txn_entries_follow_merge(void **state)
{
    (void)state;
    merge_transactions(LOG_CLEAN_STOP_NONE);
}

static void test_txn_entries_after_crash(void **state)
{
    (void)state;
    merge_transactions(LOG_CLEAN_STOP_AFTER_SWAP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_segments_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_segment_stays_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_cleaned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emptied_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emptied_tail_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_entries_follow_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_entries_after_crash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
