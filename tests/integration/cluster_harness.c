/* The three-node cluster the integration tests share (see cluster_harness.h). */
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

#include "cluster_harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "raft/raft_codec.h"

/* One call in flight: the caller waits on cv until the client's thread
 * has parsed the answer. */
struct call_slot {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    enum net_client_status status;
    client_parse_fn parse;
    void *arg;
};

static void call_done(struct net_client_result *result, void *ctx)
{
    struct call_slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->status = result->status;
    if (s->parse)
        s->parse(result, s->arg);
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

struct net_client *test_client_new(void)
{
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.reconnect_backoff_max_ms = 200;
    struct net_client *client = NULL;
    char err[200];
    if (net_client_create(&cfg, &client, err, sizeof err) != 0)
        fail_msg("client: %s", err);
    return client;
}

enum net_client_status client_call(struct net_client *client, int node, int16_t api_key, int16_t version,
                                   const void *body, int timeout_ms, client_parse_fn parse, void *arg)
{
    struct call_slot s = {.parse = parse, .arg = arg};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    struct net_client_request req = {.node_id = node,
                                     .api_key = api_key,
                                     .pinned_version = version,
                                     .body = body,
                                     .timeout_ms = timeout_ms,
                                     .done = call_done,
                                     .ctx = &s};
    char err[200];
    if (net_client_send(client, &req, err, sizeof err) != 0)
        fail_msg("send: %s", err);
    pthread_mutex_lock(&s.mu);
    while (!s.done)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    return s.status;
}

struct metadata_ask {
    const char *topic;
    struct view *view;
};

static void read_topic(const struct metadata_response_metadata_response_topic *t, struct view *v)
{
    v->partitions = t->partitions_count;
    memcpy(v->topic_id, t->topic_id.bytes, 16);
    for (int32_t k = 0; k < t->partitions_count; k++) {
        const struct metadata_response_metadata_response_partition *mp = &t->partitions[k];
        if (mp->partition_index < 0 || mp->partition_index >= VIEW_PARTS)
            continue;
        v->leaders[mp->partition_index] = mp->leader_id;
        struct partition_view *pv = &v->p[mp->partition_index];
        pv->leader = mp->leader_id;
        pv->leader_epoch = mp->leader_epoch;
        pv->replica_count = mp->replica_nodes_count;
        pv->isr_count = 0;
        for (int32_t j = 0; j < mp->isr_nodes_count && j < N; j++)
            pv->isr[pv->isr_count++] = mp->isr_nodes[j];
    }
}

static void metadata_parse(const struct net_client_result *result, void *arg)
{
    const struct metadata_ask *ask = arg;
    struct view *v = ask->view;
    const struct metadata_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    v->controller_id = m->controller_id;
    for (int32_t i = 0; i < m->brokers_count; i++) {
        const struct metadata_response_metadata_response_broker *b = &m->brokers[i];
        if (b->node_id >= 0 && b->node_id < 32)
            v->brokers |= 1u << b->node_id;
        if (v->broker_count < VIEW_BROKERS) {
            v->broker_ids[v->broker_count] = b->node_id;
            v->broker_ports[v->broker_count++] = b->port;
        }
        if (b->node_id == 1 && b->rack.len > 0)
            snprintf(v->rack, sizeof v->rack, "%.*s", (int)b->rack.len, b->rack.data);
    }
    size_t want = ask->topic ? strlen(ask->topic) : 0;
    for (int32_t i = 0; want > 0 && i < m->topics_count; i++) {
        const struct metadata_response_metadata_response_topic *t = &m->topics[i];
        if (t->error_code == 0 && (size_t)t->name.len == want && memcmp(t->name.data, ask->topic, want) == 0)
            read_topic(t, v);
    }
}

void client_metadata_auto_create(struct net_client *client, int node, const char *topic, int timeout_ms)
{
    struct metadata_request_metadata_request_topic t;
    metadata_request_metadata_request_topic_init(&t);
    t.name = kafka_str_from_cstr(topic);
    struct metadata_request req;
    metadata_request_init(&req);
    req.topics = &t;
    req.topics_count = 1;
    req.allow_auto_topic_creation = true;
    client_call(client, node, 3, -1, &req, timeout_ms, NULL, NULL);
}

bool client_metadata(struct net_client *client, int node, const char *topic, struct view *out)
{
    struct metadata_request req;
    metadata_request_init(&req);
    req.topics = NULL;
    req.topics_count = -1;
    memset(out, 0, sizeof *out);
    out->partitions = -1;
    struct metadata_ask ask = {.topic = topic, .view = out};
    return client_call(client, node, 3, -1, &req, 5000, metadata_parse, &ask) == NET_CLIENT_OK;
}

struct describe_answer {
    int rc;
    struct raft_quorum_view *view;
};

static void describe_parse(const struct net_client_result *result, void *arg)
{
    struct describe_answer *a = arg;
    char err[200];
    a->rc = result->status == NET_CLIENT_OK
                ? raft_codec_read_describe_quorum(result->response, a->view, err, sizeof err)
                : -1;
}

int client_describe_quorum(struct net_client *client, int node, int timeout_ms, struct raft_quorum_view *out)
{
    struct describe_quorum_request_partition_data part = {.partition_index = 0};
    struct describe_quorum_request_topic_data topic = {
        .topic_name = kafka_str_from_cstr("__cluster_metadata"), .partitions = &part, .partitions_count = 1};
    struct describe_quorum_request req = {.topics = &topic, .topics_count = 1};
    memset(out, 0, sizeof *out);
    struct describe_answer a = {.rc = -1, .view = out};
    client_call(client, node, RAFT_API_DESCRIBE_QUORUM, -1, &req, timeout_ms, describe_parse, &a);
    return a.rc;
}

struct view client_wait_view(struct net_client *client, int node, unsigned want, const char *topic, int partitions,
                             int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct view v;
    for (;;) {
        bool ok = client_metadata(client, node, topic, &v);
        if (ok && v.brokers == want && (!topic || v.partitions == partitions))
            return v;
        if (harness_now_ms() > deadline)
            fail_msg("node %d: Metadata lists brokers 0x%x (want 0x%x), topic %s with %d partitions (want %d)", node,
                     ok ? v.brokers : 0, want, topic ? topic : "-", ok ? v.partitions : -2, partitions);
        usleep(100 * 1000);
    }
}

bool metadata(struct cluster *c, int node, const char *topic, struct view *out)
{
    return client_metadata(c->client, node, topic, out);
}

struct view wait_view(struct cluster *c, int node, unsigned want, const char *topic, int partitions, int timeout_ms)
{
    return client_wait_view(c->client, node, want, topic, partitions, timeout_ms);
}

static void create_parse(const struct net_client_result *result, void *arg)
{
    const struct create_topics_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m && m->topics_count == 1)
        *(int16_t *)arg = m->topics[0].error_code;
}

