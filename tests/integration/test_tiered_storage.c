/* Tiered storage against a real cairnd with the storage-local plugin:
 * many small segments and a tiny local retention, so almost everything
 * lives only in the remote directory; a librdkafka consumer from offset 0
 * must read every record byte for byte, before and after a restart, and
 * after a kill -9 in the middle of copying. The remote segment list is
 * checked against the remote directory: every segment recorded as copied
 * is there whole. Also: ListOffsets -2/-4/-5, DeleteRecords into the remote
 * part, read_committed over remote aborted transactions, topic deletion
 * removing the remote segments, ListOffsets by timestamp across remote
 * segments, read-ahead for a sequential reader, and a large segment read
 * in chunks (a fetch downloads only the chunk it needs), and the copier
 * threads' background priority. A corrupt or missing
 * remote object and a store outage are in test_tiered_faults.c. */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"
#include "tiered_common.h"

/* Every segment the metadata file records as copied is whole in the
 * remote dir; returns how many it records. */
static int check_metadata(const struct tiered_state *st)
{
    char meta_dir[800], remote[1200];
    snprintf(meta_dir, sizeof meta_dir, "%s/remote-log-metadata", st->broker.data_dir);
    DIR *d = opendir(meta_dir);
    assert_non_null(d);
    int finished = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, TOPIC "-0-", strlen(TOPIC "-0-")) != 0 || !strstr(e->d_name, ".json") ||
            strstr(e->d_name, ".tmp"))
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", meta_dir, e->d_name);
        json_error_t jerr;
        json_t *root = json_load_file(path, 0, &jerr);
        if (!root)
            fail_msg("%s: %s", path, jerr.text);
        assert_true(remote_partition_dir(st, remote, sizeof remote));
        json_t *segs = json_object_get(root, "segments");
        for (size_t i = 0; i < json_array_size(segs); i++) {
            json_t *s = json_array_get(segs, i);
            if (strcmp(json_string_value(json_object_get(s, "state")), "COPY_SEGMENT_FINISHED") != 0)
                continue;
            char file[1700];
            snprintf(file, sizeof file, "%s/%020lld-%s.log", remote,
                     (long long)json_integer_value(json_object_get(s, "start_offset")),
                     json_string_value(json_object_get(s, "segment_id")));
            struct stat sb;
            if (stat(file, &sb) != 0)
                fail_msg("copied segment %s is missing", file);
            assert_int_equal(sb.st_size, json_integer_value(json_object_get(s, "segment_size_bytes")));
            finished++;
        }
        json_decref(root);
    }
    closedir(d);
    return finished;
}

/* Bytes of the remote segment cache on disk. */
static long long cache_bytes(const struct tiered_state *st)
{
    char dir[800];
    snprintf(dir, sizeof dir, "%s/remote-log-cache", st->broker.data_dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[1100];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &sb) == 0)
            total += sb.st_size;
    }
    closedir(d);
    return total;
}

static int64_t query_low_watermark(const struct tiered_state *st)
{
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(&st->broker), NULL);
    int64_t low = -1, high = -1;
    assert_int_equal(rd_kafka_query_watermark_offsets(rk, TOPIC, 0, &low, &high, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(high, st->produced);
    rd_kafka_destroy(rk);
    return low;
}

/* DeleteRecords of partition 0 before `before`; returns the low watermark
 * the broker answers. */
static int64_t delete_records_before(const struct tiered_state *st, int64_t before)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), NULL);
    int64_t low = -1;
    assert_int_equal(rk_delete_records(rk, TOPIC, before, &low), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
    return low;
}

/* Waits until the remote segment based at offset 0 is deleted. */
static void wait_first_remote_gone(const struct tiered_state *st)
{
    char remote[1200];
    assert_true(remote_partition_dir(st, remote, sizeof remote));
    long long deadline = harness_now_ms() + 30000;
    while (count_files(remote, ".log") > 0 && harness_now_ms() < deadline) {
        DIR *d = opendir(remote);
        bool first = false;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            first |= strncmp(e->d_name, "00000000000000000000-", 21) == 0;
        if (d)
            closedir(d);
        if (!first)
            return;
        usleep(200 * 1000);
    }
    fail_msg("the remote segment at offset 0 outlived DeleteRecords");
}

