/* Requests fuzz_broker_requests found the broker mishandling, byte by
 * byte on one raw connection: each must now get its proper answer (before
 * the fix the broker closed the connection or worse). The inputs
 * themselves are kept as seeds in tests/fuzz/broker-regressions/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR_NONE 0
#define ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define ERR_INVALID_REQUEST 42
#define ERR_POLICY_VIOLATION 44

#define TOPIC "fz-t"

/* Tests that reached their end; the broker dir is kept unless all did. */
static int passed_tests;

/* One topic of a Metadata v10+ answer. */
struct md_topic {
    int16_t error;
    char name[64];
    bool name_null;
    uint8_t id[16];
    int partitions;
};

/* Metadata (v10-v12) naming topics by (name, id); name NULL sends a null
 * name. Reads every topic of the answer into out (at most 4). */
static int metadata_by_id(struct raw_session *s, int16_t version, const char *const *names, const uint8_t (*ids)[16],
                          int count, struct md_topic *out)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 3, version);
    raw_put_compact_array_len(&w, count);
    for (int i = 0; i < count; i++) {
        raw_put_bytes(&w, ids[i], 16);
        raw_put_compact_string(&w, names[i]);
        raw_put_uvarint(&w, 0);
    }
    raw_put_i8(&w, 0); /* allow auto topic creation */
    if (version <= 10)
        raw_put_i8(&w, 0); /* cluster authorized operations */
    raw_put_i8(&w, 0);     /* topic authorized operations */
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    raw_get_i32(&r); /* throttle */
    int64_t brokers = (int64_t)raw_get_uvarint(&r) - 1;
    char text[256];
    for (int64_t i = 0; i < brokers && !r.overflow; i++) {
        raw_get_i32(&r);
        raw_get_compact_string(&r, text, sizeof text);
        raw_get_i32(&r);
        raw_get_compact_string(&r, text, sizeof text);
        raw_skip_tagged_fields(&r);
    }
    raw_get_compact_string(&r, text, sizeof text); /* cluster id */
    raw_get_i32(&r);                               /* controller */
    int64_t topics = (int64_t)raw_get_uvarint(&r) - 1;
    assert_true(topics >= 0 && topics <= 4);
    for (int64_t t = 0; t < topics && !r.overflow; t++) {
        struct md_topic *mt = &out[t];
        mt->error = raw_get_i16(&r);
        mt->name_null = !raw_get_compact_string(&r, mt->name, sizeof mt->name);
        raw_get_uuid(&r, mt->id);
        raw_get_i8(&r); /* internal */
        int64_t parts = (int64_t)raw_get_uvarint(&r) - 1;
        mt->partitions = (int)parts;
        for (int64_t p = 0; p < parts && !r.overflow; p++) {
            raw_skip(&r, 2 + 4 + 4 + 4);
            for (int list = 0; list < 3; list++)
                raw_skip(&r, 4 * ((size_t)raw_get_uvarint(&r) - 1));
            raw_skip_tagged_fields(&r);
        }
        raw_get_i32(&r); /* topic authorized operations */
        raw_skip_tagged_fields(&r);
    }
    if (version <= 10)
        raw_get_i32(&r); /* cluster authorized operations */
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return (int)topics;
}

/* Metadata v10 and v11 carry topic ids but may not use them: a null name
 * was echoed into an answer that cannot carry one, the encoder refused it
 * and the broker closed the connection. Now, as in Kafka, INVALID_REQUEST
 * on every topic (a null name answered as ""); v12 still finds by id. */
