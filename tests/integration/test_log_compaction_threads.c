/* Log compaction with log.cleaner.threads=3: four compacted topics written
 * at once by one producer are cleaned while it writes (several passes per
 * topic), and each then reads back as the latest value per key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"

#define TOPICS 4
#define KEYS 10
#define ROUNDS 30
#define PER_ROUND 50 /* records per topic and round */
#define FILLER_ROUNDS 20

static const char *const topic_names[TOPICS] = {"threads-a", "threads-b", "threads-c", "threads-d"};

/* Lines of the broker log containing needle (and needle2 when not NULL). */
static int count_log_lines(const struct test_broker *b, const char *needle, const char *needle2)
{
    FILE *f = fopen(b->log_path, "r");
    assert_non_null(f);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) && (!needle2 || strstr(line, needle2));
    fclose(f);
    return n;
}

static void produce_round(rd_kafka_t *rk, int round)
{
    char key[16], value[48];
    for (int i = round * PER_ROUND; i < (round + 1) * PER_ROUND; i++)
        for (int t = 0; t < TOPICS; t++) {
            snprintf(key, sizeof key, "k%d", i % KEYS);
            snprintf(value, sizeof value, "%s-v%d", topic_names[t], i);
            assert_int_equal(
                rk_produce_blocking(rk, topic_names[t], 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                RD_KAFKA_RESP_ERR_NO_ERROR);
        }
    assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

/* Records of another key until each topic's active segment starts past
 * the keyed records, so that all of them are cleanable. */
static void produce_fillers(rd_kafka_t *rk, const struct test_broker *b, long long last_keyed)
{
    char dir[64], value[32];
    for (int t = 0; t < TOPICS; t++) {
        snprintf(dir, sizeof dir, "%s-0", topic_names[t]);
        for (int r = 0; r < FILLER_ROUNDS && broker_active_segment_base(b, dir) <= last_keyed; r++) {
            for (int j = 0; j < 40; j++) {
                snprintf(value, sizeof value, "filler %d", r * 40 + j);
                assert_int_equal(
                    rk_produce_blocking(rk, topic_names[t], 0, "filler", 6, value, strlen(value), 0, NULL, NULL),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
            }
            assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        assert_true(broker_active_segment_base(b, dir) > last_keyed);
    }
}

/* True when the topic holds each key k0..k9 once, with its last value. */
static bool latest_only(const char *bootstrap, int t, bool report)
{
    struct rk_record_set set;
    memset(&set, 0, sizeof set);
    long n = rk_consume_all(bootstrap, topic_names[t], 1, NULL, 15000, &set);
    assert_true(n > 0);
    int seen[KEYS] = {0};
    bool ok = true;
    for (size_t i = 0; i < set.count; i++) {
        const struct rk_record *r = &set.records[i];
        assert_non_null(r->key);
        if (i > 0)
            assert_true(r->offset > set.records[i - 1].offset);
        if (r->key_len == 6 && memcmp(r->key, "filler", 6) == 0)
            continue;
        int k = atoi(r->key + 1);
        assert_true(k >= 0 && k < KEYS);
        seen[k]++;
        int last = ROUNDS * PER_ROUND - KEYS + k;
        char want[48];
        snprintf(want, sizeof want, "%s-v%d", topic_names[t], last);
        if (!r->value || r->value_len != strlen(want) || memcmp(r->value, want, r->value_len))
            ok = false;
    }
    for (int k = 0; k < KEYS; k++)
        ok = ok && seen[k] == 1;
    if (report && !ok)
        fprintf(stderr, "[compaction-threads] %s: %zu records, not the latest values only\n", topic_names[t],
                set.count);
    rk_record_set_free(&set);
    return ok;
}

static void test_three_cleaner_threads(void **state)
{
    (void)state;
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.cleaner.threads=3", "log.cleaner.backoff.ms=100", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    const char *configs[] = {"cleanup.policy", "compact", "segment.bytes", "4096", "min.cleanable.dirty.ratio",
                             "0.01",           NULL};
    for (int t = 0; t < TOPICS; t++)
        rk_create_topic(bootstrap, topic_names[t], 1, configs);
    assert_int_equal(count_log_lines(&broker, "started 3 log cleaner threads", NULL), 1);

    const char *conf[] = {"linger.ms", "5", "batch.num.messages", "10", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    long long started = harness_now_ms();
    for (int round = 0; round < ROUNDS; round++) {
        produce_round(rk, round);
        usleep(50000); /* the cleaners work between and during rounds */
    }
    fprintf(stderr, "[compaction-threads] %d records per topic in %lld ms\n", ROUNDS * PER_ROUND,
            harness_now_ms() - started);
    /* Passes ran while the producer wrote: once it stops, one pass per
     * topic is enough, so two or more mean at least one ran during. */
    for (int t = 0; t < TOPICS; t++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s-0: cleaned up to offset", topic_names[t]);
        int passes = count_log_lines(&broker, prefix, NULL);
        fprintf(stderr, "[compaction-threads] %s: %d passes while writing\n", topic_names[t], passes);
        assert_true(passes >= 2);
    }

    produce_fillers(rk, &broker, ROUNDS * PER_ROUND - 1);
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    rk_producer_destroy(rk);

    long long deadline = harness_now_ms() + 20000;
    bool all = false;
    while (!all && harness_now_ms() < deadline) {
        usleep(300000);
        all = true;
        for (int t = 0; t < TOPICS && all; t++)
            all = latest_only(bootstrap, t, false);
    }
    for (int t = 0; t < TOPICS; t++)
        assert_true(latest_only(bootstrap, t, true));
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_cleaner_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
