/* The metadata record encoder must produce exactly what the generated
 * schema codecs produce (and the decoder must accept older versions the
 * generated codecs write), so the log stays readable by Kafka's tooling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_records.h"
#include "protocol/messages.h"

/* Splits one framed record written by our encoder into its frame and body. */
static const uint8_t *body_of(const struct kafka_writer *w, uint32_t expect_type, uint32_t *version, size_t *len)
{
    struct kafka_reader r;
    kafka_reader_init(&r, w->buf, w->len);
    assert_int_equal(kafka_read_uvarint(&r), METADATA_RECORD_FRAME_VERSION);
    assert_int_equal(kafka_read_uvarint(&r), expect_type);
    *version = kafka_read_uvarint(&r);
    assert_false(r.failed);
    *len = w->len - r.pos;
    return w->buf + r.pos;
}

/* Decodes our body with the generated codec, re-encodes it, compares bytes. */
static void check_same_bytes(const struct kafka_writer *ours, uint32_t type)
{
    uint32_t version;
    size_t len;
    const uint8_t *body = body_of(ours, type, &version, &len);
    const struct kafka_record_desc *desc = kafka_metadata_record_lookup((int16_t)type);
    assert_non_null(desc);
    assert_int_equal(version, desc->max_version); /* we write the latest version */
    void *msg = calloc(1, desc->size_of);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, body, len);
    desc->init(msg);
    if (desc->decode(msg, &r, (int16_t)version, &arena) != 0)
        fail_msg("generated decoder rejected record type %u: %s", type, r.error);
    assert_int_equal(kafka_reader_remaining(&r), 0);
    struct kafka_writer again;
    assert_int_equal(kafka_writer_init(&again, 64), 0);
    assert_int_equal(desc->encode(msg, &again, (int16_t)version), 0);
    assert_int_equal(again.len, len);
    assert_memory_equal(again.buf, body, len);
    kafka_writer_free(&again);
    kafka_arena_free(&arena);
    free(msg);
}

