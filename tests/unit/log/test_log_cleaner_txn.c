/* Log cleaner and transactions: batches of aborted transactions go, ABORT
 * and COMMIT markers go once their data is gone and delete.retention.ms has
 * passed, the aborted list and .txnindex files follow the markers (across a
 * reopen too), and a producer's last batch stays even when aborted. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "cleaner_test_util.h"
#include "log/producer_state.h"
#include "log/txn_index.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

#define RETENTION_MS 60000
#define MAX_BATCHES 512

/* Header of every batch in the log, in order. */
struct batch_list {
    struct record_batch_header h[MAX_BATCHES];
    bool abort_marker[MAX_BATCHES]; /* control batches: ABORT (else COMMIT) */
    size_t n;
};

static void collect_header(void *arg, const uint8_t *batch, size_t len)
{
    struct batch_list *l = arg;
    assert_true(l->n < MAX_BATCHES);
    record_batch_parse_header(batch, len, &l->h[l->n]);
    if (record_batch_is_control(&l->h[l->n])) {
        struct record_batch_record_iter it;
        struct record_batch_record rec;
        assert_int_equal(record_batch_records_begin(&it, batch, len), 0);
        assert_int_equal(record_batch_records_next(&it, &rec), 1);
        assert_true(rec.key_len >= 4);
        l->abort_marker[l->n] = rec.key[3] == 0;
    }
    l->n++;
}

static void list_batches(struct partition_log *log, struct batch_list *l)
{
    l->n = 0;
    for_each_batch(log, collect_header, l);
}

/* The batch starting at base_offset, or NULL. */
static const struct record_batch_header *batch_at(const struct batch_list *l, int64_t base_offset)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->h[i].base_offset == base_offset)
            return &l->h[i];
    return NULL;
}

static size_t count_markers(const struct batch_list *l, bool abort)
{
    size_t c = 0;
    for (size_t i = 0; i < l->n; i++)
        c += record_batch_is_control(&l->h[i]) && l->abort_marker[i] == abort;
    return c;
}

static void fill(struct partition_log *log, int count)
{
    char key[8];
    for (int i = 0; i < count; i++) {
        snprintf(key, sizeof key, "f%d", i % 3);
        put(log, key, "filler");
    }
}

static void test_aborted_records_go(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    put(log, "k1", "good");
    /* Producer 9 aborts k1/k2, then commits k5: its last batch is not aborted. */
    int64_t bad1 = put_txn(log, 9, 0, "k1", "bad");
    int64_t bad2 = put_txn(log, 9, 1, "k2", "bad");
    int64_t abort_at = marker(log, 9, false);
    put_txn(log, 10, 0, "k3", "committed");
    int64_t commit10 = marker(log, 10, true);
    put_txn(log, 9, 2, "k5", "committed");
    int64_t commit9 = marker(log, 9, true);
    /* A later committed transaction of 9, which the abort's entry must not hide. */
    put_txn(log, 9, 3, "k7", "late");
    marker(log, 9, true);
    fill(log, 60);
    assert_true(active_base(log) > commit9 + 2);

    struct rec *recs = calloc(256, sizeof *recs);
    size_t n = read_committed(log, recs, 256);
    assert_int_equal(count_key(recs, n, "k1", "bad"), 0);
    assert_int_equal(count_key(recs, n, "k7", "late"), 1);

    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);

    /* The aborted batches are gone whole, not emptied. */
    struct batch_list *l = calloc(1, sizeof *l);
    list_batches(log, l);
    assert_null(batch_at(l, bad1));
    assert_null(batch_at(l, bad2));
    n = read_all(log, recs, 256);
    assert_int_equal(count_key(recs, n, "k1", "bad") + count_key(recs, n, "k2", NULL), 0);
    assert_int_equal(count_key(recs, n, "k1", "good"), 1); /* never hidden by the abort */
    assert_int_equal(count_key(recs, n, "k3", "committed"), 1);
    assert_int_equal(count_key(recs, n, "k5", "committed"), 1);
    /* This pass removed the abort's data: its marker and entry stay, and so
     * do the commits whose records remain. */
    assert_non_null(batch_at(l, abort_at));
    assert_non_null(batch_at(l, commit10));
    assert_non_null(batch_at(l, commit9));
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);
    /* read_committed sees every committed record, the late k1 included. */
    n = read_committed(log, recs, 256);
    assert_int_equal(count_key(recs, n, "k7", "late"), 1);
    assert_int_equal(count_key(recs, n, "k3", "committed"), 1);
    assert_int_equal(count_key(recs, n, "k5", "committed"), 1);
    assert_int_equal(count_key(recs, n, "k1", "bad"), 0);
    free(l);
    free(recs);
    partition_log_close(log);
}

