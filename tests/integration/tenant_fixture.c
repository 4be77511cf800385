/* The two-tenant broker of the tenant-isolation tests (see tenant_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "raw_session.h"
#include "tenant_fixture.h"

bool tenant_bytes_hold(const uint8_t *data, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(data + i, needle, n) == 0)
            return true;
    return false;
}

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

/* The id of `topic`, by a Metadata v12 any principal may send (before the
 * authorizer is loaded). */
static void topic_id_of(struct test_broker *b, const char *topic, uint8_t id[16])
{
    struct metadata_request_metadata_request_topic t;
    metadata_request_metadata_request_topic_init(&t);
    t.name = kafka_str_from_cstr(topic);
    struct metadata_request m;
    metadata_request_init(&m);
    m.topics = &t;
    m.topics_count = 1;
    struct kafka_writer kw;
    assert_int_equal(kafka_writer_init(&kw, 128), 0);
    assert_int_equal(metadata_request_encode(&m, &kw, 12), 0);
    struct raw_session s = {.fd = raw_connect(b->port, 10000)};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    raw_session_begin(&s, &w, 3, 12);
    raw_put_bytes(&w, kw.buf, kw.len);
    kafka_writer_free(&kw);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, true);
    close(s.fd);
    struct kafka_reader kr;
    kafka_reader_init(&kr, r.data + r.pos, r.len - r.pos);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct metadata_response resp;
    metadata_response_init(&resp);
    assert_int_equal(metadata_response_decode(&resp, &kr, 12, &arena), 0);
    assert_int_equal(resp.topics_count, 1);
    assert_int_equal(resp.topics[0].error_code, 0);
    memcpy(id, resp.topics[0].topic_id.bytes, 16);
    kafka_arena_free(&arena);
    free(frame);
}

void tenant_fixture_start(struct test_broker *b, struct tenant_topic_ids *ids)
{
    broker_start(b, NULL);
    /* Before the authorizer: the other tenant's topic, records and group. */
    rk_create_topic(broker_bootstrap(b), TENANT_OTHER_TOPIC, 1, NULL);
    rk_create_topic(broker_bootstrap(b), TENANT_OWN_TOPIC, 1, NULL);
    rd_kafka_t *p = tenant_client(b, NULL);
    assert_int_equal(rk_produce_one_delivered(p, TENANT_OTHER_TOPIC), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(p);
    if (ids) {
        topic_id_of(b, TENANT_OTHER_TOPIC, ids->other);
        topic_id_of(b, TENANT_OWN_TOPIC, ids->own);
    }
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
