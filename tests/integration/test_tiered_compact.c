/* Tiered compacted topics on a real cairnd with the storage-local plugin.
 * Keyed records with many overwrites and some tombstones go to a topic
 * with cleanup.policy=compact, remote.storage.enable=true, small segments
 * and one byte of local retention. The cleaner cleans, the remote log
 * manager copies the cleaned segments, local retention drops them, and a
 * consumer from offset 0 (served from the remote store below the local
 * start) sees a valid compacted view: offsets increasing up to the last
 * one produced, every key's latest record (value or tombstone) last, no
 * value after a key's tombstone, and within each remote segment no key
 * twice (a copied segment was cleaned before its copy). With
 * cleanup.policy=compact,delete, retention.ms deletes the remote segments
 * of day-old records too and the consumer starts at the new log start.
 * The compact-only case restarts the broker and does it all again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rk_helpers.h"
#include "tiered_common.h"

#define KEYS 40
#define ROUNDS 60     /* versions of each key */
#define TOMBSTONED 10 /* keys 0..9 end with a tombstone */
#define MAX_REMOTE_SEGS 512
#define WAIT_MS 120000
#define RETENTION_MS 3600000 /* compact,delete: an hour */
#define RETENTION_TEXT "3600000"

/* What was produced: each key's last record (offset order is produce order
 * on one partition with an idempotent producer). */
struct produced {
    long count;
    char last_value[KEYS][64]; /* "" for a tombstone */
};

static void value_of(int key, int round, char *out, size_t outlen)
{
    /* Varied lengths so records and batches differ in size. */
    int len = snprintf(out, outlen, "v-%d-%d-", key, round);
    int extra = (key * 7 + round * 3) % 40;
    for (int k = 0; k < extra && (size_t)len < outlen - 1; k++)
        out[len++] = (char)('a' + (key + round + k) % 26);
    out[len] = '\0';
}

static rd_kafka_t *keyed_producer(struct tiered_state *st)
{
    return rk_producer_new(broker_bootstrap(&st->broker), (const char *const[]){"linger.ms", "5", "batch.size", "2048",
                                                                                "enable.idempotence", "true", NULL});
}

static void producer_done(struct tiered_state *st, rd_kafka_t *p, const struct produced *pr)
{
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    rk_producer_destroy(p);
    st->produced = pr->count;
}

/* Rounds [from, to) of a value for each key from first_key on; rounds
 * below old_before are stamped a day ago, the rest now. */
