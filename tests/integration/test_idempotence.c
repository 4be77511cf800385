/* Idempotent producer against a real cairnd.
 * 1. Raw connection: InitProducerId, a batch with sequence 0 and its retry
 *    (same base offset, written once), a sequence gap, a stale epoch after a
 *    KIP-360 bump, a transactional id, and retries recognised after a clean
 *    stop and after kill -9.
 * 2. librdkafka with enable.idempotence=true producing 100k records while
 *    the broker is stopped with SIGTERM and later killed with kill -9:
 *    every acknowledged record is read back once, in order per partition. */
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
#include <unistd.h>

#define RAW_TOPIC "idem-raw"
#define LOAD_TOPIC "idem-load"
#define LOAD_PARTITIONS 3
#define LOAD_MESSAGES 100000L
#define LOAD_STOP_AT 30000L /* deliveries before SIGTERM */
#define LOAD_KILL_AT 60000L /* deliveries before kill -9 */

#define API_PRODUCE 0
#define API_INIT_PRODUCER_ID 22
#define ERR_NONE 0
#define ERR_NOT_COORDINATOR 16
#define ERR_OUT_OF_ORDER_SEQUENCE_NUMBER 45
#define ERR_INVALID_PRODUCER_EPOCH 47
#define ERR_PRODUCER_FENCED 90

static int32_t next_correlation = 1000;

/* Sends the frame and returns the response body after the correlation id
 * (header v0) or after it and the tagged fields (flexible). */
static uint8_t *exchange(int port, struct raw_writer *w, bool flexible_response, struct raw_reader *r)
{
    int fd = raw_connect(port, 10000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout");
    raw_reader_init(r, frame, len);
    (void)raw_get_i32(r);
    if (flexible_response)
        raw_skip_tagged_fields(r);
    return frame;
}

struct pid_answer {
    int16_t error;
    int64_t producer_id;
    int16_t epoch;
};

/* InitProducerId: v1 (non-flexible) when producer_id < 0 and no txn id,
 * otherwise v3 or v4 (flexible) with the given id and epoch. */
static struct pid_answer init_producer_id(int port, int16_t version, const char *txn_id,
                                          int64_t producer_id, int16_t epoch)
{
    struct raw_writer w;
    raw_writer_init(&w);
    bool flexible = version >= 2;
    if (flexible) {
        raw_frame_begin_flexible(&w, API_INIT_PRODUCER_ID, version, next_correlation++, "idem-raw");
        raw_put_compact_string(&w, txn_id);
    } else {
        raw_frame_begin(&w, API_INIT_PRODUCER_ID, version, next_correlation++, "idem-raw");
        raw_put_string(&w, txn_id);
    }
    raw_put_i32(&w, 60000);
    if (version >= 3) {
        raw_put_i64(&w, producer_id);
        raw_put_i16(&w, epoch);
    }
    if (flexible)
        raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, flexible, &r);
    raw_writer_free(&w);
    struct pid_answer a;
    (void)raw_get_i32(&r); /* throttle */
    a.error = raw_get_i16(&r);
    a.producer_id = raw_get_i64(&r);
    a.epoch = raw_get_i16(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    return a;
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* A batch of `count` records "pid/epoch/seq+i" with producer fields set. */
static void idem_batch(struct raw_writer *w, int64_t pid, int16_t epoch, int32_t seq, int count)
{
    struct raw_record recs[8];
    char values[8][48];
    assert_true(count <= 8);
    for (int i = 0; i < count; i++) {
        snprintf(values[i], sizeof values[i], "%" PRId64 "/%d/%d", pid, epoch, seq + i);
        recs[i] = (struct raw_record){NULL, values[i]};
    }
    size_t start = raw_build_record_batch(w, 1700000000000LL, recs, count);
    uint8_t *b = w->data + start;
    put_be(b + 43, (uint64_t)pid, 8);
    put_be(b + 51, (uint64_t)(uint16_t)epoch, 2);
    put_be(b + 53, (uint64_t)(uint32_t)seq, 4);
    put_be(b + 17, raw_crc32c(b + 21, w->len - start - 21), 4);
}

/* Produce v7 of one batch to RAW_TOPIC[0]; returns the error, *base the offset. */
static int16_t produce_batch(int port, int64_t pid, int16_t epoch, int32_t seq, int count,
                             int64_t *base)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    idem_batch(&batch, pid, epoch, seq, count);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_PRODUCE, 7, next_correlation++, "idem-raw");
    raw_put_string(&w, NULL);
    raw_put_i16(&w, -1);
    raw_put_i32(&w, 10000);
    raw_put_i32(&w, 1);
    raw_put_string(&w, RAW_TOPIC);
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

static void test_raw_duplicates_gaps_and_epochs(void **state)
{
    struct test_broker *b = *state;
    rk_create_topic(broker_bootstrap(b), RAW_TOPIC, 1, NULL);
    int port = broker_port(b);

    struct pid_answer a = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(a.error, ERR_NONE);
    assert_true(a.producer_id >= 0);
    assert_int_equal(a.epoch, 0);
    struct pid_answer other = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(other.error, ERR_NONE);
    assert_true(other.producer_id != a.producer_id);
    assert_int_equal(init_producer_id(port, 4, "txn-1", -1, -1).error, ERR_NOT_COORDINATOR);

    int64_t base = -1;
    int64_t pid = a.producer_id;
    assert_int_equal(produce_batch(port, pid, 0, 0, 3, &base), ERR_NONE);
    assert_int_equal(base, 0);
    /* The retry: same offset, nothing written. */
    assert_int_equal(produce_batch(port, pid, 0, 0, 3, &base), ERR_NONE);
    assert_int_equal(base, 0);
    assert_int_equal(produce_batch(port, pid, 0, 3, 2, &base), ERR_NONE);
    assert_int_equal(base, 3);
    assert_int_equal(produce_batch(port, pid, 0, 9, 1, &base), ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);

    /* KIP-360 bump: the current epoch gets +1; the old one is then fenced. */
    struct pid_answer bumped = init_producer_id(port, 4, NULL, pid, 0);
    assert_int_equal(bumped.error, ERR_NONE);
    assert_int_equal(bumped.producer_id, pid);
    assert_int_equal(bumped.epoch, 1);
    assert_int_equal(init_producer_id(port, 4, NULL, pid, 0).error, ERR_PRODUCER_FENCED);
    assert_int_equal(init_producer_id(port, 3, NULL, pid, 0).error, ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 0, 5, 1, &base), ERR_INVALID_PRODUCER_EPOCH);

    /* Retries are still recognised after a clean stop (snapshot) ... */
    broker_stop(b);
    broker_restart(b);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 1, 1, 2, &base), ERR_NONE);
    assert_int_equal(base, 6);
    /* ... and after kill -9 (rebuilt from the log after the snapshot). */
    broker_kill9(b);
    broker_restart(b);
    assert_int_equal(produce_batch(port, pid, 1, 1, 2, &base), ERR_NONE);
    assert_int_equal(base, 6);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 1, 4, 1, &base), ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(produce_batch(port, pid, 0, 5, 1, &base), ERR_INVALID_PRODUCER_EPOCH);

    /* Ids handed out before the restarts are never handed out again. */
    struct pid_answer fresh = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(fresh.error, ERR_NONE);
    assert_true(fresh.producer_id > pid && fresh.producer_id > other.producer_id);

    /* The log holds each record once: 3 + 2 + 1 + 2. */
    long want[1] = {8};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(b), RAW_TOPIC, 1, want, 30000, &set), 8);
    const char *expect[8] = {"0/0/0", "0/0/1", "0/0/2", "0/0/3", "0/0/4", "0/1/0", "0/1/1", "0/1/2"};
    for (size_t i = 0; i < set.count; i++) {
        char text[64];
        snprintf(text, sizeof text, "%" PRId64 "%s", pid, strchr(expect[i], '/'));
        assert_int_equal(set.records[i].offset, (int64_t)i);
        assert_int_equal(set.records[i].value_len, strlen(text));
        assert_memory_equal(set.records[i].value, text, strlen(text));
    }
    rk_record_set_free(&set);
    broker_mark_passed(b);
}

