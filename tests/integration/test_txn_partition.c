/* Transactions on the partition side against a real cairnd, driven with raw
 * requests (the coordinator is not involved: InitProducerId without a
 * transactional id hands out the producer id, WriteTxnMarkers ends the
 * transactions, and transaction.partition.verification.enable is off so the
 * leader does not ask a coordinator):
 *  - an open transaction holds the last stable offset: read_committed Fetch
 *    and ListOffsets stop there, read_uncommitted sees the records;
 *  - COMMIT makes them visible, ABORT yields an aborted_transactions entry,
 *    a retried marker writes nothing; DescribeProducers shows the open
 *    transaction;
 *  - a read_committed Fetch parked for min_bytes wakes on the marker;
 *  - the state survives kill -9;
 *  - a librdkafka consumer with isolation.level=read_committed (no group,
 *    partition-level consumer) delivers exactly the committed records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOPIC "txn-part"
#define API_PRODUCE 0
#define API_FETCH 1
#define API_LIST_OFFSETS 2
#define API_INIT_PRODUCER_ID 22
#define API_WRITE_TXN_MARKERS 27
#define API_DESCRIBE_PRODUCERS 61
#define ERR_NONE 0
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20

static int32_t next_correlation = 1;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint8_t *recv_answer(int fd, bool flexible_response, struct raw_reader *r)
{
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 15000, 16 << 20, &frame, &len);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout");
    raw_reader_init(r, frame, len);
    (void)raw_get_i32(r);
    if (flexible_response)
        raw_skip_tagged_fields(r);
    return frame;
}

static uint8_t *exchange(int port, struct raw_writer *w, bool flexible_response, struct raw_reader *r)
{
    int fd = raw_connect(port, 15000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    uint8_t *frame = recv_answer(fd, flexible_response, r);
    close(fd);
    return frame;
}

static void init_producer_id(int port, int64_t *pid, int16_t *epoch)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_INIT_PRODUCER_ID, 1, next_correlation++, "txn-it");
    raw_put_string(&w, NULL);
    raw_put_i32(&w, 60000);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    (void)raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    *pid = raw_get_i64(&r);
    *epoch = raw_get_i16(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    assert_int_equal(error, ERR_NONE);
    assert_true(*pid >= 0);
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* Produce v7 of one transactional batch of `count` records "pid/seq". */
static int16_t produce_txn(int port, int64_t pid, int16_t epoch, int32_t seq, int count, int64_t *base)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record recs[8];
    char values[8][48];
    assert_true(count <= 8);
    for (int i = 0; i < count; i++) {
        snprintf(values[i], sizeof values[i], "%" PRId64 "/%d", pid, seq + i);
        recs[i] = (struct raw_record){NULL, values[i]};
    }
    size_t start = raw_build_record_batch(&batch, 1700000000000LL, recs, count);
    uint8_t *b = batch.data + start;
    put_be(b + 21, ATTR_TRANSACTIONAL, 2);
    put_be(b + 43, (uint64_t)pid, 8);
    put_be(b + 51, (uint64_t)(uint16_t)epoch, 2);
    put_be(b + 53, (uint64_t)(uint32_t)seq, 4);
    put_be(b + 17, raw_crc32c(b + 21, batch.len - start - 21), 4);

    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_PRODUCE, 7, next_correlation++, "txn-it");
    raw_put_string(&w, "some-txn-id");
    raw_put_i16(&w, -1);
    raw_put_i32(&w, 10000);
    raw_put_i32(&w, 1);
    raw_put_string(&w, TOPIC);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, (int32_t)batch.len);
    raw_put_bytes(&w, batch.data, batch.len);
    raw_frame_finish(&w);
    raw_writer_free(&batch);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    int32_t topics = raw_get_i32(&r);
    raw_skip_string(&r);
    int32_t partitions = raw_get_i32(&r);
    (void)raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    *base = raw_get_i64(&r);
    bool ok = !r.overflow && topics == 1 && partitions == 1;
    free(frame);
    assert_true(ok);
    return error;
}

