/* Eligible Leader Replicas (KIP-966) between three cairnd processes
 * (process.roles=broker,controller on one quorum). A topic with two
 * replicas {A, B} and min.insync.replicas=2 takes acknowledged writes; B
 * is paused (SIGSTOP) until the leader A drops it from the ISR, which is
 * then {A}, below the minimum; A is killed -9 and B resumed. When A's
 * session lapses it is fenced:
 *  - test_elr_elects_clean_replica: with eligible.leader.replicas.enable,
 *    an acks=1 record to A alone does not move the high watermark, B
 *    (kept in the ELR) leads, and a consumer reading from it gets every
 *    acknowledged record;
 *  - test_without_elr_stays_offline: without it the acks=1 record moves
 *    the high watermark, and A stays the ISR's last
 *    member and the partition has no leader, though B is live (as Kafka
 *    before KIP-966: only an unclean election could use B). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "dtp_view.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/create_topics_request.h"
#include "protocol/generated/errors.h"

#define CLUSTER_ID "RWxpZ2libGVMZWFkZXJzIQ"
#define ELR_SESSION_MS 8000
#define ACKED 200

/* The partition as node sees it, once it has a leader and both replicas in
 * its ISR. */
static struct partition_view wait_full_isr(struct cluster *c, int node)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        struct view v;
        if (metadata(c, node, "elr", &v) && v.partitions > 0 && v.p[0].leader > 0 && v.p[0].isr_count == 2)
            return v.p[0];
        if (harness_now_ms() > deadline)
            fail_msg("elr-0 has no leader with two in-sync replicas");
        usleep(200 * 1000);
    }
}

/* Waits until node sees the ISR of elr-0 as {only}. */
static void wait_isr_alone(struct cluster *c, int node, int32_t only)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        struct view v;
        if (metadata(c, node, "elr", &v) && v.partitions > 0 && v.p[0].isr_count == 1 && v.p[0].isr[0] == only)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("the ISR of elr-0 did not shrink to {%d}", (int)only);
        usleep(100 * 1000);
    }
}

/* DescribeTopicPartitions at node shows elr-0 with ISR {isr_only} and, with
 * ELR on, the replica dropped below min.insync.replicas as its ELR
 * (elr_member); -1: an empty ELR. */
static void expect_elr_described(struct cluster *c, int node, int32_t isr_only, int32_t elr_member)
{
    const char *topics[] = {"elr", NULL};
    long long deadline = harness_now_ms() + 30000;
    for (;;) {
        struct dtp_view v;
        if (describe_topic_partitions(c->client, node, topics, 2000, NULL, 0, &v) && v.topic_count == 1 &&
            v.topics[0].partition_count == 1) {
            const struct dtp_partition *p = &v.topics[0].p[0];
            bool elr_as_expected = elr_member < 0 ? p->elr_count == 0 : p->elr_count == 1 && p->elr[0] == elr_member;
            if (p->isr_count == 1 && p->isr[0] == isr_only && elr_as_expected) {
                assert_int_equal(p->replica_count, 2);
                assert_int_equal(p->last_known_elr_count, 0);
                return;
            }
        }
        if (harness_now_ms() > deadline)
            fail_msg("DescribeTopicPartitions at %d: elr-0 never had ISR {%d} and ELR {%d}", node, (int)isr_only,
                     (int)elr_member);
        usleep(200 * 1000);
    }
}

/* The offset node's replication-offset-checkpoint holds for elr 0, -1
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
        if (sscanf(line, "%255s %d %lld", name, &partition, &offset) == 3 && strcmp(name, "elr") == 0 && partition == 0)
            found = offset;
    }
    fclose(f);
    return found;
}

/* Acknowledged writes, the ISR shrunk to the leader, the leader killed:
 * returns B, the surviving replica, with A fenced as node C sees it. */
