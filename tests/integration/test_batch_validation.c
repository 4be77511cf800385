/* Batch validation as Kafka's LogValidator does it, byte by byte through a
 * real cairnd: compressed batches are opened and their records checked
 * (a payload that does not decompress, a record count the payload cannot
 * hold, offset deltas out of order, a decompression bomb: all refused and
 * nothing stored), CreateTime timestamps are held to the topic's and the
 * broker's message.timestamp.*.max.ms window, LogAppendTime topics stamp
 * the batch; librdkafka's compressed produce still works for every codec. */
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
#include <sys/time.h>
#include <zlib.h>
#include <zstd.h>

#define API_PRODUCE 0
#define ERR_CORRUPT_MESSAGE 2
#define ERR_INVALID_TIMESTAMP 32
#define ERR_INVALID_RECORD 87
#define CODEC_GZIP 1
#define CODEC_SNAPPY 2
#define CODEC_LZ4 3
#define CODEC_ZSTD 4
#define ATTR_LOG_APPEND_TIME 0x08
#define HOUR_MS 3600000LL

/* One partition's answer to a Produce v8. */
struct answer {
    int16_t error_code;
    int64_t base_offset;
    int64_t log_append_time;
    int32_t record_errors;
    int32_t first_error_index;
};

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* One record: null key, the value, no headers. */
static void put_record(struct raw_writer *w, int32_t offset_delta, int64_t ts_delta, const char *value)
{
    struct raw_writer body;
    raw_writer_init(&body);
    raw_put_i8(&body, 0);
    raw_put_varint(&body, ts_delta);
    raw_put_varint(&body, offset_delta);
    raw_put_varint(&body, -1);
    raw_put_varint(&body, (int64_t)strlen(value));
    raw_put_bytes(&body, value, strlen(value));
    raw_put_varint(&body, 0);
    raw_put_varint(w, (int64_t)body.len);
    raw_put_bytes(w, body.data, body.len);
    raw_writer_free(&body);
}

/* A magic-2 batch around payload (records, compressed or not) declaring
 * `declared` records, with a correct CRC: only what is inside is wrong. */
static void put_batch(struct raw_writer *w, int16_t attributes, int64_t base_ts, int32_t declared,
                      const uint8_t *payload, size_t n)
{
    size_t start = w->len;
    raw_put_i64(w, 0);
    raw_put_i32(w, 0); /* batch length, patched */
    raw_put_i32(w, -1);
    raw_put_i8(w, 2);
    raw_put_i32(w, 0); /* crc, patched */
    raw_put_i16(w, attributes);
    raw_put_i32(w, declared - 1);
    raw_put_i64(w, base_ts);
    raw_put_i64(w, base_ts);
    raw_put_i64(w, -1);
    raw_put_i16(w, -1);
    raw_put_i32(w, -1);
    raw_put_i32(w, declared);
    raw_put_bytes(w, payload, n);
    raw_patch_i32(w, start + 8, (int32_t)(w->len - start - 12));
    raw_patch_i32(w, start + 17, (int32_t)raw_crc32c(w->data + start + 21, w->len - start - 21));
}

static uint8_t *zstd_pack(const void *in, size_t n, size_t *out_len)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    *out_len = ZSTD_compress(out, cap, in, n, 1);
    assert_false(ZSTD_isError(*out_len));
    return out;
}

static uint8_t *gzip_pack(const void *in, size_t n, size_t *out_len)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&s, (uLong)n);
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)n;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
    *out_len = s.total_out;
    deflateEnd(&s);
    return out;
}

/* Sends batch as a Produce v8 (acks=1) to partition 0 of topic. */
static void produce(int port, const char *topic, const struct raw_writer *batch, struct answer *a)
{
    static int32_t correlation = 100;
    int32_t id = correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_PRODUCE, 8, id, "cairn-it");
    raw_put_produce_body(&w, NULL, 1, topic, 0, batch->data, batch->len);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, id, false, 30000, &frame, &r), 0);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    a->error_code = raw_get_i16(&r);
    a->base_offset = raw_get_i64(&r);
    a->log_append_time = raw_get_i64(&r);
    raw_get_i64(&r); /* log_start_offset */
    a->record_errors = raw_get_i32(&r);
    a->first_error_index = -1;
    for (int32_t i = 0; i < a->record_errors; i++) {
        int32_t index = raw_get_i32(&r);
        if (i == 0)
            a->first_error_index = index;
        raw_skip_string(&r);
    }
    raw_skip_string(&r); /* error_message */
    raw_get_i32(&r);     /* throttle */
    assert_false(r.overflow);
    free(frame);
}

