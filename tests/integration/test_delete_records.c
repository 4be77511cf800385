/* DeleteRecords and DescribeLogDirs against a real cairnd: librdkafka's
 * rd_kafka_DeleteRecords on a log of many segments (low watermark, old
 * segment files gone, consumers and ListOffsets starting at the new
 * offset, the offset kept over a clean restart and a kill -9), the error
 * cases at v0 and v2, DescribeLogDirs v0/v4 compared with the files and
 * the file system (one and two log dirs), and both APIs' authorization
 * and audit with the test authorizer plugin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness.h"
#include "raw_session.h"
#include "rk_helpers.h"

#define ERR_NONE 0
#define ERR_OFFSET_OUT_OF_RANGE 1
#define ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define ERR_INVALID_TOPIC_EXCEPTION 17
#define ERR_TOPIC_AUTHORIZATION_FAILED 29
#define ERR_CLUSTER_AUTHORIZATION_FAILED 31
#define ERR_POLICY_VIOLATION 44

#define TOPIC "dr-segments"
#define HW_TOPIC "dr-hw"
#define COMPACT_TOPIC "dr-compact"
#define RECORDS 40

/* Owned by the test's main thread. */
struct dr_state {
    struct test_broker broker;
    rd_kafka_t *producer;
    int passed;
};

/* ---- raw DeleteRecords (one partition) ---- */

/* Answers below are plain values filled by the parsers, owned by the caller. */
struct delete_answer {
    int16_t error;
    int64_t low_watermark;
};

static void get_string(struct raw_reader *r, bool flexible, char *out, size_t outlen)
{
    if (flexible) {
        if (!raw_get_compact_string(r, out, outlen))
            out[0] = '\0';
        return;
    }
    int16_t len = raw_get_i16(r);
    size_t n = len > 0 ? (size_t)len : 0;
    if (r->len - r->pos < n) {
        r->overflow = true;
        out[0] = '\0';
        return;
    }
    size_t copy = n < outlen - 1 ? n : outlen - 1;
    memcpy(out, r->data + r->pos, copy);
    out[copy] = '\0';
    raw_skip(r, n);
}

static int32_t get_array_len(struct raw_reader *r, bool flexible)
{
    return flexible ? (int32_t)raw_get_uvarint(r) - 1 : raw_get_i32(r);
}

static void put_array_len(struct raw_writer *w, bool flexible, int n)
{
    if (flexible)
        raw_put_compact_array_len(w, n);
    else
        raw_put_i32(w, n);
}

static void put_string(struct raw_writer *w, bool flexible, const char *s)
{
    if (flexible)
        raw_put_compact_string(w, s);
    else
        raw_put_string(w, s);
}

/* Starts a request with the next correlation id of this test's
 * connections (header v2 when flexible) and returns that id. */
static int32_t begin_request(struct raw_writer *w, int16_t api, int16_t version, bool flexible, const char *client_id)
{
    static int32_t correlation = 100;
    int32_t corr = ++correlation;
    raw_writer_init(w);
    raw_frame_begin_as(w, api, version, flexible, corr, client_id);
    return corr;
}

static struct delete_answer raw_delete_records(const struct test_broker *b, const char *client_id, int16_t version,
                                               const char *topic, int32_t partition, int64_t offset)
{
    bool flexible = version >= 2;
    struct raw_writer w;
    int32_t corr = begin_request(&w, 21, version, flexible, client_id);
    put_array_len(&w, flexible, 1);
    put_string(&w, flexible, topic);
    put_array_len(&w, flexible, 1);
    raw_put_i32(&w, partition);
    raw_put_i64(&w, offset);
    if (flexible)
        raw_put_uvarint(&w, 0), raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 5000);
    if (flexible)
        raw_put_uvarint(&w, 0);
    uint8_t *frame;
    struct raw_reader r;
    if (raw_exchange(broker_port(b), &w, corr, flexible, 10000, &frame, &r) != 0)
        fail_msg("DeleteRecords v%d: no answer", version);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(get_array_len(&r, flexible), 1);
    char name[256];
    get_string(&r, flexible, name, sizeof name);
    assert_string_equal(name, topic);
    assert_int_equal(get_array_len(&r, flexible), 1);
    assert_int_equal(raw_get_i32(&r), partition);
    struct delete_answer a;
    a.low_watermark = raw_get_i64(&r);
    a.error = raw_get_i16(&r);
    if (flexible)
        raw_skip_tagged_fields(&r), raw_skip_tagged_fields(&r), raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return a;
}

