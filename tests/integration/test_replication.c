/* Replication between three cairnd processes (process.roles=broker,
 * controller on one quorum): a topic with replication factor 3 is produced
 * to by librdkafka (idempotent, acks=all); every follower's copy of the
 * partition, .log files byte for byte (small segments, so several), equals
 * the leader's, also after DeleteRecords on the leader removed segments,
 * and a consumer reads every record left back. With min.insync.replicas=3 and one follower
 * killed (kill -9), an acks=all produce answers REQUEST_TIMED_OUT and a
 * consumer does not see its record (above the high watermark); the
 * follower restarted catches up to a byte-identical copy. A follower whose
 * log diverged (a batch of an epoch the leader never had) truncates.
 * num.replica.fetchers changed at runtime (IncrementalAlterConfigs of the
 * cluster-wide default, 1 -> 4 -> 1, sent to a node that is not the active
 * controller, which forwards it) moves partitions between fetchers and the
 * followers keep copying the leader; every node describes the value as a
 * dynamic default, and one broker's own value sent through another
 * non-controller node reaches that broker only. Two CreateTopics of one name sent at
 * once to two nodes: one creates it, the other is answered
 * TOPIC_ALREADY_EXISTS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLUSTER_ID "UmVwbGljYXRpb25UZXN0MQ"

/* The leader of topic-partition as the metadata of node 1 has it. */
static int32_t leader_of(struct cluster *c, const char *topic, int32_t partition)
{
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&c->nodes[0]), NULL);
    int32_t leader = -1;
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(admin, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int t = 0; t < md->topic_cnt; t++)
            for (int p = 0; strcmp(md->topics[t].topic, topic) == 0 && p < md->topics[t].partition_cnt; p++)
                if (md->topics[t].partitions[p].id == partition)
                    leader = md->topics[t].partitions[p].leader;
        rd_kafka_metadata_destroy(md);
    }
    rk_producer_destroy(admin);
    return leader;
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)(n > 0 ? n : 0);
    return buf;
}

/* Whether every .log file in from_dir is in to_dir with the same bytes
 * (why is filled when not); files counts them. */
static bool logs_found_in(const char *from_dir, const char *to_dir, int *files, char *why, size_t whylen)
{
    DIR *d = opendir(from_dir);
    if (!d) {
        snprintf(why, whylen, "no %.700s", from_dir);
        return false;
    }
    bool same = true;
    struct dirent *e;
    while (same && (e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".log") != 0)
            continue;
        (*files)++;
        char fp[1024], tp[1024];
        snprintf(fp, sizeof fp, "%s/%s", from_dir, e->d_name);
        snprintf(tp, sizeof tp, "%s/%s", to_dir, e->d_name);
        size_t flen = 0, tlen = 0;
        char *fb = read_whole(fp, &flen), *tb = read_whole(tp, &tlen);
        same = fb && tb && flen == tlen && memcmp(fb, tb, flen) == 0;
        if (!same)
            snprintf(why, whylen, "%.300s: %zu bytes in %.300s, %zu bytes%s in %.300s", e->d_name, flen, from_dir, tlen,
                     tb ? "" : " (missing)", to_dir);
        free(fb);
        free(tb);
    }
    closedir(d);
    return same;
}

/* Whether node's .log files of dir are the leader's: the same names, byte
 * for byte. */