/* WriteTxnMarkers (v0, or v1 with flexible encoding) for TOPIC[0];
 * returns the partition's error. */
static int16_t write_marker_v(int port, int16_t version, int64_t pid, int16_t epoch, bool commit)
{
    bool flexible = version >= 1;
    struct raw_writer w;
    raw_writer_init(&w);
    if (flexible) {
        raw_frame_begin_flexible(&w, API_WRITE_TXN_MARKERS, version, next_correlation++, "txn-it");
        raw_put_uvarint(&w, 2);
    } else {
        raw_frame_begin(&w, API_WRITE_TXN_MARKERS, version, next_correlation++, "txn-it");
        raw_put_i32(&w, 1);
    }
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, commit ? 1 : 0);
    if (flexible) {
        raw_put_uvarint(&w, 2);
        raw_put_compact_string(&w, TOPIC);
        raw_put_uvarint(&w, 2);
        raw_put_i32(&w, 0);
        raw_put_uvarint(&w, 0);
    } else {
        raw_put_i32(&w, 1);
        raw_put_string(&w, TOPIC);
        raw_put_i32(&w, 1);
        raw_put_i32(&w, 0);
    }
    raw_put_i32(&w, 3); /* coordinator epoch */
    if (flexible) {
        raw_put_uvarint(&w, 0);
        raw_put_uvarint(&w, 0);
    }
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, flexible, &r);
    raw_writer_free(&w);
    int64_t markers, topics, partitions;
    char name[64] = "";
    markers = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    int64_t answered_pid = raw_get_i64(&r);
    topics = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    if (flexible)
        raw_get_compact_string(&r, name, sizeof name);
    else
        raw_skip_string(&r);
    partitions = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    int32_t partition = raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    bool ok = !r.overflow && markers == 1 && answered_pid == pid && topics == 1 && partitions == 1 && partition == 0 &&
              (!flexible || strcmp(name, TOPIC) == 0);
    free(frame);
    assert_true(ok);
    return error;
}

static int16_t write_marker(int port, int64_t pid, int16_t epoch, bool commit)
{
    return write_marker_v(port, 0, pid, epoch, commit);
}

/* ListOffsets v2 latest for TOPIC[0]. */
static int64_t list_latest(int port, bool read_committed)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_LIST_OFFSETS, 2, next_correlation++, "txn-it");
    raw_put_i32(&w, -1);
    raw_put_i8(&w, read_committed ? 1 : 0);
    raw_put_i32(&w, 1);
    raw_put_string(&w, TOPIC);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, -1);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    (void)raw_get_i32(&r);
    (void)raw_get_i32(&r);
    raw_skip_string(&r);
    (void)raw_get_i32(&r);
    (void)raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    (void)raw_get_i64(&r);
    int64_t offset = raw_get_i64(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    assert_int_equal(error, ERR_NONE);
    return offset;
}

struct fetch_answer {
    int16_t error;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int32_t aborted_count; /* -1: null */
    int64_t aborted_pid[8];
    int64_t aborted_first[8];
    int data_records; /* records in non-control batches */
    int control_batches;
    int64_t next_offset; /* after the last batch returned */
};

static void fetch_request(struct raw_writer *w, int64_t offset, bool read_committed, int32_t max_wait,
                          int32_t min_bytes)
{
    raw_writer_init(w);
    raw_frame_begin(w, API_FETCH, 4, next_correlation++, "txn-it");
    raw_put_i32(w, -1);
    raw_put_i32(w, max_wait);
    raw_put_i32(w, min_bytes);
    raw_put_i32(w, 1 << 20);
    raw_put_i8(w, read_committed ? 1 : 0);
    raw_put_i32(w, 1);
    raw_put_string(w, TOPIC);
    raw_put_i32(w, 1);
    raw_put_i32(w, 0);
    raw_put_i64(w, offset);
    raw_put_i32(w, 1 << 20);
    raw_frame_finish(w);
}

