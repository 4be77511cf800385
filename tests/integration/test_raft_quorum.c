/* A KRaft controller quorum of real cairnd processes on loopback
 * (process.roles=controller): three controllers elect one leader that all
 * of them name in DescribeQuorum; kill -9 of the leader gives a new leader
 * within FAILOVER_BOUND_MS and a higher high watermark; the killed node
 * restarts with its vote and its log from disk (quorum-state and
 * __cluster_metadata-0), follows and catches up. A corrupt quorum-state
 * refuses the start with a line naming the file. Bad configs: a controller missing from
 * the voters and a voter entry that is not the node's own port refuse to
 * start with one clear line; voter sets that disagree between nodes are
 * named in the logs and keep the odd node from leading, and so is a node
 * of another cluster (INCONSISTENT_CLUSTER_ID). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "raft/raft_codec.h"

#define CLUSTER_ID "MkU3OEVBNTcwNTJENDM2Qg"
/* election.timeout.ms=500, fetch.timeout.ms=1000: a follower waits up to
 * 1 s for the dead leader, then up to 1 s (twice the election timeout) of
 * randomized delay, a pre-vote and a vote round, and maybe one backoff of
 * up to 1 s after a split vote. */
#define FAILOVER_BOUND_MS 5000

struct quorum_test {
    struct test_broker nodes[N];
    int ports[N];
    bool up[N];
    char voters[256];
    const char *cluster_id; /* NULL: CLUSTER_ID */
    struct net_client *client;
};

/* ---- DescribeQuorum through the outbound client ---- */

static int describe(struct quorum_test *q, int i, struct raft_quorum_view *out)
{
    return client_describe_quorum(q->client, i + 1, 1000, out);
}

static int64_t own_end_offset(const struct raft_quorum_view *v, int32_t id)
{
    for (int i = 0; i < v->n_voters; i++)
        if (v->voters[i].replica_id == id)
            return v->voters[i].log_end_offset;
    return -1;
}

/* ---- nodes ---- */

static void start_node(struct quorum_test *q, int i)
{
    char listeners[64], node_id[32], voters[300], cluster[64];
    snprintf(cluster, sizeof cluster, "cluster.id=%s", q->cluster_id ? q->cluster_id : CLUSTER_ID);
    snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", q->ports[i]);
    snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
    snprintf(voters, sizeof voters, "controller.quorum.voters=%s", q->voters);
    const char *overrides[] = {listeners,
                               node_id,
                               voters,
                               "process.roles=controller",
                               "controller.listener.names=CONTROLLER",
                               cluster,
                               "controller.quorum.election.timeout.ms=500",
                               "controller.quorum.fetch.timeout.ms=1000",
                               NULL};
    broker_start_on_port(&q->nodes[i], q->ports[i], overrides);
    q->up[i] = true;
}

static void quorum_setup(struct quorum_test *q)
{
    memset(q, 0, sizeof *q);
    size_t used = 0;
    for (int i = 0; i < N; i++) {
        do {
            q->ports[i] = harness_free_port();
        } while (i > 0 && (q->ports[i] == q->ports[i - 1] || q->ports[i] == q->ports[0]));
        used += (size_t)snprintf(q->voters + used, sizeof q->voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1,
                                 q->ports[i]);
    }
    struct net_client_config cc;
    net_client_config_defaults(&cc);
    cc.reconnect_backoff_ms = 20;
    cc.reconnect_backoff_max_ms = 200;
    char err[160];
    if (net_client_create(&cc, &q->client, err, sizeof err) != 0)
        fail_msg("net client: %s", err);
    for (int i = 0; i < N; i++)
        assert_int_equal(net_client_add_node(q->client, i + 1, "127.0.0.1", q->ports[i]), 0);
}

static void quorum_teardown(struct quorum_test *q, bool passed)
{
    net_client_destroy(q->client);
    for (int i = 0; i < N; i++) {
        if (passed)
            broker_mark_passed(&q->nodes[i]);
        broker_cleanup(&q->nodes[i]);
    }
}

