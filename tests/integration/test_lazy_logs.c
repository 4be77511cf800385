/* Partition logs loaded on first use: after a clean stop a broker with many
 * partitions starts without opening their segment files (far fewer
 * descriptors than partitions, where a loaded partition holds three), and
 * ListOffsets, Fetch and Produce on a partition untouched since the restart
 * answer with its data: the offsets come from the checkpoints until the
 * first use loads the segments. A second clean restart of logs never loaded
 * and a kill -9 (full recovery) keep every record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LZ_TOPIC "lazy"
#define LZ_PARTITIONS 300
#define LZ_FILLED 10  /* partitions 0..LZ_FILLED-1 hold records */
#define LZ_RECORDS 10 /* records in each of them */
#define LZ_EMPTY (LZ_PARTITIONS - 1)

static int open_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (ent->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int log_lines_with(const struct test_broker *b, const char *needle)
{
    FILE *f = fopen(b->log_path, "r");
    assert_non_null(f);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* The broker log's lines are appended over restarts: wait for one more. */
static void wait_new_log_line(const struct test_broker *b, const char *needle, int before)
{
    long long deadline = harness_now_ms() + 60000;
    while (log_lines_with(b, needle) <= before && harness_now_ms() < deadline) {
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    if (log_lines_with(b, needle) <= before)
        fail_msg("no new '%s' in %s", needle, b->log_path);
}

#define LZ_DEFERRED_LINE "registered from the checkpoints, loaded on first use"
#define LZ_UNCLEAN_LINE "no clean shutdown marker"

static void value_of(int32_t partition, int64_t offset, char *out, size_t len)
{
    snprintf(out, len, "p%d-o%" PRId64, (int)partition, offset);
}

static void produce(rd_kafka_t *rk, int32_t partition, int64_t first_offset, int count)
{
    for (int i = 0; i < count; i++) {
        char value[32];
        value_of(partition, first_offset + i, value, sizeof value);
        assert_int_equal(rk_produce_blocking(rk, LZ_TOPIC, partition, NULL, 0, value, strlen(value), 0, NULL, NULL), 0);
    }
    assert_int_equal(rd_kafka_flush(rk, 30000), 0);
    struct rk_delivery_stats *stats = rk_producer_stats(rk);
    assert_int_equal(stats->failed, 0);
}

static void expect_watermarks(const char *bootstrap, int32_t partition, int64_t low, int64_t high)
{
    rd_kafka_t *rk = rk_consumer_new(bootstrap, NULL);
    int64_t got_low = -1, got_high = -1;
    rd_kafka_resp_err_t err;
    long long deadline = harness_now_ms() + 60000;
    while ((err = rd_kafka_query_watermark_offsets(rk, LZ_TOPIC, partition, &got_low, &got_high, 10000)) != 0 &&
           harness_now_ms() < deadline)
        ;
    rd_kafka_destroy(rk);
    assert_int_equal(err, 0);
    if (got_low != low || got_high != high)
        fail_msg("partition %d: watermarks %" PRId64 "..%" PRId64 ", want %" PRId64 "..%" PRId64, (int)partition,
                 got_low, got_high, low, high);
}

/* Reads the partition from its start and checks every record's offset and
 * value, from offset `from` to `end` (exclusive). */
static void expect_records(const char *bootstrap, int32_t partition, int64_t from, int64_t end)
{
    rd_kafka_t *rk = rk_consumer_new(bootstrap, NULL);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, LZ_TOPIC, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, partition, RD_KAFKA_OFFSET_BEGINNING), 0);
    int64_t next = from;
    long long deadline = harness_now_ms() + 60000;
    while (next < end && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, partition, 1000);
        if (!m)
            continue;
        if (!m->err) {
            char want[32];
            value_of(partition, next, want, sizeof want);
            if (m->offset != next || m->len != strlen(want) || memcmp(m->payload, want, m->len) != 0)
                fail_msg("partition %d: offset %" PRId64 " holds %.*s, want offset %" PRId64 " %s", (int)partition,
                         m->offset, (int)m->len, (const char *)m->payload, next, want);
            next++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, partition);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (next != end)
        fail_msg("partition %d: read up to %" PRId64 ", want %" PRId64, (int)partition, next, end);
}

/* ListOffsets by timestamp: the first record at or after 0 is the log start. */
static void expect_offset_for_time(const char *bootstrap, int32_t partition, int64_t want)
{
    rd_kafka_t *rk = rk_consumer_new(bootstrap, NULL);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, LZ_TOPIC, partition)->offset = 0;
    assert_int_equal(rd_kafka_offsets_for_times(rk, parts, 30000), 0);
    assert_int_equal(parts->elems[0].err, 0);
    assert_int_equal(parts->elems[0].offset, want);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
}

