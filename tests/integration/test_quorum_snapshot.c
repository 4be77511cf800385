/* Quorum snapshots with real cairnd processes (leader_cluster.h): three
 * broker,controller nodes with a tiny snapshot threshold write
 * <offset>-<epoch>.checkpoint files beside the quorum's log as topics are
 * created; a node stopped and restarted loads its newest snapshot, replays
 * only the log after it (plus what it missed, fetched from the leader) and
 * lists every topic in Metadata; with the log cleaned behind snapshots
 * (small segments: old segment files deleted), a
 * node that was down catches up by downloading the leader's snapshot, and
 * a node whose snapshots are all corrupt refuses to start, naming why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leader_cluster.h"
#include "protocol/generated/errors.h"
#include "raft/raft_codec.h"

#define TOPICS_BEFORE 24
#define TOPICS_AFTER 8

/* The snapshot files in node's quorum log dir: how many; with cut, each
 * is first cut to half its size (a torn write, as after a crash mid-write). */
static int walk_checkpoints(const struct cluster *c, int node, bool cut)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/raft-quorum/__cluster_metadata-0", c->nodes[node - 1].data_dir);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len != 42 || strcmp(e->d_name + len - 11, ".checkpoint") != 0)
            continue;
        if (cut) {
            char path[1024 + 2 + 256]; /* dir, '/', a file name */
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat st;
            assert_int_equal(stat(path, &st), 0);
            assert_int_equal(truncate(path, st.st_size / 2), 0);
        }
        n++;
    }
    closedir(d);
    return n;
}

/* True while node's quorum log still has its first segment file. */
static bool first_segment_present(const struct cluster *c, int node)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/raft-quorum/__cluster_metadata-0/00000000000000000000.log",
             c->nodes[node - 1].data_dir);
    return access(path, F_OK) == 0;
}

/* The active controller as a running node sees it, -1 when none yet. */
static int32_t controller_seen_by(struct cluster *c, int node)
{
    struct view v;
    return metadata(c, node, "", &v) && v.controller_id >= 1 ? v.controller_id : -1;
}

/* Creates snap-<from..to-1> through the active controller as `via` sees it. */
static void create_all(struct cluster *c, int via, int from, int to)
{
    for (int t = from; t < to; t++) {
        char name[32];
        snprintf(name, sizeof name, "snap-%02d", t);
        int16_t rc = -1;
        long long until = harness_now_ms() + SLACK_MS;
        /* A leader change meanwhile answers NOT_CONTROLLER; ask the new one. */
        for (;;) {
            int32_t controller = controller_seen_by(c, via);
            rc = controller > 0 ? create_topic_rf(c, controller, name, 1, 1) : -1;
            if (rc == KAFKA_ERR_NONE || rc == KAFKA_ERR_TOPIC_ALREADY_EXISTS || harness_now_ms() > until)
                break;
            usleep(100 * 1000);
        }
        if (rc != KAFKA_ERR_NONE && rc != KAFKA_ERR_TOPIC_ALREADY_EXISTS)
            fail_msg("creating %s: error %d", name, rc);
    }
}

static void wait_topics(struct cluster *c, int node, int count)
{
    for (int t = 0; t < count; t++) {
        char name[32];
        snprintf(name, sizeof name, "snap-%02d", t);
        long long until = harness_now_ms() + 2 * SLACK_MS;
        struct view v;
        while (!(metadata(c, node, name, &v) && v.partitions == 1))
            if (harness_now_ms() > until)
                fail_msg("node %d does not list %s", node, name);
            else
                usleep(100 * 1000);
    }
}

