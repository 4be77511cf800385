/* Partition leadership moves when a broker is fenced. Three
 * process.roles=broker,controller cairnd nodes, broker.session.timeout.ms
 * 2000; a topic with replication factor 3 has a partition led by each
 * broker. kill -9 of a broker that is not the active controller: within the
 * session timeout plus slack every node's Metadata names, for each
 * partition it led, a new leader from the ISR at a higher leader epoch, and
 * an ISR without it. Raw AlterPartition requests at versions 0-3 at the
 * controller listener (which advertises it; the client listener does not)
 * get Kafka's errors for each check. Restarted, the broker is unfenced
 * (listed again), catches up, and each leader's own AlterPartition brings
 * it back into the ISR; a raw shrink is undone the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"
#include "raw_kafka.h"
#include "raw_session.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define N 3
#define PARTS 3
#define CLUSTER_ID "TGVhZGVyRWxlY3Rpb25Ucw"
#define SESSION_TIMEOUT_MS 2000
/* A loaded machine (ASan, 7 builds) may stretch heartbeats and commits. */
#define SLACK_MS 10000

struct partition_view {
    int32_t leader;
    int32_t leader_epoch;
    int32_t isr[N];
    int isr_count;
};

struct view {
    unsigned brokers; /* bit per listed broker id */
    int32_t controller_id;
    int partitions; /* -1 when the topic is absent */
    uint8_t topic_id[16];
    struct partition_view p[PARTS];
};

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

struct cluster {
    struct test_broker nodes[N];
    int controller_ports[N];
    struct net_client *client;
};

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

static bool metadata(struct cluster *c, int node, const char *topic, struct view *out)
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

static int16_t create_topic(struct cluster *c, int node, const char *name, int partitions, int16_t rf)
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

#define ALL ((1u << 1) | (1u << 2) | (1u << 3))

static void cluster_start(struct cluster *c)
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
        const char *overrides[] = {listeners,
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

static void cluster_stop(struct cluster *c)
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

struct ap_result {
    int16_t error;           /* the request's */
    int16_t partition_error; /* the one partition's */
    int32_t leader, leader_epoch, partition_epoch;
    int32_t isr[N];
    int isr_count;
};

/* One partition's change: topic by name (v0-1) or id (v2+); epochs[i] are
 * sent at v3 only. */
static struct ap_result alter_partition(int port, int16_t version, int32_t broker_id, int64_t broker_epoch,
                                        const char *topic, const uint8_t topic_id[16], int32_t partition,
                                        int32_t leader_epoch, int32_t partition_epoch, const int32_t *isr,
                                        const int64_t *epochs, int isr_count)
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
static bool advertises_alter_partition(int port, int16_t *min, int16_t *max)
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
static int64_t registered_epoch(const struct cluster *c, int32_t id)
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

static bool in_isr(const struct partition_view *p, int32_t id)
{
    for (int i = 0; i < p->isr_count; i++)
        if (p->isr[i] == id)
            return true;
    return false;
}

/* Waits until node lists the brokers in want, the topic with PARTS
 * partitions, and every partition with a leader; fails after timeout_ms. */
static struct view wait_settled(struct cluster *c, int node, unsigned want, const char *topic, int timeout_ms)
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

#define EL_MAX 16

struct el_result {
    int16_t error; /* the request's (version 1+) */
    int n;         /* partitions answered */
    char topic[EL_MAX][32];
    int32_t partition[EL_MAX];
    int16_t errors[EL_MAX];
};

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
static struct el_result elect_leaders(struct cluster *c, int node, int16_t version, int8_t type, const char *const *names,
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
static int16_t el_error(const struct el_result *r, const char *topic, int32_t partition)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->topic[i], topic) == 0 && r->partition[i] == partition)
            return r->errors[i];
    return -1;
}

/* CreateTopics of one partition on the given replicas. */
static int16_t create_assigned(struct cluster *c, int node, const char *name, int32_t *replicas, int n)
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

/* Waits until node's Metadata has victim in the ISR of partition only
 * (or of every partition when only < 0), at the leaders and leader epochs
 * of ref. */
static void wait_rejoined(struct cluster *c, int node, int32_t victim, const struct view *ref, int only,
                          int timeout_ms)
{
    long long until = harness_now_ms() + timeout_ms;
    for (;;) {
        struct view v = wait_settled(c, node, ALL, "el", timeout_ms);
        bool all_in = true;
        for (int p = 0; p < PARTS; p++) {
            assert_int_equal(v.p[p].leader, ref->p[p].leader);
            assert_int_equal(v.p[p].leader_epoch, ref->p[p].leader_epoch);
            if (only < 0 || p == only)
                all_in = all_in && in_isr(&v.p[p], victim);
        }
        if (all_in)
            return;
        if (harness_now_ms() > until)
            fail_msg("node %d: broker %d is not back in the ISR of el (partition %d)", node, victim, only);
        usleep(100 * 1000);
    }
}

