/* Unclean recovery from LastKnownElr (KIP-966) with real processes: one
 * process.roles=controller node (id 1, eligible.leader.replicas.enable,
 * unclean.leader.election.enable false) and three brokers P, X, Y (ids 2,
 * 3, 4). Topic "lke" is placed on [P, X, Y] with min.insync.replicas=2:
 *  - P is killed -9 and fenced: X leads with ISR {X, Y}, and more records
 *    are acknowledged that P never gets;
 *  - Y is paused until the ISR is {X} (Y in the ELR), then X and Y are
 *    killed -9: the ISR is empty, the ELR {X, Y}; P comes back (in no list);
 *  - X and Y restart: neither proves a clean shutdown, so each moves from
 *    the ELR to LastKnownElr. ISR and ELR are empty, the partition offline
 *    with all three live (no clean leader, unclean election off);
 *  - an UNCLEAN ElectLeaders elects X, the first LastKnownElr member in
 *    replica order, not P, which comes first in replica order but lacks
 *    the later records; a consumer reads every acknowledged record from X.
 * Before, the unclean election took the first live replica: P. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "dtp_view.h"
#include "rk_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define CLUSTER_ID "RWxyVW5jbGVhblJlY292cg"
#define NB 3 /* brokers, ids 2..4 */
#define P 2
#define X 3
#define Y 4
#define FIRST 20  /* acknowledged on [P, X, Y] */
#define SECOND 20 /* acknowledged on {X, Y}, after P is gone */

struct lke_cluster {
    struct test_broker controller;
    struct test_broker brokers[NB]; /* id i + 2 */
    struct net_client *client;      /* the brokers, by id */
};

static struct test_broker *broker(struct lke_cluster *c, int32_t id)
{
    return &c->brokers[id - 2];
}

static void lke_start(struct lke_cluster *c)
{
    memset(c, 0, sizeof *c);
    int cport = 0;
    char voters_kv[128];
    cluster_pick_voters(1, &cport, voters_kv, sizeof voters_kv);
    char listeners[96];
    snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", cport);
    const char *controller[] = {listeners,
                                "node.id=1",
                                voters_kv,
                                "process.roles=controller",
                                "controller.listener.names=CONTROLLER",
                                "cluster.id=" CLUSTER_ID,
                                "broker.session.timeout.ms=6000",
                                "eligible.leader.replicas.enable=true",
                                "unclean.leader.election.enable=false",
                                NULL};
    broker_spawn_on_port(&c->controller, cport, controller);
    c->client = test_client_new();
    for (int i = 0; i < NB; i++) {
        int port;
        do {
            port = harness_free_port();
        } while (port == cport);
        char node_id[32];
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 2);
        const char *overrides[] = {node_id,
                                   voters_kv,
                                   "process.roles=broker",
                                   "controller.listener.names=CONTROLLER",
                                   "cluster.id=" CLUSTER_ID,
                                   "broker.heartbeat.interval.ms=500",
                                   "replica.lag.time.max.ms=2000",
                                   "replica.high.watermark.checkpoint.interval.ms=200",
                                   "offsets.topic.num.partitions=1",
                                   "transaction.state.log.num.partitions=1",
                                   NULL};
        broker_spawn_on_port(&c->brokers[i], port, overrides);
    }
    broker_wait_ready(&c->controller);
    for (int i = 0; i < NB; i++) {
        broker_wait_ready(&c->brokers[i]);
        assert_int_equal(net_client_add_node(c->client, i + 2, "127.0.0.1", broker_port(&c->brokers[i])), 0);
    }
}

static void lke_stop(struct lke_cluster *c)
{
    net_client_destroy(c->client);
    for (int i = 0; i <= NB; i++) {
        struct test_broker *b = i < NB ? &c->brokers[i] : &c->controller;
        if (b->pid > 0)
            broker_stop(b);
        broker_mark_passed(b);
        broker_cleanup(b);
    }
}

/* CreateTopics of "lke" on [P, X, Y], min.insync.replicas=2, through P,
 * again until every broker is registered. */
static void create_lke_topic(struct lke_cluster *c)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(broker(c, P)), NULL);
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        char errstr[256] = "";
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new("lke", 1, -1, errstr, sizeof errstr);
        assert_non_null(nt);
        int32_t replicas[] = {P, X, Y};
        assert_int_equal(rd_kafka_NewTopic_set_replica_assignment(nt, 0, replicas, 3, errstr, sizeof errstr),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", "2"), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, 30000);
        size_t n = 0;
        const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
            rd_kafka_event_CreateTopics_result(ev), &n);
        rd_kafka_resp_err_t err = rd_kafka_event_error(ev)
                                      ? rd_kafka_event_error(ev)
                                      : (n == 1 ? rd_kafka_topic_result_error(res[0]) : RD_KAFKA_RESP_ERR__FAIL);
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics lke on [%d,%d,%d]: %s", P, X, Y, rd_kafka_err2name(err));
        usleep(300 * 1000);
    }
    rk_producer_destroy(rk);
}

/* Waits until node sees lke-0 led by leader (-1: none) with isr_count
 * in-sync replicas and none of the brokers in gone listed. */
static void wait_state(struct lke_cluster *c, int32_t node, int32_t leader, int isr_count, unsigned gone)
{
    long long deadline = harness_now_ms() + 90000;
    struct view v = {0};
    for (;;) {
        bool ok = client_metadata(c->client, node, "lke", &v);
        if (ok && v.partitions > 0 && v.p[0].leader == leader && v.p[0].isr_count == isr_count && !(v.brokers & gone))
            return;
        if (harness_now_ms() > deadline)
            fail_msg("lke-0 at node %d: leader %d with %d in sync (want %d with %d), brokers 0x%x (gone 0x%x)",
                     (int)node, ok && v.partitions > 0 ? (int)v.p[0].leader : -9,
                     ok && v.partitions > 0 ? v.p[0].isr_count : -1, (int)leader, isr_count, v.brokers, gone);
        usleep(200 * 1000);
    }
}

