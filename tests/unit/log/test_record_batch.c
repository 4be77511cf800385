/* Record batch v2: builder round trip, validation failures, mutators,
 * batch iteration with a torn tail, varints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/crc32c.h"

static uint8_t *build_batch(int records, int64_t base_ts, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, base_ts);
    for (int i = 0; i < records; i++) {
        char key[16], value[32];
        int klen = snprintf(key, sizeof key, "k%d", i);
        int vlen = snprintf(value, sizeof value, "value-%d", i);
        struct record_batch_header_field hdr = {(const uint8_t *)"h", 1, (const uint8_t *)key, klen};
        assert_int_equal(
            record_batch_builder_add(&b, base_ts + i * 10, key, klen, value, vlen, i % 2 ? &hdr : NULL, i % 2), 0);
    }
    uint8_t *out;
    assert_int_equal(record_batch_builder_finish(&b, &out, len), 0);
    return out;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void test_builder_round_trip(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(5, 1000, &len);
    struct record_batch_header h;
    char err[256];
    assert_int_equal(record_batch_validate(batch, len, 1 << 20, &h, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(h.magic, 2);
    assert_int_equal(h.record_count, 5);
    assert_int_equal(h.last_offset_delta, 4);
    assert_int_equal(h.base_timestamp, 1000);
    assert_int_equal(h.max_timestamp, 1040);
    assert_int_equal(record_batch_total_size(&h), len);
    assert_int_equal(h.crc, crc32c(0, batch + 21, len - 21));

    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, batch, len), 0);
    int n = 0;
    while (record_batch_records_next(&it, &rec) == 1) {
        char want[32];
        snprintf(want, sizeof want, "value-%d", n);
        assert_int_equal(rec.offset, n);
        assert_int_equal(rec.timestamp, 1000 + n * 10);
        assert_int_equal(rec.value_len, (int32_t)strlen(want));
        assert_memory_equal(rec.value, want, strlen(want));
        assert_int_equal(rec.header_count, n % 2);
        if (n % 2) {
            struct record_batch_headers_iter hit;
            struct record_batch_header_field f;
            record_batch_headers_begin(&hit, &rec);
            assert_int_equal(record_batch_headers_next(&hit, &f), 1);
            assert_int_equal(f.key_len, 1);
            assert_memory_equal(f.key, "h", 1);
            assert_int_equal(f.value_len, rec.key_len);
            assert_int_equal(record_batch_headers_next(&hit, &f), 0);
        }
        n++;
    }
    assert_int_equal(n, 5);
    free(batch);
}

static void test_null_key_and_value(void **state)
{
    (void)state;
    struct record_batch_builder b;
    record_batch_builder_init(&b, 5);
    assert_int_equal(record_batch_builder_add(&b, 5, NULL, -1, NULL, -1, NULL, 0), 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    char err[128];
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), 0);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    record_batch_records_begin(&it, batch, len);
    assert_int_equal(record_batch_records_next(&it, &rec), 1);
    assert_null(rec.key);
    assert_int_equal(rec.key_len, -1);
    assert_int_equal(rec.value_len, -1);
    assert_int_equal(record_batch_records_next(&it, &rec), 0);
    free(batch);
}

static void test_bad_crc(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(3, 0, &len);
    char err[256];
    batch[len - 1] ^= 0x40;
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_CORRUPT_MESSAGE);
    assert_non_null(strstr(err, "CRC"));
    assert_false(record_batch_crc_ok(batch, len));
    free(batch);
}

static void test_bad_magic(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(1, 0, &len);
    char err[256];
    batch[16] = 1;
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err),
                     KAFKA_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    batch[16] = 7;
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_CORRUPT_MESSAGE);
    free(batch);
}

static void test_truncated(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(4, 0, &len);
    char err[256];
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(record_batch_validate(batch, cut, -1, NULL, err, sizeof err), KAFKA_ERR_CORRUPT_MESSAGE);
    /* A batch length smaller than the header. */
    put32(batch + 8, 20);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_CORRUPT_MESSAGE);
    free(batch);
}

