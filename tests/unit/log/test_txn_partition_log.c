/* Transactions inside the partition log: open transactions hold the last
 * stable offset, markers end them, aborts land in the aborted list and the
 * .txnindex files, and all of it survives clean and unclean reopens; the
 * transaction verification guard. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/producer_state.h"
#include "log/txn_index.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

static void reopen(struct log_fixture *f, bool recover)
{
    partition_log_close(f->log);
    f->log = NULL;
    char err[256];
    assert_int_equal(partition_log_open(f->dir, &f->cfg, recover, &f->log, err, sizeof err), KAFKA_ERR_NONE);
}

/* Append `records` records from pid/epoch at seq, under verification with
 * *guard when guard is set; returns the base offset. */
static int64_t produce_as(struct log_fixture *f, int64_t pid, int16_t epoch, int32_t seq, int records,
                          bool transactional, int64_t ts, const uint64_t *guard, int16_t expect)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, ts);
    b.producer_id = pid;
    b.producer_epoch = epoch;
    b.base_sequence = seq;
    b.attributes = transactional ? RECORD_BATCH_TRANSACTIONAL_BIT : 0;
    for (int i = 0; i < records; i++)
        record_batch_builder_add(&b, ts + i, NULL, -1, "v", 1, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(guard ? partition_log_append_verified(f->log, batch, len, 0, *guard, &res)
                           : partition_log_append(f->log, batch, len, 0, &res),
                     expect);
    free(batch);
    return res.base_offset;
}

static int64_t produce_full(struct log_fixture *f, int64_t pid, int16_t epoch, int32_t seq, int records,
                            bool transactional, int64_t ts, int16_t expect)
{
    return produce_as(f, pid, epoch, seq, records, transactional, ts, NULL, expect);
}

static int64_t produce_txn(struct log_fixture *f, int64_t pid, int16_t epoch, int32_t seq, int records)
{
    return produce_full(f, pid, epoch, seq, records, true, 1000, KAFKA_ERR_NONE);
}

static int64_t marker(struct log_fixture *f, int64_t pid, int16_t epoch, bool commit)
{
    int64_t offset = -2;
    assert_int_equal(partition_log_append_txn_marker(f->log, pid, epoch, 0, commit, 0, &offset), KAFKA_ERR_NONE);
    return offset;
}

struct aborted_list {
    int64_t pids[16];
    int64_t firsts[16];
    size_t n;
};

static void collect(void *arg, int64_t pid, int64_t first)
{
    struct aborted_list *l = arg;
    if (l->n < 16) {
        l->pids[l->n] = pid;
        l->firsts[l->n] = first;
    }
    l->n++;
}

static struct aborted_list aborted(struct log_fixture *f, int64_t from, int64_t upper)
{
    struct aborted_list l = {0};
    size_t n = partition_log_aborted_txns(f->log, from, upper, collect, &l);
    assert_int_equal(n, l.n);
    return l;
}

static char *seg_file(struct log_fixture *f, int64_t base, const char *ext)
{
    char *path = NULL;
    assert_true(asprintf(&path, "%s/%020lld%s", f->dir, (long long)base, ext) > 0);
    return path;
}

/* Entries of the .txnindex of the segment at base. */
static size_t read_txnindex(struct log_fixture *f, int64_t base, struct txn_index_entry *out, size_t max)
{
    char *path = seg_file(f, base, ".txnindex");
    struct txn_index idx = {0};
    assert_int_equal(txn_index_load_file(&idx, path), 0);
    int64_t size = test_file_size(path);
    assert_int_equal(size < 0 ? 0 : size, (int64_t)idx.count * TXN_INDEX_ENTRY_SIZE);
    size_t n = idx.count;
    for (size_t i = 0; i < n && i < max; i++)
        out[i] = idx.entries[i];
    txn_index_free(&idx);
    free(path);
    return n;
}

/* Remove every file of the directory ending in ext. */
static void remove_files(struct log_fixture *f, const char *ext)
{
    DIR *d = opendir(f->dir);
    struct dirent *ent;
    char path[4096];
    while ((ent = readdir(d)) != NULL) {
        size_t l = strlen(ent->d_name), el = strlen(ext);
        if (l > el && strcmp(ent->d_name + l - el, ext) == 0) {
            snprintf(path, sizeof path, "%s/%s", f->dir, ent->d_name);
            assert_int_equal(unlink(path), 0);
        }
    }
    closedir(d);
}

