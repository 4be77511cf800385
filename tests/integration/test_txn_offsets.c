/* TxnOffsetCommit on the wire, byte by byte: a producer id from
 * InitProducerId (idempotent: no transaction coordinator is needed for the
 * group side), transactional offsets through TxnOffsetCommit v3 (flexible)
 * and v0, then OffsetFetch v7 without and with require_stable. The offsets
 * stay pending (no marker ends the transaction here), also across a kill -9
 * and restart, and keep the group from DeleteGroups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API_OFFSET_FETCH 9
#define API_INIT_PRODUCER_ID 22
#define API_TXN_OFFSET_COMMIT 28
#define API_DELETE_GROUPS 42

#define ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define ERR_NON_EMPTY_GROUP 68
#define ERR_UNSTABLE_OFFSET_COMMIT 88

#define TOPIC "txo-t"
#define GROUP "txo-g"

/* Owned by the test's main thread. */
struct txo_state {
    struct test_broker broker;
    int32_t correlation;
};

static void put_compact_array_len(struct raw_writer *w, int n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
}

/* One request on a fresh connection; returns the frame (caller frees) with
 * r positioned after the response header. */
static uint8_t *roundtrip(struct txo_state *st, struct raw_writer *w, bool flexible_response, struct raw_reader *r)
{
    raw_frame_finish(w);
    int fd = raw_connect(broker_port(&st->broker), 10000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    raw_writer_free(w);
    uint8_t *frame;
    size_t len;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout");
    raw_reader_init(r, frame, len);
    assert_int_equal(raw_get_i32(r), st->correlation);
    if (flexible_response)
        raw_skip_tagged_fields(r);
    return frame;
}

/* InitProducerId v4 without a transactional id. */
static void init_producer_id(struct txo_state *st, int64_t *pid, int16_t *epoch)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_INIT_PRODUCER_ID, 4, ++st->correlation, "txo");
    raw_put_compact_string(&w, NULL);
    raw_put_i32(&w, 60000);
    raw_put_i64(&w, -1);
    raw_put_i16(&w, -1);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, true, &r);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_i16(&r), 0);
    *pid = raw_get_i64(&r);
    *epoch = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    assert_true(*pid >= 0);
    assert_true(*epoch >= 0);
}

struct txo_partition {
    int32_t partition;
    int64_t offset;
    int16_t error; /* out */
};

/* TxnOffsetCommit v3 for TOPIC (flexible, no member identity) or v0. */
static void txn_offset_commit(struct txo_state *st, int16_t version, const char *topic, int64_t pid, int16_t epoch,
                              struct txo_partition *parts, int n)
{
    bool flex = version >= 3;
    struct raw_writer w;
    raw_writer_init(&w);
    if (flex) {
        raw_frame_begin_flexible(&w, API_TXN_OFFSET_COMMIT, version, ++st->correlation, "txo");
        raw_put_compact_string(&w, "txo-tx");
        raw_put_compact_string(&w, GROUP);
    } else {
        raw_frame_begin(&w, API_TXN_OFFSET_COMMIT, version, ++st->correlation, "txo");
        raw_put_string(&w, "txo-tx");
        raw_put_string(&w, GROUP);
    }
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    if (flex) {
        raw_put_i32(&w, -1);              /* generation */
        raw_put_compact_string(&w, "");   /* member id */
        raw_put_compact_string(&w, NULL); /* group instance id */
        put_compact_array_len(&w, 1);
        raw_put_compact_string(&w, topic);
        put_compact_array_len(&w, n);
    } else {
        raw_put_i32(&w, 1);
        raw_put_string(&w, topic);
        raw_put_i32(&w, n);
    }
    for (int i = 0; i < n; i++) {
        raw_put_i32(&w, parts[i].partition);
        raw_put_i64(&w, parts[i].offset);
        if (flex) {
            raw_put_i32(&w, -1); /* leader epoch (v2+) */
            raw_put_compact_string(&w, "txo-meta");
            raw_put_uvarint(&w, 0);
        } else {
            raw_put_string(&w, "txo-meta");
        }
    }
    if (flex) {
        raw_put_uvarint(&w, 0); /* topic tags */
        raw_put_uvarint(&w, 0); /* request tags */
    }
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, flex, &r);
    raw_get_i32(&r); /* throttle */
    int topics = flex ? (int)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    assert_int_equal(topics, 1);
    char name[64];
    if (flex) {
        raw_get_compact_string(&r, name, sizeof name);
        assert_string_equal(name, topic);
    } else {
        raw_skip_string(&r);
    }
    int count = flex ? (int)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    assert_int_equal(count, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(raw_get_i32(&r), parts[i].partition);
        parts[i].error = raw_get_i16(&r);
        if (flex)
            raw_skip_tagged_fields(&r);
    }
    if (flex) {
        raw_skip_tagged_fields(&r);
        raw_skip_tagged_fields(&r);
    }
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
}

