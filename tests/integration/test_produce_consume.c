/* 200,000 keyed records with two headers and explicit timestamps across
 * six partitions, once per compression codec, each to its own topic; read
 * back and compared record by record, then again after a clean restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PC_MESSAGES 200000L
#define PC_PARTITIONS 6
#define PC_PER_PARTITION (PC_MESSAGES / PC_PARTITIONS)
#define PC_CODECS 5

static const char *const pc_codecs[PC_CODECS] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* Owned by the test's main thread. */
struct pc_state {
    struct test_broker broker;
    int64_t base_timestamp;
    bool produced[PC_CODECS]; /* topic fully produced and verified once */
};

/* Everything that identifies one record, derived from (partition, index). */
struct pc_expected {
    char key[48];
    size_t key_len;
    char value[256];
    size_t value_len;
    int64_t timestamp;
    char seq_header[24];
    size_t seq_header_len;
    uint8_t bin_header[8];
};

static uint64_t pc_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void pc_expected_record(int64_t base_timestamp, int partition, long index, struct pc_expected *e)
{
    e->key_len = (size_t)snprintf(e->key, sizeof(e->key), "key-%d-%ld", partition, index);
    uint64_t rng = pc_mix(((uint64_t)partition << 40) | (uint64_t)index);
    int n = snprintf(e->value, sizeof(e->value), "value|%d|%ld|", partition, index);
    size_t len = 20 + (size_t)(rng % 180);
    /* A small alphabet keeps the payload compressible but not trivial. */
    for (size_t i = (size_t)n; i < len; i++) {
        rng = pc_mix(rng);
        e->value[i] = (char)('a' + (rng & 15));
    }
    e->value_len = len;
    e->timestamp = base_timestamp + index * 10 + partition;
    e->seq_header_len = (size_t)snprintf(e->seq_header, sizeof(e->seq_header), "%ld", index);
    uint64_t bin = ((uint64_t)partition << 40) | (uint64_t)index;
    for (int i = 0; i < 8; i++)
        e->bin_header[i] = (uint8_t)(bin >> (8 * i)); /* includes zero bytes on purpose */
}

static void pc_topic_name(int codec, char *out, size_t outlen)
{
    snprintf(out, outlen, "pc-%s", pc_codecs[codec]);
}

static void pc_produce(struct pc_state *st, int codec)
{
    char topic[64];
    pc_topic_name(codec, topic, sizeof(topic));
    rk_create_topic(broker_bootstrap(&st->broker), topic, PC_PARTITIONS, NULL);
    const char *conf[] = {"compression.codec",
                          pc_codecs[codec],
                          "linger.ms",
                          "20",
                          "batch.num.messages",
                          "10000",
                          "queue.buffering.max.messages",
                          "400000",
                          "acks",
                          "all",
                          "message.timeout.ms",
                          "60000",
                          NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), conf);
    long long started = harness_now_ms();
    for (long i = 0; i < PC_MESSAGES; i++) {
        int partition = (int)(i % PC_PARTITIONS);
        long index = i / PC_PARTITIONS;
        struct pc_expected e;
        pc_expected_record(st->base_timestamp, partition, index, &e);
        rd_kafka_headers_t *headers = rd_kafka_headers_new(2);
        rd_kafka_header_add(headers, "seq", -1, e.seq_header, (ssize_t)e.seq_header_len);
        rd_kafka_header_add(headers, "bin", -1, e.bin_header, sizeof(e.bin_header));
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, partition, e.key, e.key_len, e.value, e.value_len,
                                                      e.timestamp, headers, NULL);
        rd_kafka_headers_destroy(headers);
        if (err)
            fail_msg("produce to %s: %s", topic, rd_kafka_err2str(err));
        if ((i & 1023) == 0)
            rd_kafka_poll(rk, 0);
    }
    rd_kafka_resp_err_t flush_err = rd_kafka_flush(rk, 60000);
    struct rk_delivery_stats stats = *rk_producer_stats(rk);
    rk_producer_destroy(rk);
    fprintf(stderr, "[produce_consume] %s: produced %ld in %lld ms\n", topic, stats.delivered,
            harness_now_ms() - started);
    if (flush_err)
        fail_msg("%s: flush: %s (%ld delivered)", topic, rd_kafka_err2str(flush_err), stats.delivered);
    if (stats.failed)
        fail_msg("%s: %ld delivery failures, first: %s", topic, stats.failed, stats.first_error_text);
    assert_int_equal(stats.delivered, PC_MESSAGES);
}