/* Produces the records (ts_deltas[i] after base_ts, offset deltas given or
 * 0..n-1), compressed with the codec in attributes (0: none), declaring
 * `declared` records. */
static int16_t produce_records(int port, const char *topic, int attributes, int64_t base_ts, const int64_t *ts_deltas,
                               const int32_t *deltas, int n, int32_t declared, struct answer *a)
{
    int codec = attributes & 7;
    struct raw_writer recs, batch;
    raw_writer_init(&recs);
    raw_writer_init(&batch);
    for (int i = 0; i < n; i++)
        put_record(&recs, deltas ? deltas[i] : i, ts_deltas ? ts_deltas[i] : 0, "validated");
    size_t packed_len = recs.len;
    uint8_t *packed = codec == CODEC_ZSTD   ? zstd_pack(recs.data, recs.len, &packed_len)
                      : codec == CODEC_GZIP ? gzip_pack(recs.data, recs.len, &packed_len)
                                            : NULL;
    put_batch(&batch, (int16_t)attributes, base_ts, declared, packed ? packed : recs.data, packed_len);
    produce(port, topic, &batch, a);
    free(packed);
    raw_writer_free(&recs);
    raw_writer_free(&batch);
    return a->error_code;
}

static int16_t produce_payload(int port, const char *topic, int codec, int32_t declared, const uint8_t *payload,
                               size_t n)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    put_batch(&batch, (int16_t)codec, wall_ms(), declared, payload, n);
    struct answer a;
    produce(port, topic, &batch, &a);
    raw_writer_free(&batch);
    assert_int_equal(a.base_offset, -1);
    return a.error_code;
}

static void test_compressed_batches_are_opened(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    broker_start(&broker, NULL);
    rk_create_topic(broker_bootstrap(&broker), "packed", 1, NULL);
    int port = broker_port(&broker);
    struct answer a;

    /* Payloads that do not decompress, for every codec. */
    uint8_t junk[256];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    for (int codec = CODEC_GZIP; codec <= CODEC_ZSTD; codec++)
        assert_int_equal(produce_payload(port, "packed", codec, 1, junk, sizeof junk), ERR_CORRUPT_MESSAGE);

    /* One record that declares two billion. */
    assert_int_equal(produce_records(port, "packed", CODEC_ZSTD, wall_ms(), NULL, NULL, 1, 2000000000, &a),
                     ERR_INVALID_RECORD);
    /* One record that declares two; three that declare two. */
    assert_int_equal(produce_records(port, "packed", CODEC_GZIP, wall_ms(), NULL, NULL, 1, 2, &a), ERR_INVALID_RECORD);
    assert_int_equal(produce_records(port, "packed", CODEC_ZSTD, wall_ms(), NULL, NULL, 3, 2, &a), ERR_INVALID_RECORD);
    /* Offset deltas 0, 5. */
    const int32_t gap[] = {0, 5};
    assert_int_equal(produce_records(port, "packed", CODEC_ZSTD, wall_ms(), NULL, gap, 2, 2, &a), ERR_INVALID_RECORD);

    /* A bomb: 80 MiB of zeros in a 1000-record batch of a few KiB. */
    size_t bomb_len = 80u << 20;
    uint8_t *zeros = calloc(1, bomb_len);
    assert_non_null(zeros);
    size_t packed_len;
    uint8_t *packed = zstd_pack(zeros, bomb_len, &packed_len);
    free(zeros);
    assert_true(packed_len < 64 * 1024);
    long long t0 = harness_now_ms();
    assert_int_equal(produce_payload(port, "packed", CODEC_ZSTD, 1000, packed, packed_len), ERR_CORRUPT_MESSAGE);
    free(packed);
    fprintf(stderr, "bomb refused in %lld ms\n", harness_now_ms() - t0);

    /* None of it was stored: the first good batch lands at offset 0. */
    assert_int_equal(produce_records(port, "packed", CODEC_ZSTD, wall_ms(), NULL, NULL, 3, 3, &a), 0);
    assert_int_equal(a.base_offset, 0);
    assert_int_equal(produce_records(port, "packed", CODEC_GZIP, wall_ms(), NULL, NULL, 2, 2, &a), 0);
    assert_int_equal(a.base_offset, 3);
    struct rk_record_set set = {0};
    const long want = 5;
    assert_int_equal(rk_consume_all(broker_bootstrap(&broker), "packed", 1, &want, 20000, &set), 5);
    assert_string_equal(set.records[4].value, "validated");
    rk_record_set_free(&set);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

/* librdkafka's own compressed batches pass validation, every codec. */
static void test_librdkafka_compressed_produce(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    broker_start(&broker, NULL);
    const char *codecs[] = {"gzip", "snappy", "lz4", "zstd"};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        char topic[32];
        snprintf(topic, sizeof topic, "rk-%s", codecs[c]);
        rk_create_topic(broker_bootstrap(&broker), topic, 1, NULL);
        const char *conf[] = {"compression.codec", codecs[c], "linger.ms", "20", NULL};
        rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&broker), conf);
        for (int i = 0; i < 500; i++) {
            char value[64];
            int n = snprintf(value, sizeof value, "record %d with some repeated text text text", i);
            assert_int_equal(rk_produce_blocking(rk, topic, 0, "k", 1, value, (size_t)n, 0, NULL, NULL), 0);
        }
        assert_int_equal(rd_kafka_flush(rk, 20000), 0);
        struct rk_delivery_stats *stats = rk_producer_stats(rk);
        if (stats->failed)
            fail_msg("%s: %ld failed: %s", codecs[c], stats->failed, stats->first_error_text);
        assert_int_equal(stats->delivered, 500);
        rk_producer_destroy(rk);
        const long want = 500;
        struct rk_record_set set = {0};
        assert_int_equal(rk_consume_all(broker_bootstrap(&broker), topic, 1, &want, 20000, &set), 500);
        rk_record_set_free(&set);
    }
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

