/* Partition reassignment (KIP-455) end to end. Three
 * process.roles=broker,controller nodes (ids 1-3) and a fourth,
 * process.roles=broker; a topic with one partition on {1,2,3} and an
 * idempotent acks=all producer writing throughout.
 *  - every node's ApiVersions lists keys 45 and 46; the pure broker
 *    forwards AlterPartitionReassignments to the active controller;
 *  - `cairn reassign` refuses an unknown partition, an unregistered or
 *    duplicate broker, and a cancel when nothing moves, with Kafka's codes;
 *    v1 with AllowReplicationFactorChange false refuses a changed replica
 *    count with INVALID_REPLICATION_FACTOR (KIP-860);
 *  - with broker 4 stopped (SIGSTOP) a reassignment to {2,3,4} stays under
 *    way (listed with adding [4], removing [1]); cancelled, the partition is
 *    back on {1,2,3} and the list is empty;
 *  - with broker 4 running, the reassignment to {2,3,4} completes: the list
 *    empties, Metadata names replicas {2,3,4} with an ISR inside them,
 *    broker 1 deletes its copy, broker 4's log is byte for byte the new
 *    leader's, and every acknowledged record is read exactly once;
 *  - a 2 MB move onto broker 4 (follower.replication.throttled.rate
 *    THROTTLE_RATE) of a topic naming 0:4 in
 *    follower.replication.throttled.replicas takes at least 2 MB / rate (a
 *    value other than "*" or partition:broker pairs is INVALID_CONFIG);
 *    its completion drops broker 3 under leader 1 and bumps the leader
 *    epoch: a Fetch at the old epoch is FENCED_LEADER_EPOCH;
 *  - `cairn reassign generate` proposes a balanced assignment over brokers
 *    1-3 (docs/cli.md's example), and its start command completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "cli_runner.h"
#include "leader_cluster.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define TOPIC "moved"
#define MAX_RECORDS 200000
#define WAIT_MS 60000
/* Broker 4's follower.replication.throttled.rate, and what the throttled
 * topic holds: 2 MB take at least 4 s to copy at that rate. */
#define THROTTLE_RATE 500000
#define SLOW_RECORDS 100
#define SLOW_VALUE_BYTES 20000

#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

static struct cluster g_cluster;
static long long g_t0;
/* Progress on stdout, with the time since the test began. */
#define STAGE(what) printf("[reassign] %6lld ms: %s\n", harness_now_ms() - g_t0, (what))
static struct test_broker g_four;
static char g_bootstrap[128];

/* ---- the producer running throughout ---- */

static struct producer_state {
    pthread_t thread;
    atomic_bool stop;
    atomic_int sent;
    unsigned char acked[MAX_RECORDS]; /* by record number: delivery report said ok */
    atomic_long acked_count, failed_count;
} g_prod;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    intptr_t n = (intptr_t)m->_private;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        g_prod.acked[n] = 1;
        atomic_fetch_add(&g_prod.acked_count, 1);
    } else {
        atomic_fetch_add(&g_prod.failed_count, 1);
    }
}

static void *produce_loop(void *arg)
{
    (void)arg;
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers", g_bootstrap, "enable.idempotence", "true",   "acks", "all",
                        "linger.ms",         "5",         "message.timeout.ms", "120000", NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            return NULL;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk)
        return NULL;
    for (int n = 0; !atomic_load(&g_prod.stop) && n < MAX_RECORDS; n++) {
        char value[32];
        int len = snprintf(value, sizeof value, "r-%d", n);
        while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(TOPIC), RD_KAFKA_V_PARTITION(0),
                                 RD_KAFKA_V_VALUE(value, (size_t)len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_OPAQUE((void *)(intptr_t)n), RD_KAFKA_V_END) != RD_KAFKA_RESP_ERR_NO_ERROR)
            rd_kafka_poll(rk, 50);
        atomic_store(&g_prod.sent, n + 1);
        rd_kafka_poll(rk, 0);
        usleep(2000); /* a steady trickle, a few hundred records a second */
    }
    rd_kafka_flush(rk, 120000);
    rd_kafka_destroy(rk);
    return NULL;
}

