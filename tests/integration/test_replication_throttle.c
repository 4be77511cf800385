/* The leader side of the replication throttle (KIP-73) on real brokers:
 * three process.roles=broker,controller nodes, partitions moved from
 * {1,2} onto broker 3 with `cairn reassign start`, the leaders' topics
 * naming their replicas in leader.replication.throttled.replicas and no
 * follower throttle anywhere. Broker 3's copy of the moving partition is
 * watched on disk (its segment file's size).
 *  - test_leader_throttle_bounds_move: with leader.replication.throttled.rate
 *    LEADER_RATE in the config files, a 2 MB move takes at least about
 *    2 MB / LEADER_RATE;
 *  - test_unthrottled_partition_keeps_up: while a move runs at SLOW_RATE
 *    (set at runtime with `cairn config alter`), acks=all records to a
 *    partition led by broker 1 and followed by broker 3 (the same fetcher)
 *    are acknowledged promptly, and the move is still far from done;
 *  - test_runtime_rate_change: a move copies at most about SLOW_RATE, and
 *    once the rate is raised at runtime (no restart) it completes in a
 *    fraction of the time the old rate would need;
 *  - test_follower_throttle_spares_other_partitions: the same with broker
 *    3's follower.replication.throttled.rate (set at runtime) instead;
 *  - test_cli_throttle_and_verify: `cairn reassign start --throttle` sets
 *    the rates on the brokers involved and the topic's throttled replicas,
 *    the move keeps to the rate, and `cairn reassign verify` removes the
 *    throttle once the move is complete (not before);
 *  - test_cli_keep_replication_factor: `cairn reassign start
 *    --disallow-replication-factor-change` (AlterPartitionReassignments v1,
 *    KIP-860) of a plan that adds a replica is refused with
 *    INVALID_REPLICATION_FACTOR and changes nothing; the same plan without
 *    the flag is accepted (and waited for with --wait --format json: a
 *    started event, then done);
 *  - test_cli_wait: `cairn reassign start --wait --wait-timeout` of a
 *    throttled move gives up with exit 4 while it is under way, and
 *    `cairn reassign verify --wait` prints 0/1 then 1/1 partitions
 *    reassigned (plain lines: stdout is no terminal) and exits 0 once it
 *    is complete; with --format json the same waits print one JSON event
 *    a line (started, progress, timeout; progress, done), as docs/cli.md
 *    shows them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "cli_runner.h"
#include "leader_cluster.h"
#include "rk_helpers.h"

#define WAIT_MS 60000
#define LEADER_RATE 500000
#define SLOW_RATE 100000
#define FAST_RATE 100000000
#define CRAWL_RATE 50000
#define CLI_RATE 400000
#define RECORDS 100
#define VALUE_BYTES 20000
#define MOVE_BYTES ((long long)RECORDS * VALUE_BYTES)
/* replica.fetch.max.bytes of every node: a fetch may overdraw the rate by
 * this much (the quota pays it back before the next). */
#define FETCH_MAX 100000

#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

static struct cluster g_cluster;
static char g_bootstrap[256];

static const char *node_bootstrap(int id)
{
    return broker_bootstrap(&g_cluster.nodes[id - 1]);
}

/* Size of node id's first segment of topic-0 (0 while it has none). */
static long long log_bytes(int id, const char *topic)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%.24s-0/00000000000000000000.log", g_cluster.nodes[id - 1].data_dir, topic);
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static bool reassignment_listed(void)
{
    struct run r;
    RUN(&r, "reassign", "list", "-b", node_bootstrap(2), "--format", "json");
    expect(&r, 0, NULL, NULL);
    json_t *j = parse_json(&r);
    bool any = json_array_size(j) > 0;
    json_decref(j);
    return any;
}

static void wait_no_reassignment(int timeout_ms)
{
    long long until = harness_now_ms() + timeout_ms;
    while (reassignment_listed()) {
        if (harness_now_ms() > until)
            fail_msg("a reassignment is still listed after %d ms", timeout_ms);
        usleep(100 * 1000);
    }
}

