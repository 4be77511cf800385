/* Log cleaner and produce-time checks on compressed batches: compaction
 * opens gzip/snappy/lz4/zstd batches, keeps the latest record per key and
 * recompresses partly kept batches with their codec; keyless records in
 * compressed batches are refused for compacted topics; an emptied batch
 * kept for its producer is written without compression. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codec/record_codec.h"
#include "cleaner_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

#define BATCHES 40
#define PER_BATCH 10

/* A batch of count records with keys k<(first+i) % KEYS> (NULL key where
 * i == null_at) and values v<first+i>, compressed with codec. */
static uint8_t *compressed_batch(int codec, int first, int count, int null_at, int64_t pid, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, clock_wall_ms());
    if (pid >= 0) {
        b.producer_id = pid;
        b.producer_epoch = 0;
        b.base_sequence = 0;
    }
    char key[16], value[64];
    for (int i = 0; i < count; i++) {
        snprintf(key, sizeof key, "k%d", (first + i) % KEYS);
        snprintf(value, sizeof value, "v%d padding padding padding", first + i);
        assert_int_equal(record_batch_builder_add(&b, clock_wall_ms(), i == null_at ? NULL : key,
                                                  i == null_at ? -1 : (int32_t)strlen(key), value,
                                                  (int32_t)strlen(value), NULL, 0),
                         0);
    }
    uint8_t *plain, *packed;
    size_t plain_len;
    char err[200];
    assert_int_equal(record_batch_builder_finish(&b, &plain, &plain_len), 0);
    assert_int_equal(record_codec_deflate_batch(plain, plain_len, codec, &packed, len, err, sizeof err), 0);
    free(plain);
    return packed;
}

struct seen {
    int per_key[KEYS];      /* records below the active segment */
    int last_value[KEYS];   /* v<N> of the last record read per key */
    int partial_compressed; /* batches of the codec holding fewer records */
    size_t records;
};

struct tally_ctx {
    int codec;
    int64_t active, last_offset;
    struct seen *s;
};

static void tally_batch(void *arg, const uint8_t *batch, size_t blen)
{
    struct tally_ctx *c = arg;
    struct seen *s = c->s;
    struct record_batch_header h;
    char err[200];
    assert_int_equal(record_batch_parse_header(batch, blen, &h), 0);
    uint8_t *plain = NULL;
    size_t plain_len = blen;
    if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
        assert_int_equal(record_batch_compression(&h), c->codec);
        if (h.record_count < PER_BATCH)
            s->partial_compressed++;
        assert_int_equal(record_codec_inflate_batch(batch, blen, 1 << 20, &plain, &plain_len, err, sizeof err), 0);
    }
    struct record_batch_record_iter ri;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&ri, plain ? plain : batch, plain_len), 0);
    int rc;
    while ((rc = record_batch_records_next(&ri, &rec)) == 1) {
        assert_true(rec.offset > c->last_offset);
        c->last_offset = rec.offset;
        /* Keys and values are not NUL-terminated in the batch. */
        char text[64];
        assert_true(rec.key_len >= 2 && rec.key_len < 16);
        snprintf(text, sizeof text, "%.*s", rec.key_len - 1, (const char *)rec.key + 1);
        int k = atoi(text);
        assert_true(k >= 0 && k < KEYS);
        if (rec.offset < c->active)
            s->per_key[k]++;
        assert_true(rec.value_len >= 2);
        snprintf(text, sizeof text, "%.*s", rec.value_len - 1, (const char *)rec.value + 1);
        s->last_value[k] = atoi(text);
        s->records++;
    }
    assert_int_equal(rc, 0);
    free(plain);
}

/* Reads every batch from the log start, opening compressed ones. */
static void tally_all(struct partition_log *log, int codec, int64_t active, struct seen *s)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < KEYS; k++)
        s->last_value[k] = -1;
    struct tally_ctx c = {codec, active, -1, s};
    for_each_batch(log, tally_batch, &c);
}