static void test_oversized(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(4, 0, &len);
    char err[256];
    assert_int_equal(record_batch_validate(batch, len, (int32_t)len, NULL, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(record_batch_validate(batch, len, (int32_t)len - 1, NULL, err, sizeof err),
                     KAFKA_ERR_MESSAGE_TOO_LARGE);
    free(batch);
}

static void test_record_count_mismatch(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(4, 0, &len);
    char err[256];
    /* Count and lastOffsetDelta agree with each other but not with the records. */
    put32(batch + 57, 5);
    put32(batch + 23, 4);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    /* Count disagrees with lastOffsetDelta. */
    put32(batch + 57, 4);
    put32(batch + 23, 7);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    /* Fewer records declared than present. */
    put32(batch + 57, 3);
    put32(batch + 23, 2);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    /* Zero records. */
    put32(batch + 57, 0);
    put32(batch + 23, (uint32_t)-1);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    free(batch);
}

/* Corrupt the first record's length varint so it overruns the batch; the CRC
 * is made valid again so only the record walk can catch it. */
static void test_record_overrun(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(2, 0, &len);
    char err[256];
    batch[61] = 0x7e; /* zigzag 63: longer than the record */
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    /* Endless varint. */
    memset(batch + 61, 0xff, 8);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, NULL, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    free(batch);
}

static void test_compressed_header_only(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(2, 0, &len);
    char err[256];
    /* Claim zstd: the payload is not decompressed, so only header + CRC count. */
    batch[22] = (uint8_t)((batch[22] & ~0x07) | RECORD_BATCH_COMPRESSION_ZSTD);
    memset(batch + 61, 0xAB, len - 61);
    record_batch_update_crc(batch, len);
    struct record_batch_header h;
    assert_int_equal(record_batch_validate(batch, len, -1, &h, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(record_batch_compression(&h), RECORD_BATCH_COMPRESSION_ZSTD);
    struct record_batch_record_iter it;
    assert_int_equal(record_batch_records_begin(&it, batch, len), -1);
    batch[22] = (uint8_t)((batch[22] & ~0x07) | 6);
    record_batch_update_crc(batch, len);
    assert_int_equal(record_batch_validate(batch, len, -1, &h, err, sizeof err), KAFKA_ERR_INVALID_RECORD);
    free(batch);
}

static void test_mutators(void **state)
{
    (void)state;
    size_t len;
    uint8_t *batch = build_batch(3, 100, &len);
    struct record_batch_header h;
    char err[128];
    record_batch_set_base_offset(batch, 123456789012LL);
    record_batch_set_partition_leader_epoch(batch, 17);
    assert_int_equal(record_batch_validate(batch, len, -1, &h, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(h.base_offset, 123456789012LL);
    assert_int_equal(h.partition_leader_epoch, 17);
    assert_false(record_batch_is_log_append_time(&h));

    record_batch_set_log_append_time(batch, len, 999999);
    assert_int_equal(record_batch_validate(batch, len, -1, &h, err, sizeof err), KAFKA_ERR_NONE);
    assert_true(record_batch_is_log_append_time(&h));
    assert_int_equal(h.max_timestamp, 999999);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    record_batch_records_begin(&it, batch, len);
    assert_int_equal(record_batch_records_next(&it, &rec), 1);
    assert_int_equal(rec.timestamp, 999999);
    assert_int_equal(rec.offset, 123456789012LL);
    free(batch);
}

static void test_iterate_batches(void **state)
{
    (void)state;
    size_t l1, l2;
    uint8_t *b1 = build_batch(2, 0, &l1);
    uint8_t *b2 = build_batch(3, 0, &l2);
    size_t total = l1 + l2 + l1;
    uint8_t *buf = malloc(total);
    memcpy(buf, b1, l1);
    memcpy(buf + l1, b2, l2);
    memcpy(buf + l1 + l2, b1, l1);

    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, buf, total);
    assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 1);
    assert_int_equal(blen, l1);
    assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 1);
    assert_int_equal(blen, l2);
    assert_ptr_equal(batch, buf + l1);
    assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 1);
    assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 0);

    /* Every cut inside the last batch is reported as a torn tail. */
    for (size_t cut = l1 + l2 + 1; cut < total; cut++) {
        record_batch_iter_init(&it, buf, cut);
        assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 1);
        assert_int_equal(record_batch_iter_next(&it, &batch, &blen), 1);
        assert_int_equal(record_batch_iter_next(&it, &batch, &blen), -1);
        assert_int_equal(it.pos, l1 + l2);
    }
    free(buf);
    free(b1);
    free(b2);
}