/* Checks each consumed message against its expected content. */
struct pc_verify {
    const char *topic;
    int64_t base_timestamp;
    long next_offset[PC_PARTITIONS];
};

static bool pc_verify_message(const rd_kafka_message_t *m, void *ctx)
{
    struct pc_verify *v = ctx;
    int p = m->partition;
    if (m->offset != v->next_offset[p]) {
        fprintf(stderr, "[verify] %s[%d]: offset %" PRId64 ", expected %ld (gap, duplicate or reorder)\n", v->topic, p,
                m->offset, v->next_offset[p]);
        return false;
    }
    /* Offsets start at 0 on a fresh topic, so the offset is the index. */
    long index = v->next_offset[p]++;
    struct pc_expected e;
    pc_expected_record(v->base_timestamp, p, index, &e);
    const char *what = NULL;
    if (m->key_len != e.key_len || !m->key || memcmp(m->key, e.key, e.key_len) != 0)
        what = "key";
    else if (m->len != e.value_len || !m->payload || memcmp(m->payload, e.value, e.value_len) != 0)
        what = "value";
    rd_kafka_timestamp_type_t ts_type;
    int64_t ts = rd_kafka_message_timestamp(m, &ts_type);
    if (!what && (ts != e.timestamp || ts_type != RD_KAFKA_TIMESTAMP_CREATE_TIME))
        what = "timestamp";
    rd_kafka_headers_t *headers = NULL;
    if (!what &&
        (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR || rd_kafka_header_cnt(headers) != 2))
        what = "header count";
    const char *name;
    const void *value;
    size_t size;
    if (!what && (rd_kafka_header_get_all(headers, 0, &name, &value, &size) != 0 || strcmp(name, "seq") != 0 ||
                  size != e.seq_header_len || memcmp(value, e.seq_header, size) != 0))
        what = "header seq";
    if (!what && (rd_kafka_header_get_all(headers, 1, &name, &value, &size) != 0 || strcmp(name, "bin") != 0 ||
                  size != sizeof(e.bin_header) || memcmp(value, e.bin_header, size) != 0))
        what = "header bin";
    if (what) {
        fprintf(stderr,
                "[verify] %s[%d] offset %ld: %s differs (key %.*s/%.*s, value len %zu/%zu, ts "
                "%" PRId64 "/%" PRId64 " type %d)\n",
                v->topic, p, index, what, (int)m->key_len, m->key ? (const char *)m->key : "", (int)e.key_len, e.key,
                m->len, e.value_len, ts, e.timestamp, (int)ts_type);
        return false;
    }
    return true;
}

static void pc_verify_topic(struct pc_state *st, int codec)
{
    char topic[64];
    pc_topic_name(codec, topic, sizeof(topic));
    struct pc_verify v = {.topic = topic, .base_timestamp = st->base_timestamp};
    long want[PC_PARTITIONS];
    for (int p = 0; p < PC_PARTITIONS; p++)
        want[p] = PC_PER_PARTITION + (p < PC_MESSAGES % PC_PARTITIONS ? 1 : 0);
    long long started = harness_now_ms();
    long got = rk_consume_each(broker_bootstrap(&st->broker), topic, PC_PARTITIONS, want, 60000, pc_verify_message, &v);
    fprintf(stderr, "[produce_consume] %s: read %ld in %lld ms\n", topic, got, harness_now_ms() - started);
    if (got != PC_MESSAGES)
        fail_msg("%s: read %ld of %ld records correctly", topic, got, PC_MESSAGES);
    for (int p = 0; p < PC_PARTITIONS; p++)
        assert_int_equal(v.next_offset[p], want[p]);
}

