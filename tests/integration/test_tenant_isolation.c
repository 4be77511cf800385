/* Tenant isolation as seen by one tenant: User:ANONYMOUS (the PLAINTEXT
 * listener) is given ALL on the prefix "team-a." of topics, groups and
 * transactional ids through the acl-authorizer plugin, and nothing else. Another tenant's
 * topic, group and transactional id (made before the authorizer was
 * loaded) must get, API by API, the very answer (error code and message)
 * that names which never existed get: no leak through Metadata,
 * ListGroups, DescribeGroups, OffsetFetch, ListOffsets, DescribeConfigs,
 * CreateTopics (TOPIC_AUTHORIZATION_FAILED before TOPIC_ALREADY_EXISTS),
 * CreatePartitions, DeleteTopics, DeleteRecords, AlterConfigs,
 * DescribeProducers, DescribeTransactions, ListTransactions or
 * DescribeLogDirs. The setup is tenant_fixture.c; test_tenant_walk.c
 * probes every API ApiVersions lists, byte for byte. */
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
#include "raw_session.h"
#include "rk_helpers.h"
#include "tenant_fixture.h"

#define OTHER_TOPIC TENANT_OTHER_TOPIC
#define NEVER_TOPIC "team-b.never"
#define OTHER_GROUP TENANT_OTHER_GROUP
#define NEVER_GROUP "team-b.nogroup"
#define OTHER_TXN TENANT_OTHER_TXN
#define NEVER_TXN "team-b.notx"

/* One answer: an error code and a message with the resource's name
 * replaced by "<name>", so two names' answers compare equal. */
struct answer {
    int err;
    char message[512];
};

static void answer_set(struct answer *a, int err, const char *message, const char *name)
{
    a->err = err;
    a->message[0] = '\0';
    const char *m = message ? message : "";
    size_t nlen = strlen(name);
    size_t used = 0;
    while (*m && used + 8 < sizeof a->message) {
        if (nlen > 0 && strncmp(m, name, nlen) == 0) {
            used += (size_t)snprintf(a->message + used, sizeof a->message - used, "<name>");
            m += nlen;
        } else {
            a->message[used++] = *m++;
            a->message[used] = '\0';
        }
    }
}

static void assert_same(const char *api, const struct answer *other, const struct answer *never)
{
    if (other->err != never->err || strcmp(other->message, never->message) != 0)
        fail_msg("%s leaks: another tenant's name gets %s '%s', a name that never existed %s '%s'", api,
                 rd_kafka_err2name(other->err), other->message, rd_kafka_err2name(never->err), never->message);
    if (other->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("%s answered without an error for another tenant's name", api);
}

static void metadata_answer(rd_kafka_t *rk, const char *topic, struct answer *a)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
    if (!err) {
        assert_int_equal(md->topic_cnt, 1);
        err = md->topics[0].err;
        if (!err)
            err = md->topics[0].partition_cnt > 0 ? RD_KAFKA_RESP_ERR_NO_ERROR : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
    answer_set(a, err, "", topic);
}

/* Runs one admin call built by the caller on q; the event of type. */
typedef void (*admin_call_fn)(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q);

static void call_create_topics(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    char e[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, 1, 1, e, sizeof e);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_NewTopic_destroy(nt);
}

static void call_delete_topics(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(name);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
    rd_kafka_DeleteTopic_destroy(dt);
}

static void call_create_partitions(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    char e[256];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(name, 2, e, sizeof e);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
    rd_kafka_NewPartitions_destroy(np);
}

static void call_describe_configs(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, name);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, q);
    rd_kafka_ConfigResource_destroy(cr);
}

static void call_alter_configs(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, name);
    rd_kafka_ConfigResource_set_config(cr, "retention.ms", "3600000");
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, q);
    rd_kafka_ConfigResource_destroy(cr);
}

static void call_describe_groups(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    const char *groups[] = {name};
    rd_kafka_DescribeConsumerGroups(rk, groups, 1, NULL, q);
}

static void call_delete_records(rd_kafka_t *rk, const char *name, rd_kafka_queue_t *q)
{
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, name, 0)->offset = 0;
    rd_kafka_DeleteRecords_t *dr = rd_kafka_DeleteRecords_new(offsets);
    rd_kafka_DeleteRecords(rk, &dr, 1, NULL, q);
    rd_kafka_DeleteRecords_destroy(dr);
    rd_kafka_topic_partition_list_destroy(offsets);
}

