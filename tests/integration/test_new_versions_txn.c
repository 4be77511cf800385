/* One transaction driven by raw requests at the newest versions Cairn
 * serves (InitProducerId v5, AddPartitionsToTxn v5, AddOffsetsToTxn v4,
 * TxnOffsetCommit v4, EndTxn v4, found through FindCoordinator v5): it
 * commits, and a read_committed Fetch v17 and a require_stable OffsetFetch
 * v9 see its records and offset only after the commit. Transaction
 * verification (KIP-890 part 1): a transactional Produce for a partition no
 * coordinator added to the producer's transaction is refused, writes
 * nothing, and leaves the last stable offset free to advance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR_NONE 0
#define ERR_INVALID_TXN_STATE 48
#define ERR_INVALID_PRODUCER_ID_MAPPING 49
#define ERR_UNSTABLE_OFFSET_COMMIT 88

#define TXN_TOPIC "nv-txn-t"
#define VERIFY_TOPIC "nv-verify-t"

/* Owned by the test's main thread. */
/* One request whose answer is throttle time + error code (AddOffsetsToTxn,
 * EndTxn): returns the error. */
static int16_t error_only_answer(struct raw_session *s, struct raw_writer *w)
{
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, w, &r, true);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return err;
}

static void init_producer_id_v5(struct raw_session *s, const char *txn_id, int64_t *pid, int16_t *epoch)
{
    int16_t err = -1;
    long long deadline = harness_now_ms() + 15000;
    do {
        struct raw_writer w;
        raw_session_begin(s, &w, 22, 5);
        raw_put_compact_string(&w, txn_id);
        raw_put_i32(&w, 60000);
        raw_put_i64(&w, -1);
        raw_put_i16(&w, -1);
        raw_put_uvarint(&w, 0);
        struct raw_reader r;
        uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
        raw_get_i32(&r);
        err = raw_get_i16(&r);
        *pid = raw_get_i64(&r);
        *epoch = raw_get_i16(&r);
        raw_skip_tagged_fields(&r);
        raw_session_finish_read(&r, frame);
        if (err != ERR_NONE)
            usleep(200 * 1000); /* the coordinator may still be loading */
    } while (err != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(err, ERR_NONE);
    assert_true(*pid >= 0 && *epoch >= 0);
}

static int16_t add_partitions_v5(struct raw_session *s, const char *txn_id, int64_t pid, int16_t epoch)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 24, 5);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, 0); /* not verify-only: add */
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TXN_TOPIC);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char text[64];
    raw_get_compact_string(&r, text, sizeof text);
    assert_string_equal(text, txn_id);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, text, sizeof text);
    assert_string_equal(text, TXN_TOPIC);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return err;
}

static int16_t txn_offset_commit_v4(struct raw_session *s, const char *txn_id, const char *group, int64_t pid,
                                    int16_t epoch, int64_t offset)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 28, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_compact_string(&w, group);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, "");
    raw_put_compact_string(&w, NULL);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TXN_TOPIC);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, offset);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, NULL);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    return raw_session_commit_roundtrip(s, &w, TXN_TOPIC);
}

/* Waits until node 1 answers as txn_id's coordinator. */
static void wait_coordinator(struct raw_session *s, const char *txn_id)
{
    struct raw_coordinator_answer c[2];
    long long deadline = harness_now_ms() + 15000;
    do {
        raw_find_coordinator_v5(s, 1, txn_id, "nv-other-txn", c);
        if (c[0].error != ERR_NONE)
            usleep(200 * 1000);
    } while (c[0].error != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(c[0].error, ERR_NONE);
    assert_int_equal(c[0].node_id, 1);
}

/* Issue 20: one Produce with an invented producer id used to open a
 * transaction no coordinator knew, and the LSO stopped for good. */
static void test_unverified_transactional_produce_refused(void **state)
{
    struct raw_broker_fixture *st = *state;
    uint8_t id[16];
    raw_create_topic_v7(&st->session, VERIFY_TOPIC, 1, id);
    wait_coordinator(&st->session, "nv-nobody");
    /* A transactional id the coordinator never saw. */
    assert_int_equal(raw_produce_v7(&st->session, VERIFY_TOPIC, "nv-nobody", 987654321, 0, 3),
                     ERR_INVALID_PRODUCER_ID_MAPPING);
    /* A known producer whose transaction does not hold the partition
     * (Produce v7 predates TRANSACTION_ABORTABLE). */
    int64_t pid;
    int16_t epoch;
    wait_coordinator(&st->session, "nv-verify");
    init_producer_id_v5(&st->session, "nv-verify", &pid, &epoch);
    assert_int_equal(raw_produce_v7(&st->session, VERIFY_TOPIC, "nv-verify", pid, epoch, 3), ERR_INVALID_TXN_STATE);

    /* Nothing was written; plain records after them are stable at once. */
    assert_int_equal(raw_produce_v7(&st->session, VERIFY_TOPIC, NULL, -1, -1, 2), ERR_NONE);
    struct raw_fetch_answer f;
    raw_fetch_v17(&st->session, id, 1, false, &f);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.high_watermark, 2);
    assert_int_equal(f.last_stable_offset, 2);
    assert_int_equal(f.data_records, 2);
}

