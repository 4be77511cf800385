/* Offsets by timestamp (ListOffsets) inside compressed batches: the answer
 * is the first record with a timestamp at or past the target, found by
 * opening the batch, in every codec; the max-timestamp answer is the first
 * record holding the largest timestamp, not the last offset of its batch.
 * Both as Kafka answers them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codec/record_codec.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

#define PER_BATCH 10

static int setup(void **state)
{
    if (log_fixture_setup(state) != 0)
        return -1;
    struct log_fixture *f = *state;
    f->cfg.index_interval_bytes = 64;
    return 0;
}

static void open_log(struct log_fixture *f)
{
    char err[256] = "";
    if (f->log)
        partition_log_close(f->log);
    f->log = NULL;
    if (partition_log_open(f->dir, &f->cfg, false, &f->log, err, sizeof err) != 0)
        fail_msg("open failed: %s", err);
}

/* Appends one batch of PER_BATCH records with these timestamps, compressed
 * with codec (or not, for NONE). */
static void append_batch(struct log_fixture *f, int codec, const int64_t *timestamps)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, timestamps[0]);
    for (int i = 0; i < PER_BATCH; i++) {
        char key[16], value[64];
        int klen = snprintf(key, sizeof key, "k%d", i);
        int vlen = snprintf(value, sizeof value, "value %d with some padding to compress", i);
        assert_int_equal(record_batch_builder_add(&b, timestamps[i], key, klen, value, vlen, NULL, 0), 0);
    }
    uint8_t *plain, *batch;
    size_t plain_len, len;
    char err[200];
    assert_int_equal(record_batch_builder_finish(&b, &plain, &plain_len), 0);
    if (codec == RECORD_BATCH_COMPRESSION_NONE) {
        batch = plain;
        len = plain_len;
    } else {
        assert_int_equal(record_codec_deflate_batch(plain, plain_len, codec, &batch, &len, err, sizeof err), 0);
        free(plain);
    }
    struct log_append_result res;
    assert_int_equal(partition_log_append(f->log, batch, len, -1, &res), KAFKA_ERR_NONE);
    assert_int_equal(res.record_count, PER_BATCH);
    free(batch);
}

static void expect_for_timestamp(struct log_fixture *f, int64_t target, int64_t offset, int64_t timestamp)
{
    int64_t off, ts;
    assert_int_equal(partition_log_offset_for_timestamp(f->log, target, &off, &ts), KAFKA_ERR_NONE);
    if (off != offset || ts != timestamp)
        fail_msg("timestamp %lld: offset %lld at %lld, expected %lld at %lld", (long long)target, (long long)off,
                 (long long)ts, (long long)offset, (long long)timestamp);
}

static void expect_answers(struct log_fixture *f)
{
    /* Batch 0 (offsets 0-9) at 1000..1009; batch 1 (10-19) peaks at 2009
     * on offsets 12 and 15; batch 2 (20-29) at 1500..1509, below the peak. */
    expect_for_timestamp(f, 0, 0, 1000);
    expect_for_timestamp(f, 1004, 4, 1004);
    expect_for_timestamp(f, 1010, 10, 2000);
    expect_for_timestamp(f, 2006, 12, 2009);
    expect_for_timestamp(f, 2010, -1, -1);
    int64_t off, ts;
    assert_int_equal(partition_log_max_timestamp(f->log, &off, &ts), KAFKA_ERR_NONE);
    assert_int_equal(ts, 2009);
    assert_int_equal(off, 12);
}

static void check_codec(void **state, int codec)
{
    struct log_fixture *f = *state;
    open_log(f);
    int64_t first[PER_BATCH], peak[PER_BATCH] = {2000, 2001, 2009, 2002, 2003, 2009, 2004, 2005, 2006, 2007},
                              after[PER_BATCH];
    for (int i = 0; i < PER_BATCH; i++) {
        first[i] = 1000 + i;
        after[i] = 1500 + i;
    }
    append_batch(f, codec, first);
    append_batch(f, codec, peak);
    append_batch(f, codec, after);
    expect_answers(f);
    /* The same from the indexes on disk. */
    open_log(f);
    expect_answers(f);
}

static void test_none(void **state)
{
    check_codec(state, RECORD_BATCH_COMPRESSION_NONE);
}
static void test_gzip(void **state)
{
    check_codec(state, RECORD_BATCH_COMPRESSION_GZIP);
}
static void test_snappy(void **state)
{
    check_codec(state, RECORD_BATCH_COMPRESSION_SNAPPY);
}
static void test_lz4(void **state)
{
    check_codec(state, RECORD_BATCH_COMPRESSION_LZ4);
}
static void test_zstd(void **state)
{
    check_codec(state, RECORD_BATCH_COMPRESSION_ZSTD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_none, setup, log_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_gzip, setup, log_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_snappy, setup, log_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lz4, setup, log_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_zstd, setup, log_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