static struct fetch_answer parse_fetch(struct raw_reader *r)
{
    struct fetch_answer a;
    memset(&a, 0, sizeof a);
    (void)raw_get_i32(r); /* throttle */
    int32_t topics = raw_get_i32(r);
    raw_skip_string(r);
    int32_t partitions = raw_get_i32(r);
    (void)raw_get_i32(r);
    a.error = raw_get_i16(r);
    a.high_watermark = raw_get_i64(r);
    a.last_stable_offset = raw_get_i64(r);
    a.aborted_count = raw_get_i32(r);
    for (int32_t i = 0; i < a.aborted_count && i < 64; i++) {
        int64_t pid = raw_get_i64(r), first = raw_get_i64(r);
        if (i < 8) {
            a.aborted_pid[i] = pid;
            a.aborted_first[i] = first;
        }
    }
    int32_t len = raw_get_i32(r);
    assert_false(r->overflow);
    assert_int_equal(topics, 1);
    assert_int_equal(partitions, 1);
    const uint8_t *p = r->data + r->pos;
    assert_true(len <= 0 || (size_t)len <= r->len - r->pos);
    a.next_offset = -1;
    for (int32_t pos = 0; len > 0 && pos + 61 <= len;) {
        const uint8_t *b = p + pos;
        int64_t base = 0;
        for (int i = 0; i < 8; i++)
            base = base << 8 | b[i];
        int32_t blen = (int32_t)((uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11]);
        int16_t attrs = (int16_t)(b[21] << 8 | b[22]);
        int32_t delta = (int32_t)((uint32_t)b[23] << 24 | (uint32_t)b[24] << 16 | (uint32_t)b[25] << 8 | b[26]);
        int32_t count = (int32_t)((uint32_t)b[57] << 24 | (uint32_t)b[58] << 16 | (uint32_t)b[59] << 8 | b[60]);
        if (blen < 49 || pos + 12 + blen > len)
            break;
        if (attrs & ATTR_CONTROL)
            a.control_batches++;
        else
            a.data_records += count;
        a.next_offset = base + delta + 1;
        pos += 12 + blen;
    }
    return a;
}

static struct fetch_answer fetch(int port, int64_t offset, bool read_committed)
{
    struct raw_writer w;
    fetch_request(&w, offset, read_committed, 0, 0);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    struct fetch_answer a = parse_fetch(&r);
    free(frame);
    assert_int_equal(a.error, ERR_NONE);
    return a;
}

/* DescribeProducers v0 (flexible) for TOPIC[0]: the open txn start of pid. */
static int64_t describe_txn_start(int port, int64_t pid, int *producers)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_DESCRIBE_PRODUCERS, 0, next_correlation++, "txn-it");
    raw_put_uvarint(&w, 2);
    raw_put_compact_string(&w, TOPIC);
    raw_put_uvarint(&w, 2);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, true, &r);
    raw_writer_free(&w);
    (void)raw_get_i32(&r);
    uint64_t topics = raw_get_uvarint(&r);
    char name[64];
    raw_get_compact_string(&r, name, sizeof name);
    uint64_t partitions = raw_get_uvarint(&r);
    (void)raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    char msg[128];
    raw_get_compact_string(&r, msg, sizeof msg);
    uint64_t n = raw_get_uvarint(&r);
    int64_t start = -2;
    *producers = n > 0 ? (int)n - 1 : 0;
    for (uint64_t i = 0; i + 1 < n && !r.overflow; i++) {
        int64_t id = raw_get_i64(&r);
        (void)raw_get_i32(&r); /* epoch */
        (void)raw_get_i32(&r); /* last sequence */
        (void)raw_get_i64(&r); /* last timestamp */
        (void)raw_get_i32(&r); /* coordinator epoch */
        int64_t txn_start = raw_get_i64(&r);
        raw_skip_tagged_fields(&r);
        if (id == pid)
            start = txn_start;
    }
    bool ok = !r.overflow && topics == 2 && partitions == 2 && strcmp(name, TOPIC) == 0 && error == ERR_NONE;
    free(frame);
    assert_true(ok);
    return start;
}

