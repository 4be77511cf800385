/* CreateAcls, DescribeAcls and DeleteAcls through librdkafka's admin API
 * against a real cairnd: creation with Kafka's validation, listings by
 * filter, deletion by filter, bindings that survive a restart, and CLUSTER
 * ALTER / DESCRIBE authorization of the APIs themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

static rd_kafka_AclBinding_t *binding(rd_kafka_ResourceType_t type, const char *name,
                                      rd_kafka_ResourcePatternType_t pattern, const char *principal,
                                      rd_kafka_AclOperation_t op, rd_kafka_AclPermissionType_t perm)
{
    char errstr[256];
    rd_kafka_AclBinding_t *b = rd_kafka_AclBinding_new(type, name, pattern, principal, "*", op, perm, errstr,
                                                       sizeof errstr);
    if (!b)
        fail_msg("AclBinding_new: %s", errstr);
    return b;
}

/* Creates n bindings; writes each result's error code to errs. */
static void create_acls(rd_kafka_t *rk, rd_kafka_AclBinding_t **acls, size_t n, rd_kafka_resp_err_t *errs)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateAcls(rk, acls, n, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_CREATEACLS_RESULT, 20000);
    assert_int_equal(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR);
    size_t got = 0;
    const rd_kafka_acl_result_t **res = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &got);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_error_t *e = rd_kafka_acl_result_error(res[i]);
        errs[i] = e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    for (size_t i = 0; i < n; i++)
        rd_kafka_AclBinding_destroy(acls[i]);
}

static rd_kafka_AclBindingFilter_t *filter(rd_kafka_ResourceType_t type, const char *name,
                                           rd_kafka_ResourcePatternType_t pattern, const char *principal)
{
    char errstr[256];
    rd_kafka_AclBindingFilter_t *f = rd_kafka_AclBindingFilter_new(
        type, name, pattern, principal, NULL, RD_KAFKA_ACL_OPERATION_ANY, RD_KAFKA_ACL_PERMISSION_TYPE_ANY, errstr,
        sizeof errstr);
    if (!f)
        fail_msg("AclBindingFilter_new: %s", errstr);
    return f;
}

/* How many bindings the filter lists; -1 with *err on a request error. */
static int describe_count(rd_kafka_t *rk, rd_kafka_AclBindingFilter_t *f, rd_kafka_resp_err_t *err)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeAcls(rk, f, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_DESCRIBEACLS_RESULT, 20000);
    *err = rd_kafka_event_error(ev);
    size_t n = 0;
    if (*err == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_DescribeAcls_result_acls(rd_kafka_event_DescribeAcls_result(ev), &n);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AclBinding_destroy(f);
    return *err ? -1 : (int)n;
}

/* Deletes by one filter; returns the count deleted, -1 with *err on error. */
static int delete_count(rd_kafka_t *rk, rd_kafka_AclBindingFilter_t *f, rd_kafka_resp_err_t *err)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteAcls(rk, &f, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_DELETEACLS_RESULT, 20000);
    *err = rd_kafka_event_error(ev);
    int out = -1;
    if (*err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        size_t n = 0;
        const rd_kafka_DeleteAcls_result_response_t **r = rd_kafka_DeleteAcls_result_responses(
            rd_kafka_event_DeleteAcls_result(ev), &n);
        assert_int_equal(n, 1);
        const rd_kafka_error_t *e = rd_kafka_DeleteAcls_result_response_error(r[0]);
        *err = e ? rd_kafka_error_code(e) : RD_KAFKA_RESP_ERR_NO_ERROR;
        size_t matched = 0;
        rd_kafka_DeleteAcls_result_response_matching_acls(r[0], &matched);
        out = *err ? -1 : (int)matched;
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AclBinding_destroy(f);
    return out;
}

static int count_all(rd_kafka_t *rk)
{
    rd_kafka_resp_err_t err;
    int n = describe_count(rk, filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, NULL), &err);
    assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
    return n;
}

static void test_acl_lifecycle(void **state)
{
    (void)state;
    struct test_broker b = {0};
    broker_start(&b, NULL);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&b), NULL);

    rd_kafka_AclBinding_t *acls[] = {
        binding(RD_KAFKA_RESOURCE_TOPIC, "orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
        binding(RD_KAFKA_RESOURCE_TOPIC, "team-a.", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, "User:alice",
                RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
        binding(RD_KAFKA_RESOURCE_TOPIC, "*", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:bob",
                RD_KAFKA_ACL_OPERATION_DESCRIBE, RD_KAFKA_ACL_PERMISSION_TYPE_DENY),
        binding(RD_KAFKA_RESOURCE_GROUP, "g1", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
        /* No colon in the principal: Kafka's INVALID_REQUEST. */
        binding(RD_KAFKA_RESOURCE_TOPIC, "orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "alice",
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
        /* An identical binding again is accepted and kept once. */
        binding(RD_KAFKA_RESOURCE_TOPIC, "orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice",
                RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW),
    };
    rd_kafka_resp_err_t errs[6];
    create_acls(rk, acls, 6, errs);
    for (int i = 0; i < 6; i++)
        assert_int_equal(errs[i], i == 4 ? RD_KAFKA_RESP_ERR_INVALID_REQUEST : RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(count_all(rk), 4);

    rd_kafka_resp_err_t err;
    /* MATCH: the literal, the "*" wildcard and the prefix that cover the name. */
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_TOPIC, "team-a.x", RD_KAFKA_RESOURCE_PATTERN_MATCH, NULL), &err),
        2);
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_TOPIC, "orders", RD_KAFKA_RESOURCE_PATTERN_MATCH, NULL), &err), 2);
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_TOPIC, "orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, NULL), &err),
        1);
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, "User:alice"), &err), 3);
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_GROUP, NULL, RD_KAFKA_RESOURCE_PATTERN_PREFIXED, NULL), &err), 0);

    /* Delete by filter: alice's topic bindings only. */
    assert_int_equal(
        delete_count(rk, filter(RD_KAFKA_RESOURCE_TOPIC, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, "User:alice"), &err), 2);
    assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(count_all(rk), 2);

    /* What is left survives a restart (replayed from the metadata log). */
    rk_producer_destroy(rk);
    broker_stop(&b);
    broker_restart(&b);
    rk = rk_producer_new(broker_bootstrap(&b), NULL);
    assert_int_equal(count_all(rk), 2);
    assert_int_equal(
        describe_count(rk, filter(RD_KAFKA_RESOURCE_GROUP, "g1", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:alice"),
                       &err),
        1);
    assert_int_equal(delete_count(rk, filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, NULL), &err),
                     2);
    assert_int_equal(count_all(rk), 0);
    rk_producer_destroy(rk);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* DescribeAcls v1 on the wire (librdkafka 2.0 drops its top-level error):
 * the error code, or -1 when the exchange fails. */