int16_t create_one_topic(struct cluster *c, int node, struct create_topics_request_creatable_topic *topic)
{
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = topic;
    req.topics_count = 1;
    req.timeout_ms = 10000;
    int16_t error = -1;
    if (client_call(c->client, node, 19, -1, &req, 10000, create_parse, &error) != NET_CLIENT_OK)
        return -1;
    return error;
}

int16_t create_topic_rf(struct cluster *c, int node, const char *name, int partitions, int16_t rf)
{
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = partitions;
    t.replication_factor = rf;
    return create_one_topic(c, node, &t);
}

int16_t create_topic(struct cluster *c, int node, const char *name, int partitions)
{
    return create_topic_rf(c, node, name, partitions, 1);
}

void create_topic_until_taken(struct cluster *c, struct create_topics_request_creatable_topic *topic)
{
    long long deadline = harness_now_ms() + 60000;
    for (int node = 1;; node = node % N + 1) {
        int16_t err = create_one_topic(c, node, topic);
        if (err == KAFKA_ERR_NONE || err == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics %.*s: error %d", (int)topic->name.len, topic->name.data, (int)err);
        usleep(200 * 1000);
    }
}

void create_topic_min_isr(struct cluster *c, const char *name, int16_t rf, const char *min_isr)
{
    struct create_topics_request_creatable_topic_config cfg = {kafka_str_from_cstr("min.insync.replicas"),
                                                               kafka_str_from_cstr(min_isr)};
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = 1;
    t.replication_factor = rf;
    t.configs = &cfg;
    t.configs_count = 1;
    create_topic_until_taken(c, &t);
}

void cluster_start(struct cluster *c, const struct cluster_options *o)
{
    memset(c, 0, sizeof *c);
    char voters[256] = "";
    for (int i = 0; i < N; i++) {
        c->controller_ports[i] = harness_free_port();
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1, c->controller_ports[i]);
    }
    char cluster_kv[64], voters_kv[300], election_kv[64], fetch_kv[64], session_kv[64], offsets_kv[64], txn_kv[64];
    snprintf(cluster_kv, sizeof cluster_kv, "cluster.id=%s", o->cluster_id);
    snprintf(election_kv, sizeof election_kv, "controller.quorum.election.timeout.ms=%d", o->election_timeout_ms);
    snprintf(fetch_kv, sizeof fetch_kv, "controller.quorum.fetch.timeout.ms=%d", 2 * o->election_timeout_ms);
    snprintf(session_kv, sizeof session_kv, "broker.session.timeout.ms=%d", o->session_timeout_ms);
    snprintf(offsets_kv, sizeof offsets_kv, "offsets.topic.num.partitions=%d", o->internal_partitions);
    snprintf(txn_kv, sizeof txn_kv, "transaction.state.log.num.partitions=%d", o->internal_partitions);
    snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
    for (int i = 0; i < N; i++) {
        int port;
        do {
            port = harness_free_port();
        } while (port == c->controller_ports[0] || port == c->controller_ports[1] || port == c->controller_ports[2]);
        char listeners[200], node_id[32], metrics_kv[64];
        int used = snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d",
                            port, c->controller_ports[i]);
        if (o->extra_listener) {
            do {
                c->extra_ports[i] = harness_free_port();
            } while (c->extra_ports[i] == port || c->extra_ports[i] == c->controller_ports[i]);
            snprintf(listeners + used, sizeof listeners - (size_t)used, ",%s://127.0.0.1:%d", o->extra_listener,
                     c->extra_ports[i]);
        }
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        c->metrics_ports[i] = harness_free_port();
        snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", c->metrics_ports[i]);
        const char *overrides[48] = {listeners,
                                     metrics_kv,
                                     node_id,
                                     voters_kv,
                                     cluster_kv,
                                     election_kv,
                                     fetch_kv,
                                     session_kv,
                                     offsets_kv,
                                     txn_kv,
                                     "process.roles=broker,controller",
                                     "controller.listener.names=CONTROLLER",
                                     "broker.heartbeat.interval.ms=500"};
        size_t n = 13, cap = sizeof overrides / sizeof overrides[0] - 2;
        for (size_t k = 0; o->settings && o->settings[k] && n < cap; k++)
            overrides[n++] = o->settings[k];
        for (size_t k = 0; o->extra && o->extra[k] && n < cap; k++)
            overrides[n++] = o->extra[k];
        if (o->node_setting[i])
            overrides[n++] = o->node_setting[i];
        overrides[n] = NULL;
        broker_spawn_on_port(&c->nodes[i], port, overrides);
    }
    for (int i = 0; i < N; i++)
        if (!(o->not_awaited & (1u << (i + 1))))
            broker_wait_ready(&c->nodes[i]);
    c->client = test_client_new();
    for (int i = 0; i < N; i++)
        assert_int_equal(net_client_add_node(c->client, i + 1, "127.0.0.1", broker_port(&c->nodes[i])), 0);
}

