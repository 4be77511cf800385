/* Codec round trips, batches a real client compressed (librdkafka, see
 * golden_librdkafka.inc), frames written independently of the module (gzip
 * members, raw snappy, LZ4 frames with content size and checksums, zstd
 * frames without a content size), and malformed, truncated and oversized
 * inputs, which must fail cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "codec/record_codec.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"

#include "golden_librdkafka.inc"

static const int codecs[] = {RECORD_BATCH_COMPRESSION_GZIP, RECORD_BATCH_COMPRESSION_SNAPPY,
                             RECORD_BATCH_COMPRESSION_LZ4, RECORD_BATCH_COMPRESSION_ZSTD};
#define CODEC_COUNT (sizeof codecs / sizeof codecs[0])

/* Half text-like (compressible), half pseudo-random. */
static uint8_t *sample(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    uint32_t x = seed | 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = i < n / 2 ? (uint8_t)("key-value "[i % 10]) : (uint8_t)x;
    }
    return p;
}

static void roundtrip(int codec, const uint8_t *in, size_t n)
{
    char err[200] = "";
    uint8_t *packed, *back;
    size_t packed_len, back_len;
    assert_int_equal(record_codec_compress(codec, in, n, &packed, &packed_len, err, sizeof err), 0);
    assert_int_equal(record_codec_decompress(codec, packed, packed_len, n, &back, &back_len, err, sizeof err), 0);
    assert_int_equal(back_len, n);
    if (n)
        assert_memory_equal(back, in, n);
    free(back);
    /* One byte under the real size is refused. */
    if (n) {
        assert_int_equal(record_codec_decompress(codec, packed, packed_len, n - 1, &back, &back_len, err, sizeof err),
                         -1);
        assert_non_null(strstr(err, "exceeds"));
        assert_null(back);
    }
    free(packed);
}

static void test_roundtrip_all_codecs(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 100, 32 * 1024, 32 * 1024 + 1, 300 * 1024};
    for (size_t c = 0; c < CODEC_COUNT; c++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint8_t *in = sample(sizes[s], (uint32_t)(s + 7));
            roundtrip(codecs[c], in, sizes[s]);
            free(in);
        }
}

static void expect_plain(int codec, const uint8_t *packed, size_t packed_len, const uint8_t *want, size_t want_len)
{
    char err[200] = "";
    uint8_t *out;
    size_t out_len;
    int rc = record_codec_decompress(codec, packed, packed_len, 1 << 24, &out, &out_len, err, sizeof err);
    if (rc != 0)
        fail_msg("codec %d: %s", codec, err);
    assert_int_equal(out_len, want_len);
    assert_memory_equal(out, want, want_len);
    free(out);
}

static size_t gzip_member(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)n;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
    size_t len = cap - s.avail_out;
    deflateEnd(&s);
    return len;
}