/* ---- helpers ---- */

static const char *four_node_bootstrap(void)
{
    size_t used = 0;
    for (int i = 0; i < N; i++)
        used += (size_t)snprintf(g_bootstrap + used, sizeof g_bootstrap - used, "%s%s", i ? "," : "",
                                 broker_bootstrap(&g_cluster.nodes[i]));
    return g_bootstrap;
}

/* `cairn topic describe` of topic from node: replicas, ISR, leader and
 * leader epoch of partition 0 (epoch may be NULL). */
static bool describe_topic(const char *topic, int node, int32_t *replicas, int *rn, int32_t *isr, int *in,
                           int32_t *leader, int32_t *epoch)
{
    struct run r;
    const char *b = node == 4 ? broker_bootstrap(&g_four) : broker_bootstrap(&g_cluster.nodes[node - 1]);
    RUN(&r, "topic", "describe", topic, "-b", b, "--format", "json");
    if (r.code != 0)
        return false;
    json_t *j = parse_json(&r);
    json_t *p = json_array_get(json_object_get(j, "partitions"), 0);
    bool ok = p != NULL;
    *rn = *in = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(p, "replicas"), i, v) replicas[(*rn)++] = (int32_t)json_integer_value(v);
    json_array_foreach(json_object_get(p, "isr"), i, v) isr[(*in)++] = (int32_t)json_integer_value(v);
    *leader = (int32_t)json_integer_value(json_object_get(p, "leader"));
    if (epoch)
        *epoch = (int32_t)json_integer_value(json_object_get(p, "leader_epoch"));
    json_decref(j);
    return ok;
}

static bool describe(int node, int32_t *replicas, int *rn, int32_t *isr, int *in, int32_t *leader)
{
    return describe_topic(TOPIC, node, replicas, rn, isr, in, leader, NULL);
}

static bool same_ids(const int32_t *a, int an, const int32_t *b, int bn)
{
    return an == bn && memcmp(a, b, (size_t)an * sizeof *a) == 0;
}

static bool subset(const int32_t *a, int an, const int32_t *of, int on)
{
    for (int i = 0; i < an; i++) {
        bool found = false;
        for (int k = 0; k < on; k++)
            found |= a[i] == of[k];
        if (!found)
            return false;
    }
    return true;
}

/* Waits until node 2's Metadata has want as replicas with an ISR inside
 * them (all of them when full_isr) and a leader among them. */
static int32_t wait_replicas(const int32_t *want, int wn, bool full_isr, bool any_order)
{
    long long until = harness_now_ms() + WAIT_MS;
    int32_t reps[16], isr[16], leader = -1;
    int rn = 0, in = 0;
    for (;;) {
        if (describe(2, reps, &rn, isr, &in, &leader) &&
            (any_order ? rn == wn && subset(reps, rn, want, wn) : same_ids(reps, rn, want, wn)) && in > 0 &&
            subset(isr, in, want, wn) && (!full_isr || in == wn) && subset(&leader, 1, want, wn))
            return leader;
        if (harness_now_ms() > until)
            fail_msg("replicas of %s-0: %d listed (first %d), leader %d, ISR %d member(s), not the wanted ones", TOPIC,
                     rn, rn > 0 ? reps[0] : -1, leader, in);
        usleep(200 * 1000);
    }
}

/* `cairn reassign list` as JSON (the caller json_decref()s it). */
static json_t *list_reassignments(void)
{
    struct run r;
    RUN(&r, "reassign", "list", "-b", broker_bootstrap(&g_cluster.nodes[1]), "--format", "json");
    expect(&r, 0, NULL, NULL);
    return parse_json(&r);
}

static void wait_no_reassignment(void)
{
    long long until = harness_now_ms() + WAIT_MS;
    for (;;) {
        json_t *j = list_reassignments();
        size_t n = json_array_size(j);
        json_decref(j);
        if (n == 0)
            return;
        if (harness_now_ms() > until)
            fail_msg("a reassignment is still listed after %d ms", WAIT_MS);
        usleep(200 * 1000);
    }
}

