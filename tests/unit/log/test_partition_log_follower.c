/* The replication append origin and the high watermark: a follower's copy
 * of a leader's log keeps every byte, offset and epoch, rebuilds the same
 * producer state, transactions and LSO, refuses batches that do not follow
 * its log end, and survives reopen and recovery; and the wait of a
 * coordinator for its records to be replicated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/leader_epoch_cache.h"
#include "log/producer_state.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

/* A leader log and a follower log, each in its own temp dir. */
struct pair {
    struct log_fixture *leader;
    struct log_fixture *follower;
};

static int open_fixture(struct log_fixture **out, int32_t segment_bytes)
{
    void *state = NULL;
    if (log_fixture_setup(&state) != 0)
        return -1;
    struct log_fixture *f = state;
    f->cfg.segment_bytes = segment_bytes;
    char err[256];
    *out = f;
    return partition_log_open(f->dir, &f->cfg, false, &f->log, err, sizeof err) == 0 ? 0 : -1;
}

static int pair_setup(void **state)
{
    struct pair *p = calloc(1, sizeof *p);
    /* Small segments so the copy spans several of them. */
    if (!p || open_fixture(&p->leader, 1024) != 0 || open_fixture(&p->follower, 1024) != 0)
        return -1;
    *state = p;
    return 0;
}

static int pair_teardown(void **state)
{
    struct pair *p = *state;
    void *l = p->leader, *f = p->follower;
    log_fixture_teardown(&l);
    log_fixture_teardown(&f);
    free(p);
    return 0;
}

static void reopen(struct log_fixture *f, bool recover)
{
    partition_log_close(f->log);
    f->log = NULL;
    char err[256];
    assert_int_equal(partition_log_open(f->dir, &f->cfg, recover, &f->log, err, sizeof err), KAFKA_ERR_NONE);
}

static void produce(struct partition_log *log, int64_t pid, int16_t epoch, int32_t seq, int records, bool transactional,
                    int32_t leader_epoch)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 5000 + seq);
    b.producer_id = pid;
    b.producer_epoch = epoch;
    b.base_sequence = seq;
    b.attributes = transactional ? RECORD_BATCH_TRANSACTIONAL_BIT : 0;
    for (int i = 0; i < records; i++)
        record_batch_builder_add(&b, 5000 + seq + i, "k", 1, "value", 5, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, leader_epoch, &res), KAFKA_ERR_NONE);
    free(batch);
}

static void marker(struct partition_log *log, int64_t pid, int16_t epoch, bool commit, int32_t leader_epoch)
{
    int64_t offset;
    assert_int_equal(partition_log_append_txn_marker(log, pid, epoch, 7, commit, leader_epoch, &offset),
                     KAFKA_ERR_NONE);
    assert_true(offset >= 0);
}

/* Every byte of the log from offset `from`, as reads return it, into *len. */
static uint8_t *read_all(struct partition_log *log, int64_t from, size_t *len)
{
    uint8_t *all = NULL;
    *len = 0;
    int64_t end = partition_log_end_offset(log);
    while (from < end) {
        struct log_read_result rr;
        assert_int_equal(partition_log_read(log, from, 1 << 20, INT64_MAX, &rr), KAFKA_ERR_NONE);
        assert_true(rr.len > 0);
        uint8_t *part = test_read_region(&rr);
        assert_non_null(part);
        all = realloc(all, *len + (size_t)rr.len);
        memcpy(all + *len, part, (size_t)rr.len);
        *len += (size_t)rr.len;
        free(part);
        from = rr.next_offset;
    }
    return all;
}

/* Copy what the leader has past the follower's end, one read at a time, as
 * a fetcher would. */
static void replicate(struct partition_log *leader, struct partition_log *follower)
{
    int64_t from = partition_log_end_offset(follower);
    while (from < partition_log_end_offset(leader)) {
        struct log_read_result rr;
        assert_int_equal(partition_log_read(leader, from, 700, INT64_MAX, &rr), KAFKA_ERR_NONE);
        uint8_t *part = test_read_region(&rr);
        assert_non_null(part);
        struct log_append_result res;
        assert_int_equal(partition_log_append_as(follower, LOG_APPEND_REPLICATION, part, (size_t)rr.len, -1, &res),
                         KAFKA_ERR_NONE);
        assert_int_equal(res.base_offset, from);
        assert_int_equal(res.last_offset, rr.next_offset - 1);
        free(part);
        from = rr.next_offset;
    }
}