/* message.timestamp.difference.max.ms (deprecated, both sides),
 * before.max.ms and after.max.ms, topic and broker level: INVALID_TIMESTAMP
 * naming the record, as Kafka answers. */
static void test_timestamp_window(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.message.timestamp.after.max.ms=3600000", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    const char *diff[] = {"message.timestamp.difference.max.ms", "3600000", NULL};
    const char *before[] = {"message.timestamp.before.max.ms", "60000", NULL};
    rk_create_topic(bootstrap, "ts-diff", 1, diff);
    rk_create_topic(bootstrap, "ts-before", 1, before);
    rk_create_topic(bootstrap, "ts-default", 1, NULL);
    int port = broker_port(&broker);
    struct answer a;

    /* Topic level, the deprecated key: both sides. */
    assert_int_equal(produce_records(port, "ts-diff", 0, wall_ms() - 2 * HOUR_MS, NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);
    assert_int_equal(a.record_errors, 1);
    assert_int_equal(a.first_error_index, 0);
    assert_int_equal(produce_records(port, "ts-diff", 0, wall_ms() + 2 * HOUR_MS, NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);
    /* The third record of three is the one named, compressed too. */
    const int64_t third_old[] = {0, 0, -2 * HOUR_MS};
    assert_int_equal(produce_records(port, "ts-diff", CODEC_ZSTD, wall_ms(), third_old, NULL, 3, 3, &a),
                     ERR_INVALID_TIMESTAMP);
    assert_int_equal(a.first_error_index, 2);
    /* Within the window, and records without a timestamp: stored. */
    assert_int_equal(produce_records(port, "ts-diff", 0, wall_ms() - 60000, NULL, NULL, 2, 2, &a), 0);
    assert_int_equal(a.base_offset, 0);
    assert_int_equal(produce_records(port, "ts-diff", 0, -1, NULL, NULL, 1, 1, &a), 0);
    /* A producer may not claim LogAppendTime. */
    assert_int_equal(produce_records(port, "ts-diff", ATTR_LOG_APPEND_TIME, wall_ms(), NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);

    /* before.max.ms on the topic, after.max.ms from the broker. */
    assert_int_equal(produce_records(port, "ts-before", CODEC_GZIP, wall_ms() - 600000, NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);
    assert_int_equal(produce_records(port, "ts-before", 0, wall_ms() + 1800000, NULL, NULL, 1, 1, &a), 0);
    assert_int_equal(produce_records(port, "ts-before", 0, wall_ms() + 2 * HOUR_MS, NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);

    /* Broker level only: the past is open, the future is not. */
    assert_int_equal(produce_records(port, "ts-default", 0, wall_ms() - 240 * HOUR_MS, NULL, NULL, 1, 1, &a), 0);
    assert_int_equal(produce_records(port, "ts-default", 0, wall_ms() + 2 * HOUR_MS, NULL, NULL, 1, 1, &a),
                     ERR_INVALID_TIMESTAMP);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

struct stamp_check {
    int batches;
    int stamped;
    int64_t max_timestamp[8];
};

static void note_stamp(const uint8_t *batch, size_t len, void *ctx)
{
    struct stamp_check *c = ctx;
    assert_true(len >= 61);
    int64_t max_ts = 0;
    for (int i = 0; i < 8; i++)
        max_ts = max_ts << 8 | batch[35 + i];
    if (c->batches < 8)
        c->max_timestamp[c->batches] = max_ts;
    c->batches++;
    if (batch[22] & ATTR_LOG_APPEND_TIME)
        c->stamped++;
    /* The stamp is inside the CRC: it must still hold. */
    uint32_t crc = (uint32_t)batch[17] << 24 | (uint32_t)batch[18] << 16 | (uint32_t)batch[19] << 8 | batch[20];
    assert_int_equal(crc, raw_crc32c(batch + 21, len - 21));
}

/* message.timestamp.type=LogAppendTime, topic and broker level: the broker
 * stamps each batch (attribute bit, max timestamp, CRC), answers the time
 * it used, and no timestamp window applies. */
static void test_log_append_time(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.message.timestamp.type=LogAppendTime",
                               "log.message.timestamp.difference.max.ms=60000", NULL};
    broker_start(&broker, overrides);
    const char *create_time[] = {"message.timestamp.type", "CreateTime", NULL};
    rk_create_topic(broker_bootstrap(&broker), "lat-broker", 1, NULL);
    rk_create_topic(broker_bootstrap(&broker), "lat-create", 1, create_time);
    int port = broker_port(&broker);
    struct answer a;
    int64_t before = wall_ms();
    assert_int_equal(produce_records(port, "lat-broker", 0, 1000, NULL, NULL, 2, 2, &a), 0);
    int64_t first_stamp = a.log_append_time;
    assert_int_equal(produce_records(port, "lat-broker", CODEC_ZSTD, 1000, NULL, NULL, 3, 3, &a), 0);
    int64_t second_stamp = a.log_append_time;
    int64_t after = wall_ms();
    assert_true(first_stamp >= before && first_stamp <= after);
    assert_true(second_stamp >= first_stamp && second_stamp <= after);
    struct stamp_check c = {0};
    assert_int_equal(broker_each_stored_batch(&broker, "lat-broker-0", note_stamp, &c), 2);
    assert_int_equal(c.stamped, 2);
    assert_int_equal(c.max_timestamp[0], first_stamp);
    assert_int_equal(c.max_timestamp[1], second_stamp);

    /* The topic's CreateTime wins over the broker's LogAppendTime; the
     * broker's window then applies. */
    assert_int_equal(produce_records(port, "lat-create", 0, 1000, NULL, NULL, 1, 1, &a), ERR_INVALID_TIMESTAMP);
    assert_int_equal(produce_records(port, "lat-create", 0, wall_ms(), NULL, NULL, 1, 1, &a), 0);
    assert_int_equal(a.log_append_time, -1);
    struct stamp_check plain = {0};
    assert_int_equal(broker_each_stored_batch(&broker, "lat-create-0", note_stamp, &plain), 1);
    assert_int_equal(plain.stamped, 0);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compressed_batches_are_opened),
        cmocka_unit_test(test_librdkafka_compressed_produce),
        cmocka_unit_test(test_timestamp_window),
        cmocka_unit_test(test_log_append_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