static void test_metadata_topic_ids_before_v12(void **state)
{
    struct raw_broker_fixture *st = *state;
    static const uint8_t zero[16];
    struct md_topic out[4];
    for (int16_t version = 10; version <= 11; version++) {
        const char *names[] = {NULL, TOPIC};
        const uint8_t ids[2][16] = {{0}, {0}};
        memset(out, 0, sizeof out);
        assert_int_equal(metadata_by_id(&st->session, version, names, ids, 2, out), 2);
        assert_int_equal(out[0].error, ERR_INVALID_REQUEST);
        assert_false(out[0].name_null);
        assert_string_equal(out[0].name, "");
        assert_int_equal(out[1].error, ERR_INVALID_REQUEST);
        assert_string_equal(out[1].name, TOPIC);

        /* A named topic with its id set is refused the same way. */
        const char *named[] = {TOPIC};
        uint8_t with_id[1][16];
        memcpy(with_id[0], st->topic_id, 16);
        assert_int_equal(metadata_by_id(&st->session, version, named, (const uint8_t(*)[16])with_id, 1, out), 1);
        assert_int_equal(out[0].error, ERR_INVALID_REQUEST);

        /* Names alone still work at these versions. */
        assert_int_equal(metadata_by_id(&st->session, version, named, ids, 1, out), 1);
        assert_int_equal(out[0].error, ERR_NONE);
        assert_memory_equal(out[0].id, st->topic_id, 16);
        assert_int_equal(out[0].partitions, 1);
    }
    const char *by_id[] = {NULL};
    uint8_t id[1][16];
    memcpy(id[0], st->topic_id, 16);
    assert_int_equal(metadata_by_id(&st->session, 12, by_id, (const uint8_t(*)[16])id, 1, out), 1);
    assert_int_equal(out[0].error, ERR_NONE);
    assert_string_equal(out[0].name, TOPIC);
    assert_int_equal(out[0].partitions, 1);
    assert_memory_not_equal(out[0].id, zero, 16);
    passed_tests++;
}

#define FZ_TEST_COUNT 3

/* An int16-length string that may hold NUL bytes. */
static void put_raw_string(struct raw_writer *w, const char *bytes, size_t len)
{
    raw_put_i16(w, (int16_t)len);
    raw_put_bytes(w, bytes, len);
}

/* Starts a request whose body opens with an array of one topic name (may
 * hold NUL bytes). */
static void begin_one_topic(struct raw_session *s, struct raw_writer *w, int16_t api, int16_t version, const char *name,
                            size_t name_len)
{
    raw_writer_init(w);
    raw_frame_begin(w, api, version, ++s->correlation, "fz-client");
    raw_put_i32(w, 1);
    put_raw_string(w, name, name_len);
}

/* Errors of a CreateTopics v2 or CreatePartitions v0 answer (same layout:
 * name, error, message per topic) into errors; returns the topic count. */
static int admin_errors(struct raw_session *s, struct raw_writer *w, int16_t *errors, int max)
{
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, w, &r, false);
    raw_get_i32(&r);
    int n = raw_get_i32(&r);
    assert_true(n >= 0 && n <= max);
    for (int i = 0; i < n; i++) {
        raw_skip_string(&r);
        errors[i] = raw_get_i16(&r);
        raw_skip_string(&r);
    }
    raw_session_finish_read(&r, frame);
    return n;
}

/* CreateTopics v2 of `count` topics "<prefix>-<i>" with `partitions` each. */
static int create_topics(struct raw_session *s, const char *prefix, int count, int32_t partitions, int16_t *errors)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 19, 2, ++s->correlation, "fz-client");
    raw_put_i32(&w, count);
    for (int i = 0; i < count; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        raw_put_string(&w, name);
        raw_put_i32(&w, partitions);
        raw_put_i16(&w, 1);
        raw_put_i32(&w, 0); /* assignments */
        raw_put_i32(&w, 0); /* configs */
    }
    raw_put_i32(&w, 30000);
    raw_put_i8(&w, 0);
    return admin_errors(s, &w, errors, count);
}

/* CreatePartitions v0 of one topic (name may hold NUL bytes) to `count`. */
static int16_t create_partitions(struct raw_session *s, const char *name, size_t name_len, int32_t count)
{
    struct raw_writer w;
    begin_one_topic(s, &w, 37, 0, name, name_len);
    raw_put_i32(&w, count);
    raw_put_i32(&w, -1); /* no assignments */
    raw_put_i32(&w, 30000);
    raw_put_i8(&w, 0);
    int16_t error = -1;
    assert_int_equal(admin_errors(s, &w, &error, 1), 1);
    return error;
}

