/* A broker that knows the metadata quorum only through
 * controller.quorum.bootstrap.servers (KIP-853's first step). Three
 * process.roles=controller nodes run on static controller.quorum.voters;
 * one process.roles=broker node gets no voters, only a bootstrap list
 * whose first entry is a port nothing listens on. It asks the bootstrap
 * servers who leads, learns the leader's endpoint from the NodeEndpoints
 * of their Fetch answers, fetches __cluster_metadata from the leader,
 * registers with it (its log names the endpoint it learned), lists itself
 * in Metadata, and creates a topic through it (forwarded to the leader)
 * that takes records from an idempotent producer (producer ids from the
 * leader) and gives them back. Then kill -9 of the leader: the broker goes
 * back to its bootstrap list, follows the new leader (its log says so)
 * and creates another topic through it, which works as well. Restarted
 * (SIGTERM, then on its data), it finds the leader through the list again
 * and creates a third topic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "raft/raft_codec.h"

#define NC 3        /* controllers, node ids 1..3 */
#define BROKER_ID 4 /* the one broker */
#define CLUSTER_ID "UXVvcnVtQm9vdHN0cmFwMQ"
#define RECORDS 20

struct bootstrap_cluster {
    struct test_broker controllers[NC];
    struct test_broker broker;
    struct net_client *client; /* node ids 1..3: controller listeners; 4: the broker */
    int cports[NC];
};

static bool port_taken(const struct bootstrap_cluster *c, int port)
{
    for (int i = 0; i < NC; i++)
        if (c->cports[i] == port)
            return true;
    return false;
}

static void bootstrap_start(struct bootstrap_cluster *c)
{
    memset(c, 0, sizeof *c);
    char voters_kv[300];
    cluster_spawn_controllers(c->controllers, NC, c->cports, CLUSTER_ID, 300, 1000, voters_kv, sizeof voters_kv);
    int port, dead_port;
    do {
        port = harness_free_port();
    } while (port_taken(c, port));
    /* Nothing listens there: the broker must get past it. */
    do {
        dead_port = harness_free_port();
    } while (port_taken(c, dead_port) || dead_port == port);
    char bootstrap_kv[300], node_id[32];
    snprintf(bootstrap_kv, sizeof bootstrap_kv,
             "controller.quorum.bootstrap.servers=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", dead_port,
             c->cports[0], c->cports[1], c->cports[2]);
    snprintf(node_id, sizeof node_id, "node.id=%d", BROKER_ID);
    const char *overrides[] = {node_id,
                               bootstrap_kv,
                               "process.roles=broker",
                               "controller.listener.names=CONTROLLER",
                               "cluster.id=" CLUSTER_ID,
                               "controller.quorum.election.timeout.ms=300",
                               "broker.heartbeat.interval.ms=500",
                               "offsets.topic.num.partitions=1",
                               "transaction.state.log.num.partitions=1",
                               NULL};
    broker_spawn_on_port(&c->broker, port, overrides);
    for (int i = 0; i < NC; i++)
        broker_wait_ready(&c->controllers[i]);
    broker_wait_ready(&c->broker);
    c->client = test_client_new();
    for (int i = 0; i < NC; i++)
        assert_int_equal(net_client_add_node(c->client, i + 1, "127.0.0.1", c->cports[i]), 0);
    assert_int_equal(net_client_add_node(c->client, BROKER_ID, "127.0.0.1", port), 0);
}

static void bootstrap_stop(struct bootstrap_cluster *c)
{
    net_client_destroy(c->client);
    struct test_broker *all[NC + 1] = {&c->broker, &c->controllers[0], &c->controllers[1], &c->controllers[2]};
    for (int i = 0; i < NC + 1; i++) {
        if (all[i]->pid > 0)
            broker_stop(all[i]);
        broker_mark_passed(all[i]);
        broker_cleanup(all[i]);
    }
}

/* The leader a live controller other than `dead` names, with its epoch,
 * once one names a leader other than `dead`. */