static void test_tiered_read_restart_and_kill(void **state)
{
    struct tiered_state *st = *state;
    start_tiered(st, TOPIC);
    produce_round(st, RECORDS_PER_ROUND);
    /* Only the active segment (and perhaps the one just rolled) stays. */
    wait_tiered(st, 2, 10);
    assert_int_equal(query_low_watermark(st), 0); /* ListOffsets -2 counts remote segments */
    /* KIP-1005: earliest-local is the first local segment's base, well past 0;
     * latest-tiered (-5) is the end of the copied prefix, just below it or more. */
    int64_t local_start = list_offset_v9(st, -4);
    assert_true(local_start > 0);
    assert_true(list_offset_v9(st, -5) >= local_start - 1);
    assert_int_equal(list_offset_v9(st, -2), 0);
    consume_all_from_zero(st);
    /* The cache stayed within its bound (plus the segment just landed). */
    assert_true(cache_bytes(st) <= 100000 + 32768);
    assert_true(metric_value(st, "cairn_remote_copy_segments_total") >= 10);
    assert_int_equal(metric_value(st, "cairn_remote_copy_lag_segments"), 0);
    assert_int_equal(metric_value(st, "cairn_remote_copy_lag_bytes"), 0);
    assert_true(metric_value(st, "cairn_remote_fetch_requests_total") >= 10);
    int copied = check_metadata(st);
    assert_true(copied >= 10);

    /* A clean restart: the remote list is read back. */
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    assert_int_equal(query_low_watermark(st), 0);
    consume_all_from_zero(st);

    /* kill -9 while copying: more rolled segments, killed at once. */
    produce_round(st, RECORDS_PER_ROUND);
    broker_kill9(&st->broker);
    int after_kill = check_metadata(st); /* nothing recorded as copied is partial */
    assert_true(after_kill >= copied);
    broker_restart(&st->broker);
    wait_tiered(st, 2, copied + 10);
    consume_all_from_zero(st);
    assert_true(check_metadata(st) >= copied + 10);

    /* DeleteRecords into the remote part: the start moves there, the remote
     * segments wholly below it go, and the start survives a restart. */
    assert_int_equal(delete_records_before(st, 1000), 1000);
    assert_int_equal(query_low_watermark(st), 1000);
    wait_first_remote_gone(st);
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    assert_int_equal(query_low_watermark(st), 1000);
    broker_mark_passed(&st->broker);
}

#define READ_AHEAD_STARTED "cairn_remote_read_ahead_started_total"
#define READ_AHEAD_HITS "cairn_remote_read_ahead_hits_total"

/* A consumer from offset 0 across many remote segments: read-ahead
 * (remote.log.read.ahead.segments, 1 by default) downloads the next
 * segment while the reader is on one, and later fetches find it ready;
 * every record is still byte for byte what was produced. At 0 nothing is
 * read ahead and every segment is fetched when the reader reaches it. */
static void test_tiered_read_ahead(void **state)
{
    struct tiered_state *st = *state;
    start_tiered(st, TOPIC);
    produce_round(st, RECORDS_PER_ROUND);
    wait_tiered(st, 2, 10);
    consume_all_from_zero(st);
    int64_t started = metric_value(st, READ_AHEAD_STARTED);
    int64_t hits = metric_value(st, READ_AHEAD_HITS);
    fprintf(stderr, "read-ahead on: %lld started, %lld found ready, %lld cache misses\n", (long long)started,
            (long long)hits, (long long)metric_value(st, "cairn_remote_cache_misses_total"));
    assert_true(started > 0);
    assert_true(hits > 0);
    assert_true(hits <= started);

    broker_stop(&st->broker);
    broker_add_override(&st->broker, "remote.log.read.ahead.segments=0");
    broker_restart(&st->broker); /* the cache starts empty again */
    consume_all_from_zero(st);
    assert_int_equal(metric_value(st, READ_AHEAD_STARTED), 0);
    assert_int_equal(metric_value(st, READ_AHEAD_HITS), 0);
    assert_true(metric_value(st, "cairn_remote_cache_misses_total") >= 10); /* each segment on demand */
    broker_mark_passed(&st->broker);
}

#define CHUNK_BYTES (256 * 1024)
#define FETCH_BYTES "cairn_remote_fetch_bytes_total"
#define SEGMENT_FETCHES "cairn_remote_fetch_latency_seconds_count{object=\"segment\"}"
#define SEGMENT_FETCHES_INF "cairn_remote_fetch_latency_seconds_bucket{object=\"segment\",le=\"+Inf\"}"
#define INDEX_FETCHES "cairn_remote_fetch_latency_seconds_count{object=\"index\"}"