/* Polls until every running node answers DescribeQuorum with the same
 * leader and epoch, the leader (running) names itself, the epoch is above
 * min_epoch and the leader's high watermark is at least min_hw. Returns
 * the leader's view; fails the test after timeout_ms. */
static struct raft_quorum_view wait_agreement(struct quorum_test *q, int32_t min_epoch, int64_t min_hw,
                                              long long timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct raft_quorum_view last[N];
    memset(last, 0, sizeof last);
    while (harness_now_ms() < deadline) {
        bool agree = true;
        int32_t leader = -2, epoch = -2;
        for (int i = 0; i < N && agree; i++) {
            if (!q->up[i])
                continue;
            if (describe(q, i, &last[i]) != 0) {
                agree = false;
                break;
            }
            if (leader == -2) {
                leader = last[i].leader_id;
                epoch = last[i].leader_epoch;
            }
            agree = last[i].leader_id == leader && last[i].leader_epoch == epoch;
        }
        if (agree && leader >= 1 && leader <= N && q->up[leader - 1] && epoch > min_epoch &&
            last[leader - 1].high_watermark >= min_hw)
            return last[leader - 1];
        usleep(50 * 1000);
    }
    for (int i = 0; i < N; i++)
        if (q->up[i])
            fprintf(stderr, "node %d: leader %d epoch %d hw %lld\n", i + 1, last[i].leader_id, last[i].leader_epoch,
                    (long long)last[i].high_watermark);
    fail_msg("the quorum did not agree on a leader above epoch %d with hw >= %lld within %lld ms", min_epoch,
             (long long)min_hw, timeout_ms);
    return last[0];
}

/* leaderEpoch and votedId of a node's quorum-state file. */
static void read_quorum_state(const struct test_broker *b, int32_t *epoch, int32_t *voted)
{
    char path[700];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0/quorum-state", b->data_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("no quorum-state file at %s", path);
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *e = strstr(buf, "\"leaderEpoch\":");
    const char *v = strstr(buf, "\"votedId\":");
    if (!e || !v || sscanf(e, "\"leaderEpoch\":%d", epoch) != 1 || sscanf(v, "\"votedId\":%d", voted) != 1)
        fail_msg("unexpected quorum-state: %s", buf);
}