/* ---- raw DescribeLogDirs ---- */

struct dir_partition {
    char topic[64];
    int32_t partition;
    int64_t size;
    int64_t offset_lag;
    int8_t is_future;
};

struct dir_answer {
    int16_t error;
    char path[PATH_MAX];
    int64_t total_bytes, usable_bytes;
    int topic_count;
    int all_partitions;  /* every partition listed */
    int partition_count; /* those of the test's "dr-" topics, kept below */
    struct dir_partition partitions[16];
};

struct log_dirs_answer {
    int16_t error; /* v3+ */
    int dir_count;
    struct dir_answer dirs[2];
};

/* topic NULL: every partition (a null array); else that topic's partition. */
static void raw_describe_log_dirs(const struct test_broker *b, const char *client_id, int16_t version,
                                  const char *topic, int32_t partition, struct log_dirs_answer *out)
{
    bool flexible = version >= 2;
    struct raw_writer w;
    int32_t corr = begin_request(&w, 35, version, flexible, client_id);
    if (!topic) {
        put_array_len(&w, flexible, -1);
    } else {
        put_array_len(&w, flexible, 1);
        put_string(&w, flexible, topic);
        put_array_len(&w, flexible, 1);
        raw_put_i32(&w, partition);
        if (flexible)
            raw_put_uvarint(&w, 0);
    }
    if (flexible)
        raw_put_uvarint(&w, 0);
    uint8_t *frame;
    struct raw_reader r;
    if (raw_exchange(broker_port(b), &w, corr, flexible, 10000, &frame, &r) != 0)
        fail_msg("DescribeLogDirs v%d: no answer", version);
    memset(out, 0, sizeof *out);
    raw_get_i32(&r); /* throttle */
    if (version >= 3)
        out->error = raw_get_i16(&r);
    int32_t dirs = get_array_len(&r, flexible);
    assert_true(dirs >= 0 && dirs <= 2);
    out->dir_count = dirs;
    for (int d = 0; d < dirs; d++) {
        struct dir_answer *dir = &out->dirs[d];
        dir->error = raw_get_i16(&r);
        get_string(&r, flexible, dir->path, sizeof dir->path);
        dir->topic_count = get_array_len(&r, flexible);
        assert_true(dir->topic_count >= 0);
        for (int t = 0; t < dir->topic_count; t++) {
            char name[64];
            get_string(&r, flexible, name, sizeof name);
            int32_t parts = get_array_len(&r, flexible);
            assert_true(parts >= 1); /* a topic without a listed partition is left out */
            for (int p = 0; p < parts; p++) {
                struct dir_partition one;
                snprintf(one.topic, sizeof one.topic, "%s", name);
                one.partition = raw_get_i32(&r);
                one.size = raw_get_i64(&r);
                one.offset_lag = raw_get_i64(&r);
                one.is_future = raw_get_i8(&r);
                if (flexible)
                    raw_skip_tagged_fields(&r);
                dir->all_partitions++;
                if (strncmp(name, "dr-", 3) != 0)
                    continue;
                assert_true(dir->partition_count < 16);
                dir->partitions[dir->partition_count++] = one;
            }
            if (flexible)
                raw_skip_tagged_fields(&r);
        }
        dir->total_bytes = dir->usable_bytes = -1;
        if (version >= 4) {
            dir->total_bytes = raw_get_i64(&r);
            dir->usable_bytes = raw_get_i64(&r);
        }
        if (flexible)
            raw_skip_tagged_fields(&r);
    }
    if (flexible)
        raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
}