static bool has_partition_dir(const struct test_broker *b)
{
    DIR *d = opendir(b->data_dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while ((e = readdir(d)))
        found |= strncmp(e->d_name, TOPIC "-0", strlen(TOPIC "-0")) == 0;
    closedir(d);
    return found;
}

/* The bytes of the partition's first segment on b; NULL when absent. */
static char *segment_bytes(const struct test_broker *b, size_t *len)
{
    char path[800];
    snprintf(path, sizeof path, "%s/" TOPIC "-0/00000000000000000000.log", b->data_dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) != NULL) {
        *len = fread(buf, 1, (size_t)st.st_size, f);
    }
    fclose(f);
    return buf;
}

static const struct test_broker *node_of(int32_t id)
{
    return id == 4 ? &g_four : &g_cluster.nodes[id - 1];
}

/* ---- the test ---- */

static void start_cluster(void)
{
    replicated_cluster_start(&g_cluster, CLUSTER_ID, NULL);
    char voters[256] = "", voters_kv[300];
    for (int i = 0; i < N; i++) {
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1,
                 g_cluster.controller_ports[i]);
    }
    snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
    const char *overrides[] = {"node.id=4", voters_kv, "process.roles=broker", "controller.listener.names=CONTROLLER",
                               "cluster.id=" CLUSTER_ID, "controller.quorum.election.timeout.ms=1000",
                               "controller.quorum.fetch.timeout.ms=2000", "broker.heartbeat.interval.ms=500",
                               "broker.session.timeout.ms=60000", "replica.fetch.backoff.ms=200",
                               "follower.replication.throttled.rate=" TEXT(THROTTLE_RATE),
                               /* Small fetches: the throttle's first period (from start) lets one through free. */
                               "replica.fetch.max.bytes=100000", NULL};
    broker_start(&g_four, overrides);
    assert_int_equal(net_client_add_node(g_cluster.client, 4, "127.0.0.1", broker_port(&g_four)), 0);
    wait_view(&g_cluster, 1, ALL | (1u << 4), NULL, 0, WAIT_MS);
}

/* ApiVersions of the broker on port lists key 45 at versions 0-1 (v1:
 * KIP-860) and 46 at version 0. */
static void expect_advertised(int port)
{
    int fd = raw_connect(port, 5000);
    assert_true(fd >= 0);
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(fd, 3, 7, &v), 0);
    close(fd);
    for (int16_t key = 45; key <= 46; key++) {
        const struct raw_api_range *range = raw_api_versions_find(&v, key);
        assert_non_null(range);
        assert_int_equal(range->min_version, 0);
        assert_int_equal(range->max_version, key == 45 ? 1 : 0);
    }
}

static void alter_parse(const struct net_client_result *result, void *arg)
{
    const struct alter_partition_reassignments_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m)
        *(int16_t *)arg = m->error_code != 0 ? m->error_code
                          : m->responses_count == 1 && m->responses[0].partitions_count == 1
                              ? m->responses[0].partitions[0].error_code
                              : -2;
}

/* One partition's AlterPartitionReassignments v1 (replicas NULL: cancel)
 * with AllowReplicationFactorChange allow, sent to node as is: its error,
 * -1 when unanswered. */
static int16_t alter_at_v1(int node, const char *topic, int32_t partition, int32_t *replicas, int n, bool allow)
{
    struct alter_partition_reassignments_request_reassignable_partition p;
    alter_partition_reassignments_request_reassignable_partition_init(&p);
    p.partition_index = partition;
    p.replicas = replicas;
    p.replicas_count = replicas ? n : -1;
    struct alter_partition_reassignments_request_reassignable_topic t;
    alter_partition_reassignments_request_reassignable_topic_init(&t);
    t.name = kafka_str_from_cstr(topic);
    t.partitions = &p;
    t.partitions_count = 1;
    struct alter_partition_reassignments_request req;
    alter_partition_reassignments_request_init(&req);
    req.timeout_ms = 10000;
    req.allow_replication_factor_change = allow;
    req.topics = &t;
    req.topics_count = 1;
    int16_t error = -1;
    if (client_call(g_cluster.client, node, 45, 1, &req, 20000, alter_parse, &error) != NET_CLIENT_OK)
        return -1;
    return error;
}