static void test_elect_fail_over_and_rejoin(void **state)
{
    (void)state;
    struct quorum_test q;
    quorum_setup(&q);
    for (int i = 0; i < N; i++)
        start_node(&q, i);

    /* One leader, named by all three, whose LeaderChange entry is committed. */
    struct raft_quorum_view first = wait_agreement(&q, 0, 1, 15000);
    int32_t leader = first.leader_id;
    fprintf(stderr, "[test] leader %d in epoch %d, hw %lld\n", leader, first.leader_epoch,
            (long long)first.high_watermark);
    assert_int_equal(first.n_voters, N);

    /* kill -9 the leader: the other two elect a new one within the bound,
     * and it commits its own LeaderChange (the high watermark advances). */
    struct raft_quorum_view before;
    assert_int_equal(describe(&q, leader - 1, &before), 0);
    int64_t end_before = own_end_offset(&before, leader);
    assert_true(end_before >= 1);
    broker_kill9(&q.nodes[leader - 1]);
    /* What its quorum-state file says now is what it must start from. */
    int32_t qs_epoch = -1, qs_voted = -1;
    read_quorum_state(&q.nodes[leader - 1], &qs_epoch, &qs_voted);
    assert_int_equal(qs_epoch, first.leader_epoch);
    assert_int_equal(qs_voted, leader);
    q.up[leader - 1] = false;
    long long killed_at = harness_now_ms();
    struct raft_quorum_view second = wait_agreement(&q, first.leader_epoch, first.high_watermark + 1, 15000);
    long long failover_ms = harness_now_ms() - killed_at;
    fprintf(stderr, "[test] new leader %d in epoch %d, hw %lld, %lld ms after the kill\n", second.leader_id,
            second.leader_epoch, (long long)second.high_watermark, failover_ms);
    assert_int_not_equal(second.leader_id, leader);
    assert_true(failover_ms <= FAILOVER_BOUND_MS);

    /* The old leader restarts from its disk: its vote in its old epoch (it
     * cannot vote again there) and a log no shorter than before the kill;
     * then it follows the new leader and catches up to its high watermark. */
    broker_restart(&q.nodes[leader - 1]);
    q.up[leader - 1] = true;
    char start_line[128];
    snprintf(start_line, sizeof start_line, "node %d starts the metadata quorum of 3 voters: epoch %d, voted for %d,",
             leader, qs_epoch, qs_voted);
    assert_true(broker_log_contains(&q.nodes[leader - 1], start_line));
    struct raft_quorum_view back;
    assert_int_equal(describe(&q, leader - 1, &back), 0);
    fprintf(stderr, "[test] node %d back with end offset %lld (before the kill %lld), epoch %d\n", leader,
            (long long)own_end_offset(&back, leader), (long long)end_before, back.leader_epoch);
    assert_true(own_end_offset(&back, leader) >= end_before);
    assert_true(back.leader_epoch >= first.leader_epoch);
    struct raft_quorum_view third = wait_agreement(&q, second.leader_epoch - 1, second.high_watermark, 15000);
    assert_int_equal(third.leader_id, second.leader_id);
    assert_int_equal(third.leader_epoch, second.leader_epoch);
    long long deadline = harness_now_ms() + 10000;
    struct raft_quorum_view mine, leaders;
    for (;;) {
        assert_int_equal(describe(&q, leader - 1, &mine), 0);
        assert_int_equal(describe(&q, second.leader_id - 1, &leaders), 0);
        if (own_end_offset(&mine, leader) >= second.high_watermark &&
            own_end_offset(&leaders, leader) >= second.high_watermark && mine.high_watermark >= second.high_watermark)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("restarted node %d did not catch up: its end offset %lld, the leader sees %lld, hw %lld", leader,
                     (long long)own_end_offset(&mine, leader), (long long)own_end_offset(&leaders, leader),
                     (long long)second.high_watermark);
        usleep(50 * 1000);
    }
    assert_int_equal(mine.leader_id, second.leader_id);
    assert_int_equal(mine.leader_epoch, second.leader_epoch);
    quorum_teardown(&q, true);
}

/* ---- bad configs ---- */

/* Runs cairnd with the overrides to completion; returns its exit status
 * and its output in out. quorum_state (NULL: none) is put in its
 * quorum-state file first. */
static int run_cairnd_in(const char *const *overrides, const char *quorum_state, bool format, char *out, size_t outlen);

static int run_cairnd(const char *const *overrides, const char *quorum_state, char *out, size_t outlen)
{
    return run_cairnd_in(overrides, quorum_state, true, out, outlen);
}

/* format: run `cairnd format` on the dir first (its own errors are the
 * start's to report). */
