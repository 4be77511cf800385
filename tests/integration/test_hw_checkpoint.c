/* The high watermark checkpoint (replication-offset-checkpoint) between
 * three cairnd processes (process.roles=broker,controller on one quorum):
 * every node writes the partition's high watermark, in Kafka's text format,
 * every replica.high.watermark.checkpoint.interval.ms; after kill -9 of the
 * whole cluster and a restart, the high watermark starts at least at the
 * checkpointed value and a consumer reads every acknowledged record. A
 * record the ISR never had (a follower down, min.insync.replicas=3) stays
 * above the restored high watermark after the leader and the other
 * follower restart, until the missing follower is back and has it. */
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

#define CLUSTER_ID "SFdDaGVja3BvaW50VGVzdA"
/* broker.session.timeout.ms: how long a broker back from kill -9 waits. */
#define HWC_SESSION_MS 6000

static void cluster_up(struct cluster *c)
{
    static const char *const extra[] = {"replica.high.watermark.checkpoint.interval.ms=300",
                                        "replica.lag.time.max.ms=60000", NULL};
    /* Short sessions: brokers back from kill -9 wait for their previous
     * incarnations' sessions to lapse before they register again. */
    replicated_cluster_start_session(c, CLUSTER_ID, extra, HWC_SESSION_MS);
}

/* The offset the node's replication-offset-checkpoint holds for
 * <topic> 0, -1 when the file or the line is missing; a file not in
 * Kafka's format fails the test. */
static long long checkpointed(const struct test_broker *b, const char *topic)
{
    char path[700];
    snprintf(path, sizeof path, "%s/replication-offset-checkpoint", b->data_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    long long count = -1, found = -1, lines = 0;
    if (!fgets(line, sizeof line, f) || strcmp(line, "0\n") != 0)
        fail_msg("%s: version line is not 0", path);
    if (!fgets(line, sizeof line, f) || sscanf(line, "%lld", &count) != 1)
        fail_msg("%s: no count line", path);
    while (fgets(line, sizeof line, f)) {
        char name[256];
        int partition;
        long long offset;
        if (sscanf(line, "%255s %d %lld", name, &partition, &offset) != 3)
            fail_msg("%s: bad line %s", path, line);
        lines++;
        if (strcmp(name, topic) == 0 && partition == 0)
            found = offset;
    }
    fclose(f);
    if (lines != count)
        fail_msg("%s: count %lld but %lld lines", path, count, lines);
    return found;
}

static void wait_checkpointed(struct cluster *c, int node, const char *topic, long long want, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms, got = -1;
    while ((got = checkpointed(&c->nodes[node], topic)) != want) {
        if (harness_now_ms() > deadline)
            fail_msg("node %d: replication-offset-checkpoint has %s at %lld, want %lld", node + 1, topic, got, want);
        usleep(100 * 1000);
    }
}

/* The high watermark from the partition's leader (ListOffsets), retried
 * while the restarted cluster elects one. */
static int64_t high_watermark(const char *bootstrap, const char *topic)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, NULL);
    long long deadline = harness_now_ms() + 60000;
    int64_t low = -1, high = -1;
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_query_watermark_offsets(rk, topic, 0, &low, &high, 5000)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (harness_now_ms() > deadline)
            fail_msg("ListOffsets %s: %s", topic, rd_kafka_err2name(err));
        usleep(200 * 1000);
    }
    rk_producer_destroy(rk);
    return high;
}

static void test_restart_keeps_acknowledged(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    int32_t leader = create_replicated(&c, "hwc", NULL);
    produce_acked(broker_bootstrap(&c.nodes[leader - 1]), "hwc", 1, 300);
    /* Followers learn the high watermark from the leader's answers. */
    for (int i = 0; i < N; i++)
        wait_checkpointed(&c, i, "hwc", 300, 30000);

    for (int i = 0; i < N; i++)
        broker_kill9(&c.nodes[i]);
    for (int i = 0; i < N; i++)
        broker_respawn(&c.nodes[i]);
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c.nodes[i]);
    int64_t hw = high_watermark(broker_bootstrap(&c.nodes[0]), "hwc");
    if (hw < 300)
        fail_msg("high watermark after the restart is %lld, below the checkpointed 300", (long long)hw);
    long want[1] = {300};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[0]), "hwc", 1, want, 60000, &set), 300);
    rk_record_set_free(&set);
    cluster_stop(&c);
}

