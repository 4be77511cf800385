/* The internal compacted topic over a real log manager and metadata store:
 * creation with a capped replication factor, placement of keys and the
 * errors a coordinator answers with, durable appends, replay in log order,
 * and replay past damaged and compressed batches. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec/record_codec.h"
#include "coordinator/coordinator_partition.h"
#include "coordinator/internal_topic.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "support/unit_fixture.h"

#define TOPIC "__test_state"
#define PARTITIONS 4

/* ---- fixture: metadata store + log manager in a temp dir ---- */

/* Only the test's thread touches it. */
struct fixture {
    struct unit_fixture stores;
    struct internal_topic *topic;
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

static int open_topic(struct fixture *f, int32_t num_partitions, int32_t node_id, char *err, size_t errlen)
{
    const struct internal_topic_options opts = {
        .name = TOPIC,
        .component = "test",
        .config_prefix = "test.topic",
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = num_partitions,
        .replication_factor = 3,
        .segment_bytes = 1 << 20,
        .node_id = node_id,
    };
    return internal_topic_open(&opts, &f->topic, err, errlen);
}

static void open_all(struct fixture *f, int32_t num_partitions, int32_t node_id)
{
    char err[256] = "";
    unit_fixture_open(&f->stores);
    if (open_topic(f, num_partitions, node_id, err, sizeof err) != 0)
        fail_msg("internal topic: %s", err);
}

static void close_all(struct fixture *f)
{
    internal_topic_close(f->topic);
    f->topic = NULL;
    unit_fixture_close(&f->stores);
}

static int setup(void **state)
{
    return unit_fixture_setup(state, sizeof(struct fixture), "cairn-internal-topic");
}

static int teardown(void **state)
{
    close_all(*state);
    return unit_fixture_teardown(*state);
}

/* Appends one batch (gzip when compressed) with `count` records valued "<value>#i";
 * returns the log's size in bytes before it (where the batch starts). */
static int64_t append_values(struct fixture *f, int32_t partition, const char *value, int count, bool compressed)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    for (int i = 0; i < count; i++) {
        char v[64];
        int n = snprintf(v, sizeof v, "%s#%d", value, i);
        assert_int_equal(record_batch_builder_add(&b, 1000, "k", 1, v, n, NULL, 0), 0);
    }
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    record_batch_builder_free(&b);
    if (compressed) {
        /* Really gzip: the log opens compressed batches of compacted topics. */
        uint8_t *packed;
        char err[200];
        assert_int_equal(
            record_codec_deflate_batch(batch, len, RECORD_BATCH_COMPRESSION_GZIP, &packed, &len, err, sizeof err), 0);
        free(batch);
        batch = packed;
    }
    struct partition_log *log = log_manager_get(f->stores.logs, TOPIC, partition);
    assert_non_null(log);
    int64_t pos = partition_log_size_bytes(log);
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    partition_log_close(log);
    free(batch);
    return pos;
}

/* ---- what a replay hands over ---- */

#define SEEN_MAX 64

/* Filled by the replay callbacks on the test's thread. */
struct seen {
    int batches;
    int32_t partition[SEEN_MAX];
    int64_t base_offset[SEEN_MAX];
    char first_value[SEEN_MAX][64];
    int dones;
    int32_t done_partition[SEEN_MAX];
    bool done_ok[SEEN_MAX];
    int64_t done_skipped[SEEN_MAX];
    const char *skip_value; /* a batch whose first value is this is reported skipped by the callback */
};

static void record_batch_seen(void *ctx, struct internal_topic_replay *r, const uint8_t *batch, size_t len,
                              const struct record_batch_header *h)
{
    struct seen *s = ctx;
    assert_true(s->batches < SEEN_MAX);
    assert_true(record_batch_crc_ok(batch, len));
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, batch, len), 0);
    assert_int_equal(record_batch_records_next(&it, &rec), 1);
    assert_true(rec.value_len > 0 && rec.value_len < 64);
    int i = s->batches++;
    s->partition[i] = r->partition;
    s->base_offset[i] = h->base_offset;
    memcpy(s->first_value[i], rec.value, (size_t)rec.value_len);
    s->first_value[i][rec.value_len] = '\0';
    if (s->skip_value && strcmp(s->first_value[i], s->skip_value) == 0)
        internal_topic_replay_skip(r, rec.offset, "rejected by the test");
}

