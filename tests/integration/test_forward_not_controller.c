/* A controller that is not the active one refuses a forwarded request at
 * the Envelope level, as Kafka's does: three controllers elect a leader;
 * an Envelope carrying a CreateTopics sent straight to a follower is
 * answered with the EnvelopeResponse's ErrorCode NOT_CONTROLLER and no
 * inner response (the forwarding broker then sends it again to the new
 * leader rather than hand the client an error), while the same Envelope
 * at the leader is run (ErrorCode NONE, the inner CreateTopics response
 * returned). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "raw_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "raft/raft_codec.h"

#define NC 3 /* controllers, node ids 1..3 */
#define CLUSTER_ID "Rm9yd2FyZE5vdENvbnRybA"

struct controllers {
    struct test_broker nodes[NC];
    struct net_client *client;
    int cports[NC];
};

static void controllers_start(struct controllers *c)
{
    memset(c, 0, sizeof *c);
    char voters_kv[300];
    cluster_spawn_controllers(c->nodes, NC, c->cports, CLUSTER_ID, 1000, 2000, voters_kv, sizeof voters_kv);
    for (int i = 0; i < NC; i++)
        broker_wait_ready(&c->nodes[i]);
    c->client = test_client_new();
    for (int i = 0; i < NC; i++)
        assert_int_equal(net_client_add_node(c->client, i + 1, "127.0.0.1", c->cports[i]), 0);
}

static void controllers_stop(struct controllers *c)
{
    net_client_destroy(c->client);
    for (int i = 0; i < NC; i++) {
        broker_stop(&c->nodes[i]);
        broker_mark_passed(&c->nodes[i]);
        broker_cleanup(&c->nodes[i]);
    }
}

/* The quorum's leader as every controller sees it: the id, once all three
 * name the same one. */
static int32_t agreed_leader(struct controllers *c, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        int32_t leader = -1;
        bool agreed = true;
        for (int i = 1; i <= NC && agreed; i++) {
            struct raft_quorum_view v;
            agreed = client_describe_quorum(c->client, i, 3000, &v) == 0 && v.error_code == 0 && v.leader_id >= 1 &&
                     (leader < 0 || v.leader_id == leader);
            if (agreed)
                leader = v.leader_id;
        }
        if (agreed)
            return leader;
        if (harness_now_ms() > deadline)
            fail_msg("the controllers agreed on no leader within %d ms", timeout_ms);
        usleep(100 * 1000);
    }
}

struct envelope_answer {
    int16_t error;
    uint64_t response_len; /* compact nullable bytes: 0 for null, else length + 1 */
};

/* An Envelope sent straight to the controller listener at cport, carrying a
 * CreateTopics of topic as User:admin. */
static struct envelope_answer raw_envelope_create(int cport, const char *topic)
{
    struct envelope_answer a;
    a.error = raw_envelope_create_topic(cport, topic, "forwarder", &a.response_len);
    return a;
}

static void test_follower_refuses_envelope(void **state)
{
    (void)state;
    struct controllers c;
    controllers_start(&c);
    /* Leadership may move under a loaded machine: an answer counts only
     * when the same leader led before and after it. */
    long long deadline = harness_now_ms() + 60000;
    bool follower_checked = false, leader_checked = false;
    while (!(follower_checked && leader_checked)) {
        if (harness_now_ms() > deadline)
            fail_msg("no stable leader long enough to send both Envelopes");
        int32_t leader = agreed_leader(&c, 30000);
        int32_t follower = leader % NC + 1;
        struct envelope_answer at_follower = raw_envelope_create(c.cports[follower - 1], "refused");
        struct envelope_answer at_leader = raw_envelope_create(c.cports[leader - 1], "accepted");
        if (agreed_leader(&c, 30000) != leader)
            continue;
        assert_int_equal(at_follower.error, KAFKA_ERR_NOT_CONTROLLER);
        assert_int_equal(at_follower.response_len, 0); /* no inner response: the request was not run */
        follower_checked = true;
        assert_int_equal(at_leader.error, KAFKA_ERR_NONE);
        assert_true(at_leader.response_len > 1);
        leader_checked = true;
    }
    controllers_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_refuses_envelope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
