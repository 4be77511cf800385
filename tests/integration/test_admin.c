/* Admin APIs through librdkafka's admin client (and DescribeCluster raw,
 * which librdkafka 2.0.2 lacks): topic create/delete/grow, configs,
 * auto-creation, offsets by position and by time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Owned by the test's main thread. */
struct admin_state {
    struct test_broker broker;
    rd_kafka_t *rk; /* producer handle used as admin client */
    int passed;
};

static struct admin_state *admin_get(void **state)
{
    return *state;
}

/* Topic count in a full metadata listing with this name (0 or 1). */
static bool admin_topic_listed(rd_kafka_t *rk, const char *topic, int *partitions)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, 10000);
    if (err)
        fail_msg("metadata: %s", rd_kafka_err2str(err));
    bool found = false;
    for (int t = 0; t < md->topic_cnt; t++) {
        if (strcmp(md->topics[t].topic, topic) == 0 && !md->topics[t].err) {
            found = true;
            if (partitions)
                *partitions = md->topics[t].partition_cnt;
        }
    }
    rd_kafka_metadata_destroy(md);
    return found;
}

static void admin_expect_create(rd_kafka_t *rk, const char *topic, int partitions, int rf, const char *const *configs,
                                bool validate_only, rd_kafka_resp_err_t expected)
{
    char errstr[512];
    rd_kafka_resp_err_t err = rk_create_topic_result(rk, topic, partitions, rf, configs, validate_only, errstr,
                                                     sizeof(errstr));
    if (err != expected)
        fail_msg("CreateTopics %s (partitions %d, rf %d%s): got %s (%s), expected %s", topic, partitions, rf,
                 validate_only ? ", validate only" : "", rd_kafka_err2name(err), errstr, rd_kafka_err2name(expected));
}

