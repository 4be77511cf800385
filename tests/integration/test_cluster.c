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

#include "cluster_harness.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define CLUSTER_ID "Q2x1c3RlclRlc3RDbHVzdA"
#define SESSION_TIMEOUT_MS 3000

/* The producer id of an InitProducerId answer without error; -1 else. */
static void init_pid_parse(const struct net_client_result *result, void *arg)
{
    const struct init_producer_id_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m && m->error_code == 0)
        *(int32_t *)arg = (int32_t)m->producer_id; /* ids stay small in a test */
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
    int32_t id = -1;
    return client_call(c->client, node, 22, -1, &req, 5000, init_pid_parse, &id) == NET_CLIENT_OK ? id : -1;
}

/* The size of b's log now: where a restart's lines begin. */
static long log_size(const struct test_broker *b)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return size < 0 ? 0 : size;
}

/* Whether b's log has needle on a line after byte from. */
static bool log_has_after(const struct test_broker *b, long from, const char *needle)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return false;
    fseek(f, from, SEEK_SET);
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static bool lists_broker(const struct view *v, int32_t id)
{
    for (int i = 0; i < v->broker_count; i++)
        if (v->broker_ids[i] == id)
            return true;
    return false;
}

static void cluster_up(struct cluster *c)
{
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 500,
                                .session_timeout_ms = SESSION_TIMEOUT_MS,
                                .internal_partitions = 3,
                                .node_setting = {"broker.rack=rack-a", "broker.rack=rack-b", "broker.rack=rack-b"}};
    cluster_start(c, &o);
}

static void test_topics_through_the_quorum(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    /* Every node lists the three brokers with their advertised ports. */
    for (int i = 0; i < N; i++) {
        struct view v = wait_view(&c, i + 1, ALL, NULL, 0, 20000);
        for (int b = 0; b < v.broker_count; b++)
            assert_int_equal(v.broker_ports[b], broker_port(&c.nodes[v.broker_ids[b] - 1]));
        assert_string_equal(v.rack, "rack-a");
    }
    int32_t leader = agreed_controller(&c, -1, 10000);
    int other = leader % N + 1;
    /* Only the active controller writes the metadata log. */
    assert_int_equal(create_topic(&c, other, "refused", 1), KAFKA_ERR_NOT_CONTROLLER);
    /* A topic it needs itself (auto-created by Metadata) it asks the
     * active controller for, as Kafka's brokers forward it. */
    client_metadata_auto_create(c.client, other, "auto-made", 10000);
    for (int i = 0; i < N; i++)
        wait_view(&c, i + 1, ALL, "auto-made", 1, 15000);
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
    /* Restarted after it was fenced, it opens its listener only once its
     * image has this incarnation unfenced: its first Metadata answer lists
     * itself (the image read from disk may still hold the previous
     * incarnation as unfenced, the fencing record not yet applied). */
    for (int round = 0; round < 2; round++) {
        if (round > 0) {
            broker_stop(&c.nodes[stopped - 1]);
            wait_view(&c, now_leader, ALL & ~(1u << stopped), NULL, 0, 10000);
        }
        broker_restart(&c.nodes[stopped - 1]);
        struct view first;
        assert_true(metadata(&c, stopped, NULL, &first));
        if (!lists_broker(&first, stopped))
            fail_msg("restarted broker %d left itself out of its first Metadata answer (round %d)", stopped, round);
    }
    /* The active controller's own broker is not fenced at its stop (its
     * quorum goes with it), so the next controller holds its registration
     * with a valid session: a new incarnation would be refused until that
     * lapses. Stopped cleanly, it sends the epoch it left
     * (PreviousBrokerEpoch) and is taken at once. */
    int32_t ctl = agreed_controller(&c, -1, 10000);
    broker_stop(&c.nodes[ctl - 1]);
    long from = log_size(&c.nodes[ctl - 1]);
    broker_restart(&c.nodes[ctl - 1]);
    if (!log_has_after(&c.nodes[ctl - 1], from, "stopped cleanly at broker epoch"))
        fail_msg("broker %d found no epoch from its clean stop", ctl);
    if (log_has_after(&c.nodes[ctl - 1], from, "registration refused"))
        fail_msg("broker %d, stopped cleanly, was refused registration", ctl);
    for (int i = 0; i < N; i++)
        wait_view(&c, i + 1, ALL, NULL, 0, 15000);
    cluster_stop(&c);
}

/* librdkafka bootstrapped on one broker: every partition of a topic led by
 * all three brokers takes and gives back its records. */
static void test_librdkafka_over_the_cluster(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
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
    expect_partition_offset_values(&set);
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