static void record_done(void *ctx, struct internal_topic_replay *r, bool ok)
{
    struct seen *s = ctx;
    assert_true(s->dones < SEEN_MAX);
    s->done_partition[s->dones] = r->partition;
    s->done_ok[s->dones] = ok;
    s->done_skipped[s->dones] = r->skipped;
    s->dones++;
}

static void replay(struct fixture *f, size_t read_size, struct seen *s)
{
    char err[256] = "";
    if (internal_topic_replay(f->topic, read_size, record_batch_seen, record_done, s, err, sizeof err) != 0)
        fail_msg("replay: %s", err);
}

/* ---- tests ---- */

static void test_open_creates_compacted_topic_with_capped_replication(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    assert_int_equal(internal_topic_partition_count(f->topic), PARTITIONS);
    const struct metadata_image *img = metadata_image_acquire(f->stores.metadata);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, TOPIC, strlen(TOPIC));
    assert_non_null(t);
    assert_int_equal(t->partition_count, PARTITIONS);
    /* Replication factor 3 asked, one live broker: capped to 1, on this node. */
    for (int32_t p = 0; p < PARTITIONS; p++) {
        assert_int_equal(t->partitions[p].replica_count, 1);
        assert_int_equal(t->partitions[p].replicas[0], 1);
    }
    assert_string_equal(metadata_topic_config(t, "cleanup.policy"), "compact");
    assert_string_equal(metadata_topic_config(t, "segment.bytes"), "1048576");
    assert_string_equal(metadata_topic_config(t, "retention.ms"), "-1");
    metadata_image_release(img);
    /* Every partition's log was created, with the topic's settings. */
    assert_int_equal(log_manager_partition_count(f->stores.logs), PARTITIONS);
    struct partition_log *log = log_manager_get(f->stores.logs, TOPIC, PARTITIONS - 1);
    assert_non_null(log);
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    assert_int_equal(cfg.segment_bytes, 1 << 20);
    assert_int_equal(cfg.retention_ms, -1);
    partition_log_close(log);

    /* Reopening keeps the partition count the topic was created with. */
    internal_topic_close(f->topic);
    f->topic = NULL;
    char err[256] = "";
    assert_int_equal(open_topic(f, PARTITIONS * 2, 1, err, sizeof err), 0);
    assert_int_equal(internal_topic_partition_count(f->topic), PARTITIONS);
    assert_int_equal(log_manager_partition_count(f->stores.logs), PARTITIONS);
}

static void test_open_refuses_incomplete_options(void **state)
{
    struct fixture *f = *state;
    unit_fixture_open(&f->stores);
    char err[256] = "";
    struct internal_topic_options opts = {
        .name = TOPIC, .component = "test", .config_prefix = "test.topic", .logs = f->stores.logs};
    struct internal_topic *t = (struct internal_topic *)&opts;
    assert_int_equal(internal_topic_open(&opts, &t, err, sizeof err), -1);
    assert_null(t);
    assert_true(strlen(err) > 0);
    const struct metadata_image *img = metadata_image_acquire(f->stores.metadata);
    assert_null(metadata_image_topic_by_name(img, TOPIC, strlen(TOPIC)));
    metadata_image_release(img);
}