static void test_varints(void **state)
{
    (void)state;
    const int64_t values[] = {0, 1, -1, 63, -64, 64, 300, -300, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    uint8_t buf[10];
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        size_t n = record_batch_write_varlong(buf, values[i]);
        int64_t back;
        assert_int_equal(record_batch_read_varlong(buf, buf + n, &back), n);
        assert_int_equal(back, values[i]);
        assert_int_equal(record_batch_read_varlong(buf, buf + n - 1, &back), 0);
        if (values[i] >= INT32_MIN && values[i] <= INT32_MAX) {
            int32_t v32;
            assert_int_equal(record_batch_read_varint(buf, buf + n, &v32), n);
            assert_int_equal(v32, values[i]);
        } else {
            int32_t v32;
            assert_int_equal(record_batch_read_varint(buf, buf + n, &v32), 0);
        }
    }
    /* -1 encodes as the single byte 0x01; 1 as 0x02 (zigzag). */
    assert_int_equal(record_batch_write_varlong(buf, -1), 1);
    assert_int_equal(buf[0], 0x01);
    assert_int_equal(record_batch_write_varlong(buf, 1), 1);
    assert_int_equal(buf[0], 0x02);
}

/* Lengths and timestamp deltas on both sides of the one-, two- and
 * three-byte varint boundaries read back exactly through the record
 * iterator (which decodes short varints inline). */
static void test_varint_boundaries_in_records(void **state)
{
    (void)state;
    const int32_t sizes[] = {0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8193, 70000};
    const int64_t ts_deltas[] = {0, -1, 63, -64, 64, 8191, -8192, 8192, 1000000, -1000000};
    size_t n_sizes = sizeof sizes / sizeof sizes[0], n_ts = sizeof ts_deltas / sizeof ts_deltas[0];
    uint8_t *payload = calloc(1, 70000);
    assert_non_null(payload);
    const int64_t base_ts = 1700000000000;
    struct record_batch_builder b;
    record_batch_builder_init(&b, base_ts);
    for (size_t i = 0; i < n_sizes; i++)
        assert_int_equal(record_batch_builder_add(&b, base_ts + ts_deltas[i % n_ts], payload, sizes[(i + 3) % n_sizes],
                                                  payload, sizes[i], NULL, 0),
                         0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    char err[128];
    struct record_batch_header h;
    assert_int_equal(record_batch_validate(batch, len, -1, &h, err, sizeof err), 0);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, batch, len), 0);
    for (size_t i = 0; i < n_sizes; i++) {
        assert_int_equal(record_batch_records_next(&it, &rec), 1);
        assert_int_equal(rec.offset_delta, (int32_t)i);
        assert_int_equal(rec.value_len, sizes[i]);
        assert_int_equal(rec.key_len, sizes[(i + 3) % n_sizes]);
        assert_int_equal(rec.timestamp, base_ts + ts_deltas[i % n_ts]);
    }
    assert_int_equal(record_batch_records_next(&it, &rec), 0);
    free(batch);
    free(payload);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builder_round_trip),
        cmocka_unit_test(test_null_key_and_value),
        cmocka_unit_test(test_bad_crc),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_record_count_mismatch),
        cmocka_unit_test(test_record_overrun),
        cmocka_unit_test(test_compressed_header_only),
        cmocka_unit_test(test_mutators),
        cmocka_unit_test(test_iterate_batches),
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_varint_boundaries_in_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