/* Entries in all .txnindex files; each must sit in the file of the segment
 * holding its marker. */
static size_t count_on_disk(struct log_fixture *f)
{
    size_t on_disk = 0;
    DIR *d = opendir(f->dir);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strlen(ent->d_name) == 29 && strcmp(ent->d_name + 20, ".txnindex") == 0) {
            int64_t base = atoll(ent->d_name);
            struct txn_index_entry entries[16];
            size_t n = read_txnindex(f, base, entries, 16);
            for (size_t i = 0; i < n && i < 16; i++)
                assert_true(entries[i].last_offset >= base);
            on_disk += n;
        }
    }
    closedir(d);
    return on_disk;
}

static void test_open_txn_holds_lso_until_commit(void **state)
{
    struct log_fixture *f = *state;
    assert_int_equal(produce_full(f, -1, -1, -1, 2, false, 1000, KAFKA_ERR_NONE), 0);
    assert_int_equal(produce_txn(f, 7, 0, 0, 3), 2);
    assert_int_equal(partition_log_last_stable_offset(f->log), 2);
    assert_int_equal(produce_txn(f, 7, 0, 3, 2), 5);
    assert_int_equal(partition_log_last_stable_offset(f->log), 2);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 7, &e));
    assert_int_equal(e.current_txn_first_offset, 2);

    /* A read bounded by the LSO stops before the open transaction. */
    struct log_read_result rr;
    assert_int_equal(partition_log_read(f->log, 0, 1 << 20, partition_log_last_stable_offset(f->log), &rr),
                     KAFKA_ERR_NONE);
    uint8_t *data = test_read_region(&rr);
    struct record_batch_header h;
    record_batch_parse_header(data, (size_t)rr.len, &h);
    assert_int_equal(record_batch_total_size(&h), rr.len);
    assert_int_equal(record_batch_last_offset(&h), 1);
    free(data);

    assert_int_equal(marker(f, 7, 0, true), 7);
    assert_int_equal(partition_log_end_offset(f->log), 8);
    assert_int_equal(partition_log_last_stable_offset(f->log), 8);
    assert_int_equal(aborted(f, 0, 8).n, 0);
    assert_true(partition_log_producer_lookup(f->log, 7, &e));
    assert_int_equal(e.current_txn_first_offset, -1);

    /* The marker batch: control + transactional, key COMMIT, value coordinator epoch. */
    assert_int_equal(partition_log_read(f->log, 7, 1 << 20, INT64_MAX, &rr), KAFKA_ERR_NONE);
    data = test_read_region(&rr);
    record_batch_parse_header(data, (size_t)rr.len, &h);
    assert_true(record_batch_is_control(&h));
    assert_true(record_batch_is_transactional(&h));
    assert_int_equal(h.producer_id, 7);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, data, (size_t)rr.len), 0);
    assert_int_equal(record_batch_records_next(&it, &rec), 1);
    assert_int_equal(rec.key_len, 4);
    assert_memory_equal(rec.key, "\0\0\0\1", 4);
    assert_int_equal(rec.value_len, 6);
    assert_memory_equal(rec.value, "\0\0\0\0\0\0", 6);
    free(data);

    /* A retried marker writes nothing. */
    assert_int_equal(marker(f, 7, 0, true), -1);
    assert_int_equal(partition_log_end_offset(f->log), 8);
}

static void test_abort_writes_txnindex(void **state)
{
    struct log_fixture *f = *state;
    produce_txn(f, 1, 0, 0, 2); /* 0-1 */
    assert_int_equal(marker(f, 1, 0, true), 2);
    produce_txn(f, 2, 0, 0, 2); /* 3-4 */
    assert_int_equal(marker(f, 2, 0, false), 5);
    assert_int_equal(partition_log_last_stable_offset(f->log), 6);

    struct txn_index_entry entries[4];
    assert_int_equal(read_txnindex(f, 0, entries, 4), 1);
    assert_int_equal(entries[0].producer_id, 2);
    assert_int_equal(entries[0].first_offset, 3);
    assert_int_equal(entries[0].last_offset, 5);
    assert_int_equal(entries[0].last_stable_offset, 6);

    struct aborted_list l = aborted(f, 0, 6);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.pids[0], 2);
    assert_int_equal(l.firsts[0], 3);
    assert_int_equal(aborted(f, 5, 6).n, 1);  /* marker still ahead */
    assert_int_equal(aborted(f, 6, 10).n, 0); /* past the marker */
    assert_int_equal(aborted(f, 0, 3).n, 0);  /* range ends before the txn */
}