static void set_broker_config(int id, const char *kv)
{
    char broker[16];
    snprintf(broker, sizeof broker, "%d", id);
    struct run r;
    RUN(&r, "config", "alter", "--broker", broker, "-b", node_bootstrap(id), "--set", kv);
    expect(&r, 0, NULL, NULL);
}

/* Both possible leaders of a {1,2} partition send at rate (runtime). */
static void set_leader_rate(long long rate)
{
    char kv[96];
    snprintf(kv, sizeof kv, "leader.replication.throttled.rate=%lld", rate);
    set_broker_config(1, kv);
    set_broker_config(2, kv);
}

/* topic on {1,2} holding MOVE_BYTES, its replicas on 1 and 2 named in
 * leader.replication.throttled.replicas (as kafka-reassign-partitions
 * --throttle names the current replicas); no follower throttle. */
static void create_loaded(const char *topic)
{
    int32_t ctl = agreed_controller(&g_cluster, -1, WAIT_MS);
    int32_t replicas[] = {1, 2};
    assert_int_equal(create_assigned(&g_cluster, ctl, topic, replicas, 2), 0);
    wait_view(&g_cluster, 1, ALL, topic, 1, WAIT_MS);
    struct run r;
    RUN(&r, "topic", "alter-config", topic, "-b", node_bootstrap(1), "--set",
        "leader.replication.throttled.replicas=0:1,0:2");
    expect(&r, 0, NULL, NULL);
    /* One record a batch: fetches stay near replica.fetch.max.bytes. */
    const char *conf[] = {"acks", "all", "batch.num.messages", "1", NULL};
    rd_kafka_t *p = rk_producer_new(g_bootstrap, conf);
    char *value = malloc(VALUE_BYTES);
    assert_non_null(value);
    memset(value, 'v', VALUE_BYTES);
    for (int m = 0; m < RECORDS; m++)
        assert_int_equal(rk_produce_blocking(p, topic, 0, NULL, 0, value, VALUE_BYTES, 0, NULL, NULL), 0);
    rd_kafka_flush(p, WAIT_MS);
    assert_int_equal(rk_producer_stats(p)->delivered, RECORDS);
    rk_producer_destroy(p);
    free(value);
}

/* Fails unless broker 3's copy of topic, moving since started_ms, holds
 * no more than rate allows (one fetch's overdraft, the burst and some
 * slack besides), and the move is still listed while it cannot be done. */
static void expect_throttled(const char *topic, long long started_ms, int rate)
{
    long long copied = log_bytes(3, topic);
    double elapsed_s = (double)(harness_now_ms() - started_ms) / 1000.0;
    double allowed = rate * elapsed_s + FETCH_MAX + rate * 0.3 + 50000;
    if ((double)copied > allowed || (allowed < MOVE_BYTES && !reassignment_listed()))
        fail_msg("broker 3 copied %lld of %lld bytes of %s in %.1f s at %d bytes/s: not throttled", copied, MOVE_BYTES,
                 topic, elapsed_s, rate);
}

static void start_move(const char *topic)
{
    struct run r;
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", topic, "--partition", "0", "--replicas", "1,2,3");
    expect(&r, 0, "STARTED", NULL);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_home, sizeof g_home, "/tmp/cairn-throttle-home-XXXXXX");
    if (!mkdtemp(g_home))
        return -1;
    const char *extra[] = {"leader.replication.throttled.rate=" TEXT(LEADER_RATE),
                           "replica.fetch.max.bytes=" TEXT(FETCH_MAX), "replica.fetch.backoff.ms=200", NULL};
    replicated_cluster_start(&g_cluster, CLUSTER_ID, extra);
    snprintf(g_bootstrap, sizeof g_bootstrap, "%s,%s,%s", node_bootstrap(1), node_bootstrap(2), node_bootstrap(3));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cluster_stop(&g_cluster);
    return 0;
}