static void compacts_codec(int codec)
{
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    /* PER_BATCH is a multiple of KEYS: every batch holds each key twice,
     * so the last batches are kept in part. */
    for (int i = 0; i < BATCHES; i++) {
        size_t len;
        uint8_t *batch = compressed_batch(codec, i * PER_BATCH, PER_BATCH, -1, -1, &len);
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
        free(batch);
    }
    int64_t size_before = partition_log_size_bytes(log);
    int64_t active = active_base(log);
    assert_true(partition_log_segment_count(log) > 3);
    struct seen s;
    tally_all(log, codec, active, &s);
    assert_int_equal(s.records, BATCHES * PER_BATCH);

    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    assert_true(res.segments_rewritten > 0);
    assert_true(partition_log_size_bytes(log) < size_before / 2);
    assert_int_equal(partition_log_end_offset(log), BATCHES * PER_BATCH);

    tally_all(log, codec, active, &s);
    assert_true(s.records < BATCHES * PER_BATCH / 4);
    for (int k = 0; k < KEYS; k++) {
        assert_true(s.per_key[k] <= 1);
        assert_int_equal(s.last_value[k], BATCHES * PER_BATCH - KEYS + k);
    }
    /* Below the active segment the survivors sit in rewritten batches
     * that kept their codec. */
    assert_true(s.partial_compressed > 0);

    /* A reopen reads the same. */
    partition_log_close(log);
    log = open_log(&cfg);
    struct seen again;
    tally_all(log, codec, active, &again);
    assert_memory_equal(&again, &s, sizeof s);
    partition_log_close(log);
}

static void test_compacts_gzip(void **state)
{
    (void)state;
    compacts_codec(RECORD_BATCH_COMPRESSION_GZIP);
}

static void test_compacts_snappy(void **state)
{
    (void)state;
    compacts_codec(RECORD_BATCH_COMPRESSION_SNAPPY);
}

static void test_compacts_lz4(void **state)
{
    (void)state;
    compacts_codec(RECORD_BATCH_COMPRESSION_LZ4);
}

static void test_compacts_zstd(void **state)
{
    (void)state;
    compacts_codec(RECORD_BATCH_COMPRESSION_ZSTD);
}

static void test_null_key_in_compressed_batch(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct log_append_result res;
    size_t len;
    uint8_t *batch = compressed_batch(RECORD_BATCH_COMPRESSION_LZ4, 0, 5, 3, -1, &len);
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_INVALID_RECORD);
    assert_string_equal(res.error_message, "Compacted topic cannot accept message without key");
    assert_int_equal(partition_log_end_offset(log), 0);

    /* Records that do not decompress: refused, CRC or not. */
    uint8_t *bad = malloc(len);
    memcpy(bad, batch, len);
    memset(bad + RECORD_BATCH_HEADER_SIZE, 0x5A, len - RECORD_BATCH_HEADER_SIZE);
    record_batch_update_crc(bad, len);
    assert_int_equal(partition_log_append(log, bad, len, 0, &res), KAFKA_ERR_CORRUPT_MESSAGE);
    assert_int_equal(partition_log_end_offset(log), 0);

    /* With keys everywhere the same codec is accepted. */
    size_t good_len;
    uint8_t *good = compressed_batch(RECORD_BATCH_COMPRESSION_LZ4, 0, 5, -1, -1, &good_len);
    assert_int_equal(partition_log_append(log, good, good_len, 0, &res), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(log), 5);

    /* A delete-policy topic takes keyless records, but a batch that does
     * not decompress is refused there too (batch validation). */
    cfg.cleanup_compact = false;
    partition_log_set_config(log, &cfg);
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_append(log, bad, len, 0, &res), KAFKA_ERR_CORRUPT_MESSAGE);
    free(good);
    free(bad);
    free(batch);
    partition_log_close(log);
}

static void test_emptied_producer_batch_uncompressed(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    size_t len;
    uint8_t *batch = compressed_batch(RECORD_BATCH_COMPRESSION_ZSTD, 0, KEYS, -1, 42, &len);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    free(batch);
    for (int i = 0; i < 20; i++) {
        batch = compressed_batch(RECORD_BATCH_COMPRESSION_ZSTD, KEYS * (i + 1), KEYS, -1, -1, &len);
        assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
        free(batch);
    }
    struct log_clean_result cres;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &cres), 0);
    assert_true(cres.cleaned);
    struct record_batch_header h;
    uint8_t *buf = read_first_batch(log, &h);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.last_offset_delta, KEYS - 1);
    assert_int_equal(h.producer_id, 42);
    assert_int_equal(h.record_count, 0);
    assert_int_equal(record_batch_compression(&h), RECORD_BATCH_COMPRESSION_NONE);
    assert_int_equal(record_batch_total_size(&h), RECORD_BATCH_HEADER_SIZE);
    assert_true(record_batch_crc_ok(buf, record_batch_total_size(&h)));
    free(buf);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compacts_gzip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compacts_snappy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compacts_lz4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compacts_zstd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_key_in_compressed_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emptied_producer_batch_uncompressed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