static void test_foreign_frames(void **state)
{
    (void)state;
    size_t n = 100 * 1024;
    uint8_t *in = sample(n, 99);
    size_t cap = 2 * n + 1024;
    uint8_t *buf = malloc(cap);
    assert_non_null(buf);

    /* gzip: two members, as a concatenating writer leaves them. */
    size_t a = gzip_member(in, n / 3, buf, cap);
    size_t b = gzip_member(in + n / 3, n - n / 3, buf + a, cap - a);
    expect_plain(RECORD_BATCH_COMPRESSION_GZIP, buf, a + b, in, n);

    /* snappy: a raw block, no xerial framing. */
    size_t slen = cap;
    assert_int_equal(snappy_compress((const char *)in, n, (char *)buf, &slen), SNAPPY_OK);
    expect_plain(RECORD_BATCH_COMPRESSION_SNAPPY, buf, slen, in, n);

    /* lz4: content size, checksums, linked 256 KiB blocks. */
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max256KB;
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
    prefs.frameInfo.contentSize = n;
    size_t llen = LZ4F_compressFrame(buf, cap, in, n, &prefs);
    assert_false(LZ4F_isError(llen));
    expect_plain(RECORD_BATCH_COMPRESSION_LZ4, buf, llen, in, n);
    /* A damaged content checksum is caught. */
    buf[llen - 1] ^= 0x55;
    uint8_t *out;
    size_t out_len;
    char err[200];
    assert_int_equal(
        record_codec_decompress(RECORD_BATCH_COMPRESSION_LZ4, buf, llen, 1 << 24, &out, &out_len, err, sizeof err), -1);

    /* zstd: a streamed frame that does not announce its size. */
    ZSTD_CStream *zs = ZSTD_createCStream();
    assert_non_null(zs);
    ZSTD_initCStream(zs, 5);
    ZSTD_outBuffer ob = {buf, cap, 0};
    ZSTD_inBuffer ib = {in, n, 0};
    while (ib.pos < ib.size)
        assert_false(ZSTD_isError(ZSTD_compressStream(zs, &ob, &ib)));
    assert_int_equal(ZSTD_endStream(zs, &ob), 0);
    ZSTD_freeCStream(zs);
    assert_true(ZSTD_getFrameContentSize(buf, ob.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
    expect_plain(RECORD_BATCH_COMPRESSION_ZSTD, buf, ob.pos, in, n);
    free(buf);
    free(in);
}

/* The eight golden records: keys k0..k7 with their values, in order. */
static void check_golden_records(const uint8_t *plain, size_t len)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, plain, len), 0);
    int i = 0, rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        char key[16], value[64];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(value, sizeof value, "golden value %d from a compressing producer", i);
        assert_int_equal(rec.offset, i);
        assert_int_equal(rec.key_len, strlen(key));
        assert_memory_equal(rec.key, key, strlen(key));
        assert_int_equal(rec.value_len, strlen(value));
        assert_memory_equal(rec.value, value, strlen(value));
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, 8);
}

static void test_librdkafka_batches(void **state)
{
    (void)state;
    const struct {
        const uint8_t *batch;
        size_t len;
        int codec;
    } golden[] = {
        {golden_gzip, sizeof golden_gzip, RECORD_BATCH_COMPRESSION_GZIP},
        {golden_snappy, sizeof golden_snappy, RECORD_BATCH_COMPRESSION_SNAPPY},
        {golden_lz4, sizeof golden_lz4, RECORD_BATCH_COMPRESSION_LZ4},
        {golden_zstd, sizeof golden_zstd, RECORD_BATCH_COMPRESSION_ZSTD},
    };
    char err[200];
    for (size_t g = 0; g < sizeof golden / sizeof golden[0]; g++) {
        struct record_batch_header h;
        assert_int_equal(record_batch_validate(golden[g].batch, golden[g].len, -1, &h, err, sizeof err),
                         KAFKA_ERR_NONE);
        assert_int_equal(record_batch_compression(&h), golden[g].codec);
        uint8_t *plain, *again, *reopened;
        size_t plain_len, again_len, reopened_len;
        if (record_codec_inflate_batch(golden[g].batch, golden[g].len, 1 << 20, &plain, &plain_len, err, sizeof err) !=
            0)
            fail_msg("codec %d: %s", golden[g].codec, err);
        check_golden_records(plain, plain_len);
        /* Rewritten with our writer, the batch reads the same. */
        assert_int_equal(
            record_codec_deflate_batch(plain, plain_len, golden[g].codec, &again, &again_len, err, sizeof err), 0);
        assert_int_equal(record_batch_validate(again, again_len, -1, NULL, err, sizeof err), KAFKA_ERR_NONE);
        /* Header fields as the client wrote them, but for length and CRC. */
        assert_memory_equal(again, golden[g].batch, RECORD_BATCH_OFFSET_BATCH_LENGTH);
        assert_memory_equal(again + RECORD_BATCH_OFFSET_LEADER_EPOCH,
                            golden[g].batch + RECORD_BATCH_OFFSET_LEADER_EPOCH,
                            RECORD_BATCH_OFFSET_CRC - RECORD_BATCH_OFFSET_LEADER_EPOCH);
        assert_memory_equal(again + RECORD_BATCH_OFFSET_ATTRIBUTES, golden[g].batch + RECORD_BATCH_OFFSET_ATTRIBUTES,
                            RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_OFFSET_ATTRIBUTES);
        assert_int_equal(
            record_codec_inflate_batch(again, again_len, 1 << 20, &reopened, &reopened_len, err, sizeof err), 0);
        assert_int_equal(reopened_len, plain_len);
        assert_memory_equal(reopened + RECORD_BATCH_OFFSET_ATTRIBUTES, plain + RECORD_BATCH_OFFSET_ATTRIBUTES,
                            plain_len - RECORD_BATCH_OFFSET_ATTRIBUTES);
        /* Cut anywhere, the client's batch is refused, never overrun. */
        for (size_t cut = RECORD_BATCH_HEADER_SIZE; cut < golden[g].len; cut++) {
            uint8_t *out;
            size_t out_len;
            if (record_codec_decompress(golden[g].codec, golden[g].batch + RECORD_BATCH_HEADER_SIZE,
                                        cut - RECORD_BATCH_HEADER_SIZE, 1 << 20, &out, &out_len, err,
                                        sizeof err) == 0) {
                assert_true(out_len < plain_len - RECORD_BATCH_HEADER_SIZE);
                free(out);
            }
        }
        free(plain);
        free(again);
        free(reopened);
    }
}

