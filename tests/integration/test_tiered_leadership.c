/* Tiered storage follows leadership, through three cairnd processes
 * sharing one storage-local directory as the remote store. A tiered topic
 * with replication factor 3, small segments and one byte of local
 * retention: only the leader copies (its cairn_remote_copy_segments_total
 * moves, the followers' stay 0, every object in the store is one the
 * manifest lists as copied by the leader), and the followers still trim
 * their local logs, below the copied end the leader published. After kill
 * -9 of the leader, the new leader copies on from the copied end (nothing
 * below it a second time), no object is left unlisted, and a consumer
 * from offset 0 reads every record byte for byte, the old leader's copies
 * served from the store. Restarted, the old leader catches up from
 * behind the new leader's local start and trims as a follower. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "rk_helpers.h"
#include "tiered_common.h"

#define ROUND RECORDS_PER_ROUND
#define CLUSTER_ID "VGllcmVkTGVhZGVyc2hpcA"
#define MANIFEST_ID "ffffffffffffffffffffffffffffffff"
#define COPIED "cairn_remote_copy_segments_total"

/* Only its remote_root and remote_dir are used: the store the three nodes share. */
static struct tiered_state store_at;

static void produce(const char *bootstrap, long from, long count)
{
    rd_kafka_t *p = rk_producer_new(bootstrap, (const char *const[]){"acks", "all", "enable.idempotence", "true",
                                                                     "linger.ms", "5", "batch.size", "16384", NULL});
    for (long i = from; i < from + count; i++) {
        char key[32], value[256];
        snprintf(key, sizeof key, "key-%ld", i);
        tiered_record_value(i, value, sizeof value);
        assert_int_equal(rk_produce_blocking(p, TOPIC, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);
    rk_producer_destroy(p);
}

/* What the store holds: the manifest's segments (start, end, broker, state)
 * and the segment objects (.log) by name. */
struct store {
    int count;
    int64_t start[256], end[256];
    int broker[256];
    bool finished[256];
    char names[256][64]; /* "<base, 20 digits>-<id>" of each manifest entry */
    int objects;         /* .log objects other than the manifest */
    char object_names[256][64];
};

static void read_store(struct store *s)
{
    memset(s, 0, sizeof *s);
    char dir[1200];
    if (!remote_partition_dir(&store_at, dir, sizeof dir))
        return;
    char path[1400];
    snprintf(path, sizeof path, "%s/%020d-" MANIFEST_ID ".log", dir, 0);
    json_t *root = json_load_file(path, 0, NULL);
    json_t *segs = root ? json_object_get(root, "segments") : NULL;
    for (size_t i = 0; segs && i < json_array_size(segs) && s->count < 256; i++) {
        json_t *e = json_array_get(segs, i);
        int n = s->count++;
        s->start[n] = json_integer_value(json_object_get(e, "start_offset"));
        s->end[n] = json_integer_value(json_object_get(e, "end_offset"));
        s->broker[n] = (int)json_integer_value(json_object_get(e, "broker_id"));
        s->finished[n] = strcmp(json_string_value(json_object_get(e, "state")), "COPY_SEGMENT_FINISHED") == 0;
        snprintf(s->names[n], sizeof s->names[n], "%020lld-%s", (long long)s->start[n],
                 json_string_value(json_object_get(e, "segment_id")));
    }
    json_decref(root);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && s->objects < 256) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0 && !strstr(e->d_name, MANIFEST_ID))
            snprintf(s->object_names[s->objects++], sizeof s->object_names[0], "%.*s", (int)(l - 4), e->d_name);
    }
    if (d)
        closedir(d);
}

/* The end of the copied prefix the manifest records (exclusive). */
static int64_t copied_end(const struct store *s)
{
    int64_t end = 0;
    for (int i = 0; i < s->count; i++)
        if (s->finished[i] && s->end[i] + 1 > end)
            end = s->end[i] + 1;
    return end;
}

/* Every segment object is a finished manifest entry and every entry's
 * object is there: nothing copied twice under two names, nothing orphaned. */
static bool store_matches_manifest(const struct store *s)
{
    if (s->objects != s->count)
        return false;
    for (int i = 0; i < s->objects; i++) {
        bool listed = false;
        for (int k = 0; k < s->count && !listed; k++)
            listed = s->finished[k] && strcmp(s->names[k], s->object_names[i]) == 0;
        if (!listed)
            return false;
    }
    return true;
}

/* A copy may be under way: waits until the store settles on the list. */
static void wait_store_matches_manifest(struct store *s)
{
    long long deadline = harness_now_ms() + 30000;
    while (read_store(s), !store_matches_manifest(s)) {
        if (harness_now_ms() > deadline)
            fail_msg("the store holds %d segment objects, the manifest %d entries", s->objects, s->count);
        usleep(200 * 1000);
    }
}

static int local_segments(const struct test_broker *b)
{
    char dir[800];
    snprintf(dir, sizeof dir, "%s/" TOPIC "-0", b->data_dir);
    return count_files(dir, ".log");
}

/* Waits until every live node other than leader holds at most max local
 * segments: they trimmed below the copied end the leader published. */
static void wait_followers_trimmed(struct cluster *c, int32_t leader, int32_t dead, int max)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        bool done = true;
        for (int i = 0; i < N; i++)
            if (i + 1 != leader && i + 1 != dead && local_segments(&c->nodes[i]) > max)
                done = false;
        if (done)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("a follower kept more than %d local segments", max);
        usleep(200 * 1000);
    }
}

