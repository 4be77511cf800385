/* Partition log: append/read, offsets, rolls, index and time-index lookups,
 * high-watermark bound, rejection of bad requests, reopen, truncation,
 * DeleteRecords, LogAppendTime, epochs and partition.metadata. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"

static void open_log(struct log_fixture *f, bool recover)
{
    char err[256] = "";
    if (f->log)
        partition_log_close(f->log);
    f->log = NULL;
    int rc = partition_log_open(f->dir, &f->cfg, recover, &f->log, err, sizeof err);
    if (rc != 0)
        fail_msg("open failed: %s", err);
}

/* Append `count` batches of `records` records each; returns total bytes. */
static size_t append_batches(struct log_fixture *f, int count, int records, int64_t base_ts, size_t value_size,
                             int32_t epoch)
{
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        size_t len;
        uint8_t *batch = test_batch(records, base_ts + i * 1000, value_size, &len);
        struct log_append_result res;
        int64_t end = partition_log_end_offset(f->log);
        assert_int_equal(partition_log_append(f->log, batch, len, epoch, &res), KAFKA_ERR_NONE);
        assert_int_equal(res.base_offset, end);
        assert_int_equal(res.last_offset, end + records - 1);
        assert_int_equal(res.record_count, records);
        total += len;
        free(batch);
    }
    return total;
}

/* Read at offset with max_bytes; check the region is whole, CRC-valid batches
 * in offset order starting with the batch holding offset. Returns batches. */
static int check_read(struct log_fixture *f, int64_t offset, int32_t max_bytes, int64_t hw, int64_t *last_offset)
{
    struct log_read_result r;
    assert_int_equal(partition_log_read(f->log, offset, max_bytes, hw, &r), KAFKA_ERR_NONE);
    if (r.len == 0) {
        assert_int_equal(r.fd, -1);
        return 0;
    }
    uint8_t *buf = test_read_region(&r);
    assert_non_null(buf);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int n = 0;
    int64_t expect = -1;
    record_batch_iter_init(&it, buf, (size_t)r.len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        char err[128];
        assert_int_equal(record_batch_validate(batch, blen, -1, &h, err, sizeof err), 0);
        if (n == 0) {
            assert_true(h.base_offset <= offset);
            assert_true(record_batch_last_offset(&h) >= offset);
        } else {
            assert_int_equal(h.base_offset, expect);
        }
        assert_true(record_batch_last_offset(&h) < hw);
        expect = record_batch_last_offset(&h) + 1;
        n++;
    }
    assert_int_equal(it.pos, (size_t)r.len);
    if (n > 1)
        assert_true(r.len <= max_bytes);
    if (last_offset)
        *last_offset = expect - 1;
    free(buf);
    return n;
}