static void produce_rounds(struct tiered_state *st, struct produced *pr, int from, int to, int first_key,
                           int old_before)
{
    int64_t day_old = day_old_ms();
    rd_kafka_t *p = keyed_producer(st);
    for (int round = from; round < to; round++) {
        for (int key = first_key; key < KEYS; key++) {
            char k[16], v[64];
            snprintf(k, sizeof k, "key-%d", key);
            value_of(key, round, v, sizeof v);
            int64_t ts = round < old_before ? day_old + pr->count : 0;
            assert_int_equal(rk_produce_blocking(p, TOPIC, 0, k, strlen(k), v, strlen(v), ts, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
            snprintf(pr->last_value[key], sizeof pr->last_value[key], "%s", v);
            pr->count++;
        }
    }
    producer_done(st, p, pr);
}

/* A tombstone for keys [0, TOMBSTONED). */
static void produce_tombstones(struct tiered_state *st, struct produced *pr)
{
    rd_kafka_t *p = keyed_producer(st);
    for (int key = 0; key < TOMBSTONED; key++) {
        char k[16];
        snprintf(k, sizeof k, "key-%d", key);
        assert_int_equal(rk_produce_blocking(p, TOPIC, 0, k, strlen(k), NULL, 0, 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        pr->last_value[key][0] = '\0';
        pr->count++;
    }
    producer_done(st, p, pr);
}

/* cairnd with storage-local, and TOPIC compacted and tiered with extra
 * topic configs (NULL-terminated key, value list). */
static void start_compacted(struct tiered_state *st, const char *const *topic_extra)
{
    char path_kv[700], dir_kv[900], metrics_kv[64];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    st->metrics_port = harness_free_port();
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", st->metrics_port);
    snprintf(st->remote_root, sizeof st->remote_root, "/tmp/cairn-tiered-XXXXXX");
    assert_non_null(mkdtemp(st->remote_root));
    snprintf(st->remote_dir, sizeof st->remote_dir, "%s/remote", st->remote_root);
    snprintf(dir_kv, sizeof dir_kv, "plugin.storage-local.dir=%s", st->remote_dir);
    broker_start(&st->broker, (const char *const[]){
                                  path_kv, "plugins=storage-local", dir_kv, metrics_kv,
                                  "remote.log.storage.system.enable=true", "remote.log.manager.task.interval.ms=200",
                                  "log.retention.check.interval.ms=200", "log.cleaner.backoff.ms=300", NULL});
    const char *configs[32] = {"cleanup.policy", "compact", "remote.storage.enable", "true", "segment.bytes", "8192",
                               "local.retention.bytes", "1", "min.cleanable.dirty.ratio", "0.01",
                               /* Tombstones would go at once without tiering: kept here. */
                               "delete.retention.ms", "0"};
    size_t n = 12;
    for (size_t i = 0; topic_extra && topic_extra[i] && n < 30; i++)
        configs[n++] = topic_extra[i];
    configs[n] = NULL;
    rk_create_topic(broker_bootstrap(&st->broker), TOPIC, 1, configs);
}

/* Start offsets of the remote segments, ascending (file names). */
static size_t remote_starts(const struct tiered_state *st, int64_t *out, size_t max)
{
    char dir[1200];
    if (!remote_partition_dir(st, dir, sizeof dir))
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".log") == 0)
            out[n++] = strtoll(e->d_name, NULL, 10);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (size_t k = i; k > 0 && out[k - 1] > out[k]; k--) {
            int64_t t = out[k];
            out[k] = out[k - 1];
            out[k - 1] = t;
        }
    return n;
}

/* The smallest over the remote segments of their greatest batch
 * timestamp (-1: no segment), and the first segment's start offset. */
static int64_t remote_oldest_max_timestamp(const struct tiered_state *st, int64_t *first_start)
{
    *first_start = -1;
    char dir[1200];
    if (!remote_partition_dir(st, dir, sizeof dir))
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int64_t oldest = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l <= 4 || strcmp(e->d_name + l - 4, ".log") != 0)
            continue;
        char path[1600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue; /* deleted meanwhile */
        int64_t max_ts = -1;
        uint8_t head[61];
        while (fread(head, 1, sizeof head, f) == sizeof head) {
            /* v2 batch: baseOffset, batchLength (after these 12 bytes), ..., maxTimestamp at 35. */
            int64_t ts = 0;
            for (int i = 0; i < 8; i++)
                ts = (int64_t)((uint64_t)ts << 8 | head[35 + i]);
            if (ts > max_ts)
                max_ts = ts;
            uint32_t len = (uint32_t)head[8] << 24 | (uint32_t)head[9] << 16 | (uint32_t)head[10] << 8 | head[11];
            if (len < 49 || fseek(f, (long)len - 49, SEEK_CUR) != 0)
                break;
        }
        fclose(f);
        int64_t start = strtoll(e->d_name, NULL, 10);
        if (*first_start < 0 || start < *first_start)
            *first_start = start;
        if (oldest < 0 || max_ts < oldest)
            oldest = max_ts;
    }
    closedir(d);
    return oldest;
}

/* Waits until the local log is its active segment alone: every closed
 * segment was cleaned, copied and dropped by local retention. */
static void wait_only_active_local(struct tiered_state *st)
{
    char local[800];
    snprintf(local, sizeof local, "%s/" TOPIC "-0", st->broker.data_dir);
    long long deadline = harness_now_ms() + WAIT_MS;
    int n = -1;
    while ((n = count_files(local, ".log")) != 1 && harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (n != 1) {
        broker_print_log_tail(&st->broker, 40);
        fail_msg("%d local segments (want the active one alone): cleaned segments not copied?", n);
    }
    assert_true(list_offset_v9(st, -4) > 0); /* earliest-local (KIP-1005): the rest is remote */
}

struct view {
    const int64_t *remote_starts;
    size_t remote_count;
    int64_t local_start;
    int64_t last_offset;
    long records;
    long remote_records;
    int64_t seen_in_seg[KEYS]; /* last remote segment index + 1 a key was seen in */
    char last_seen[KEYS][64];
    bool seen[KEYS];
    bool tombstone_seen[KEYS];
};

static bool check_record(const rd_kafka_message_t *m, void *ctx)
{
    struct view *v = ctx;
    int key = -1;
    char text[16] = "";
    if (m->key && m->key_len < sizeof text)
        memcpy(text, m->key, m->key_len);
    if (sscanf(text, "key-%d", &key) != 1 || key < 0 || key >= KEYS) {
        fprintf(stderr, "offset %" PRId64 ": unexpected key '%s'\n", m->offset, text);
        return false;
    }
    if (m->offset <= v->last_offset) {
        fprintf(stderr, "offset %" PRId64 " after %" PRId64 "\n", m->offset, v->last_offset);
        return false;
    }
    v->last_offset = m->offset;
    v->records++;
    if (v->seen[key] && v->tombstone_seen[key] && m->payload) {
        /* A value after a tombstone must be one produced after it: none were. */
        fprintf(stderr, "offset %" PRId64 ": key-%d has a value after its tombstone\n", m->offset, key);
        return false;
    }
    v->seen[key] = true;
    v->tombstone_seen[key] = m->payload == NULL;
    snprintf(v->last_seen[key], sizeof v->last_seen[key], "%.*s", m->payload ? (int)m->len : 0,
             m->payload ? (const char *)m->payload : "");
    if (m->offset < v->local_start && v->remote_count > 0 && m->offset >= v->remote_starts[0]) {
        v->remote_records++;
        size_t s = 0;
        while (s + 1 < v->remote_count && v->remote_starts[s + 1] <= m->offset)
            s++;
        /* A copied segment was cleaned first: a key at most once in it. */
        if (v->seen_in_seg[key] == (int64_t)s + 1) {
            fprintf(stderr, "offset %" PRId64 ": key-%d twice in the remote segment at %" PRId64 "\n", m->offset, key,
                    v->remote_starts[s]);
            return false;
        }
        v->seen_in_seg[key] = (int64_t)s + 1;
    }
    return true;
}

/* A consumer from the beginning sees the compacted view (see the top). */
static void check_compacted_view(struct tiered_state *st, const struct produced *pr)
{
    int64_t log_start = list_offset_v9(st, -2);
    int64_t starts[MAX_REMOTE_SEGS];
    size_t remote = remote_starts(st, starts, MAX_REMOTE_SEGS);
    int64_t local_start = list_offset_v9(st, -4);
    struct view *v = calloc(1, sizeof *v);
    assert_non_null(v);
    *v = (struct view){.remote_starts = starts, .remote_count = remote, .local_start = local_start, .last_offset = -1};
    long got = rk_consume_each(broker_bootstrap(&st->broker), TOPIC, 1, NULL, 90000, check_record, v);
    if (got < 0) {
        broker_print_log_tail(&st->broker, 40);
        fail_msg("the read from offset 0 failed");
    }
    fprintf(stderr,
            "[compact] %ld records read of %ld produced; %ld below the local start %" PRId64
            " from %zu remote segments; log start %" PRId64 "\n",
            v->records, pr->count, v->remote_records, local_start, remote, log_start);
    /* The newest record is never cleaned away: the read reached the end. */
    assert_int_equal(v->last_offset, pr->count - 1);
    assert_true(v->records < pr->count); /* superseded values went */
    assert_true(v->remote_records > 0);  /* and part of the read came from the store */
    for (int key = 0; key < KEYS; key++) {
        if (!v->seen[key])
            fail_msg("key-%d: its latest record is missing", key);
        if (key < TOMBSTONED ? !v->tombstone_seen[key] : strcmp(v->last_seen[key], pr->last_value[key]) != 0)
            fail_msg("key-%d: last read '%s'%s, produced last '%s'", key, v->last_seen[key],
                     v->tombstone_seen[key] ? " (tombstone)" : "", pr->last_value[key]);
    }
    free(v);
}

static void test_compacted_topic_is_tiered(void **state)
{
    struct tiered_state *st = *state;
    start_compacted(st, NULL);
    struct produced pr = {0};
    produce_rounds(st, &pr, 0, ROUNDS / 2, 0, 0);
    wait_only_active_local(st);
    /* The tombstoned keys' values are in remote segments now; their
     * tombstones and newer values of the other keys come after. */
    produce_tombstones(st, &pr);
    produce_rounds(st, &pr, ROUNDS / 2, ROUNDS, TOMBSTONED, 0);
    wait_only_active_local(st);
    assert_true(metric_value(st, "cairn_remote_copy_segments_total") >= 3);
    assert_int_equal(list_offset_v9(st, -2), 0); /* compact only: nothing deleted */
    check_compacted_view(st, &pr);

    /* After a restart the cleaner starts from the copied end: newer values
     * are cleaned and copied after the remote segments, never into them. */
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    produce_rounds(st, &pr, ROUNDS, ROUNDS + ROUNDS / 2, TOMBSTONED, 0);
    wait_only_active_local(st);
    check_compacted_view(st, &pr);
    st->broker.passed = true;
}

static void test_compact_delete_retention_deletes_remote_segments(void **state)
{
    struct tiered_state *st = *state;
    /* The first half of the rounds is a day old: retention.ms takes the
     * remote segments holding only those. */
    start_compacted(st,
                    (const char *const[]){"cleanup.policy", "compact,delete", "retention.ms", RETENTION_TEXT, NULL});
    struct produced pr = {0};
    /* The day-old half is cleaned and copied before the recent half comes:
     * a cleaning that found both would group old and recent records into
     * one segment, which retention.ms may not delete (seen under load).
     * Retention then deletes every remote segment while local copies may
     * remain: the log start must move past them, or they are copied and
     * deleted again without end (the bug this found). */
    produce_rounds(st, &pr, 0, ROUNDS / 2, 0, ROUNDS / 2);
    wait_only_active_local(st);
    produce_rounds(st, &pr, ROUNDS / 2, ROUNDS, 0, ROUNDS / 2);
    produce_tombstones(st, &pr);
    wait_only_active_local(st);
    /* Done when every remote segment left holds a recent record and the
     * log starts at the first of them. */
    long long deadline = harness_now_ms() + WAIT_MS;
    int64_t oldest_ts = -1, first_remote = -1, start = -1;
    for (;;) {
        int64_t cutoff = (int64_t)time(NULL) * 1000 - RETENTION_MS;
        oldest_ts = remote_oldest_max_timestamp(st, &first_remote);
        start = list_offset_v9(st, -2);
        if ((oldest_ts >= cutoff && start == first_remote && start > 0) || harness_now_ms() >= deadline)
            break;
        usleep(200 * 1000);
    }
    if (start <= 0 || start != first_remote || oldest_ts < (int64_t)time(NULL) * 1000 - RETENTION_MS) {
        broker_print_log_tail(&st->broker, 40);
        fail_msg("remote retention: log start %" PRId64 ", first remote segment %" PRId64
                 ", oldest remote max timestamp %" PRId64,
                 start, first_remote, oldest_ts);
    }
    assert_true(metric_value(st, "cairn_remote_delete_segments_total") > 0);
    /* Every key's newest record is in the recent half: all still there. */
    check_compacted_view(st, &pr);
    st->broker.passed = true;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compacted_topic_is_tiered, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_compact_delete_retention_deletes_remote_segments, tiered_setup,
                                        tiered_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