static void test_truncated_and_damaged(void **state)
{
    (void)state;
    size_t n = 70 * 1024;
    uint8_t *in = sample(n, 5);
    char err[200];
    for (size_t c = 0; c < CODEC_COUNT; c++) {
        uint8_t *packed, *out;
        size_t packed_len, out_len;
        assert_int_equal(record_codec_compress(codecs[c], in, n, &packed, &packed_len, err, sizeof err), 0);
        /* Every cut short of the whole fails (the decoder needs the end). */
        for (size_t cut = 0; cut < packed_len; cut += cut < 64 ? 1 : 97) {
            int rc = record_codec_decompress(codecs[c], packed, cut, n, &out, &out_len, err, sizeof err);
            if (rc == 0) {
                /* snappy's xerial framing may end between blocks. */
                assert_int_equal(codecs[c], RECORD_BATCH_COMPRESSION_SNAPPY);
                assert_true(out_len < n);
                free(out);
            } else {
                assert_null(out);
                assert_true(err[0] != '\0');
            }
        }
        /* Flipped bytes: either refused or decoded within the limit. */
        for (size_t at = 0; at < packed_len; at += 13) {
            packed[at] ^= 0xA5;
            if (record_codec_decompress(codecs[c], packed, packed_len, n, &out, &out_len, err, sizeof err) == 0) {
                assert_true(out_len <= n);
                free(out);
            }
            packed[at] ^= 0xA5;
        }
        free(packed);
    }
    free(in);
}

static void test_oversized_claims(void **state)
{
    (void)state;
    char err[200];
    uint8_t *out;
    size_t out_len;
    /* A raw snappy block announcing 2^31 bytes in six bytes of data. */
    const uint8_t liar[] = {0x80, 0x80, 0x80, 0x80, 0x08, 0x00};
    assert_int_equal(record_codec_decompress(RECORD_BATCH_COMPRESSION_SNAPPY, liar, sizeof liar, SIZE_MAX / 2, &out,
                                             &out_len, err, sizeof err),
                     -1);
    /* xerial framing whose block length overruns the data. */
    const uint8_t overrun[] = {0x82, 'S', 'N', 'A', 'P', 'P',  'Y',  0,    0,    0, 0,
                               1,    0,   0,   0,   1,   0x7f, 0xff, 0xff, 0xff, 1, 2};
    assert_int_equal(record_codec_decompress(RECORD_BATCH_COMPRESSION_SNAPPY, overrun, sizeof overrun, 1 << 20, &out,
                                             &out_len, err, sizeof err),
                     -1);
    /* 32 MiB of zeros squeezed small: every codec stops at the limit. */
    size_t n = 32u << 20;
    uint8_t *zeros = calloc(1, n);
    assert_non_null(zeros);
    for (size_t c = 0; c < CODEC_COUNT; c++) {
        uint8_t *packed;
        size_t packed_len;
        assert_int_equal(record_codec_compress(codecs[c], zeros, n, &packed, &packed_len, err, sizeof err), 0);
        assert_true(packed_len < n / 16);
        assert_int_equal(
            record_codec_decompress(codecs[c], packed, packed_len, 1 << 20, &out, &out_len, err, sizeof err), -1);
        assert_null(out);
        free(packed);
    }
    free(zeros);
    assert_int_equal(record_codec_decompress(7, liar, sizeof liar, 100, &out, &out_len, err, sizeof err), -1);
    assert_int_equal(record_codec_compress(0, liar, sizeof liar, &out, &out_len, err, sizeof err), -1);
}