static bool same_logs(const struct test_broker *leader, const struct test_broker *node, const char *dir, char *why,
                      size_t whylen)
{
    char ldir[700], ndir[700];
    snprintf(ldir, sizeof ldir, "%s/%s", leader->data_dir, dir);
    snprintf(ndir, sizeof ndir, "%s/%s", node->data_dir, dir);
    int leader_files = 0, node_files = 0;
    if (!logs_found_in(ldir, ndir, &leader_files, why, whylen) || !logs_found_in(ndir, ldir, &node_files, why, whylen))
        return false;
    if (leader_files == 0) {
        snprintf(why, whylen, "no .log file in %.680s", ldir);
        return false;
    }
    return true;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Makes a stopped follower's log diverge: a copy of its last batch, at the
 * next offsets and in leader epoch 7 (which the leader never had), is
 * appended to its newest segment. partitionLeaderEpoch and baseOffset lie
 * outside the batch CRC, so recovery takes the batch as valid. */
static void forge_diverging_batch(const struct test_broker *b, const char *dir)
{
    char path[700], newest[256] = "";
    snprintf(path, sizeof path, "%s/%s", b->data_dir, dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl > 4 && strcmp(e->d_name + nl - 4, ".log") == 0 && strcmp(e->d_name, newest) > 0)
            snprintf(newest, sizeof newest, "%s", e->d_name);
    }
    closedir(d);
    assert_true(newest[0]);
    char file[1000];
    snprintf(file, sizeof file, "%s/%s", path, newest);
    size_t len = 0;
    uint8_t *data = (uint8_t *)read_whole(file, &len);
    assert_non_null(data);
    size_t pos = 0, last = 0;
    while (pos + 12 <= len) {
        last = pos;
        pos += 12 + get_be32(data + pos + 8);
    }
    assert_int_equal(pos, len);
    size_t size = len - last;
    uint8_t *copy = malloc(size);
    assert_non_null(copy);
    memcpy(copy, data + last, size);
    uint64_t base = 0;
    for (int i = 0; i < 8; i++)
        base = base << 8 | copy[i];
    base += get_be32(copy + 23) + 1; /* lastOffsetDelta + 1 */
    for (int i = 7; i >= 0; i--, base >>= 8)
        copy[i] = (uint8_t)base;
    put_be32(copy + 12, 7); /* partitionLeaderEpoch */
    FILE *f = fopen(file, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(copy, 1, size, f), size);
    fclose(f);
    free(copy);
    free(data);
}

static int count_logs(const struct test_broker *b, const char *dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", b->data_dir, dir);
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        n += nl > 4 && strcmp(e->d_name + nl - 4, ".log") == 0;
    }
    if (d)
        closedir(d);
    return n;
}

static void wait_identical(struct cluster *c, int32_t leader, const char *dir, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (int i = 0; i < N; i++) {
        if (i + 1 == leader)
            continue;
        char why[1400] = "";
        while (!same_logs(&c->nodes[leader - 1], &c->nodes[i], dir, why, sizeof why)) {
            if (harness_now_ms() > deadline) {
                broker_print_log_tail(&c->nodes[i], 40);
                fail_msg("node %d's copy of %s differs from leader %d's: %s", i + 1, dir, leader, why);
            }
            usleep(200 * 1000);
        }
    }
}

#define RECORDS 3000

static void test_followers_copy_the_leader(void **state)
{
    (void)state;
    struct cluster c;
    replicated_cluster_start(&c, CLUSTER_ID, NULL);
    /* Small segments: the followers roll where the leader does. */
    const char *configs[] = {"segment.bytes", "16384", NULL};
    int32_t leader = create_replicated(&c, "repl", configs);
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "linger.ms", "5", "batch.size", "8000", NULL};
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&c.nodes[0]), conf);
    for (int m = 0; m < RECORDS; m++) {
        char key[32], value[64];
        int kn = snprintf(key, sizeof key, "k%d", m % 17);
        int vn = snprintf(value, sizeof value, "replicated-%d", m);
        assert_int_equal(rk_produce_blocking(p, "repl", 0, key, (size_t)kn, value, (size_t)vn, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 60000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);
    assert_int_equal(stats->delivered, RECORDS);
    rk_producer_destroy(p);

    wait_identical(&c, leader, "repl-0", 30000);
    int segments = count_logs(&c.nodes[leader - 1], "repl-0");
    assert_true(segments > 3);

    /* DeleteRecords on the leader: the followers drop the same segments. */
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&c.nodes[leader - 1]), NULL);
    int64_t low = -1;
    assert_int_equal(rk_delete_records(admin, "repl", RECORDS / 2, &low), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(low, RECORDS / 2);
    rk_producer_destroy(admin);
    assert_true(count_logs(&c.nodes[leader - 1], "repl-0") < segments);
    wait_identical(&c, leader, "repl-0", 30000);

    long want[1] = {RECORDS / 2};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[leader - 1]), "repl", 1, want, 30000, &set), RECORDS / 2);
    assert_int_equal(set.records[0].offset, RECORDS / 2);
    for (size_t i = 0; i < set.count; i++) {
        char expect[64];
        snprintf(expect, sizeof expect, "replicated-%lld", (long long)set.records[i].offset);
        assert_int_equal(set.records[i].value_len, strlen(expect));
        assert_memory_equal(set.records[i].value, expect, strlen(expect));
    }
    rk_record_set_free(&set);
    cluster_stop(&c);
}