void replicated_cluster_start(struct cluster *c, const char *cluster_id, const char *const *extra)
{
    replicated_cluster_start_session(c, cluster_id, extra, 30000);
}

void replicated_cluster_start_session(struct cluster *c, const char *cluster_id, const char *const *extra,
                                      int session_timeout_ms)
{
    static const char *const settings[] = {"replica.fetch.backoff.ms=200", NULL};
    struct cluster_options o = {.cluster_id = cluster_id,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = session_timeout_ms,
                                .internal_partitions = 1,
                                .settings = settings,
                                .extra = extra};
    cluster_start(c, &o);
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

int32_t agreed_controller(struct cluster *c, int32_t not_this, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        int32_t seen = -1;
        bool agree = true;
        for (int i = 0; i < N; i++) {
            struct view v;
            if (c->nodes[i].pid <= 0)
                continue;
            if (!metadata(c, i + 1, NULL, &v)) {
                agree = false;
                continue;
            }
            if (seen < 0)
                seen = v.controller_id;
            agree &= v.controller_id == seen;
        }
        if (agree && seen >= 1 && seen <= N && seen != not_this)
            return seen;
        if (harness_now_ms() > deadline)
            fail_msg("the nodes do not agree on an active controller (last seen %d)", seen);
        usleep(100 * 1000);
    }
}

long long metric(const struct cluster *c, int node, const char *name)
{
    char *page = raw_http_get(c->metrics_ports[node - 1], "/metrics");
    long long v = page ? raw_metric_value(page, name) : -1;
    free(page);
    return v;
}

void wait_metric(const struct cluster *c, int node, const char *name, long long want, bool at_least)
{
    /* A loaded machine (ASan, parallel builds) stretches fetches and commits. */
    long long deadline = harness_now_ms() + 20000;
    long long v;
    while (at_least ? (v = metric(c, node, name)) < want : (v = metric(c, node, name)) != want) {
        if (harness_now_ms() > deadline)
            fail_msg("node %d: %s is %lld, not %s%lld", node, name, v, at_least ? ">= " : "", want);
        usleep(100 * 1000);
    }
}

