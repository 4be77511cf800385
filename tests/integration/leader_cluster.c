/* The leader election tests' cluster helpers (see leader_cluster.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leader_cluster.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

/* extra: NULL or NULL-terminated settings added to every node's. */
void leader_cluster_start(struct cluster *c, const char *const *extra)
{
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 500,
                                .session_timeout_ms = SESSION_TIMEOUT_MS,
                                .internal_partitions = 1,
                                .settings = extra};
    cluster_start(c, &o);
}

/* ---- AlterPartition and ApiVersions, raw, at a controller listener ---- */

/* One partition's change: topic by name (v0-1) or id (v2+); epochs[i] are
 * sent at v3 only. */
struct ap_result alter_partition(int port, int16_t version, int32_t broker_id, int64_t broker_epoch, const char *topic,
                                 const uint8_t topic_id[16], int32_t partition, int32_t leader_epoch,
                                 int32_t partition_epoch, const int32_t *isr, const int64_t *epochs, int isr_count)
{
    static int32_t correlation = 100;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 56, version, ++correlation, "isr-test");
    raw_put_i32(&w, broker_id);
    raw_put_i64(&w, broker_epoch);
    raw_put_compact_array_len(&w, 1);
    if (version >= 2)
        raw_put_bytes(&w, topic_id, 16);
    else
        raw_put_compact_string(&w, topic);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, partition);
    raw_put_i32(&w, leader_epoch);
    raw_put_compact_array_len(&w, isr_count);
    for (int i = 0; i < isr_count; i++) {
        raw_put_i32(&w, isr[i]);
        if (version >= 3) {
            raw_put_i64(&w, epochs[i]);
            raw_put_uvarint(&w, 0);
        }
    }
    if (version >= 1)
        raw_put_i8(&w, 0); /* RECOVERED */
    raw_put_i32(&w, partition_epoch);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, correlation, true, 10000, &frame, &r), 0);
    struct ap_result out = {.partition_error = -1};
    raw_get_i32(&r); /* throttle */
    out.error = raw_get_i16(&r);
    uint64_t topics = raw_get_uvarint(&r);
    if (topics == 2) {
        if (version >= 2)
            raw_skip(&r, 16);
        else
            raw_get_compact_string(&r, (char[256]){0}, 256);
        assert_int_equal(raw_get_uvarint(&r), 2);
        assert_int_equal(raw_get_i32(&r), partition);
        out.partition_error = raw_get_i16(&r);
        out.leader = raw_get_i32(&r);
        out.leader_epoch = raw_get_i32(&r);
        uint64_t n = raw_get_uvarint(&r);
        for (uint64_t i = 1; i < n; i++) {
            int32_t id = raw_get_i32(&r);
            if (out.isr_count < N)
                out.isr[out.isr_count++] = id;
        }
        if (version >= 1)
            raw_get_i8(&r);
        out.partition_epoch = raw_get_i32(&r);
        raw_skip_tagged_fields(&r);
        raw_skip_tagged_fields(&r);
    } else {
        assert_int_equal(topics, 1); /* a request-level error: no topics */
    }
    raw_skip_tagged_fields(&r);
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
    return out;
}

/* The AlterPartition range a listener advertises; false when absent. */
bool advertises_alter_partition(int port, int16_t *min, int16_t *max)
{
    int fd = raw_connect(port, 5000);
    assert_true(fd >= 0);
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(fd, 3, 7, &v), 0);
    close(fd);
    const struct raw_api_range *range = raw_api_versions_find(&v, 56);
    if (range) {
        *min = range->min_version;
        *max = range->max_version;
    }
    return range != NULL;
}

/* A broker's epoch, from the "registering broker <id> (epoch <e>)" lines
 * of whichever controllers wrote its registrations: the highest. */
int64_t registered_epoch(const struct cluster *c, int32_t id)
{
    char needle[64];
    snprintf(needle, sizeof needle, "registering broker %d (epoch ", (int)id);
    long long epoch = -1;
    for (int i = 0; i < N; i++) {
        FILE *f = fopen(c->nodes[i].log_path, "r");
        assert_non_null(f);
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            const char *at = strstr(line, needle);
            if (at && atoll(at + strlen(needle)) > epoch)
                epoch = atoll(at + strlen(needle));
        }
        fclose(f);
    }
    assert_true(epoch >= 0);
    return epoch;
}

