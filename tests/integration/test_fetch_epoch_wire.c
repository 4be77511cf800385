/* Fetch's current_leader_epoch (v9+, KIP-320), byte by byte: newer clients
 * (@platformatic/kafka, the Java client) send the leader epoch from their
 * metadata, and a broker that knows another epoch says so per partition
 * (UNKNOWN_LEADER_EPOCH when the client is ahead) instead of serving the
 * records, so the client refreshes its metadata. -1 and requests before v9
 * are not checked. An incremental fetch session keeps the epoch the client
 * last gave for a partition. librdkafka 2.0.2 sends -1, hence raw requests. */
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

#define API_FETCH 1
#define ERR_UNKNOWN_LEADER_EPOCH 75
#define TOPIC "epoch-wire"
#define RECORDS 5

/* Owned by the test's main thread. */
struct wire_state {
    struct test_broker broker;
    int fd;
    int32_t correlation;
    int passed;
};

/* One partition of a Fetch answer. */
struct fetch_answer {
    int16_t error_code;
    int32_t session_id;
    int partitions; /* in the answer */
    int16_t partition_error;
    int64_t high_watermark;
    int64_t records_bytes; /* -1: null */
};

static void put_compact_array_len(struct raw_writer *w, int n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
}

/* Sends Fetch v12 (or v8) for partition 0 of TOPIC with leader_epoch,
 * or for no partition when with_partition is false (an incremental fetch
 * leaning on its session), and parses the answer to its last byte. */
static void fetch(struct wire_state *st, int16_t version, int32_t session_id, int32_t session_epoch,
                  bool with_partition, int32_t leader_epoch, struct fetch_answer *out)
{
    bool flexible = version >= 12;
    int32_t correlation = ++st->correlation;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, API_FETCH, version, flexible, correlation, "cairn-it");
    raw_put_i32(&w, -1);      /* replica_id */
    raw_put_i32(&w, 0);       /* max_wait_ms */
    raw_put_i32(&w, 1);       /* min_bytes */
    raw_put_i32(&w, 1 << 20); /* max_bytes */
    raw_put_i8(&w, 0);        /* isolation_level */
    raw_put_i32(&w, session_id);
    raw_put_i32(&w, session_epoch);
    int topics = with_partition ? 1 : 0;
    if (flexible)
        put_compact_array_len(&w, topics);
    else
        raw_put_i32(&w, topics);
    if (with_partition) {
        if (flexible) {
            raw_put_compact_string(&w, TOPIC);
            put_compact_array_len(&w, 1);
        } else {
            raw_put_string(&w, TOPIC);
            raw_put_i32(&w, 1);
        }
        raw_put_i32(&w, 0); /* partition */
        if (version >= 9)
            raw_put_i32(&w, leader_epoch);
        raw_put_i64(&w, 0); /* fetch_offset */
        if (version >= 12)
            raw_put_i32(&w, -1);  /* last_fetched_epoch */
        raw_put_i64(&w, -1);      /* log_start_offset */
        raw_put_i32(&w, 1 << 20); /* partition_max_bytes */
        if (flexible) {
            raw_put_uvarint(&w, 0);
            raw_put_uvarint(&w, 0);
        }
    }
    if (flexible) {
        put_compact_array_len(&w, 0);   /* forgotten topics */
        raw_put_compact_string(&w, ""); /* rack_id */
        raw_put_uvarint(&w, 0);
    } else {
        raw_put_i32(&w, 0);
    }
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(st->fd, w.data, w.len), 0);
    raw_writer_free(&w);

    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(st->fd, 10000, 1 << 22, &frame, &len);
    if (rc != 0)
        fail_msg("Fetch v%d: no answer (rc %d)", version, rc);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    int32_t got_correlation = raw_get_i32(&r);
    if (flexible)
        raw_skip_tagged_fields(&r);
    memset(out, 0, sizeof *out);
    out->high_watermark = -2;
    raw_get_i32(&r); /* throttle */
    out->error_code = raw_get_i16(&r);
    out->session_id = raw_get_i32(&r);
    int64_t n_topics = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    char name[256];
    for (int64_t t = 0; t < n_topics && !r.overflow; t++) {
        if (flexible)
            raw_get_compact_string(&r, name, sizeof name);
        else
            raw_skip_string(&r);
        int64_t n_parts = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
        for (int64_t p = 0; p < n_parts && !r.overflow; p++) {
            out->partitions++;
            raw_get_i32(&r); /* partition_index */
            out->partition_error = raw_get_i16(&r);
            out->high_watermark = raw_get_i64(&r);
            raw_get_i64(&r); /* last_stable_offset */
            raw_get_i64(&r); /* log_start_offset */
            int64_t aborted = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
            for (int64_t a = 0; a < aborted && !r.overflow; a++) {
                raw_skip(&r, 16);
                if (flexible)
                    raw_skip_tagged_fields(&r);
            }
            if (version >= 11)
                raw_get_i32(&r); /* preferred_read_replica */
            int64_t bytes = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
            out->records_bytes = bytes;
            if (bytes > 0)
                raw_skip(&r, (size_t)bytes);
            if (flexible)
                raw_skip_tagged_fields(&r);
        }
        if (flexible)
            raw_skip_tagged_fields(&r);
    }
    if (flexible)
        raw_skip_tagged_fields(&r);
    bool overflow = r.overflow;
    size_t left = r.len - r.pos;
    free(frame);
    assert_int_equal(got_correlation, correlation);
    if (overflow)
        fail_msg("Fetch v%d: answer shorter than its layout", version);
    if (left != 0)
        fail_msg("Fetch v%d: %zu bytes after the answer", version, left);
    assert_int_equal(out->error_code, 0);
}

