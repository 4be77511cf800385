/* The tiered storage tests' broker and records (see tiered_common.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raw_kafka.h"
#include "rk_helpers.h"
#include "tiered_common.h"

void tiered_record_value(long i, char *out, size_t outlen)
{
    /* Varied lengths and content so a shifted or mixed-up byte shows. */
    int len = snprintf(out, outlen, "value-%06ld-", i);
    int extra = (int)(i * 37 % 200);
    for (int k = 0; k < extra && (size_t)len < outlen - 1; k++)
        out[len++] = (char)('a' + (i + k) % 26);
    out[len] = '\0';
}

void produce_round(struct tiered_state *st, long count)
{
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&st->broker),
                                    (const char *const[]){"linger.ms", "5", "batch.size", "16384", NULL});
    for (long n = 0; n < count; n++) {
        long i = st->produced + n;
        char key[32], value[256];
        snprintf(key, sizeof key, "key-%ld", i);
        tiered_record_value(i, value, sizeof value);
        int64_t ts = st->ts_base ? st->ts_base + 10 * (int64_t)i : 0;
        assert_int_equal(rk_produce_blocking(p, TOPIC, 0, key, strlen(key), value, strlen(value), ts, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    assert_int_equal(stats->failed, 0);
    rk_producer_destroy(p);
    st->produced += count;
}

int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* The remote folder of the partition: <remote>/tiered-0/<topic id>. */
bool remote_partition_dir(const struct tiered_state *st, char *out, size_t outlen)
{
    char parent[800];
    snprintf(parent, sizeof parent, "%s/" TOPIC "-0", st->remote_dir);
    DIR *d = opendir(parent);
    if (!d)
        return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            snprintf(out, outlen, "%s/%s", parent, e->d_name);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* Waits until the local partition holds at most max_local segments and the
 * remote store at least min_remote. */
void wait_tiered(struct tiered_state *st, int max_local, int min_remote)
{
    char local[800], remote[1200];
    snprintf(local, sizeof local, "%s/" TOPIC "-0", st->broker.data_dir);
    long long deadline = harness_now_ms() + 60000;
    int l = -1, r = -1;
    while (harness_now_ms() < deadline) {
        l = count_files(local, ".log");
        r = remote_partition_dir(st, remote, sizeof remote) ? count_files(remote, ".log") : 0;
        if (l <= max_local && r >= min_remote)
            return;
        usleep(200 * 1000);
    }
    broker_print_log_tail(&st->broker, 40);
    fail_msg("local segments %d (want <= %d), remote %d (want >= %d)", l, max_local, r, min_remote);
}

bool tiered_check_record(const rd_kafka_message_t *msg, void *ctx)
{
    long *next = ctx;
    char key[32], value[256];
    snprintf(key, sizeof key, "key-%ld", *next);
    tiered_record_value(*next, value, sizeof value);
    if (msg->offset != *next || msg->key_len != strlen(key) || memcmp(msg->key, key, msg->key_len) != 0 ||
        msg->len != strlen(value) || memcmp(msg->payload, value, msg->len) != 0) {
        fprintf(stderr, "record at offset %lld differs from record %ld\n", (long long)msg->offset, *next);
        return false;
    }
    (*next)++;
    return true;
}

void consume_all_from_zero(struct tiered_state *st)
{
    long next = 0;
    long want = st->produced;
    long got = rk_consume_each(broker_bootstrap(&st->broker), TOPIC, 1, &want, 90000, tiered_check_record, &next);
    if (got != st->produced) {
        broker_print_log_tail(&st->broker, 40);
        fail_msg("consumed %ld of %ld records", got, st->produced);
    }
    assert_int_equal(next, st->produced);
}

/* ListOffsets v9 for partition 0 and one timestamp spec: the offset, and
 * the partition's error code in *error. */
int64_t list_offset_raw(const struct tiered_state *st, int64_t spec, int16_t *error)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 2, 9, 9009, "tiered-test");
    raw_put_i32(&w, -1); /* replica id */
    raw_put_i8(&w, 0);   /* isolation */
    raw_put_uvarint(&w, 2);
    raw_put_compact_string(&w, TOPIC);
    raw_put_uvarint(&w, 2);
    raw_put_i32(&w, 0);  /* partition */
    raw_put_i32(&w, -1); /* current leader epoch */
    raw_put_i64(&w, spec);
    for (int tags = 0; tags < 3; tags++)
        raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&st->broker), &w, 9009, true, 30000, &frame, &r), 0);
    (void)raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64];
    assert_true(raw_get_compact_string(&r, name, sizeof name));
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    *error = raw_get_i16(&r);
    (void)raw_get_i64(&r); /* timestamp */
    int64_t offset = raw_get_i64(&r);
    free(frame);
    return offset;
}