static void test_create_topics_errors(void **state)
{
    struct admin_state *st = admin_get(state);
    admin_expect_create(st->rk, "adm-validate", 3, 1, NULL, true, RD_KAFKA_RESP_ERR_NO_ERROR);
    usleep(300000);
    assert_false(admin_topic_listed(st->rk, "adm-validate", NULL));

    admin_expect_create(st->rk, "adm-dup", 2, 1, NULL, false, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_true(rk_wait_topic(st->rk, "adm-dup", 2, 10000));
    admin_expect_create(st->rk, "adm-dup", 2, 1, NULL, false, RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);

    admin_expect_create(st->rk, "adm-rf3", 1, 3, NULL, false, RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR);
    const char *bad_value[] = {"retention.ms", "not-a-number", NULL};
    admin_expect_create(st->rk, "adm-badcfg", 1, 1, bad_value, false, RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    const char *unknown_key[] = {"no.such.topic.config", "1", NULL};
    admin_expect_create(st->rk, "adm-badkey", 1, 1, unknown_key, false, RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    assert_false(admin_topic_listed(st->rk, "adm-rf3", NULL));
    assert_false(admin_topic_listed(st->rk, "adm-badcfg", NULL));
    assert_false(admin_topic_listed(st->rk, "adm-badkey", NULL));
    st->passed++;
}

static rd_kafka_resp_err_t admin_delete_topic(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    rd_kafka_resp_err_t result;
    if (!ev) {
        result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev)) {
        result = rd_kafka_event_error(ev);
    } else {
        size_t n = 0;
        const rd_kafka_topic_result_t **topics = rd_kafka_DeleteTopics_result_topics(
            rd_kafka_event_DeleteTopics_result(ev), &n);
        result = n == 1 ? rd_kafka_topic_result_error(topics[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_DeleteTopic_destroy(dt);
    return result;
}

static void test_delete_topics(void **state)
{
    struct admin_state *st = admin_get(state);
    rk_create_topic(broker_bootstrap(&st->broker), "adm-delete", 2, NULL);
    rd_kafka_resp_err_t err = admin_delete_topic(st->rk, "adm-delete");
    if (err)
        fail_msg("DeleteTopics adm-delete: %s", rd_kafka_err2name(err));
    long long deadline = harness_now_ms() + 10000;
    while (admin_topic_listed(st->rk, "adm-delete", NULL) && harness_now_ms() < deadline)
        usleep(100000);
    assert_false(admin_topic_listed(st->rk, "adm-delete", NULL));
    err = admin_delete_topic(st->rk, "adm-delete");
    if (err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        fail_msg("second DeleteTopics adm-delete: %s, expected UNKNOWN_TOPIC_OR_PART", rd_kafka_err2name(err));
    /* The name is free again and a new topic starts empty. */
    rk_create_topic(broker_bootstrap(&st->broker), "adm-delete", 1, NULL);
    int64_t low = -1, high = -1;
    err = rd_kafka_query_watermark_offsets(st->rk, "adm-delete", 0, &low, &high, 10000);
    if (err)
        fail_msg("watermarks of recreated topic: %s", rd_kafka_err2name(err));
    assert_int_equal(low, 0);
    assert_int_equal(high, 0);
    st->passed++;
}

static rd_kafka_resp_err_t admin_create_partitions(rd_kafka_t *rk, const char *topic, int total, char *errstr,
                                                   size_t errlen)
{
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, errstr, errlen);
    if (!np)
        fail_msg("NewPartitions_new: %s", errstr);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    rd_kafka_resp_err_t result;
    errstr[0] = '\0';
    if (!ev) {
        result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev)) {
        result = rd_kafka_event_error(ev);
        snprintf(errstr, errlen, "%s", rd_kafka_event_error_string(ev));
    } else {
        size_t n = 0;
        const rd_kafka_topic_result_t **topics = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &n);
        result = n == 1 ? rd_kafka_topic_result_error(topics[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
        if (n == 1 && rd_kafka_topic_result_error_string(topics[0]))
            snprintf(errstr, errlen, "%s", rd_kafka_topic_result_error_string(topics[0]));
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_NewPartitions_destroy(np);
    return result;
}

static void test_create_partitions(void **state)
{
    struct admin_state *st = admin_get(state);
    rk_create_topic(broker_bootstrap(&st->broker), "adm-grow", 2, NULL);
    char errstr[512];
    rd_kafka_resp_err_t err = admin_create_partitions(st->rk, "adm-grow", 4, errstr, sizeof(errstr));
    if (err)
        fail_msg("CreatePartitions adm-grow 2 -> 4: %s (%s)", rd_kafka_err2name(err), errstr);
    if (!rk_wait_topic(st->rk, "adm-grow", 4, 10000))
        fail_msg("adm-grow does not show 4 led partitions after CreatePartitions");
    err = admin_create_partitions(st->rk, "adm-grow", 1, errstr, sizeof(errstr));
    if (err != RD_KAFKA_RESP_ERR_INVALID_PARTITIONS)
        fail_msg("shrinking adm-grow to 1: %s (%s), expected INVALID_PARTITIONS", rd_kafka_err2name(err), errstr);
    st->passed++;
}

/* Runs DescribeConfigs for one resource and returns the value of `name`
 * (malloc()ed, NULL if absent); *source receives its source. */
static char *admin_describe_config(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *resource, const char *name,
                                   rd_kafka_ConfigSource_t *source, size_t *count)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(type, resource);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    if (!ev)
        fail_msg("DescribeConfigs %s: no answer in 20 s", resource);
    if (rd_kafka_event_error(ev))
        fail_msg("DescribeConfigs %s: %s", resource, rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_ConfigResource_t **resources = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    if (n != 1)
        fail_msg("DescribeConfigs %s: %zu resources in the answer", resource, n);
    if (rd_kafka_ConfigResource_error(resources[0]))
        fail_msg("DescribeConfigs %s: %s (%s)", resource,
                 rd_kafka_err2name(rd_kafka_ConfigResource_error(resources[0])),
                 rd_kafka_ConfigResource_error_string(resources[0]));
    size_t entries_count = 0;
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(resources[0], &entries_count);
    char *value = NULL;
    for (size_t i = 0; i < entries_count; i++) {
        if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), name) == 0) {
            const char *v = rd_kafka_ConfigEntry_value(entries[i]);
            value = strdup(v ? v : "(null)");
            *source = rd_kafka_ConfigEntry_source(entries[i]);
        }
    }
    *count = entries_count;
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    return value;
}

static void test_describe_configs(void **state)
{
    struct admin_state *st = admin_get(state);
    const char *configs[] = {"retention.ms", "123456789", NULL};
    rk_create_topic(broker_bootstrap(&st->broker), "adm-configs", 1, configs);
    rd_kafka_ConfigSource_t source = RD_KAFKA_CONFIG_SOURCE_UNKNOWN_CONFIG;
    size_t count = 0;
    char *value = admin_describe_config(st->rk, RD_KAFKA_RESOURCE_TOPIC, "adm-configs", "retention.ms", &source,
                                        &count);
    if (!value || strcmp(value, "123456789") != 0)
        fail_msg("topic retention.ms is %s, expected 123456789", value ? value : "absent");
    assert_int_equal(source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
    free(value);
    value = admin_describe_config(st->rk, RD_KAFKA_RESOURCE_TOPIC, "adm-configs", "cleanup.policy", &source, &count);
    if (!value || strcmp(value, "delete") != 0)
        fail_msg("topic cleanup.policy is %s, expected the default delete", value ? value : "absent");
    assert_int_not_equal(source, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
    free(value);

    value = admin_describe_config(st->rk, RD_KAFKA_RESOURCE_BROKER, "1", "log.dirs", &source, &count);
    if (!value || strcmp(value, st->broker.data_dir) != 0)
        fail_msg("broker log.dirs is %s, expected %s (%zu entries)", value ? value : "absent", st->broker.data_dir,
                 count);
    free(value);
    st->passed++;
}

static void test_metadata_auto_creates_topic(void **state)
{
    struct admin_state *st = admin_get(state);
    assert_false(admin_topic_listed(st->rk, "adm-auto", NULL));
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(st->rk, "adm-auto", NULL);
    long long deadline = harness_now_ms() + 10000;
    bool created = false;
    rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR_NO_ERROR;
    while (!created && harness_now_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        last = rd_kafka_metadata(st->rk, 0, rkt, &md, 5000);
        if (!last) {
            created = md->topic_cnt == 1 && !md->topics[0].err && md->topics[0].partition_cnt >= 1;
            if (md->topic_cnt == 1)
                last = md->topics[0].err;
            rd_kafka_metadata_destroy(md);
        }
        if (!created)
            usleep(100000);
    }
    rd_kafka_topic_destroy(rkt);
    if (!created)
        fail_msg("Metadata for adm-auto did not create it (last error %s)", rd_kafka_err2name(last));
    int partitions = 0;
    assert_true(admin_topic_listed(st->rk, "adm-auto", &partitions));
    assert_true(partitions >= 1);
    st->passed++;
}

static void test_list_offsets(void **state)
{
    struct admin_state *st = admin_get(state);
    const char *topic = "adm-offsets";
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1, NULL);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t t0 = ((int64_t)now.tv_sec - 600) * 1000;
    for (int i = 0; i < 10; i++) {
        char value[32];
        int n = snprintf(value, sizeof(value), "offset-%d", i);
        rd_kafka_resp_err_t err = rk_produce_blocking(st->rk, topic, 0, NULL, 0, value, (size_t)n, t0 + i * 1000, NULL,
                                                      NULL);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        /* One batch per record so time lookups must look inside the log. */
        rd_kafka_flush(st->rk, 10000);
    }
    struct rk_delivery_stats *stats = rk_producer_stats(st->rk);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);

    int64_t low = -1, high = -1;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(st->rk, topic, 0, &low, &high, 10000);
    if (err)
        fail_msg("query_watermark_offsets: %s", rd_kafka_err2name(err));
    assert_int_equal(low, 0);
    assert_int_equal(high, 10);

    struct {
        int64_t timestamp;
        int64_t expected_offset;
    } cases[] = {
        {RD_KAFKA_OFFSET_BEGINNING, 0}, /* earliest */
        {RD_KAFKA_OFFSET_END, 10},      /* latest */
        {t0 - 5000, 0},                 /* before everything */
        {t0, 0},                        /* exact first */
        {t0 + 2500, 3},                 /* between records 2 and 3 */
        {t0 + 9000, 9},                 /* exact last */
        {t0 + 100000, -1},              /* after everything: no offset */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(list, topic, 0)->offset = cases[i].timestamp;
        err = rd_kafka_offsets_for_times(st->rk, list, 10000);
        int64_t got = list->elems[0].offset;
        rd_kafka_resp_err_t part_err = list->elems[0].err;
        rd_kafka_topic_partition_list_destroy(list);
        if (err || part_err)
            fail_msg("offsets_for_times(%" PRId64 "): %s / %s", cases[i].timestamp, rd_kafka_err2name(err),
                     rd_kafka_err2name(part_err));
        if (got != cases[i].expected_offset)
            fail_msg("offsets_for_times(t0%+" PRId64 " / %" PRId64 ") = %" PRId64 ", expected %" PRId64,
                     cases[i].timestamp - t0, cases[i].timestamp, got, cases[i].expected_offset);
    }
    st->passed++;
}

static void test_describe_cluster(void **state)
{
    struct admin_state *st = admin_get(state);
    fprintf(stderr,
            "[admin] librdkafka %s has no rd_kafka_DescribeCluster; checking DescribeCluster "
            "with a raw v0 request instead\n",
            rd_kafka_version_str());
    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(fd, 0, 1, &versions), 0);
    const struct raw_api_range *range = raw_api_versions_find(&versions, 60);
    if (!range) {
        close(fd);
        fail_msg("ApiVersions does not list DescribeCluster (60)");
    }
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 60, 0, 2, "cairn-it");
    raw_put_i8(&w, 0);      /* include_cluster_authorized_operations */
    raw_put_uvarint(&w, 0); /* tagged fields */
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 5000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no DescribeCluster answer (rc %d)", rc);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 2); /* correlation id */
    raw_skip_tagged_fields(&r);           /* response header v1 */
    raw_get_i32(&r);                      /* throttle */
    int16_t error = raw_get_i16(&r);
    char text[256], cluster_id[64], host[64];
    raw_get_compact_string(&r, text, sizeof(text));
    raw_get_compact_string(&r, cluster_id, sizeof(cluster_id));
    int32_t controller = raw_get_i32(&r);
    int64_t brokers = (int64_t)raw_get_uvarint(&r) - 1;
    int32_t broker_id = -1, port = -1;
    for (int64_t i = 0; i < brokers && !r.overflow; i++) {
        broker_id = raw_get_i32(&r);
        raw_get_compact_string(&r, host, sizeof(host));
        port = raw_get_i32(&r);
        raw_get_compact_string(&r, text, sizeof(text));
        raw_skip_tagged_fields(&r);
    }
    raw_get_i32(&r); /* authorized operations */
    raw_skip_tagged_fields(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    assert_int_equal(error, 0);
    assert_true(strlen(cluster_id) > 0);
    assert_int_equal(controller, 1);
    assert_int_equal(brokers, 1);
    assert_int_equal(broker_id, 1);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, broker_port(&st->broker));
    st->passed++;
}

/* The coordinators' topics and the metadata log are the broker's: a client
 * can neither delete nor grow them. */
static void test_internal_topics_guarded(void **state)
{
    struct admin_state *st = admin_get(state);
    assert_true(admin_topic_listed(st->rk, "__consumer_offsets", NULL));
    const char *internal[] = {"__consumer_offsets", "__transaction_state", "__cluster_metadata"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        rd_kafka_resp_err_t err = admin_delete_topic(st->rk, internal[i]);
        if (err != RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION)
            fail_msg("DeleteTopics %s: %s, expected TOPIC_EXCEPTION", internal[i], rd_kafka_err2name(err));
        char errstr[512];
        err = admin_create_partitions(st->rk, internal[i], 200, errstr, sizeof errstr);
        if (err != RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION)
            fail_msg("CreatePartitions %s: %s (%s), expected TOPIC_EXCEPTION", internal[i], rd_kafka_err2name(err),
                     errstr);
    }
    int partitions = 0;
    assert_true(admin_topic_listed(st->rk, "__consumer_offsets", &partitions));
    assert_true(partitions < 200);
    st->passed++;
}

/* delete.topic.enable=false: DeleteTopics answers TOPIC_DELETION_DISABLED
 * and the topic stays. */
static void test_delete_topic_disabled(void **state)
{
    (void)state;
    struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"delete.topic.enable=false", NULL};
    broker_start(&broker, overrides);
    rk_create_topic(broker_bootstrap(&broker), "adm-keep", 1, NULL);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&broker), NULL);
    /* librdkafka 2.0 asks with a version before 3, which has no code for
     * it: Kafka answers INVALID_REQUEST there. */
    rd_kafka_resp_err_t err = admin_delete_topic(rk, "adm-keep");
    if (err != RD_KAFKA_RESP_ERR_INVALID_REQUEST && err != RD_KAFKA_RESP_ERR_TOPIC_DELETION_DISABLED)
        fail_msg("DeleteTopics adm-keep: %s, expected deletion refused", rd_kafka_err2name(err));
    /* DeleteTopics v3: topic names, timeout; answer: throttle, [name, error]. */
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 20, 3, 7, "cairn-it");
    raw_put_i32(&w, 1);
    raw_put_string(&w, "adm-keep");
    raw_put_i32(&w, 10000);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&broker), &w, 7, false, 10000, &frame, &r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i16(&r), RD_KAFKA_RESP_ERR_TOPIC_DELETION_DISABLED);
    assert_false(r.overflow);
    free(frame);
    assert_true(admin_topic_listed(rk, "adm-keep", NULL));
    rk_producer_destroy(rk);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

#define ADMIN_TESTS 8

static int admin_setup(void **state)
{
    static struct admin_state st;
    memset(&st, 0, sizeof(st));
    *state = &st;
    broker_start(&st.broker, NULL);
    st.rk = rk_producer_new(broker_bootstrap(&st.broker), NULL);
    return 0;
}

static int admin_teardown(void **state)
{
    struct admin_state *st = *state;
    if (st->rk)
        rk_producer_destroy(st->rk);
    if (st->passed == ADMIN_TESTS)
        broker_mark_passed(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_topics_errors),
        cmocka_unit_test(test_delete_topics),
        cmocka_unit_test(test_create_partitions),
        cmocka_unit_test(test_describe_configs),
        cmocka_unit_test(test_metadata_auto_creates_topic),
        cmocka_unit_test(test_list_offsets),
        cmocka_unit_test(test_describe_cluster),
        cmocka_unit_test(test_internal_topics_guarded),
        cmocka_unit_test(test_delete_topic_disabled),
    };
    return cmocka_run_group_tests(tests, admin_setup, admin_teardown);
}