static void test_fenced_leader_replaced_from_isr(void **state)
{
    (void)state;
    struct cluster c;
    cluster_start(&c);
    struct view v = wait_settled(&c, 1, ALL, "", 20000);
    /* The active controller, once the nodes agree on it. */
    int32_t controller = -1;
    long long deadline = harness_now_ms() + 15000;
    while (controller < 1) {
        int32_t seen[N];
        for (int i = 0; i < N; i++)
            seen[i] = metadata(&c, i + 1, "", &v) ? v.controller_id : -1;
        if (seen[0] >= 1 && seen[0] == seen[1] && seen[1] == seen[2])
            controller = seen[0];
        else if (harness_now_ms() > deadline)
            fail_msg("no agreed controller");
        else
            usleep(100 * 1000);
    }
    assert_int_equal(create_topic(&c, controller, "el", PARTS, 3), KAFKA_ERR_NONE);
    struct view before = wait_settled(&c, controller, ALL, "el", 10000);
    /* A victim that does not run the active controller, so the fencing is
     * the session timeout's, not a controller election's. */
    int32_t victim = -1;
    for (int p = 0; p < PARTS; p++) {
        assert_int_equal(before.p[p].isr_count, N);
        if (before.p[p].leader != controller)
            victim = before.p[p].leader;
    }
    assert_true(victim > 0);
    /* A partition on the victim alone: offline once it is fenced. */
    assert_int_equal(create_assigned(&c, controller, "solo", (int32_t[]){victim}, 1), KAFKA_ERR_NONE);
    int vp = -1; /* a partition the victim leads and prefers (first replica) */
    for (int p = 0; p < PARTS; p++)
        if (before.p[p].leader == victim)
            vp = p;
    assert_true(vp >= 0);
    fprintf(stderr, "[test] controller %d; killing broker %d\n", controller, victim);

    long long killed_at = harness_now_ms();
    broker_kill9(&c.nodes[victim - 1]);
    unsigned survivors = ALL & ~(1u << victim);
    long long moved_ms = -1;
    for (int i = 0; i < N; i++) {
        if (i + 1 == victim)
            continue;
        struct view after = wait_settled(&c, i + 1, survivors, "el", SESSION_TIMEOUT_MS + SLACK_MS);
        if (moved_ms < 0)
            moved_ms = harness_now_ms() - killed_at;
        for (int p = 0; p < PARTS; p++) {
            const struct partition_view *b = &before.p[p], *a = &after.p[p];
            assert_false(in_isr(a, victim));
            assert_int_equal(a->isr_count, N - 1);
            assert_true(in_isr(b, a->leader));
            if (b->leader == victim) {
                assert_int_not_equal(a->leader, victim);
                assert_true(a->leader_epoch > b->leader_epoch);
            } else {
                /* A follower lost: same leader, same leader epoch. */
                assert_int_equal(a->leader, b->leader);
                assert_int_equal(a->leader_epoch, b->leader_epoch);
            }
        }
    }
    fprintf(stderr, "[test] leadership moved off broker %d %lld ms after kill -9 (session timeout %d ms)\n", victim,
            moved_ms, SESSION_TIMEOUT_MS);
    assert_true(moved_ms <= SESSION_TIMEOUT_MS + SLACK_MS);

    /* librdkafka, bootstrapped on a survivor, finds the new leaders and
     * writes to every partition, the moved ones included. */
    int survivor = victim % N + 1;
    const char *conf[] = {"acks", "1", NULL};
    rd_kafka_t *producer = rk_producer_new(broker_bootstrap(&c.nodes[survivor - 1]), conf);
    assert_true(rk_wait_topic(producer, "el", PARTS, 10000));
    for (int p = 0; p < PARTS; p++)
        assert_int_equal(rk_produce_blocking(producer, "el", p, NULL, 0, "after", 5, 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_flush(producer, 15000);
    assert_int_equal(rk_producer_stats(producer)->failed, 0);
    assert_int_equal(rk_producer_stats(producer)->delivered, PARTS);
    rk_producer_destroy(producer);

    /* ElectLeaders while the victim is down. */
    char vp_name[16], fp_name[16];
    int fp = (vp + 1) % PARTS; /* led by its first replica, still live */
    assert_int_not_equal(before.p[fp].leader, victim);
    snprintf(vp_name, sizeof vp_name, "el:%d", vp);
    snprintf(fp_name, sizeof fp_name, "el:%d", fp);
    const char *named[] = {vp_name, fp_name, "solo:0", "el:99", "nope:0"};
    struct el_result er = elect_leaders(&c, controller, -1, 0, named, 5);
    assert_int_equal(er.error, KAFKA_ERR_NONE);
    assert_int_equal(er.n, 5);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    assert_int_equal(el_error(&er, "el", fp), KAFKA_ERR_ELECTION_NOT_NEEDED);
    assert_int_equal(el_error(&er, "solo", 0), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    assert_int_equal(el_error(&er, "el", 99), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(el_error(&er, "nope", 0), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    /* UNCLEAN: a partition with a leader needs none; solo's only replica is down. */
    er = elect_leaders(&c, controller, 1, 1, named, 3);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_ELECTION_NOT_NEEDED);
    assert_int_equal(el_error(&er, "solo", 0), KAFKA_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE);
    /* No topics: every partition, without those needing no election. */
    er = elect_leaders(&c, controller, 2, 0, NULL, 0);
    assert_int_equal(er.error, KAFKA_ERR_NONE);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    assert_int_equal(el_error(&er, "solo", 0), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    assert_int_equal(el_error(&er, "el", fp), -1);
    /* Away from the active controller: NOT_CONTROLLER, on each partition at v0. */
    int survivor_other = 6 - controller - victim;
    er = elect_leaders(&c, survivor_other, 2, 0, named, 2);
    assert_int_equal(er.error, KAFKA_ERR_NOT_CONTROLLER);
    er = elect_leaders(&c, survivor_other, 0, 0, named, 2);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_NOT_CONTROLLER);

    /* AlterPartition at the controller listener, for a partition the
     * victim followed: its leader L, at leader epoch le and partition
     * epoch 1 (created at 0, one ISR shrink since). */
    struct view moved;
    assert_true(metadata(&c, controller, "el", &moved));
    int part = -1;
    for (int p = 0; p < PARTS && part < 0; p++)
        if (before.p[p].leader != victim)
            part = p;
    assert_true(part >= 0);
    const struct partition_view *mp = &moved.p[part];
    int32_t leader = mp->leader, le = mp->leader_epoch;
    int32_t other = 6 - leader - victim; /* the third broker */
    int64_t leader_epoch_b = registered_epoch(&c, leader);
    int64_t other_epoch_b = registered_epoch(&c, other);
    int ctrl_port = c.controller_ports[controller - 1];
    int32_t isr[N];
    int64_t isr_epochs[N];
    int n = 0;
    for (int i = 0; i < mp->isr_count; i++) {
        isr[n] = mp->isr[i];
        isr_epochs[n++] = mp->isr[i] == leader ? leader_epoch_b : other_epoch_b;
    }
    assert_int_equal(n, 2);
    int16_t lo = -1, hi = -1;
    assert_true(advertises_alter_partition(ctrl_port, &lo, &hi));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 3);
    assert_false(advertises_alter_partition(broker_port(&c.nodes[controller - 1]), &lo, &hi));
    const uint8_t *tid = moved.topic_id;
    uint8_t unknown_id[16] = {1, 2, 3};
    struct ap_result r;
    /* The current ISR, unchanged: the partition as it is. */
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le, 1, isr, isr_epochs, n);
    assert_int_equal(r.error, KAFKA_ERR_NONE);
    assert_int_equal(r.partition_error, KAFKA_ERR_NONE);
    assert_int_equal(r.leader, leader);
    assert_int_equal(r.leader_epoch, le);
    assert_int_equal(r.partition_epoch, 1);
    assert_int_equal(r.isr_count, 2);
    /* Request-level errors. */
    int not_ctrl = controller == other ? leader : other;
    r = alter_partition(c.controller_ports[not_ctrl - 1], 3, leader, leader_epoch_b, NULL, tid, part, le, 1, isr,
                        isr_epochs, n);
    assert_int_equal(r.error, KAFKA_ERR_NOT_CONTROLLER);
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b + 1000, NULL, tid, part, le, 1, isr, isr_epochs, n);
    assert_int_equal(r.error, KAFKA_ERR_STALE_BROKER_EPOCH);
    /* Partition-level errors, in Kafka's order of checks. */
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, unknown_id, part, le, 1, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_UNKNOWN_TOPIC_ID);
    r = alter_partition(ctrl_port, 0, leader, leader_epoch_b, "nope", NULL, part, le, 1, isr, NULL, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, 99, le, 1, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le + 1, 1, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_NOT_CONTROLLER);
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le - 1, 1, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_FENCED_LEADER_EPOCH);
    r = alter_partition(ctrl_port, 3, other, other_epoch_b, NULL, tid, part, le, 1, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_INVALID_REQUEST); /* not the leader */
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le, 0, isr, isr_epochs, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_INVALID_UPDATE_VERSION);
    int32_t without_leader[1] = {other};
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le, 1, without_leader,
                        (int64_t[]){other_epoch_b}, 1);
    assert_int_equal(r.partition_error, KAFKA_ERR_INVALID_REQUEST);
    /* The fenced victim is ineligible: INELIGIBLE_REPLICA from version 2,
     * OPERATION_NOT_ATTEMPTED before. */
    int32_t grown[N] = {isr[0], isr[1], victim};
    r = alter_partition(ctrl_port, 2, leader, leader_epoch_b, NULL, tid, part, le, 1, grown, NULL, 3);
    assert_int_equal(r.partition_error, KAFKA_ERR_INELIGIBLE_REPLICA);
    r = alter_partition(ctrl_port, 1, leader, leader_epoch_b, "el", NULL, part, le, 1, grown, NULL, 3);
    assert_int_equal(r.partition_error, KAFKA_ERR_OPERATION_NOT_ATTEMPTED);
    r = alter_partition(ctrl_port, 0, leader, leader_epoch_b, "el", NULL, part, le, 1, grown, NULL, 3);
    assert_int_equal(r.partition_error, KAFKA_ERR_OPERATION_NOT_ATTEMPTED);

    /* Restarted: unfenced (listed again), it catches up and each leader
     * brings it back into the ISR with its own AlterPartition; leaders and
     * leader epochs stay as they were. */
    broker_restart(&c.nodes[victim - 1]);
    for (int i = 0; i < N; i++)
        wait_rejoined(&c, i + 1, victim, &moved, -1, 30000);
    /* One change per partition since the shrink: partition epoch 2. The
     * current ISR, unchanged, answers the partition as it is. */
    int32_t full[N] = {isr[0], isr[1], victim};
    int64_t full_epochs[N] = {isr_epochs[0], isr_epochs[1], registered_epoch(&c, victim)};
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le, 2, full, full_epochs, 3);
    assert_int_equal(r.error, KAFKA_ERR_NONE);
    assert_int_equal(r.partition_error, KAFKA_ERR_NONE);
    assert_int_equal(r.leader, leader);
    assert_int_equal(r.leader_epoch, le);
    assert_int_equal(r.partition_epoch, 2);
    assert_int_equal(r.isr_count, 3);
    /* A member at another broker epoch is ineligible (version 3). */
    int32_t pair[2] = {leader, victim};
    int64_t pair_epochs[2] = {leader_epoch_b, registered_epoch(&c, victim) + 1000};
    r = alter_partition(ctrl_port, 3, leader, leader_epoch_b, NULL, tid, part, le, 2, pair, pair_epochs, 2);
    assert_int_equal(r.partition_error, KAFKA_ERR_INELIGIBLE_REPLICA);
    /* A shrink by name (version 0) at partition epoch 2 is written... */
    r = alter_partition(ctrl_port, 0, leader, leader_epoch_b, "el", NULL, part, le, 2, isr, NULL, n);
    assert_int_equal(r.partition_error, KAFKA_ERR_NONE);
    assert_int_equal(r.partition_epoch, 3);
    assert_int_equal(r.isr_count, 2);
    /* ...and the leader, its follower still fetching, grows it back. */
    for (int i = 0; i < N; i++)
        wait_rejoined(&c, i + 1, victim, &moved, part, 15000);

    /* Preferred election: the victim, back in the ISR of the partition it
     * preferred, leads it again at a higher leader epoch. */
    struct view now;
    assert_true(metadata(&c, controller, "el", &now));
    assert_true(in_isr(&now.p[vp], victim));
    er = elect_leaders(&c, controller, 0, 0, named, 1);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_NONE);
    for (int i = 0; i < N; i++) {
        long long until = harness_now_ms() + 10000;
        struct view v;
        while (!(metadata(&c, i + 1, "el", &v) && v.p[vp].leader == victim))
            if (harness_now_ms() > until)
                fail_msg("node %d: broker %d does not lead el-%d", i + 1, victim, vp);
            else
                usleep(100 * 1000);
        assert_true(v.p[vp].leader_epoch > now.p[vp].leader_epoch);
    }
    er = elect_leaders(&c, controller, 2, 0, named, 1);
    assert_int_equal(el_error(&er, "el", vp), KAFKA_ERR_ELECTION_NOT_NEEDED);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fenced_leader_replaced_from_isr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