static int16_t alter_at(int node, const char *topic, int32_t partition, int32_t *replicas, int n)
{
    return alter_at_v1(node, topic, partition, replicas, n, true);
}

static void expect_refusals(void)
{
    /* The pure broker forwards to the active controller: its answers are
     * the controller's, not NOT_CONTROLLER. */
    assert_int_equal(alter_at(4, "nope", 0, (int32_t[]){1, 2}, 2), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(alter_at(4, TOPIC, 0, (int32_t[]){2, 5}, 2), KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    assert_int_equal(alter_at(4, TOPIC, 0, NULL, 0), KAFKA_ERR_NO_REASSIGNMENT_IN_PROGRESS);
    /* KIP-860: v1 with AllowReplicationFactorChange false refuses a new
     * replica count, through the forwarding broker and at the controller. */
    assert_int_equal(alter_at_v1(4, TOPIC, 0, (int32_t[]){2, 3}, 2, false), KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(
        alter_at_v1(agreed_controller(&g_cluster, -1, WAIT_MS), TOPIC, 0, (int32_t[]){1, 2, 3, 4}, 4, false),
        KAFKA_ERR_INVALID_REPLICATION_FACTOR);

    const char *b = broker_bootstrap(&g_cluster.nodes[0]);
    struct run r;
    RUN(&r, "reassign", "start", "-b", b, "--topic", "nope", "--partition", "0", "--replicas", "1,2");
    expect(&r, 1, "UNKNOWN_TOPIC_OR_PARTITION", NULL);
    RUN(&r, "reassign", "start", "-b", b, "--topic", TOPIC, "--partition", "7", "--replicas", "1,2");
    expect(&r, 1, "UNKNOWN_TOPIC_OR_PARTITION", NULL);
    RUN(&r, "reassign", "start", "-b", b, "--topic", TOPIC, "--partition", "0", "--replicas", "2,3,9");
    expect(&r, 1, "INVALID_REPLICA_ASSIGNMENT", NULL);
    RUN(&r, "reassign", "start", "-b", b, "--topic", TOPIC, "--partition", "0", "--replicas", "2,2,3");
    expect(&r, 1, "INVALID_REPLICA_ASSIGNMENT", NULL);
    RUN(&r, "reassign", "cancel", "-b", b, "--topic", TOPIC, "--partition", "0");
    expect(&r, 1, "NO_REASSIGNMENT_IN_PROGRESS", NULL);
    json_t *j = list_reassignments();
    assert_int_equal(json_array_size(j), 0);
    json_decref(j);
}

/* Broker 4 stopped: the reassignment cannot complete; cancelled, it leaves
 * the partition as it was. */
static void cancel_stalled_reassignment(void)
{
    const char *b = broker_bootstrap(&g_cluster.nodes[0]);
    assert_int_equal(kill(broker_pid(&g_four), SIGSTOP), 0);
    struct run r;
    RUN(&r, "reassign", "start", "-b", b, "--topic", TOPIC, "--partition", "0", "--replicas", "2,3,4");
    expect(&r, 0, "STARTED", NULL);
    /* Listed with what moves, and still listed a while later. */
    for (int round = 0; round < 2; round++) {
        json_t *j = list_reassignments();
        assert_int_equal(json_array_size(j), 1);
        json_t *e = json_array_get(j, 0);
        assert_string_equal(json_string_value(json_object_get(e, "topic")), TOPIC);
        json_t *add = json_object_get(e, "adding"), *rem = json_object_get(e, "removing");
        assert_int_equal(json_array_size(add), 1);
        assert_int_equal(json_integer_value(json_array_get(add, 0)), 4);
        assert_int_equal(json_array_size(rem), 1);
        assert_int_equal(json_integer_value(json_array_get(rem, 0)), 1);
        assert_int_equal(json_array_size(json_object_get(e, "replicas")), 4);
        json_decref(j);
        if (round == 0) {
            RUN(&r, "reassign", "list", "-b", b, "--topic", TOPIC, "--partition", "0");
            expect(&r, 0, "2,3,4,1", NULL);
            if (!strstr(r.out, "ADDING") || !strstr(r.out, "REMOVING"))
                fail_msg("reassign list prints no table: %s", r.out);
            sleep(3); /* time for a broken completion to show */
        }
    }
    RUN(&r, "reassign", "cancel", "-b", b, "--topic", TOPIC, "--partition", "0");
    expect(&r, 0, "CANCELLED", NULL);
    wait_no_reassignment();
    static const int32_t original[] = {1, 2, 3};
    wait_replicas(original, 3, true, true); /* as Kafka: the target's order first */
    assert_int_equal(kill(broker_pid(&g_four), SIGCONT), 0);
}

static void fetch_parse(const struct net_client_result *result, void *arg)
{
    const struct fetch_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m)
        *(int16_t *)arg = m->error_code != 0 ? m->error_code
                          : m->responses_count == 1 && m->responses[0].partitions_count == 1
                              ? m->responses[0].partitions[0].error_code
                              : -2;
}

/* Fetch v12 of topic-0 at node with current_leader_epoch: the partition's
 * error, -1 when unanswered. */
static int16_t fetch_at_epoch(int node, const char *topic, int32_t epoch)
{
    struct fetch_request_fetch_partition p;
    fetch_request_fetch_partition_init(&p);
    p.partition = 0;
    p.current_leader_epoch = epoch;
    p.partition_max_bytes = 1024;
    struct fetch_request_fetch_topic t;
    fetch_request_fetch_topic_init(&t);
    t.topic = kafka_str_from_cstr(topic);
    t.partitions = &p;
    t.partitions_count = 1;
    struct fetch_request req;
    fetch_request_init(&req);
    req.max_wait_ms = 0;
    req.max_bytes = 4096;
    req.topics = &t;
    req.topics_count = 1;
    int16_t error = -1;
    if (client_call(g_cluster.client, node, 1, 12, &req, 20000, fetch_parse, &error) != NET_CLIENT_OK)
        return -1;
    return error;
}

/* The completion of a move that removes a replica but keeps the leader
 * bumps the leader epoch (Kafka's PartitionChangeBuilder): a fetch at the
 * old epoch is fenced, one at the new epoch served. */
static void expect_epoch_bumped(const char *topic, int32_t leader_before, int32_t epoch_before, const int32_t *target,
                                int tn)
{
    int32_t reps[16], isr[16], leader = -1, epoch = -1;
    int rn = 0, in = 0;
    long long until = harness_now_ms() + WAIT_MS;
    while (!(describe_topic(topic, 2, reps, &rn, isr, &in, &leader, &epoch) && same_ids(reps, rn, target, tn))) {
        if (harness_now_ms() > until)
            fail_msg("%s-0 does not reach its target replicas", topic);
        usleep(200 * 1000);
    }
    assert_int_equal(leader, leader_before);
    assert_int_equal(epoch, epoch_before + 1);
    int16_t old_rc = -1, new_rc = -1;
    until = harness_now_ms() + WAIT_MS;
    for (;;) {
        old_rc = fetch_at_epoch(leader, topic, epoch_before);
        new_rc = fetch_at_epoch(leader, topic, epoch);
        if ((old_rc == KAFKA_ERR_FENCED_LEADER_EPOCH && new_rc == KAFKA_ERR_NONE) || harness_now_ms() > until)
            break;
        usleep(200 * 1000);
    }
    assert_int_equal(old_rc, KAFKA_ERR_FENCED_LEADER_EPOCH);
    assert_int_equal(new_rc, KAFKA_ERR_NONE);
}

/* The tool failed with INVALID_CONFIG and a message naming key. */
static void expect_invalid_config(const struct run *r, const char *key)
{
    static char both[2 * OUT_MAX + 2];
    snprintf(both, sizeof both, "%s\n%s", r->out, r->err);
    if (r->code != 1 || !strstr(both, "INVALID_CONFIG") || !strstr(both, key))
        fail_msg("exit %d, want 1 with INVALID_CONFIG naming %s:\n%s", r->code, key, both);
}

/* A move onto broker 4 of a partition whose topic names 0:4 in
 * follower.replication.throttled.replicas copies at most THROTTLE_RATE
 * bytes a second. */
static void throttled_move(void)
{
    int32_t ctl = agreed_controller(&g_cluster, -1, WAIT_MS);
    int32_t replicas[] = {1, 2, 3};
    assert_int_equal(create_assigned(&g_cluster, ctl, "slow", replicas, 3), 0);
    const char *b = broker_bootstrap(&g_cluster.nodes[0]);
    struct run r;
    /* Kafka's ThrottledReplicaListValidator: "*" or partition:broker pairs;
     * anything else is INVALID_CONFIG naming the key (IncrementalAlterConfigs
     * here, CreateTopics below). */
    RUN(&r, "topic", "alter-config", "slow", "-b", b, "--set", "follower.replication.throttled.replicas=0-4");
    expect_invalid_config(&r, "follower.replication.throttled.replicas");
    RUN(&r, "topic", "create", "unthrottled", "-b", b, "-c", "leader.replication.throttled.replicas=all");
    expect_invalid_config(&r, "leader.replication.throttled.replicas");
    RUN(&r, "topic", "alter-config", "slow", "-b", b, "--set", "follower.replication.throttled.replicas=0:4");
    expect(&r, 0, NULL, NULL);
    /* One record a batch: fetches stay near replica.fetch.max.bytes. */
    const char *conf[] = {"acks", "all", "batch.num.messages", "1", NULL};
    rd_kafka_t *p = rk_producer_new(g_bootstrap, conf);
    char *value = malloc(SLOW_VALUE_BYTES);
    memset(value, 'v', SLOW_VALUE_BYTES);
    for (int m = 0; m < SLOW_RECORDS; m++)
        assert_int_equal(rk_produce_blocking(p, "slow", 0, NULL, 0, value, SLOW_VALUE_BYTES, 0, NULL, NULL), 0);
    rd_kafka_flush(p, 60000);
    assert_int_equal(rk_producer_stats(p)->delivered, SLOW_RECORDS);
    rk_producer_destroy(p);
    free(value);
    int32_t reps[16], isr[16], leader = -1, epoch = -1;
    int rn = 0, in = 0;
    assert_true(describe_topic("slow", 2, reps, &rn, isr, &in, &leader, &epoch));
    long long started = harness_now_ms();
    RUN(&r, "reassign", "start", "-b", b, "--topic", "slow", "--partition", "0", "--replicas", "1,2,4");
    expect(&r, 0, "STARTED", NULL);
    wait_no_reassignment();
    long long took = harness_now_ms() - started;
    /* Broker 3 removed, leader 1 kept: the epoch moves all the same. */
    expect_epoch_bumped("slow", leader, epoch, (const int32_t[]){1, 2, 4}, 3);
    double floor_ms = 1000.0 * SLOW_RECORDS * SLOW_VALUE_BYTES / THROTTLE_RATE;
    /* Less one check interval's allowance the throttle lets through. */
    if ((double)took < floor_ms * 0.7)
        fail_msg("the throttled move took %lld ms, %.0f ms at least at %d bytes/s", took, floor_ms * 0.7,
                 THROTTLE_RATE);
    printf("throttled move of %d bytes: %lld ms\n", SLOW_RECORDS * SLOW_VALUE_BYTES, took);
}

/* The generate run docs/cli.md shows: the assignment after the moves
 * above, and the proposal over brokers 1-3 (kept replicas, one added). */
static const char g_generated[] =
    "Current partition replica assignment (to roll back)\n"
    "{\"version\":1,\"partitions\":[{\"topic\":\"moved\",\"partition\":0,\"replicas\":[2,3,4]},"
    "{\"topic\":\"slow\",\"partition\":0,\"replicas\":[1,2,4]}]}\n"
    "\n"
    "Proposed partition reassignment configuration\n"
    "{\"version\":1,\"partitions\":[{\"topic\":\"moved\",\"partition\":0,\"replicas\":[2,3,1]},"
    "{\"topic\":\"slow\",\"partition\":0,\"replicas\":[1,2,3]}]}\n"
    "\n"
    "To apply it:\n"
    "cairn reassign start --topic moved --partition 0 --replicas 2,3,1\n"
    "cairn reassign start --topic slow --partition 0 --replicas 1,2,3\n";

/* `cairn reassign generate` (kafka-reassign-partitions --generate) over
 * brokers 1-3: the current assignment, a balanced proposal keeping what
 * it can, and the start commands; TOPIC's is run and completes. */
static void generate_and_apply(void)
{
    const char *b = broker_bootstrap(&g_cluster.nodes[0]);
    struct run r;
    RUN(&r, "reassign", "generate", "-b", b, "--topics", TOPIC ",slow", "--broker-list", "1,2,3");
    expect(&r, 0, NULL, NULL);
    if (strcmp(r.out, g_generated) != 0)
        fail_msg("reassign generate printed:\n%s\nnot:\n%s", r.out, g_generated);
    static char doc[300000];
    FILE *f = fopen(CAIRN_SOURCE_DIR "/docs/cli.md", "r");
    assert_non_null(f);
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    static char shown[sizeof g_generated + 128];
    snprintf(shown, sizeof shown, "$ cairn reassign generate --topics moved,slow --broker-list 1,2,3\n%s", g_generated);
    if (!strstr(doc, shown))
        fail_msg("docs/cli.md does not show:\n%s", shown);
    RUN(&r, "reassign", "generate", "-b", b, "--topics", "slow", "--broker-list", "1,2", "--format", "json");
    expect(&r, 2, NULL, "slow-0 has 3 replicas, more than the 2 brokers given");
    RUN(&r, "reassign", "generate", "-b", b, "--topics", "nope", "--broker-list", "1,2,3");
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION");
    RUN(&r, "reassign", "generate", "-b", b, "--topics", TOPIC, "--broker-list", "1,2,3", "--format", "json");
    expect(&r, 0, NULL, NULL);
    json_t *j = parse_json(&r);
    json_t *cur = json_array_get(json_object_get(json_object_get(j, "current"), "partitions"), 0);
    json_t *prop = json_array_get(json_object_get(json_object_get(j, "proposed"), "partitions"), 0);
    assert_int_equal(json_array_size(json_object_get(cur, "replicas")), 3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(prop, "replicas"), 2)), 1);
    json_decref(j);
    /* The printed command applies it. */
    RUN(&r, "reassign", "start", "-b", b, "--topic", TOPIC, "--partition", "0", "--replicas", "2,3,1");
    expect(&r, 0, "STARTED", NULL);
    wait_no_reassignment();
    static const int32_t proposed[] = {2, 3, 1};
    wait_replicas(proposed, 3, false, false);
}

