/* Log compaction against a real broker: a compacted topic overwritten many
 * times shrinks on disk and reads back as the latest value per key with
 * the original offsets; a tombstone goes once delete.retention.ms has
 * passed; a restart reads the same; __consumer_offsets shrinks under
 * repeated commits and the group's offsets survive a restart; topics
 * written by compressing producers (gzip, snappy, lz4, zstd) shrink too,
 * and refuse keyless records. */
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

#include "harness.h"
#include "rk_helpers.h"

#define TOPIC "compacted"
#define KEYS 10
#define WRITES 1500
#define COMMITS 400

/* Bytes of the .log files of one partition dir. */
static long long log_bytes(const struct test_broker *b, const char *partition_dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", b->data_dir, partition_dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long long total = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len < 4 || strcmp(ent->d_name + len - 4, ".log") != 0)
            continue;
        char file[1400];
        struct stat st;
        snprintf(file, sizeof file, "%s/%s", path, ent->d_name);
        if (stat(file, &st) == 0)
            total += (long long)st.st_size;
    }
    closedir(d);
    return total;
}

/* Waits until the partition's .log bytes drop below limit. */
static bool wait_shrunk(const struct test_broker *b, const char *partition_dir, long long limit, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < deadline) {
        long long n = log_bytes(b, partition_dir);
        if (n >= 0 && n < limit)
            return true;
        usleep(100000);
    }
    return false;
}

/* Writes v<i> for i in [from, to) to key k<i % KEYS>. k0 is written only
 * with tombstone: then its last write is a tombstone 300 records before the
 * end and it is not written after that. */