static int16_t raw_describe_all_error(struct test_broker *b, const char *client_id)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 29, 1, 7, client_id);
    raw_put_i8(&w, 1); /* ANY resource type */
    raw_put_string(&w, NULL);
    raw_put_i8(&w, 1); /* ANY pattern */
    raw_put_string(&w, NULL);
    raw_put_string(&w, NULL);
    raw_put_i8(&w, 1); /* ANY operation */
    raw_put_i8(&w, 1); /* ANY permission */
    uint8_t *frame = NULL;
    struct raw_reader r;
    if (raw_exchange(broker_port(b), &w, 7, false, 10000, &frame, &r) != 0)
        return -1;
    raw_get_i32(&r); /* throttle */
    int16_t code = raw_get_i16(&r);
    free(frame);
    return code;
}

/* ElectLeaders v1 (PREFERRED) for topic-0 as client_id: the request's
 * error, and the one partition's in *partition_error. */
static int16_t raw_elect_leaders_error(struct test_broker *b, const char *client_id, const char *topic,
                                       int16_t *partition_error)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 43, 1, 8, client_id);
    raw_put_i8(&w, 0); /* PREFERRED */
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, 10000); /* timeout_ms */
    uint8_t *frame = NULL;
    struct raw_reader r;
    if (raw_exchange(broker_port(b), &w, 8, false, 10000, &frame, &r) != 0)
        return -1;
    raw_get_i32(&r); /* throttle */
    int16_t code = raw_get_i16(&r);
    *partition_error = -1;
    if (raw_get_i32(&r) == 1) {
        raw_skip_string(&r);
        if (raw_get_i32(&r) == 1) {
            raw_get_i32(&r); /* partition id */
            *partition_error = raw_get_i16(&r);
        }
    }
    free(frame);
    return r.overflow ? -1 : code;
}

/* With CLUSTER denied to one client id: CreateAcls and DeleteAcls answer
 * CLUSTER_AUTHORIZATION_FAILED per entry, DescribeAcls as a whole,
 * ElectLeaders as a whole and per partition. */
static void test_acl_apis_authorized(void **state)
{
    (void)state;
    struct test_broker b = {0};
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", "plugin.test_authz.deny.cluster=1",
                        "plugin.test_authz.deny.client.id=acl-denied", NULL};
    broker_start(&b, ov);
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&b), NULL);
    const char *denied_conf[] = {"client.id", "acl-denied", NULL};
    rd_kafka_t *denied = rk_producer_new(broker_bootstrap(&b), denied_conf);

    rd_kafka_resp_err_t errs[1];
    rd_kafka_AclBinding_t *one[] = {binding(RD_KAFKA_RESOURCE_TOPIC, "t", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:x",
                                            RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW)};
    create_acls(denied, one, 1, errs);
    assert_int_equal(errs[0], RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_int_equal(count_all(admin), 0);

    rd_kafka_AclBinding_t *two[] = {binding(RD_KAFKA_RESOURCE_TOPIC, "t", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:x",
                                            RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW)};
    create_acls(admin, two, 1, errs);
    assert_int_equal(errs[0], RD_KAFKA_RESP_ERR_NO_ERROR);

    rd_kafka_resp_err_t err;
    assert_int_equal(raw_describe_all_error(&b, "acl-denied"), RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_int_equal(raw_describe_all_error(&b, "acl-admin"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(
        delete_count(denied, filter(RD_KAFKA_RESOURCE_ANY, NULL, RD_KAFKA_RESOURCE_PATTERN_ANY, NULL), &err), -1);
    assert_int_equal(err, RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_int_equal(count_all(admin), 1);
    /* ElectLeaders needs ALTER on the cluster too. */
    int16_t perr = 0;
    assert_int_equal(raw_elect_leaders_error(&b, "acl-denied", "t", &perr), 31); /* CLUSTER_AUTHORIZATION_FAILED */
    assert_int_equal(perr, 31);
    assert_int_equal(raw_elect_leaders_error(&b, "acl-admin", "nope", &perr), 0);
    assert_int_equal(perr, 3); /* UNKNOWN_TOPIC_OR_PARTITION */
    rk_producer_destroy(denied);
    rk_producer_destroy(admin);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acl_lifecycle),
        cmocka_unit_test(test_acl_apis_authorized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
