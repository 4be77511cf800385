/* Hostile and broken bytes on raw connections while a librdkafka producer
 * keeps producing: the broker must answer per the protocol or close the
 * offending connection, stay up, and lose none of the producer's records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAD_BG_TOPIC "bad-background"
#define BAD_BG_PARTITIONS 2
#define BAD_RAW_TOPIC "bad-raw"
#define KAFKA_ERR_CORRUPT_MESSAGE 2
#define KAFKA_ERR_INVALID_TOPIC_EXCEPTION 17
#define KAFKA_ERR_UNSUPPORTED_VERSION 35

/* Background producer; `stop` and `enqueued` cross threads (atomics),
 * the rest is written by the producer thread before it exits. */
struct bad_background {
    rd_kafka_t *rk;
    pthread_t thread;
    atomic_bool stop;
    atomic_long enqueued;
    rd_kafka_resp_err_t enqueue_error;
};

struct bad_state {
    struct test_broker broker;
    struct bad_background bg;
    bool bg_running;
    int passed;
};

static void *bad_background_run(void *arg)
{
    struct bad_background *bg = arg;
    long seq = 0;
    while (!atomic_load(&bg->stop)) {
        for (int i = 0; i < 100; i++, seq++) {
            char value[48];
            int n = snprintf(value, sizeof(value), "bg|%ld", seq);
            rd_kafka_resp_err_t err = rk_produce_blocking(bg->rk, BAD_BG_TOPIC, (int32_t)(seq % BAD_BG_PARTITIONS),
                                                          NULL, 0, value, (size_t)n, 0, NULL, NULL);
            if (err) {
                bg->enqueue_error = err;
                atomic_store(&bg->enqueued, seq);
                return NULL;
            }
        }
        atomic_store(&bg->enqueued, seq);
        rd_kafka_poll(bg->rk, 10);
    }
    return NULL;
}

/* Asserts that a fresh connection still gets ApiVersions answered. */
static void bad_assert_broker_serves(struct bad_state *st, const char *after)
{
    if (!broker_alive(&st->broker)) {
        broker_print_log_tail(&st->broker, 40);
        fail_msg("cairnd died after %s", after);
    }
    int fd = raw_connect(broker_port(&st->broker), 5000);
    if (fd < 0)
        fail_msg("cannot connect after %s", after);
    struct raw_api_versions versions;
    int rc = raw_api_versions(fd, 0, 4242, &versions);
    close(fd);
    if (rc != 0 || versions.error_code != 0)
        fail_msg("ApiVersions on a fresh connection failed after %s", after);
}

static void test_random_bytes(void **state)
{
    struct bad_state *st = *state;
    uint64_t rng = 0x1234567887654321ull;
    for (int conn = 0; conn < 8; conn++) {
        int fd = raw_connect(broker_port(&st->broker), 5000);
        assert_true(fd >= 0);
        uint8_t noise[16384];
        for (size_t i = 0; i < sizeof(noise); i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            noise[i] = (uint8_t)rng;
        }
        if (conn % 2 == 1) {
            /* A plausible small length so the noise reaches header parsing. */
            noise[0] = 0;
            noise[1] = 0;
            noise[2] = 0;
            noise[3] = 64;
        }
        raw_send_all(fd, noise, sizeof(noise)); /* the broker may close mid-way */
        raw_wait_closed(fd, 500);
        close(fd);
    }
    bad_assert_broker_serves(st, "random bytes");
    st->passed++;
}

static void test_truncated_frame(void **state)
{
    struct bad_state *st = *state;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 18, 0, 7, "truncated");
    raw_patch_i32(&w, 0, 100); /* promises 100 bytes, sends fewer */
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    close(fd);
    raw_writer_free(&w);
    /* And a frame cut inside its length prefix. */
    fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, "\0\0", 2), 0);
    close(fd);
    bad_assert_broker_serves(st, "truncated frames");
    st->passed++;
}

static void bad_expect_close_on_length(struct bad_state *st, uint32_t length)
{
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    uint8_t prefix[8] = {
        (uint8_t)(length >> 24), (uint8_t)(length >> 16), (uint8_t)(length >> 8), (uint8_t)length, 0, 18, 0, 0};
    assert_int_equal(raw_send_all(fd, prefix, sizeof(prefix)), 0);
    bool closed = raw_wait_closed(fd, 5000);
    close(fd);
    if (!closed)
        fail_msg("connection with length prefix 0x%08x was not closed within 5 s", length);
}