static void test_interleaved_producers(void **state)
{
    struct log_fixture *f = *state;
    produce_txn(f, 10, 0, 0, 1); /* 0 */
    produce_txn(f, 11, 0, 0, 1); /* 1 */
    produce_txn(f, 10, 0, 1, 1); /* 2 */
    produce_txn(f, 12, 0, 0, 1); /* 3 */
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
    assert_int_equal(marker(f, 11, 0, false), 4); /* abort 11 while 10 and 12 are open */
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
    assert_int_equal(marker(f, 10, 0, true), 5);
    assert_int_equal(partition_log_last_stable_offset(f->log), 3);
    assert_int_equal(marker(f, 12, 0, false), 6);
    assert_int_equal(partition_log_last_stable_offset(f->log), 7);

    struct txn_index_entry entries[4];
    assert_int_equal(read_txnindex(f, 0, entries, 4), 2);
    assert_int_equal(entries[0].producer_id, 11);
    assert_int_equal(entries[0].last_stable_offset, 0); /* 10 was still open */
    assert_int_equal(entries[1].producer_id, 12);
    assert_int_equal(entries[1].last_stable_offset, 7);

    struct aborted_list l = aborted(f, 0, 7);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.pids[0], 11);
    assert_int_equal(l.firsts[0], 1);
    assert_int_equal(l.pids[1], 12);
    assert_int_equal(l.firsts[1], 3);
    l = aborted(f, 0, 2);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.pids[0], 11);
}

static void test_snapshot_reopen_keeps_open_txn(void **state)
{
    struct log_fixture *f = *state;
    produce_txn(f, 3, 1, 0, 2); /* 0-1, left open */
    produce_txn(f, 4, 0, 0, 1); /* 2 */
    marker(f, 4, 0, false);     /* 3 */
    reopen(f, false);
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 3, &e));
    assert_int_equal(e.current_txn_first_offset, 0);
    assert_int_equal(aborted(f, 0, 10).n, 1);
    /* The reopened producer continues its transaction, then commits. */
    assert_int_equal(produce_txn(f, 3, 1, 2, 1), 4);
    assert_int_equal(marker(f, 3, 1, true), 5);
    assert_int_equal(partition_log_last_stable_offset(f->log), 6);
    reopen(f, false);
    assert_int_equal(partition_log_last_stable_offset(f->log), 6);
}

static void test_unclean_reopen_rebuilds(void **state)
{
    struct log_fixture *f = *state;
    partition_log_close(f->log);
    f->log = NULL;
    f->cfg.segment_bytes = 300; /* a few batches per segment */
    reopen(f, false);
    for (int round = 0; round < 4; round++) {
        produce_txn(f, 20, 0, round * 2, 2);
        marker(f, 20, 0, round % 2 == 0 ? false : true);
    }
    produce_txn(f, 21, 0, 0, 1);
    int64_t open_first = partition_log_end_offset(f->log) - 1;
    produce_full(f, -1, -1, -1, 1, false, 1000, KAFKA_ERR_NONE);
    assert_true(partition_log_segment_count(f->log) > 1);
    struct aborted_list before = aborted(f, 0, INT64_MAX);
    assert_int_equal(before.n, 2);
    assert_int_equal(partition_log_last_stable_offset(f->log), open_first);

    /* Lose every snapshot and txnindex: a full rescan must rebuild them. */
    partition_log_close(f->log);
    f->log = NULL;
    remove_files(f, ".snapshot");
    remove_files(f, ".txnindex");
    reopen(f, true);
    assert_int_equal(partition_log_last_stable_offset(f->log), open_first);
    struct aborted_list after = aborted(f, 0, INT64_MAX);
    assert_int_equal(after.n, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(after.pids[i], before.pids[i]);
        assert_int_equal(after.firsts[i], before.firsts[i]);
    }
    assert_int_equal(count_on_disk(f), 2);
    /* The open transaction can still be aborted after recovery. */
    int64_t m = marker(f, 21, 0, false);
    assert_true(m > open_first);
    assert_int_equal(aborted(f, 0, INT64_MAX).n, 3);

    /* An unclean stop with older snapshots in place replays only the tail,
     * on top of the index files, without duplicating their entries. */
    produce_txn(f, 22, 0, 0, 1);
    marker(f, 22, 0, false);
    int64_t end = partition_log_end_offset(f->log);
    partition_log_close(f->log);
    f->log = NULL;
    char *latest = NULL;
    assert_true(asprintf(&latest, "%s/%020lld.snapshot", f->dir, (long long)end) > 0);
    assert_int_equal(unlink(latest), 0);
    free(latest);
    reopen(f, true);
    struct aborted_list tail = aborted(f, 0, INT64_MAX);
    assert_int_equal(tail.n, 4);
    assert_int_equal(tail.pids[3], 22);
    assert_int_equal(count_on_disk(f), 4);
}

