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

#include "leader_cluster.h"

/* Waits until node's Metadata has victim in the ISR of partition only
 * (or of every partition when only < 0), at the leaders and leader epochs
 * of ref. */
static void wait_rejoined(struct cluster *c, int node, int32_t victim, const struct view *ref, int only, int timeout_ms)
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
    leader_cluster_start(&c, NULL);
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
    assert_int_equal(create_topic_rf(&c, controller, "el", PARTS, 3), KAFKA_ERR_NONE);
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