static void test_oversized_and_negative_lengths(void **state)
{
    struct bad_state *st = *state;
    bad_expect_close_on_length(st, 0x7fffffffu);
    bad_assert_broker_serves(st, "length 0x7fffffff");
    bad_expect_close_on_length(st, 0xffffffffu); /* -1 */
    bad_expect_close_on_length(st, 0x80000000u); /* INT32_MIN */
    bad_assert_broker_serves(st, "negative lengths");
    st->passed++;
}

static void test_unknown_api_and_versions(void **state)
{
    struct bad_state *st = *state;
    /* ApiVersions at a version from the future: error 35 in a v0 body
     * listing at least ApiVersions' own range, and the connection stays
     * usable so the client can retry with a version the broker knows. */
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    struct raw_api_versions versions;
    if (raw_api_versions(fd, 99, 11, &versions) != 0)
        fail_msg("no parseable answer to ApiVersions v99");
    assert_int_equal(versions.error_code, KAFKA_ERR_UNSUPPORTED_VERSION);
    const struct raw_api_range *own = raw_api_versions_find(&versions, 18);
    if (!own)
        fail_msg("ApiVersions v99 answer does not list ApiVersions' supported range");
    assert_int_equal(own->min_version, 0);
    assert_true(own->max_version >= 3 && own->max_version < 99);
    assert_int_equal(raw_api_versions(fd, 0, 12, &versions), 0);
    assert_int_equal(versions.error_code, 0);
    close(fd);

    /* An API key nobody defines: close, or an answer to that request. */
    const int16_t bad_keys[][2] = {{9999, 0}, {-1, 0}, {3, 999} /* Metadata v999 */};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        struct raw_writer w;
        raw_writer_init(&w);
        raw_frame_begin(&w, bad_keys[i][0], bad_keys[i][1], 77, "unknown-api");
        raw_put_i32(&w, 0);
        raw_frame_finish(&w);
        fd = raw_connect(broker_port(&st->broker), 5000);
        assert_true(fd >= 0);
        assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
        raw_writer_free(&w);
        uint8_t *frame = NULL;
        size_t len = 0;
        int rc = raw_recv_frame(fd, 5000, 1 << 20, &frame, &len);
        if (rc == 0) {
            struct raw_reader r;
            raw_reader_init(&r, frame, len);
            int32_t correlation = raw_get_i32(&r);
            free(frame);
            if (correlation != 77)
                fail_msg("answer to api %d v%d has correlation id %d", bad_keys[i][0], bad_keys[i][1], correlation);
        } else if (rc != 1) {
            fail_msg("api %d v%d: neither an answer nor a close within 5 s", bad_keys[i][0], bad_keys[i][1]);
        }
        close(fd);
    }
    bad_assert_broker_serves(st, "unknown API keys and versions");
    st->passed++;
}

/* Sends one Produce with `batch` to partition 0 of `topic` and returns the
 * partition's error code; *base_offset receives the assigned offset. */
static int16_t bad_produce_raw_to(struct bad_state *st, const char *topic, int16_t version,
                                  const struct raw_writer *batch, int64_t *base_offset)
{
    static int32_t correlation = 100;
    correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, version, correlation, "raw-producer");
    raw_put_produce_body(&w, NULL, 1, topic, 0, batch->data, batch->len);
    raw_frame_finish(&w);
    int fd = raw_connect(broker_port(&st->broker), 10000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("Produce v%d: no answer (%s)", version, rc == 1 ? "connection closed" : "timeout");
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    int32_t got_correlation = raw_get_i32(&r);
    int32_t topics = raw_get_i32(&r);
    raw_skip_string(&r);
    int32_t partitions = raw_get_i32(&r);
    int32_t index = raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    *base_offset = raw_get_i64(&r);
    bool overflow = r.overflow;
    free(frame);
    if (overflow || got_correlation != correlation || topics != 1 || partitions != 1 || index != 0)
        fail_msg("malformed Produce v%d answer (correlation %d/%d, %d topics, %d partitions)", version, got_correlation,
                 correlation, topics, partitions);
    return error;
}

static int16_t bad_produce_raw(struct bad_state *st, int16_t version, const struct raw_writer *batch,
                               int64_t *base_offset)
{
    return bad_produce_raw_to(st, BAD_RAW_TOPIC, version, batch, base_offset);
}

/* The newest Produce version before flexible encoding, which keeps the raw
 * writer simple. */
static int16_t bad_produce_version(struct bad_state *st)
{
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(fd, 0, 1, &versions), 0);
    close(fd);
    const struct raw_api_range *produce = raw_api_versions_find(&versions, 0);
    if (!produce || produce->max_version < 3 || produce->min_version > 8)
        fail_msg("broker has no non-flexible Produce version with record batch v2");
    return produce->max_version < 8 ? produce->max_version : 8;
}