static const struct dir_partition *find_partition(const struct dir_answer *d, const char *topic, int32_t partition)
{
    for (int i = 0; i < d->partition_count; i++)
        if (strcmp(d->partitions[i].topic, topic) == 0 && d->partitions[i].partition == partition)
            return &d->partitions[i];
    return NULL;
}

/* ---- files and clients ---- */

/* Base offsets of the partition's .log files (ascending) and their total size. */
static int segment_bases(const struct test_broker *b, const char *topic, long long *bases, int max, long long *bytes)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s-0", b->data_dir, topic);
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open %s", dir);
    int n = 0;
    *bytes = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len != 24 || strcmp(e->d_name + 20, ".log") != 0)
            continue;
        char path[1400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0)
            *bytes += st.st_size;
        if (n < max)
            bases[n++] = atoll(e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && bases[j - 1] > bases[j]; j--) {
            long long t = bases[j];
            bases[j] = bases[j - 1];
            bases[j - 1] = t;
        }
    return n;
}

/* Partition dirs ("<topic>-<n>") in the broker's log dir, the metadata log's aside. */
static int partition_dirs(const struct test_broker *b)
{
    DIR *d = opendir(b->data_dir);
    if (!d)
        fail_msg("cannot open %s", b->data_dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dash = strrchr(e->d_name, '-');
        if (!dash || dash == e->d_name || !dash[1] || strspn(dash + 1, "0123456789") != strlen(dash + 1))
            continue;
        if (strcmp(e->d_name, "__cluster_metadata-0") == 0)
            continue;
        char path[1400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", b->data_dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            n++;
    }
    closedir(d);
    return n;
}

static bool has_segment(const long long *bases, int n, long long base)
{
    for (int i = 0; i < n; i++)
        if (bases[i] == base)
            return true;
    return false;
}

static void produce_separately(rd_kafka_t *rk, const char *topic, int count, const char *key)
{
    char value[1000];
    memset(value, 'v', sizeof value);
    for (int i = 0; i < count; i++) {
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, 0, key, key ? strlen(key) : 0, value, sizeof value, 0,
                                                      NULL, NULL);
        if (err)
            fail_msg("produce: %s", rd_kafka_err2str(err));
        if (rd_kafka_flush(rk, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail_msg("flush timed out");
    }
}

static void watermarks(const struct test_broker *b, const char *topic, int64_t *low, int64_t *high)
{
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(b), NULL);
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, topic, 0, low, high, 10000);
    rd_kafka_destroy(rk);
    if (err)
        fail_msg("watermarks of %s: %s", topic, rd_kafka_err2name(err));
}

/* The first message a consumer started at `offset` with the given
 * auto.offset.reset sees: its offset, or -1 with *err its error. */