/* The leader throttle alone, from the config files, bounds a move. */
static void test_leader_throttle_bounds_move(void **state)
{
    (void)state;
    create_loaded("slowa");
    long long started = harness_now_ms();
    start_move("slowa");
    wait_no_reassignment(WAIT_MS);
    long long took = harness_now_ms() - started;
    double floor_ms = 1000.0 * (double)MOVE_BYTES / LEADER_RATE;
    printf("leader-throttled move of %lld bytes at %d bytes/s: %lld ms (%.0f ms at the rate)\n", MOVE_BYTES,
           LEADER_RATE, took, floor_ms);
    /* Less the overdraft of the last fetch and the bucket's burst. */
    if ((double)took < floor_ms * 0.7)
        fail_msg("the leader-throttled move took %lld ms, %.0f ms at least at %d bytes/s", took, floor_ms * 0.7,
                 LEADER_RATE);
    assert_int_equal(log_bytes(3, "slowa"), log_bytes(1, "slowa"));
}

/* A partition the throttle does not name, on the same leader and the
 * same follower (one fetcher), keeps replicating while a move crawls. */
static void test_unthrottled_partition_keeps_up(void **state)
{
    (void)state;
    set_leader_rate(SLOW_RATE);
    create_loaded("slowb");
    int32_t ctl = agreed_controller(&g_cluster, -1, WAIT_MS);
    int32_t replicas[] = {1, 3};
    assert_int_equal(create_assigned(&g_cluster, ctl, "busy", replicas, 2), 0);
    struct view v = wait_view(&g_cluster, 1, ALL, "busy", 1, WAIT_MS);
    long long until = harness_now_ms() + WAIT_MS;
    while ((v.p[0].isr_count != 2 || v.p[0].leader != 1) && harness_now_ms() < until) {
        usleep(100 * 1000);
        metadata(&g_cluster, 1, "busy", &v);
    }
    assert_int_equal(v.p[0].leader, 1);
    assert_int_equal(v.p[0].isr_count, 2); /* acks=all waits for broker 3 */
    const char *conf[] = {"acks", "all", "linger.ms", "0", NULL};
    rd_kafka_t *p = rk_producer_new(g_bootstrap, conf);
    assert_int_equal(rk_produce_one_delivered(p, "busy"), RD_KAFKA_RESP_ERR_NO_ERROR); /* connected */

    long long move_started = harness_now_ms();
    start_move("slowb");
    usleep(500 * 1000);
    long long worst = 0, total = harness_now_ms();
    for (int i = 0; i < 20; i++) {
        long long t = harness_now_ms();
        assert_int_equal(rk_produce_one_delivered(p, "busy"), RD_KAFKA_RESP_ERR_NO_ERROR);
        t = harness_now_ms() - t;
        worst = t > worst ? t : worst;
    }
    total = harness_now_ms() - total;
    long long copied = log_bytes(3, "slowb");
    printf("20 acks=all records to the unthrottled partition: %lld ms, slowest %lld ms; meanwhile broker 3 "
           "copied %lld of %lld bytes of the throttled one\n",
           total, worst, copied, MOVE_BYTES);
    rk_producer_destroy(p);
    /* Each acknowledgement needs broker 3's fetch of it: a throttled
     * partition holding the fetch back would show here. */
    if (worst > 3000)
        fail_msg("an acks=all record to the unthrottled partition took %lld ms", worst);
    /* Meanwhile the throttled move kept to its rate. */
    expect_throttled("slowb", move_started, SLOW_RATE);
    until = harness_now_ms() + 10000;
    while (log_bytes(3, "busy") != log_bytes(1, "busy") && harness_now_ms() < until)
        usleep(100 * 1000);
    assert_int_equal(log_bytes(3, "busy"), log_bytes(1, "busy"));
    struct run r;
    RUN(&r, "reassign", "cancel", "-b", node_bootstrap(1), "--topic", "slowb", "--partition", "0");
    expect(&r, 0, NULL, NULL);
    wait_no_reassignment(WAIT_MS);
}