struct fetched {
    int64_t offset;
    int16_t error;
};

/* OffsetFetch v7 for partitions 0 and 1 of TOPIC. */
static void offset_fetch_v7(struct txo_state *st, bool require_stable, struct fetched out[2])
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_OFFSET_FETCH, 7, ++st->correlation, "txo");
    raw_put_compact_string(&w, GROUP);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TOPIC);
    put_compact_array_len(&w, 2);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, 1);
    raw_put_uvarint(&w, 0);
    raw_put_i8(&w, require_stable ? 1 : 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, true, &r);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64], meta[64];
    raw_get_compact_string(&r, name, sizeof name);
    assert_string_equal(name, TOPIC);
    assert_int_equal(raw_get_uvarint(&r), 3);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(raw_get_i32(&r), i);
        out[i].offset = raw_get_i64(&r);
        raw_get_i32(&r); /* leader epoch */
        raw_get_compact_string(&r, meta, sizeof meta);
        out[i].error = raw_get_i16(&r);
        raw_skip_tagged_fields(&r);
    }
    raw_skip_tagged_fields(&r);
    assert_int_equal(raw_get_i16(&r), 0); /* group-level error */
    raw_skip_tagged_fields(&r);
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
}

static int16_t delete_group(struct txo_state *st)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_DELETE_GROUPS, 2, ++st->correlation, "txo");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, GROUP);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, true, &r);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char gid[64];
    raw_get_compact_string(&r, gid, sizeof gid);
    assert_string_equal(gid, GROUP);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return err;
}

static void expect_pending(struct txo_state *st)
{
    struct fetched f[2];
    /* Not visible: no committed offset yet. */
    offset_fetch_v7(st, false, f);
    assert_int_equal(f[0].offset, -1);
    assert_int_equal(f[0].error, 0);
    assert_int_equal(f[1].offset, -1);
    assert_int_equal(f[1].error, 0);
    /* KIP-447: a stable read must wait for the transaction. */
    offset_fetch_v7(st, true, f);
    assert_int_equal(f[0].error, ERR_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(f[0].offset, -1);
    assert_int_equal(f[1].error, ERR_UNSTABLE_OFFSET_COMMIT);
}

static void test_txn_offsets_stay_pending(void **state)
{
    struct txo_state *st = *state;
    rk_create_topic(broker_bootstrap(&st->broker), TOPIC, 2, NULL);
    int64_t pid;
    int16_t epoch;
    init_producer_id(st, &pid, &epoch);

    struct txo_partition v3[2] = {{.partition = 0, .offset = 42}, {.partition = 9, .offset = 1}};
    txn_offset_commit(st, 3, TOPIC, pid, epoch, v3, 2);
    assert_int_equal(v3[0].error, 0);
    assert_int_equal(v3[1].error, ERR_UNKNOWN_TOPIC_OR_PARTITION);
    struct txo_partition v0[1] = {{.partition = 1, .offset = 7}};
    txn_offset_commit(st, 0, TOPIC, pid, epoch, v0, 1);
    assert_int_equal(v0[0].error, 0);
    struct txo_partition unknown[1] = {{.partition = 0, .offset = 1}};
    txn_offset_commit(st, 3, "txo-no-such-topic", pid, epoch, unknown, 1);
    assert_int_equal(unknown[0].error, ERR_UNKNOWN_TOPIC_OR_PARTITION);

    expect_pending(st);
    assert_int_equal(delete_group(st), ERR_NON_EMPTY_GROUP);

    /* Durable: the transactional batch is replayed as still pending. */
    broker_kill9(&st->broker);
    broker_restart(&st->broker);
    expect_pending(st);
    assert_int_equal(delete_group(st), ERR_NON_EMPTY_GROUP);
    broker_mark_passed(&st->broker);
}

static int txo_setup(void **state)
{
    static struct txo_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    broker_start(&st.broker, NULL);
    return 0;
}

static int txo_teardown(void **state)
{
    struct txo_state *st = *state;
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_txn_offsets_stay_pending),
    };
    return cmocka_run_group_tests(tests, txo_setup, txo_teardown);
}