/* Values a librdkafka consumer with the given isolation level delivers. */
static int consume_values(const char *bootstrap, const char *isolation, int want, char values[][48], int max)
{
    const char *conf[] = {"isolation.level", isolation, "fetch.wait.max.ms", "100", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    /* librdkafka's assign() insists on a group.id; the partition-level
     * consumer needs none and reads the same fetch responses. */
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
    if (rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING) != 0)
        fail_msg("consume_start: %s", rd_kafka_err2str(rd_kafka_last_error()));
    int n = 0;
    bool eof = false;
    long long deadline = now_ms() + 20000;
    while (now_ms() < deadline && !(eof && n >= want)) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            eof = true;
        } else if (m->err) {
            fprintf(stderr, "[consume] %s\n", rd_kafka_message_errstr(m));
        } else if (n < max) {
            snprintf(values[n], 48, "%.*s", (int)m->len, (const char *)m->payload);
            n++;
        } else {
            n++;
        }
        rd_kafka_message_destroy(m);
    }
    /* Anything beyond `want` would show up within a short extra wait. */
    long long extra = now_ms() + 500;
    while (now_ms() < extra) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 100);
        if (!m)
            continue;
        if (!m->err)
            n++;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return n;
}

static bool has_value(char values[][48], int n, const char *v)
{
    for (int i = 0; i < n; i++)
        if (strcmp(values[i], v) == 0)
            return true;
    return false;
}