static int32_t quorum_leader(struct bootstrap_cluster *c, int32_t dead, int32_t *epoch, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        for (int i = 1; i <= NC; i++) {
            struct raft_quorum_view v;
            if (i != dead && client_describe_quorum(c->client, i, 3000, &v) == 0 && v.error_code == 0 &&
                v.leader_id >= 1 && v.leader_id != dead) {
                *epoch = v.leader_epoch;
                return v.leader_id;
            }
        }
        if (harness_now_ms() > deadline)
            fail_msg("no quorum leader within %d ms", timeout_ms);
        usleep(50 * 1000);
    }
}

/* Creates topic through rk's broker, again after each failure (no leader
 * yet, or the broker still finding it), until it succeeds or
 * timeout_ms passes; then the broker lists it. */
static void create_through_broker(struct bootstrap_cluster *c, rd_kafka_t *rk, const char *topic, int timeout_ms)
{
    char errstr[256];
    rd_kafka_resp_err_t err;
    long long deadline = harness_now_ms() + timeout_ms;
    while ((err = rk_create_topic_result(rk, topic, 1, 1, NULL, false, errstr, sizeof errstr)) !=
               RD_KAFKA_RESP_ERR_NO_ERROR &&
           harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics %s through the broker: %s (%s)", topic, rd_kafka_err2str(err), errstr);
    client_wait_view(c->client, BROKER_ID, 1u << BROKER_ID, topic, 1, 15000);
    assert_true(rk_wait_topic(rk, topic, 1, 15000));
}

/* RECORDS records through the broker (idempotent, acks=all), read back. */
static void produce_and_consume(struct bootstrap_cluster *c, const char *topic)
{
    produce_acked(broker_bootstrap(&c->broker), topic, 1, RECORDS);
    const long want[] = {RECORDS};
    struct rk_record_set set = {0};
    long got = rk_consume_all(broker_bootstrap(&c->broker), topic, 1, want, 30000, &set);
    assert_int_equal(got, RECORDS);
    rk_record_set_free(&set);
}

static void test_broker_joins_and_follows_through_bootstrap_servers(void **state)
{
    (void)state;
    struct bootstrap_cluster c;
    bootstrap_start(&c);
    /* Registered with the leader it found, and serving Metadata. */
    client_wait_view(c.client, BROKER_ID, 1u << BROKER_ID, NULL, 0, 30000);
    int32_t epoch = -1;
    int32_t leader = quorum_leader(&c, -1, &epoch, 15000);
    char line[160];
    snprintf(line, sizeof line, "the quorum names controller %d at 127.0.0.1:%d", leader, c.cports[leader - 1]);
    broker_wait_log(&c.broker, line, 15000);

    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c.broker), NULL);
    create_through_broker(&c, rk, "joined", 30000);
    produce_and_consume(&c, "joined");

    /* The leader dies: back to the bootstrap list, then the new leader. */
    long long killed_at = harness_now_ms();
    broker_kill9(&c.controllers[leader - 1]);
    create_through_broker(&c, rk, "followed", 60000);
    int32_t new_epoch = -1;
    int32_t next = quorum_leader(&c, leader, &new_epoch, 15000);
    fprintf(stderr,
            "[test] controller %d killed; controller %d leads epoch %d; created through the broker after %lld ms\n",
            leader, next, new_epoch, harness_now_ms() - killed_at);
    assert_true(new_epoch > epoch);
    snprintf(line, sizeof line, "node %d is follower in epoch %d (leader %d)", BROKER_ID, new_epoch, next);
    broker_wait_log(&c.broker, line, 15000);
    snprintf(line, sizeof line, "the quorum names controller %d at 127.0.0.1:%d", next, c.cports[next - 1]);
    broker_wait_log(&c.broker, line, 15000);
    produce_and_consume(&c, "followed");
    rk_producer_destroy(rk);

    /* Restarted, the broker's quorum state names a leader whose address
     * it has not learned in this process: it asks the bootstrap list
     * again (two of its four addresses are dead now) and registers. */
    broker_stop(&c.broker);
    broker_restart(&c.broker);
    client_wait_view(c.client, BROKER_ID, 1u << BROKER_ID, "followed", 1, 30000);
    rk = rk_producer_new(broker_bootstrap(&c.broker), NULL);
    create_through_broker(&c, rk, "restarted", 60000);
    rk_producer_destroy(rk);
    bootstrap_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_joins_and_follows_through_bootstrap_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