int64_t list_offset_v9(const struct tiered_state *st, int64_t spec)
{
    int16_t error = -1;
    int64_t offset = list_offset_raw(st, spec, &error);
    assert_int_equal(error, 0);
    return offset;
}

int64_t metric_value(const struct tiered_state *st, const char *name)
{
    char *page = raw_http_get(st->metrics_port, "/metrics");
    assert_non_null(page);
    const char *line = page;
    int64_t value = -1;
    while ((line = strstr(line, name)) != NULL) {
        if (line == page || line[-1] == '\n') {
            const char *sp = strchr(line, ' ');
            if (sp)
                value = strtoll(sp + 1, NULL, 10);
            break;
        }
        line++;
    }
    free(page);
    return value;
}

/* cairnd with storage-local in a fresh remote dir, and TOPIC created with
 * small segments and a local retention of one byte. */
void start_tiered_with(struct tiered_state *st, const char *topic, const char *const *extra, const char *segment_bytes)
{
    char path_kv[700], dir_kv[900], metrics_kv[64];
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    st->metrics_port = harness_free_port();
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", st->metrics_port);
    snprintf(st->remote_root, sizeof st->remote_root, "/tmp/cairn-tiered-XXXXXX");
    assert_non_null(mkdtemp(st->remote_root));
    snprintf(st->remote_dir, sizeof st->remote_dir, "%s/remote", st->remote_root);
    snprintf(dir_kv, sizeof dir_kv, "plugin.storage-local.dir=%s", st->remote_dir);
    const char *base[] = {path_kv, "plugins=storage-local", dir_kv, metrics_kv, "remote.log.storage.system.enable=true",
                          "remote.log.manager.task.interval.ms=200", "remote.log.manager.thread.pool.size=2",
                          "remote.log.reader.threads=2", "log.retention.check.interval.ms=200",
                          /* A few segments' worth: reads from 0 keep evicting. */
                          "remote.log.index.file.cache.total.size.bytes=100000"};
    const char *ov[32];
    size_t n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        ov[n++] = base[i];
    for (size_t i = 0; extra && extra[i] && n < sizeof ov / sizeof ov[0] - 1; i++)
        ov[n++] = extra[i];
    ov[n] = NULL;
    broker_start(&st->broker, ov);
    rk_create_topic(broker_bootstrap(&st->broker), topic, 1,
                    (const char *const[]){"segment.bytes", segment_bytes, "remote.storage.enable", "true",
                                          "local.retention.bytes", "1", NULL});
}

void start_tiered(struct tiered_state *st, const char *topic)
{
    start_tiered_with(st, topic, NULL, "32768");
}

/* A day ago, so no retention or timestamp bound gets in the way. */
int64_t day_old_ms(void)
{
    return ((int64_t)time(NULL) - 86400) * 1000;
}

int tiered_setup(void **state)
{
    struct tiered_state *st = calloc(1, sizeof *st);
    assert_non_null(st);
    *state = st;
    return 0;
}

int tiered_teardown(void **state)
{
    struct tiered_state *st = *state;
    broker_cleanup(&st->broker);
    if (st->remote_root[0] && st->broker.passed) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", st->remote_root);
        assert_int_equal(system(cmd), 0);
    }
    free(st);
    return 0;
}

void start_stamped_round(struct tiered_state *st)
{
    st->ts_base = day_old_ms();
    start_tiered(st, TOPIC);
    produce_round(st, RECORDS_PER_ROUND);
    wait_tiered(st, 2, 10);
}

int64_t remote_errors_total(const struct tiered_state *st, const char *op)
{
    static const char *const kinds[] = {"missing", "corrupt", "unavailable", "other"};
    int64_t total = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "cairn_remote_errors_total{op=\"%s\",kind=\"%s\"}", op, kinds[i]);
        int64_t v = metric_value(st, name);
        if (v < 0)
            return -1;
        total += v;
    }
    return total;
}
