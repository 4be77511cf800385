/* Authorization of the group and transaction APIs with the test
 * authorizer: groups and offsets are committed while everything is
 * allowed, then the broker restarts denying one group, one topic and one
 * transactional id, and real clients see the denials and the filtered
 * listings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define OPEN_GROUP "open-group"
#define SECRET_GROUP "secret-group"
#define OPEN_TOPIC "open-topic"
#define HIDDEN_TOPIC "hidden-topic"

/* Commits offset 1 on partition 0 of each topic for group_id. */
static void commit_offsets(struct test_broker *b, const char *group_id, const char *const *topics, int n)
{
    const char *conf[] = {"group.id", group_id, "enable.auto.commit", "false", NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(b), conf);
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(offsets, topics[i], 0)->offset = 1;
    assert_int_equal(rd_kafka_commit(rk, offsets, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int i = 0; i < n; i++)
        assert_int_equal(offsets->elems[i].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_destroy(rk);
}

static void add_override(struct test_broker *b, const char *kv)
{
    assert_true(b->override_count < BROKER_MAX_OVERRIDES);
    b->overrides[b->override_count] = strdup(kv);
    assert_non_null(b->overrides[b->override_count]);
    b->override_count++;
}

static rd_kafka_event_t *wait_admin_result(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
    rd_kafka_event_t *ev;
    while ((ev = rd_kafka_queue_poll(q, 15000)) != NULL) {
        if (rd_kafka_event_type(ev) == type)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    fail_msg("no admin result of type %d", (int)type);
    return NULL;
}

/* ListGroups lists only groups the principal may DESCRIBE. */
static void check_list_groups(rd_kafka_t *rk)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ListConsumerGroups(rk, NULL, q);
    rd_kafka_event_t *ev = wait_admin_result(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT);
    const rd_kafka_ListConsumerGroups_result_t *res = rd_kafka_event_ListConsumerGroups_result(ev);
    size_t n = 0, nerr = 0;
    const rd_kafka_ConsumerGroupListing_t **groups = rd_kafka_ListConsumerGroups_result_valid(res, &n);
    rd_kafka_ListConsumerGroups_result_errors(res, &nerr);
    assert_int_equal(nerr, 0);
    bool saw_open = false, saw_secret = false;
    for (size_t i = 0; i < n; i++) {
        const char *id = rd_kafka_ConsumerGroupListing_group_id(groups[i]);
        saw_open |= strcmp(id, OPEN_GROUP) == 0;
        saw_secret |= strcmp(id, SECRET_GROUP) == 0;
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    assert_true(saw_open);
    assert_false(saw_secret);
}

/* OffsetFetch for all topics of a group hides the topic the principal may
 * not DESCRIBE. */
static void check_offset_fetch_all_topics(rd_kafka_t *rk)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(OPEN_GROUP, NULL);
    rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, NULL, q);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    rd_kafka_event_t *ev = wait_admin_result(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT);
    size_t n = 0;
    const rd_kafka_group_result_t **groups = rd_kafka_ListConsumerGroupOffsets_result_groups(
        rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
    assert_int_equal(n, 1);
    assert_null(rd_kafka_group_result_error(groups[0]));
    const rd_kafka_topic_partition_list_t *parts = rd_kafka_group_result_partitions(groups[0]);
    bool saw_open = false, saw_hidden = false;
    for (int i = 0; parts && i < parts->cnt; i++) {
        saw_open |= strcmp(parts->elems[i].topic, OPEN_TOPIC) == 0 && parts->elems[i].offset == 1;
        saw_hidden |= strcmp(parts->elems[i].topic, HIDDEN_TOPIC) == 0;
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    assert_true(saw_open);
    assert_false(saw_hidden);
}

/* A named topic that may not be described answers TOPIC_AUTHORIZATION_FAILED
 * per partition; the other topic still answers its offset. */
static void check_offset_fetch_named(struct test_broker *b)
{
    const char *conf[] = {"group.id", OPEN_GROUP, NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(b), conf);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(parts, OPEN_TOPIC, 0);
    rd_kafka_topic_partition_list_add(parts, HIDDEN_TOPIC, 0);
    assert_int_equal(rd_kafka_committed(rk, parts, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(parts->elems[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(parts->elems[0].offset, 1);
    assert_int_equal(parts->elems[1].err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
}

/* Sends one request frame and returns the response body past the
 * correlation id (checked); *frame is to be freed by the caller. */
static struct raw_reader raw_round_trip(struct test_broker *b, struct raw_writer *w, int32_t correlation_id,
                                        uint8_t **frame)
{
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(b), w, correlation_id, false, 10000, frame, &r), 0);
    return r;
}

/* DescribeGroups v0 for one group: that group's error code. */
static int16_t describe_group_error(struct test_broker *b, const char *group)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 15, 0, 41, "authz-groups-test");
    raw_put_i32(&w, 1);
    raw_put_string(&w, group);
    raw_frame_finish(&w);
    uint8_t *frame = NULL;
    struct raw_reader r = raw_round_trip(b, &w, 41, &frame);
    assert_int_equal(raw_get_i32(&r), 1);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* DeleteGroups v0 for one group: that group's error code. */
static int16_t delete_group_error(struct test_broker *b, const char *group)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 42, 0, 42, "authz-groups-test");
    raw_put_i32(&w, 1);
    raw_put_string(&w, group);
    raw_frame_finish(&w);
    uint8_t *frame = NULL;
    struct raw_reader r = raw_round_trip(b, &w, 42, &frame);
    raw_get_i32(&r); /* throttle_time_ms */
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* WriteTxnMarkers v0 with one abort marker for partition 0 of topic: the
 * partition's error code. */
static int16_t write_marker_error(struct test_broker *b, const char *topic)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 27, 0, 43, "authz-groups-test");
    raw_put_i32(&w, 1);
    raw_put_i64(&w, 1000); /* producer_id */
    raw_put_i16(&w, 0);    /* producer_epoch */
    raw_put_i8(&w, 0);     /* abort */
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, 0); /* coordinator_epoch */
    raw_frame_finish(&w);
    uint8_t *frame = NULL;
    struct raw_reader r = raw_round_trip(b, &w, 43, &frame);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_get_i64(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* A subscribing consumer in the denied group gets GROUP_AUTHORIZATION_FAILED. */
static void check_denied_group_consumer(struct test_broker *b)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", broker_bootstrap(b), errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "group.id", SECRET_GROUP, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, OPEN_TOPIC, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(rk, topics), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(topics);
    rd_kafka_resp_err_t seen = RD_KAFKA_RESP_ERR_NO_ERROR;
    long long deadline = harness_now_ms() + 15000;
    while (seen != RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err)
            seen = m->err;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    assert_int_equal(seen, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
}

/* init_transactions with the denied transactional.id fails with
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED; another id succeeds. */
static rd_kafka_resp_err_t init_transactions(struct test_broker *b, const char *transactional_id)
{
    const char *conf[] = {"transactional.id", transactional_id, NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    rd_kafka_error_t *error = rd_kafka_init_transactions(rk, 15000);
    rd_kafka_resp_err_t code = error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (error) {
        fprintf(stderr, "init_transactions(%s): %s\n", transactional_id, rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    rk_producer_destroy(rk);
    return code;
}

static void test_group_and_transaction_denials(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", NULL};
    broker_start(&b, ov);
    rk_create_topic(broker_bootstrap(&b), OPEN_TOPIC, 1, NULL);
    rk_create_topic(broker_bootstrap(&b), HIDDEN_TOPIC, 1, NULL);
    const char *both[] = {OPEN_TOPIC, HIDDEN_TOPIC};
    commit_offsets(&b, OPEN_GROUP, both, 2);
    commit_offsets(&b, SECRET_GROUP, both, 1);

    broker_stop(&b);
    add_override(&b, "plugin.test_authz.deny.groups=" SECRET_GROUP);
    add_override(&b, "plugin.test_authz.deny.topics=" HIDDEN_TOPIC);
    add_override(&b, "plugin.test_authz.deny.transactional.ids=secret-txn");
    add_override(&b, "plugin.test_authz.deny.cluster=1");
    broker_restart(&b);

    /* With DESCRIBE on the cluster denied, ListGroups filters per group. */
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&b), NULL);
    check_list_groups(admin);
    check_offset_fetch_all_topics(admin);
    rk_producer_destroy(admin);
    check_offset_fetch_named(&b);
    assert_int_equal(describe_group_error(&b, OPEN_GROUP), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(describe_group_error(&b, SECRET_GROUP), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(delete_group_error(&b, SECRET_GROUP), RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(write_marker_error(&b, OPEN_TOPIC), RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
    check_denied_group_consumer(&b);
    assert_int_equal(init_transactions(&b, "secret-txn"), RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_int_equal(init_transactions(&b, "open-txn"), RD_KAFKA_RESP_ERR_NO_ERROR);

    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_and_transaction_denials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
