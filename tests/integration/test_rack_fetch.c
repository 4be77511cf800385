/* Fetching from the closest replica (KIP-392) through three cairnd
 * processes with broker.rack a, b and c and a topic at replication factor
 * 3. With replica.selector.class set to Kafka's RackAwareReplicaSelector,
 * a librdkafka consumer whose client.rack is a follower's rack reads every
 * record byte for byte, and the follower served it: its
 * cairn_fetch_follower_reads_total grows and the leader's
 * cairn_fetch_preferred_replica_total counts the redirect. A consumer
 * without client.rack reads from the leader (no follower counts a read).
 * Without the selector a consumer with client.rack reads from the leader
 * and no broker redirects or serves as follower. Byte-level Fetch v12
 * answers check the redirect, the follower's bounds (high watermark;
 * read_committed stops at its last stable offset while a transaction is
 * open), out-of-range past its log end, and a broker holding no replica
 * (NOT_LEADER_OR_FOLLOWER). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "protocol/generated/fetch_request.h"
#include "protocol/generated/fetch_response.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORDS 300
#define API_FETCH 1
#define FOLLOWER_WAIT_MS 10000
#define FOLLOWER_WAIT_MS_TEXT "10000"
#define ERR_NOT_LEADER_OR_FOLLOWER 6
#define ERR_OFFSET_OUT_OF_RANGE 1
#define RACK_AWARE "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"

static const char *const racks[N] = {"a", "b", "c"};

static void cluster_up(struct cluster *c, const char *cluster_id, bool selector)
{
    /* Followers' fetches wait long for data: a follower learns a moved
     * high watermark at once only because the leader answers it then. */
    static const char *const settings[] = {"replica.fetch.backoff.ms=200",
                                           "replica.fetch.wait.max.ms=" FOLLOWER_WAIT_MS_TEXT, NULL};
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

/* One partition of a Fetch answer, read byte by byte. */
struct wire_answer {
    int16_t error;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int32_t preferred_read_replica;
    int32_t records_bytes;
    int64_t last_offset; /* of the last batch returned, -1: none */
};

static void wire_parse(const struct net_client_result *result, void *arg)
{
    struct wire_answer *a = arg;
    const struct fetch_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m || m->responses_count != 1 || m->responses[0].partitions_count != 1)
        return;
    const struct fetch_response_partition_data *pd = &m->responses[0].partitions[0];
    a->error = pd->error_code;
    a->high_watermark = pd->high_watermark;
    a->last_stable_offset = pd->last_stable_offset;
    a->preferred_read_replica = pd->preferred_read_replica;
    a->records_bytes = pd->records.len;
    /* Batch headers: base offset (8), length (4), ..., last offset delta at 23. */
    const uint8_t *b = pd->records.data;
    for (int64_t pos = 0; b && pos + 27 <= pd->records.len;) {
        int64_t base = 0;
        for (int k = 0; k < 8; k++)
            base = base << 8 | b[pos + k];
        int32_t len = (int32_t)((uint32_t)b[pos + 8] << 24 | (uint32_t)b[pos + 9] << 16 | (uint32_t)b[pos + 10] << 8 |
                                b[pos + 11]);
        int32_t delta = (int32_t)((uint32_t)b[pos + 23] << 24 | (uint32_t)b[pos + 24] << 16 |
                                  (uint32_t)b[pos + 25] << 8 | b[pos + 26]);
        if (len <= 0 || pos + 12 + len > pd->records.len)
            break;
        a->last_offset = base + delta;
        pos += 12 + len;
    }
}

/* A consumer's Fetch v12 (replica_id -1) of partition 0 at node. */
static struct wire_answer wire_fetch(struct cluster *c, int node, const char *topic, int64_t offset,
                                     int32_t leader_epoch, const char *rack, bool read_committed)
{
    struct fetch_request_fetch_partition part;
    fetch_request_fetch_partition_init(&part);
    part.partition = 0;
    part.fetch_offset = offset;
    part.current_leader_epoch = leader_epoch;
    part.partition_max_bytes = 1 << 20;
    struct fetch_request_fetch_topic t;
    fetch_request_fetch_topic_init(&t);
    t.topic = kafka_str_from_cstr(topic);
    t.partitions = &part;
    t.partitions_count = 1;
    struct fetch_request req;
    fetch_request_init(&req);
    req.replica_id = -1;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.isolation_level = read_committed ? 1 : 0;
    req.session_epoch = -1;
    req.topics = &t;
    req.topics_count = 1;
    req.rack_id = kafka_str_from_cstr(rack ? rack : "");
    struct wire_answer a = {.error = -1, .preferred_read_replica = -2, .last_offset = -1};
    assert_int_equal(client_call(c->client, node, API_FETCH, 12, &req, 10000, wire_parse, &a), NET_CLIENT_OK);
    return a;
}

/* Byte-level answers: the leader's redirect, the follower's reads bounded
 * by its high watermark and last stable offset, out-of-range handling,
 * and a broker that is no replica. */