/* min.insync.replicas=3 and a follower down (the ISR still names it):
 * acks=all cannot be satisfied, so the leader answers REQUEST_TIMED_OUT
 * after the request's timeout. The follower restarted catches up. */
static void test_acks_all_waits_for_every_replica(void **state)
{
    (void)state;
    struct cluster c;
    /* A 10 s session: the follower back from kill -9 (twice) is a new
     * incarnation, taken only once its previous session lapses. */
    replicated_cluster_start_session(&c, CLUSTER_ID, NULL, 10000);
    const char *configs[] = {"min.insync.replicas", "3", NULL};
    int32_t leader = create_replicated(&c, "strict", configs);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    produce_acked(bootstrap, "strict", 1, 500);
    wait_identical(&c, leader, "strict-0", 30000);

    int follower = leader % N + 1;
    broker_kill9(&c.nodes[follower - 1]);
    const char *conf[] = {"enable.idempotence", "false", "acks", "all", "retries", "0", "request.timeout.ms", "2000",
                          "message.timeout.ms", "30000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    long long started = harness_now_ms();
    assert_int_equal(rk_produce_one_delivered(p, "strict"), RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
    assert_true(harness_now_ms() - started >= 1500); /* it waited for the request's timeout */
    rk_producer_destroy(p);
    /* The timed-out record is in the leader's log but above the high
     * watermark: a consumer sees the 500 before it only. */
    long held[1] = {500};
    struct rk_record_set before = {0};
    assert_int_equal(rk_consume_all(bootstrap, "strict", 1, held, 30000, &before), 500);
    rk_record_set_free(&before);

    broker_restart(&c.nodes[follower - 1]);
    wait_identical(&c, leader, "strict-0", 60000);
    produce_acked(bootstrap, "strict", 1, 100);
    wait_identical(&c, leader, "strict-0", 30000);
    /* 500 + the timed-out record (appended on the leader, replicated) + 100. */
    long want[1] = {601};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(bootstrap, "strict", 1, want, 30000, &set), 601);
    rk_record_set_free(&set);

    /* A follower whose log holds records the leader never had (epoch 7):
     * the leader names the divergence in its fetch answer and the
     * follower truncates back to the leader's log. */
    broker_kill9(&c.nodes[follower - 1]);
    forge_diverging_batch(&c.nodes[follower - 1], "strict-0");
    broker_restart(&c.nodes[follower - 1]);
    wait_identical(&c, leader, "strict-0", 60000);
    assert_true(broker_log_contains(&c.nodes[follower - 1], "log diverged from leader"));
    cluster_stop(&c);
}

/* A node that is not the active controller (it forwards config changes). */
static int non_controller(struct cluster *c, int32_t not_this)
{
    int32_t controller = agreed_controller(c, -1, 30000);
    assert_true(controller >= 1 && controller <= N);
    for (int i = 1; i <= N; i++)
        if (i != controller && i != not_this)
            return i;
    fail_msg("no node other than controller %d and %d", controller, not_this);
    return -1;
}

/* Waits until node's log has line. */
static void wait_logged(struct cluster *c, int node, const char *line, long long deadline)
{
    while (!broker_log_contains(&c->nodes[node - 1], line)) {
        if (harness_now_ms() > deadline) {
            broker_print_log_tail(&c->nodes[node - 1], 40);
            fail_msg("node %d did not log '%s'", node, line);
        }
        usleep(100 * 1000);
    }
}

/* IncrementalAlterConfigs key=value on one BROKER resource (a broker id,
 * or "" for the cluster-wide default), sent once to a node that is not the
 * active controller: it forwards the change, which must succeed. -1 (no
 * answer, a loaded machine) is tried again. */
static void alter_broker_via(struct cluster *c, int via, const char *resource, const char *key, const char *value)
{
    long long deadline = harness_now_ms() + 30000;
    char msg[512] = "";
    int code;
    while ((code = raw_incremental_alter_broker(broker_port(&c->nodes[via - 1]), resource, key, 0, value, msg,
                                                sizeof msg)) == -1 &&
           harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (code != 0)
        fail_msg("%s=%s on broker resource '%s' via node %d: error %d %s", key, value, resource, via, code, msg);
}

/* DescribeConfigs of node's own BROKER resource, asked of that node:
 * key must be value, from source. */
static void expect_described(struct cluster *c, int node, const char *key, const char *value,
                             rd_kafka_ConfigSource_t source)
{
    char id[16];
    snprintf(id, sizeof id, "%d", node);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c->nodes[node - 1]), NULL);
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, id);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rk_admin_result(queue, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, 20000);
    if (rd_kafka_event_error(ev))
        fail_msg("DescribeConfigs of broker %d: %s", node, rd_kafka_event_error_string(ev));
    size_t n = 0, count = 0;
    const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    assert_int_equal(n, 1);
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(res[0], &count);
    bool found = false;
    for (size_t i = 0; i < count && !found; i++) {
        if (strcmp(rd_kafka_ConfigEntry_name(entries[i]), key) != 0)
            continue;
        found = true;
        const char *got = rd_kafka_ConfigEntry_value(entries[i]);
        rd_kafka_ConfigSource_t from = rd_kafka_ConfigEntry_source(entries[i]);
        if (!got || strcmp(got, value) != 0 || from != source)
            fail_msg("broker %d: %s is %s (%s), expected %s (%s)", node, key, got ? got : "(null)",
                     rd_kafka_ConfigSource_name(from), value, rd_kafka_ConfigSource_name(source));
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    rk_producer_destroy(rk);
    if (!found)
        fail_msg("DescribeConfigs of broker %d: no %s", node, key);
}