static int run_cairnd_in(const char *const *overrides, const char *quorum_state, bool format, char *out, size_t outlen)
{
    char dir[] = "/tmp/cairn-raft-badcfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    if (quorum_state) {
        char path[128];
        snprintf(path, sizeof path, "mkdir -p %s/data/__cluster_metadata-0", dir);
        assert_int_equal(system(path), 0);
        snprintf(path, sizeof path, "%s/data/__cluster_metadata-0/quorum-state", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(quorum_state, f);
        fclose(f);
    }
    char cmd[4096], args[1536];
    size_t used = (size_t)snprintf(args, sizeof args, " --override log.dirs=%s/data", dir);
    for (int i = 0; overrides[i]; i++)
        used += (size_t)snprintf(args + used, sizeof args - used, " --override '%s'", overrides[i]);
    used = 0;
    if (format)
        used = (size_t)snprintf(cmd, sizeof cmd, "%s format -g -t " CLUSTER_ID "%s >/dev/null 2>&1; ", broker_binary(),
                                args);
    used += (size_t)snprintf(cmd + used, sizeof cmd - used, "%s%s", broker_binary(), args);
    snprintf(cmd + used, sizeof cmd - used, " 2>&1");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "[test] could not remove %s\n", dir);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_bad_configs_refuse_to_start(void **state)
{
    (void)state;
    int port = harness_free_port();
    char listeners[64], voters[128], wrong_port[128];
    snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", port);
    snprintf(voters, sizeof voters, "controller.quorum.voters=1@127.0.0.1:%d,2@127.0.0.1:1,3@127.0.0.1:2", port);
    snprintf(wrong_port, sizeof wrong_port, "controller.quorum.voters=1@127.0.0.1:%d,2@127.0.0.1:1", port + 1);
    char out[4096];

    /* A controller that is not one of the voters. */
    const char *not_listed[] = {listeners,
                                voters,
                                "node.id=4",
                                "process.roles=controller",
                                "controller.listener.names=CONTROLLER",
                                "cluster.id=" CLUSTER_ID,
                                NULL};
    assert_int_equal(run_cairnd(not_listed, NULL, out, sizeof out), 2);
    assert_non_null(strstr(out, "node.id 4 has the controller role but is not listed in controller.quorum.voters"));

    /* Its own voter entry is not where it listens. */
    const char *mismatch[] = {listeners,
                              wrong_port,
                              "node.id=1",
                              "process.roles=controller",
                              "controller.listener.names=CONTROLLER",
                              "cluster.id=" CLUSTER_ID,
                              NULL};
    assert_int_equal(run_cairnd(mismatch, NULL, out, sizeof out), 1);
    assert_non_null(strstr(out, "controller.quorum.voters gives node 1 the port"));

    /* A controller listener that does not exist. */
    const char *no_listener[] = {listeners,
                                 voters,
                                 "node.id=1",
                                 "process.roles=controller",
                                 "controller.listener.names=QUORUM",
                                 "cluster.id=" CLUSTER_ID,
                                 NULL};
    assert_int_equal(run_cairnd(no_listener, NULL, out, sizeof out), 2);
    assert_non_null(strstr(out, "controller listener QUORUM is not one of listeners"));

    /* Storage never formatted, and no cluster.id: one line naming the command. */
    const char *unformatted[] = {
        listeners, voters, "node.id=1", "process.roles=controller", "controller.listener.names=CONTROLLER", NULL};
    assert_int_equal(run_cairnd_in(unformatted, NULL, false, out, sizeof out), 1);
    assert_non_null(strstr(out, "is not formatted (no meta.properties): run 'cairnd format --config <file> "
                                "--cluster-id <id>' on this node first"));

    /* A quorum-state file that does not parse is never taken for none. */
    const char *corrupt[] = {listeners,
                             voters,
                             "node.id=1",
                             "process.roles=controller",
                             "controller.listener.names=CONTROLLER",
                             "cluster.id=" CLUSTER_ID,
                             NULL};
    int rc = run_cairnd(corrupt, "{\"clusterId\":\"x\",\"leaderEp", out, sizeof out);
    if (rc != 1)
        fail_msg("cairnd exited %d: %s", rc, out);
    assert_non_null(strstr(out, "corrupt quorum state file "));
    assert_non_null(strstr(out, "/data/__cluster_metadata-0/quorum-state"));
}

/* Node 3 is the odd one: nodes 1 and 2 must log pair_line (either of
 * them), node 3 odd_line, within 15 s; then the pair, without node 3,
 * agrees on a leader that is one of them. */
static void expect_odd_node_refused(struct quorum_test *q, const char *pair_line, const char *odd_line)
{
    long long deadline = harness_now_ms() + 15000;
    bool pair_side = false, odd_side = false;
    while (harness_now_ms() < deadline && !(odd_side && pair_side)) {
        pair_side = broker_log_contains(&q->nodes[0], pair_line) || broker_log_contains(&q->nodes[1], pair_line);
        odd_side = broker_log_contains(&q->nodes[2], odd_line);
        usleep(100 * 1000);
    }
    assert_true(pair_side);
    assert_true(odd_side);
    q->up[2] = false;
    struct raft_quorum_view v = wait_agreement(q, 0, 1, 15000);
    assert_true(v.leader_id == 1 || v.leader_id == 2);
}