static void check_wire_answers(struct cluster *c, const char *topic, int32_t leader, int32_t follower)
{
    struct view v;
    assert_true(metadata(c, leader, topic, &v));
    int32_t epoch = v.p[0].leader_epoch;

    struct wire_answer a = wire_fetch(c, leader, topic, 0, epoch, racks[follower - 1], false);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.preferred_read_replica, follower);
    assert_true(a.records_bytes <= 0);
    assert_int_equal(a.high_watermark, RECORDS);
    /* In the leader's rack, or naming none: the leader serves. */
    a = wire_fetch(c, leader, topic, 0, epoch, racks[leader - 1], false);
    assert_int_equal(a.preferred_read_replica, -1);
    assert_true(a.records_bytes > 0);
    a = wire_fetch(c, leader, topic, 0, epoch, NULL, false);
    assert_int_equal(a.preferred_read_replica, -1);
    assert_true(a.records_bytes > 0);

    /* The follower serves from its own log, up to its high watermark. */
    a = wire_fetch(c, follower, topic, 0, epoch, racks[follower - 1], false);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.preferred_read_replica, -1);
    assert_int_equal(a.high_watermark, RECORDS);
    assert_true(a.records_bytes > 0 && a.last_offset < RECORDS);
    /* At its high watermark: nothing yet, no error. */
    a = wire_fetch(c, follower, topic, RECORDS, epoch, NULL, false);
    assert_int_equal(a.error, 0);
    assert_true(a.records_bytes <= 0);
    /* Past its log end: out of range for a client that knows the epoch
     * (it asks the leader), empty for one that sent none (KAFKA-14255). */
    a = wire_fetch(c, follower, topic, RECORDS + 1000, epoch, NULL, false);
    assert_int_equal(a.error, ERR_OFFSET_OUT_OF_RANGE);
    a = wire_fetch(c, follower, topic, RECORDS + 1000, -1, NULL, false);
    assert_int_equal(a.error, 0);
    assert_true(a.records_bytes <= 0);

    /* A broker that holds no replica answers NOT_LEADER_OR_FOLLOWER. */
    const char *narrow = "two-replicas";
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&c->nodes[leader - 1]), NULL);
    char errstr[256];
    assert_int_equal(rk_create_topic_result(admin, narrow, 1, 2, NULL, false, errstr, sizeof errstr), 0);
    rk_producer_destroy(admin);
    struct view nv = wait_view(c, leader, ALL, narrow, 1, 20000);
    int32_t outsider = -1;
    for (int32_t n = 1; n <= N; n++) {
        bool replica = false;
        for (int i = 0; i < nv.p[0].isr_count; i++)
            replica |= nv.p[0].isr[i] == n;
        if (!replica)
            outsider = n;
    }
    assert_true(outsider >= 1 && nv.p[0].isr_count == 2);
    /* Until its image has the topic it would answer UNKNOWN_TOPIC_OR_PARTITION. */
    wait_view(c, outsider, ALL, narrow, 1, 20000);
    a = wire_fetch(c, outsider, narrow, 0, -1, racks[outsider - 1], false);
    assert_int_equal(a.error, ERR_NOT_LEADER_OR_FOLLOWER);
}

/* An open transaction holds the follower's last stable offset: a
 * read_committed consumer there stops before it, one reading uncommitted
 * sees up to the high watermark. */
static void check_follower_lso(struct cluster *c, const char *topic, int32_t leader, int32_t follower)
{
    const char *conf[] = {"transactional.id", "rack-fetch-txn", "acks", "all", NULL};
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&c->nodes[leader - 1]), conf);
    rk_expect_ok(rd_kafka_init_transactions(p, 30000), "init_transactions");
    rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
    assert_int_equal(rk_produce_blocking(p, topic, 0, NULL, 0, "open", 4, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* The leader answers the follower's waiting fetch once the high
     * watermark passes what it sent, well before the fetch's wait ends. */
    long long started = harness_now_ms(), deadline = started + 3 * FOLLOWER_WAIT_MS;
    struct wire_answer a;
    while ((a = wire_fetch(c, follower, topic, 0, -1, NULL, true)).high_watermark != RECORDS + 1) {
        if (harness_now_ms() > deadline)
            fail_msg("follower %d: high watermark %lld, want %d", (int)follower, (long long)a.high_watermark,
                     RECORDS + 1);
        usleep(100 * 1000);
    }
    long long took = harness_now_ms() - started;
    print_message("follower %d saw the new high watermark %lld ms after the produce was acknowledged\n", (int)follower,
                  took);
    assert_true(took < FOLLOWER_WAIT_MS / 2);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.last_stable_offset, RECORDS);
    assert_true(a.records_bytes > 0 && a.last_offset < RECORDS);
    struct wire_answer u = wire_fetch(c, follower, topic, RECORDS, -1, NULL, false);
    assert_int_equal(u.last_offset, RECORDS);
    struct wire_answer committed = wire_fetch(c, follower, topic, RECORDS, -1, NULL, true);
    assert_true(committed.records_bytes <= 0);
    rk_expect_ok(rd_kafka_abort_transaction(p, 30000), "abort_transaction");
    rk_producer_destroy(p);
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
    check_wire_answers(&c, topic, leader, follower);
    check_follower_lso(&c, topic, leader, follower);
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
    /* Byte for byte: no redirect, and a follower serves no consumer. */
    assert_int_equal(wire_fetch(&c, leader, topic, 0, -1, racks[follower - 1], false).preferred_read_replica, -1);
    assert_int_equal(wire_fetch(&c, follower, topic, 0, -1, racks[follower - 1], false).error,
                     ERR_NOT_LEADER_OR_FOLLOWER);
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