static void test_batches(void **state)
{
    (void)state;
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    char key[16], value[64];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "k%d", i % 7);
        snprintf(value, sizeof value, "value number %d", i);
        assert_int_equal(record_batch_builder_add(&b, 1000 + i, key, (int32_t)strlen(key), value,
                                                  i == 3 ? -1 : (int32_t)strlen(value), NULL, 0),
                         0);
    }
    uint8_t *plain;
    size_t plain_len;
    assert_int_equal(record_batch_builder_finish(&b, &plain, &plain_len), 0);
    char err[200];
    for (size_t c = 0; c < CODEC_COUNT; c++) {
        uint8_t *packed, *opened;
        size_t packed_len, opened_len;
        assert_int_equal(record_codec_deflate_batch(plain, plain_len, codecs[c], &packed, &packed_len, err, sizeof err),
                         0);
        struct record_batch_header h;
        assert_int_equal(record_batch_validate(packed, packed_len, -1, &h, err, sizeof err), KAFKA_ERR_NONE);
        assert_int_equal(record_batch_compression(&h), codecs[c]);
        assert_int_equal(h.record_count, 50);
        assert_int_equal(record_batch_total_size(&h), packed_len);
        assert_int_equal(record_codec_inflate_batch(packed, packed_len, 1 << 20, &opened, &opened_len, err, sizeof err),
                         0);
        assert_int_equal(opened_len, plain_len);
        /* Same records, same header but for the CRC. */
        assert_memory_equal(opened, plain, RECORD_BATCH_OFFSET_CRC);
        assert_memory_equal(opened + RECORD_BATCH_OFFSET_ATTRIBUTES, plain + RECORD_BATCH_OFFSET_ATTRIBUTES,
                            plain_len - RECORD_BATCH_OFFSET_ATTRIBUTES);
        struct record_batch_record_iter it;
        struct record_batch_record rec;
        assert_int_equal(record_batch_records_begin(&it, opened, opened_len), 0);
        int count = 0;
        while (record_batch_records_next(&it, &rec) == 1)
            count++;
        assert_int_equal(count, 50);
        /* A records limit below the real size refuses the batch. */
        free(opened);
        assert_int_equal(record_codec_inflate_batch(packed, packed_len, 100, &opened, &opened_len, err, sizeof err),
                         -1);
        /* A header whose length disagrees with the buffer is refused. */
        assert_int_equal(
            record_codec_inflate_batch(packed, packed_len - 1, 1 << 20, &opened, &opened_len, err, sizeof err), -1);

        /* Into a kept buffer: the same bytes, a refusal leaves the buffer
         * usable, and a buffer larger than the limit does not lift it. */
        uint8_t *kept = NULL;
        size_t cap = 0, kept_len = 0;
        for (int round = 0; round < 2; round++) {
            assert_int_equal(
                record_codec_inflate_batch_into(packed, packed_len, 1 << 20, &kept, &cap, &kept_len, err, sizeof err),
                0);
            assert_int_equal(kept_len, plain_len);
            assert_true(cap >= kept_len);
            assert_memory_equal(kept + RECORD_BATCH_OFFSET_ATTRIBUTES, plain + RECORD_BATCH_OFFSET_ATTRIBUTES,
                                plain_len - RECORD_BATCH_OFFSET_ATTRIBUTES);
            assert_int_equal(
                record_codec_inflate_batch_into(packed, packed_len, 100, &kept, &cap, &kept_len, err, sizeof err), -1);
            assert_non_null(strstr(err, "exceeds"));
        }
        free(kept);
        free(packed);
    }
    free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_codecs), cmocka_unit_test(test_foreign_frames),
        cmocka_unit_test(test_librdkafka_batches),   cmocka_unit_test(test_truncated_and_damaged),
        cmocka_unit_test(test_oversized_claims),     cmocka_unit_test(test_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