static void test_reassignment_completes_and_cancels(void **state)
{
    (void)state;
    snprintf(g_home, sizeof g_home, "/tmp/cairn-reassign-home-XXXXXX");
    assert_non_null(mkdtemp(g_home));
    g_t0 = harness_now_ms();
    start_cluster();
    STAGE("four brokers up");
    expect_advertised(broker_port(&g_cluster.nodes[0]));
    expect_advertised(broker_port(&g_four));
    int32_t ctl = agreed_controller(&g_cluster, -1, WAIT_MS);
    int32_t replicas[] = {1, 2, 3};
    assert_int_equal(create_assigned(&g_cluster, ctl, TOPIC, replicas, 3), 0);
    wait_replicas(replicas, 3, true, false);
    four_node_bootstrap();
    assert_int_equal(pthread_create(&g_prod.thread, NULL, produce_loop, NULL), 0);
    long long until = harness_now_ms() + WAIT_MS;
    while (atomic_load(&g_prod.acked_count) < 200 && harness_now_ms() < until)
        usleep(50 * 1000);
    assert_true(atomic_load(&g_prod.acked_count) >= 200);

    STAGE("producing");
    expect_refusals();
    STAGE("refusals checked");
    cancel_stalled_reassignment();
    STAGE("stalled reassignment cancelled");

    /* The real move, producing throughout. */
    long acked_before = atomic_load(&g_prod.acked_count);
    struct run r;
    RUN(&r, "reassign", "start", "-b", broker_bootstrap(&g_cluster.nodes[2]), "--topic", TOPIC, "--partition", "0",
        "--replicas", "2,3,4");
    expect(&r, 0, "STARTED", NULL);
    wait_no_reassignment();
    static const int32_t target[] = {2, 3, 4};
    STAGE("reassignment complete");
    int32_t leader = wait_replicas(target, 3, false, false);
    /* Broker 1 drops its copy, promptly: not once a produce waiting there
     * times out (librdkafka's request.timeout.ms, 30 s); broker 4 holds one. */
    until = harness_now_ms() + 20000;
    while (has_partition_dir(&g_cluster.nodes[0]) && harness_now_ms() < until)
        usleep(200 * 1000);
    assert_false(has_partition_dir(&g_cluster.nodes[0]));
    assert_true(has_partition_dir(&g_four));
    STAGE("broker 1's copy deleted");
    /* More records through the new replicas, then stop. */
    until = harness_now_ms() + WAIT_MS;
    while (atomic_load(&g_prod.acked_count) < acked_before + 500 && harness_now_ms() < until)
        usleep(50 * 1000);
    atomic_store(&g_prod.stop, true);
    pthread_join(g_prod.thread, NULL);
    long acked = atomic_load(&g_prod.acked_count);
    assert_true(acked >= acked_before + 500);
    assert_int_equal(atomic_load(&g_prod.failed_count), 0);

    STAGE("producer stopped");
    /* Every acknowledged record exactly once, read from the new replicas. */
    long want = acked;
    struct rk_record_set set = {0};
    char bs[160];
    snprintf(bs, sizeof bs, "%s,%s", broker_bootstrap(&g_cluster.nodes[1]), broker_bootstrap(&g_four));
    long got = rk_consume_all(bs, TOPIC, 1, &want, WAIT_MS, &set);
    assert_true(got >= acked);
    int sent = atomic_load(&g_prod.sent);
    unsigned char *seen = calloc((size_t)sent + 1, 1);
    for (size_t i = 0; i < set.count; i++) {
        int n = -1;
        char v[32] = "";
        memcpy(v, set.records[i].value, set.records[i].value_len < 31 ? set.records[i].value_len : 31);
        assert_int_equal(sscanf(v, "r-%d", &n), 1);
        assert_true(n >= 0 && n < sent);
        if (seen[n]++)
            fail_msg("record r-%d read twice", n);
    }
    for (int n = 0; n < sent; n++)
        if (g_prod.acked[n] && !seen[n])
            fail_msg("acknowledged record r-%d is missing", n);
    free(seen);
    rk_record_set_free(&set);

    /* Broker 4's log is the leader's, byte for byte (once it caught up). */
    if (leader != 4) {
        until = harness_now_ms() + WAIT_MS;
        for (;;) {
            size_t la = 0, lb = 0;
            char *a = segment_bytes(node_of(leader), &la), *b = segment_bytes(&g_four, &lb);
            bool same = a && b && la == lb && la > 0 && memcmp(a, b, la) == 0;
            free(a);
            free(b);
            if (same)
                break;
            if (harness_now_ms() > until)
                fail_msg("broker 4's log of %s-0 differs from leader %d's", TOPIC, leader);
            usleep(200 * 1000);
        }
    }
    STAGE("records and logs checked");
    throttled_move();
    STAGE("throttled move done");
    generate_and_apply();
    STAGE("generated assignment applied");
    broker_stop(&g_four);
    broker_mark_passed(&g_four);
    broker_cleanup(&g_four);
    cluster_stop(&g_cluster);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reassignment_completes_and_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