/* The rate changes at runtime: slow first, then raised, no restart. */
static void test_runtime_rate_change(void **state)
{
    (void)state;
    set_leader_rate(SLOW_RATE);
    create_loaded("slowc");
    start_move("slowc");
    /* A window once broker 3 has started copying. */
    long long until = harness_now_ms() + WAIT_MS;
    while (log_bytes(3, "slowc") == 0 && harness_now_ms() < until)
        usleep(50 * 1000);
    long long t0 = harness_now_ms(), b0 = log_bytes(3, "slowc");
    usleep(3000 * 1000);
    long long t1 = harness_now_ms(), b1 = log_bytes(3, "slowc");
    double window_s = (double)(t1 - t0) / 1000.0;
    printf("at %d bytes/s broker 3 copied %lld bytes in %.1f s\n", SLOW_RATE, b1 - b0, window_s);
    /* The rate over the window, one fetch's overdraft and the burst. */
    double allowed = SLOW_RATE * window_s + FETCH_MAX + SLOW_RATE * 0.3 + 50000;
    if ((double)(b1 - b0) > allowed || b1 >= MOVE_BYTES)
        fail_msg("broker 3 copied %lld bytes in %.1f s (%lld in all), over %.0f at %d bytes/s", b1 - b0, window_s, b1,
                 allowed, SLOW_RATE);
    long long left = MOVE_BYTES - b1;
    long long raised = harness_now_ms();
    set_leader_rate(FAST_RATE);
    wait_no_reassignment(WAIT_MS);
    long long took = harness_now_ms() - raised;
    double old_ms = 1000.0 * (double)left / SLOW_RATE;
    printf("after raising the rate to %d bytes/s the remaining %lld bytes took %lld ms (%.0f ms at the old rate)\n",
           FAST_RATE, left, took, old_ms);
    if ((double)took > old_ms / 2)
        fail_msg("the move took %lld ms after the rate was raised, %.0f ms at the old rate", took, old_ms);
    assert_int_equal(log_bytes(3, "slowc"), log_bytes(1, "slowc"));
}

/* The follower side: broker 3's follower.replication.throttled.rate (set
 * at runtime) holds a move back without holding back the other partition
 * its fetcher from broker 1 carries: throttled partitions sit fetches out
 * while the rate is exceeded, the fetcher does not sleep. */
static void test_follower_throttle_spares_other_partitions(void **state)
{
    (void)state;
    set_leader_rate(FAST_RATE);
    set_broker_config(3, "follower.replication.throttled.rate=" TEXT(CRAWL_RATE));
    create_loaded("slowd");
    struct run r;
    RUN(&r, "topic", "alter-config", "slowd", "-b", node_bootstrap(1), "--set",
        "follower.replication.throttled.replicas=0:3");
    expect(&r, 0, NULL, NULL);
    struct view v;
    assert_true(metadata(&g_cluster, 1, "slowd", &v));
    assert_int_equal(v.p[0].leader, 1); /* the busy partition's leader: one fetcher on broker 3 */
    const char *conf[] = {"acks", "all", "linger.ms", "0", NULL};
    rd_kafka_t *p = rk_producer_new(g_bootstrap, conf);
    assert_int_equal(rk_produce_one_delivered(p, "busy"), RD_KAFKA_RESP_ERR_NO_ERROR);
    long long move_started = harness_now_ms();
    start_move("slowd");
    long long until = harness_now_ms() + WAIT_MS;
    while (log_bytes(3, "slowd") == 0 && harness_now_ms() < until)
        usleep(50 * 1000);
    long long worst = 0, total = harness_now_ms();
    for (int i = 0; i < 20; i++) {
        long long t = harness_now_ms();
        assert_int_equal(rk_produce_one_delivered(p, "busy"), RD_KAFKA_RESP_ERR_NO_ERROR);
        t = harness_now_ms() - t;
        worst = t > worst ? t : worst;
    }
    total = harness_now_ms() - total;
    long long copied = log_bytes(3, "slowd");
    printf("follower throttle at %d bytes/s: 20 acks=all records to the unthrottled partition took %lld ms, "
           "slowest %lld ms; broker 3 copied %lld of %lld bytes of the throttled one\n",
           CRAWL_RATE, total, worst, copied, MOVE_BYTES);
    rk_producer_destroy(p);
    /* A fetcher sleeping off each FETCH_MAX of the throttled partition
     * (2 s at CRAWL_RATE) would hold every record about a second. */
    if (total > 12000)
        fail_msg("20 acks=all records to the unthrottled partition took %lld ms", total);
    expect_throttled("slowd", move_started, CRAWL_RATE);
    RUN(&r, "reassign", "cancel", "-b", node_bootstrap(1), "--topic", "slowd", "--partition", "0");
    expect(&r, 0, NULL, NULL);
    wait_no_reassignment(WAIT_MS);
}

