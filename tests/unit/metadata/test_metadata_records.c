/* Metadata record codec and image builder: encode -> apply round trips,
 * malformed and unknown records, copy-on-write sharing between images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_records.h"

static struct kafka_uuid make_id(uint8_t seed)
{
    struct kafka_uuid id;
    for (int i = 0; i < 16; i++)
        id.bytes[i] = (uint8_t)(seed * 31 + i + 1);
    return id;
}

/* Encodes one record with fn's output and applies it to the builder. */
static enum metadata_apply_result apply_writer(struct metadata_builder *b, struct kafka_writer *w, int64_t offset,
                                               char *err, size_t errlen)
{
    assert_false(w->failed);
    enum metadata_apply_result r = metadata_record_apply(b, w->buf, w->len, offset, err, errlen);
    w->len = 0;
    return r;
}

static void test_topic_partition_config_round_trip(void **state)
{
    (void)state;
    char err[256];
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    assert_non_null(b);
    struct kafka_uuid id = make_id(1);

    metadata_record_write_topic(&w, "orders", &id);
    assert_int_equal(apply_writer(b, &w, 0, err, sizeof(err)), METADATA_APPLY_OK);
    int32_t replicas[] = {3, 1, 2};
    int32_t isr[] = {3, 1};
    struct metadata_partition p = {.partition_index = 1,
                                   .leader = 3,
                                   .leader_epoch = 7,
                                   .partition_epoch = 9,
                                   .replicas = replicas,
                                   .replica_count = 3,
                                   .isr = isr,
                                   .isr_count = 2};
    metadata_record_write_partition(&w, &id, &p);
    assert_int_equal(apply_writer(b, &w, 1, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_config(&w, METADATA_CONFIG_RESOURCE_TOPIC, "orders", "retention.ms", "1000");
    assert_int_equal(apply_writer(b, &w, 2, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_config(&w, METADATA_CONFIG_RESOURCE_TOPIC, "orders", "cleanup.policy", "compact");
    assert_int_equal(apply_writer(b, &w, 3, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_config(&w, METADATA_CONFIG_RESOURCE_TOPIC, "orders", "retention.ms", NULL);
    assert_int_equal(apply_writer(b, &w, 4, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_feature_level(&w, "metadata.version", 17);
    assert_int_equal(apply_writer(b, &w, 5, err, sizeof(err)), METADATA_APPLY_OK);

    struct metadata_image *img = metadata_builder_finish(b, 5);
    assert_non_null(img);
    assert_int_equal(img->metadata_version, 17);
    assert_int_equal(img->last_offset, 5);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, "orders", 6);
    assert_non_null(t);
    assert_ptr_equal(metadata_image_topic_by_id(img, &id), t);
    assert_int_equal(t->partition_count, 2);
    assert_null(metadata_topic_partition(t, 0)); /* hole: partition 0 never recorded */
    const struct metadata_partition *got = metadata_topic_partition(t, 1);
    assert_non_null(got);
    assert_int_equal(got->leader, 3);
    assert_int_equal(got->leader_epoch, 7);
    assert_int_equal(got->partition_epoch, 9);
    assert_int_equal(got->replica_count, 3);
    assert_memory_equal(got->replicas, replicas, sizeof(replicas));
    assert_int_equal(got->isr_count, 2);
    assert_memory_equal(got->isr, isr, sizeof(isr));
    assert_null(metadata_topic_config(t, "retention.ms"));
    assert_string_equal(metadata_topic_config(t, "cleanup.policy"), "compact");
    assert_false(t->is_internal);
    metadata_image_release(img);
    kafka_writer_free(&w);
}

static void test_broker_registration_and_fencing(void **state)
{
    (void)state;
    char err[256];
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    struct metadata_endpoint eps[2] = {{"PLAINTEXT", "localhost", 9092, 0}, {"SSL", "example.org", 9093, 1}};
    struct metadata_broker br = {.node_id = 4,
                                 .epoch = 10,
                                 .incarnation_id = make_id(9),
                                 .rack = "r1",
                                 .endpoints = eps,
                                 .endpoint_count = 2,
                                 .fenced = true};
    metadata_record_write_register_broker(&w, &br, METADATA_VERSION_LEVEL);
    assert_int_equal(apply_writer(b, &w, 10, err, sizeof(err)), METADATA_APPLY_OK);
    /* Wrong epoch: refused, broker stays fenced. */
    metadata_record_write_unfence_broker(&w, 4, 9);
    assert_int_equal(apply_writer(b, &w, 11, err, sizeof(err)), METADATA_APPLY_INVALID);
    assert_true(metadata_builder_peek(b)->brokers[0].fenced);
    metadata_record_write_unfence_broker(&w, 4, 10);
    assert_int_equal(apply_writer(b, &w, 12, err, sizeof(err)), METADATA_APPLY_OK);

    struct metadata_image *img = metadata_builder_finish(b, 12);
    const struct metadata_broker *got = metadata_image_broker(img, 4);
    assert_non_null(got);
    assert_false(got->fenced);
    assert_int_equal(got->epoch, 10);
    assert_string_equal(got->rack, "r1");
    assert_int_equal(got->endpoint_count, 2);
    assert_string_equal(got->endpoints[1].listener, "SSL");
    assert_string_equal(got->endpoints[1].host, "example.org");
    assert_int_equal(got->endpoints[1].port, 9093);
    assert_int_equal(got->endpoints[1].security_protocol, 1);
    assert_memory_equal(&got->incarnation_id, &br.incarnation_id, 16);
    assert_int_equal(metadata_image_live_broker_count(img), 1);
    int32_t replicas[] = {4, 5, 6};
    struct metadata_partition p = {.replicas = replicas, .replica_count = 3};
    int32_t offline[3];
    assert_int_equal(metadata_partition_offline_replicas(img, &p, offline, 3), 2);
    assert_int_equal(offline[0], 5);
    assert_int_equal(offline[1], 6);
    metadata_image_release(img);
    kafka_writer_free(&w);
}

static void test_partition_change_bumps_epochs(void **state)
{
    (void)state;
    char err[256];
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    struct kafka_uuid id = make_id(2);
    metadata_record_write_topic(&w, "t", &id);
    assert_int_equal(apply_writer(b, &w, 0, err, sizeof(err)), METADATA_APPLY_OK);
    int32_t replicas[] = {1, 2};
    struct metadata_partition p = {
        .partition_index = 0, .leader = 1, .replicas = replicas, .replica_count = 2, .isr = replicas, .isr_count = 2};
    metadata_record_write_partition(&w, &id, &p);
    assert_int_equal(apply_writer(b, &w, 1, err, sizeof(err)), METADATA_APPLY_OK);
    struct metadata_image *before = metadata_builder_finish(b, 1);

    b = metadata_builder_new(before);
    int32_t shrunk[] = {2};
    struct metadata_partition_change c = {.partition_index = 0, .leader = 2, .isr = shrunk, .isr_count = 1};
    metadata_record_write_partition_change(&w, &id, &c);
    assert_int_equal(apply_writer(b, &w, 2, err, sizeof(err)), METADATA_APPLY_OK);
    struct metadata_image *after = metadata_builder_finish(b, 2);

    const struct metadata_partition *old_p = metadata_topic_partition(metadata_image_topic_by_id(before, &id), 0);
    const struct metadata_partition *new_p = metadata_topic_partition(metadata_image_topic_by_id(after, &id), 0);
    /* The base image is untouched (copy-on-write). */
    assert_int_equal(old_p->leader, 1);
    assert_int_equal(old_p->isr_count, 2);
    assert_int_equal(new_p->leader, 2);
    assert_int_equal(new_p->leader_epoch, old_p->leader_epoch + 1);
    assert_int_equal(new_p->partition_epoch, old_p->partition_epoch + 1);
    assert_int_equal(new_p->isr_count, 1);
    assert_int_equal(new_p->isr[0], 2);
    assert_int_equal(new_p->replica_count, 2);
    metadata_image_release(before);
    metadata_image_release(after);
    kafka_writer_free(&w);
}

static void test_unchanged_topics_are_shared(void **state)
{
    (void)state;
    char err[256];
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    struct kafka_uuid a = make_id(3), c = make_id(4);
    metadata_record_write_topic(&w, "b-topic", &a);
    assert_int_equal(apply_writer(b, &w, 0, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_topic(&w, "a-topic", &c);
    assert_int_equal(apply_writer(b, &w, 1, err, sizeof(err)), METADATA_APPLY_OK);
    struct metadata_image *one = metadata_builder_finish(b, 1);
    assert_string_equal(one->topics[0]->name, "a-topic"); /* sorted by name */

    b = metadata_builder_new(one);
    metadata_record_write_remove_topic(&w, &a);
    assert_int_equal(apply_writer(b, &w, 2, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_remove_topic(&w, &a);
    assert_int_equal(apply_writer(b, &w, 3, err, sizeof(err)), METADATA_APPLY_INVALID);
    struct metadata_image *two = metadata_builder_finish(b, 3);
    assert_int_equal(two->topic_count, 1);
    assert_null(metadata_image_topic_by_name(two, "b-topic", 7));
    assert_ptr_equal(metadata_image_topic_by_name(two, "a-topic", 7), metadata_image_topic_by_name(one, "a-topic", 7));
    assert_non_null(metadata_image_topic_by_name(one, "b-topic", 7));
    metadata_image_release(one);
    assert_non_null(metadata_image_topic_by_id(two, &c));
    metadata_image_release(two);
    kafka_writer_free(&w);
}

static void test_unknown_and_malformed_records(void **state)
{
    (void)state;
    char err[256];
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    uint8_t body[] = {1, 2, 3};
    metadata_record_write_raw(&w, 99, 0, body, sizeof(body));
    assert_int_equal(apply_writer(b, &w, 0, err, sizeof(err)), METADATA_APPLY_SKIPPED);
    assert_non_null(strstr(err, "99"));
    metadata_record_write_raw(&w, METADATA_RECORD_TOPIC, 7, body, sizeof(body));
    assert_int_equal(apply_writer(b, &w, 1, err, sizeof(err)), METADATA_APPLY_SKIPPED);

    /* Every strict prefix of a valid record is rejected without side effects. */
    struct kafka_uuid id = make_id(5);
    int32_t replicas[] = {1, 2, 3};
    struct metadata_partition p = {
        .partition_index = 0, .leader = 1, .replicas = replicas, .replica_count = 3, .isr = replicas, .isr_count = 3};
    metadata_record_write_topic(&w, "x", &id);
    assert_int_equal(apply_writer(b, &w, 2, err, sizeof(err)), METADATA_APPLY_OK);
    metadata_record_write_partition(&w, &id, &p);
    size_t full = w.len;
    uint8_t *copy = malloc(full + 1);
    memcpy(copy, w.buf, full);
    w.len = 0;
    for (size_t n = 0; n < full; n++)
        assert_int_not_equal(metadata_record_apply(b, copy, n, 3, err, sizeof(err)), METADATA_APPLY_OK);
    /* Trailing garbage is rejected too. */
    copy[full] = 0x55;
    assert_int_equal(metadata_record_apply(b, copy, full + 1, 3, err, sizeof(err)), METADATA_APPLY_INVALID);
    const struct metadata_image *peek = metadata_builder_peek(b);
    assert_int_equal(metadata_image_topic_by_id(peek, &id)->partition_count, 0);
    assert_int_equal(metadata_record_apply(b, copy, full, 3, err, sizeof(err)), METADATA_APPLY_OK);
    free(copy);

    /* A hostile array count cannot make the decoder allocate or overrun. */
    uint8_t hostile[64] = {METADATA_RECORD_FRAME_VERSION, METADATA_RECORD_PARTITION, 0, 0, 0, 0, 0};
    memcpy(&hostile[7], id.bytes, 16);
    hostile[23] = 0xff;
    hostile[24] = 0xff;
    hostile[25] = 0xff;
    hostile[26] = 0xff;
    hostile[27] = 0x0f;
    assert_int_equal(metadata_record_apply(b, hostile, sizeof(hostile), 4, err, sizeof(err)), METADATA_APPLY_INVALID);
    metadata_builder_free(b);
    kafka_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topic_partition_config_round_trip),
        cmocka_unit_test(test_broker_registration_and_fencing),
        cmocka_unit_test(test_partition_change_bumps_epochs),
        cmocka_unit_test(test_unchanged_topics_are_shared),
        cmocka_unit_test(test_unknown_and_malformed_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