/* num.replica.fetchers=value as the cluster-wide default (resource ""),
 * sent to a node that is not the active controller; then waits until every
 * node's log says its fetchers were resized, and every node describes the
 * value as a dynamic default. */
static void set_fetchers(struct cluster *c, const char *value)
{
    alter_broker_via(c, non_controller(c, -1), "", "num.replica.fetchers", value);
    char needle[64];
    snprintf(needle, sizeof needle, "num.replica.fetchers now %s", value);
    long long deadline = harness_now_ms() + 30000;
    for (int i = 1; i <= N; i++)
        wait_logged(c, i, needle, deadline);
    for (int i = 1; i <= N; i++)
        expect_described(c, i, "num.replica.fetchers", value, RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
}

#define RESIZE_PARTITIONS 8

static void wait_all_identical(struct cluster *c, const char *topic)
{
    for (int32_t part = 0; part < RESIZE_PARTITIONS; part++) {
        char dir[128];
        snprintf(dir, sizeof dir, "%s-%d", topic, part);
        int32_t leader = leader_of(c, topic, part);
        assert_true(leader >= 1 && leader <= N);
        wait_identical(c, leader, dir, 60000);
    }
}

/* num.replica.fetchers is a dynamic broker config: raised and lowered at
 * runtime, the followed partitions move between fetchers (some move: eight
 * partitions over four fetchers), lowered the idle fetchers stop, and
 * replication goes on. */
static void test_fetcher_count_changes_at_runtime(void **state)
{
    (void)state;
    struct cluster c;
    replicated_cluster_start(&c, CLUSTER_ID, NULL);
    (void)create_partitions(&c, "resize", RESIZE_PARTITIONS, NULL);
    produce_acked(broker_bootstrap(&c.nodes[0]), "resize", RESIZE_PARTITIONS, 400);
    wait_all_identical(&c, "resize");

    set_fetchers(&c, "4");
    int idle = 0;
    for (int i = 0; i < N; i++)
        idle += broker_log_contains(&c.nodes[i], "(was 1): 0 idle fetchers stopped, 0 partitions moved");
    assert_true(idle < N); /* some partition now has another fetcher */
    produce_acked(broker_bootstrap(&c.nodes[0]), "resize", RESIZE_PARTITIONS, 400);
    wait_all_identical(&c, "resize");

    set_fetchers(&c, "1");
    idle = 0;
    for (int i = 0; i < N; i++)
        idle += broker_log_contains(&c.nodes[i], "(was 4): 0 idle fetchers stopped");
    assert_true(idle < N); /* the fetchers past the first stopped */
    produce_acked(broker_bootstrap(&c.nodes[0]), "resize", RESIZE_PARTITIONS, 400);
    wait_all_identical(&c, "resize");
    long want[RESIZE_PARTITIONS];
    for (int i = 0; i < RESIZE_PARTITIONS; i++)
        want[i] = 150;
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[0]), "resize", RESIZE_PARTITIONS, want, 30000, &set),
                     1200);
    rk_record_set_free(&set);

    /* One broker's own value, sent through another broker that is not the
     * controller either: only that broker takes it, over the default. */
    int target = non_controller(&c, -1);
    int via = non_controller(&c, target);
    char id[16];
    snprintf(id, sizeof id, "%d", target);
    alter_broker_via(&c, via, id, "num.replica.fetchers", "2");
    wait_logged(&c, target, "num.replica.fetchers now 2", harness_now_ms() + 30000);
    expect_described(&c, target, "num.replica.fetchers", "2", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG);
    expect_described(&c, via, "num.replica.fetchers", "1", RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
    cluster_stop(&c);
}