/* broker id's value of key as `cairn config describe` lists it, with its
 * source; false when it is not listed. */
static bool broker_config(int id, const char *key, char *value, size_t vlen, char *source, size_t slen)
{
    char broker[16];
    snprintf(broker, sizeof broker, "%d", id);
    struct run r;
    RUN(&r, "config", "describe", "--broker", broker, "-b", node_bootstrap(id), "--format", "json");
    expect(&r, 0, NULL, NULL);
    json_t *j = parse_json(&r);
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "configs"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), key) != 0)
            continue;
        const char *v = json_string_value(json_object_get(e, "value"));
        snprintf(value, vlen, "%s", v ? v : "");
        snprintf(source, slen, "%s", json_string_value(json_object_get(e, "source")));
        found = true;
    }
    json_decref(j);
    return found;
}

/* The text of docs/cli.md (a buffer of its own, read again each call). */
static const char *cli_md(void)
{
    static char doc[200000];
    FILE *f = fopen(CAIRN_SOURCE_DIR "/docs/cli.md", "r");
    assert_non_null(f);
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    return doc;
}

/* Fails unless docs/cli.md shows text (its example is this test's run),
 * blanks at line ends aside (tables pad their last column). */
static void doc_shows(char *text)
{
    char *w = text;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            while (w > text && w[-1] == ' ')
                w--;
        *w++ = *p;
    }
    *w = '\0';
    if (!strstr(cli_md(), text))
        fail_msg("docs/cli.md does not show:\n%s", text);
}

/* `cairn reassign start --throttle` sets both rates on the brokers
 * involved (and the topic's throttled replicas), the move keeps to it,
 * and `cairn reassign verify` removes the throttle once it is done. */
