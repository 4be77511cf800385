/* Helpers shared by the three-broker coordinator tests: FindCoordinator,
 * the placement of keys in the internal topics, starting a cluster whose
 * internal partition has enough replicas, and a plain OffsetCommit. */
#include "cluster_coordinator_helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

static void find_parse(const struct net_client_result *result, void *arg)
{
    struct find_answers *s = arg;
    const struct find_coordinator_response *m = result->response;
    s->answers = 0;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    if (result->api_version < 4) {
        s->errors[0] = m->error_code;
        s->node_ids[0] = m->node_id;
        s->ports[0] = m->port;
        s->answers = 1;
        return;
    }
    for (int32_t i = 0; i < m->coordinators_count && i < FIND_MAX_KEYS; i++) {
        const struct find_coordinator_response_coordinator *c = &m->coordinators[i];
        snprintf(s->keys[i], sizeof s->keys[i], "%.*s", (int)c->key.len, c->key.data ? c->key.data : "");
        s->errors[i] = c->error_code;
        s->node_ids[i] = c->node_id;
        s->ports[i] = c->port;
        s->answers++;
    }
}

/* FindCoordinator at node, version pinned; answers stays 0 unanswered. */
bool find(struct cluster *c, int node, int16_t version, const struct find_coordinator_request *req,
          struct find_answers *s)
{
    memset(s, 0, sizeof *s);
    return client_call(c->client, node, 10, version, req, 10000, find_parse, s) == NET_CLIENT_OK;
}

/* Waits until every node's Metadata lists the three brokers (registered
 * and unfenced), so a topic created next is spread over all of them. */
void wait_all_brokers(struct cluster *c, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (int node = 1; node <= N; node++)
        wait_view(c, node, ALL, NULL, 0, (int)(deadline - harness_now_ms()));
}

/* java.lang.String#hashCode of an ASCII string. */
int32_t java_hash(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++)
        h = h * 31u + (unsigned char)*s;
    return (int32_t)h;
}

/* Kafka's partitionFor: Utils.abs(hashCode) % partitions. */
int kafka_partition_for(const char *key, int partitions)
{
    int32_t h = java_hash(key);
    int64_t a = h == INT32_MIN ? 0 : (h < 0 ? -(int64_t)h : h);
    return (int)(a % partitions);
}

/* The coordinator of a group (key_type 0) or transactional id (1) as node
 * answers it (-1 on error). */
int32_t coordinator_of(struct cluster *c, int node, int8_t key_type, const char *id)
{
    struct find_coordinator_request req;
    find_coordinator_request_init(&req);
    req.key = kafka_str_from_cstr(id);
    req.key_type = key_type;
    struct find_answers s;
    return find(c, node, 3, &req, &s) && s.answers == 1 && s.errors[0] == KAFKA_ERR_NONE ? s.node_ids[0] : -1;
}

/* Starts the cluster (with extra settings, or NULL) until the partition of
 * the internal topic that holds id (a group for key_type 0, a transactional
 * id for 1) has at least min_replicas replicas: the topic takes as many
 * replicas as brokers are live when it is created (internal_topic.c), which
 * on a loaded machine can be fewer, so start again. Fills the agreed
 * controller and id's coordinator. */
void start_with_replicas(struct cluster *c, const char *const *extra, int8_t key_type, const char *id, int min_replicas,
                         int32_t *controller, int32_t *coordinator)
{
    const char *internal = key_type == 0 ? "__consumer_offsets" : "__transaction_state";
    int partition = kafka_partition_for(id, 3);
    for (int attempt = 1;; attempt++) {
        struct cluster_options o = {.cluster_id = COORD_CLUSTER_ID,
                                    .election_timeout_ms = 1000,
                                    .session_timeout_ms = 9000,
                                    .internal_partitions = 3,
                                    .extra = extra};
        cluster_start(c, &o);
        wait_all_brokers(c, 30000);
        *controller = agreed_controller(c, -1, 30000);
        long long deadline = harness_now_ms() + 30000;
        while ((*coordinator = coordinator_of(c, *controller, key_type, id)) < 0 && harness_now_ms() < deadline)
            usleep(200 * 1000);
        assert_true(*coordinator >= 1 && *coordinator <= N);
        struct view v;
        if (!metadata(c, *coordinator, internal, &v) || v.partitions != 3)
            fail_msg("%s is not in broker %d's metadata", internal, *coordinator);
        if (v.p[partition].replica_count >= min_replicas)
            return;
        if (attempt == 4)
            fail_msg("%s had fewer than %d replicas in 4 cluster starts", internal, min_replicas);
        fprintf(stderr, "[test] %s has %d replica(s); starting the cluster again\n", internal,
                v.p[partition].replica_count);
        cluster_stop(c);
    }
}

/* Waits until the coordinator leads id's partition of the internal topic
 * with every replica in its ISR. */
void wait_full_isr(struct cluster *c, const char *internal, const char *id, int32_t coordinator)
{
    int partition = kafka_partition_for(id, 3);
    long long deadline = harness_now_ms() + 30000;
    while (harness_now_ms() < deadline) {
        struct view v;
        if (metadata(c, coordinator, internal, &v) && v.partitions == 3 && v.p[partition].leader == coordinator &&
            v.p[partition].isr_count == v.p[partition].replica_count)
            return;
        usleep(200 * 1000);
    }
    fail_msg("%s-%d never had all its replicas in its ISR", internal, partition);
}

struct commit_answer {
    bool answered;
    int16_t error;
};

static void commit_parse(const struct net_client_result *result, void *arg)
{
    struct commit_answer *a = arg;
    const struct offset_commit_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m || m->topics_count != 1 || m->topics[0].partitions_count != 1)
        return;
    a->answered = true;
    a->error = m->topics[0].partitions[0].error_code;
}

/* A simple OffsetCommit (no generation) of partition 0 of topic at node:
 * its error, -1 when unanswered. */
int commit_offset(struct cluster *c, int node, const char *group, const char *topic, int64_t offset)
{
    struct offset_commit_request_offset_commit_request_partition part;
    offset_commit_request_offset_commit_request_partition_init(&part);
    part.partition_index = 0;
    part.committed_offset = offset;
    struct offset_commit_request_offset_commit_request_topic t;
    offset_commit_request_offset_commit_request_topic_init(&t);
    t.name = kafka_str_from_cstr(topic);
    t.partitions = &part;
    t.partitions_count = 1;
    struct offset_commit_request m;
    offset_commit_request_init(&m);
    m.group_id = kafka_str_from_cstr(group);
    m.generation_id_or_member_epoch = -1;
    m.member_id = kafka_str_from_cstr("");
    m.topics = &t;
    m.topics_count = 1;
    struct commit_answer a = {0};
    client_call(c->client, node, 8, 8, &m, 20000, commit_parse, &a);
    return a.answered ? a.error : -1;
}