static void collect_aborted(void *arg, int64_t pid, int64_t first)
{
    int64_t *sum = arg;
    sum[0]++;
    sum[1] = sum[1] * 31 + pid;
    sum[2] = sum[2] * 31 + first;
}

static void assert_same_producer(struct partition_log *a, struct partition_log *b, int64_t pid)
{
    struct producer_entry ea, eb;
    assert_true(partition_log_producer_lookup(a, pid, &ea));
    assert_true(partition_log_producer_lookup(b, pid, &eb));
    assert_int_equal(ea.epoch, eb.epoch);
    assert_int_equal(ea.batch_count, eb.batch_count);
    assert_int_equal(ea.last_timestamp, eb.last_timestamp);
    assert_int_equal(ea.coordinator_epoch, eb.coordinator_epoch);
    assert_int_equal(ea.current_txn_first_offset, eb.current_txn_first_offset);
    for (int i = 0; i < ea.batch_count; i++) {
        assert_int_equal(ea.batches[i].first_seq, eb.batches[i].first_seq);
        assert_int_equal(ea.batches[i].last_seq, eb.batches[i].last_seq);
        assert_int_equal(ea.batches[i].first_offset, eb.batches[i].first_offset);
        assert_int_equal(ea.batches[i].last_offset, eb.batches[i].last_offset);
    }
}

/* The follower holds what the leader holds: bytes, offsets, epochs,
 * producers, transactions. */
static void assert_same_log(struct partition_log *leader, struct partition_log *follower)
{
    assert_int_equal(partition_log_start_offset(follower), partition_log_start_offset(leader));
    assert_int_equal(partition_log_end_offset(follower), partition_log_end_offset(leader));
    size_t la, lb;
    uint8_t *a = read_all(leader, 0, &la);
    uint8_t *b = read_all(follower, 0, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);

    struct leader_epoch_entry *ea, *eb;
    size_t na, nb;
    assert_int_equal(partition_log_epoch_entries(leader, &ea, &na), 0);
    assert_int_equal(partition_log_epoch_entries(follower, &eb, &nb), 0);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(ea[i].epoch, eb[i].epoch);
        assert_int_equal(ea[i].start_offset, eb[i].start_offset);
    }
    free(ea);
    free(eb);

    assert_int_equal(partition_log_producer_count(follower), partition_log_producer_count(leader));
    for (int64_t pid = 100; pid <= 102; pid++)
        assert_same_producer(leader, follower, pid);
    assert_int_equal(partition_log_last_stable_offset(follower), partition_log_last_stable_offset(leader));
    int64_t sa[3] = {0}, sb[3] = {0};
    partition_log_aborted_txns(leader, 0, INT64_MAX, collect_aborted, sa);
    partition_log_aborted_txns(follower, 0, INT64_MAX, collect_aborted, sb);
    assert_memory_equal(sa, sb, sizeof sa);
}

/* A leader history with every kind of batch: plain, idempotent,
 * transactional (committed, aborted, still open), two leader epochs. */
static void write_leader_history(struct partition_log *log)
{
    for (int i = 0; i < 4; i++)
        produce(log, -1, -1, -1, 3, false, 2);
    produce(log, 100, 0, 0, 2, false, 2);
    produce(log, 100, 0, 2, 2, false, 2);
    produce(log, 101, 1, 0, 2, true, 2);
    produce(log, 102, 0, 0, 1, true, 2);
    marker(log, 101, 1, false, 2);
    assert_int_equal(partition_log_assign_leader_epoch(log, 4), KAFKA_ERR_NONE);
    produce(log, 102, 0, 1, 2, true, 4);
    marker(log, 102, 0, true, 4);
    produce(log, 101, 1, 2, 3, true, 4); /* open at the end: holds the LSO */
    produce(log, 100, 0, 4, 1, false, 4);
}

