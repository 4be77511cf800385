/* Three process.roles=controller nodes (the quorum) and three
 * process.roles=broker nodes that follow the metadata log as Raft
 * observers. Every broker registers with the active controller and lists
 * the three brokers in Metadata, naming a broker as controller (it
 * forwards admin requests); DescribeQuorum at the leader lists the three
 * brokers as observers, never as voters. librdkafka bootstrapped on one
 * broker creates a 6-partition topic through it (forwarded in an Envelope
 * to the active controller), with leaders on all three brokers, and
 * produces and consumes every partition; CreatePartitions, DeleteTopics
 * and AlterConfigs through brokers, and a topic auto-created
 * through one, reach every broker. kill -9 of the quorum leader: the
 * brokers keep serving (records produced and consumed during the
 * election), and a new topic created through a broker succeeds once a new
 * leader is elected; the killed controller restarts on its data and
 * catches up. Then a minority (one follower controller) is stopped: topics
 * are still created and records flow, and every broker keeps every topic.
 * A second process with a broker's node.id is refused registration
 * (DUPLICATE_BROKER_REGISTRATION) and never takes that broker's place.
 * The brokers, with a small snapshot threshold, write metadata snapshots
 * as observers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "rk_helpers.h"
#include "topic_configs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "raft/raft_codec.h"

#define NC 3 /* controllers, node ids 1..3 */
#define NB 3 /* brokers, node ids 4..6 */
#define CLUSTER_ID "T2JzZXJ2ZXJzVGVzdENsdQ"
#define BROKERS ((1u << 4) | (1u << 5) | (1u << 6))

struct observed_cluster {
    struct test_broker controllers[NC];
    struct test_broker brokers[NB];
    struct net_client *client; /* node ids: 1..3 controller listeners, 4..6 client listeners */
    char voters_kv[300];
    int cports[NC];
};

static bool describe_quorum(struct observed_cluster *c, int controller, struct raft_quorum_view *out)
{
    return client_describe_quorum(c->client, controller, 3000, out) == 0 && out->error_code == 0;
}

/* The quorum's leader as a live controller sees it (skipping `dead`). */
static int32_t quorum_leader(struct observed_cluster *c, int32_t dead, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        for (int i = 1; i <= NC; i++) {
            struct raft_quorum_view v;
            if (i != dead && describe_quorum(c, i, &v) && v.leader_id >= 1 && v.leader_id != dead)
                return v.leader_id;
        }
        if (harness_now_ms() > deadline)
            fail_msg("no quorum leader within %d ms", timeout_ms);
        usleep(100 * 1000);
    }
}

/* Waits until the quorum's leader (whichever node it is by then) reports
 * voter `id` fetched up to its high watermark: back in the quorum. */
static void wait_voter_caught_up(struct observed_cluster *c, int32_t id, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        int32_t leader = quorum_leader(c, -1, timeout_ms);
        struct raft_quorum_view q;
        if (describe_quorum(c, leader, &q) && q.leader_id == leader)
            for (int i = 0; i < q.n_voters; i++)
                if (q.voters[i].replica_id == id && q.voters[i].log_end_offset >= q.high_watermark)
                    return;
        if (harness_now_ms() > deadline)
            fail_msg("controller %d did not catch up with the quorum within %d ms", id, timeout_ms);
        usleep(100 * 1000);
    }
}

/* Creates topic through rk's broker, retrying while the quorum has no
 * leader, and waits until every broker and rk list it. */