static void test_truncate_drops_aborts(void **state)
{
    struct log_fixture *f = *state;
    produce_txn(f, 30, 0, 0, 2); /* 0-1 */
    marker(f, 30, 0, false);     /* 2 */
    produce_txn(f, 31, 0, 0, 2); /* 3-4 */
    marker(f, 31, 0, false);     /* 5 */
    assert_int_equal(aborted(f, 0, 10).n, 2);
    assert_int_equal(partition_log_truncate_to(f->log, 5), KAFKA_ERR_NONE);
    assert_int_equal(aborted(f, 0, 10).n, 1);
    /* Producer 31's transaction is open again without its marker. */
    assert_int_equal(partition_log_last_stable_offset(f->log), 3);
    struct txn_index_entry entries[4];
    assert_int_equal(read_txnindex(f, 0, entries, 4), 1);
    assert_int_equal(entries[0].producer_id, 30);
}

static void test_expiry_skips_open_txn(void **state)
{
    struct log_fixture *f = *state;
    produce_full(f, 40, 0, 0, 1, true, 1000, KAFKA_ERR_NONE);
    produce_full(f, 41, 0, 0, 1, false, 1000, KAFKA_ERR_NONE);
    int64_t far = 1000 + f->cfg.producer_id_expiration_ms + 10;
    assert_int_equal(partition_log_expire_producers(f->log, far), 1);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 40, &e));
    assert_false(partition_log_producer_lookup(f->log, 41, &e));
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
}

static void test_marker_epochs(void **state)
{
    struct log_fixture *f = *state;
    produce_full(f, 50, 2, 0, 1, true, 1000, KAFKA_ERR_NONE);
    int64_t offset;
    assert_int_equal(partition_log_append_txn_marker(f->log, 50, 1, 0, true, 0, &offset),
                     KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(offset, -1);
    assert_int_equal(partition_log_end_offset(f->log), 1);
    assert_int_equal(partition_log_append_txn_marker(f->log, 50, 2, 5, false, 0, &offset), KAFKA_ERR_NONE);
    assert_int_equal(offset, 1);
    /* A stale batch epoch is fenced too. */
    produce_full(f, 50, 1, 0, 1, true, 1000, KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    produce_full(f, 50, 2, 1, 1, true, 1000, KAFKA_ERR_NONE);
    assert_int_equal(partition_log_append_txn_marker(f->log, 50, 2, 4, true, 0, &offset),
                     KAFKA_ERR_TRANSACTION_COORDINATOR_FENCED);
    /* A bumped epoch (the coordinator aborting on a re-init) ends it. */
    assert_int_equal(partition_log_append_txn_marker(f->log, 50, 3, 5, false, 0, &offset), KAFKA_ERR_NONE);
    assert_int_equal(offset, 3);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 50, &e));
    assert_int_equal(e.epoch, 3);
    assert_int_equal(e.coordinator_epoch, 5);
    /* No transaction known for this producer: nothing to write. */
    assert_int_equal(partition_log_append_txn_marker(f->log, 99, 0, 0, true, 0, &offset), KAFKA_ERR_NONE);
    assert_int_equal(offset, -1);
    assert_int_equal(partition_log_end_offset(f->log), 4);
}

static void test_plain_batch_inside_txn_refused(void **state)
{
    struct log_fixture *f = *state;
    produce_full(f, 60, 0, 0, 1, true, 1000, KAFKA_ERR_NONE);
    produce_full(f, 60, 0, 1, 1, false, 1000, KAFKA_ERR_INVALID_TXN_STATE);
    /* Transactional batches need a producer id. */
    produce_full(f, -1, -1, -1, 1, true, 1000, KAFKA_ERR_INVALID_RECORD);
    assert_int_equal(partition_log_end_offset(f->log), 1);
}