static void test_restarted_node_loads_snapshot(void **state)
{
    (void)state;
    const char *extra[] = {"metadata.log.max.record.bytes.between.snapshots=1500", NULL};
    struct cluster c;
    leader_cluster_start(&c, extra);
    wait_settled(&c, 1, ALL, "", 20000);
    create_all(&c, 1, 0, TOPICS_BEFORE);
    for (int i = 1; i <= N; i++)
        wait_topics(&c, i, TOPICS_BEFORE);
    /* Every node, voter and follower alike, wrote snapshots (two kept). */
    for (int i = 1; i <= N; i++) {
        /* Written on a thread of their own: a third file lives between
         * the newest's rename and the prune, and the line follows both. */
        long long until = harness_now_ms() + SLACK_MS;
        int n;
        while (((n = walk_checkpoints(&c, i, false)) < 1 || n > 2 ||
                !broker_log_contains(&c.nodes[i - 1], "wrote metadata snapshot at offset")) &&
               harness_now_ms() < until)
            usleep(100 * 1000);
        if (n < 1 || n > 2)
            fail_msg("node %d keeps %d snapshot files", i, n);
        assert_true(broker_log_contains(&c.nodes[i - 1], "wrote metadata snapshot at offset"));
    }

    int32_t controller = agreed_controller(&c, -1, SLACK_MS);
    int victim = controller % N + 1;
    broker_stop(&c.nodes[victim - 1]);
    create_all(&c, controller, TOPICS_BEFORE, TOPICS_BEFORE + TOPICS_AFTER);
    broker_restart(&c.nodes[victim - 1]);
    wait_topics(&c, victim, TOPICS_BEFORE + TOPICS_AFTER);
    assert_true(broker_log_contains(&c.nodes[victim - 1], "loaded the metadata snapshot at offset"));
    cluster_stop(&c);
}

/* Whole bytes of a file, NULL when it cannot be read. */
static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len > 0 ? (size_t)*len : 1);
    if (buf && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* Snapshot files of `node` that `other` holds under the same name with
 * the same bytes; *partial counts leftover .download files of `node`. */
static int identical_checkpoints(const struct cluster *c, int node, int other, int *partial)
{
    char dir[1024], odir[1024];
    snprintf(dir, sizeof dir, "%s/raft-quorum/__cluster_metadata-0", c->nodes[node - 1].data_dir);
    snprintf(odir, sizeof odir, "%s/raft-quorum/__cluster_metadata-0", c->nodes[other - 1].data_dir);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int same = 0;
    *partial = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 9 && strcmp(e->d_name + n - 9, ".download") == 0)
            (*partial)++;
        if (n != 42 || strcmp(e->d_name + n - 11, ".checkpoint") != 0)
            continue;
        char a[1300], b[1300]; /* dir (1024) + "/" + d_name (256) */
        snprintf(a, sizeof a, "%s/%s", dir, e->d_name);
        snprintf(b, sizeof b, "%s/%s", odir, e->d_name);
        long alen = 0, blen = -1;
        char *x = slurp(a, &alen), *y = slurp(b, &blen);
        if (x && y && alen == blen && memcmp(x, y, (size_t)alen) == 0)
            same++;
        free(x);
        free(y);
    }
    closedir(d);
    return same;
}

/* The highest log start node's log reports after a cleaning ("metadata
 * log cleaned behind snapshot ... (log start A -> B"), -1 before any. */
static long long max_cleaned_start(const struct test_broker *b)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return -1;
    long long best = -1;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "metadata log cleaned behind snapshot"))
            continue;
        const char *arrow = strstr(line, " -> ");
        long long v;
        if (arrow && sscanf(arrow + 4, "%lld", &v) == 1 && v > best)
            best = v;
    }
    fclose(f);
    return best;
}

/* The highest log end offset DescribeQuorum at node reports for any voter:
 * at or past what a voter stopped now holds. */
static long long quorum_log_end_bound(struct cluster *c, int node)
{
    /* DescribeQuorum is a controller API: ask the node's controller listener. */
    struct net_client *client = test_client_new();
    assert_int_equal(net_client_add_node(client, node, "127.0.0.1", c->controller_ports[node - 1]), 0);
    long long until = harness_now_ms() + SLACK_MS;
    long long best = -1;
    while (best < 0) {
        struct raft_quorum_view q;
        if (client_describe_quorum(client, node, 2000, &q) == 0 && q.error_code == 0)
            for (int v = 0; v < q.n_voters; v++)
                if (q.voters[v].log_end_offset > best)
                    best = q.voters[v].log_end_offset;
        if (best < 0 && harness_now_ms() > until)
            fail_msg("node %d answers no DescribeQuorum with log end offsets", node);
        if (best < 0)
            usleep(100 * 1000);
    }
    net_client_destroy(client);
    return best;
}