static void test_cli_throttle_and_verify(void **state)
{
    (void)state;
    create_loaded("orders");
    long long started = harness_now_ms();
    struct run r;
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "orders", "--partition", "0", "--replicas",
        "1,2,3", "--throttle", TEXT(CLI_RATE));
    expect(&r, 0, "STARTED",
           "throttle: " TEXT(CLI_RATE) " bytes/s on brokers 1,2,3; leader replicas 0:1,0:2, "
                                       "follower replicas 0:3");
    static char shown[2 * OUT_MAX + 256];
    snprintf(shown, sizeof shown,
             "$ cairn reassign start --topic orders --partition 0 --replicas 1,2,3 --throttle " TEXT(CLI_RATE) "\n%s%s",
             r.err, r.out);
    doc_shows(shown);
    char value[64], source[64];
    for (int id = 1; id <= 3; id++) {
        assert_true(broker_config(id, "leader.replication.throttled.rate", value, sizeof value, source, sizeof source));
        assert_string_equal(value, TEXT(CLI_RATE));
        assert_string_equal(source, "DYNAMIC_BROKER_CONFIG");
        assert_true(
            broker_config(id, "follower.replication.throttled.rate", value, sizeof value, source, sizeof source));
        assert_string_equal(value, TEXT(CLI_RATE));
    }
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "orders", "--partition", "0");
    expect(&r, 0, "IN_PROGRESS", NULL);
    if (strstr(r.out, "throttle removed"))
        fail_msg("verify removed the throttle of a move under way:\n%s", r.out);
    wait_no_reassignment(WAIT_MS);
    long long took = harness_now_ms() - started;
    double floor_ms = 1000.0 * (double)MOVE_BYTES / CLI_RATE;
    printf("move with --throttle %d: %lld ms (%.0f ms at the rate)\n", CLI_RATE, took, floor_ms);
    if ((double)took < floor_ms * 0.7)
        fail_msg("the move with --throttle %d took %lld ms, %.0f ms at least", CLI_RATE, took, floor_ms * 0.7);
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "orders", "--partition", "0");
    expect(&r, 0, "COMPLETE", NULL);
    expect(&r, 0, "throttle removed", NULL);
    snprintf(shown, sizeof shown, "$ cairn reassign verify --topic orders --partition 0\n%s", r.out);
    doc_shows(shown);
    /* Back to the config files' values (no dynamic one left). */
    for (int id = 1; id <= 3; id++) {
        assert_true(broker_config(id, "leader.replication.throttled.rate", value, sizeof value, source, sizeof source));
        assert_string_equal(value, TEXT(LEADER_RATE));
        assert_string_not_equal(source, "DYNAMIC_BROKER_CONFIG");
        assert_true(
            broker_config(id, "follower.replication.throttled.rate", value, sizeof value, source, sizeof source));
        assert_string_equal(value, "9223372036854775807");
    }
}

/* Replicas of topic-0 as node 2's Metadata names them, as "1,2" (empty
 * while node 2 does not know the topic yet). */