/* The partition's topic id, from its remote folder's name. */
static void remote_topic_id(const struct tiered_state *st, uint8_t id[16])
{
    char dir[1200];
    assert_true(remote_partition_dir(st, dir, sizeof dir));
    const char *hex = strrchr(dir, '/') + 1;
    assert_int_equal(strlen(hex), 32);
    for (int i = 0; i < 16; i++) {
        unsigned byte = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        id[i] = (uint8_t)byte;
    }
}

/* A 4 MiB remote segment read in 256 KiB chunks: a fetch at offset 0
 * downloads about one chunk (remote.log.chunk.size.bytes), not the whole
 * segment; so does a ListOffsets by timestamp in the middle of it (the
 * time and offset indexes say which chunk); a consumer from 0 then reads
 * every record byte for byte, and with read-ahead the next chunks of the
 * same segment are found ready. */
static void test_tiered_chunked_read(void **state)
{
    struct tiered_state *st = *state;
    char chunk_kv[64];
    snprintf(chunk_kv, sizeof chunk_kv, "remote.log.chunk.size.bytes=%d", CHUNK_BYTES);
    start_tiered_with(st, TOPIC,
                      (const char *const[]){chunk_kv, "remote.log.index.file.cache.total.size.bytes=67108864",
                                            "remote.log.read.ahead.segments=0", NULL},
                      "4194304");
    st->ts_base = day_old_ms(); /* record i stamped ts_base + 10 * i */
    produce_round(st, 40000);   /* about 5 MiB: the first segment rolls and is copied */
    wait_tiered(st, 1, 1);
    assert_true(list_offset_v9(st, -4) > 0);
    assert_int_equal(metric_value(st, FETCH_BYTES), 0);
    assert_int_equal(metric_value(st, SEGMENT_FETCHES), 0);

    /* One fetch from 0 (retried while the chunk downloads). */
    uint8_t id[16];
    remote_topic_id(st, id);
    struct raw_session s = {.fd = raw_connect(broker_port(&st->broker), 5000), .correlation = 1};
    assert_true(s.fd >= 0);
    struct raw_fetch_answer a;
    long long deadline = harness_now_ms() + 30000;
    do {
        raw_fetch_v17(&s, id, 0, false, &a);
        assert_int_equal(a.error, 0);
    } while (a.data_records == 0 && harness_now_ms() < deadline);
    close(s.fd);
    assert_true(a.data_records > 0);
    int64_t downloaded = metric_value(st, FETCH_BYTES);
    fprintf(stderr, "a fetch at 0 downloaded %lld bytes of a 4 MiB segment\n", (long long)downloaded);
    assert_true(downloaded > 0);
    assert_true(downloaded < 2 * CHUNK_BYTES); /* a chunk and at most one batch past its mark */
    assert_int_equal(metric_value(st, "cairn_remote_fetch_requests_total"), 1);
    /* Its download is in the latency histogram, as are the indexes read
     * to find the chunk. */
    assert_int_equal(metric_value(st, SEGMENT_FETCHES), 1);
    assert_int_equal(metric_value(st, SEGMENT_FETCHES_INF), 1);
    int64_t index_fetches = metric_value(st, INDEX_FETCHES);
    assert_true(index_fetches >= 1);

    /* By timestamp, mid-segment: the chunk holding the answer. */
    int64_t middle = list_offset_v9(st, -4) / 2;
    assert_int_equal(list_offset_v9(st, st->ts_base + 10 * middle), middle);
    assert_int_equal(list_offset_v9(st, st->ts_base + 10 * middle - 5), middle);
    int64_t by_timestamp = metric_value(st, FETCH_BYTES) - downloaded;
    fprintf(stderr, "a timestamp lookup at offset %lld downloaded %lld bytes\n", (long long)middle,
            (long long)by_timestamp);
    /* One chunk; two when the answer's batch is the first of the next
     * chunk (the indexes cannot tell): never the 4 MiB segment. */
    assert_true(by_timestamp > 0);
    assert_true(by_timestamp < 3 * CHUNK_BYTES);
    assert_true(metric_value(st, "cairn_remote_fetch_requests_total") <= 3);
    /* Every chunk download timed: the count grew with them. */
    int64_t segment_fetches = metric_value(st, SEGMENT_FETCHES);
    assert_true(segment_fetches > 1);
    assert_true(segment_fetches <= metric_value(st, "cairn_remote_fetch_requests_total"));
    assert_true(metric_value(st, INDEX_FETCHES) > index_fetches); /* the time index */

    consume_all_from_zero(st);

    /* Read-ahead over chunks: the next chunks of the segment come ready. */
    broker_stop(&st->broker);
    broker_add_override(&st->broker, "remote.log.read.ahead.segments=2");
    broker_restart(&st->broker);
    consume_all_from_zero(st);
    assert_true(metric_value(st, "cairn_remote_read_ahead_started_total") > 0);
    assert_true(metric_value(st, "cairn_remote_read_ahead_hits_total") > 0);
    broker_mark_passed(&st->broker);
}