static void produce_range(const char *bootstrap, int from, int to, bool tombstone)
{
    const char *conf[] = {"linger.ms", "0", "batch.num.messages", "20", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    char key[16], value[32];
    for (int i = from; i < to; i++) {
        int k = i % KEYS;
        if (tombstone && i == to - 300)
            assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, "k0", 2, NULL, 0, 0, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
        if (k == 0 && (!tombstone || i >= to - 300))
            continue;
        snprintf(key, sizeof key, "k%d", k);
        snprintf(value, sizeof value, "v%d", i);
        assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    rk_producer_destroy(rk);
}

/* Reads the partition from the beginning and checks it: offsets grow, each
 * key k1..k9 ends with value v<last write>, k0 ends deleted (a tombstone or
 * no record at all). Returns the record count; *k0_records counts k0's. */
static long check_latest(const char *bootstrap, int last_write, struct rk_record_set *set, int *k0_records)
{
    memset(set, 0, sizeof *set);
    long n = rk_consume_all(bootstrap, TOPIC, 1, NULL, 20000, set);
    assert_true(n > 0);
    char last[KEYS][32];
    memset(last, 0, sizeof last);
    *k0_records = 0;
    for (size_t i = 0; i < set->count; i++) {
        const struct rk_record *r = &set->records[i];
        if (i > 0)
            assert_true(r->offset > set->records[i - 1].offset);
        assert_non_null(r->key);
        int k = atoi(r->key + 1);
        assert_true(k >= 0 && k < KEYS);
        if (k == 0)
            (*k0_records)++;
        snprintf(last[k], sizeof last[k], "%.*s", r->value ? (int)r->value_len : 0, r->value ? r->value : "");
    }
    assert_string_equal(last[0], "");
    for (int k = 1; k < KEYS; k++) {
        int want = last_write - 1 - ((last_write - 1 - k) % KEYS);
        char expect[32];
        snprintf(expect, sizeof expect, "v%d", want);
        assert_string_equal(last[k], expect);
    }
    return n;
}

static void test_compacted_topic(void **state)
{
    (void)state;
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.cleaner.backoff.ms=200", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    const char *configs[] = {"cleanup.policy",
                             "compact",
                             "segment.bytes",
                             "4096",
                             "min.cleanable.dirty.ratio",
                             "0.01",
                             "delete.retention.ms",
                             "2000",
                             NULL};
    rk_create_topic(bootstrap, TOPIC, 1, configs);
    produce_range(bootstrap, 0, WRITES, true);
    long long before = log_bytes(&broker, TOPIC "-0");
    fprintf(stderr, "[compaction] %d writes: %lld bytes of segments, active segment at %lld\n", WRITES, before,
            broker_active_segment_base(&broker, TOPIC "-0"));
    /* Dozens of 4 KiB segments were written... */
    assert_true(broker_active_segment_base(&broker, TOPIC "-0") > WRITES / 2);
    /* ...and shrink to a few records beside the active segment. */
    assert_true(wait_shrunk(&broker, TOPIC "-0", 8192, 20000));

    struct rk_record_set set;
    int k0 = 0;
    long n = check_latest(bootstrap, WRITES, &set, &k0);
    fprintf(stderr, "[compaction] after cleaning: %lld bytes, %ld records, k0 records %d\n",
            log_bytes(&broker, TOPIC "-0"), n, k0);
    assert_true(n < WRITES / 4);
    assert_true(k0 <= 1); /* the tombstone at most */
    rk_record_set_free(&set);

    /* Past delete.retention.ms, the next clean (more dirty data) drops the
     * tombstone and every k0 record before it. */
    sleep(3);
    produce_range(bootstrap, WRITES, WRITES + 400, false);
    long long deadline = harness_now_ms() + 20000;
    do {
        usleep(300000);
        n = check_latest(bootstrap, WRITES + 400, &set, &k0);
        if (k0 == 0)
            break;
        rk_record_set_free(&set);
    } while (harness_now_ms() < deadline);
    assert_int_equal(k0, 0);

    /* Let the cleaner settle, then a restart reads the same records. */
    sleep(1);
    rk_record_set_free(&set);
    check_latest(bootstrap, WRITES + 400, &set, &k0);
    broker_stop(&broker);
    broker_restart(&broker);
    bootstrap = broker_bootstrap(&broker);
    struct rk_record_set again;
    check_latest(bootstrap, WRITES + 400, &again, &k0);
    assert_int_equal(again.count, set.count);
    for (size_t i = 0; i < set.count; i++) {
        assert_int_equal(again.records[i].offset, set.records[i].offset);
        assert_int_equal(again.records[i].value_len, set.records[i].value_len);
        if (set.records[i].value)
            assert_memory_equal(again.records[i].value, set.records[i].value, set.records[i].value_len);
    }
    rk_record_set_free(&set);
    rk_record_set_free(&again);
    char checkpoint[800];
    snprintf(checkpoint, sizeof checkpoint, "%s/cleaner-offset-checkpoint", broker.data_dir);
    assert_int_equal(access(checkpoint, F_OK), 0);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

static int64_t committed_offset(const char *bootstrap, const char *group)
{
    const char *conf[] = {"group.id", group, "enable.auto.commit", "false", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, TOPIC, 0);
    assert_int_equal(rd_kafka_committed(rk, parts, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t offset = parts->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
    return offset;
}

static void test_consumer_offsets_compacted(void **state)
{
    (void)state;
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.cleaner.backoff.ms=200", "offsets.topic.num.partitions=1",
                               "offsets.topic.segment.bytes=4096", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    rk_create_topic(bootstrap, TOPIC, 1, NULL);

    const char *conf[] = {"group.id", "offsets-many", "enable.auto.commit", "false", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    for (int i = 1; i <= COMMITS; i++) {
        rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(offsets, TOPIC, 0)->offset = i;
        assert_int_equal(rd_kafka_commit(rk, offsets, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(offsets);
    }
    rd_kafka_destroy(rk);
    fprintf(stderr, "[compaction] __consumer_offsets after %d commits: %lld bytes, active at %lld\n", COMMITS,
            log_bytes(&broker, "__consumer_offsets-0"), broker_active_segment_base(&broker, "__consumer_offsets-0"));
    /* One record per commit went through many 4 KiB segments. */
    assert_true(broker_active_segment_base(&broker, "__consumer_offsets-0") > COMMITS / 2);
    assert_true(wait_shrunk(&broker, "__consumer_offsets-0", 8192, 20000));
    assert_int_equal(committed_offset(bootstrap, "offsets-many"), COMMITS);

    broker_stop(&broker);
    broker_restart(&broker);
    bootstrap = broker_bootstrap(&broker);
    assert_true(log_bytes(&broker, "__consumer_offsets-0") < 8192);
    assert_int_equal(committed_offset(bootstrap, "offsets-many"), COMMITS);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

struct codec_count {
    int codec;
    long long max_base;
    int count;
};

static void count_codec_batch(const uint8_t *batch, size_t len, void *arg)
{
    struct codec_count *c = arg;
    (void)len;
    long long base = 0;
    for (int i = 0; i < 8; i++)
        base = (base << 8) | batch[i];
    if ((batch[22] & 0x07) == c->codec && base < c->max_base)
        c->count++;
}

/* Batches compressed with `codec` and based below max_base in the .log
 * files of a partition dir. */
static int count_codec_batches(const struct test_broker *b, const char *partition_dir, int codec, long long max_base)
{
    struct codec_count c = {codec, max_base, 0};
    broker_each_stored_batch(b, partition_dir, count_codec_batch, &c);
    return c.count;
}

#define Z_KEYS 10
#define Z_WRITES 1000
#define Z_FILLERS 100 /* rounds of 10 at most */

static void compacted_with_codec(const char *codec_name, int codec)
{
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.cleaner.backoff.ms=200", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    char topic[64], dir[80];
    snprintf(topic, sizeof topic, "compressed-%s", codec_name);
    snprintf(dir, sizeof dir, "%s-0", topic);
    const char *configs[] = {"cleanup.policy", "compact", "segment.bytes", "4096", "min.cleanable.dirty.ratio",
                             "0.01",           NULL};
    rk_create_topic(bootstrap, topic, 1, configs);

    /* Batches of up to 50 compressible records over 10 keys. */
    const char *conf[] = {"linger.ms", "20", "batch.num.messages", "50", "compression.codec", codec_name, NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    char key[16], value[160];
    uint64_t noise = 88172645463325252ull;
    for (int i = 0; i < Z_WRITES; i++) {
        /* Half noise, so the compressed log is tens of KiB before cleaning. */
        noise ^= noise << 13;
        noise ^= noise >> 7;
        noise ^= noise << 17;
        snprintf(key, sizeof key, "k%d", i % Z_KEYS);
        snprintf(value, sizeof value, "v%d %016llx%016llx the quick brown fox jumps", i, (unsigned long long)noise,
                 (unsigned long long)(noise * 2654435761u));
        assert_int_equal(rk_produce_blocking(rk, topic, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* Fillers of one other key until the active segment starts past the
     * keyed records, so that all of them are cleanable. */
    for (int i = 0; i < Z_FILLERS && broker_active_segment_base(&broker, dir) < Z_WRITES; i++) {
        for (int j = 0; j < 10; j++) {
            snprintf(value, sizeof value, "filler %d", i * 10 + j);
            assert_int_equal(rk_produce_blocking(rk, topic, 0, "filler", 6, value, strlen(value), 0, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    assert_true(count_codec_batches(&broker, dir, codec, Z_WRITES) > 0);
    long long before = log_bytes(&broker, dir);

    /* A keyless record in a compressed batch is refused. */
    struct rk_delivery_slot slot = {0};
    char big[600];
    memset(big, 'x', sizeof big);
    assert_int_equal(rk_produce_blocking(rk, topic, 0, NULL, 0, big, sizeof big, 0, NULL, &slot),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_produce_blocking(rk, topic, 0, "fine", 4, big, sizeof big, 0, NULL, NULL),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_flush(rk, 15000);
    assert_true(slot.done);
    assert_int_equal(slot.err, RD_KAFKA_RESP_ERR_INVALID_RECORD);
    rk_producer_destroy(rk);

    long long active = broker_active_segment_base(&broker, dir);
    assert_true(active >= Z_WRITES);
    /* 1000 records with 16 random bytes each cannot fit in 8 KiB, however
     * compressed: the partition shrinks to the latest record per key, a few
     * fillers and the active segment only by being cleaned. */
    bool shrunk = wait_shrunk(&broker, dir, 8192, 20000);
    fprintf(stderr, "[compaction %s] active segment at %lld, %lld bytes, %lld after cleaning\n", codec_name, active,
            before, log_bytes(&broker, dir));
    assert_true(shrunk);
    /* The survivors of the keyed batches were recompressed, not inflated. */
    assert_true(count_codec_batches(&broker, dir, codec, Z_WRITES) > 0);

    struct rk_record_set set;
    memset(&set, 0, sizeof set);
    long n = rk_consume_all(bootstrap, topic, 1, NULL, 20000, &set);
    assert_true(n > 0);
    int seen[Z_KEYS] = {0};
    for (size_t i = 0; i < set.count; i++) {
        const struct rk_record *r = &set.records[i];
        assert_non_null(r->key);
        if (i > 0)
            assert_true(r->offset > set.records[i - 1].offset);
        if (r->key_len == 6 && memcmp(r->key, "filler", 6) == 0)
            continue;
        if (r->key_len == 4 && memcmp(r->key, "fine", 4) == 0)
            continue;
        int k = atoi(r->key + 1);
        assert_true(k >= 0 && k < Z_KEYS);
        seen[k]++;
        /* The one record left of a key is its last write. */
        int want = Z_WRITES - Z_KEYS + k;
        char expect[16];
        snprintf(expect, sizeof expect, "v%d ", want);
        assert_true(r->value_len > strlen(expect));
        assert_memory_equal(r->value, expect, strlen(expect));
        assert_int_equal(r->offset, want);
    }
    for (int k = 0; k < Z_KEYS; k++)
        assert_int_equal(seen[k], 1);
    rk_record_set_free(&set);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

static void test_compressed_gzip(void **state)
{
    (void)state;
    compacted_with_codec("gzip", 1);
}

static void test_compressed_snappy(void **state)
{
    (void)state;
    compacted_with_codec("snappy", 2);
}

static void test_compressed_lz4(void **state)
{
    (void)state;
    compacted_with_codec("lz4", 3);
}

static void test_compressed_zstd(void **state)
{
    (void)state;
    compacted_with_codec("zstd", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compacted_topic), cmocka_unit_test(test_consumer_offsets_compacted),
        cmocka_unit_test(test_compressed_gzip), cmocka_unit_test(test_compressed_snappy),
        cmocka_unit_test(test_compressed_lz4),  cmocka_unit_test(test_compressed_zstd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