static void replicas_of(const char *topic, char *out, size_t len)
{
    struct run r;
    out[0] = '\0';
    RUN(&r, "topic", "describe", topic, "-b", node_bootstrap(2), "--format", "json");
    if (r.code != 0)
        return;
    json_t *j = parse_json(&r);
    json_t *reps = json_object_get(json_array_get(json_object_get(j, "partitions"), 0), "replicas");
    size_t used = 0, i;
    json_t *v;
    json_array_foreach(reps, i, v)
        used += (size_t)snprintf(out + used, len - used, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
    json_decref(j);
}

/* Waits until node 2 names want as topic-0's replicas. */
static void wait_replicas(const char *topic, const char *want)
{
    char now[64];
    long long until = harness_now_ms() + WAIT_MS;
    for (replicas_of(topic, now, sizeof now); strcmp(now, want) != 0; replicas_of(topic, now, sizeof now)) {
        if (harness_now_ms() > until)
            fail_msg("%s-0 is on '%s', not %s", topic, now, want);
        usleep(200 * 1000);
    }
}

#define MAX_EVENTS 64

/* The run's stdout as --wait --format json prints it: one JSON object a
 * line; fails on anything else. Returns how many. */
static int json_lines(const struct run *r, json_t **events)
{
    int n = 0;
    for (const char *line = r->out; *line;) {
        const char *nl = strchr(line, '\n');
        if (!nl)
            fail_msg("stdout does not end in a newline:\n%s", r->out);
        if (n == MAX_EVENTS)
            fail_msg("more than %d lines:\n%s", MAX_EVENTS, r->out);
        json_error_t err;
        events[n] = json_loadb(line, (size_t)(nl - line), 0, &err);
        if (!json_is_object(events[n]))
            fail_msg("line %d is no JSON object (%s):\n%s", n + 1, err.text, r->out);
        n++;
        line = nl + 1;
    }
    return n;
}

static void free_events(json_t **events, int n)
{
    for (int i = 0; i < n; i++)
        json_decref(events[i]);
}

static const char *event_name(json_t *event)
{
    const char *name = json_string_value(json_object_get(event, "event"));
    assert_non_null(name);
    return name;
}

/* The status of the one partition a progress, timeout or done event names. */
static const char *partition_status(json_t *event)
{
    json_t *partitions = json_object_get(event, "partitions");
    assert_int_equal(json_array_size(partitions), 1);
    const char *status = json_string_value(json_object_get(json_array_get(partitions, 0), "status"));
    assert_non_null(status);
    return status;
}

/* A progress or timeout event: reassigned of one, the partition's status
 * agreeing, the time waited a number. */
static void expect_count(json_t *event, const char *name, int reassigned)
{
    assert_string_equal(event_name(event), name);
    assert_int_equal(json_integer_value(json_object_get(event, "reassigned")), reassigned);
    assert_int_equal(json_integer_value(json_object_get(event, "total")), 1);
    assert_string_equal(partition_status(event), reassigned ? "COMPLETE" : "IN_PROGRESS");
    assert_true(json_is_integer(json_object_get(event, "elapsed_ms")));
}

/* docs/cli.md shows the events of `command`: the same lines, elapsed_ms
 * apart (a time, which varies). */
static void doc_shows_events(const char *command, json_t **events, int n)
{
    const char *at = strstr(cli_md(), command);
    if (!at)
        fail_msg("docs/cli.md does not show %s", command);
    at += strlen(command);
    int shown = 0;
    for (const char *line = at; strncmp(line, "```", 3) != 0; line = strchr(line, '\n') + 1) {
        json_t *want = json_loadb(line, (size_t)(strchr(line, '\n') - line), 0, NULL);
        if (!want || shown == n)
            fail_msg("docs/cli.md, after %s: line %d is not one of the %d events printed", command, shown + 1, n);
        json_object_del(want, "elapsed_ms");
        json_t *got = json_deep_copy(events[shown]);
        json_object_del(got, "elapsed_ms");
        if (!json_equal(want, got)) {
            char *g = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
            fail_msg("docs/cli.md, after %s: line %d differs from the event printed, %s", command, shown + 1, g);
        }
        json_decref(want);
        json_decref(got);
        shown++;
    }
    assert_int_equal(shown, n);
}

/* KIP-860: with --disallow-replication-factor-change a plan turning two
 * replicas into three is refused and nothing moves; without it the same
 * plan is accepted. */
static void test_cli_keep_replication_factor(void **state)
{
    (void)state;
    int32_t ctl = agreed_controller(&g_cluster, -1, WAIT_MS);
    int32_t replicas[] = {1, 2};
    assert_int_equal(create_assigned(&g_cluster, ctl, "keeprf", replicas, 2), 0);
    wait_view(&g_cluster, 1, ALL, "keeprf", 1, WAIT_MS);
    struct run r;
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "keeprf", "--partition", "0", "--replicas",
        "1,2,3", "--disallow-replication-factor-change");
    expect(&r, 1, "INVALID_REPLICATION_FACTOR", NULL);
    assert_false(reassignment_listed());
    wait_replicas("keeprf", "1,2");
    /* The same count in another order is no change of factor. */
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "keeprf", "--partition", "0", "--replicas", "2,1",
        "--disallow-replication-factor-change");
    expect(&r, 0, "STARTED", NULL);
    /* --wait --format json: one event a line, the start's results first. */
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "keeprf", "--partition", "0", "--replicas",
        "1,2,3", "--wait", "--format", "json");
    expect(&r, 0, NULL, NULL);
    json_t *events[MAX_EVENTS];
    int n = json_lines(&r, events);
    assert_true(n >= 3);
    assert_string_equal(event_name(events[0]), "started");
    json_t *started = json_array_get(json_object_get(events[0], "partitions"), 0);
    assert_string_equal(json_string_value(json_object_get(started, "result")), "STARTED");
    assert_int_equal(json_integer_value(json_object_get(started, "partition")), 0);
    assert_string_equal(event_name(events[n - 2]), "progress");
    assert_string_equal(event_name(events[n - 1]), "done");
    assert_string_equal(partition_status(events[n - 1]), "COMPLETE");
    assert_true(json_is_true(json_object_get(events[n - 1], "throttle_removed")));
    free_events(events, n);
    assert_false(reassignment_listed());
    wait_replicas("keeprf", "1,2,3");
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "keeprf", "--partition", "0",
        "--disallow-replication-factor-change");
    expect(&r, 2, NULL, "--disallow-replication-factor-change goes with reassign start only");
}