/* KIP-630 end to end: with metadata.max.retention.bytes at 0 the running
 * nodes clean their quorum log behind each snapshot while one node is
 * down, and with small segments the segment files below the new log
 * start are deleted; restarted, it is behind the leader's log start, so it downloads
 * the leader's snapshot with FetchSnapshot (its copy is byte-identical),
 * loads it and lists every topic, including those created while it was
 * down. */
static void test_stopped_node_catches_up_through_fetch_snapshot(void **state)
{
    (void)state;
    /* Small segments (internal.metadata.log.segment.bytes, below Kafka's
     * 8 MiB minimum of metadata.log.segment.bytes): cleaning deletes files. */
    const char *extra[] = {"metadata.log.max.record.bytes.between.snapshots=1500", "metadata.max.retention.bytes=0",
                           "internal.metadata.log.segment.bytes=2048", NULL};
    struct cluster c;
    leader_cluster_start(&c, extra);
    wait_settled(&c, 1, ALL, "", 20000);
    int32_t controller = agreed_controller(&c, -1, SLACK_MS);
    int victim = controller % N + 1;
    assert_true(first_segment_present(&c, controller)); /* nothing cleaned yet */
    broker_stop(&c.nodes[victim - 1]);
    /* The victim holds at most this; the others must clean past it, or it
     * would catch up by plain fetches. */
    long long victim_end_bound = quorum_log_end_bound(&c, controller);
    create_all(&c, controller, 0, TOPICS_BEFORE);
    /* Both running nodes clean their logs (retention applies to each). */
    for (int i = 1; i <= N; i++) {
        if (i == victim)
            continue;
        long long until = harness_now_ms() + SLACK_MS;
        while (max_cleaned_start(&c.nodes[i - 1]) <= victim_end_bound && harness_now_ms() < until)
            usleep(100 * 1000);
        if (max_cleaned_start(&c.nodes[i - 1]) <= victim_end_bound)
            fail_msg("node %d cleaned its metadata log only to %lld, not past %lld", i,
                     max_cleaned_start(&c.nodes[i - 1]), victim_end_bound);
        /* The segments below the new log start are gone from the disk. */
        until = harness_now_ms() + SLACK_MS;
        while (first_segment_present(&c, i) && harness_now_ms() < until)
            usleep(100 * 1000);
        assert_false(first_segment_present(&c, i));
    }

    broker_restart(&c.nodes[victim - 1]);
    wait_topics(&c, victim, TOPICS_BEFORE);
    assert_true(broker_log_contains(&c.nodes[victim - 1], "behind the leader's log start; downloading"));
    assert_true(broker_log_contains(&c.nodes[victim - 1], "downloaded with FetchSnapshot from leader"));
    controller = agreed_controller(&c, -1, SLACK_MS);
    int partial = -1;
    if (controller != victim)
        assert_true(identical_checkpoints(&c, victim, controller, &partial) >= 1);
    else
        identical_checkpoints(&c, victim, victim % N + 1, &partial);
    assert_int_equal(partial, 0);

    /* A node whose log is cleaned and whose every snapshot is corrupt
     * cannot rebuild the offsets below its log start: it refuses to start
     * and says why, rather than starting from an empty image. */
    int broken = -1;
    for (int i = 1; i <= N && broken < 0; i++)
        if (i != victim && i != controller)
            broken = i;
    for (int i = 1; i <= N && broken < 0; i++)
        if (i != victim)
            broken = i;
    assert_false(first_segment_present(&c, broken));
    broker_stop(&c.nodes[broken - 1]);
    assert_true(walk_checkpoints(&c, broken, true) >= 1);
    broker_respawn(&c.nodes[broken - 1]);
    long long until = harness_now_ms() + 60000;
    while (broker_alive(&c.nodes[broken - 1]) && harness_now_ms() < until)
        usleep(100 * 1000);
    if (broker_alive(&c.nodes[broken - 1]))
        fail_msg("node %d started with every snapshot corrupt and its log cleaned", broken);
    assert_true(broker_log_contains(&c.nodes[broken - 1], "no readable snapshot covers the offsets below it"));
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restarted_node_loads_snapshot),
        cmocka_unit_test(test_stopped_node_catches_up_through_fetch_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