static void test_produce_with_corrupt_crc(void **state)
{
    struct bad_state *st = *state;
    int16_t version = bad_produce_version(st);

    const struct raw_record records[] = {{"k0", "first"}, {"k1", "second"}, {NULL, "third"}};
    struct raw_writer good;
    raw_writer_init(&good);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    raw_build_record_batch(&good, (int64_t)now.tv_sec * 1000, records, 3);
    int64_t base_offset = -1;
    int16_t error = bad_produce_raw(st, version, &good, &base_offset);
    if (error != 0)
        fail_msg("valid batch rejected with error %d: the corrupt-CRC check would prove nothing", error);
    assert_int_equal(base_offset, 0);

    struct raw_writer corrupt;
    raw_writer_init(&corrupt);
    raw_put_bytes(&corrupt, good.data, good.len);
    corrupt.data[17] ^= 0x5a; /* CRC field (bytes 17..20) */
    error = bad_produce_raw(st, version, &corrupt, &base_offset);
    assert_int_equal(error, KAFKA_ERR_CORRUPT_MESSAGE);

    raw_writer_free(&corrupt);
    raw_writer_init(&corrupt);
    raw_put_bytes(&corrupt, good.data, good.len);
    corrupt.data[corrupt.len - 3] ^= 0x01; /* a value byte under the CRC */
    error = bad_produce_raw(st, version, &corrupt, &base_offset);
    assert_int_equal(error, KAFKA_ERR_CORRUPT_MESSAGE);
    raw_writer_free(&corrupt);

    /* Rejected batches took no offsets. */
    error = bad_produce_raw(st, version, &good, &base_offset);
    assert_int_equal(error, 0);
    assert_int_equal(base_offset, 3);
    raw_writer_free(&good);
    bad_assert_broker_serves(st, "corrupt batches");

    /* What was accepted reads back intact (the consumer checks CRCs). */
    struct rk_record_set set = {0};
    long want[1] = {6};
    long got = rk_consume_all(broker_bootstrap(&st->broker), BAD_RAW_TOPIC, 1, want, 20000, &set);
    assert_int_equal(got, 6);
    for (size_t i = 0; i < set.count; i++) {
        const struct raw_record *expected = &records[i % 3];
        assert_int_equal(set.records[i].offset, (int64_t)i);
        if (expected->key)
            assert_string_equal(set.records[i].key, expected->key);
        else
            assert_null(set.records[i].key);
        assert_string_equal(set.records[i].value, expected->value);
    }
    rk_record_set_free(&set);
    st->passed++;
}

/* Only the coordinators write the internal topics: a client's records there
 * would be replayed as group or transaction state. */