static void test_encodings_match_generated_codecs(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct kafka_uuid id = {{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};

    metadata_record_write_topic(&w, "payments", &id);
    check_same_bytes(&w, METADATA_RECORD_TOPIC);
    w.len = 0;
    int32_t replicas[] = {1, 2, 3};
    struct metadata_partition p = {.partition_index = 5,
                                   .leader = 2,
                                   .leader_epoch = 4,
                                   .partition_epoch = 6,
                                   .replicas = replicas,
                                   .replica_count = 3,
                                   .isr = replicas,
                                   .isr_count = 2};
    metadata_record_write_partition(&w, &id, &p);
    check_same_bytes(&w, METADATA_RECORD_PARTITION);
    w.len = 0;
    metadata_record_write_config(&w, METADATA_CONFIG_RESOURCE_TOPIC, "payments", "retention.ms", "5");
    check_same_bytes(&w, METADATA_RECORD_CONFIG);
    w.len = 0;
    metadata_record_write_config(&w, METADATA_CONFIG_RESOURCE_BROKER, "", "log.retention.ms", NULL);
    check_same_bytes(&w, METADATA_RECORD_CONFIG);
    w.len = 0;
    metadata_record_write_remove_topic(&w, &id);
    check_same_bytes(&w, METADATA_RECORD_REMOVE_TOPIC);
    w.len = 0;
    metadata_record_write_feature_level(&w, "metadata.version", METADATA_VERSION_LEVEL);
    check_same_bytes(&w, METADATA_RECORD_FEATURE_LEVEL);
    w.len = 0;
    metadata_record_write_unfence_broker(&w, 3, 77);
    check_same_bytes(&w, METADATA_RECORD_UNFENCE_BROKER);
    w.len = 0;
    metadata_record_write_fence_broker(&w, 3, 77);
    check_same_bytes(&w, METADATA_RECORD_FENCE_BROKER);
    w.len = 0;
    struct metadata_endpoint eps[2] = {{"PLAINTEXT", "h1", 9092, 0}, {"SASL_SSL", "h2", 9094, 3}};
    struct metadata_broker br = {.node_id = 3,
                                 .epoch = 77,
                                 .incarnation_id = id,
                                 .rack = "rack-a",
                                 .endpoints = eps,
                                 .endpoint_count = 2,
                                 .fenced = true};
    metadata_record_write_register_broker(&w, &br, METADATA_VERSION_LEVEL);
    check_same_bytes(&w, METADATA_RECORD_REGISTER_BROKER);
    w.len = 0;
    br.rack = NULL;
    metadata_record_write_register_broker(&w, &br, METADATA_VERSION_LEVEL);
    check_same_bytes(&w, METADATA_RECORD_REGISTER_BROKER);
    w.len = 0;
    int32_t isr[] = {2};
    struct metadata_partition_change c = {
        .partition_index = 5, .leader = 2, .isr = isr, .isr_count = 1, .replicas = replicas, .replica_count = 3};
    metadata_record_write_partition_change(&w, &id, &c);
    check_same_bytes(&w, METADATA_RECORD_PARTITION_CHANGE);
    w.len = 0;
    struct metadata_partition_change leader_only = {.partition_index = 0, .leader = -1};
    metadata_record_write_partition_change(&w, &id, &leader_only);
    check_same_bytes(&w, METADATA_RECORD_PARTITION_CHANGE);
    kafka_writer_free(&w);
}

/* Records written by the generated codec at older versions replay correctly. */
static void test_older_versions_apply(void **state)
{
    (void)state;
    char err[256];
    struct metadata_builder *b = metadata_builder_new(NULL);
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct kafka_uuid id = {{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 1}};

    struct register_broker_record rb;
    register_broker_record_init(&rb);
    struct register_broker_record_broker_endpoint ep = {kafka_str_from_cstr("PLAINTEXT"),
                                                        kafka_str_from_cstr("old-host"), 9000, 0};
    rb.broker_id = 2;
    rb.broker_epoch = 5;
    rb.end_points = &ep;
    rb.end_points_count = 1;
    rb.rack = (struct kafka_str){NULL, -1};
    rb.fenced = false;
    kafka_write_uvarint(&w, METADATA_RECORD_FRAME_VERSION);
    kafka_write_uvarint(&w, METADATA_RECORD_REGISTER_BROKER);
    kafka_write_uvarint(&w, 0);
    assert_int_equal(register_broker_record_encode(&rb, &w, 0), 0);
    assert_int_equal(metadata_record_apply(b, w.buf, w.len, 5, err, sizeof(err)), METADATA_APPLY_OK);
    w.len = 0;

    struct topic_record tr;
    topic_record_init(&tr);
    tr.name = kafka_str_from_cstr("legacy");
    tr.topic_id = id;
    kafka_write_uvarint(&w, METADATA_RECORD_FRAME_VERSION);
    kafka_write_uvarint(&w, METADATA_RECORD_TOPIC);
    kafka_write_uvarint(&w, 0);
    assert_int_equal(topic_record_encode(&tr, &w, 0), 0);
    assert_int_equal(metadata_record_apply(b, w.buf, w.len, 6, err, sizeof(err)), METADATA_APPLY_OK);
    w.len = 0;

    struct partition_record pr;
    partition_record_init(&pr);
    int32_t reps[] = {2};
    pr.partition_id = 0;
    pr.topic_id = id;
    pr.replicas = reps;
    pr.replicas_count = 1;
    pr.isr = reps;
    pr.isr_count = 1;
    pr.leader = 2;
    pr.leader_epoch = 3;
    pr.partition_epoch = 4;
    pr.leader_recovery_state = 1; /* a tagged field our decoder skips */
    kafka_write_uvarint(&w, METADATA_RECORD_FRAME_VERSION);
    kafka_write_uvarint(&w, METADATA_RECORD_PARTITION);
    kafka_write_uvarint(&w, 0);
    assert_int_equal(partition_record_encode(&pr, &w, 0), 0);
    assert_int_equal(metadata_record_apply(b, w.buf, w.len, 7, err, sizeof(err)), METADATA_APPLY_OK);
    w.len = 0;

    struct metadata_image *img = metadata_builder_finish(b, 7);
    const struct metadata_broker *got = metadata_image_broker(img, 2);
    assert_non_null(got);
    assert_string_equal(got->endpoints[0].host, "old-host");
    assert_null(got->rack);
    const struct metadata_partition *part = metadata_topic_partition(metadata_image_topic_by_name(img, "legacy", 6), 0);
    assert_non_null(part);
    assert_int_equal(part->leader_epoch, 3);
    assert_int_equal(part->partition_epoch, 4);
    metadata_image_release(img);
    kafka_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encodings_match_generated_codecs),
        cmocka_unit_test(test_older_versions_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