/* Nodes 1 and 2 know only each other; node 3 believes in all three. The two
 * elect a leader, refuse node 3's votes with INCONSISTENT_VOTER_SET, and
 * both sides say so in their logs. */
static void test_voter_sets_that_disagree(void **state)
{
    (void)state;
    struct quorum_test q;
    quorum_setup(&q);
    char all_three[256];
    snprintf(all_three, sizeof all_three, "%s", q.voters);
    snprintf(q.voters, sizeof q.voters, "1@127.0.0.1:%d,2@127.0.0.1:%d", q.ports[0], q.ports[1]);
    start_node(&q, 0);
    start_node(&q, 1);
    snprintf(q.voters, sizeof q.voters, "%s", all_three);
    start_node(&q, 2);
    expect_odd_node_refused(&q, "controller.quorum.voters disagree between nodes",
                            "controller.quorum.voters disagree between nodes");
    quorum_teardown(&q, true);
}

/* Node 3 was formatted for another cluster: the other two refuse its
 * requests with INCONSISTENT_CLUSTER_ID, both sides log it, and the two
 * still elect a leader between them. */
static void test_another_cluster_id(void **state)
{
    (void)state;
    struct quorum_test q;
    quorum_setup(&q);
    start_node(&q, 0);
    start_node(&q, 1);
    q.cluster_id = "AAAAAAAAAAAAAAAAAAAAAA";
    start_node(&q, 2);
    expect_odd_node_refused(&q, "refused with INCONSISTENT_CLUSTER_ID", "belongs to another cluster");
    quorum_teardown(&q, true);
}

/* process.roles=broker,controller: each node serves clients on PLAINTEXT
 * (the harness waits for ApiVersions there) and the quorum on CONTROLLER
 * with its log apart from the broker's metadata log; the three agree on a
 * leader and stop cleanly. */
static void test_broker_and_controller_roles(void **state)
{
    (void)state;
    struct quorum_test q;
    quorum_setup(&q);
    for (int i = 0; i < N; i++) {
        int broker_port;
        do {
            broker_port = harness_free_port();
        } while (broker_port == q.ports[0] || broker_port == q.ports[1] || broker_port == q.ports[2]);
        char listeners[128], node_id[32], voters[300];
        snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d",
                 broker_port, q.ports[i]);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        snprintf(voters, sizeof voters, "controller.quorum.voters=%s", q.voters);
        const char *overrides[] = {listeners,
                                   node_id,
                                   voters,
                                   "process.roles=broker,controller",
                                   "controller.listener.names=CONTROLLER",
                                   "cluster.id=" CLUSTER_ID,
                                   "controller.quorum.election.timeout.ms=500",
                                   "controller.quorum.fetch.timeout.ms=1000",
                                   NULL};
        broker_spawn_on_port(&q.nodes[i], broker_port, overrides);
        q.up[i] = true;
    }
    /* A broker serves clients once the active controller has registered it. */
    for (int i = 0; i < N; i++)
        broker_wait_ready(&q.nodes[i]);
    struct raft_quorum_view v = wait_agreement(&q, 0, 1, 15000);
    assert_true(v.leader_id >= 1 && v.leader_id <= N);
    /* The quorum's log is not the broker's own metadata log. */
    for (int i = 0; i < N; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/raft-quorum/__cluster_metadata-0/quorum-state", q.nodes[i].data_dir);
        assert_int_equal(access(path, F_OK), 0);
        snprintf(path, sizeof path, "%s/__cluster_metadata-0/quorum-state", q.nodes[i].data_dir);
        assert_int_not_equal(access(path, F_OK), 0);
    }
    for (int i = 0; i < N; i++)
        broker_stop(&q.nodes[i]);
    quorum_teardown(&q, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_configs_refuse_to_start), cmocka_unit_test(test_elect_fail_over_and_rejoin),
        cmocka_unit_test(test_voter_sets_that_disagree),    cmocka_unit_test(test_another_cluster_id),
        cmocka_unit_test(test_broker_and_controller_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