/* --wait on a throttled move (about MOVE_BYTES / LEADER_RATE, 4 s): a
 * timeout well short of it exits 4 naming what still moves; verify
 * --wait prints the progress lines and exits 0 once it is done. */
static void test_cli_wait(void **state)
{
    (void)state;
    create_loaded("waited");
    struct run r;
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "waited", "--partition", "0", "--replicas",
        "1,2,3", "--wait", "--wait-timeout", "300");
    expect(&r, 4, "0/1 partitions reassigned\n", "1 of 1 partitions still moving after");
    assert_null(strstr(r.out, "1/1"));
    assert_true(reassignment_listed());
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "waited", "--partition", "0", "--wait");
    expect(&r, 0, "0/1 partitions reassigned\n1/1 partitions reassigned\n", NULL);
    expect(&r, 0, "COMPLETE", NULL);
    assert_null(strchr(r.out, '\r')); /* no bar redrawn: stdout is a file */
    static char shown[OUT_MAX + 128];
    snprintf(shown, sizeof shown, "$ cairn reassign verify --topic waited --partition 0 --wait\n%s", r.out);
    doc_shows(shown);
    assert_false(reassignment_listed());
    assert_int_equal(log_bytes(3, "waited"), log_bytes(1, "waited"));
    RUN(&r, "reassign", "list", "-b", node_bootstrap(1), "--wait");
    expect(&r, 2, NULL, "--wait goes with reassign start and verify only");

    /* The same waits with --format json, on another throttled move. */
    create_loaded("watched");
    RUN(&r, "reassign", "start", "-b", node_bootstrap(1), "--topic", "watched", "--partition", "0", "--replicas",
        "1,2,3", "--wait", "--wait-timeout", "300", "--format", "json");
    expect(&r, 4, NULL, "1 of 1 partitions still moving after");
    json_t *events[MAX_EVENTS];
    int n = json_lines(&r, events);
    assert_int_equal(n, 3);
    assert_string_equal(event_name(events[0]), "started");
    expect_count(events[1], "progress", 0);
    expect_count(events[2], "timeout", 0);
    assert_true(json_integer_value(json_object_get(events[2], "elapsed_ms")) >= 300);
    free_events(events, n);
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "watched", "--partition", "0", "--wait",
        "--format", "json");
    expect(&r, 0, NULL, NULL);
    n = json_lines(&r, events);
    assert_int_equal(n, 3);
    expect_count(events[0], "progress", 0);
    expect_count(events[1], "progress", 1);
    assert_string_equal(event_name(events[2]), "done");
    assert_string_equal(partition_status(events[2]), "COMPLETE");
    doc_shows_events("$ cairn reassign verify --topic watched --partition 0 --wait --format json\n", events, n);
    free_events(events, n);
    assert_false(reassignment_listed());
    RUN(&r, "reassign", "verify", "-b", node_bootstrap(1), "--topic", "waited", "--partition", "0", "--wait-timeout",
        "5");
    expect(&r, 2, NULL, "--wait-timeout goes with --wait");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_throttle_bounds_move),
        cmocka_unit_test(test_unthrottled_partition_keeps_up),
        cmocka_unit_test(test_runtime_rate_change),
        cmocka_unit_test(test_follower_throttle_spares_other_partitions),
        cmocka_unit_test(test_cli_throttle_and_verify),
        cmocka_unit_test(test_cli_keep_replication_factor),
        cmocka_unit_test(test_cli_wait),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
