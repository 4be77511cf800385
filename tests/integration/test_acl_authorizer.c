/* The acl-authorizer plugin in a real cairnd: ACLs made through
 * librdkafka's admin API before the plugin is loaded are enforced after a
 * restart with it, changes made at runtime take effect at once, DENY beats
 * ALLOW, and super.users / allow.everyone.if.no.acl.found do what Kafka's do.
 * Connections act as User:ANONYMOUS (no authentication configured). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rk_helpers.h"

#define ME "User:ANONYMOUS"

static void acl_change(struct test_broker *b, bool create, rd_kafka_ResourceType_t type, const char *name,
                       rd_kafka_ResourcePatternType_t pattern, const char *principal, rd_kafka_AclOperation_t op,
                       rd_kafka_AclPermissionType_t perm)
{
    char errstr[256];
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AclBinding_t *acl;
    if (create) {
        acl = rd_kafka_AclBinding_new(type, name, pattern, principal, "*", op, perm, errstr, sizeof errstr);
        assert_non_null(acl);
        rd_kafka_CreateAcls(rk, &acl, 1, NULL, q);
        rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_CREATEACLS_RESULT, 20000);
        size_t n = 0;
        const rd_kafka_acl_result_t **r = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
        assert_int_equal(n, 1);
        assert_null(rd_kafka_acl_result_error(r[0]));
        rd_kafka_event_destroy(ev);
    } else {
        acl = rd_kafka_AclBindingFilter_new(type, name, pattern, principal, NULL, op, perm, errstr, sizeof errstr);
        assert_non_null(acl);
        rd_kafka_DeleteAcls(rk, &acl, 1, NULL, q);
        rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_DELETEACLS_RESULT, 20000);
        assert_int_equal(rd_kafka_event_error(ev), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AclBinding_destroy(acl);
    rd_kafka_queue_destroy(q);
    rk_producer_destroy(rk);
}

/* One message to partition 0 from a fresh producer; the delivery error. */
static rd_kafka_resp_err_t produce_one(struct test_broker *b, const char *topic)
{
    const char *conf[] = {"message.timeout.ms", "5000", "enable.idempotence", "false", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    rd_kafka_resp_err_t err = rk_produce_one_delivered(rk, topic);
    rk_producer_destroy(rk);
    return err;
}

static bool listed(struct test_broker *b, const char *topic)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    const struct rd_kafka_metadata *md = NULL;
    assert_int_equal(rd_kafka_metadata(rk, 1, NULL, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    bool found = false;
    for (int t = 0; t < md->topic_cnt; t++)
        found |= strcmp(md->topics[t].topic, topic) == 0 && !md->topics[t].err;
    rd_kafka_metadata_destroy(md);
    rk_producer_destroy(rk);
    return found;
}

static void test_acl_enforcement(void **state)
{
    (void)state;
    struct test_broker b = {0};
    broker_start(&b, NULL);
    rk_create_topic(broker_bootstrap(&b), "team-a.orders", 1, NULL);
    rk_create_topic(broker_bootstrap(&b), "team-b.orders", 1, NULL);
    rk_create_topic(broker_bootstrap(&b), "open", 1, NULL);
    /* Made before the authorizer runs: it must find them at start. */
    acl_change(&b, true, RD_KAFKA_RESOURCE_BROKER, "kafka-cluster", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ME,
               RD_KAFKA_ACL_OPERATION_ALTER, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW);
    acl_change(&b, true, RD_KAFKA_RESOURCE_BROKER, "kafka-cluster", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ME,
               RD_KAFKA_ACL_OPERATION_DESCRIBE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW);
    acl_change(&b, true, RD_KAFKA_RESOURCE_TOPIC, "team-a.", RD_KAFKA_RESOURCE_PATTERN_PREFIXED, ME,
               RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW);
    broker_stop(&b);
    broker_add_override(&b, "plugins=acl-authorizer");
    broker_restart(&b);

    assert_int_equal(produce_one(&b, "team-a.orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_not_equal(produce_one(&b, "team-b.orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* WRITE implies DESCRIBE: only team-a's topic is listed. */
    assert_true(listed(&b, "team-a.orders"));
    assert_false(listed(&b, "team-b.orders"));
    assert_false(listed(&b, "open"));

    /* A runtime grant is effective as soon as CreateAcls answers. */
    acl_change(&b, true, RD_KAFKA_RESOURCE_TOPIC, "team-b.orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, ME,
               RD_KAFKA_ACL_OPERATION_ALL, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW);
    assert_int_equal(produce_one(&b, "team-b.orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* DENY for everyone beats the prefixed ALLOW; deleting it restores it. */
    acl_change(&b, true, RD_KAFKA_RESOURCE_TOPIC, "team-a.orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:*",
               RD_KAFKA_ACL_OPERATION_WRITE, RD_KAFKA_ACL_PERMISSION_TYPE_DENY);
    assert_int_not_equal(produce_one(&b, "team-a.orders"), RD_KAFKA_RESP_ERR_NO_ERROR);
    acl_change(&b, false, RD_KAFKA_RESOURCE_TOPIC, "team-a.orders", RD_KAFKA_RESOURCE_PATTERN_LITERAL, NULL,
               RD_KAFKA_ACL_OPERATION_ANY, RD_KAFKA_ACL_PERMISSION_TYPE_DENY);
    assert_int_equal(produce_one(&b, "team-a.orders"), RD_KAFKA_RESP_ERR_NO_ERROR);

    /* allow.everyone.if.no.acl.found opens "open" (no ACL names it) only. */
    broker_stop(&b);
    broker_add_override(&b, "plugin.acl-authorizer.allow.everyone.if.no.acl.found=true");
    broker_restart(&b);
    assert_int_equal(produce_one(&b, "open"), RD_KAFKA_RESP_ERR_NO_ERROR);
    acl_change(&b, true, RD_KAFKA_RESOURCE_TOPIC, "open", RD_KAFKA_RESOURCE_PATTERN_LITERAL, "User:someone-else",
               RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW);
    assert_int_not_equal(produce_one(&b, "open"), RD_KAFKA_RESP_ERR_NO_ERROR);

    /* A super user is allowed everything. */
    broker_stop(&b);
    broker_add_override(&b, "plugin.acl-authorizer.super.users=User:admin;" ME);
    broker_restart(&b);
    assert_int_equal(produce_one(&b, "open"), RD_KAFKA_RESP_ERR_NO_ERROR);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acl_enforcement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