/* The one result's error of any of the admin events above. */
static void admin_answer(rd_kafka_t *rk, admin_call_fn call, rd_kafka_event_type_t type, const char *name,
                         struct answer *a)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    call(rk, name, q);
    rd_kafka_event_t *ev = rk_admin_result(q, type, 20000);
    int err = rd_kafka_event_error(ev);
    const char *msg = err ? rd_kafka_event_error_string(ev) : "";
    size_t n = 0;
    if (!err && type == RD_KAFKA_EVENT_CREATETOPICS_RESULT) {
        const rd_kafka_topic_result_t **r = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev),
                                                                                &n);
        err = rd_kafka_topic_result_error(r[0]);
        msg = rd_kafka_topic_result_error_string(r[0]);
    } else if (!err && type == RD_KAFKA_EVENT_DELETETOPICS_RESULT) {
        const rd_kafka_topic_result_t **r = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev),
                                                                                &n);
        err = rd_kafka_topic_result_error(r[0]);
        msg = rd_kafka_topic_result_error_string(r[0]);
    } else if (!err && type == RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT) {
        const rd_kafka_topic_result_t **r = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &n);
        err = rd_kafka_topic_result_error(r[0]);
        msg = rd_kafka_topic_result_error_string(r[0]);
    } else if (!err && type == RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT) {
        const rd_kafka_ConfigResource_t **r = rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &n);
        err = rd_kafka_ConfigResource_error(r[0]);
        msg = rd_kafka_ConfigResource_error_string(r[0]);
    } else if (!err && type == RD_KAFKA_EVENT_ALTERCONFIGS_RESULT) {
        const rd_kafka_ConfigResource_t **r = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &n);
        err = rd_kafka_ConfigResource_error(r[0]);
        msg = rd_kafka_ConfigResource_error_string(r[0]);
    } else if (!err && type == RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT) {
        const rd_kafka_ConsumerGroupDescription_t **r = rd_kafka_DescribeConsumerGroups_result_groups(
            rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
        const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(r[0]);
        err = e ? rd_kafka_error_code(e) : 0;
        msg = e ? rd_kafka_error_string(e) : "";
    } else if (!err && type == RD_KAFKA_EVENT_DELETERECORDS_RESULT) {
        const rd_kafka_topic_partition_list_t *r = rd_kafka_DeleteRecords_result_offsets(
            rd_kafka_event_DeleteRecords_result(ev));
        err = r && r->cnt == 1 ? r->elems[0].err : RD_KAFKA_RESP_ERR__BAD_MSG;
        msg = "";
    }
    answer_set(a, err, msg, name);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
}

static void offset_fetch_answer(struct test_broker *b, const char *group, struct answer *a)
{
    rd_kafka_t *rk = tenant_client(b, group);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, "team-a.orders", 0);
    int err = rd_kafka_committed(rk, parts, 10000);
    if (!err)
        err = parts->elems[0].err;
    answer_set(a, err, "", group);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
}

static void list_offsets_answer(rd_kafka_t *rk, const char *topic, struct answer *a)
{
    int64_t lo = 0, hi = 0;
    answer_set(a, rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 10000), "", topic);
}

static bool group_listed(rd_kafka_t *rk, const char *group)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_ListConsumerGroups(rk, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT, 20000);
    size_t n = 0;
    const rd_kafka_ConsumerGroupListing_t **groups = rd_kafka_ListConsumerGroups_result_valid(
        rd_kafka_event_ListConsumerGroups_result(ev), &n);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= strcmp(rd_kafka_ConsumerGroupListing_group_id(groups[i]), group) == 0;
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    return found;
}

/* DescribeProducers v0 of partition 0 of topic: its error and message. */
static void describe_producers_answer(struct raw_session *s, const char *topic, struct answer *a)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 61, 0);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, topic);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64], message[256] = "";
    raw_get_compact_string(&r, name, sizeof name);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    raw_get_compact_string(&r, message, sizeof message);
    assert_false(r.overflow);
    free(frame);
    answer_set(a, err, message, topic);
}

/* DescribeTransactions v0 of one id: its error and state. */
static void describe_transactions_answer(struct raw_session *s, const char *id, struct answer *a)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 65, 0);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, id);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    int16_t err = raw_get_i16(&r);
    char got[64], state[64] = "";
    raw_get_compact_string(&r, got, sizeof got);
    raw_get_compact_string(&r, state, sizeof state);
    assert_false(r.overflow);
    free(frame);
    answer_set(a, err, state, id);
}

