/* Fetching from the closest replica (KIP-392) through three cairnd
 * processes with broker.rack a, b and c and a topic at replication factor
 * 3. With replica.selector.class set to Kafka's RackAwareReplicaSelector,
 * a librdkafka consumer whose client.rack is a follower's rack reads every
 * record byte for byte, and the follower served it: its
 * cairn_fetch_follower_reads_total grows and the leader's
 * cairn_fetch_preferred_replica_total counts the redirect. A consumer
 * without client.rack reads from the leader (no follower counts a read).
 * Without the selector a consumer with client.rack reads from the leader
 * and no broker redirects or serves as follower. */
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

#define RECORDS 300
#define RACK_AWARE "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"

static const char *const racks[N] = {"a", "b", "c"};

static void cluster_up(struct cluster *c, const char *cluster_id, bool selector)
{
    static const char *const settings[] = {"replica.fetch.backoff.ms=200", NULL};
    static const char *const with_selector[] = {RACK_AWARE, NULL};
    struct cluster_options o = {.cluster_id = cluster_id,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 30000,
                                .internal_partitions = 1,
                                .settings = settings,
                                .extra = selector ? with_selector : NULL,
                                .node_setting = {"broker.rack=a", "broker.rack=b", "broker.rack=c"}};
    cluster_start(c, &o);
}

/* Record i's value: binary bytes of a length that varies with i. */
static size_t record_value(int i, uint8_t *out, size_t cap)
{
    size_t len = 1 + (size_t)(i * 37) % (cap - 1);
    for (size_t k = 0; k < len; k++)
        out[k] = (uint8_t)(i * 131 + k * 7);
    return len;
}

static void produce_records(const char *bootstrap, const char *topic)
{
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    for (int i = 0; i < RECORDS; i++) {
        uint8_t value[700];
        size_t len = record_value(i, value, sizeof value);
        assert_int_equal(rk_produce_blocking(p, topic, 0, NULL, 0, value, len, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 60000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);
    assert_int_equal(stats->delivered, RECORDS);
    rk_producer_destroy(p);
}

/* Reads partition 0 from the start with an assigned consumer (client_rack
 * NULL: none set) and checks every record against what was produced. */
static void consume_all(const char *bootstrap, const char *topic, const char *client_rack)
{
    /* assign() wants a group id; nothing joins or commits. */
    const char *with_rack[] = {"group.id",    "rack-fetch", "enable.auto.commit", "false",
                               "client.rack", client_rack,  "fetch.wait.max.ms",  "100",
                               NULL};
    const char *without[] = {"group.id", "rack-fetch", "enable.auto.commit", "false", "fetch.wait.max.ms", "100", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, client_rack ? with_rack : without);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(parts);
    long long deadline = harness_now_ms() + 45000;
    int next = 0;
    while (next < RECORDS) {
        if (harness_now_ms() > deadline)
            fail_msg("client.rack %s: %d of %d records read", client_rack ? client_rack : "(none)", next, RECORDS);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF || m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        uint8_t want[700];
        size_t len = record_value(next, want, sizeof want);
        assert_int_equal(m->offset, next);
        assert_int_equal(m->len, len);
        assert_memory_equal(m->payload, want, len);
        next++;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* An unregistered counter (nothing counted yet) reads 0. */
static long long counter(const struct cluster *c, int node, const char *name)
{
    long long v = metric(c, node, name);
    return v < 0 ? 0 : v;
}

/* Every follower in the ISR, so the leader may choose any of them. */
static void wait_full_isr(struct cluster *c, int32_t leader, const char *topic)
{
    long long deadline = harness_now_ms() + 30000;
    for (;;) {
        struct view v;
        if (metadata(c, leader, topic, &v) && v.partitions == 1 && v.p[0].isr_count == N)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("%s: the ISR never held all %d replicas", topic, N);
        usleep(100 * 1000);
    }
}

static void test_consumer_reads_from_follower_in_its_rack(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c, "UmFja0F3YXJlRmV0Y2gxMQ", true);
    const char *topic = "rack-fetch";
    int32_t leader = create_replicated(&c, topic, NULL);
    assert_true(leader >= 1 && leader <= N);
    int32_t follower = leader % N + 1;
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    produce_records(bootstrap, topic);
    wait_full_isr(&c, leader, topic);

    /* Without client.rack: the leader serves, no follower does. */
    long long reads_before[N + 1];
    for (int n = 1; n <= N; n++)
        reads_before[n] = counter(&c, n, "cairn_fetch_follower_reads_total");
    consume_all(bootstrap, topic, NULL);
    for (int n = 1; n <= N; n++)
        assert_int_equal(counter(&c, n, "cairn_fetch_follower_reads_total"), reads_before[n]);
    assert_int_equal(counter(&c, leader, "cairn_fetch_preferred_replica_total"), 0);

    /* In the follower's rack: sent there, and it serves every record. */
    consume_all(bootstrap, topic, racks[follower - 1]);
    assert_true(counter(&c, leader, "cairn_fetch_preferred_replica_total") >= 1);
    assert_true(counter(&c, follower, "cairn_fetch_follower_reads_total") > reads_before[follower]);
    int32_t other = follower % N + 1;
    if (other == leader)
        other = other % N + 1;
    assert_int_equal(counter(&c, other, "cairn_fetch_follower_reads_total"), reads_before[other]);
    cluster_stop(&c);
}

static void test_without_selector_the_leader_serves(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c, "UmFja0F3YXJlRmV0Y2gyMg", false);
    const char *topic = "leader-only";
    int32_t leader = create_replicated(&c, topic, NULL);
    assert_true(leader >= 1 && leader <= N);
    int32_t follower = leader % N + 1;
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    produce_records(bootstrap, topic);
    wait_full_isr(&c, leader, topic);
    consume_all(bootstrap, topic, racks[follower - 1]);
    for (int n = 1; n <= N; n++) {
        assert_int_equal(counter(&c, n, "cairn_fetch_follower_reads_total"), 0);
        assert_int_equal(counter(&c, n, "cairn_fetch_preferred_replica_total"), 0);
    }
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumer_reads_from_follower_in_its_rack),
        cmocka_unit_test(test_without_selector_the_leader_serves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
