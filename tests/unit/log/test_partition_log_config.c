/* Changing an open log's configuration: later appends roll by the new
 * segment.bytes, retention uses the new retention.ms, batch limits follow
 * max.message.bytes, and the data already written stays readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"

static int16_t append_one(struct log_fixture *f, int records, int64_t ts, size_t value_size)
{
    size_t len;
    uint8_t *batch = test_batch(records, ts, value_size, &len);
    assert_non_null(batch);
    struct log_append_result res;
    int16_t code = partition_log_append(f->log, batch, len, 0, &res);
    free(batch);
    return code;
}

static void test_set_config_reports_change_and_copies(void **state)
{
    struct log_fixture *f = *state;
    struct log_config now;
    partition_log_get_config(f->log, &now);
    assert_int_equal(now.segment_bytes, f->cfg.segment_bytes);
    assert_false(partition_log_set_config(f->log, &f->cfg)); /* same settings */

    struct log_config next = f->cfg;
    next.retention_ms = 1234;
    next.segment_bytes = 4096;
    assert_true(partition_log_set_config(f->log, &next));
    next.retention_ms = 99; /* the log keeps its own copy */
    partition_log_get_config(f->log, &now);
    assert_int_equal(now.retention_ms, 1234);
    assert_int_equal(now.segment_bytes, 4096);
}

static void test_smaller_segment_bytes_rolls_next_appends(void **state)
{
    struct log_fixture *f = *state;
    int64_t ts = 1000000;
    for (int i = 0; i < 10; i++)
        assert_int_equal(append_one(f, 5, ts, 200), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_segment_count(f->log), 1); /* 1 GiB segments: no roll */

    struct log_config small = f->cfg;
    small.segment_bytes = 2048;
    assert_true(partition_log_set_config(f->log, &small));
    for (int i = 0; i < 10; i++)
        assert_int_equal(append_one(f, 5, ts, 200), KAFKA_ERR_NONE);
    /* Each ~1.1 KB batch fills most of a 2 KB segment: several rolls. */
    assert_true(partition_log_segment_count(f->log) >= 5);
    assert_int_equal(partition_log_end_offset(f->log), 100);

    /* Everything written before and after the change reads back. */
    struct log_read_result rr;
    assert_int_equal(partition_log_read(f->log, 0, 1 << 20, partition_log_end_offset(f->log), &rr), KAFKA_ERR_NONE);
    assert_true(rr.len > 0);
    uint8_t *data = test_read_region(&rr);
    assert_non_null(data);
    free(data);
}

static void test_retention_ms_change_deletes_old_segments(void **state)
{
    struct log_fixture *f = *state;
    struct log_config cfg = f->cfg;
    cfg.segment_bytes = 2048;
    partition_log_set_config(f->log, &cfg);
    int64_t old_ts = 1000000; /* far in the past */
    for (int i = 0; i < 6; i++)
        assert_int_equal(append_one(f, 5, old_ts, 200), KAFKA_ERR_NONE);
    int before = partition_log_segment_count(f->log);
    assert_true(before >= 3);
    int64_t now = old_ts + 3600 * 1000;
    /* Default retention (7 days) keeps records one hour old. */
    assert_int_equal(partition_log_apply_retention(f->log, now), 0);
    assert_int_equal(partition_log_segment_count(f->log), before);

    cfg.retention_ms = 60 * 1000;
    assert_true(partition_log_set_config(f->log, &cfg));
    assert_true(partition_log_apply_retention(f->log, now) > 0);
    assert_int_equal(partition_log_segment_count(f->log), 1); /* the active segment stays */
    assert_true(partition_log_start_offset(f->log) > 0);
}

static void test_max_message_bytes_change_applies(void **state)
{
    struct log_fixture *f = *state;
    assert_int_equal(append_one(f, 1, 1000, 2000), KAFKA_ERR_NONE);
    struct log_config cfg = f->cfg;
    cfg.max_message_bytes = 1000;
    partition_log_set_config(f->log, &cfg);
    assert_int_equal(append_one(f, 1, 1000, 2000), KAFKA_ERR_MESSAGE_TOO_LARGE);
    assert_int_equal(append_one(f, 1, 1000, 100), KAFKA_ERR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_FIXTURE_TEST_OPEN(test_set_config_reports_change_and_copies),
        LOG_FIXTURE_TEST_OPEN(test_smaller_segment_bytes_rolls_next_appends),
        LOG_FIXTURE_TEST_OPEN(test_retention_ms_change_deletes_old_segments),
        LOG_FIXTURE_TEST_OPEN(test_max_message_bytes_change_applies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