/* The partition's leader in node's Metadata answer, -1 when none. */
static int32_t partition_leader(struct cluster *c, int node, const char *topic)
{
    struct view v;
    return metadata(c, node, topic, &v) && v.partitions > 0 ? v.p[0].leader : -1;
}

/* min.insync.replicas=3 and a follower down: an acks=all record times out,
 * in the leader's log (and maybe the other follower's) but above the high
 * watermark. The leader and the other follower killed -9 and restarted at
 * once are new incarnations, refused registration
 * (DUPLICATE_BROKER_REGISTRATION, as from Kafka's controller) until their
 * previous sessions lapse: they stay out that long. The dead follower's
 * session lapses with theirs and it is fenced first, so the partition comes
 * back led by a restarted broker, never by the dead one, with the
 * checkpointed high watermark as its floor. (The timed-out record is
 * committed if the ISR left holds it, as in Kafka without KIP-966.) */
static void test_restart_with_follower_down(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    const char *configs[] = {"min.insync.replicas", "3", NULL};
    int32_t leader = create_replicated(&c, "hwd", configs);
    produce_acked(broker_bootstrap(&c.nodes[leader - 1]), "hwd", 1, 200);
    for (int i = 0; i < N; i++)
        wait_checkpointed(&c, i, "hwd", 200, 30000);
    int follower = leader % N + 1, other = follower % N + 1;
    broker_kill9(&c.nodes[follower - 1]);
    const char *conf[] = {"enable.idempotence", "false", "acks", "all", "retries", "0", "request.timeout.ms", "2000",
                          "message.timeout.ms", "30000", NULL};
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&c.nodes[leader - 1]), conf);
    assert_int_equal(rk_produce_one_delivered(p, "hwd"), RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
    rk_producer_destroy(p);
    usleep(1000 * 1000); /* at least three checkpoint intervals: the files keep 200 */
    wait_checkpointed(&c, leader - 1, "hwd", 200, 1000);
    wait_checkpointed(&c, other - 1, "hwd", 200, 1000);

    broker_kill9(&c.nodes[leader - 1]);
    broker_kill9(&c.nodes[other - 1]);
    long long restart_at = harness_now_ms();
    broker_respawn(&c.nodes[leader - 1]);
    broker_respawn(&c.nodes[other - 1]);
    broker_wait_ready(&c.nodes[leader - 1]);
    broker_wait_ready(&c.nodes[other - 1]);
    /* A lower bound only: load makes it longer, never shorter. Registered
     * again at once (without the refusal), they were ready in ~2 s. */
    long long out_ms = harness_now_ms() - restart_at;
    fprintf(stderr, "[test] restarted brokers ready %lld ms after the restart\n", out_ms);
    if (out_ms < HWC_SESSION_MS - 1000)
        fail_msg("brokers back from kill -9 were ready after %lld ms, within their previous sessions (%d ms)", out_ms,
                 HWC_SESSION_MS);
    int32_t now_leader = -1;
    long long deadline = harness_now_ms() + 60000;
    while ((now_leader = partition_leader(&c, leader, "hwd")) != leader && now_leader != other) {
        if (harness_now_ms() > deadline)
            fail_msg("hwd-0 led by %d after the restart, not by a restarted broker", now_leader);
        usleep(200 * 1000);
    }
    int64_t hw = high_watermark(broker_bootstrap(&c.nodes[leader - 1]), "hwd");
    if (hw < 200 || hw > 201)
        fail_msg("high watermark after the restart is %lld, want the checkpointed 200 or the record's 201",
                 (long long)hw);
    long want[1] = {(long)hw};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[leader - 1]), "hwd", 1, want, 60000, &set), hw);
    rk_record_set_free(&set);

    /* The follower back: it catches up with the same log. */
    broker_restart(&c.nodes[follower - 1]);
    deadline = harness_now_ms() + 90000;
    for (;;) {
        struct view v;
        if (metadata(&c, leader, "hwd", &v) && v.partitions > 0 && v.p[0].isr_count == N)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("broker %d did not rejoin the ISR of hwd-0", follower);
        usleep(200 * 1000);
    }
    struct rk_record_set after = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[follower - 1]), "hwd", 1, want, 60000, &after), hw);
    rk_record_set_free(&after);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_keeps_acknowledged),
        cmocka_unit_test(test_restart_with_follower_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