static void test_follower_copy_is_identical(void **state)
{
    struct pair *p = *state;
    write_leader_history(p->leader->log);
    replicate(p->leader->log, p->follower->log);
    assert_same_log(p->leader->log, p->follower->log);
    assert_true(partition_log_segment_count(p->follower->log) > 1);
    /* The open transaction holds the LSO on both. */
    assert_true(partition_log_last_stable_offset(p->follower->log) < partition_log_end_offset(p->follower->log));
    assert_int_equal(partition_log_latest_epoch(p->follower->log), 4);
}

static void test_follower_copy_in_one_append(void **state)
{
    struct pair *p = *state;
    write_leader_history(p->leader->log);
    size_t len;
    uint8_t *all = read_all(p->leader->log, 0, &len);
    /* One request holding markers between data batches, too large for the
     * follower's small segments: give it room. */
    struct log_config cfg;
    partition_log_get_config(p->follower->log, &cfg);
    cfg.segment_bytes = 1 << 20;
    partition_log_set_config(p->follower->log, &cfg);
    struct log_append_result res;
    assert_int_equal(partition_log_append_as(p->follower->log, LOG_APPEND_REPLICATION, all, len, -1, &res),
                     KAFKA_ERR_NONE);
    free(all);
    assert_same_log(p->leader->log, p->follower->log);
}

static void test_follower_survives_reopen_and_recovery(void **state)
{
    struct pair *p = *state;
    write_leader_history(p->leader->log);
    replicate(p->leader->log, p->follower->log);
    /* Both reopen: a reloaded producer keeps its last batch's timestamp,
     * not a marker's, on either side. */
    reopen(p->leader, false);
    reopen(p->follower, false);
    assert_same_log(p->leader->log, p->follower->log);
    reopen(p->leader, true);
    reopen(p->follower, true);
    assert_same_log(p->leader->log, p->follower->log);
    /* Replication goes on after the reopen. */
    marker(p->leader->log, 101, 1, true, 4);
    produce(p->leader->log, -1, -1, -1, 2, false, 4);
    replicate(p->leader->log, p->follower->log);
    assert_same_log(p->leader->log, p->follower->log);
    assert_int_equal(partition_log_last_stable_offset(p->follower->log), partition_log_end_offset(p->follower->log));
}

/* The leader's batches at offsets [first, ...), as one buffer. */
static uint8_t *leader_batches(struct partition_log *log, int64_t first, int64_t end, size_t *len)
{
    struct log_read_result rr;
    assert_int_equal(partition_log_read(log, first, 1 << 20, end, &rr), KAFKA_ERR_NONE);
    *len = (size_t)rr.len;
    return test_read_region(&rr);
}

static void test_follower_refuses_offsets_that_do_not_follow(void **state)
{
    struct pair *p = *state;
    for (int i = 0; i < 3; i++)
        produce(p->leader->log, -1, -1, -1, 2, false, 1); /* offsets 0-1, 2-3, 4-5 */
    size_t len01, len23, len45;
    uint8_t *b01 = leader_batches(p->leader->log, 0, 2, &len01);
    uint8_t *b23 = leader_batches(p->leader->log, 2, 4, &len23);
    uint8_t *b45 = leader_batches(p->leader->log, 4, 6, &len45);
    struct partition_log *log = p->follower->log;
    struct log_append_result res;
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b01, len01, -1, &res), KAFKA_ERR_NONE);

    /* Already in the log: below the log end. */
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b01, len01, -1, &res),
                     KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_end_offset(log), 2);

    /* Out of order inside one append: nothing of it is written. */
    uint8_t *swapped = malloc(len45 + len23);
    memcpy(swapped, b45, len45);
    memcpy(swapped + len45, b23, len23);
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, swapped, len45 + len23, -1, &res),
                     KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_end_offset(log), 2);
    /* The same batch twice in one append. */
    uint8_t *twice = malloc(2 * len23);
    memcpy(twice, b23, len23);
    memcpy(twice + len23, b23, len23);
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, twice, 2 * len23, -1, &res),
                     KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_end_offset(log), 2);

    /* A corrupted batch is refused as on the leader. */
    b23[len23 - 1] ^= 0x5a;
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b23, len23, -1, &res),
                     KAFKA_ERR_CORRUPT_MESSAGE);
    b23[len23 - 1] ^= 0x5a;
    assert_int_equal(partition_log_end_offset(log), 2);

    /* A gap past the log end (a compacted leader has them) is taken as is. */
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b45, len45, -1, &res), KAFKA_ERR_NONE);
    assert_int_equal(res.base_offset, 4);
    assert_int_equal(partition_log_end_offset(log), 6);
    size_t len;
    uint8_t *copy = read_all(log, 4, &len);
    assert_int_equal(len, len45);
    assert_memory_equal(copy, b45, len45);
    /* A gap no segment index could span is left to the fetcher. */
    record_batch_set_base_offset(b45, 6 + (int64_t)INT32_MAX + 10);
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b45, len45, -1, &res),
                     KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_end_offset(log), 6);
    /* And now the hole is behind the log end. */
    assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, b23, len23, -1, &res),
                     KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    free(copy);
    free(b01);
    free(b23);
    free(b45);
    free(swapped);
    free(twice);
}