static void test_append_read(void **state)
{
    struct log_fixture *f = *state;
    open_log(f, false);
    assert_int_equal(partition_log_end_offset(f->log), 0);
    append_batches(f, 10, 3, 1000, 50, 4);
    assert_int_equal(partition_log_end_offset(f->log), 30);
    int64_t last;
    assert_int_equal(check_read(f, 0, 1 << 20, INT64_MAX, &last), 10);
    assert_int_equal(last, 29);
    /* Stored batches carry the assigned offsets and the leader epoch. */
    struct log_read_result r;
    assert_int_equal(partition_log_read(f->log, 4, 1, INT64_MAX, &r), 0);
    uint8_t *buf = test_read_region(&r);
    struct record_batch_header h;
    record_batch_parse_header(buf, (size_t)r.len, &h);
    assert_int_equal(h.base_offset, 3);
    assert_int_equal(h.partition_leader_epoch, 4);
    free(buf);
    /* End of log: empty; beyond it or before the start: out of range. */
    assert_int_equal(check_read(f, 30, 1 << 20, INT64_MAX, NULL), 0);
    assert_int_equal(partition_log_read(f->log, 31, 100, INT64_MAX, &r), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_read(f->log, -1, 100, INT64_MAX, &r), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
}

static void test_max_bytes_and_high_watermark(void **state)
{
    struct log_fixture *f = *state;
    open_log(f, false);
    append_batches(f, 20, 5, 0, 100, -1);
    /* A tiny max_bytes still returns one whole batch. */
    assert_int_equal(check_read(f, 7, 1, INT64_MAX, NULL), 1);
    /* Never a batch at or above the high watermark. */
    int64_t last;
    for (int64_t hw = 0; hw <= 100; hw += 3) {
        int n = check_read(f, 0, 1 << 20, hw, &last);
        assert_int_equal(n, hw / 5);
    }
    assert_int_equal(check_read(f, 50, 1 << 20, 50, NULL), 0);
    /* max_bytes cuts at a batch boundary. */
    size_t one;
    uint8_t *b = test_batch(5, 0, 100, &one);
    free(b);
    assert_int_equal(check_read(f, 0, (int32_t)(3 * one + one / 2), INT64_MAX, NULL), 3);
}

static void test_roll_by_size_and_index_lookup(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 8192;
    f->cfg.index_interval_bytes = 512;
    open_log(f, false);
    append_batches(f, 120, 2, 0, 200, -1);
    int segments = partition_log_segment_count(f->log);
    assert_true(segments > 5);
    char path[512];
    snprintf(path, sizeof path, "%s/%020d.log", f->dir, 0);
    int64_t first_size = test_file_size(path);
    assert_true(first_size > 0 && first_size <= 8192);
    snprintf(path, sizeof path, "%s/%020d.index", f->dir, 0);
    int64_t index_size = test_file_size(path);
    assert_true(index_size >= 8 && index_size % 8 == 0);
    /* Every offset is found in the batch that holds it. */
    for (int64_t off = 0; off < 240; off++)
        assert_int_equal(check_read(f, off, 1, INT64_MAX, NULL), 1);
    /* A read does not cross into the next segment. */
    int64_t last;
    int n = check_read(f, 0, 1 << 30, INT64_MAX, &last);
    assert_true(n > 1 && last < 239);
    /* Reopen trusting the files: same end, same answers. */
    open_log(f, false);
    assert_int_equal(partition_log_end_offset(f->log), 240);
    assert_int_equal(partition_log_segment_count(f->log), segments);
    for (int64_t off = 0; off < 240; off += 7)
        assert_int_equal(check_read(f, off, 1, INT64_MAX, NULL), 1);
    append_batches(f, 1, 2, 0, 10, -1);
    assert_int_equal(partition_log_end_offset(f->log), 242);
}

static void test_timestamps(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.index_interval_bytes = 256;
    open_log(f, false);
    /* Batch i has records at 1000*i + 10000 and +1 .. +3. */
    append_batches(f, 30, 4, 10000, 100, -1);
    int64_t off, ts;
    assert_int_equal(partition_log_offset_for_timestamp(f->log, 0, &off, &ts), 0);
    assert_int_equal(off, 0);
    assert_int_equal(ts, 10000);
    assert_int_equal(partition_log_offset_for_timestamp(f->log, 15002, &off, &ts), 0);
    assert_int_equal(off, 5 * 4 + 2);
    assert_int_equal(ts, 15002);
    assert_int_equal(partition_log_offset_for_timestamp(f->log, 15004, &off, &ts), 0);
    assert_int_equal(off, 6 * 4);
    assert_int_equal(ts, 16000);
    assert_int_equal(partition_log_offset_for_timestamp(f->log, 39004, &off, &ts), 0);
    assert_int_equal(off, -1);
    assert_int_equal(partition_log_max_timestamp(f->log, &off, &ts), 0);
    assert_int_equal(ts, 39003);
    assert_int_equal(off, 119);
    char path[512];
    snprintf(path, sizeof path, "%s/%020d.timeindex", f->dir, 0);
    int64_t tsize = test_file_size(path);
    assert_true(tsize >= 12 && tsize % 12 == 0);
    /* Same answers after reopening (index loaded from disk). */
    open_log(f, false);
    assert_int_equal(partition_log_offset_for_timestamp(f->log, 27001, &off, &ts), 0);
    assert_int_equal(off, 17 * 4 + 1);
}

static void test_log_append_time(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.message_timestamp_type = LOG_TIMESTAMP_LOG_APPEND_TIME;
    open_log(f, false);
    size_t len;
    uint8_t *batch = test_batch(3, 5, 10, &len);
    struct log_append_result res;
    assert_int_equal(partition_log_append(f->log, batch, len, -1, &res), 0);
    assert_true(res.log_append_time > 1000000000000LL);
    free(batch);
    struct log_read_result r;
    assert_int_equal(partition_log_read(f->log, 0, 1000, INT64_MAX, &r), 0);
    uint8_t *buf = test_read_region(&r);
    struct record_batch_header h;
    char err[128];
    assert_int_equal(record_batch_validate(buf, (size_t)r.len, -1, &h, err, sizeof err), 0);
    assert_true(record_batch_is_log_append_time(&h));
    assert_int_equal(h.max_timestamp, res.log_append_time);
    free(buf);
}

static void test_rejects_whole_request(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.max_message_bytes = 2000;
    open_log(f, false);
    append_batches(f, 1, 2, 0, 10, -1);
    size_t l1, l2;
    uint8_t *good = test_batch(2, 0, 10, &l1);
    uint8_t *bad = test_batch(2, 0, 10, &l2);
    bad[l2 - 1] ^= 1;
    uint8_t *req = malloc(l1 + l2);
    memcpy(req, good, l1);
    memcpy(req + l1, bad, l2);
    struct log_append_result res;
    assert_int_equal(partition_log_append(f->log, req, l1 + l2, -1, &res), KAFKA_ERR_CORRUPT_MESSAGE);
    assert_int_equal(partition_log_end_offset(f->log), 2);
    /* Truncated trailing batch. */
    assert_int_equal(partition_log_append(f->log, req, l1 + 30, -1, &res), KAFKA_ERR_CORRUPT_MESSAGE);
    free(req);
    free(good);
    free(bad);
    /* Over max.message.bytes. */
    uint8_t *big = test_batch(1, 0, 3000, &l1);
    assert_int_equal(partition_log_append(f->log, big, l1, -1, &res), KAFKA_ERR_MESSAGE_TOO_LARGE);
    free(big);
    assert_int_equal(partition_log_end_offset(f->log), 2);
    assert_int_equal(check_read(f, 0, 1 << 20, INT64_MAX, NULL), 1);
}

static void test_truncate_and_delete_records(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 4096;
    open_log(f, false);
    append_batches(f, 40, 3, 0, 100, 1);
    int before = partition_log_segment_count(f->log);
    /* Offset 50 sits inside batch [48, 50]: that batch goes too. */
    assert_int_equal(partition_log_truncate_to(f->log, 50), 0);
    assert_int_equal(partition_log_end_offset(f->log), 48);
    assert_true(partition_log_segment_count(f->log) < before);
    int64_t last;
    check_read(f, 40, 1 << 20, INT64_MAX, &last);
    assert_true(last <= 47);
    append_batches(f, 1, 3, 0, 100, 2);
    assert_int_equal(partition_log_end_offset(f->log), 51);
    assert_int_equal(partition_log_latest_epoch(f->log), 2);
    int32_t found;
    assert_int_equal(partition_log_end_offset_for_epoch(f->log, 1, &found), 48);
    assert_int_equal(found, 1);

    assert_int_equal(partition_log_delete_records_before(f->log, 30), 0);
    assert_int_equal(partition_log_start_offset(f->log), 30);
    struct log_read_result r;
    assert_int_equal(partition_log_read(f->log, 29, 100, INT64_MAX, &r), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(check_read(f, 30, 1, INT64_MAX, NULL), 1);
    assert_int_equal(partition_log_delete_records_before(f->log, 52), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    /* Truncate below the first segment: start over at that offset. */
    assert_int_equal(partition_log_truncate_to(f->log, 0), 0);
    assert_int_equal(partition_log_end_offset(f->log), 0);
    assert_int_equal(partition_log_start_offset(f->log), 0);
    assert_int_equal(partition_log_segment_count(f->log), 1);
}

static void test_metadata_and_epoch_files(void **state)
{
    struct log_fixture *f = *state;
    open_log(f, false);
    uint8_t id[16], back[16];
    for (int i = 0; i < 16; i++)
        id[i] = (uint8_t)(i * 17 + 3);
    assert_int_equal(partition_log_write_metadata(f->log, id), 0);
    assert_int_equal(partition_log_topic_id(f->log, back), 0);
    assert_memory_equal(id, back, 16);
    append_batches(f, 1, 1, 0, 1, 3);
    append_batches(f, 1, 1, 0, 1, 5);
    char path[512];
    snprintf(path, sizeof path, "%s/leader-epoch-checkpoint", f->dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char text[128] = "";
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    assert_string_equal(text, "0\n2\n3 0\n5 1\n");
    open_log(f, false);
    assert_int_equal(partition_log_latest_epoch(f->log), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_FIXTURE_TEST(test_append_read),
        LOG_FIXTURE_TEST(test_max_bytes_and_high_watermark),
        LOG_FIXTURE_TEST(test_roll_by_size_and_index_lookup),
        LOG_FIXTURE_TEST(test_timestamps),
        LOG_FIXTURE_TEST(test_log_append_time),
        LOG_FIXTURE_TEST(test_rejects_whole_request),
        LOG_FIXTURE_TEST(test_truncate_and_delete_records),
        LOG_FIXTURE_TEST(test_metadata_and_epoch_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
