/* The leader election tests' cluster helpers (see leader_cluster.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leader_cluster.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

struct call_slot {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    enum net_client_status status;
    const char *topic;
    struct view view;
    int16_t error;
};

static void metadata_done(struct net_client_result *result, void *ctx)
{
    struct call_slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->status = result->status;
    const struct metadata_response *m = result->response;
    s->view.partitions = -1;
    if (result->status == NET_CLIENT_OK && m) {
        s->view.controller_id = m->controller_id;
        for (int32_t i = 0; i < m->brokers_count; i++)
            if (m->brokers[i].node_id >= 0 && m->brokers[i].node_id < 32)
                s->view.brokers |= 1u << m->brokers[i].node_id;
        for (int32_t i = 0; i < m->topics_count; i++) {
            const struct metadata_response_metadata_response_topic *t = &m->topics[i];
            if (t->error_code != 0 || (size_t)t->name.len != strlen(s->topic) ||
                memcmp(t->name.data, s->topic, (size_t)t->name.len) != 0)
                continue;
            s->view.partitions = t->partitions_count;
            memcpy(s->view.topic_id, t->topic_id.bytes, 16);
            for (int32_t k = 0; k < t->partitions_count; k++) {
                const struct metadata_response_metadata_response_partition *mp = &t->partitions[k];
                if (mp->partition_index < 0 || mp->partition_index >= PARTS)
                    continue;
                struct partition_view *pv = &s->view.p[mp->partition_index];
                pv->leader = mp->leader_id;
                pv->leader_epoch = mp->leader_epoch;
                pv->isr_count = 0;
                for (int32_t j = 0; j < mp->isr_nodes_count && j < N; j++)
                    pv->isr[pv->isr_count++] = mp->isr_nodes[j];
            }
        }
    }
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void create_done(struct net_client_result *result, void *ctx)
{
    struct call_slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->status = result->status;
    const struct create_topics_response *m = result->response;
    s->error = -1;
    if (result->status == NET_CLIENT_OK && m && m->topics_count == 1)
        s->error = m->topics[0].error_code;
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void call(struct cluster *c, int node, int16_t api_key, const void *body, net_client_done_fn done,
                 struct call_slot *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    struct net_client_request req = {.node_id = node,
                                     .api_key = api_key,
                                     .pinned_version = -1,
                                     .body = body,
                                     .timeout_ms = 5000,
                                     .done = done,
                                     .ctx = s};
    char err[200];
    if (net_client_send(c->client, &req, err, sizeof err) != 0)
        fail_msg("send: %s", err);
    pthread_mutex_lock(&s->mu);
    while (!s->done)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

bool metadata(struct cluster *c, int node, const char *topic, struct view *out)
{
    struct metadata_request req;
    metadata_request_init(&req);
    req.topics = NULL;
    req.topics_count = -1;
    struct call_slot s = {.topic = topic};
    call(c, node, 3, &req, metadata_done, &s);
    *out = s.view;
    return s.status == NET_CLIENT_OK;
}

int16_t create_topic(struct cluster *c, int node, const char *name, int partitions, int16_t rf)
{
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = partitions;
    t.replication_factor = rf;
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = &t;
    req.topics_count = 1;
    req.timeout_ms = 10000;
    struct call_slot s = {.error = -1};
    call(c, node, 19, &req, create_done, &s);
    return s.status == NET_CLIENT_OK ? s.error : -1;
}

/* extra: NULL or NULL-terminated settings added to every node's. */
void cluster_start(struct cluster *c, const char *const *extra)
{
    memset(c, 0, sizeof *c);
    char voters[256] = "";
    for (int i = 0; i < N; i++) {
        c->controller_ports[i] = harness_free_port();
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1, c->controller_ports[i]);
    }
    for (int i = 0; i < N; i++) {
        int port;
        do {
            port = harness_free_port();
        } while (port == c->controller_ports[0] || port == c->controller_ports[1] || port == c->controller_ports[2]);
        char listeners[160], node_id[32], voters_kv[300];
        snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port,
                 c->controller_ports[i]);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
        char metrics_kv[64];
        c->metrics_ports[i] = harness_free_port();
        snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", c->metrics_ports[i]);
        const char *overrides[24] = {listeners,
                                     metrics_kv,
                                     node_id,
                                     voters_kv,
                                     "process.roles=broker,controller",
                                     "controller.listener.names=CONTROLLER",
                                     "cluster.id=" CLUSTER_ID,
                                     "controller.quorum.election.timeout.ms=500",
                                     "controller.quorum.fetch.timeout.ms=1000",
                                     "broker.heartbeat.interval.ms=500",
                                     "broker.session.timeout.ms=2000",
                                     "offsets.topic.num.partitions=1",
                                     "transaction.state.log.num.partitions=1",
                                     NULL};
        size_t used_n = 0;
        while (overrides[used_n])
            used_n++;
        for (size_t k = 0; extra && extra[k] && used_n + 1 < sizeof overrides / sizeof overrides[0]; k++)
            overrides[used_n++] = extra[k];
        overrides[used_n] = NULL;
        broker_spawn_on_port(&c->nodes[i], port, overrides);
    }
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c->nodes[i]);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.reconnect_backoff_max_ms = 200;
    char err[200];
    if (net_client_create(&cfg, &c->client, err, sizeof err) != 0)
        fail_msg("client: %s", err);
    for (int i = 0; i < N; i++)
        assert_int_equal(net_client_add_node(c->client, i + 1, "127.0.0.1", broker_port(&c->nodes[i])), 0);
}