static void wait_copied_end_at_least(int64_t want, struct store *s)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        read_store(s);
        if (copied_end(s) >= want)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("the manifest's copied end is %lld, want %lld", (long long)copied_end(s), (long long)want);
        usleep(200 * 1000);
    }
}

static int32_t leader_of(struct cluster *c, int node)
{
    struct view v;
    return metadata(c, node, TOPIC, &v) && v.partitions == 1 ? v.p[0].leader : -1;
}

static void test_only_the_leader_tiers(void **state)
{
    (void)state;
    snprintf(store_at.remote_root, sizeof store_at.remote_root, "/tmp/cairn-tierlead-XXXXXX");
    assert_non_null(mkdtemp(store_at.remote_root));
    snprintf(store_at.remote_dir, sizeof store_at.remote_dir, "%s/remote", store_at.remote_root);
    char path_kv[700], dir_kv[900];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(dir_kv, sizeof dir_kv, "plugin.storage-local.dir=%s", store_at.remote_dir);
    const char *settings[] = {"replica.fetch.backoff.ms=200",
                              path_kv,
                              "plugins=storage-local",
                              dir_kv,
                              "remote.log.storage.system.enable=true",
                              "remote.log.manager.task.interval.ms=200",
                              "log.retention.check.interval.ms=200",
                              NULL};
    struct cluster c;
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 10000,
                                .internal_partitions = 1,
                                .settings = settings};
    cluster_start(&c, &o);
    const char *configs[] = {
        "segment.bytes", "32768", "remote.storage.enable", "true", "local.retention.bytes", "1", NULL};
    int32_t leader = create_replicated(&c, TOPIC, configs);
    assert_true(leader >= 1 && leader <= N);
    char bootstrap[256];
    snprintf(bootstrap, sizeof bootstrap, "%s,%s,%s", broker_bootstrap(&c.nodes[0]), broker_bootstrap(&c.nodes[1]),
             broker_bootstrap(&c.nodes[2]));
    produce(bootstrap, 0, ROUND);

    /* Only the leader copies; the followers learn its copied end. */
    struct store s;
    wait_copied_end_at_least(ROUND / 2, &s);
    wait_followers_trimmed(&c, leader, -1, 3);
    for (int n = 1; n <= N; n++)
        if (n != leader)
            assert_int_equal(metric(&c, n, COPIED), 0);
    wait_store_matches_manifest(&s);
    int64_t first_end = copied_end(&s);
    for (int i = 0; i < s.count; i++)
        assert_int_equal(s.broker[i], leader);
    long long leader_copies = metric(&c, leader, COPIED);
    assert_true(leader_copies >= 10);
    fprintf(stderr, "[test] leader %d copied %lld segments, copied end %lld\n", leader, leader_copies,
            (long long)first_end);

    /* kill -9 of the leader; a survivor takes over and copies on. */
    broker_kill9(&c.nodes[leader - 1]);
    int32_t other = leader % N + 1;
    long long deadline = harness_now_ms() + 60000;
    int32_t next;
    while ((next = leader_of(&c, other)) == leader || next < 1) {
        if (harness_now_ms() > deadline)
            fail_msg("no new leader after broker %d died", leader);
        usleep(200 * 1000);
    }
    fprintf(stderr, "[test] broker %d leads now\n", next);
    produce(bootstrap, ROUND, ROUND);
    wait_copied_end_at_least(first_end + ROUND / 2, &s);
    wait_followers_trimmed(&c, next, leader, 3);
    wait_store_matches_manifest(&s);
    int32_t follower = 6 - leader - next;
    assert_int_equal(metric(&c, follower, COPIED), 0);
    /* Nothing below the old copied end copied again (one segment may straddle it). */
    int again = 0, straddle = 0;
    for (int i = 0; i < s.count; i++) {
        if (s.broker[i] == next) {
            again += s.end[i] < first_end;
            straddle += s.start[i] < first_end;
        } else {
            assert_int_equal(s.broker[i], leader);
        }
    }
    assert_int_equal(again, 0);
    assert_true(straddle <= 1);
    assert_true(metric(&c, next, COPIED) >= 5);

    /* From offset 0: the old leader's copies, then the new leader's. */
    long next_record = 0, want = 2 * ROUND;
    long got = rk_consume_each(bootstrap, TOPIC, 1, &want, 90000, tiered_check_record, &next_record);
    assert_int_equal(got, 2 * ROUND);
    assert_int_equal(next_record, 2 * ROUND);
    assert_true(metric(&c, next, "cairn_remote_fetch_requests_total") > 0);

    /* The old leader, back as a follower behind the new leader's local
     * start, catches up (the leader serves it from the store), rejoins the
     * ISR and trims below the copied end, copying nothing itself. */
    broker_restart(&c.nodes[leader - 1]);
    deadline = harness_now_ms() + 60000;
    struct view v;
    while (!metadata(&c, next, TOPIC, &v) || v.partitions != 1 || v.p[0].isr_count != N) {
        if (harness_now_ms() > deadline)
            fail_msg("broker %d did not rejoin the ISR", leader);
        usleep(200 * 1000);
    }
    wait_followers_trimmed(&c, next, -1, 3);
    assert_int_equal(metric(&c, leader, COPIED), 0);
    assert_int_equal(metric(&c, follower, COPIED), 0);

    cluster_stop(&c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_at.remote_root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_the_leader_tiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