static long load_parse_seq(const rd_kafka_message_t *m)
{
    char text[32];
    size_t n = m->len < sizeof(text) - 1 ? m->len : sizeof(text) - 1;
    memcpy(text, m->payload, n);
    text[n] = '\0';
    long seq;
    return sscanf(text, "idem|%ld|", &seq) == 1 ? seq : -1;
}

struct load_check {
    long produced;
    int64_t *seen_at; /* offset where each seq was read, -1 if not */
    long last_seq[LOAD_PARTITIONS];
    char failure[256];
};

static bool load_collect(const rd_kafka_message_t *m, void *ctx)
{
    struct load_check *c = ctx;
    long s = load_parse_seq(m);
    int p = m->partition;
    if (s < 0 || s >= c->produced || s % LOAD_PARTITIONS != p)
        snprintf(c->failure, sizeof c->failure, "partition %d offset %" PRId64 ": foreign record",
                 p, m->offset);
    else if (c->seen_at[s] >= 0)
        snprintf(c->failure, sizeof c->failure, "seq %ld at offsets %" PRId64 " and %" PRId64, s,
                 c->seen_at[s], m->offset);
    else if (s <= c->last_seq[p])
        snprintf(c->failure, sizeof c->failure, "partition %d: seq %ld after %ld", p, s,
                 c->last_seq[p]);
    else {
        c->seen_at[s] = m->offset;
        c->last_seq[p] = s;
        return true;
    }
    return false;
}