static void test_retention_drops_index_entries(void **state)
{
    struct log_fixture *f = *state;
    partition_log_close(f->log);
    f->log = NULL;
    f->cfg.segment_bytes = 300;
    reopen(f, false);
    for (int i = 0; i < 6; i++) {
        produce_txn(f, 70, 0, i, 1);
        marker(f, 70, 0, false);
    }
    assert_int_equal(aborted(f, 0, INT64_MAX).n, 6);
    int64_t end = partition_log_end_offset(f->log);
    assert_int_equal(partition_log_delete_records_before(f->log, end - 2), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_apply_retention(f->log, 0), 0);
    struct aborted_list l = aborted(f, 0, INT64_MAX);
    assert_true(l.n < 6);
    assert_true(l.n >= 1);
    /* The list and the files agree: deleted segments took their entries. */
    assert_int_equal(count_on_disk(f), l.n);
    assert_int_equal(l.firsts[l.n - 1], end - 2);
}

/* DeleteRecords past the first offset of an open transaction: the LSO
 * follows the log start (never below it), the producer keeps its
 * transaction, and its abort still hides the records after the start. */
static void test_delete_records_past_open_txn(void **state)
{
    struct log_fixture *f = *state;
    produce_txn(f, 90, 0, 0, 3);                                 /* 0-2, left open */
    produce_full(f, -1, -1, -1, 4, false, 1000, KAFKA_ERR_NONE); /* 3-6 */
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
    assert_int_equal(partition_log_delete_records_before(f->log, 2), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_start_offset(f->log), 2);
    assert_int_equal(partition_log_last_stable_offset(f->log), 2);
    assert_int_equal(partition_log_delete_records_before(f->log, 5), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_last_stable_offset(f->log), 5);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 90, &e));
    assert_int_equal(e.current_txn_first_offset, 0);
    /* Start offsets never move back; past the end is out of range. */
    assert_int_equal(partition_log_delete_records_before(f->log, 4), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_start_offset(f->log), 5);
    assert_int_equal(partition_log_delete_records_before(f->log, 8), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_delete_records_before(f->log, -1), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(marker(f, 90, 0, false), 7);
    assert_int_equal(partition_log_last_stable_offset(f->log), 8);
    struct aborted_list l = aborted(f, 5, 8);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.pids[0], 90);
    assert_int_equal(l.firsts[0], 0);
}

struct race {
    struct log_fixture *f;
    atomic_bool done;
    int rounds;
};

/* Transactions of producer 80, one batch each (sequence = round), even
 * rounds committed, odd ones aborted. */
static void *race_writer(void *arg)
{
    struct race *r = arg;
    for (int i = 0; i < r->rounds; i++) {
        produce_txn(r->f, 80, 0, i, 1);
        int64_t offset;
        partition_log_append_txn_marker(r->f->log, 80, 0, 0, i % 2 == 0, 0, &offset);
    }
    atomic_store(&r->done, true);
    return NULL;
}

static void test_readers_never_see_aborted_data_uncovered(void **state)
{
    struct log_fixture *f = *state;
    struct race r = {.f = f, .rounds = 400};
    pthread_t writer;
    assert_int_equal(pthread_create(&writer, NULL, race_writer, &r), 0);
    int64_t pos = 0;
    int committed_seen = 0, aborted_seen = 0;
    for (;;) {
        bool finished = atomic_load(&r.done);
        int64_t lso = partition_log_last_stable_offset(f->log);
        struct log_read_result rr;
        assert_int_equal(partition_log_read(f->log, pos, 1 << 20, lso, &rr), KAFKA_ERR_NONE);
        if (rr.len > 0) {
            struct aborted_list ab = aborted(f, pos, rr.next_offset);
            uint8_t *data = test_read_region(&rr);
            assert_non_null(data);
            for (int64_t at = 0; at < rr.len;) {
                struct record_batch_header h;
                record_batch_parse_header(data + at, (size_t)(rr.len - at), &h);
                assert_true(record_batch_last_offset(&h) < lso);
                if (!record_batch_is_control(&h)) {
                    bool covered = false;
                    for (size_t i = 0; i < ab.n && i < 16; i++)
                        covered |= ab.pids[i] == 80 && ab.firsts[i] <= h.base_offset;
                    if (h.base_sequence % 2 == 0) {
                        committed_seen++;
                    } else {
                        /* An aborted batch is only readable with its entry. */
                        assert_true(covered);
                        aborted_seen++;
                    }
                }
                at += (int64_t)record_batch_total_size(&h);
            }
            free(data);
            pos = rr.next_offset;
        } else if (finished) {
            break;
        }
    }
    pthread_join(writer, NULL);
    assert_int_equal(committed_seen, r.rounds / 2);
    assert_int_equal(aborted_seen, r.rounds / 2);
}