static void test_log_for_key_follows_placement(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    const char *keys[] = {"group-a", "txn-id-7", "", "\xc3\xa9t\xc3\xa9", "another key"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        struct partition_log *got = NULL;
        assert_int_equal(internal_topic_log_for_key(f->topic, keys[i], &got), KAFKA_ERR_NONE);
        int32_t p = coordinator_partition_for(keys[i], strlen(keys[i]), PARTITIONS);
        struct partition_log *want = log_manager_get(f->stores.logs, TOPIC, p);
        assert_non_null(want);
        assert_ptr_equal(got, want);
        partition_log_close(want);
    }
    struct partition_log *got = (struct partition_log *)f;
    assert_int_equal(internal_topic_log_for_key(NULL, "g", &got), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_null(got);
    got = (struct partition_log *)f;
    assert_int_equal(internal_topic_log_for_key(f->topic, NULL, &got), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_null(got);
}

/* A node holding no replica is not the coordinator of any key. */
static void test_log_for_key_without_replica(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 2); /* replicas are placed on node 1 only */
    assert_int_equal(log_manager_partition_count(f->stores.logs), 0);
    struct partition_log *got = (struct partition_log *)f;
    assert_int_equal(internal_topic_log_for_key(f->topic, "g", &got), KAFKA_ERR_NOT_COORDINATOR);
    assert_null(got);
    struct seen s = {0};
    replay(f, 4096, &s);
    assert_int_equal(s.batches, 0);
    assert_int_equal(s.dones, 0);
}

/* A replica here whose log cannot be created: the key's partition is placed
 * here, but its coordinator is not available. */
static void test_log_for_key_with_missing_log(void **state)
{
    struct fixture *f = *state;
    unit_fixture_open(&f->stores);
    const char *key = "victim";
    int32_t victim = coordinator_partition_for(key, strlen(key), PARTITIONS);
    /* A plain file where the partition's directory must go. */
    char path[128];
    snprintf(path, sizeof path, "%s/%s-%d", f->stores.dir, TOPIC, (int)victim);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    char err[256] = "";
    assert_int_equal(open_topic(f, PARTITIONS, 1, err, sizeof err), 0);
    assert_int_equal(log_manager_partition_count(f->stores.logs), PARTITIONS - 1);
    struct partition_log *got = (struct partition_log *)f;
    assert_int_equal(internal_topic_log_for_key(f->topic, key, &got), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_null(got);
    /* The other partitions still serve their keys. */
    int placed = 0;
    for (int i = 0; i < 50 && !placed; i++) {
        char other[16];
        snprintf(other, sizeof other, "k%d", i);
        if (coordinator_partition_for(other, strlen(other), PARTITIONS) == victim)
            continue;
        assert_int_equal(internal_topic_log_for_key(f->topic, other, &got), KAFKA_ERR_NONE);
        assert_non_null(got);
        placed = 1;
    }
    assert_true(placed);
}

static void test_replay_in_log_order(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    /* Interleaved appends across partitions; partition 1 stays empty and one
     * batch of partition 3 is larger than the read size. */
    append_values(f, 2, "p2-a", 1, false);
    append_values(f, 0, "p0-a", 3, false);
    append_values(f, 2, "p2-b", 2, false);
    append_values(f, 3, "p3-big-a", 60, false);
    append_values(f, 0, "p0-b", 1, false);
    append_values(f, 3, "p3-b", 1, false);
    append_values(f, 0, "p0-c", 5, false);

    struct seen s = {0};
    replay(f, 256, &s); /* small, so each partition takes several reads */
    const char *want_values[] = {"p0-a#0", "p0-b#0", "p0-c#0", "p2-a#0", "p2-b#0", "p3-big-a#0", "p3-b#0"};
    const int32_t want_partitions[] = {0, 0, 0, 2, 2, 3, 3};
    const int64_t want_offsets[] = {0, 3, 4, 0, 1, 0, 60};
    assert_int_equal(s.batches, 7);
    for (int i = 0; i < 7; i++) {
        assert_string_equal(s.first_value[i], want_values[i]);
        assert_int_equal(s.partition[i], want_partitions[i]);
        assert_int_equal(s.base_offset[i], want_offsets[i]);
    }
    /* One end per held partition, in order, the empty one included. */
    assert_int_equal(s.dones, PARTITIONS);
    for (int i = 0; i < PARTITIONS; i++) {
        assert_int_equal(s.done_partition[i], i);
        assert_true(s.done_ok[i]);
        assert_int_equal(s.done_skipped[i], 0);
    }

    /* A second replay with a large read size sees the same. */
    struct seen again = {0};
    replay(f, 1 << 20, &again);
    assert_int_equal(again.batches, s.batches);
    for (int i = 0; i < s.batches; i++)
        assert_string_equal(again.first_value[i], s.first_value[i]);
}

/* Flips one byte inside the CRC-covered part of the batch at pos. */
static void damage_batch(struct fixture *f, int32_t partition, int64_t pos)
{
    struct partition_log *log = log_manager_get(f->stores.logs, TOPIC, partition);
    assert_non_null(log);
    char path[256];
    snprintf(path, sizeof path, "%s/%020d.log", partition_log_dir(log), 0);
    partition_log_close(log);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    off_t at = (off_t)(pos + RECORD_BATCH_HEADER_SIZE + 2);
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x5a;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
}

static void test_replay_skips_damaged_and_compressed_batches(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    append_values(f, 1, "first", 2, false);
    int64_t damaged = append_values(f, 1, "damaged", 2, false);
    append_values(f, 1, "squeezed", 1, true);
    append_values(f, 1, "rejected", 1, false);
    append_values(f, 1, "last", 3, false);
    append_values(f, 2, "elsewhere", 1, false);
    damage_batch(f, 1, damaged);

    struct seen s = {.skip_value = "rejected#0"};
    replay(f, 128, &s);
    /* The damaged and compressed batches never reach the callback; the ones
     * after them still do, in order. */
    const char *want[] = {"first#0", "rejected#0", "last#0", "elsewhere#0"};
    const int64_t want_offsets[] = {0, 5, 6, 0};
    assert_int_equal(s.batches, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(s.first_value[i], want[i]);
        assert_int_equal(s.base_offset[i], want_offsets[i]);
    }
    /* Skips are counted per partition: two batches and one record in 1. */
    assert_int_equal(s.dones, PARTITIONS);
    assert_int_equal(s.done_skipped[0], 0);
    assert_int_equal(s.done_skipped[1], 3);
    assert_int_equal(s.done_skipped[2], 0);
    for (int i = 0; i < PARTITIONS; i++)
        assert_true(s.done_ok[i]);
}

/* Builds one uncompressed batch of a single record valued `value`. */
static uint8_t *build_batch(const char *value, size_t value_len, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    assert_int_equal(record_batch_builder_add(&b, 1000, "k", 1, value, (int32_t)value_len, NULL, 0), 0);
    uint8_t *batch;
    assert_int_equal(record_batch_builder_finish(&b, &batch, len), 0);
    record_batch_builder_free(&b);
    return batch;
}

static void test_append_is_durable_and_replayed(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    struct partition_log *log;
    assert_int_equal(internal_topic_log_for_key(f->topic, "writer", &log), KAFKA_ERR_NONE);
    size_t len;
    uint8_t *batch = build_batch("written#0", 9, &len);
    assert_int_equal(
        internal_topic_append(f->topic, log, batch, len, false, INTERNAL_TOPIC_FLUSH_ALL, NULL, "a test record"),
        KAFKA_ERR_NONE);
    free(batch);
    assert_int_equal(partition_log_end_offset(log), 1);
    assert_int_equal(partition_log_recovery_point(log), 1); /* flushed before returning */
    /* Larger than a segment (1 MiB here): the append's error, nothing written. */
    size_t big_len = (size_t)2 << 20;
    char *big = calloc(1, big_len);
    assert_non_null(big);
    batch = build_batch(big, big_len, &len);
    free(big);
    assert_int_equal(
        internal_topic_append(f->topic, log, batch, len, true, INTERNAL_TOPIC_FLUSH_ALL, NULL, "a large record"),
        KAFKA_ERR_RECORD_LIST_TOO_LARGE);
    free(batch);
    assert_int_equal(partition_log_end_offset(log), 1);

    struct seen s = {0};
    replay(f, 4096, &s);
    assert_int_equal(s.batches, 1);
    assert_string_equal(s.first_value[0], "written#0");
    assert_int_equal(s.partition[0], coordinator_partition_for("writer", 6, PARTITIONS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_compacted_topic_with_capped_replication, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_incomplete_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_for_key_follows_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_for_key_without_replica, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_for_key_with_missing_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_in_log_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_skips_damaged_and_compressed_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_is_durable_and_replayed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