/* One CreateTopics of a shared name, started together with the others. */
struct racer {
    pthread_t thread;
    pthread_barrier_t *start;
    rd_kafka_t *admin;
    char topic[64];
    rd_kafka_resp_err_t err;
    char errstr[256];
};

static void *race_create(void *arg)
{
    struct racer *rc = arg;
    pthread_barrier_wait(rc->start);
    rc->err = rk_create_topic_result(rc->admin, rc->topic, 3, 3, NULL, false, rc->errstr, sizeof rc->errstr);
    return NULL;
}

/* Kafka's controller answers a creation of a name already taken with
 * TOPIC_ALREADY_EXISTS, however close the two requests are: never an
 * internal error. Each round sends the same name to two different nodes
 * (at least one forwards to the active controller) at once. */
static void test_concurrent_creates_of_one_name(void **state)
{
    (void)state;
    struct cluster c;
    replicated_cluster_start(&c, CLUSTER_ID, NULL);
    (void)create_replicated(&c, "warm-up", NULL); /* a controller is active */
    for (int round = 0; round < 6; round++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        struct racer racers[2];
        for (int i = 0; i < 2; i++) {
            memset(&racers[i], 0, sizeof racers[i]);
            racers[i].start = &start;
            racers[i].admin = rk_producer_new(broker_bootstrap(&c.nodes[(round + i) % N]), NULL);
            snprintf(racers[i].topic, sizeof racers[i].topic, "raced-%d", round);
        }
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&racers[i].thread, NULL, race_create, &racers[i]), 0);
        int created = 0, exists = 0;
        for (int i = 0; i < 2; i++) {
            pthread_join(racers[i].thread, NULL);
            created += racers[i].err == RD_KAFKA_RESP_ERR_NO_ERROR;
            exists += racers[i].err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
            if (racers[i].err != RD_KAFKA_RESP_ERR_NO_ERROR && racers[i].err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                fail_msg("round %d: CreateTopics via node %d: %s (%s)", round, (round + i) % N + 1,
                         rd_kafka_err2str(racers[i].err), racers[i].errstr);
            rk_producer_destroy(racers[i].admin);
        }
        pthread_barrier_destroy(&start);
        if (created != 1 || exists != 1)
            fail_msg("round %d: %d created, %d already exists; expected one of each", round, created, exists);
    }
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_followers_copy_the_leader),
        cmocka_unit_test(test_acks_all_waits_for_every_replica),
        cmocka_unit_test(test_fetcher_count_changes_at_runtime),
        cmocka_unit_test(test_concurrent_creates_of_one_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