void cluster_stop(struct cluster *c)
{
    net_client_destroy(c->client);
    for (int i = 0; i < N; i++) {
        if (c->nodes[i].pid > 0)
            broker_stop(&c->nodes[i]);
        broker_mark_passed(&c->nodes[i]);
        broker_cleanup(&c->nodes[i]);
    }
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

struct el_slot {
    struct call_slot base; /* first: call() signals through it */
    struct el_result r;
};

static void elect_done(struct net_client_result *result, void *ctx)
{
    struct el_slot *s = ctx;
    pthread_mutex_lock(&s->base.mu);
    s->base.status = result->status;
    if (result->status != NET_CLIENT_OK)
        fprintf(stderr, "[test] ElectLeaders v%d at node %d: %s\n", (int)result->api_version, (int)result->node_id,
                result->error);
    const struct elect_leaders_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m) {
        s->r.error = m->error_code;
        for (int32_t t = 0; t < m->replica_election_results_count; t++) {
            const struct elect_leaders_response_replica_election_result *tr = &m->replica_election_results[t];
            for (int32_t i = 0; i < tr->partition_result_count && s->r.n < EL_MAX; i++) {
                snprintf(s->r.topic[s->r.n], sizeof s->r.topic[0], "%.*s", (int)tr->topic.len, tr->topic.data);
                s->r.partition[s->r.n] = tr->partition_result[i].partition_id;
                s->r.errors[s->r.n++] = tr->partition_result[i].error_code;
            }
        }
    }
    s->base.done = true;
    pthread_cond_signal(&s->base.cv);
    pthread_mutex_unlock(&s->base.mu);
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
    struct el_slot s = {.base = {.error = -1}};
    pthread_mutex_init(&s.base.mu, NULL);
    pthread_cond_init(&s.base.cv, NULL);
    struct net_client_request nr = {.node_id = node,
                                    .api_key = 43,
                                    .pinned_version = version,
                                    .body = &req,
                                    .timeout_ms = 15000,
                                    .done = elect_done,
                                    .ctx = &s};
    char err[200];
    if (net_client_send(c->client, &nr, err, sizeof err) != 0)
        fail_msg("send: %s", err);
    pthread_mutex_lock(&s.base.mu);
    while (!s.base.done)
        pthread_cond_wait(&s.base.cv, &s.base.mu);
    pthread_mutex_unlock(&s.base.mu);
    pthread_mutex_destroy(&s.base.mu);
    pthread_cond_destroy(&s.base.cv);
    assert_int_equal(s.base.status, NET_CLIENT_OK);
    return s.r;
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
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = &t;
    req.topics_count = 1;
    req.timeout_ms = 10000;
    struct call_slot s = {.error = -1};
    call(c, node, 19, &req, create_done, &s);
    return s.status == NET_CLIENT_OK ? s.error : -1;
}

/* The active controller, once the three nodes agree on it. */
int32_t agreed_controller(struct cluster *c)
{
    struct view v;
    long long deadline = harness_now_ms() + 15000;
    for (;;) {
        int32_t seen[N];
        for (int i = 0; i < N; i++)
            seen[i] = metadata(c, i + 1, "", &v) ? v.controller_id : -1;
        if (seen[0] >= 1 && seen[0] == seen[1] && seen[1] == seen[2])
            return seen[0];
        if (harness_now_ms() > deadline)
            fail_msg("no agreed controller");
        usleep(100 * 1000);
    }
}

/* A controller gauge at node (1-based); -1 when it is not exported. */
long long gauge(const struct cluster *c, int node, const char *name)
{
    char *page = raw_http_get(c->metrics_ports[node - 1], "/metrics");
    long long v = page ? raw_metric_value(page, name) : -1;
    free(page);
    return v;
}

/* Waits until node's gauge reads want (at_least: want or more). */
void wait_gauge_cmp(const struct cluster *c, int node, const char *name, long long want, bool at_least)
{
    long long deadline = harness_now_ms() + SLACK_MS;
    long long v;
    while (at_least ? (v = gauge(c, node, name)) < want : (v = gauge(c, node, name)) != want) {
        if (harness_now_ms() > deadline)
            fail_msg("node %d: %s is %lld, not %lld", node, name, v, want);
        usleep(100 * 1000);
    }
}

void wait_gauge(const struct cluster *c, int node, const char *name, long long want)
{
    wait_gauge_cmp(c, node, name, want, false);
}