#define TXN_TOPIC "tiered-txn"
#define TXN_ROUNDS 60
#define TXN_RECORDS 40

/* Transaction r holds values "txn-<r>-<i>-" padded to 200 bytes (so
 * segments roll often); every fourth is aborted. */
static bool txn_aborted(long r)
{
    return r % 4 == 1;
}

static void txn_value(long r, long i, char out[256])
{
    int len = snprintf(out, 256, "txn-%ld-%ld-", r, i);
    memset(out + len, 'x', 200 - (size_t)len);
    out[200] = '\0';
}

struct txn_cursor {
    long round, index;
};

static bool check_committed(const rd_kafka_message_t *msg, void *ctx)
{
    struct txn_cursor *c = ctx;
    while (txn_aborted(c->round))
        c->round++;
    char want[256];
    txn_value(c->round, c->index, want);
    if (msg->len != strlen(want) || memcmp(msg->payload, want, msg->len) != 0) {
        fprintf(stderr, "at offset %lld: '%.*s', expected '%s'\n", (long long)msg->offset, (int)msg->len,
                (const char *)msg->payload, want);
        return false;
    }
    if (++c->index == TXN_RECORDS) {
        c->index = 0;
        c->round++;
    }
    return true;
}

/* Aborted transactions whose data and markers now live only remotely stay
 * invisible to a read_committed consumer (librdkafka's default). */