static void test_internal_topics_refused(void **state)
{
    struct bad_state *st = *state;
    int16_t version = bad_produce_version(st);
    const struct raw_record records[] = {{"group", "not an offset commit"}};
    struct raw_writer batch;
    raw_writer_init(&batch);
    raw_build_record_batch(&batch, 1700000000000, records, 1);
    int64_t base_offset = -2;
    assert_int_equal(bad_produce_raw_to(st, "__consumer_offsets", version, &batch, &base_offset),
                     KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    assert_int_equal(base_offset, -1);
    assert_int_equal(bad_produce_raw_to(st, "__transaction_state", version, &batch, &base_offset),
                     KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    /* The same batch is fine for an ordinary topic. */
    assert_int_equal(bad_produce_raw(st, version, &batch, &base_offset), 0);

    /* __cluster_metadata-0 is the metadata log's directory: the topic can
     * be neither created nor auto-created, nor written. */
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), NULL);
    char errstr[512] = "";
    assert_int_equal(rk_create_topic_result(rk, "__cluster_metadata", 1, 1, NULL, false, errstr, sizeof errstr),
                     RD_KAFKA_RESP_ERR_INVALID_REQUEST);
    assert_non_null(strstr(errstr, "prohibited"));
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "__cluster_metadata", NULL);
    const struct rd_kafka_metadata *md = NULL;
    assert_int_equal(rd_kafka_metadata(rk, 0, rkt, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(md->topic_cnt, 1);
    assert_int_equal(md->topics[0].err, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rk_producer_destroy(rk);
    assert_int_equal(bad_produce_raw_to(st, "__cluster_metadata", version, &batch, &base_offset),
                     RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    raw_writer_free(&batch);
    bad_assert_broker_serves(st, "produce to internal topics");
    st->passed++;
}

struct bad_seen {
    uint8_t *counts;
    long limit;
};

static bool bad_collect_seq(const rd_kafka_message_t *m, void *ctx)
{
    struct bad_seen *seen = ctx;
    char text[32];
    size_t n = m->len < sizeof(text) - 1 ? m->len : sizeof(text) - 1;
    memcpy(text, m->payload, n);
    text[n] = '\0';
    long seq;
    if (sscanf(text, "bg|%ld", &seq) != 1 || seq < 0 || seq >= seen->limit) {
        fprintf(stderr, "[bad_input] foreign record '%s' at %d/%" PRId64 "\n", text, m->partition, m->offset);
        return false;
    }
    if (seen->counts[seq] < 255)
        seen->counts[seq]++;
    return true;
}

/* Lets the background producer make progress; fails if it stalls. */
static void bad_wait_enqueued(struct bad_state *st, long at_least)
{
    long long deadline = harness_now_ms() + 20000;
    while (atomic_load(&st->bg.enqueued) < at_least && harness_now_ms() < deadline)
        usleep(10000);
    if (atomic_load(&st->bg.enqueued) < at_least)
        fail_msg("background producer stalled at %ld records", atomic_load(&st->bg.enqueued));
}

static void test_background_producer_unharmed(void **state)
{
    struct bad_state *st = *state;
    /* Production must span the attacks and go on after them. */
    bad_wait_enqueued(st, atomic_load(&st->bg.enqueued) + 5000);
    atomic_store(&st->bg.stop, true);
    pthread_join(st->bg.thread, NULL);
    st->bg_running = false;
    if (st->bg.enqueue_error)
        fail_msg("background enqueue failed: %s", rd_kafka_err2str(st->bg.enqueue_error));
    rd_kafka_flush(st->bg.rk, 30000);
    struct rk_delivery_stats stats = *rk_producer_stats(st->bg.rk);
    long enqueued = atomic_load(&st->bg.enqueued);
    fprintf(stderr, "[bad_input] background producer: %ld enqueued, %ld delivered, %ld failed\n", enqueued,
            stats.delivered, stats.failed);
    if (stats.failed)
        fail_msg("background producer saw %ld delivery errors, first: %s", stats.failed, stats.first_error_text);
    assert_int_equal(stats.delivered, enqueued);
    assert_true(enqueued > 0);

    struct bad_seen seen = {.counts = calloc((size_t)enqueued + 1, 1), .limit = enqueued};
    assert_non_null(seen.counts);
    long want[BAD_BG_PARTITIONS];
    for (int p = 0; p < BAD_BG_PARTITIONS; p++)
        want[p] = enqueued / BAD_BG_PARTITIONS + (p < enqueued % BAD_BG_PARTITIONS ? 1 : 0);
    long got = rk_consume_each(broker_bootstrap(&st->broker), BAD_BG_TOPIC, BAD_BG_PARTITIONS, want, 60000,
                               bad_collect_seq, &seen);
    assert_int_equal(got, enqueued);
    for (long s = 0; s < enqueued; s++)
        if (seen.counts[s] != 1)
            fail_msg("background record %ld seen %d times", s, seen.counts[s]);
    free(seen.counts);
    assert_true(broker_alive(&st->broker));
    st->passed++;
}

#define BAD_TESTS 7

static int bad_setup(void **state)
{
    static struct bad_state st;
    memset(&st, 0, sizeof(st));
    *state = &st;
    broker_start(&st.broker, NULL);
    rk_create_topic(broker_bootstrap(&st.broker), BAD_BG_TOPIC, BAD_BG_PARTITIONS, NULL);
    rk_create_topic(broker_bootstrap(&st.broker), BAD_RAW_TOPIC, 1, NULL);
    const char *conf[] = {"acks", "all", "linger.ms", "5", NULL};
    st.bg.rk = rk_producer_new(broker_bootstrap(&st.broker), conf);
    if (pthread_create(&st.bg.thread, NULL, bad_background_run, &st.bg) != 0)
        return -1;
    st.bg_running = true;
    bad_wait_enqueued(&st, 2000);
    return 0;
}

static int bad_teardown(void **state)
{
    struct bad_state *st = *state;
    if (st->bg_running) {
        atomic_store(&st->bg.stop, true);
        pthread_join(st->bg.thread, NULL);
    }
    if (st->bg.rk)
        rk_producer_destroy(st->bg.rk);
    if (st->passed == BAD_TESTS)
        broker_mark_passed(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_truncated_frame),
        cmocka_unit_test(test_oversized_and_negative_lengths),
        cmocka_unit_test(test_unknown_api_and_versions),
        cmocka_unit_test(test_produce_with_corrupt_crc),
        cmocka_unit_test(test_internal_topics_refused),
        cmocka_unit_test(test_background_producer_unharmed),
    };
    return cmocka_run_group_tests(tests, bad_setup, bad_teardown);
}
