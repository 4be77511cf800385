/* Produce's per-record errors (v8+, KIP-467), byte by byte: a batch for a
 * compacted topic holding keyless records fails with INVALID_RECORD and
 * names each keyless record by its index in the batch, as Kafka does.
 * librdkafka >= 2.x fails exactly those records with INVALID_RECORD and the
 * others of the batch with _INVALID_DIFFERENT_RECORD; without the list it
 * fails them all as invalid (librdkafka 2.12's test 0011). v7 has no such
 * field: the error alone. */
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

#define API_PRODUCE 0
#define ERR_INVALID_RECORD 87
#define TOPIC "record-errors"
#define RECORDS 6
#define MAX_RECORD_ERRORS 16

/* One partition of a Produce answer. */
struct produce_answer {
    int16_t error_code;
    int64_t base_offset;
    int record_errors; /* -1: the version has no such field */
    int32_t batch_index[MAX_RECORD_ERRORS];
    bool batch_index_message[MAX_RECORD_ERRORS]; /* a non-null message */
    char error_message[256];                     /* "" when null */
};

/* Reads an int16-length nullable string into out; false when null. */
static bool get_string(struct raw_reader *r, char *out, size_t outlen)
{
    int16_t n = raw_get_i16(r);
    out[0] = '\0';
    if (n < 0)
        return false;
    size_t take = (size_t)n < outlen - 1 ? (size_t)n : outlen - 1;
    if (r->pos + (size_t)n > r->len) {
        r->overflow = true;
        return false;
    }
    memcpy(out, r->data + r->pos, take);
    out[take] = '\0';
    r->pos += (size_t)n;
    return true;
}

/* Produces one batch whose keyless records are those with keyless[i] set
 * to partition 0 of TOPIC with acks=1, and parses the answer to its end. */
static void produce(int port, int16_t version, int32_t correlation, const bool *keyless, struct produce_answer *out)
{
    char keys[RECORDS][16];
    struct raw_record records[RECORDS];
    for (int i = 0; i < RECORDS; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        records[i].key = keyless[i] ? NULL : keys[i];
        records[i].value = "value";
    }
    struct raw_writer batch;
    raw_writer_init(&batch);
    raw_build_record_batch(&batch, 1700000000000LL, records, RECORDS);

    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_PRODUCE, version, correlation, "cairn-it");
    raw_put_produce_body(&w, NULL, 1, TOPIC, 0, batch.data, batch.len);
    raw_writer_free(&batch);

    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, correlation, false, 10000, &frame, &r), 0);
    memset(out, 0, sizeof *out);
    assert_int_equal(raw_get_i32(&r), 1); /* topics */
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1); /* partitions */
    assert_int_equal(raw_get_i32(&r), 0); /* index */
    out->error_code = raw_get_i16(&r);
    out->base_offset = raw_get_i64(&r);
    raw_get_i64(&r); /* log_append_time_ms */
    raw_get_i64(&r); /* log_start_offset (v5+) */
    out->record_errors = -1;
    if (version >= 8) {
        int32_t n = raw_get_i32(&r);
        assert_true(n >= 0 && n <= MAX_RECORD_ERRORS);
        out->record_errors = n;
        for (int32_t i = 0; i < n; i++) {
            char msg[256];
            out->batch_index[i] = raw_get_i32(&r);
            out->batch_index_message[i] = get_string(&r, msg, sizeof msg);
        }
        get_string(&r, out->error_message, sizeof out->error_message);
    }
    raw_get_i32(&r); /* throttle_time_ms */
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
}

static void test_keyless_records_named(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    broker_start(&broker, NULL);
    const char *const configs[] = {"cleanup.policy", "compact", NULL};
    rk_create_topic(broker_bootstrap(&broker), TOPIC, 1, configs);
    int port = broker_port(&broker);

    /* Records 1 and 4 have no key. */
    const bool two_keyless[RECORDS] = {false, true, false, false, true, false};
    struct produce_answer a;
    produce(port, 8, 1, two_keyless, &a);
    assert_int_equal(a.error_code, ERR_INVALID_RECORD);
    assert_int_equal(a.base_offset, -1);
    assert_int_equal(a.record_errors, 2);
    assert_int_equal(a.batch_index[0], 1);
    assert_int_equal(a.batch_index[1], 4);
    assert_true(a.batch_index_message[0]);
    assert_true(a.batch_index_message[1]);
    assert_non_null(strstr(a.error_message, "without key"));

    /* Only the first record keyless: one error, at index 0. */
    const bool first_keyless[RECORDS] = {true, false, false, false, false, false};
    produce(port, 8, 2, first_keyless, &a);
    assert_int_equal(a.error_code, ERR_INVALID_RECORD);
    assert_int_equal(a.record_errors, 1);
    assert_int_equal(a.batch_index[0], 0);

    /* v7 carries the error only. */
    produce(port, 7, 3, two_keyless, &a);
    assert_int_equal(a.error_code, ERR_INVALID_RECORD);
    assert_int_equal(a.record_errors, -1);

    /* Nothing of the refused batches was written. */
    const bool none_keyless[RECORDS] = {false};
    produce(port, 8, 4, none_keyless, &a);
    assert_int_equal(a.error_code, 0);
    assert_int_equal(a.base_offset, 0);
    assert_int_equal(a.record_errors, 0);
    assert_string_equal(a.error_message, "");

    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

/* A topic that is not compacted takes keyless records. */
static void test_keyless_records_accepted_when_not_compacted(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    broker_start(&broker, NULL);
    rk_create_topic(broker_bootstrap(&broker), TOPIC, 1, NULL);
    const bool two_keyless[RECORDS] = {false, true, false, false, true, false};
    struct produce_answer a;
    produce(broker_port(&broker), 8, 1, two_keyless, &a);
    assert_int_equal(a.error_code, 0);
    assert_int_equal(a.base_offset, 0);
    assert_int_equal(a.record_errors, 0);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyless_records_named),
        cmocka_unit_test(test_keyless_records_accepted_when_not_compacted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