int32_t create_partitions(struct cluster *c, const char *topic, int partitions, const char *const *configs)
{
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&c->nodes[0]), NULL);
    long long deadline = harness_now_ms() + 60000;
    char errstr[256] = "";
    rd_kafka_resp_err_t err;
    while ((err = rk_create_topic_result(admin, topic, partitions, 3, configs, false, errstr, sizeof errstr)) !=
           RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics %s: %s (%s)", topic, rd_kafka_err2str(err), errstr);
        usleep(200 * 1000);
    }
    int32_t leader = -1;
    while (leader < 0) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(admin, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            for (int t = 0; t < md->topic_cnt; t++)
                if (strcmp(md->topics[t].topic, topic) == 0 && md->topics[t].partition_cnt == partitions) {
                    bool all = true;
                    for (int p = 0; p < partitions; p++)
                        all = all && md->topics[t].partitions[p].replica_cnt == 3 &&
                              md->topics[t].partitions[p].leader >= 1;
                    if (all)
                        leader = md->topics[t].partitions[0].leader;
                }
            rd_kafka_metadata_destroy(md);
        }
        if (leader < 0 && harness_now_ms() > deadline)
            fail_msg("no leader for %s", topic);
        if (leader < 0)
            usleep(200 * 1000);
    }
    rk_producer_destroy(admin);
    assert_true(leader >= 1 && leader <= N);
    return leader;
}

int32_t create_replicated(struct cluster *c, const char *topic, const char *const *configs)
{
    return create_partitions(c, topic, 1, configs);
}

void produce_acked(const char *bootstrap, const char *topic, int partitions, int count)
{
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    for (int m = 0; m < count; m++) {
        char value[64];
        int vn = snprintf(value, sizeof value, "acked-%d", m);
        assert_int_equal(rk_produce_blocking(p, topic, m % partitions, NULL, 0, value, (size_t)vn, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 60000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);
    assert_int_equal(stats->delivered, count);
    rk_producer_destroy(p);
}

void expect_partition_offset_values(const struct rk_record_set *set)
{
    for (size_t i = 0; i < set->count; i++) {
        char expect[32];
        snprintf(expect, sizeof expect, "p%d-m%lld", set->records[i].partition, (long long)set->records[i].offset);
        assert_int_equal(set->records[i].value_len, strlen(expect));
        assert_memory_equal(set->records[i].value, expect, strlen(expect));
    }
}

void cluster_alter_forwarded(struct cluster *c, int via)
{
    long long deadline = harness_now_ms() + 30000;
    char msg[512] = "";
    int code;
    while ((code = raw_incremental_alter_broker(broker_port(&c->nodes[via - 1]), "", "num.replica.fetchers", 0, "2",
                                                msg, sizeof msg)) != 0 &&
           harness_now_ms() < deadline)
        usleep(300 * 1000);
    if (code != 0)
        fail_msg("num.replica.fetchers=2 via node %d: error %d %s", via, code, msg);
}

bool cluster_any_logged(const struct cluster *c, const char *needle)
{
    for (int i = 0; i < N; i++)
        if (broker_log_contains(&c->nodes[i], needle))
            return true;
    return false;
}

void cluster_pick_voters(int n, int *ports, char *voters_kv, size_t len)
{
    size_t used = (size_t)snprintf(voters_kv, len, "controller.quorum.voters=");
    for (int i = 0; i < n; i++) {
        bool taken;
        do {
            ports[i] = harness_free_port();
            taken = false;
            for (int j = 0; j < i; j++)
                taken = taken || ports[j] == ports[i];
        } while (taken);
        used += (size_t)snprintf(voters_kv + used, used < len ? len - used : 0, "%s%d@127.0.0.1:%d", i ? "," : "",
                                 i + 1, ports[i]);
    }
    assert_true(used < len);
}

void cluster_spawn_controllers(struct test_broker *nodes, int n, int *ports, const char *cluster_id, int election_ms,
                               int fetch_ms, char *voters_kv, size_t len)
{
    char cluster_kv[64], election_kv[64], fetch_kv[64];
    cluster_pick_voters(n, ports, voters_kv, len);
    snprintf(cluster_kv, sizeof cluster_kv, "cluster.id=%s", cluster_id);
    snprintf(election_kv, sizeof election_kv, "controller.quorum.election.timeout.ms=%d", election_ms);
    snprintf(fetch_kv, sizeof fetch_kv, "controller.quorum.fetch.timeout.ms=%d", fetch_ms);
    for (int i = 0; i < n; i++) {
        char listeners[96], node_id[32];
        snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", ports[i]);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        const char *overrides[] = {listeners,
                                   node_id,
                                   voters_kv,
                                   "process.roles=controller",
                                   "controller.listener.names=CONTROLLER",
                                   cluster_kv,
                                   election_kv,
                                   fetch_kv,
                                   NULL};
        broker_spawn_on_port(&nodes[i], ports[i], overrides);
    }
}