static bool holds(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Waits until DescribeTopicPartitions at node shows lke-0 without leader,
 * ISR or ELR, and LastKnownElr {X, Y}. */
static void wait_only_last_known(struct lke_cluster *c, int32_t node)
{
    const char *topics[] = {"lke", NULL};
    long long deadline = harness_now_ms() + 90000;
    for (;;) {
        struct dtp_view v;
        if (describe_topic_partitions(c->client, node, topics, 2000, NULL, 0, &v) && v.topic_count == 1 &&
            v.topics[0].partition_count == 1) {
            const struct dtp_partition *p = &v.topics[0].p[0];
            if (p->leader == -1 && p->isr_count == 0 && p->elr_count == 0 && p->last_known_elr_count == 2 &&
                holds(p->last_known_elr, 2, X) && holds(p->last_known_elr, 2, Y))
                return;
        }
        if (harness_now_ms() > deadline)
            fail_msg("lke-0 never had empty ISR and ELR with LastKnownElr {%d,%d}", X, Y);
        usleep(200 * 1000);
    }
}

/* The high watermark b's replication-offset-checkpoint holds for lke-0, -1
 * when the file or the line is missing. */
static long long checkpointed(const struct test_broker *b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/replication-offset-checkpoint", b->data_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    long long found = -1;
    while (fgets(line, sizeof line, f)) {
        char name[256];
        int partition;
        long long offset;
        if (sscanf(line, "%255s %d %lld", name, &partition, &offset) == 3 && strcmp(name, "lke") == 0 && partition == 0)
            found = offset;
    }
    fclose(f);
    return found;
}

static void el_parse(const struct net_client_result *result, void *arg)
{
    int16_t *code = arg;
    const struct elect_leaders_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    *code = m->error_code;
    if (*code == KAFKA_ERR_NONE && m->replica_election_results_count == 1 &&
        m->replica_election_results[0].partition_result_count == 1)
        *code = m->replica_election_results[0].partition_result[0].error_code;
}

/* ElectLeaders v2 UNCLEAN of lke-0 through node; the partition's error. */
static int16_t elect_unclean(struct lke_cluster *c, int32_t node)
{
    int32_t partition = 0;
    struct elect_leaders_request_topic_partitions tp;
    elect_leaders_request_topic_partitions_init(&tp);
    tp.topic = kafka_str_from_cstr("lke");
    tp.partitions = &partition;
    tp.partitions_count = 1;
    struct elect_leaders_request req;
    elect_leaders_request_init(&req);
    req.election_type = 1; /* UNCLEAN */
    req.topic_partitions = &tp;
    req.topic_partitions_count = 1;
    req.timeout_ms = 10000;
    int16_t code = -1;
    assert_int_equal(client_call(c->client, node, 43, 2, &req, 20000, el_parse, &code), NET_CLIENT_OK);
    return code;
}

static void test_unclean_election_takes_last_known_elr(void **state)
{
    (void)state;
    struct lke_cluster c;
    lke_start(&c);
    create_lke_topic(&c);
    wait_state(&c, X, P, 3, 0);
    produce_acked(broker_bootstrap(broker(&c, P)), "lke", 1, FIRST);

    broker_kill9(broker(&c, P));
    wait_state(&c, X, X, 2, 1u << P); /* ISR {X, Y}: at the minimum, no ELR */
    produce_acked(broker_bootstrap(broker(&c, X)), "lke", 1, SECOND);

    assert_int_equal(kill(broker(&c, Y)->pid, SIGSTOP), 0);
    wait_state(&c, X, X, 1, 1u << P); /* ISR {X}: Y in the ELR */
    /* X restarts with the high watermark it checkpointed, and as a leader
     * below the minimum holds it there: have it cover every record. */
    long long deadline = harness_now_ms() + 60000;
    while (checkpointed(broker(&c, X)) < FIRST + SECOND) {
        if (harness_now_ms() > deadline)
            fail_msg("broker %d did not checkpoint the high watermark %d", X, FIRST + SECOND);
        usleep(100 * 1000);
    }
    broker_kill9(broker(&c, Y));
    broker_kill9(broker(&c, X));
    broker_restart(broker(&c, P));
    wait_state(&c, P, -1, 0, (1u << X) | (1u << Y));

    broker_restart(broker(&c, X));
    broker_restart(broker(&c, Y));
    wait_only_last_known(&c, P);
    /* All three live, no clean leader, unclean election off: offline. */
    wait_state(&c, P, -1, 0, 0);

    int16_t code = elect_unclean(&c, P);
    if (code != KAFKA_ERR_NONE)
        fail_msg("UNCLEAN ElectLeaders of lke-0: error %d", (int)code);
    deadline = harness_now_ms() + 60000;
    for (;;) {
        struct view v;
        if (client_metadata(c.client, P, "lke", &v) && v.partitions > 0 && v.p[0].leader >= 0) {
            if (v.p[0].leader != X)
                fail_msg("the unclean election chose %d, not the LastKnownElr member %d", (int)v.p[0].leader, X);
            break;
        }
        if (harness_now_ms() > deadline)
            fail_msg("lke-0 got no leader from the UNCLEAN ElectLeaders");
        usleep(200 * 1000);
    }
    long want[1] = {FIRST + SECOND};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(broker(&c, X)), "lke", 1, want, 60000, &set), FIRST + SECOND);
    rk_record_set_free(&set);
    lke_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unclean_election_takes_last_known_elr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