/* Whether a response to a body-less-filter request (ListTransactions v0
 * with no filters, DescribeLogDirs v2 for every topic) names `name`. */
static bool listing_names(struct raw_session *s, int16_t api, int16_t version, const char *name)
{
    struct raw_writer w;
    raw_session_begin(s, &w, api, version);
    if (api == 66) {
        raw_put_compact_array_len(&w, 0); /* state filters */
        raw_put_compact_array_len(&w, 0); /* producer id filters */
    } else {
        raw_put_uvarint(&w, 0); /* topics: null, every topic */
    }
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    bool named = tenant_bytes_hold(frame, r.len, name);
    free(frame);
    return named;
}

static void test_other_tenant_looks_absent(void **state)
{
    (void)state;
    struct test_broker b = {0};
    tenant_fixture_start(&b, NULL);

    rd_kafka_t *rk = tenant_client(&b, NULL);
    struct answer other, never;
    metadata_answer(rk, OTHER_TOPIC, &other);
    metadata_answer(rk, NEVER_TOPIC, &never);
    assert_same("Metadata", &other, &never);
    list_offsets_answer(rk, OTHER_TOPIC, &other);
    list_offsets_answer(rk, NEVER_TOPIC, &never);
    assert_same("ListOffsets", &other, &never);
    const struct {
        const char *api;
        admin_call_fn call;
        rd_kafka_event_type_t type;
        bool group;
    } calls[] = {
        {"CreateTopics", call_create_topics, RD_KAFKA_EVENT_CREATETOPICS_RESULT, false},
        {"CreatePartitions", call_create_partitions, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, false},
        {"DescribeConfigs", call_describe_configs, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, false},
        {"AlterConfigs", call_alter_configs, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, false},
        {"DeleteRecords", call_delete_records, RD_KAFKA_EVENT_DELETERECORDS_RESULT, false},
        {"DeleteTopics", call_delete_topics, RD_KAFKA_EVENT_DELETETOPICS_RESULT, false},
        {"DescribeGroups", call_describe_groups, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT, true},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        admin_answer(rk, calls[i].call, calls[i].type, calls[i].group ? OTHER_GROUP : OTHER_TOPIC, &other);
        admin_answer(rk, calls[i].call, calls[i].type, calls[i].group ? NEVER_GROUP : NEVER_TOPIC, &never);
        assert_same(calls[i].api, &other, &never);
    }
    /* Kafka's order: not authorized before "already exists". */
    admin_answer(rk, call_create_topics, RD_KAFKA_EVENT_CREATETOPICS_RESULT, OTHER_TOPIC, &other);
    assert_int_equal(other.err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    offset_fetch_answer(&b, OTHER_GROUP, &other);
    offset_fetch_answer(&b, NEVER_GROUP, &never);
    assert_same("OffsetFetch", &other, &never);
    /* ListGroups shows the tenant's own group only. */
    assert_true(group_listed(rk, "team-a.group"));
    assert_false(group_listed(rk, OTHER_GROUP));
    rk_producer_destroy(rk);

    /* The APIs librdkafka 2.0 has no call for, raw. */
    struct raw_session s = {.fd = raw_connect(b.port, 10000)};
    assert_true(s.fd >= 0);
    describe_producers_answer(&s, OTHER_TOPIC, &other);
    describe_producers_answer(&s, NEVER_TOPIC, &never);
    assert_same("DescribeProducers", &other, &never);
    describe_transactions_answer(&s, OTHER_TXN, &other);
    describe_transactions_answer(&s, NEVER_TXN, &never);
    assert_same("DescribeTransactions", &other, &never);
    /* ListTransactions lists the tenant's own transactional id only. */
    assert_true(listing_names(&s, 66, 0, "team-a.tx"));
    assert_false(listing_names(&s, 66, 0, OTHER_TXN));
    describe_transactions_answer(&s, "team-a.tx", &other);
    assert_int_equal(other.err, 0);
    /* DescribeLogDirs needs DESCRIBE on the cluster (Kafka's rule), which
     * a tenant is not given: it names no topic at all. */
    assert_false(listing_names(&s, 35, 2, OTHER_TOPIC));
    assert_false(listing_names(&s, 35, 2, "team-a.orders"));
    close(s.fd);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_tenant_looks_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