static int64_t first_consumed(const struct test_broker *b, const char *topic, int64_t offset, const char *reset,
                              rd_kafka_resp_err_t *err)
{
    const char *conf[] = {"fetch.wait.max.ms", "100", "auto.offset.reset", reset, NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(b), conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_consume_start(rkt, 0, offset) != 0)
        fail_msg("consume_start");
    int64_t got = -1;
    *err = RD_KAFKA_RESP_ERR_NO_ERROR;
    long long deadline = harness_now_ms() + 10000;
    while (harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        bool done = true;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            done = false;
        else if (m->err)
            *err = m->err;
        else
            got = m->offset;
        rd_kafka_message_destroy(m);
        if (done)
            break;
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (got < 0 && !*err)
        fail_msg("nothing consumed from %s at %lld", topic, (long long)offset);
    return got;
}

/* ---- tests ---- */

/* Deletes up to `offset`, which must not be a segment base (so only the
 * checkpoint can restore it), and checks everything that follows. */
static void delete_and_check(struct dr_state *st, int64_t offset)
{
    long long bases[64], bytes;
    int n = segment_bases(&st->broker, TOPIC, bases, 64, &bytes);
    assert_false(has_segment(bases, n, offset));
    int64_t low = -1;
    rd_kafka_resp_err_t err = rk_delete_records(st->producer, TOPIC, offset, &low);
    if (err)
        fail_msg("DeleteRecords to %lld: %s", (long long)offset, rd_kafka_err2name(err));
    assert_int_equal(low, offset);
    /* Segments wholly below the new start are gone, the one holding it stays. */
    long long after[64];
    int m = segment_bases(&st->broker, TOPIC, after, 64, &bytes);
    assert_true(m < n);
    for (int i = 0; i < m; i++)
        assert_true(i + 1 >= m || after[i + 1] > offset);
    assert_true(after[0] < offset);
    int64_t lo, hi;
    watermarks(&st->broker, TOPIC, &lo, &hi);
    assert_int_equal(lo, offset);
    assert_int_equal(hi, RECORDS);
}

static void test_delete_records_segments_and_restarts(void **state)
{
    struct dr_state *st = *state;
    const char *configs[] = {"segment.bytes", "4096", NULL};
    rk_create_topic(broker_bootstrap(&st->broker), TOPIC, 1, configs);
    produce_separately(st->producer, TOPIC, RECORDS, NULL);
    long long bases[64], bytes;
    int n = segment_bases(&st->broker, TOPIC, bases, 64, &bytes);
    if (n < 6)
        fail_msg("%d segments, expected many", n);

    delete_and_check(st, 25);
    /* Consumers from the beginning, and those reset to earliest, start there. */
    struct rk_record_set set = {0};
    long want = RECORDS - 25;
    assert_int_equal(rk_consume_all(broker_bootstrap(&st->broker), TOPIC, 1, &want, 15000, &set), want);
    assert_int_equal(set.records[0].offset, 25);
    rk_record_set_free(&set);
    rd_kafka_resp_err_t err;
    assert_int_equal(first_consumed(&st->broker, TOPIC, 10, "earliest", &err), 25);
    /* Fetch below the start is OFFSET_OUT_OF_RANGE, which librdkafka reports so. */
    assert_int_equal(first_consumed(&st->broker, TOPIC, 10, "error", &err), -1);
    assert_int_equal(err, RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET);
    /* Deleting below the start changes nothing. */
    int64_t low = -1;
    assert_int_equal(rk_delete_records(st->producer, TOPIC, 3, &low), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(low, 25);

    broker_stop(&st->broker);
    broker_restart(&st->broker);
    int64_t lo, hi;
    watermarks(&st->broker, TOPIC, &lo, &hi);
    assert_int_equal(lo, 25);
    assert_int_equal(hi, RECORDS);

    delete_and_check(st, 31);
    broker_kill9(&st->broker);
    broker_restart(&st->broker);
    watermarks(&st->broker, TOPIC, &lo, &hi);
    assert_int_equal(lo, 31);
    assert_int_equal(hi, RECORDS);
    assert_int_equal(first_consumed(&st->broker, TOPIC, 0, "earliest", &err), 31);
    st->passed++;
}

static void test_delete_records_errors(void **state)
{
    struct dr_state *st = *state;
    rk_create_topic(broker_bootstrap(&st->broker), HW_TOPIC, 1, NULL);
    produce_separately(st->producer, HW_TOPIC, 5, NULL);
    const char *compact[] = {"cleanup.policy", "compact", NULL};
    rk_create_topic(broker_bootstrap(&st->broker), COMPACT_TOPIC, 1, compact);
    produce_separately(st->producer, COMPACT_TOPIC, 3, "k");

    int64_t low = -1;
    assert_int_equal(rk_delete_records(st->producer, HW_TOPIC, 6, &low), RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(rk_delete_records(st->producer, COMPACT_TOPIC, 1, &low), RD_KAFKA_RESP_ERR_POLICY_VIOLATION);
    for (int16_t v = 0; v <= 2; v += 2) {
        struct delete_answer a = raw_delete_records(&st->broker, "dr-raw", v, HW_TOPIC, 0, 6);
        assert_int_equal(a.error, ERR_OFFSET_OUT_OF_RANGE);
        assert_int_equal(a.low_watermark, -1);
        a = raw_delete_records(&st->broker, "dr-raw", v, HW_TOPIC, 0, -2);
        assert_int_equal(a.error, ERR_OFFSET_OUT_OF_RANGE);
        a = raw_delete_records(&st->broker, "dr-raw", v, COMPACT_TOPIC, 0, 1);
        assert_int_equal(a.error, ERR_POLICY_VIOLATION);
        a = raw_delete_records(&st->broker, "dr-raw", v, "dr-no-such-topic", 0, 1);
        assert_int_equal(a.error, ERR_UNKNOWN_TOPIC_OR_PARTITION);
        a = raw_delete_records(&st->broker, "dr-raw", v, HW_TOPIC, 7, 1);
        assert_int_equal(a.error, ERR_UNKNOWN_TOPIC_OR_PARTITION);
        a = raw_delete_records(&st->broker, "dr-raw", v, "__consumer_offsets", 0, 0);
        assert_int_equal(a.error, ERR_INVALID_TOPIC_EXCEPTION);
        a = raw_delete_records(&st->broker, "dr-raw", v, HW_TOPIC, 0, 1 + v);
        assert_int_equal(a.error, ERR_NONE);
        assert_int_equal(a.low_watermark, 1 + v);
    }
    int64_t lo, hi;
    watermarks(&st->broker, COMPACT_TOPIC, &lo, &hi);
    assert_int_equal(lo, 0);

    /* -1 (RD_KAFKA_OFFSET_END) is the high watermark: everything goes. */
    assert_int_equal(rk_delete_records(st->producer, HW_TOPIC, RD_KAFKA_OFFSET_END, &low), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(low, 5);
    watermarks(&st->broker, HW_TOPIC, &lo, &hi);
    assert_int_equal(lo, 5);
    assert_int_equal(hi, 5);
    /* New records are readable from the new start. */
    produce_separately(st->producer, HW_TOPIC, 1, NULL);
    rd_kafka_resp_err_t err;
    assert_int_equal(first_consumed(&st->broker, HW_TOPIC, RD_KAFKA_OFFSET_BEGINNING, "earliest", &err), 5);
    st->passed++;
}

static void test_describe_log_dirs(void **state)
{
    struct dr_state *st = *state;
    char real[PATH_MAX];
    assert_non_null(realpath(st->broker.data_dir, real));
    long long bases[64], bytes;
    segment_bases(&st->broker, TOPIC, bases, 64, &bytes);
    struct log_dirs_answer a;

    raw_describe_log_dirs(&st->broker, "dr-raw", 0, NULL, 0, &a);
    assert_int_equal(a.dir_count, 1);
    assert_int_equal(a.dirs[0].error, ERR_NONE);
    assert_string_equal(a.dirs[0].path, real);
    /* Null topics: every partition of the dir (the coordinators' internal
     * topics too). */
    assert_int_equal(a.dirs[0].all_partitions, partition_dirs(&st->broker));
    assert_int_equal(a.dirs[0].partition_count, 3);
    const struct dir_partition *p = find_partition(&a.dirs[0], TOPIC, 0);
    assert_non_null(p);
    assert_int_equal(p->size, bytes);
    assert_int_equal(p->offset_lag, 0);
    assert_int_equal(p->is_future, 0);
    assert_non_null(find_partition(&a.dirs[0], HW_TOPIC, 0));
    assert_non_null(find_partition(&a.dirs[0], COMPACT_TOPIC, 0));
    long long hw_bases[8], hw_bytes;
    segment_bases(&st->broker, HW_TOPIC, hw_bases, 8, &hw_bytes);
    assert_int_equal(find_partition(&a.dirs[0], HW_TOPIC, 0)->size, hw_bytes);

    raw_describe_log_dirs(&st->broker, "dr-raw", 4, TOPIC, 0, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.dir_count, 1);
    assert_string_equal(a.dirs[0].path, real);
    assert_int_equal(a.dirs[0].topic_count, 1);
    assert_int_equal(a.dirs[0].all_partitions, 1);
    assert_int_equal(a.dirs[0].partition_count, 1);
    assert_int_equal(a.dirs[0].partitions[0].size, bytes);
    struct statvfs fs;
    assert_int_equal(statvfs(st->broker.data_dir, &fs), 0);
    long long total = (long long)fs.f_blocks * (long long)fs.f_frsize;
    long long usable = (long long)fs.f_bavail * (long long)fs.f_frsize;
    assert_int_equal(a.dirs[0].total_bytes, total);
    /* Other writers share the file system: free space moves a little. */
    long long slack = 256LL << 20;
    if (a.dirs[0].usable_bytes < usable - slack || a.dirs[0].usable_bytes > usable + slack)
        fail_msg("usable bytes %lld, statvfs says %lld", (long long)a.dirs[0].usable_bytes, usable);
    assert_true(a.dirs[0].usable_bytes <= a.dirs[0].total_bytes);

    /* A partition the broker does not hold: the dir answers with no topic. */
    raw_describe_log_dirs(&st->broker, "dr-raw", 4, TOPIC, 9, &a);
    assert_int_equal(a.dir_count, 1);
    assert_int_equal(a.dirs[0].topic_count, 0);
    st->passed++;
}

static void test_api_versions_advertise(void **state)
{
    struct dr_state *st = *state;
    int fd = raw_connect(broker_port(&st->broker), 10000);
    assert_true(fd >= 0);
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(fd, 3, 1, &v), 0);
    close(fd);
    const struct raw_api_range *dr = raw_api_versions_find(&v, 21), *dld = raw_api_versions_find(&v, 35);
    assert_non_null(dr);
    assert_non_null(dld);
    assert_int_equal(dr->min_version, 0);
    assert_int_equal(dr->max_version, 2);
    assert_int_equal(dld->min_version, 0);
    assert_int_equal(dld->max_version, 4);
    st->passed++;
}

static bool file_has_line(const char *path, const char *a, const char *b)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    char line[2048];
    bool found = false;
    while (!found && fgets(line, sizeof line, fp))
        found = strstr(line, a) && strstr(line, b);
    fclose(fp);
    return found;
}

static void add_override(struct test_broker *b, const char *kv)
{
    assert_true(b->override_count < BROKER_MAX_OVERRIDES);
    b->overrides[b->override_count] = strdup(kv);
    assert_non_null(b->overrides[b->override_count]);
    b->override_count++;
}

/* A broker with two log dirs, the second added on a restart so that it
 * takes the next new partition. The test authorizer denies everything on
 * "dr-secret" and on the cluster, for the client id "dr-denied" only. */
static void test_two_dirs_authorization_and_audit(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    char audit_path[1200], second_dir[700];
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR,
                        "plugins=test_authz",
                        "plugin.test_authz.deny.topics=dr-secret",
                        "plugin.test_authz.deny.cluster=1",
                        "plugin.test_authz.deny.client.id=dr-denied",
                        NULL};
    /* The audit file and the second dir live in the broker's own temp dir:
     * start once to learn it. */
    broker_start(&b, ov);
    snprintf(audit_path, sizeof audit_path, "plugin.test_authz.audit.file=%s/audit.log", b.dir);
    add_override(&b, audit_path);
    snprintf(second_dir, sizeof second_dir, "%s/data2", b.dir);
    char dirs[1400];
    snprintf(dirs, sizeof dirs, "log.dirs=%s,%s", b.data_dir, second_dir);
    add_override(&b, dirs);
    broker_stop(&b);
    broker_restart(&b);
    snprintf(audit_path, sizeof audit_path, "%s/audit.log", b.dir);

    rk_create_topic(broker_bootstrap(&b), "dr-secret", 1, NULL);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&b), NULL);
    produce_separately(rk, "dr-secret", 4, NULL);
    rk_producer_destroy(rk);

    struct delete_answer d = raw_delete_records(&b, "dr-denied", 2, "dr-secret", 0, 2);
    assert_int_equal(d.error, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(d.low_watermark, -1);
    struct log_dirs_answer a;
    raw_describe_log_dirs(&b, "dr-denied", 4, NULL, 0, &a);
    assert_int_equal(a.error, ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_int_equal(a.dir_count, 0);
    raw_describe_log_dirs(&b, "dr-denied", 0, NULL, 0, &a);
    assert_int_equal(a.dir_count, 0);

    /* Another client may: both dirs, the new partition in the second. */
    raw_describe_log_dirs(&b, "dr-allowed", 4, NULL, 0, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.dir_count, 2);
    char real[PATH_MAX];
    assert_non_null(realpath(b.data_dir, real));
    assert_string_equal(a.dirs[0].path, real);
    assert_non_null(realpath(second_dir, real));
    assert_string_equal(a.dirs[1].path, real);
    assert_int_equal(a.dirs[0].error, ERR_NONE);
    assert_int_equal(a.dirs[1].error, ERR_NONE);
    assert_true(a.dirs[1].total_bytes > 0);
    assert_null(find_partition(&a.dirs[0], "dr-secret", 0));
    assert_int_equal(a.dirs[1].all_partitions, 1);
    const struct dir_partition *p = find_partition(&a.dirs[1], "dr-secret", 0);
    assert_non_null(p);
    struct stat seg;
    char seg_path[1400];
    snprintf(seg_path, sizeof seg_path, "%s/dr-secret-0/00000000000000000000.log", second_dir);
    assert_int_equal(stat(seg_path, &seg), 0);
    assert_int_equal(p->size, seg.st_size);

    /* The deletion is audited with its outcome, and the second dir's
     * checkpoint keeps it over a kill -9. */
    d = raw_delete_records(&b, "dr-allowed", 2, "dr-secret", 0, 2);
    assert_int_equal(d.error, ERR_NONE);
    assert_int_equal(d.low_watermark, 2);
    d = raw_delete_records(&b, "dr-allowed", 2, "dr-secret", 0, 9);
    assert_int_equal(d.error, ERR_OFFSET_OUT_OF_RANGE);
    assert_true(file_has_line(audit_path, "ADMIN op=DeleteRecords res=dr-secret allowed=1", "\"low_watermark\":2"));
    assert_true(file_has_line(audit_path, "ADMIN op=DeleteRecords res=dr-secret", "error=1 "));
    broker_kill9(&b);
    broker_restart(&b);
    int64_t lo, hi;
    watermarks(&b, "dr-secret", &lo, &hi);
    assert_int_equal(lo, 2);
    assert_int_equal(hi, 4);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static int dr_setup(void **state)
{
    static struct dr_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    broker_start(&st.broker, NULL);
    st.producer = rk_producer_new(broker_bootstrap(&st.broker), NULL);
    return st.producer ? 0 : -1;
}

static int dr_teardown(void **state)
{
    struct dr_state *st = *state;
    if (st->producer)
        rk_producer_destroy(st->producer);
    if (st->passed == 4) {
        broker_stop(&st->broker);
        broker_mark_passed(&st->broker);
    }
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_advertise),
        cmocka_unit_test(test_delete_records_segments_and_restarts),
        cmocka_unit_test(test_delete_records_errors),
        cmocka_unit_test(test_describe_log_dirs),
        cmocka_unit_test(test_two_dirs_authorization_and_audit),
    };
    return cmocka_run_group_tests(tests, dr_setup, dr_teardown);
}