static void test_restart_defers_partition_logs(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    rk_create_topic(broker_bootstrap(b), LZ_TOPIC, LZ_PARTITIONS, NULL);
    rd_kafka_t *producer = rk_producer_new(broker_bootstrap(b), (const char *const[]){"acks", "all", NULL});
    for (int32_t p = 0; p < LZ_FILLED; p++)
        produce(producer, p, 0, LZ_RECORDS);
    int64_t low = -1;
    assert_int_equal(rk_delete_records(producer, LZ_TOPIC, 4, &low), 0);
    assert_int_equal(low, 4);
    rk_producer_destroy(producer);
    int fds_loaded = open_fds(broker_pid(b));
    print_message("descriptors with %d partitions loaded: %d\n", LZ_PARTITIONS, fds_loaded);

    int deferred_lines = log_lines_with(b, LZ_DEFERRED_LINE);
    broker_stop(b);
    broker_restart(b);
    wait_new_log_line(b, LZ_DEFERRED_LINE, deferred_lines);
    int fds_deferred = open_fds(broker_pid(b));
    print_message("descriptors after a clean restart: %d\n", fds_deferred);
    /* Loaded, each partition holds .log, .index and .timeindex open. */
    assert_true(fds_deferred < LZ_PARTITIONS);

    /* ListOffsets earliest/latest answer from the checkpointed offsets. */
    expect_watermarks(broker_bootstrap(b), 0, 4, LZ_RECORDS);
    expect_watermarks(broker_bootstrap(b), 5, 0, LZ_RECORDS);
    expect_watermarks(broker_bootstrap(b), LZ_EMPTY, 0, 0);
    /* The first uses that need the segments load them. */
    expect_offset_for_time(broker_bootstrap(b), 3, 0);
    expect_records(broker_bootstrap(b), 5, 0, LZ_RECORDS);
    expect_records(broker_bootstrap(b), 0, 4, LZ_RECORDS);
    producer = rk_producer_new(broker_bootstrap(b), (const char *const[]){"acks", "all", NULL});
    produce(producer, LZ_EMPTY, 0, 3);
    produce(producer, 7, LZ_RECORDS, 1);
    rk_producer_destroy(producer);
    expect_records(broker_bootstrap(b), LZ_EMPTY, 0, 3);
    expect_records(broker_bootstrap(b), 7, 0, LZ_RECORDS + 1);
    int fds_used = open_fds(broker_pid(b));
    print_message("descriptors after using 5 partitions: %d\n", fds_used);
    assert_true(fds_used < LZ_PARTITIONS);

    /* Partitions never loaded (8, 9) keep their offsets across another
     * clean restart; those written keep theirs. */
    deferred_lines = log_lines_with(b, LZ_DEFERRED_LINE);
    broker_stop(b);
    broker_restart(b);
    wait_new_log_line(b, LZ_DEFERRED_LINE, deferred_lines);
    expect_watermarks(broker_bootstrap(b), 0, 4, LZ_RECORDS);
    expect_watermarks(broker_bootstrap(b), 7, 0, LZ_RECORDS + 1);
    expect_watermarks(broker_bootstrap(b), LZ_EMPTY, 0, 3);
    expect_records(broker_bootstrap(b), 8, 0, LZ_RECORDS);

    /* kill -9 with loaded and unloaded logs: the restart recovers all. */
    producer = rk_producer_new(broker_bootstrap(b), (const char *const[]){"acks", "all", NULL});
    produce(producer, 6, LZ_RECORDS, 2);
    rk_producer_destroy(producer);
    int unclean_lines = log_lines_with(b, LZ_UNCLEAN_LINE);
    broker_kill9(b);
    broker_restart(b);
    wait_new_log_line(b, LZ_UNCLEAN_LINE, unclean_lines);
    expect_watermarks(broker_bootstrap(b), 0, 4, LZ_RECORDS);
    expect_watermarks(broker_bootstrap(b), 6, 0, LZ_RECORDS + 2);
    expect_watermarks(broker_bootstrap(b), 7, 0, LZ_RECORDS + 1);
    expect_watermarks(broker_bootstrap(b), LZ_EMPTY, 0, 3);
    expect_records(broker_bootstrap(b), 6, 0, LZ_RECORDS + 2);
    expect_records(broker_bootstrap(b), 9, 0, LZ_RECORDS);
    producer = rk_producer_new(broker_bootstrap(b), (const char *const[]){"acks", "all", NULL});
    produce(producer, 9, LZ_RECORDS, 1);
    rk_producer_destroy(producer);
    expect_records(broker_bootstrap(b), 9, 0, LZ_RECORDS + 1);
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_defers_partition_logs, broker_slot_setup, broker_slot_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