static void expect_records(const struct fetch_answer *a)
{
    assert_int_equal(a->partitions, 1);
    assert_int_equal(a->partition_error, 0);
    assert_int_equal(a->high_watermark, RECORDS);
    assert_true(a->records_bytes > 0);
}

static void expect_unknown_epoch(const struct fetch_answer *a)
{
    assert_int_equal(a->partitions, 1);
    assert_int_equal(a->partition_error, ERR_UNKNOWN_LEADER_EPOCH);
    assert_int_equal(a->high_watermark, -1);
    assert_true(a->records_bytes <= 0);
}

static void test_epoch_checked_from_v9(void **state)
{
    struct wire_state *st = *state;
    struct fetch_answer a;
    fetch(st, 12, 0, -1, true, 0, &a); /* the topic's first epoch */
    expect_records(&a);
    fetch(st, 12, 0, -1, true, -1, &a); /* not given: not checked */
    expect_records(&a);
    fetch(st, 12, 0, -1, true, 1, &a); /* ahead of the broker */
    expect_unknown_epoch(&a);
    fetch(st, 8, 0, -1, true, 1, &a); /* v8 carries no epoch */
    expect_records(&a);
    st->passed++;
}

static void test_session_keeps_the_epoch(void **state)
{
    struct wire_state *st = *state;
    struct fetch_answer a;
    /* A full fetch opening a session, with an epoch ahead of the broker. */
    fetch(st, 12, 0, 0, true, 1, &a);
    expect_unknown_epoch(&a);
    assert_true(a.session_id > 0);
    int32_t session = a.session_id;
    /* An incremental fetch naming nothing: the session still has epoch 1. */
    fetch(st, 12, session, 1, false, -1, &a);
    assert_int_equal(a.session_id, session);
    expect_unknown_epoch(&a);
    /* The client corrects the epoch in the session. */
    fetch(st, 12, session, 2, true, 0, &a);
    expect_records(&a);
    st->passed++;
}

static int wire_setup(void **state)
{
    static struct wire_state st;
    memset(&st, 0, sizeof st);
    broker_start(&st.broker, NULL);
    rk_create_topic(broker_bootstrap(&st.broker), TOPIC, 1, NULL);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st.broker), NULL);
    for (int i = 0; i < RECORDS; i++)
        assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, "k", 1, "value", 5, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
    st.fd = raw_connect(broker_port(&st.broker), 10000);
    assert_true(st.fd >= 0);
    *state = &st;
    return 0;
}

static int wire_teardown(void **state)
{
    struct wire_state *st = *state;
    close(st->fd);
    if (st->passed == 2)
        broker_mark_passed(&st->broker);
    broker_stop(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epoch_checked_from_v9),
        cmocka_unit_test(test_session_keeps_the_epoch),
    };
    return cmocka_run_group_tests(tests, wire_setup, wire_teardown);
}