/* DeleteTopics v1 of one name (may hold NUL bytes); returns its error. */
static int16_t delete_topic(struct raw_session *s, const char *name, size_t name_len)
{
    struct raw_writer w;
    begin_one_topic(s, &w, 20, 1, name, name_len);
    raw_put_i32(&w, 30000);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    int16_t error = raw_get_i16(&r);
    raw_session_finish_read(&r, frame);
    return error;
}

/* Partitions of a topic by Metadata v12 (by name); -1 when unknown. */
static int partition_count(struct raw_session *s, const char *topic)
{
    const char *names[] = {topic};
    const uint8_t ids[1][16] = {{0}};
    struct md_topic out[4];
    memset(out, 0, sizeof out);
    assert_int_equal(metadata_by_id(s, 12, names, ids, 1, out), 1);
    return out[0].error == ERR_NONE ? out[0].partitions : -1;
}

/* A CreatePartitions of 66560 partitions kept the broker busy past the
 * fuzzer's 10 s deadline (the per-topic bound was 100000, and nothing
 * bounded a request of many topics). Now, as in Kafka, a CreateTopics or
 * CreatePartitions request adding more than 10000 partitions in all is
 * refused with POLICY_VIOLATION on every topic, before anything is made. */
static void test_partitions_per_request_bounded(void **state)
{
    struct raw_broker_fixture *st = *state;
    int16_t errors[8];
    /* Two topics of 6000: each under any per-topic bound, 12000 together. */
    assert_int_equal(create_topics(&st->session, "fz-many", 2, 6000, errors), 2);
    assert_int_equal(errors[0], ERR_POLICY_VIOLATION);
    assert_int_equal(errors[1], ERR_POLICY_VIOLATION);
    assert_int_equal(partition_count(&st->session, "fz-many-0"), -1);
    assert_int_equal(create_topics(&st->session, "fz-big", 1, 10001, errors), 1);
    assert_int_equal(errors[0], ERR_POLICY_VIOLATION);
    assert_int_equal(create_topics(&st->session, "fz-grow", 1, 1, errors), 1);
    assert_int_equal(errors[0], ERR_NONE);
    assert_int_equal(create_partitions(&st->session, "fz-grow-0", 9, 66560), ERR_POLICY_VIOLATION);
    assert_int_equal(partition_count(&st->session, "fz-grow-0"), 1);
    assert_int_equal(create_partitions(&st->session, "fz-grow-0", 9, 3), ERR_NONE);
    assert_int_equal(partition_count(&st->session, "fz-grow-0"), 3);
    passed_tests++;
}

/* Metadata v4 naming one topic (may hold NUL bytes), auto-creation allowed;
 * the answer is read and dropped. */
static void metadata_auto_create(struct raw_session *s, const char *name, size_t name_len)
{
    struct raw_writer w;
    begin_one_topic(s, &w, 3, 4, name, name_len);
    raw_put_i8(&w, 1);
    struct raw_reader r;
    free(raw_session_roundtrip(s, &w, &r, false));
}

/* DeleteRecords v0 of partition 0 up to the high watermark; its error. */
static int16_t delete_records(struct raw_session *s, const char *name, size_t name_len)
{
    struct raw_writer w;
    begin_one_topic(s, &w, 21, 0, name, name_len);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, -1);
    raw_put_i32(&w, 30000);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
    raw_get_i32(&r); /* throttle */
    raw_expect_one_partition(&r, 0);
    raw_get_i64(&r);
    int16_t error = raw_get_i16(&r);
    raw_session_finish_read(&r, frame);
    return error;
}