/* Producer 9 aborts k1 and then commits k2; fillers roll both below the
 * active segment. */
struct abort_then_commit {
    int64_t bad, abort_at, commit_at;
};

static struct abort_then_commit write_abort_then_commit(struct partition_log *log)
{
    struct abort_then_commit w;
    w.bad = put_txn(log, 9, 0, "k1", "bad");
    w.abort_at = marker(log, 9, false);
    put_txn(log, 9, 1, "k2", "kept");
    w.commit_at = marker(log, 9, true);
    fill(log, 60);
    assert_int_equal(txnindex_file_entries(), 1);
    return w;
}

/* After the ABORT marker of write_abort_then_commit went: its batch and
 * entry are gone, the COMMIT stays, and read_committed still sees k2. */
static void assert_abort_dropped(struct partition_log *log, struct batch_list *l, const struct abort_then_commit *w)
{
    list_batches(log, l);
    assert_null(batch_at(l, w->abort_at));
    assert_non_null(batch_at(l, w->commit_at));
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 0);
    struct rec recs[128];
    size_t n = read_committed(log, recs, 128);
    assert_int_equal(count_key(recs, n, "k2", "kept"), 1);
}

/* write_abort_then_commit on a fresh compacted log with delete.retention.ms
 * RETENTION_MS, then a first clean at *now, which removes the aborted data;
 * *res is its result. */
static struct partition_log *open_cleaned_abort_then_commit(struct log_config *cfg, struct abort_then_commit *w,
                                                            int64_t *now, struct log_clean_result *res)
{
    compact_config(cfg);
    cfg->delete_retention_ms = RETENTION_MS;
    struct partition_log *log = open_log(cfg);
    *w = write_abort_then_commit(log);
    *now = clock_wall_ms();
    assert_int_equal(partition_log_clean(log, -1, *now, &default_opts, res), 0);
    assert_true(res->cleaned);
    return log;
}

static void test_abort_marker_expires(void **state)
{
    (void)state;
    struct log_config cfg;
    struct abort_then_commit w;
    int64_t now;
    struct log_clean_result res;
    struct partition_log *log = open_cleaned_abort_then_commit(&cfg, &w, &now, &res);
    int64_t bad = w.bad, abort_at = w.abort_at;
    struct batch_list *l = calloc(1, sizeof *l);
    list_batches(log, l);
    assert_null(batch_at(l, bad));
    assert_non_null(batch_at(l, abort_at)); /* kept by the pass that removed its data */
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);
    assert_int_equal(txnindex_file_entries(), 1);

    /* Within delete.retention.ms of the first clean: still there. */
    struct log_clean_options force = default_opts;
    force.force = true;
    int64_t first_dirty = res.first_dirty_offset;
    assert_int_equal(partition_log_clean(log, first_dirty, now + 1000, &force, &res), 0);
    list_batches(log, l);
    assert_non_null(batch_at(l, abort_at));
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);

    /* Past it: the marker goes with its entry, in memory and on disk; the
     * commit of records still there stays. */
    assert_int_equal(partition_log_clean(log, first_dirty, now + 2 * RETENTION_MS, &force, &res), 0);
    assert_true(res.cleaned);
    assert_abort_dropped(log, l, &w);
    assert_int_equal(count_markers(l, true), 0);
    assert_int_equal(txnindex_file_entries(), 0);

    partition_log_close(log);
    log = open_log(&cfg);
    assert_abort_dropped(log, l, &w);
    assert_int_equal(count_markers(l, false), 1);
    free(l);
    partition_log_close(log);
}

/* A crash once the .swap files exist: the abort's entry is already gone
 * from the .txnindex, and reopening completes the swap that drops its
 * marker. A crash before that point leaves both. */