static void create_topic_everywhere(struct observed_cluster *c, rd_kafka_t *rk, const char *topic, int partitions)
{
    char errstr[256];
    rd_kafka_resp_err_t err;
    long long deadline = harness_now_ms() + 30000;
    while ((err = rk_create_topic_result(rk, topic, partitions, 1, NULL, false, errstr, sizeof errstr)) !=
               RD_KAFKA_RESP_ERR_NO_ERROR &&
           harness_now_ms() < deadline)
        usleep(300 * 1000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics %s: %s (%s)", topic, rd_kafka_err2str(err), errstr);
    for (int i = 0; i < NB; i++)
        client_wait_view(c->client, NC + i + 1, BROKERS, topic, partitions, 15000);
    assert_true(rk_wait_topic(rk, topic, partitions, 15000));
}

/* Waits until broker `node` lists the three brokers and, with a topic,
 * that many partitions of it. */
static struct view wait_broker_view(struct observed_cluster *c, int node, const char *topic, int partitions,
                                    int timeout_ms)
{
    return client_wait_view(c->client, node, BROKERS, topic, partitions, timeout_ms);
}

/* Starts a process.roles=broker node with this node id on a free port
 * (without waiting for it). */
static void spawn_broker(struct observed_cluster *c, struct test_broker *b, int node)
{
    int port;
    do {
        port = harness_free_port();
    } while (port == c->cports[0] || port == c->cports[1] || port == c->cports[2]);
    char node_id[32];
    snprintf(node_id, sizeof node_id, "node.id=%d", node);
    /* A small snapshot threshold: observers write snapshots too (checked at the end). */
    const char *overrides[] = {node_id,
                               c->voters_kv,
                               "process.roles=broker",
                               "controller.listener.names=CONTROLLER",
                               "cluster.id=" CLUSTER_ID,
                               "controller.quorum.election.timeout.ms=500",
                               "controller.quorum.fetch.timeout.ms=1000",
                               "broker.heartbeat.interval.ms=500",
                               "offsets.topic.num.partitions=3",
                               "transaction.state.log.num.partitions=3",
                               "metadata.log.max.record.bytes.between.snapshots=1000",
                               NULL};
    broker_spawn_on_port(b, port, overrides);
}

static void observed_start(struct observed_cluster *c)
{
    memset(c, 0, sizeof *c);
    int cports[NC];
    char voters[256] = "";
    for (int i = 0; i < NC; i++) {
        do {
            cports[i] = harness_free_port();
        } while (i > 0 && (cports[i] == cports[0] || cports[i] == cports[i - 1]));
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1, cports[i]);
    }
    char voters_kv[300];
    snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
    for (int i = 0; i < NC; i++) {
        char listeners[96], node_id[32];
        snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", cports[i]);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        const char *overrides[] = {listeners,
                                   node_id,
                                   voters_kv,
                                   "process.roles=controller",
                                   "controller.listener.names=CONTROLLER",
                                   "cluster.id=" CLUSTER_ID,
                                   "controller.quorum.election.timeout.ms=500",
                                   "controller.quorum.fetch.timeout.ms=1000",
                                   "broker.session.timeout.ms=6000",
                                   NULL};
        broker_spawn_on_port(&c->controllers[i], cports[i], overrides);
    }
    snprintf(c->voters_kv, sizeof c->voters_kv, "%s", voters_kv);
    memcpy(c->cports, cports, sizeof cports);
    for (int i = 0; i < NB; i++)
        spawn_broker(c, &c->brokers[i], NC + i + 1);
    for (int i = 0; i < NC; i++)
        broker_wait_ready(&c->controllers[i]);
    for (int i = 0; i < NB; i++)
        broker_wait_ready(&c->brokers[i]);
    c->client = test_client_new();
    for (int i = 0; i < NC; i++)
        assert_int_equal(net_client_add_node(c->client, i + 1, "127.0.0.1", cports[i]), 0);
    for (int i = 0; i < NB; i++)
        assert_int_equal(net_client_add_node(c->client, NC + i + 1, "127.0.0.1", broker_port(&c->brokers[i])), 0);
}

static void observed_stop(struct observed_cluster *c)
{
    net_client_destroy(c->client);
    for (int i = 0; i < NB; i++) {
        if (c->brokers[i].pid > 0)
            broker_stop(&c->brokers[i]);
        broker_mark_passed(&c->brokers[i]);
        broker_cleanup(&c->brokers[i]);
    }
    for (int i = 0; i < NC; i++) {
        if (c->controllers[i].pid > 0)
            broker_stop(&c->controllers[i]);
        broker_mark_passed(&c->controllers[i]);
        broker_cleanup(&c->controllers[i]);
    }
}