static void test_transaction_at_new_versions(void **state)
{
    struct raw_broker_fixture *st = *state;
    const char *txn_id = "nv-txn";
    const char *group = "nv-txn-group";
    wait_coordinator(&st->session, txn_id);
    long long deadline;

    int64_t pid;
    int16_t epoch;
    init_producer_id_v5(&st->session, txn_id, &pid, &epoch);
    assert_int_equal(add_partitions_v5(&st->session, txn_id, pid, epoch), ERR_NONE);
    assert_int_equal(raw_produce_v7(&st->session, TXN_TOPIC, txn_id, pid, epoch, 4), ERR_NONE);

    struct raw_writer w;
    raw_session_begin(&st->session, &w, 25, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_compact_string(&w, group);
    raw_put_uvarint(&w, 0);
    assert_int_equal(error_only_answer(&st->session, &w), ERR_NONE);
    assert_int_equal(txn_offset_commit_v4(&st->session, txn_id, group, pid, epoch, 4), ERR_NONE);

    /* Open transaction: read_committed sees none of it, stable offsets wait. */
    struct raw_fetch_answer f;
    raw_fetch_v17(&st->session, st->topic_id, 1, false, &f);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.data_records, 0);
    assert_int_equal(f.last_stable_offset, 0);
    struct raw_fetched_offset o;
    raw_offset_fetch_v9(&st->session, group, NULL, -1, TXN_TOPIC, true, &o);
    assert_int_equal(o.error, ERR_UNSTABLE_OFFSET_COMMIT);

    raw_session_begin(&st->session, &w, 26, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, 1); /* commit */
    raw_put_uvarint(&w, 0);
    assert_int_equal(error_only_answer(&st->session, &w), ERR_NONE);

    /* The markers follow the EndTxn answer. */
    deadline = harness_now_ms() + 15000;
    do {
        raw_fetch_v17(&st->session, st->topic_id, 1, false, &f);
        if (f.data_records == 0)
            usleep(100 * 1000);
    } while (f.data_records == 0 && harness_now_ms() < deadline);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.data_records, 4);
    assert_int_equal(f.control_batches, 1);
    assert_int_equal(f.last_stable_offset, 5);
    do {
        raw_offset_fetch_v9(&st->session, group, NULL, -1, TXN_TOPIC, true, &o);
        if (o.error != ERR_NONE)
            usleep(100 * 1000);
    } while (o.error != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(o.error, ERR_NONE);
    assert_int_equal(o.offset, 4);
    /* A clean exit (status 0) also catches sanitizer reports at shutdown. */
    broker_stop(&st->broker);
    broker_mark_passed(&st->broker);
}

static int nv_setup(void **state)
{
    static struct raw_broker_fixture st;
    *state = &st;
    if (raw_broker_fixture_start(&st, TXN_TOPIC) != 0)
        return -1;
    return 0;
}

static int nv_teardown(void **state)
{
    raw_broker_fixture_stop(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unverified_transactional_produce_refused),
        cmocka_unit_test(test_transaction_at_new_versions),
    };
    return cmocka_run_group_tests(tests, nv_setup, nv_teardown);
}