static void test_follower_takes_markers_the_client_path_refuses(void **state)
{
    struct pair *p = *state;
    produce(p->leader->log, 101, 0, 0, 2, true, 0);
    marker(p->leader->log, 101, 0, false, 0);
    size_t len;
    uint8_t *all = read_all(p->leader->log, 0, &len);
    uint8_t *copy = malloc(len);
    memcpy(copy, all, len);
    struct log_append_result res;
    /* A client may not write a control batch (nor this offset order). */
    assert_int_equal(partition_log_append(p->follower->log, copy, len, -1, &res), KAFKA_ERR_INVALID_RECORD);
    assert_int_equal(partition_log_append_as(p->follower->log, LOG_APPEND_REPLICATION, all, len, -1, &res),
                     KAFKA_ERR_NONE);
    assert_int_equal(partition_log_aborted_txns(p->follower->log, 0, INT64_MAX, NULL, NULL), 1);
    assert_int_equal(partition_log_last_stable_offset(p->follower->log), 3);
    free(all);
    free(copy);
}

static void test_high_watermark(void **state)
{
    struct pair *p = *state;
    struct partition_log *log = p->follower->log;
    assert_true(partition_log_high_watermark_tracks_end(log));
    produce(log, -1, -1, -1, 5, false, 0);
    assert_int_equal(partition_log_high_watermark(log), 5);

    /* Held by the replica layer: appends no longer move it. */
    partition_log_set_high_watermark_tracks_end(log, false);
    produce(log, 101, 0, 0, 3, true, 0);   /* 5..7, an open transaction */
    produce(log, -1, -1, -1, 2, false, 0); /* 8..9 */
    assert_int_equal(partition_log_end_offset(log), 10);
    assert_int_equal(partition_log_high_watermark(log), 5);
    assert_int_equal(partition_log_last_stable_offset(log), 5);

    assert_int_equal(partition_log_update_high_watermark(log, 9), 9);
    assert_int_equal(partition_log_last_stable_offset(log), 5);         /* the open transaction */
    assert_int_equal(partition_log_update_high_watermark(log, 7), 9);   /* never backward */
    assert_int_equal(partition_log_update_high_watermark(log, 50), 10); /* at most the end */

    /* Truncation is the one way back. */
    assert_int_equal(partition_log_truncate_to(log, 8), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_high_watermark(log), 8);
    produce(log, -1, -1, -1, 2, false, 0);
    assert_int_equal(partition_log_high_watermark(log), 8);

    /* Never below the log start. */
    assert_int_equal(partition_log_delete_records_before(log, 9), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_high_watermark(log), 9);

    partition_log_set_high_watermark_tracks_end(log, true);
    assert_int_equal(partition_log_high_watermark(log), 10);
}

/* What a coordinator waits on after writing its state or a marker: the
 * high watermark reaching its records, unless a truncation to another
 * leader's log cut them (a later epoch then fills those offsets, and the
 * high watermark may pass them without them being there). */
