/* Produce pipelining on one connection, between three cairnd processes
 * (process.roles=broker,controller on one quorum). Topic "pl" has two
 * replicas {A, B} and min.insync.replicas=2, so an acks=all Produce to A
 * waits for B.
 *  - B paused (SIGSTOP, still in the ISR): two acks=all Produce requests
 *    and an ApiVersions sent back to back on one connection. The second
 *    Produce is appended while the first waits (it takes the next offset)
 *    and times out with it, one timeout after it was sent rather than two
 *    (the connection read it while the first was parked); the ApiVersions
 *    is answered after both, and every answer comes in request order.
 *  - B resumed: two more acks=all Produce requests back to back are both
 *    acknowledged, in order, at consecutive offsets. Raw requests, to see
 *    the broker's own order.
 * And the first acks=all record to a partition new to its followers is
 * not held for the fetch they have parked on their other partitions, nor
 * for the next one of a follower that applies the partition late, nor
 * for the back-off of a follower that applied it before its leader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "raw_kafka.h"

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/create_topics_request.h"
#include "protocol/generated/errors.h"

#define CLUSTER_ID "UHJvZHVjZVBpcGVsaW5lIQ"
#define ACKED 10
/* The Produce timeout while B is paused: the two answers come one such
 * wait after they were sent when pipelined, two when read one at a time. */
#define PARKED_TIMEOUT_MS 4000

/* SIGSTOP, then waits until every thread of pid is stopped: the signal
 * wakes one thread, and the others run on until that one stops the group
 * (on a loaded machine a follower's fetcher could still append and fetch
 * a record sent after kill() returned). */
static void pause_node(pid_t pid)
{
    assert_int_equal(kill(pid, SIGSTOP), 0);
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    long long deadline = harness_now_ms() + 10000;
    for (;;) {
        bool all = true;
        DIR *d = opendir(dir);
        assert_non_null(d);
        for (struct dirent *e; all && (e = readdir(d)) != NULL;) {
            if (e->d_name[0] == '.')
                continue;
            char path[384], buf[512];
            snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
            FILE *f = fopen(path, "r");
            if (!f)
                continue; /* the thread ended */
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            const char *state = strrchr(buf, ')');
            all = state && state[1] == ' ' && (state[2] == 'T' || state[2] == 't');
        }
        closedir(d);
        if (all)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("pid %d not stopped 10 s after SIGSTOP", (int)pid);
        usleep(1000);
    }
}

static void create_rf3_topic(struct cluster *c, const char *name, int32_t partitions)
{
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = partitions;
    t.replication_factor = 3;
    create_topic_until_taken(c, &t);
}

static struct partition_view wait_topic_isr(struct cluster *c, int node, const char *topic, int isr_count)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        struct view v;
        if (metadata(c, node, topic, &v) && v.partitions > 0 && v.p[0].leader > 0 && v.p[0].isr_count == isr_count)
            return v.p[0];
        if (harness_now_ms() > deadline)
            fail_msg("%s-0 at node %d never had %d in-sync replica(s)", topic, node, isr_count);
        usleep(20 * 1000);
    }
}

static struct partition_view wait_isr(struct cluster *c, int node, int isr_count)
{
    return wait_topic_isr(c, node, "pl", isr_count);
}

/* Sends a Produce v7 of one record to pl-0, acks=all, on fd. */
static void send_produce_to(int fd, const char *topic, int32_t correlation, int32_t timeout_ms)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record rec = {"k", "v"};
    raw_build_record_batch(&batch, 1700000000000LL, &rec, 1);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, correlation, "produce-pipeline");
    raw_put_string(&w, NULL); /* transactional id */
    raw_put_i16(&w, -1);      /* acks=all */
    raw_put_i32(&w, timeout_ms);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, (int32_t)batch.len);
    raw_put_bytes(&w, batch.data, batch.len);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&batch);
    raw_writer_free(&w);
}

static void send_produce(int fd, int32_t correlation, int32_t timeout_ms)
{
    send_produce_to(fd, "pl", correlation, timeout_ms);
}

static void send_api_versions(int fd, int32_t correlation)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 18, 0, correlation, "produce-pipeline");
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
}