static void test_tiered_read_committed(void **state)
{
    struct tiered_state *st = *state;
    start_tiered(st, TXN_TOPIC);
    rd_kafka_t *p = rk_producer_new(
        broker_bootstrap(&st->broker),
        (const char *const[]){"transactional.id", "tiered-txn", "batch.size", "16384", NULL});
    rk_expect_ok(rd_kafka_init_transactions(p, 30000), "init_transactions");
    for (long r = 0; r < TXN_ROUNDS; r++) {
        rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
        for (long i = 0; i < TXN_RECORDS; i++) {
            char value[256];
            txn_value(r, i, value);
            assert_int_equal(rk_produce_blocking(p, TXN_TOPIC, 0, NULL, 0, value, strlen(value), 0, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        /* Written first, so an abort leaves data and a marker in the log. */
        assert_int_equal(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
        if (txn_aborted(r))
            rk_expect_ok(rd_kafka_abort_transaction(p, 30000), "abort_transaction");
        else
            rk_expect_ok(rd_kafka_commit_transaction(p, 30000), "commit_transaction");
    }
    rk_producer_destroy(p);
    long committed = 0;
    for (long r = 0; r < TXN_ROUNDS; r++)
        committed += txn_aborted(r) ? 0 : TXN_RECORDS;
    char local[800];
    snprintf(local, sizeof local, "%s/" TXN_TOPIC "-0", st->broker.data_dir);
    long long deadline = harness_now_ms() + 60000;
    while (count_files(local, ".log") > 2 && harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_true(count_files(local, ".log") <= 2);
    struct txn_cursor cursor = {0, 0};
    long want = committed;
    long got = rk_consume_each(broker_bootstrap(&st->broker), TXN_TOPIC, 1, &want, 90000, check_committed, &cursor);
    assert_int_equal(got, committed);

    /* Deleting the topic deletes its remote segments and its metadata file. */
    char remote[1200], meta_dir[800], cmd[1400];
    snprintf(remote, sizeof remote, "%s/" TXN_TOPIC "-0", st->remote_dir);
    snprintf(meta_dir, sizeof meta_dir, "%s/remote-log-metadata", st->broker.data_dir);
    assert_true(count_files(meta_dir, ".json") == 1);
    snprintf(cmd, sizeof cmd, "%s topic delete " TXN_TOPIC " -b %s >/dev/null", CAIRN_CLI_PATH,
             broker_bootstrap(&st->broker));
    assert_int_equal(system(cmd), 0);
    deadline = harness_now_ms() + 30000;
    struct stat sb;
    while ((stat(remote, &sb) == 0 || count_files(meta_dir, ".json") > 0) && harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (stat(remote, &sb) == 0)
        fail_msg("%s outlived the topic", remote);
    assert_int_equal(count_files(meta_dir, ".json"), 0);
    broker_mark_passed(&st->broker);
}

/* ListOffsets by timestamp answers from the remote segments: the first
 * offset whose timestamp is at or after the target, even far below the
 * local start; then from the local log; -1 past the last. */
static void test_tiered_offsets_by_timestamp(void **state)
{
    struct tiered_state *st = *state;
    start_stamped_round(st);
    int64_t local_start = list_offset_v9(st, -4);
    assert_true(local_start > 1000);
    assert_int_equal(list_offset_v9(st, -2), 0);
    const int64_t probes[] = {0, 1, 137, 999, local_start - 1, local_start, st->produced - 1};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        int64_t k = probes[i];
        assert_int_equal(list_offset_v9(st, st->ts_base + 10 * k), k);
        if (k > 0) /* between two records: the later one */
            assert_int_equal(list_offset_v9(st, st->ts_base + 10 * k - 5), k);
    }
    assert_int_equal(list_offset_v9(st, st->ts_base - 100000), 0);
    assert_int_equal(list_offset_v9(st, st->ts_base + 10 * st->produced), -1);
    /* Below the log start (DeleteRecords): the first offset at or after it. */
    assert_int_equal(delete_records_before(st, 500), 500);
    assert_int_equal(list_offset_v9(st, st->ts_base + 10 * 100), 500);
    assert_int_equal(list_offset_v9(st, st->ts_base + 10 * 600), 600);
    assert_int_equal(list_offset_v9(st, -2), 500);
    broker_mark_passed(&st->broker);
}

/* The copier threads run at background priority (nice 10, SCHED_BATCH)
 * so a producer's request path wins the cores from a copy: read from
 * /proc for every thread named cairn-rlm-copy, after copies ran on them. */
static void test_tiered_copier_background_priority(void **state)
{
    struct tiered_state *st = *state;
    start_tiered(st, TOPIC);
    produce_round(st, RECORDS_PER_ROUND);
    wait_tiered(st, 2, 10);
    char task_dir[64];
    snprintf(task_dir, sizeof task_dir, "/proc/%d/task", (int)broker_pid(&st->broker));
    DIR *d = opendir(task_dir);
    assert_non_null(d);
    int copiers = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[600], comm[64] = "", stat_text[2048] = "";
        snprintf(path, sizeof path, "%s/%s/comm", task_dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* a thread that just ended */
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        if (strcmp(comm, "cairn-rlm-copy\n") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/stat", task_dir, e->d_name);
        f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(stat_text, sizeof stat_text, f));
        fclose(f);
        /* After the ")" that ends comm: field 3 (state) onwards; nice is
         * field 19, policy field 41 (proc(5)). */
        const char *rest = strrchr(stat_text, ')');
        assert_non_null(rest);
        long fields[40];
        int n = 0;
        char *cursor = (char *)rest + 2;
        strtok(cursor, " "); /* state */
        for (char *tok = strtok(NULL, " "); tok && n < 40; tok = strtok(NULL, " "))
            fields[n++] = strtol(tok, NULL, 10);
        assert_true(n >= 39);
        assert_int_equal(fields[19 - 4], 10); /* fields[0] is field 4 */
        assert_int_equal(fields[41 - 4], 3);  /* SCHED_BATCH */
        copiers++;
    }
    closedir(d);
    assert_true(copiers >= 1);
    assert_true(metric_value(st, "cairn_remote_copy_segments_total") >= 10);
    broker_mark_passed(&st->broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tiered_read_restart_and_kill, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_read_ahead, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_chunked_read, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_read_committed, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_offsets_by_timestamp, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_copier_background_priority, tiered_setup, tiered_teardown),
    };
    /* CAIRN_TEST_FILTER=<glob> runs only the matching tests (by hand). */
    if (getenv("CAIRN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CAIRN_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