static void test_wait_replicated(void **state)
{
    struct pair *p = *state;
    struct partition_log *log = p->follower->log;
    produce(log, -1, -1, -1, 5, false, 0); /* 0..4 at epoch 0 */
    /* Led alone, the high watermark is the log end: nothing to wait for. */
    assert_int_equal(partition_log_wait_replicated(log, 0, 5, 0), KAFKA_ERR_NONE);

    partition_log_set_high_watermark_tracks_end(log, false);
    produce(log, -1, -1, -1, 3, false, 1); /* 5..7 at epoch 1, not replicated yet */
    assert_int_equal(partition_log_wait_replicated(log, 1, 8, 50), KAFKA_ERR_REQUEST_TIMED_OUT);
    partition_log_update_high_watermark(log, 6);
    assert_int_equal(partition_log_wait_replicated(log, 1, 8, 50), KAFKA_ERR_REQUEST_TIMED_OUT);
    partition_log_update_high_watermark(log, 8);
    assert_int_equal(partition_log_wait_replicated(log, 1, 8, 50), KAFKA_ERR_NONE);

    produce(log, -1, -1, -1, 2, false, 1); /* 8..9 at epoch 1 */
    /* Another leader's log wins: cut to 8, then its epoch 2 fills 8..11
     * and its high watermark passes 10. */
    assert_int_equal(partition_log_truncate_to(log, 8), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_wait_replicated(log, 1, 10, 50), KAFKA_ERR_NOT_LEADER_OR_FOLLOWER);
    produce(log, -1, -1, -1, 4, false, 2);
    partition_log_update_high_watermark(log, 12);
    assert_int_equal(partition_log_wait_replicated(log, 1, 10, 50), KAFKA_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(partition_log_wait_replicated(log, 2, 12, 50), KAFKA_ERR_NONE);
    /* A log without epochs only waits for the high watermark. */
    assert_int_equal(partition_log_wait_replicated(log, -1, 12, 0), KAFKA_ERR_NONE);
}

/* A follower behind the leader's log start drops its log and starts an
 * empty one there (segments, epochs, producers gone), then copies on from
 * it, and the new start survives reopen. */
static void test_follower_truncates_fully_and_starts_at(void **state)
{
    struct pair *p = *state;
    struct partition_log *leader = p->leader->log, *follower = p->follower->log;
    for (int i = 0; i < 4; i++)
        produce(leader, 100, 0, i * 3, 3, false, 1); /* 0..11 */
    replicate(leader, follower);
    assert_int_equal(partition_log_end_offset(follower), 12);
    assert_true(partition_log_producer_count(follower) > 0);
    for (int i = 0; i < 4; i++)
        produce(leader, -1, -1, -1, 3, false, 2); /* 12..23 */
    assert_int_equal(partition_log_delete_records_before(leader, 18), KAFKA_ERR_NONE);

    assert_int_equal(partition_log_truncate_fully_and_start_at(follower, -1), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_truncate_fully_and_start_at(follower, 18), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_start_offset(follower), 18);
    assert_int_equal(partition_log_end_offset(follower), 18);
    assert_int_equal(partition_log_high_watermark(follower), 18);
    assert_int_equal(partition_log_latest_epoch(follower), -1);
    assert_int_equal(partition_log_producer_count(follower), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/%020d.log", p->follower->dir, 0);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/%020d.log", p->follower->dir, 18);
    assert_int_equal(access(path, F_OK), 0);

    replicate(leader, follower);
    assert_int_equal(partition_log_end_offset(follower), 24);
    size_t la, lb;
    uint8_t *a = read_all(leader, 18, &la);
    uint8_t *b = read_all(follower, 18, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    assert_int_equal(partition_log_latest_epoch(follower), 2);

    reopen(p->follower, false);
    assert_int_equal(partition_log_start_offset(p->follower->log), 18);
    assert_int_equal(partition_log_end_offset(p->follower->log), 24);
    assert_int_equal(partition_log_latest_epoch(p->follower->log), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_follower_copy_is_identical, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_follower_copy_in_one_append, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_follower_survives_reopen_and_recovery, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_follower_refuses_offsets_that_do_not_follow, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_follower_takes_markers_the_client_path_refuses, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_high_watermark, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_wait_replicated, pair_setup, pair_teardown),
        cmocka_unit_test_setup_teardown(test_follower_truncates_fully_and_starts_at, pair_setup, pair_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