/* Reads the next answer on fd, which must be correlation's. */
static struct raw_reader next_answer(int fd, int32_t correlation, uint8_t **frame)
{
    size_t len = 0;
    int rc = raw_recv_frame(fd, 60000, 1 << 20, frame, &len);
    if (rc != 0)
        fail_msg("no answer for correlation id %d (rc %d)", (int)correlation, rc);
    struct raw_reader r;
    raw_reader_init(&r, *frame, len);
    int32_t got = raw_get_i32(&r);
    if (got != correlation)
        fail_msg("answer for correlation id %d came where %d's was due", (int)got, (int)correlation);
    return r;
}

/* Reads a Produce answer: the partition's error, *base_offset its offset. */
static int16_t produce_answer(int fd, int32_t correlation, int64_t *base_offset)
{
    uint8_t *frame = NULL;
    struct raw_reader r = next_answer(fd, correlation, &frame);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_get_i32(&r); /* partition index */
    int16_t error = raw_get_i16(&r);
    *base_offset = raw_get_i64(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

static void test_produce_pipelined_in_order(void **state)
{
    (void)state;
    struct cluster c;
    const char *extra[] = {"replica.lag.time.max.ms=120000", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, extra);
    create_topic_min_isr(&c, "pl", 2, "2");
    struct partition_view p = wait_isr(&c, 1, 2);
    int32_t a = p.leader, b = p.isr[0] == a ? p.isr[1] : p.isr[0];
    produce_acked(broker_bootstrap(&c.nodes[a - 1]), "pl", 1, ACKED);

    int fd = raw_connect(broker_port(&c.nodes[a - 1]), 60000);
    assert_true(fd >= 0);
    pause_node(c.nodes[b - 1].pid);
    long long sent = harness_now_ms();
    send_produce(fd, 1, PARKED_TIMEOUT_MS);
    send_produce(fd, 2, PARKED_TIMEOUT_MS);
    send_api_versions(fd, 3);
    int64_t first = -1, second = -1;
    assert_int_equal(produce_answer(fd, 1, &first), KAFKA_ERR_REQUEST_TIMED_OUT);
    assert_int_equal(produce_answer(fd, 2, &second), KAFKA_ERR_REQUEST_TIMED_OUT);
    long long waited = harness_now_ms() - sent;
    uint8_t *frame = NULL;
    struct raw_reader r = next_answer(fd, 3, &frame);
    assert_int_equal(raw_get_i16(&r), KAFKA_ERR_NONE);
    free(frame);
    assert_int_equal(kill(c.nodes[b - 1].pid, SIGCONT), 0);
    printf("[produce-pipeline] two parked acks=all Produce on one connection answered after %lld ms (timeout %d "
           "ms each)\n",
           waited, PARKED_TIMEOUT_MS);
    assert_int_equal(first, ACKED);
    assert_int_equal(second, ACKED + 1);
    /* Read one at a time the second would start its timeout when the
     * first's ended: at least twice the timeout. */
    if (waited >= 2 * PARKED_TIMEOUT_MS - 500)
        fail_msg("the second Produce was read only after the first was answered (%lld ms)", waited);

    /* B back: both acknowledged, in order, at consecutive offsets. */
    wait_isr(&c, a, 2);
    long long deadline = harness_now_ms() + 60000;
    for (int32_t corr = 10;; corr += 2) {
        send_produce(fd, corr, 30000);
        send_produce(fd, corr + 1, 30000);
        int16_t e1 = produce_answer(fd, corr, &first);
        int16_t e2 = produce_answer(fd, corr + 1, &second);
        if (e1 == KAFKA_ERR_NONE && e2 == KAFKA_ERR_NONE) {
            assert_int_equal(second, first + 1);
            break;
        }
        if (harness_now_ms() > deadline)
            fail_msg("acks=all with B resumed: errors %d and %d", (int)e1, (int)e2);
        usleep(200 * 1000);
    }
    close(fd);
    cluster_stop(&c);
}

/* A partition new to its followers: each adds it to its next fetch, and
 * the fetch each has in progress is parked at the leader on the partitions
 * it already follows for up to replica.fetch.wait.max.ms (20 s here). The
 * first acks=all Produce answers those fetches at once rather than
 * waiting for them: it is acknowledged well within that wait. */
static void test_new_partition_not_held_by_fetch_wait(void **state)
{
    (void)state;
    struct cluster c;
    const char *extra[] = {"replica.fetch.wait.max.ms=20000", "replica.lag.time.max.ms=120000", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, extra);
    /* One partition led by each node, so every follower has a fetch
     * parked at every leader; a record to each parks them afresh. */
    create_rf3_topic(&c, "warm", N);
    wait_topic_isr(&c, 1, "warm", N);
    produce_acked(broker_bootstrap(&c.nodes[0]), "warm", N, N);

    create_rf3_topic(&c, "fresh", 1);
    struct partition_view p = wait_topic_isr(&c, 1, "fresh", N);
    wait_topic_isr(&c, p.leader, "fresh", N); /* the leader's own image: what its produce reads */
    int fd = raw_connect(broker_port(&c.nodes[p.leader - 1]), 60000);
    assert_true(fd >= 0);
    long long sent = harness_now_ms();
    send_produce_to(fd, "fresh", 1, 60000);
    int64_t offset = -1;
    int16_t err = produce_answer(fd, 1, &offset);
    long long waited = harness_now_ms() - sent;
    close(fd);
    printf("[produce-pipeline] first acks=all record to a new partition acknowledged after %lld ms "
           "(replica.fetch.wait.max.ms=20000)\n",
           waited);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(offset, 0);
    if (waited >= 10000)
        fail_msg("the first acks=all record to a new partition waited %lld ms: the followers' parked fetches held "
                 "it",
                 waited);
    cluster_stop(&c);
}

/* Creates a 1-partition topic on all three nodes, first is the first
 * replica (its leader), through the nodes other than skip (a paused node
 * would not answer). */
static void create_rf3_topic_assigned(struct cluster *c, const char *name, int first, int skip)
{
    int32_t replicas[N];
    for (int i = 0; i < N; i++)
        replicas[i] = (first - 1 + i) % N + 1;
    struct create_topics_request_creatable_replica_assignment a;
    create_topics_request_creatable_replica_assignment_init(&a);
    a.partition_index = 0;
    a.broker_ids = replicas;
    a.broker_ids_count = N;
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(name);
    t.num_partitions = -1;
    t.replication_factor = -1;
    t.assignments = &a;
    t.assignments_count = 1;
    long long deadline = harness_now_ms() + 60000;
    for (int node = 1;; node = node % N + 1) {
        if (node == skip)
            continue;
        int16_t err = create_one_topic(c, node, &t);
        if (err == KAFKA_ERR_NONE || err == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics %s: error %d", name, (int)err);
        usleep(200 * 1000);
    }
}

/* skip is the last replica (never the leader) and is not asked. */
static void create_rf3_topic_led_elsewhere(struct cluster *c, const char *name, int skip)
{
    create_rf3_topic_assigned(c, name, skip % N + 1, skip);
}

/* leader is the first replica and is not asked. */
static void create_rf3_topic_led_by(struct cluster *c, const char *name, int leader)
{
    create_rf3_topic_assigned(c, name, leader, leader);
}

/* A follower that learns of a new partition only after the first acks=all
 * produce to it has answered its parked fetch: its next fetch still names
 * only its old partitions and is parked again, and nothing new arrives to
 * wake it when the producer has all its requests waiting (librdkafka with
 * 5 in flight on a fresh topic: 60-670 ms outliers with the default
 * replica.fetch.wait.max.ms). The follower F, not the controller, is
 * paused across the topic's creation and the produce, so it cannot have
 * applied the topic when the wake reaches it; resumed, its fetch goes out
 * before its metadata catches up. While a parked produce waits on a
 * follower it found absent, that follower's fetches park at most a few
 * milliseconds, so the produce is acknowledged soon after F applies the
 * topic, not after replica.fetch.wait.max.ms (20 s here). */
static void test_late_follower_not_held_by_fetch_wait(void **state)
{
    (void)state;
    struct cluster c;
    const char *extra[] = {"replica.fetch.wait.max.ms=20000", "replica.lag.time.max.ms=120000", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, extra);
    /* Partitions led by every node: each follower has a fetch parked at
     * every leader. */
    create_rf3_topic(&c, "warm", 2 * N);
    wait_topic_isr(&c, 1, "warm", N);
    produce_acked(broker_bootstrap(&c.nodes[0]), "warm", 2 * N, 4 * N);
    int32_t controller = agreed_controller(&c, -1, 60000);
    int f = controller % N + 1; /* a node that is not the controller */
    int asked = f % N + 1;      /* a running node to ask for metadata */

    pause_node(c.nodes[f - 1].pid);
    create_rf3_topic_led_elsewhere(&c, "late", f);
    struct partition_view p = wait_topic_isr(&c, asked, "late", N);
    assert_int_not_equal(p.leader, f);
    wait_topic_isr(&c, p.leader, "late", N); /* the leader's own image: what its produce reads */
    int fd = raw_connect(broker_port(&c.nodes[p.leader - 1]), 60000);
    assert_true(fd >= 0);
    send_produce_to(fd, "late", 1, 60000);
    usleep(300 * 1000); /* parked, and F's parked fetch answered */
    long long resumed = harness_now_ms();
    assert_int_equal(kill(c.nodes[f - 1].pid, SIGCONT), 0);
    int64_t offset = -1;
    int16_t err = produce_answer(fd, 1, &offset);
    long long waited = harness_now_ms() - resumed;
    close(fd);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(offset, 0);
    printf("[produce-pipeline] acks=all record acknowledged %lld ms after the follower that had not applied its "
           "partition resumed (replica.fetch.wait.max.ms=20000)\n",
           waited);
    if (waited >= 10000)
        fail_msg("the acks=all record waited %lld ms after the follower resumed: its next fetch, without the new "
                 "partition, was parked for replica.fetch.wait.max.ms",
                 waited);
    cluster_stop(&c);
}

/* A follower that applies a new topic before its leader does: the leader
 * L, not the controller, is paused across the topic's creation, so the
 * followers apply it, start fetching it from L at once, and L, resumed,
 * answers that fetch before it has applied the topic
 * (UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER). The follower
 * retries that after a short back-off, not after replica.fetch.backoff.ms
 * (20 s here), so the first acks=all record to the topic is acknowledged
 * well within it. */
static void test_leader_behind_not_backed_off(void **state)
{
    (void)state;
    struct cluster c;
    const char *extra[] = {"replica.fetch.backoff.ms=20000", "replica.lag.time.max.ms=120000", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, extra);
    int32_t controller = agreed_controller(&c, -1, 60000);
    int leader = controller % N + 1; /* not the controller */
    int asked = leader % N + 1;      /* a follower, running */
    /* Every broker registered (a topic on all three has its ISR), led by
     * another node so the followers have no fetcher to L yet. */
    create_rf3_topic_led_elsewhere(&c, "ready", leader);
    wait_topic_isr(&c, asked, "ready", N);
    pause_node(c.nodes[leader - 1].pid);
    create_rf3_topic_led_by(&c, "behind", leader);
    for (int node = 1; node <= N; node++)
        if (node != leader)
            assert_int_equal(wait_topic_isr(&c, node, "behind", N).leader, leader);
    usleep(300 * 1000); /* the followers' first fetches of it wait in L's socket */
    long long resumed = harness_now_ms();
    assert_int_equal(kill(c.nodes[leader - 1].pid, SIGCONT), 0);
    wait_topic_isr(&c, leader, "behind", N);
    int fd = raw_connect(broker_port(&c.nodes[leader - 1]), 60000);
    assert_true(fd >= 0);
    send_produce_to(fd, "behind", 1, 60000);
    int64_t offset = -1;
    int16_t err = produce_answer(fd, 1, &offset);
    long long waited = harness_now_ms() - resumed;
    close(fd);
    printf("[produce-pipeline] first acks=all record to a topic its followers applied before its leader "
           "acknowledged %lld ms after the leader resumed (replica.fetch.backoff.ms=20000)\n",
           waited);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(offset, 0);
    if (waited >= 10000)
        fail_msg("the acks=all record waited %lld ms after the leader resumed: its followers backed off "
                 "replica.fetch.backoff.ms after the leader's answer from before it applied the topic",
                 waited);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_produce_pipelined_in_order),
        cmocka_unit_test(test_new_partition_not_held_by_fetch_wait),
        cmocka_unit_test(test_late_follower_not_held_by_fetch_wait),
        cmocka_unit_test(test_leader_behind_not_backed_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
