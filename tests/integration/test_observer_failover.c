/* A broker (a Raft observer of the controller quorum) learns a new quorum
 * leader after kill -9 of the old one without waiting out its own
 * controller.quorum.fetch.timeout.ms. Three process.roles=controller nodes
 * detect the dead leader with a 1 s fetch timeout and elect with a 300 ms
 * election timeout; the broker's fetch timeout is 30 s. Its fetches to the
 * dead leader fail on the refused connection, so it asks another voter,
 * which names the new leader once elected; a CreateTopics sent through the
 * broker right after the kill (forwarded to whichever controller the
 * broker knows) must succeed within 15 s of the kill, half the broker's
 * fetch timeout, and the broker's log must name the new leader. Before
 * that, the broker kept fetching from the dead leader for the whole 30 s. */
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
#define CLUSTER_ID "T2JzZXJ2ZXJGYWlsb3Zlcg"
#define BROKER_FETCH_TIMEOUT_MS 30000
#define LEARN_WITHIN_MS 15000 /* half the broker's fetch timeout */

struct failover_cluster {
    struct test_broker controllers[NC];
    struct test_broker broker;
    struct net_client *client; /* node ids 1..3: controller listeners */
    int cports[NC];
};

static void failover_start(struct failover_cluster *c)
{
    memset(c, 0, sizeof *c);
    char voters_kv[300];
    cluster_spawn_controllers(c->controllers, NC, c->cports, CLUSTER_ID, 300, 1000, voters_kv, sizeof voters_kv);
    int port;
    do {
        port = harness_free_port();
    } while (port == c->cports[0] || port == c->cports[1] || port == c->cports[2]);
    char node_id[32], fetch_timeout[64];
    snprintf(node_id, sizeof node_id, "node.id=%d", BROKER_ID);
    snprintf(fetch_timeout, sizeof fetch_timeout, "controller.quorum.fetch.timeout.ms=%d", BROKER_FETCH_TIMEOUT_MS);
    const char *overrides[] = {node_id,
                               voters_kv,
                               "process.roles=broker",
                               "controller.listener.names=CONTROLLER",
                               "cluster.id=" CLUSTER_ID,
                               "controller.quorum.election.timeout.ms=300",
                               fetch_timeout,
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

static void failover_stop(struct failover_cluster *c)
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
static int32_t quorum_leader(struct failover_cluster *c, int32_t dead, int32_t *epoch, int timeout_ms)
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

/* CreateTopics of topic through rk's broker, again after each failure,
 * until it succeeds or deadline_ms passes; its last error. */
static rd_kafka_resp_err_t create_until(rd_kafka_t *rk, const char *topic, long long deadline_ms, char *errstr,
                                        size_t errlen)
{
    rd_kafka_resp_err_t err;
    while ((err = rk_create_topic_result(rk, topic, 1, 1, NULL, false, errstr, errlen)) != RD_KAFKA_RESP_ERR_NO_ERROR &&
           harness_now_ms() < deadline_ms)
        usleep(100 * 1000);
    return err;
}

static void test_broker_learns_new_leader_before_its_fetch_timeout(void **state)
{
    (void)state;
    struct failover_cluster c;
    failover_start(&c);
    /* The broker registered, follows the leader and forwards. */
    client_wait_view(c.client, BROKER_ID, 1u << BROKER_ID, NULL, 0, 30000);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c.broker), NULL);
    char errstr[256];
    rd_kafka_resp_err_t err = create_until(rk, "before", harness_now_ms() + 30000, errstr, sizeof errstr);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics through the broker: %s (%s)", rd_kafka_err2str(err), errstr);
    client_wait_view(c.client, BROKER_ID, 1u << BROKER_ID, "before", 1, 15000);

    int32_t epoch = -1;
    int32_t leader = quorum_leader(&c, -1, &epoch, 15000);
    long long killed_at = harness_now_ms();
    broker_kill9(&c.controllers[leader - 1]);
    err = create_until(rk, "after", killed_at + LEARN_WITHIN_MS, errstr, sizeof errstr);
    long long created_ms = harness_now_ms() - killed_at;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics through the broker still failing %lld ms after kill -9 of leader %d (its fetch "
                 "timeout is %d ms): %s (%s)",
                 created_ms, leader, BROKER_FETCH_TIMEOUT_MS, rd_kafka_err2str(err), errstr);
    int32_t new_epoch = -1;
    int32_t next = quorum_leader(&c, leader, &new_epoch, 15000);
    fprintf(stderr,
            "[test] controller %d killed; controller %d leads epoch %d; created through the broker after %lld ms\n",
            leader, next, new_epoch, created_ms);
    assert_true(new_epoch > epoch);
    /* The broker's observer follows the new leader (the create could
     * reach it only through that). */
    char line[96];
    snprintf(line, sizeof line, "node %d is follower in epoch %d (leader %d)", BROKER_ID, new_epoch, next);
    assert_true(broker_log_contains(&c.broker, line));
    client_wait_view(c.client, BROKER_ID, 1u << BROKER_ID, "after", 1, 15000);
    rk_producer_destroy(rk);
    failover_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_broker_learns_new_leader_before_its_fetch_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