static void test_txn_partition(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, (const char *const[]){"transaction.partition.verification.enable=false", NULL});
    int port = broker_port(b);
    rk_create_topic(broker_bootstrap(b), TOPIC, 1, NULL);
    int vfd = raw_connect(port, 15000);
    assert_true(vfd >= 0);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(vfd, 3, next_correlation++, &versions), 0);
    close(vfd);
    const struct raw_api_range *markers_range = raw_api_versions_find(&versions, API_WRITE_TXN_MARKERS);
    const struct raw_api_range *producers_range = raw_api_versions_find(&versions, API_DESCRIBE_PRODUCERS);
    assert_non_null(markers_range);
    assert_int_equal(markers_range->max_version, 1);
    assert_non_null(producers_range);
    assert_int_equal(producers_range->max_version, 0);

    int64_t a, c;
    int16_t ea, ec;
    init_producer_id(port, &a, &ea);
    init_producer_id(port, &c, &ec);
    assert_true(a != c);

    /* Transaction 1 of producer a: offsets 0-2, open. */
    int64_t base;
    assert_int_equal(produce_txn(port, a, ea, 0, 3, &base), ERR_NONE);
    assert_int_equal(base, 0);
    struct fetch_answer f = fetch(port, 0, true);
    assert_int_equal(f.high_watermark, 3);
    assert_int_equal(f.last_stable_offset, 0);
    assert_int_equal(f.data_records, 0);
    assert_int_equal(f.aborted_count, 0);
    f = fetch(port, 0, false);
    assert_int_equal(f.data_records, 3);
    assert_int_equal(f.last_stable_offset, 0);
    assert_int_equal(f.aborted_count, -1);
    assert_int_equal(list_latest(port, true), 0);
    assert_int_equal(list_latest(port, false), 3);
    int producers;
    assert_int_equal(describe_txn_start(port, a, &producers), 0);
    assert_int_equal(producers, 1);

    /* COMMIT: visible to read_committed; the marker is at 3. */
    assert_int_equal(write_marker(port, a, ea, true), ERR_NONE);
    f = fetch(port, 0, true);
    assert_int_equal(f.high_watermark, 4);
    assert_int_equal(f.last_stable_offset, 4);
    assert_int_equal(f.data_records, 3);
    assert_int_equal(f.control_batches, 1);
    assert_int_equal(f.aborted_count, 0);
    assert_int_equal(describe_txn_start(port, a, &producers), -1);

    /* Transaction 2 of a (4-5) is aborted (marker 6); c commits 7 (marker 8). */
    assert_int_equal(produce_txn(port, a, ea, 3, 2, &base), ERR_NONE);
    assert_int_equal(base, 4);
    assert_int_equal(produce_txn(port, c, ec, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 6);
    assert_int_equal(list_latest(port, true), 4);
    assert_int_equal(write_marker(port, a, ea, false), ERR_NONE);
    assert_int_equal(list_latest(port, true), 6);
    assert_int_equal(write_marker_v(port, 1, c, ec, true), ERR_NONE);
    assert_int_equal(list_latest(port, true), 9);
    /* A retried marker writes nothing. */
    assert_int_equal(write_marker(port, a, ea, false), ERR_NONE);
    assert_int_equal(list_latest(port, false), 9);

    f = fetch(port, 0, true);
    assert_int_equal(f.last_stable_offset, 9);
    assert_int_equal(f.data_records, 6);
    assert_int_equal(f.aborted_count, 1);
    assert_int_equal(f.aborted_pid[0], a);
    assert_int_equal(f.aborted_first[0], 4);
    f = fetch(port, 8, true);
    assert_int_equal(f.aborted_count, 0);

    assert_int_equal(produce_txn(port, c, ec, 1, 1, &base), ERR_NONE); /* 9, open */
    assert_int_equal(list_latest(port, true), 9);

    /* A read_committed fetch waiting for data wakes when the marker lands. */
    struct raw_writer w;
    fetch_request(&w, 9, true, 8000, 1);
    int fd = raw_connect(port, 15000);
    assert_true(fd >= 0);
    long long started = now_ms();
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    usleep(300 * 1000);
    assert_int_equal(write_marker(port, c, ec, true), ERR_NONE); /* marker 10 */
    struct raw_reader r;
    uint8_t *frame = recv_answer(fd, false, &r);
    long long waited = now_ms() - started;
    close(fd);
    f = parse_fetch(&r);
    free(frame);
    assert_int_equal(f.error, ERR_NONE);
    assert_true(waited < 6000);
    assert_int_equal(f.data_records, 1);
    assert_int_equal(f.last_stable_offset, 11);

    /* Leave one transaction open, then kill -9: state comes back. */
    assert_int_equal(produce_txn(port, a, ea, 5, 2, &base), ERR_NONE); /* 11-12, open */
    assert_int_equal(list_latest(port, true), 11);
    broker_kill9(b);
    broker_restart(b);
    port = broker_port(b);
    assert_int_equal(list_latest(port, true), 11);
    f = fetch(port, 0, true);
    assert_int_equal(f.aborted_count, 1);
    assert_int_equal(f.aborted_first[0], 4);
    assert_int_equal(write_marker(port, a, ea, false), ERR_NONE); /* marker 13 */
    assert_int_equal(list_latest(port, true), 14);
    f = fetch(port, 0, true);
    assert_int_equal(f.aborted_count, 2);
    assert_int_equal(f.aborted_first[1], 11);

    /* librdkafka read_committed: only committed records, no control records. */
    char values[32][48];
    int n = consume_values(broker_bootstrap(b), "read_committed", 5, values, 32);
    assert_int_equal(n, 5);
    char v[48];
    for (int s = 0; s < 3; s++) {
        snprintf(v, sizeof v, "%" PRId64 "/%d", a, s);
        assert_true(has_value(values, n, v));
    }
    snprintf(v, sizeof v, "%" PRId64 "/0", c);
    assert_true(has_value(values, n, v));
    snprintf(v, sizeof v, "%" PRId64 "/1", c);
    assert_true(has_value(values, n, v));
    snprintf(v, sizeof v, "%" PRId64 "/3", a);
    assert_false(has_value(values, n, v));
    /* read_uncommitted shows the aborted ones too (still no markers). */
    n = consume_values(broker_bootstrap(b), "read_uncommitted", 9, values, 32);
    assert_int_equal(n, 9);
    assert_true(has_value(values, n, v));

    broker_mark_passed(b);
}

static int setup(void **state)
{
    struct test_broker *b = calloc(1, sizeof *b);
    *state = b;
    return b ? 0 : -1;
}

static int teardown(void **state)
{
    struct test_broker *b = *state;
    broker_cleanup(b);
    free(b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_txn_partition, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