/* Fetch v4 of partition 0 from offset 0 without waiting; its error. */
static int16_t fetch_partition_error(struct raw_session *s, const char *name, size_t name_len)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 1, 4, ++s->correlation, "fz-client");
    raw_put_i32(&w, -1);      /* replica id */
    raw_put_i32(&w, 0);       /* max wait */
    raw_put_i32(&w, 1);       /* min bytes */
    raw_put_i32(&w, 1 << 20); /* max bytes */
    raw_put_i8(&w, 0);
    raw_put_i32(&w, 1);
    put_raw_string(&w, name, name_len);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, 0);
    raw_put_i32(&w, 1 << 20);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
    raw_get_i32(&r); /* throttle */
    raw_expect_one_partition(&r, 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame); /* the rest (watermarks, records) does not matter here */
    return error;
}

/* AlterConfigs v0 (validate only) setting retention.ms on one topic (name
 * may hold NUL bytes); returns its error. */
static int16_t validate_alter_configs(struct raw_session *s, const char *name, size_t name_len)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 33, 0, ++s->correlation, "fz-client");
    raw_put_i32(&w, 1);
    raw_put_i8(&w, 2); /* TOPIC */
    put_raw_string(&w, name, name_len);
    raw_put_i32(&w, 1);
    raw_put_string(&w, "retention.ms");
    raw_put_string(&w, "60000");
    raw_put_i8(&w, 1); /* validate only */
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_i32(&r), 1);
    int16_t error = raw_get_i16(&r);
    raw_skip_string(&r); /* message */
    assert_int_equal(raw_get_i8(&r), 2);
    raw_skip_string(&r);
    raw_session_finish_read(&r, frame);
    return error;
}

/* The input that found the above named its topic "fuzz\0\0\0&". A name
 * with a NUL byte in it used to be cut at the NUL, so requests for
 * "fz-t\0..." acted on "fz-t": CreatePartitions grew it, DeleteTopics
 * deleted it, AlterConfigs changed it, DeleteRecords and Fetch (before
 * v13) reached its partitions,
 * and Metadata auto-created the name before the NUL. Such a name now names
 * no topic. */
static void test_nul_in_topic_name(void **state)
{
    struct raw_broker_fixture *st = *state;
    static const char name[] = TOPIC "\0\0\0&";
    assert_int_equal(create_partitions(&st->session, name, sizeof name - 1, 2), ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(partition_count(&st->session, TOPIC), 1);
    assert_int_equal(delete_topic(&st->session, name, sizeof name - 1), ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(partition_count(&st->session, TOPIC), 1);
    assert_int_equal(delete_records(&st->session, name, sizeof name - 1), ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(delete_records(&st->session, TOPIC, strlen(TOPIC)), ERR_NONE);
    assert_int_equal(fetch_partition_error(&st->session, name, sizeof name - 1), ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(fetch_partition_error(&st->session, TOPIC, strlen(TOPIC)), ERR_NONE);
    assert_int_equal(validate_alter_configs(&st->session, name, sizeof name - 1), ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(validate_alter_configs(&st->session, TOPIC, strlen(TOPIC)), ERR_NONE);
    static const char fresh[] = "fz-auto\0x";
    metadata_auto_create(&st->session, fresh, sizeof fresh - 1);
    assert_int_equal(partition_count(&st->session, "fz-auto"), -1);
    metadata_auto_create(&st->session, "fz-auto", strlen("fz-auto"));
    assert_true(partition_count(&st->session, "fz-auto") > 0);
    passed_tests++;
}

static int fz_setup(void **state)
{
    static struct raw_broker_fixture st;
    *state = &st;
    return raw_broker_fixture_start(&st, TOPIC);
}

static int fz_teardown(void **state)
{
    struct raw_broker_fixture *st = *state;
    if (passed_tests == FZ_TEST_COUNT)
        broker_mark_passed(&st->broker);
    raw_broker_fixture_stop(st);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_topic_ids_before_v12),
        cmocka_unit_test(test_nul_in_topic_name),
        cmocka_unit_test(test_partitions_per_request_bounded),
    };
    return cmocka_run_group_tests(tests, fz_setup, fz_teardown);
}