bool in_isr(const struct partition_view *p, int32_t id)
{
    for (int i = 0; i < p->isr_count; i++)
        if (p->isr[i] == id)
            return true;
    return false;
}

/* Waits until node lists the brokers in want, the topic with PARTS
 * partitions, and every partition with a leader; fails after timeout_ms. */
struct view wait_settled(struct cluster *c, int node, unsigned want, const char *topic, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct view v;
    for (;;) {
        bool ok = metadata(c, node, topic, &v);
        bool led = ok && (!topic[0] || v.partitions == PARTS);
        for (int p = 0; led && topic[0] && p < PARTS; p++)
            led = v.p[p].leader > 0;
        if (ok && v.brokers == want && led)
            return v;
        if (harness_now_ms() > deadline)
            fail_msg("node %d: brokers 0x%x (want 0x%x), %d partitions of %s, all led: %d", node, v.brokers, want,
                     ok ? v.partitions : -2, topic, led);
        usleep(100 * 1000);
    }
}

/* ---- ElectLeaders (api 43), raw, at a client listener ---- */

static void elect_parse(const struct net_client_result *result, void *arg)
{
    struct el_result *r = arg;
    if (result->status != NET_CLIENT_OK)
        fprintf(stderr, "[test] ElectLeaders v%d at node %d: %s\n", (int)result->api_version, (int)result->node_id,
                result->error);
    const struct elect_leaders_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m) {
        r->error = m->error_code;
        for (int32_t t = 0; t < m->replica_election_results_count; t++) {
            const struct elect_leaders_response_replica_election_result *tr = &m->replica_election_results[t];
            for (int32_t i = 0; i < tr->partition_result_count && r->n < EL_MAX; i++) {
                snprintf(r->topic[r->n], sizeof r->topic[0], "%.*s", (int)tr->topic.len, tr->topic.data);
                r->partition[r->n] = tr->partition_result[i].partition_id;
                r->errors[r->n++] = tr->partition_result[i].error_code;
            }
        }
    }
}

/* ElectLeaders at node for "topic:partition" names (NULL names: every
 * partition); version -1 negotiates (2). */
struct el_result elect_leaders(struct cluster *c, int node, int16_t version, int8_t type, const char *const *names,
                               int count)
{
    struct elect_leaders_request_topic_partitions tp[EL_MAX];
    int32_t parts[EL_MAX];
    char topics[EL_MAX][32];
    for (int i = 0; names && i < count; i++) {
        const char *colon = strchr(names[i], ':');
        snprintf(topics[i], sizeof topics[i], "%.*s", (int)(colon - names[i]), names[i]);
        parts[i] = atoi(colon + 1);
        elect_leaders_request_topic_partitions_init(&tp[i]);
        tp[i].topic = kafka_str_from_cstr(topics[i]);
        tp[i].partitions = &parts[i];
        tp[i].partitions_count = 1;
    }
    struct elect_leaders_request req;
    elect_leaders_request_init(&req);
    req.election_type = type;
    req.topic_partitions = names ? tp : NULL;
    req.topic_partitions_count = names ? count : -1;
    req.timeout_ms = 10000;
    struct el_result r = {0};
    assert_int_equal(client_call(c->client, node, 43, version, &req, 15000, elect_parse, &r), NET_CLIENT_OK);
    return r;
}

/* The error answered for topic-partition, or -1 when it is not listed. */
int16_t el_error(const struct el_result *r, const char *topic, int32_t partition)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->topic[i], topic) == 0 && r->partition[i] == partition)
            return r->errors[i];
    return -1;
}

/* CreateTopics of one partition on the given replicas. */
int16_t create_assigned(struct cluster *c, int node, const char *name, int32_t *replicas, int n)
{
    struct create_topics_request_creatable_replica_assignment a;
    create_topics_request_creatable_replica_assignment_init(&a);
    a.partition_index = 0;
    a.broker_ids = replicas;
    a.broker_ids_count = n;
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = -1;
    t.replication_factor = -1;
    t.assignments = &a;
    t.assignments_count = 1;
    return create_one_topic(c, node, &t);
}
