/* The two-tenant broker of the tenant-isolation tests (see tenant_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "tenant_fixture.h"

rd_kafka_t *tenant_client(struct test_broker *b, const char *group)
{
    const char *conf[] = {"group.id", group ? group : "team-a.probe", "enable.auto.commit", "false", NULL};
    return group ? rk_consumer_new(broker_bootstrap(b), conf) : rk_producer_new(broker_bootstrap(b), NULL);
}

static void acl_allow_prefix(struct test_broker *b, rd_kafka_ResourceType_t type, const char *prefix,
                             const char *principal)
{
    char errstr[256];
    rd_kafka_t *rk = tenant_client(b, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AclBinding_t *acl = rd_kafka_AclBinding_new(type, prefix, RD_KAFKA_RESOURCE_PATTERN_PREFIXED, principal,
                                                         "*", RD_KAFKA_ACL_OPERATION_ALL,
                                                         RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, errstr, sizeof errstr);
    assert_non_null(acl);
    rd_kafka_CreateAcls(rk, &acl, 1, NULL, q);
    rd_kafka_event_destroy(rk_admin_result(q, RD_KAFKA_EVENT_CREATEACLS_RESULT, 20000));
    rd_kafka_AclBinding_destroy(acl);
    rd_kafka_queue_destroy(q);
    rk_producer_destroy(rk);
}

static void commit_one(struct test_broker *b, const char *group, const char *topic)
{
    rd_kafka_t *rk = tenant_client(b, group);
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, topic, 0)->offset = 1;
    assert_int_equal(rd_kafka_commit(rk, offsets, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_destroy(rk);
}

/* Commits one transaction as transactional id. */
static void transaction(struct test_broker *b, const char *id, const char *topic)
{
    const char *conf[] = {"transactional.id", id, NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    rk_expect_ok(rd_kafka_init_transactions(rk, 20000), "init_transactions");
    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin_transaction");
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("v", 1),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_expect_ok(rd_kafka_commit_transaction(rk, 20000), "commit_transaction");
    rk_producer_destroy(rk);
}

void tenant_fixture_start(struct test_broker *b)
{
    broker_start(b, NULL);
    /* Before the authorizer: the other tenant's topic, records and group. */
    rk_create_topic(broker_bootstrap(b), TENANT_OTHER_TOPIC, 1, NULL);
    rk_create_topic(broker_bootstrap(b), TENANT_OWN_TOPIC, 1, NULL);
    rd_kafka_t *p = tenant_client(b, NULL);
    assert_int_equal(rk_produce_one_delivered(p, TENANT_OTHER_TOPIC), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(p);
    commit_one(b, TENANT_OTHER_GROUP, TENANT_OTHER_TOPIC);
    commit_one(b, TENANT_OTHER_GROUP, TENANT_OWN_TOPIC);
    commit_one(b, TENANT_OWN_GROUP, TENANT_OWN_TOPIC);
    /* The tenant's group once read the other tenant's topic. */
    commit_one(b, TENANT_OWN_GROUP, TENANT_OTHER_TOPIC);
    transaction(b, TENANT_OTHER_TXN, TENANT_OTHER_TOPIC);
    transaction(b, TENANT_OWN_TXN, TENANT_OWN_TOPIC);
    /* librdkafka 2.0 makes no transactional-id ACL: the cairn tool does. */
    char acl[800];
    snprintf(acl, sizeof acl,
             "'%s' acl create --allow-principal User:ANONYMOUS --operation All --transactional-id team-a. "
             "--resource-pattern-type prefixed -b %s > /dev/null",
             CAIRN_CLI_PATH, broker_bootstrap(b));
    assert_int_equal(system(acl), 0);
    acl_allow_prefix(b, RD_KAFKA_RESOURCE_TOPIC, "team-a.", "User:ANONYMOUS");
    acl_allow_prefix(b, RD_KAFKA_RESOURCE_GROUP, "team-a.", "User:ANONYMOUS");
    /* The other tenant's own ACL, which names its prefix. */
    acl_allow_prefix(b, RD_KAFKA_RESOURCE_TOPIC, "team-b.", "User:team-b");
    broker_stop(b);
    char path_kv[600];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    broker_add_override(b, path_kv);
    broker_add_override(b, "plugins=acl-authorizer");
    broker_restart(b);
}