/* SIGTERM + restart at LOAD_STOP_AT deliveries, kill -9 + restart at LOAD_KILL_AT. */
static void load_maybe_restart(struct test_broker *b, const struct rk_delivery_stats *stats, long seq,
                               bool *stopped, bool *killed)
{
    if (!*stopped && stats->delivered >= LOAD_STOP_AT) {
        fprintf(stderr, "[idem] SIGTERM after %ld delivered, %ld enqueued\n", stats->delivered, seq);
        broker_stop(b);
        broker_restart(b);
        *stopped = true;
    }
    if (!*killed && stats->delivered >= LOAD_KILL_AT) {
        fprintf(stderr, "[idem] kill -9 after %ld delivered, %ld enqueued\n", stats->delivered, seq);
        broker_kill9(b);
        broker_restart(b);
        *killed = true;
    }
}

static void test_librdkafka_idempotence_across_restarts(void **state)
{
    struct test_broker *b = *state;
    rk_create_topic(broker_bootstrap(b), LOAD_TOPIC, LOAD_PARTITIONS, NULL);
    const char *conf[] = {"enable.idempotence", "true", "linger.ms", "5",
                          "message.timeout.ms", "60000", "reconnect.backoff.ms", "50",
                          "reconnect.backoff.max.ms", "500", "batch.num.messages", "2000",
                          NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    struct rk_delivery_slot *slots = calloc(LOAD_MESSAGES, sizeof(*slots));
    assert_non_null(slots);
    struct rk_delivery_stats *stats = rk_producer_stats(rk);
    long long deadline = harness_now_ms() + 40000;
    bool stopped = false, killed = false;
    long seq = 0;
    while (seq < LOAD_MESSAGES && harness_now_ms() < deadline) {
        char value[96];
        int len = snprintf(value, sizeof value, "idem|%ld|%0*d", seq, (int)(seq % 40), 0);
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, LOAD_TOPIC, (int32_t)(seq % LOAD_PARTITIONS),
                                                      NULL, 0, value, (size_t)len, 0, NULL, &slots[seq]);
        if (err)
            fail_msg("enqueue seq %ld: %s", seq, rd_kafka_err2str(err));
        seq++;
        if ((seq & 255) == 0)
            rd_kafka_poll(rk, 0);
        load_maybe_restart(b, stats, seq, &stopped, &killed);
    }
    /* Enqueueing may outrun delivery: keep the restarts on schedule. */
    while (!killed && harness_now_ms() < deadline) {
        rd_kafka_poll(rk, 5);
        load_maybe_restart(b, stats, seq, &stopped, &killed);
    }
    rd_kafka_flush(rk, 60000);
    long produced = seq, delivered = stats->delivered, failed = stats->failed;
    fprintf(stderr, "[idem] enqueued %ld, delivered %ld, failed %ld (first error: %s)\n", produced,
            delivered, failed, failed ? stats->first_error_text : "none");
    rk_producer_destroy(rk);
    if (!stopped || !killed)
        fail_msg("only %ld delivered before the deadline; restarts did not both happen", delivered);
    assert_int_equal(produced, LOAD_MESSAGES);
    /* Idempotence makes retries safe, so nothing should have failed. */
    assert_int_equal(failed, 0);
    assert_int_equal(delivered, produced);

    long want[LOAD_PARTITIONS] = {0};
    for (long s = 0; s < produced; s++)
        want[s % LOAD_PARTITIONS]++;
    struct load_check check = {.produced = produced};
    check.seen_at = malloc((size_t)produced * sizeof(int64_t));
    assert_non_null(check.seen_at);
    for (long s = 0; s < produced; s++)
        check.seen_at[s] = -1;
    for (int p = 0; p < LOAD_PARTITIONS; p++)
        check.last_seq[p] = -1;
    long got = rk_consume_each(broker_bootstrap(b), LOAD_TOPIC, LOAD_PARTITIONS, want, 60000,
                               load_collect, &check);
    if (check.failure[0])
        fail_msg("%s", check.failure);
    assert_int_equal(got, produced);
    for (long s = 0; s < produced; s++) {
        if (check.seen_at[s] < 0)
            fail_msg("acknowledged seq %ld is missing", s);
        if (check.seen_at[s] != slots[s].offset)
            fail_msg("seq %ld acknowledged at %" PRId64 " but read at %" PRId64, s, slots[s].offset,
                     check.seen_at[s]);
    }
    free(check.seen_at);
    free(slots);
    broker_mark_passed(b);
}

static int idem_setup(void **state)
{
    struct test_broker *broker = calloc(1, sizeof *broker);
    *state = broker;
    broker_start(broker, NULL);
    return 0;
}

static int idem_teardown(void **state)
{
    broker_cleanup(*state);
    free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_raw_duplicates_gaps_and_epochs, idem_setup,
                                        idem_teardown),
        cmocka_unit_test_setup_teardown(test_librdkafka_idempotence_across_restarts, idem_setup,
                                        idem_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