static uint64_t start_verification(struct log_fixture *f, int64_t pid)
{
    uint64_t guard = 7;
    assert_int_equal(partition_log_txn_verification_start(f->log, pid, &guard), KAFKA_ERR_NONE);
    return guard;
}

/* KIP-890's VerificationGuard: a transaction opens only with the guard taken
 * before the coordinator was asked, and a marker written meanwhile (the
 * transaction ended) makes that guard worthless. */
static void test_verification_guard(void **state)
{
    struct log_fixture *f = *state;
    uint64_t g = start_verification(f, 21);
    assert_true(g != 0);
    assert_int_equal(start_verification(f, 21), g); /* a second produce in flight shares it */
    uint64_t wrong = g + 1000;
    produce_as(f, 21, 0, 0, 3, true, 1000, &wrong, KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(produce_as(f, 21, 0, 0, 3, true, 1000, &g, KAFKA_ERR_NONE), 0);
    /* Open: nothing to verify, the guard is spent. */
    uint64_t none = start_verification(f, 21);
    assert_int_equal(none, 0);
    produce_as(f, 21, 0, 3, 2, true, 1000, &none, KAFKA_ERR_NONE);
    assert_int_equal(partition_log_last_stable_offset(f->log), 0);
    marker(f, 21, 0, true);
    assert_int_equal(partition_log_last_stable_offset(f->log), 6);

    /* Verified, then the transaction ends before the append: the marker
     * (written or not, as none is open here) ends the guard. */
    g = start_verification(f, 21);
    assert_true(g != 0);
    marker(f, 21, 0, false);
    produce_as(f, 21, 0, 5, 2, true, 1000, &g, KAFKA_ERR_INVALID_TXN_STATE);
    /* Found open when asked, ended before the append: no guard to show. */
    g = start_verification(f, 21);
    produce_as(f, 21, 0, 5, 2, true, 1000, &g, KAFKA_ERR_NONE);
    none = start_verification(f, 21);
    assert_int_equal(none, 0);
    marker(f, 21, 0, false);
    produce_as(f, 21, 0, 7, 2, true, 1000, &none, KAFKA_ERR_INVALID_TXN_STATE);
    /* Nothing refused was written, and no transaction holds the LSO. */
    assert_int_equal(partition_log_end_offset(f->log), 9);
    assert_int_equal(partition_log_last_stable_offset(f->log), 9);
    /* Plain batches and appends without verification are not affected. */
    produce_as(f, -1, -1, -1, 1, false, 1000, &none, KAFKA_ERR_NONE);
    produce_full(f, 22, 0, 0, 1, true, 1000, KAFKA_ERR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_FIXTURE_TEST_OPEN(test_open_txn_holds_lso_until_commit),
        LOG_FIXTURE_TEST_OPEN(test_abort_writes_txnindex),
        LOG_FIXTURE_TEST_OPEN(test_interleaved_producers),
        LOG_FIXTURE_TEST_OPEN(test_snapshot_reopen_keeps_open_txn),
        LOG_FIXTURE_TEST_OPEN(test_unclean_reopen_rebuilds),
        LOG_FIXTURE_TEST_OPEN(test_truncate_drops_aborts),
        LOG_FIXTURE_TEST_OPEN(test_expiry_skips_open_txn),
        LOG_FIXTURE_TEST_OPEN(test_marker_epochs),
        LOG_FIXTURE_TEST_OPEN(test_plain_batch_inside_txn_refused),
        LOG_FIXTURE_TEST_OPEN(test_retention_drops_index_entries),
        LOG_FIXTURE_TEST_OPEN(test_delete_records_past_open_txn),
        LOG_FIXTURE_TEST_OPEN(test_readers_never_see_aborted_data_uncovered),
        LOG_FIXTURE_TEST_OPEN(test_verification_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