/* The client may silently fall back to no compression (feature
 * negotiation), so look at what the broker stored: Kafka's segment layout,
 * batch attributes bits 0-2 hold the codec. Returns batches using it. */
static long pc_batches_with_codec(struct pc_state *st, int codec, long *total)
{
    char topic[64], path[1024];
    pc_topic_name(codec, topic, sizeof(topic));
    snprintf(path, sizeof(path), "%s/%s-0/00000000000000000000.log", st->broker.data_dir, topic);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s to check the stored codec", path);
    long matching = 0;
    *total = 0;
    uint8_t header[23];
    while (fread(header, 1, sizeof(header), f) == sizeof(header)) {
        int32_t length = (int32_t)(((uint32_t)header[8] << 24) | ((uint32_t)header[9] << 16) |
                                   ((uint32_t)header[10] << 8) | header[11]);
        if (length < 49)
            break; /* zero tail of a preallocated segment, or not a batch */
        (*total)++;
        matching += (header[22] & 7) == codec;
        if (fseek(f, length + 12 - (long)sizeof(header), SEEK_CUR) != 0)
            break;
    }
    fclose(f);
    return matching;
}

static void pc_run_codec(void **state, int codec)
{
    struct pc_state *st = *state;
    pc_produce(st, codec);
    pc_verify_topic(st, codec);
    long total = 0;
    long matching = pc_batches_with_codec(st, codec, &total);
    fprintf(stderr, "[produce_consume] %s: %ld of %ld stored batches in partition 0 use codec %d\n", pc_codecs[codec],
            matching, total, codec);
    if (total == 0 || (codec == 0 ? matching != total : matching == 0))
        fail_msg("%s: the broker stored %ld of %ld batches with that codec; the client did not "
                 "compress (check the broker's ApiVersions ranges)",
                 pc_codecs[codec], matching, total);
    st->produced[codec] = true;
}

static void test_codec_none(void **state)
{
    pc_run_codec(state, 0);
}
static void test_codec_gzip(void **state)
{
    pc_run_codec(state, 1);
}
static void test_codec_snappy(void **state)
{
    pc_run_codec(state, 2);
}
static void test_codec_lz4(void **state)
{
    pc_run_codec(state, 3);
}
static void test_codec_zstd(void **state)
{
    pc_run_codec(state, 4);
}

static void test_everything_survives_restart(void **state)
{
    struct pc_state *st = *state;
    int topics = 0;
    for (int c = 0; c < PC_CODECS; c++)
        topics += st->produced[c];
    if (topics == 0)
        skip();
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    for (int c = 0; c < PC_CODECS; c++)
        if (st->produced[c])
            pc_verify_topic(st, c);
    if (topics == PC_CODECS)
        broker_mark_passed(&st->broker);
}

static int pc_setup(void **state)
{
    struct pc_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -1;
    /* An hour in the past: recent enough for any retention, far from "now". */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    st->base_timestamp = ((int64_t)now.tv_sec - 3600) * 1000;
    *state = st;
    broker_start(&st->broker, NULL);
    return 0;
}

static int pc_teardown(void **state)
{
    struct pc_state *st = *state;
    if (st) {
        broker_cleanup(&st->broker);
        free(st);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_none),   cmocka_unit_test(test_codec_gzip),
        cmocka_unit_test(test_codec_snappy), cmocka_unit_test(test_codec_lz4),
        cmocka_unit_test(test_codec_zstd),   cmocka_unit_test(test_everything_survives_restart),
    };
    return cmocka_run_group_tests(tests, pc_setup, pc_teardown);
}