/* Produces 5 records to every partition of topic through rk and consumes
 * them back, in order, through a fresh consumer on bootstrap. */
static void produce_and_consume(rd_kafka_t *rk, const char *bootstrap, const char *topic, int partitions)
{
    for (int part = 0; part < partitions; part++) {
        for (int m = 0; m < 5; m++) {
            char value[32];
            int n = snprintf(value, sizeof value, "p%d-m%d", part, m);
            assert_int_equal(rk_produce_blocking(rk, topic, part, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
        }
    }
    rd_kafka_flush(rk, 15000);
    long want[16];
    for (int p = 0; p < partitions; p++)
        want[p] = 5;
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(bootstrap, topic, partitions, want, 20000, &set), 5 * partitions);
    expect_partition_offset_values(&set);
    rk_record_set_free(&set);
}

/* The admin result's first topic error, or the request's error. */
static rd_kafka_resp_err_t first_topic_error(rd_kafka_event_t *ev, const rd_kafka_topic_result_t **topics, size_t n)
{
    if (rd_kafka_event_error(ev))
        return rd_kafka_event_error(ev);
    return n == 1 ? rd_kafka_topic_result_error(topics[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
}

/* CreatePartitions through rk's broker: topic grows to total. */
static rd_kafka_resp_err_t rk_add_partitions(rd_kafka_t *rk, const char *topic, int total)
{
    char errstr[256];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, errstr, sizeof errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, 30000);
    size_t n = 0;
    const rd_kafka_topic_result_t **t = rd_kafka_CreatePartitions_result_topics(
        rd_kafka_event_CreatePartitions_result(ev), &n);
    rd_kafka_resp_err_t err = first_topic_error(ev, t, n);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewPartitions_destroy(np);
    return err;
}

/* DeleteTopics through rk's broker. */
static rd_kafka_resp_err_t rk_delete_topic(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, 30000);
    size_t n = 0;
    const rd_kafka_topic_result_t **t = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
    rd_kafka_resp_err_t err = first_topic_error(ev, t, n);
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_DeleteTopic_destroy(dt);
    return err;
}

/* The topic's value of key as broker `node` describes it, "" when unknown. */
static void topic_config_at(rd_kafka_t *rk, const char *topic, const char *key, char *out, size_t outlen)
{
    out[0] = '\0';
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, 30000);
    size_t n = 0;
    const rd_kafka_ConfigResource_t **rs = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    for (size_t i = 0; !rd_kafka_event_error(ev) && i < n; i++) {
        size_t m = 0;
        const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(rs[i], &m);
        for (size_t j = 0; j < m; j++)
            if (strcmp(rd_kafka_ConfigEntry_name(entries[j]), key) == 0 && rd_kafka_ConfigEntry_value(entries[j]))
                snprintf(out, outlen, "%s", rd_kafka_ConfigEntry_value(entries[j]));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(res);
}

/* Every admin request a pure broker forwards, other than CreateTopics,
 * and a topic auto-created through one. */
static void admin_through_brokers(struct observed_cluster *c)
{
    rd_kafka_t *rk6 = rk_producer_new(broker_bootstrap(&c->brokers[2]), NULL);
    rd_kafka_t *rk4 = rk_producer_new(broker_bootstrap(&c->brokers[0]), NULL);
    assert_int_equal(rk_add_partitions(rk6, "spread", 8), RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int i = 0; i < NB; i++)
        wait_broker_view(c, NC + i + 1, "spread", 8, 15000);
    assert_int_equal(rk_set_topic_config(rk4, "spread", "retention.ms", "3600000"), RD_KAFKA_RESP_ERR_NO_ERROR);
    char value[64] = "";
    long long deadline = harness_now_ms() + 15000;
    while (strcmp(value, "3600000") != 0 && harness_now_ms() < deadline) {
        topic_config_at(rk6, "spread", "retention.ms", value, sizeof value);
        if (strcmp(value, "3600000") != 0)
            usleep(100 * 1000);
    }
    assert_string_equal(value, "3600000");
    char errstr[256];
    assert_int_equal(rk_create_topic_result(rk4, "doomed", 2, 1, NULL, false, errstr, sizeof errstr),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_delete_topic(rk6, "doomed"), RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int i = 0; i < NB; i++)
        wait_broker_view(c, NC + i + 1, "doomed", -1, 15000);
    /* auto.create.topics.enable (on by default) through a broker. */
    client_metadata_auto_create(c->client, NC + 2, "auto-made", 3000);
    for (int i = 0; i < NB; i++)
        wait_broker_view(c, NC + i + 1, "auto-made", 1, 15000);
    rk_producer_destroy(rk6);
    rk_producer_destroy(rk4);
}

static void test_controllers_and_observer_brokers(void **state)
{
    (void)state;
    struct observed_cluster c;
    observed_start(&c);
    /* Every broker lists the three brokers (no controller) and names one
     * of them as controller: the one that forwards for it. */
    for (int i = 0; i < NB; i++) {
        struct view v = wait_broker_view(&c, NC + i + 1, NULL, 0, 30000);
        assert_true(v.controller_id >= NC + 1 && v.controller_id <= NC + NB);
    }
    /* The leader lists the brokers as observers, the controllers as voters. */
    int32_t leader = quorum_leader(&c, -1, 15000);
    long long deadline = harness_now_ms() + 15000;
    struct raft_quorum_view q;
    unsigned observers = 0;
    do {
        observers = 0;
        if (describe_quorum(&c, leader, &q) && q.leader_id == leader)
            for (int i = 0; i < q.n_observers; i++)
                observers |= 1u << q.observers[i].replica_id;
        if (observers != BROKERS)
            usleep(100 * 1000);
    } while (observers != BROKERS && harness_now_ms() < deadline);
    assert_int_equal(observers, BROKERS);
    assert_int_equal(q.n_voters, NC);
    for (int i = 0; i < q.n_voters; i++)
        assert_true(q.voters[i].replica_id >= 1 && q.voters[i].replica_id <= NC);

    /* librdkafka on broker 5: it sees the three brokers and creates a
     * topic through it (forwarded to the active controller). */
    const char *bootstrap = broker_bootstrap(&c.brokers[1]);
    const char *conf[] = {"enable.idempotence", "true", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    const struct rd_kafka_metadata *md = NULL;
    assert_int_equal(rd_kafka_metadata(rk, 0, NULL, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(md->broker_cnt, NB);
    unsigned seen = 0;
    for (int i = 0; i < md->broker_cnt; i++)
        seen |= 1u << md->brokers[i].id;
    assert_int_equal(seen, BROKERS);
    rd_kafka_metadata_destroy(md);
    char errstr[256];
    rd_kafka_resp_err_t err = rk_create_topic_result(rk, "spread", 6, 1, NULL, false, errstr, sizeof errstr);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics through broker 5: %s (%s)", rd_kafka_err2str(err), errstr);
    unsigned led = 0;
    for (int i = 0; i < NB; i++) {
        struct view v = wait_broker_view(&c, NC + i + 1, "spread", 6, 15000);
        led = 0;
        for (int p = 0; p < 6; p++)
            led |= 1u << v.leaders[p];
    }
    assert_int_equal(led, BROKERS);
    assert_true(rk_wait_topic(rk, "spread", 6, 15000));
    produce_and_consume(rk, bootstrap, "spread", 6);
    admin_through_brokers(&c);

    /* kill -9 of the quorum leader: the brokers keep serving (the data
     * path needs no controller: records go in and out while the others
     * elect), and once a new leader is elected a topic created through a
     * broker commits. */
    create_topic_everywhere(&c, rk, "steady", 3);
    long long killed_at = harness_now_ms();
    broker_kill9(&c.controllers[leader - 1]);
    produce_and_consume(rk, bootstrap, "steady", 3);
    int32_t next = quorum_leader(&c, leader, 20000);
    fprintf(stderr, "[test] controller %d killed, controller %d leads after %lld ms\n", leader, next,
            harness_now_ms() - killed_at);
    deadline = harness_now_ms() + 30000;
    while ((err = rk_create_topic_result(rk, "after", 3, 1, NULL, false, errstr, sizeof errstr)) !=
               RD_KAFKA_RESP_ERR_NO_ERROR &&
           harness_now_ms() < deadline)
        usleep(300 * 1000);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("CreateTopics after the leader died: %s (%s)", rd_kafka_err2str(err), errstr);
    fprintf(stderr, "[test] a topic created through broker 5 %lld ms after the kill\n", harness_now_ms() - killed_at);
    for (int i = 0; i < NB; i++)
        wait_broker_view(&c, NC + i + 1, "after", 3, 15000);
    assert_true(rk_wait_topic(rk, "after", 3, 15000));
    produce_and_consume(rk, bootstrap, "after", 3);

    /* The killed controller restarts on its data and catches up. */
    broker_restart(&c.controllers[leader - 1]);
    wait_voter_caught_up(&c, leader, 60000);
    /* A minority stopped (one follower of three): the two left keep a
     * leader, so topics are still created and records flow. */
    int32_t active = quorum_leader(&c, -1, 15000);
    int32_t down = active % NC + 1;
    broker_stop(&c.controllers[down - 1]);
    create_topic_everywhere(&c, rk, "minority", 3);
    produce_and_consume(rk, bootstrap, "minority", 3);
    /* Topics from before the kill, during it and after both faults are on
     * every broker. */
    for (int i = 0; i < NB; i++) {
        wait_broker_view(&c, NC + i + 1, "spread", 8, 15000);
        wait_broker_view(&c, NC + i + 1, "steady", 3, 15000);
        wait_broker_view(&c, NC + i + 1, "after", 3, 15000);
        wait_broker_view(&c, NC + i + 1, "minority", 3, 15000);
    }
    broker_restart(&c.controllers[down - 1]);
    wait_voter_caught_up(&c, down, 60000);

    struct rk_delivery_stats *stats = rk_producer_stats(rk);
    assert_int_equal(stats->failed, 0);
    assert_int_equal(stats->delivered, 75);
    rk_producer_destroy(rk);
    /* A second process with broker 4's node.id: the controller refuses its
     * registration (DUPLICATE_BROKER_REGISTRATION) while broker 4's
     * session is valid, it says so, and it never opens its listener;
     * broker 4 stays listed at its own port and keeps serving. */
    struct test_broker twin;
    memset(&twin, 0, sizeof twin);
    spawn_broker(&c, &twin, NC + 1);
    broker_wait_log(&twin, "registration refused, previous incarnation's session still valid", 30000);
    for (int i = 0; i < NB; i++) {
        struct view v = wait_broker_view(&c, NC + i + 1, "minority", 3, 15000);
        for (int b = 0; b < v.broker_count; b++)
            if (v.broker_ids[b] == NC + 1)
                assert_int_equal(v.broker_ports[b], broker_port(&c.brokers[0]));
    }
    assert_true(broker_alive(&twin));
    assert_false(broker_log_contains(&twin, "registration accepted"));
    rd_kafka_t *at4 = rk_producer_new(broker_bootstrap(&c.brokers[0]), NULL);
    create_topic_everywhere(&c, at4, "twin", 3);
    produce_and_consume(at4, broker_bootstrap(&c.brokers[0]), "twin", 3);
    assert_int_equal(rk_producer_stats(at4)->failed, 0);
    rk_producer_destroy(at4);
    broker_kill9(&twin);
    broker_mark_passed(&twin);
    broker_cleanup(&twin);

    /* Every observer wrote metadata snapshots of what it had committed. */
    for (int i = 0; i < NB; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/raft-quorum/__cluster_metadata-0", c.brokers[i].data_dir);
        assert_true(broker_log_contains(&c.brokers[i], "wrote metadata snapshot at offset"));
        DIR *d = opendir(path);
        assert_non_null(d);
        int found = 0;
        for (struct dirent *e; (e = readdir(d)) != NULL;)
            found += strstr(e->d_name, ".checkpoint") && !strstr(e->d_name, ".part");
        closedir(d);
        if (found < 1)
            fail_msg("broker %d keeps no snapshot file in %s", NC + i + 1, path);
    }
    observed_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controllers_and_observer_brokers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
