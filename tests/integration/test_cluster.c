/* Three process.roles=broker,controller cairnd nodes with
 * controller.quorum.voters: the metadata controller and loader run on the
 * quorum. Each broker registers with the active controller
 * (BrokerRegistration, BrokerHeartbeat) and every node's Metadata lists the
 * three with the quorum leader as controller; CreateTopics at a node that
 * does not lead answers NOT_CONTROLLER, at the leader it commits through
 * Raft and every node's loader applies it, with partition leaders spread
 * over the brokers. kill -9 of the leader: a new leader, the committed
 * topics still there, new ones creatable, and the dead broker fenced after
 * broker.session.timeout.ms; restarted, it is unfenced again; a broker
 * stopped cleanly is fenced at once (controlled shutdown). Every broker
 * hands out producer ids from blocks the controller allocated. librdkafka
 * (idempotent) bootstrapped on one broker produces to and consumes from
 * every partition of a topic led by all three. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define N 3
#define CLUSTER_ID "Q2x1c3RlclRlc3RDbHVzdA"
#define SESSION_TIMEOUT_MS 3000

struct cluster {
    struct test_broker nodes[N];
    int controller_ports[N];
    struct net_client *client;
};

/* What one Metadata answer says. */
struct view {
    int32_t controller_id;
    int broker_count;
    int32_t brokers[8];
    int broker_ports[8];
    char rack[32]; /* of broker 1 */
    int partitions;   /* of the topic asked about, -1 when absent */
    int32_t leaders[16];
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
    if (result->status == NET_CLIENT_OK && m) {
        s->view.controller_id = m->controller_id;
        s->view.partitions = -1;
        for (int32_t i = 0; i < m->brokers_count && i < 8; i++) {
            s->view.brokers[s->view.broker_count] = m->brokers[i].node_id;
            s->view.broker_ports[s->view.broker_count++] = m->brokers[i].port;
            if (m->brokers[i].node_id == 1 && m->brokers[i].rack.len > 0)
                snprintf(s->view.rack, sizeof s->view.rack, "%.*s", (int)m->brokers[i].rack.len,
                         m->brokers[i].rack.data);
        }
        for (int32_t i = 0; i < m->topics_count; i++) {
            const struct metadata_response_metadata_response_topic *t = &m->topics[i];
            if (t->error_code != 0 || (size_t)t->name.len != strlen(s->topic) ||
                memcmp(t->name.data, s->topic, (size_t)t->name.len) != 0)
                continue;
            s->view.partitions = t->partitions_count;
            for (int32_t p = 0; p < t->partitions_count && p < 16; p++)
                s->view.leaders[t->partitions[p].partition_index % 16] = t->partitions[p].leader_id;
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

static void init_pid_done(struct net_client_result *result, void *ctx)
{
    struct call_slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->status = result->status;
    const struct init_producer_id_response *m = result->response;
    s->error = -1;
    if (result->status == NET_CLIENT_OK && m) {
        s->error = m->error_code;
        s->view.controller_id = (int32_t)m->producer_id; /* ids stay small in a test */
    }
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void call(struct cluster *c, int node, int16_t api_key, const void *body, net_client_done_fn done,
                 struct call_slot *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    struct net_client_request req = {
        .node_id = node, .api_key = api_key, .pinned_version = -1, .body = body, .timeout_ms = 5000, .done = done, .ctx = s};
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

/* Metadata of every topic from node; false when the node did not answer. */
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

static int16_t create_topic(struct cluster *c, int node, const char *name, int partitions)
{
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = partitions;
    t.replication_factor = 1;
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = &t;
    req.topics_count = 1;
    req.timeout_ms = 10000;
    struct call_slot s = {.error = -1};
    call(c, node, 19, &req, create_done, &s);
    return s.status == NET_CLIENT_OK ? s.error : -1;
}

/* InitProducerId (idempotent, no transactional id) at node; the id or -1. */
static int32_t init_producer_id(struct cluster *c, int node)
{
    struct init_producer_id_request req;
    init_producer_id_request_init(&req);
    req.transactional_id = (struct kafka_str){NULL, -1};
    req.transaction_timeout_ms = 60000;
    req.producer_id = -1;
    req.producer_epoch = -1;
    struct call_slot s = {.error = -1};
    call(c, node, 22, &req, init_pid_done, &s);
    return s.status == NET_CLIENT_OK && s.error == 0 ? s.view.controller_id : -1;
}

static bool lists_broker(const struct view *v, int32_t id)
{
    for (int i = 0; i < v->broker_count; i++)
        if (v->brokers[i] == id)
            return true;
    return false;
}

/* Waits until node's Metadata lists exactly the brokers in want (a bit
 * set over ids 1..N) and, when topic is set, `partitions` of it. */
static struct view wait_view(struct cluster *c, int node, unsigned want, const char *topic, int partitions,
                             int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct view v;
    for (;;) {
        bool ok = metadata(c, node, topic ? topic : "", &v);
        unsigned got = 0;
        for (int i = 0; ok && i < v.broker_count; i++)
            got |= 1u << v.brokers[i];
        if (ok && got == want && (!topic || v.partitions == partitions))
            return v;
        if (harness_now_ms() > deadline)
            fail_msg("node %d: Metadata lists brokers 0x%x (want 0x%x), topic %s with %d partitions (want %d)",
                     node, got, want, topic ? topic : "-", ok ? v.partitions : -2, partitions);
        usleep(100 * 1000);
    }
}

#define ALL ((1u << 1) | (1u << 2) | (1u << 3))

static void cluster_start(struct cluster *c)
{
    memset(c, 0, sizeof *c);
    char voters[256] = "";
    for (int i = 0; i < N; i++) {
        c->controller_ports[i] = harness_free_port();
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1,
                 c->controller_ports[i]);
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
                                   "broker.session.timeout.ms=3000",
                                   i == 0 ? "broker.rack=rack-a" : "broker.rack=rack-b",
                                   "offsets.topic.num.partitions=3",
                                   "transaction.state.log.num.partitions=3",
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

/* The controller every live node names, once they agree. */
static int32_t agreed_controller(struct cluster *c, int32_t not_this, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        int32_t seen = -1;
        bool agree = true;
        for (int i = 0; i < N; i++) {
            struct view v;
            if (c->nodes[i].pid <= 0 || !metadata(c, i + 1, "", &v))
                continue;
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

static void test_topics_through_the_quorum(void **state)
{
    (void)state;
    struct cluster c;
    cluster_start(&c);
    /* Every node lists the three brokers with their advertised ports. */
    for (int i = 0; i < N; i++) {
        struct view v = wait_view(&c, i + 1, ALL, NULL, 0, 20000);
        for (int b = 0; b < v.broker_count; b++)
            assert_int_equal(v.broker_ports[b], broker_port(&c.nodes[v.brokers[b] - 1]));
        assert_string_equal(v.rack, "rack-a");
    }
    int32_t leader = agreed_controller(&c, -1, 10000);
    int other = leader % N + 1;
    /* Only the active controller writes the metadata log. */
    assert_int_equal(create_topic(&c, other, "refused", 1), KAFKA_ERR_NOT_CONTROLLER);
    assert_int_equal(create_topic(&c, leader, "spread", 6), KAFKA_ERR_NONE);
    for (int i = 0; i < N; i++) {
        struct view v = wait_view(&c, i + 1, ALL, "spread", 6, 10000);
        unsigned led = 0;
        for (int p = 0; p < 6; p++)
            led |= 1u << v.leaders[p];
        assert_int_equal(led, ALL); /* round-robin over the three brokers */
        struct view refused;
        assert_true(metadata(&c, i + 1, "refused", &refused));
        assert_int_equal(refused.partitions, -1);
    }

    /* Producer ids on every broker: the others get their blocks from the
     * controller (AllocateProducerIds), so no two brokers hand out one id. */
    int32_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = init_producer_id(&c, i + 1);
        assert_true(pids[i] >= 0);
    }
    assert_true(pids[0] != pids[1] && pids[1] != pids[2] && pids[0] != pids[2]);
    assert_int_equal(init_producer_id(&c, other), pids[other - 1] + 1);

    /* kill -9 of the leader: a new one, the topic kept, new topics made. */
    broker_kill9(&c.nodes[leader - 1]);
    int32_t next = agreed_controller(&c, leader, 15000);
    long long deadline = harness_now_ms() + 15000;
    int16_t rc;
    while ((rc = create_topic(&c, next, "after", 2)) != KAFKA_ERR_NONE && harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_int_equal(rc, KAFKA_ERR_NONE);
    unsigned survivors = ALL & ~(1u << leader);
    long long killed_at = harness_now_ms();
    for (int i = 0; i < N; i++) {
        if (i + 1 == leader)
            continue;
        wait_view(&c, i + 1, survivors, "after", 2, SESSION_TIMEOUT_MS + 10000);
        struct view v = wait_view(&c, i + 1, survivors, "spread", 6, 1000);
        assert_false(lists_broker(&v, leader));
    }
    fprintf(stderr, "[test] broker %d fenced within %lld ms of the new leader's first write\n", leader,
            harness_now_ms() - killed_at);
    /* Restarted, it loads the log, registers and is unfenced again. */
    broker_restart(&c.nodes[leader - 1]);
    for (int i = 0; i < N; i++) {
        wait_view(&c, i + 1, ALL, "spread", 6, 15000);
        wait_view(&c, i + 1, ALL, "after", 2, 5000);
    }
    /* A broker stopped cleanly asks to be fenced at once (controlled
     * shutdown): gone from Metadata well before its session would lapse. */
    int32_t now_leader = agreed_controller(&c, -1, 10000);
    int stopped = now_leader % N + 1;
    long long stop_at = harness_now_ms();
    broker_stop(&c.nodes[stopped - 1]);
    wait_view(&c, now_leader, ALL & ~(1u << stopped), NULL, 0, SESSION_TIMEOUT_MS - 1000);
    fprintf(stderr, "[test] broker %d fenced %lld ms after its stop began\n", stopped, harness_now_ms() - stop_at);
    assert_true(harness_now_ms() - stop_at < SESSION_TIMEOUT_MS - 1000);
    cluster_stop(&c);
}

/* librdkafka bootstrapped on one broker: every partition of a topic led by
 * all three brokers takes and gives back its records. */
static void test_librdkafka_over_the_cluster(void **state)
{
    (void)state;
    struct cluster c;
    cluster_start(&c);
    for (int i = 0; i < N; i++)
        wait_view(&c, i + 1, ALL, NULL, 0, 20000);
    int32_t leader = agreed_controller(&c, -1, 10000);
    assert_int_equal(create_topic(&c, leader, "rk", 6), KAFKA_ERR_NONE);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader % N]);
    const char *conf[] = {"enable.idempotence", "true", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    assert_true(rk_wait_topic(p, "rk", 6, 10000));
    for (int part = 0; part < 6; part++) {
        for (int m = 0; m < 5; m++) {
            char value[32];
            int n = snprintf(value, sizeof value, "p%d-m%d", part, m);
            assert_int_equal(rk_produce_blocking(p, "rk", part, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
        }
    }
    rd_kafka_flush(p, 10000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    assert_int_equal(stats->failed, 0);
    assert_int_equal(stats->delivered, 30);
    rk_producer_destroy(p);
    long want[6] = {5, 5, 5, 5, 5, 5};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(bootstrap, "rk", 6, want, 15000, &set), 30);
    for (size_t i = 0; i < set.count; i++) {
        char expect[32];
        snprintf(expect, sizeof expect, "p%d-m%lld", set.records[i].partition, (long long)set.records[i].offset);
        assert_int_equal(set.records[i].value_len, strlen(expect));
        assert_memory_equal(set.records[i].value, expect, strlen(expect));
    }
    rk_record_set_free(&set);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topics_through_the_quorum),
        cmocka_unit_test(test_librdkafka_over_the_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