static int32_t lose_leader_after_shrink(struct cluster *c, bool elr, int32_t *observer)
{
    create_topic_min_isr(c, "elr", 2, "2");
    struct partition_view p = wait_full_isr(c, 1);
    int32_t a = p.leader, b = p.isr[0] == a ? p.isr[1] : p.isr[0];
    int32_t other = 6 - a - b; /* the node that holds no replica */
    produce_acked(broker_bootstrap(&c->nodes[a - 1]), "elr", 1, ACKED);
    /* B learns the high watermark from A's next answer: once it has it,
     * B can serve every acknowledged record as leader (which does not
     * move the high watermark while the ISR is below the minimum). */
    long long deadline = harness_now_ms() + 30000;
    while (checkpointed(&c->nodes[b - 1]) < ACKED) {
        if (harness_now_ms() > deadline)
            fail_msg("broker %d did not learn the high watermark %d", (int)b, ACKED);
        usleep(100 * 1000);
    }
    /* B paused past replica.lag.time.max.ms: A drops it from the ISR. */
    assert_int_equal(kill(c->nodes[b - 1].pid, SIGSTOP), 0);
    wait_isr_alone(c, other, a);
    expect_elr_described(c, other, a, elr ? b : -1);
    /* An acks=1 record to A alone: KIP-966 holds the high watermark below
     * min.insync.replicas; without ELR it moves (A is the whole ISR). */
    const char *acks1[] = {"enable.idempotence", "false", "acks", "1", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c->nodes[a - 1]), acks1);
    assert_int_equal(rk_produce_one_delivered(rk, "elr"), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t low = -1, high = -1;
    assert_int_equal(rd_kafka_query_watermark_offsets(rk, "elr", 0, &low, &high, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
    assert_int_equal(high, elr ? ACKED : ACKED + 1);
    broker_kill9(&c->nodes[a - 1]);
    assert_int_equal(kill(c->nodes[b - 1].pid, SIGCONT), 0);
    /* A fenced: the quorum (B and the other node) no longer lists it. */
    deadline = harness_now_ms() + 90000;
    for (;;) {
        struct view v;
        if (metadata(c, other, "elr", &v) && !(v.brokers & (1u << a)) && (v.brokers & (1u << b)))
            break;
        if (harness_now_ms() > deadline)
            fail_msg("broker %d was not fenced after kill -9", (int)a);
        usleep(200 * 1000);
    }
    *observer = other;
    return b;
}

static int32_t leader_seen(struct cluster *c, int node)
{
    struct view v;
    return metadata(c, node, "elr", &v) && v.partitions > 0 ? v.p[0].leader : -2;
}

/* ApiVersions on every node names the feature level the log holds:
 * eligible.leader.replicas.version 1 with the switch on, not listed
 * without it (a level of 0 is not finalized). */
static void expect_elr_finalized(struct cluster *c, bool elr)
{
    for (int i = 0; i < N; i++) {
        long long deadline = harness_now_ms() + 30000;
        for (int32_t correlation = 1;; correlation++) {
            struct raw_api_versions v = {0};
            int fd = raw_connect(c->nodes[i].port, 5000);
            bool answered = fd >= 0 && raw_api_versions(fd, 4, correlation, &v) == 0;
            if (fd >= 0)
                close(fd);
            const struct raw_feature_range *f = answered ? raw_feature_find(v.finalized, v.finalized_count,
                                                                            "eligible.leader.replicas.version")
                                                         : NULL;
            if (answered && (elr ? f && f->min_version == 1 && f->max_version == 1 : !f) &&
                raw_feature_find(v.finalized, v.finalized_count, "metadata.version"))
                break;
            if (harness_now_ms() > deadline)
                fail_msg("node %d: ELR level %d in ApiVersions (%d finalized), expected %s", i + 1,
                         f ? f->max_version : 0, v.finalized_count, elr ? "1" : "none");
            usleep(200 * 1000);
        }
    }
}

static void start(struct cluster *c, bool elr)
{
    const char *extra[] = {"replica.lag.time.max.ms=2000", "replica.high.watermark.checkpoint.interval.ms=200",
                           elr ? "eligible.leader.replicas.enable=true" : "eligible.leader.replicas.enable=false",
                           NULL};
    replicated_cluster_start_session(c, CLUSTER_ID, extra, ELR_SESSION_MS);
    expect_elr_finalized(c, elr);
}

static void test_elr_elects_clean_replica(void **state)
{
    (void)state;
    struct cluster c;
    start(&c, true);
    int32_t observer = -1;
    int32_t b = lose_leader_after_shrink(&c, true, &observer);
    long long deadline = harness_now_ms() + 60000;
    while (leader_seen(&c, observer) != b) {
        if (harness_now_ms() > deadline)
            fail_msg("elr-0 is not led by the ELR member %d", (int)b);
        usleep(200 * 1000);
    }
    long want[1] = {ACKED};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[b - 1]), "elr", 1, want, 60000, &set), ACKED);
    rk_record_set_free(&set);
    cluster_stop(&c);
}

static void test_without_elr_stays_offline(void **state)
{
    (void)state;
    struct cluster c;
    start(&c, false);
    int32_t observer = -1;
    int32_t b = lose_leader_after_shrink(&c, false, &observer);
    /* B is live and has every acknowledged record, but is no ISR member:
     * the partition waits for A. Watched for a while, it stays leaderless. */
    long long until = harness_now_ms() + 5000;
    int offline_views = 0;
    while (harness_now_ms() < until) {
        int32_t leader = leader_seen(&c, observer);
        if (leader >= 0)
            fail_msg("elr-0 elected %d without ELR (the paused replica: %d)", (int)leader, (int)b);
        offline_views += leader == -1;
        usleep(200 * 1000);
    }
    if (offline_views == 0)
        fail_msg("node %d never answered Metadata for elr-0", (int)observer);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elr_elects_clean_replica),
        cmocka_unit_test(test_without_elr_stays_offline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