static void test_abort_marker_crash(void **state)
{
    (void)state;
    struct log_config cfg;
    struct abort_then_commit w;
    int64_t now;
    struct log_clean_result res;
    struct partition_log *log = open_cleaned_abort_then_commit(&cfg, &w, &now, &res);
    int64_t first_dirty = res.first_dirty_offset;

    struct log_clean_options opt = default_opts;
    opt.force = true;
    opt.stop_after = LOG_CLEAN_STOP_AFTER_CLEANED;
    assert_int_equal(partition_log_clean(log, first_dirty, now + 2 * RETENTION_MS, &opt, &res), 0);
    assert_int_equal(txnindex_file_entries(), 1);
    partition_log_close(log);
    log = open_log(&cfg);
    struct batch_list *l = calloc(1, sizeof *l);
    list_batches(log, l);
    assert_non_null(batch_at(l, w.abort_at));
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);

    opt.stop_after = LOG_CLEAN_STOP_AFTER_SWAP;
    assert_int_equal(partition_log_clean(log, first_dirty, now + 2 * RETENTION_MS, &opt, &res), 0);
    assert_int_equal(txnindex_file_entries(), 0);
    partition_log_close(log);
    log = open_log(&cfg);
    assert_abort_dropped(log, l, &w);
    free(l);
    partition_log_close(log);
}

static void test_commit_marker_expires(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    cfg.delete_retention_ms = RETENTION_MS;
    struct partition_log *log = open_log(&cfg);
    /* Transaction A's record is superseded later; transaction B's is not. */
    int64_t data_a = put_txn(log, 20, 0, "c", "old");
    int64_t commit_a = marker(log, 20, true);
    put_txn(log, 20, 1, "d", "kept");
    int64_t commit_b = marker(log, 20, true);
    put(log, "c", "new");
    fill(log, 60);

    int64_t now = clock_wall_ms();
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, now, &default_opts, &res), 0);
    assert_true(res.cleaned);
    struct batch_list *l = calloc(1, sizeof *l);
    list_batches(log, l);
    assert_null(batch_at(l, data_a));
    assert_non_null(batch_at(l, commit_a)); /* this pass met A's batch */
    assert_non_null(batch_at(l, commit_b));

    struct log_clean_options force = default_opts;
    force.force = true;
    int64_t first_dirty = res.first_dirty_offset;
    assert_int_equal(partition_log_clean(log, first_dirty, now + 1000, &force, &res), 0);
    list_batches(log, l);
    assert_non_null(batch_at(l, commit_a)); /* within the horizon */

    assert_int_equal(partition_log_clean(log, first_dirty, now + 2 * RETENTION_MS, &force, &res), 0);
    list_batches(log, l);
    assert_null(batch_at(l, commit_a));
    assert_non_null(batch_at(l, commit_b));
    struct rec recs[128];
    size_t n = read_committed(log, recs, 128);
    assert_int_equal(count_key(recs, n, "d", "kept"), 1);
    assert_int_equal(count_key(recs, n, "c", "new"), 1);
    assert_int_equal(count_key(recs, n, "c", "old"), 0);
    free(l);
    partition_log_close(log);
}

static void test_aborted_last_batch_kept_empty(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    cfg.delete_retention_ms = RETENTION_MS;
    struct partition_log *log = open_log(&cfg);
    put_txn(log, 30, 0, "x", "first");
    int64_t last = put_txn(log, 30, 1, "x", "aborted");
    int64_t abort_at = marker(log, 30, false);
    fill(log, 60);
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);

    struct batch_list *l = calloc(1, sizeof *l);
    list_batches(log, l);
    const struct record_batch_header *h = batch_at(l, last);
    assert_non_null(h);
    assert_int_equal(h->producer_id, 30);
    assert_int_equal(h->record_count, 0);
    assert_int_equal(l->h[0].base_offset, last); /* the first aborted batch went whole */
    assert_non_null(batch_at(l, abort_at));
    struct rec recs[128];
    size_t n = read_all(log, recs, 128);
    assert_int_equal(count_key(recs, n, "x", NULL), 0);

    /* Every pass meets the emptied batch of the transaction, so its ABORT
     * marker and entry stay even past the horizon. */
    struct log_clean_options force = default_opts;
    force.force = true;
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms() + 2 * RETENTION_MS, &force, &res),
                     0);
    list_batches(log, l);
    assert_non_null(batch_at(l, last));
    assert_non_null(batch_at(l, abort_at));
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);
    free(l);

    /* Producer state rebuilt from the log alone still knows producer 30. */
    log = reopen_without_snapshots(log, &cfg);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(log, 30, &e));
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_aborted_records_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_marker_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_marker_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_marker_expires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aborted_last_batch_kept_empty, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
