/* Log compaction over transactional data against a real broker: a
 * transactional producer commits and aborts rounds of writes to a compacted
 * topic; once cleaned, a read_uncommitted consumer sees no record of an
 * aborted transaction (keys written only by aborted transactions are gone)
 * and the latest committed value of every key exactly once, a
 * read_committed consumer sees the same, the COMMIT/ABORT markers whose
 * data went leave the segments after delete.retention.ms, a restart reads
 * the same, and the producer's later transactions read right over it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "rk_helpers.h"

#define TOPIC "txn-compacted"
#define PARTITION_DIR TOPIC "-0"
#define SHARED_KEYS 12
#define ROUNDS 9            /* even rounds commit, odd rounds abort */
#define LAST_ROUND_KEYS 6   /* the last (committed) round writes k0..k5 only */
#define ABORTED_ONLY_KEYS 4 /* per aborted round, keys no commit ever writes */
#define RETENTION_MS 5000   /* delete.retention.ms of the topic */
#define MAX_VIEW 4096

static bool round_commits(int round)
{
    return round % 2 == 0;
}

static int keys_of_round(int round)
{
    return round == ROUNDS - 1 ? LAST_ROUND_KEYS : SHARED_KEYS;
}

/* Values are padded so that a few rounds fill a 4 KiB segment; "c" or
 * "a" says whether their transaction commits. */
static void txn_value(bool commits, int round, int key, char *buf, size_t len)
{
    snprintf(buf, len, "%s r%d k%d %0100d", commits ? "c" : "a", round, key, 0);
}

static void shared_value(int round, int key, char *buf, size_t len)
{
    txn_value(round_commits(round), round, key, buf, len);
}

/* The last committed value of `key` in the single-producer scenario. */
static void single_expected(int key, char *buf, size_t len)
{
    for (int round = ROUNDS - 1; round >= 0; round--) {
        if (round_commits(round) && key < keys_of_round(round)) {
            shared_value(round, key, buf, len);
            return;
        }
    }
    buf[0] = '\0';
}

/* The last committed value of each key k0..k<SHARED_KEYS-1> in the
 * scenario under test. */
static void (*expected_value)(int key, char *buf, size_t len) = single_expected;

/* Runs every round in its own transaction; batches of a few records so a
 * transaction spans several batches. */
static void produce_transactions(const char *bootstrap)
{
    const char *conf[] = {"transactional.id",
                          "txn-compact",
                          "transaction.timeout.ms",
                          "30000",
                          "linger.ms",
                          "5",
                          "batch.num.messages",
                          "4",
                          NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    rk_expect_ok(rd_kafka_init_transactions(rk, 30000), "init_transactions");
    char key[32], value[160];
    for (int round = 0; round < ROUNDS; round++) {
        rk_expect_ok(rd_kafka_begin_transaction(rk), "begin_transaction");
        for (int k = 0; k < keys_of_round(round); k++) {
            snprintf(key, sizeof key, "k%d", k);
            shared_value(round, k, value, sizeof value);
            assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        if (round_commits(round)) {
            rk_expect_ok(rd_kafka_commit_transaction(rk, 30000), "commit_transaction");
            continue;
        }
        for (int j = 0; j < ABORTED_ONLY_KEYS; j++) {
            snprintf(key, sizeof key, "ab%d-%d", round, j);
            snprintf(value, sizeof value, "a r%d only %0100d", round, j);
            assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                             RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        /* Aborted data reaches the log before the ABORT marker. */
        assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rk_expect_ok(rd_kafka_abort_transaction(rk, 30000), "abort_transaction");
    }
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    rk_producer_destroy(rk);
}

/* After the restart: the same transactional id aborts one record and
 * commits another. */
static void produce_late_transactions(const char *bootstrap)
{
    const char *conf[] = {"transactional.id", "txn-compact", "transaction.timeout.ms", "30000", "linger.ms", "5", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    rk_expect_ok(rd_kafka_init_transactions(rk, 30000), "init_transactions (late)");
    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin_transaction (late abort)");
    assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, "ab-late", 7, "a late", 6, 0, NULL, NULL),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_expect_ok(rd_kafka_abort_transaction(rk, 30000), "abort_transaction (late)");
    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin_transaction (late commit)");
    assert_int_equal(rk_produce_blocking(rk, TOPIC, 0, "late", 4, "c late", 6, 0, NULL, NULL),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_expect_ok(rd_kafka_commit_transaction(rk, 30000), "commit_transaction (late)");
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    rk_producer_destroy(rk);
}

/* Writes `rounds` x 10 non-transactional records of one key; returns the
 * offset of the first. */
static int64_t produce_fillers(const char *bootstrap, int first, int rounds)
{
    const char *conf[] = {"linger.ms", "0", "batch.num.messages", "10", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    struct rk_delivery_slot slot = {0};
    char value[160];
    for (int i = 0; i < rounds * 10; i++) {
        snprintf(value, sizeof value, "filler %d %0100d", first + i, 0);
        assert_int_equal(
            rk_produce_blocking(rk, TOPIC, 0, "filler", 6, value, strlen(value), 0, NULL, i == 0 ? &slot : NULL),
            RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(rk)->failed, 0);
    rk_producer_destroy(rk);
    assert_true(slot.done);
    assert_int_equal(slot.err, RD_KAFKA_RESP_ERR_NO_ERROR);
    return slot.offset;
}

/* One partition's records as one consumer saw them. */
struct view {
    size_t count;
    int64_t offsets[MAX_VIEW];
    char keys[MAX_VIEW][32];
    char values[MAX_VIEW][160];
};

/* Reads the partition from the beginning to its end (the LSO for
 * read_committed) with the given isolation level. */
static void read_view(const char *bootstrap, const char *isolation, struct view *v)
{
    const char *conf[] = {"isolation.level", isolation, "fetch.wait.max.ms", "100", "check.crcs", "true", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, TOPIC, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    v->count = 0;
    bool at_end = false;
    long long deadline = harness_now_ms() + 20000;
    while (!at_end && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            at_end = true;
        } else if (m->err) {
            fprintf(stderr, "[txn-compaction] %s: %s\n", isolation, rd_kafka_message_errstr(m));
        } else {
            assert_true(v->count < MAX_VIEW);
            assert_non_null(m->key);
            assert_true(m->key_len < sizeof v->keys[0] && m->len < sizeof v->values[0]);
            v->offsets[v->count] = m->offset;
            snprintf(v->keys[v->count], sizeof v->keys[0], "%.*s", (int)m->key_len, (const char *)m->key);
            snprintf(v->values[v->count], sizeof v->values[0], "%.*s", (int)m->len,
                     m->payload ? (const char *)m->payload : "");
            v->count++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    if (!at_end)
        fail_msg("%s read of %s did not reach the end within 20 s", isolation, TOPIC);
}

/* What a view holds of the transactional keys. */
struct view_summary {
    int aborted_values; /* records of aborted transactions */
    int late;           /* records of the transaction committed after the restart */
    int copies[SHARED_KEYS];
    bool latest_ok[SHARED_KEYS]; /* the key's last record is its last committed value */
};

static void summarize(const struct view *v, struct view_summary *s)
{
    memset(s, 0, sizeof *s);
    char want[160];
    for (size_t i = 0; i < v->count; i++) {
        if (i > 0)
            assert_true(v->offsets[i] > v->offsets[i - 1]);
        if (strcmp(v->keys[i], "filler") == 0)
            continue;
        if (strncmp(v->keys[i], "ab", 2) == 0 || v->values[i][0] == 'a') {
            s->aborted_values++;
            continue;
        }
        if (strcmp(v->keys[i], "late") == 0) {
            s->late++;
            continue;
        }
        assert_true(v->keys[i][0] == 'k');
        int k = atoi(v->keys[i] + 1);
        assert_true(k >= 0 && k < SHARED_KEYS);
        s->copies[k]++;
        expected_value(k, want, sizeof want);
        s->latest_ok[k] = strcmp(v->values[i], want) == 0;
    }
}

/* A cleaned view: no aborted record and one copy of each key, its last
 * committed value. */
static bool view_is_clean(const struct view_summary *s)
{
    if (s->aborted_values != 0)
        return false;
    for (int k = 0; k < SHARED_KEYS; k++)
        if (s->copies[k] != 1 || !s->latest_ok[k])
            return false;
    return true;
}

static void assert_view_clean(const struct view *v, const char *what)
{
    struct view_summary s;
    summarize(v, &s);
    assert_int_equal(s.aborted_values, 0);
    for (int k = 0; k < SHARED_KEYS; k++) {
        if (s.copies[k] != 1 || !s.latest_ok[k])
            fail_msg("%s: key k%d has %d copies, last committed value %s", what, k, s.copies[k],
                     s.latest_ok[k] ? "last" : "not last");
    }
}

/* Next index at or after i whose key is not the filler's. */
static size_t skip_fillers(const struct view *v, size_t i)
{
    while (i < v->count && strcmp(v->keys[i], "filler") == 0)
        i++;
    return i;
}

/* Same transactional records at the same offsets. Fillers are left out:
 * the cleaner may still be compacting them between two reads. */
static void assert_views_equal(const struct view *a, const struct view *b)
{
    size_t i = skip_fillers(a, 0), j = skip_fillers(b, 0);
    while (i < a->count && j < b->count) {
        assert_int_equal(a->offsets[i], b->offsets[j]);
        assert_string_equal(a->keys[i], b->keys[j]);
        assert_string_equal(a->values[i], b->values[j]);
        i = skip_fillers(a, i + 1);
        j = skip_fillers(b, j + 1);
    }
    assert_int_equal(i, a->count);
    assert_int_equal(j, b->count);
}

static uint32_t read_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Zigzag varint at *pos within len; false if it runs past the end. */
static bool read_varint(const uint8_t *buf, size_t len, size_t *pos, int64_t *out)
{
    uint64_t raw = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return false;
        uint8_t byte = buf[(*pos)++];
        raw |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            return true;
        }
    }
    return false;
}

struct marker_count {
    int commits;
    int aborts;
};

/* A COMMIT or ABORT marker (control batch, attributes bit 5) counted by its
 * first record's key: version int16, type int16 (0 abort, 1 commit). */
static void count_marker(const uint8_t *batch, size_t total, void *arg)
{
    struct marker_count *c = arg;
    if (!(batch[22] & 0x20) || read_be32(batch + 57) == 0)
        return;
    size_t pos = 61;
    int64_t record_len = 0, ts_delta = 0, offset_delta = 0, key_len = 0;
    assert_true(read_varint(batch, total, &pos, &record_len));
    pos++; /* record attributes */
    assert_true(read_varint(batch, total, &pos, &ts_delta));
    assert_true(read_varint(batch, total, &pos, &offset_delta));
    assert_true(read_varint(batch, total, &pos, &key_len));
    assert_true(key_len >= 4 && pos + 4 <= total);
    int type = (batch[pos + 2] << 8) | batch[pos + 3];
    if (type == 1)
        c->commits++;
    else if (type == 0)
        c->aborts++;
}

/* The markers left in the partition's .log files. */
static struct marker_count count_markers(const struct test_broker *b)
{
    struct marker_count c = {0, 0};
    broker_each_stored_batch(b, PARTITION_DIR, count_marker, &c);
    return c;
}

static struct test_broker broker;
static struct view committed, uncommitted, again;

/* Starts the broker and creates the compacted topic; returns its bootstrap. */
static const char *start_compacted(void)
{
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"log.cleaner.backoff.ms=200", "transaction.state.log.num.partitions=1", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    char retention[16];
    snprintf(retention, sizeof retention, "%d", RETENTION_MS);
    const char *configs[] = {"cleanup.policy",
                             "compact",
                             "segment.bytes",
                             "4096",
                             "min.cleanable.dirty.ratio",
                             "0.01",
                             "delete.retention.ms",
                             retention,
                             NULL};
    rk_create_topic(bootstrap, TOPIC, 1, configs);
    return bootstrap;
}

/* Once the transactions written since `started` are complete: fills the
 * log until they are cleanable, checks both views once cleaned, that every
 * marker stays before delete.retention.ms (`all` of them) and only `kept`
 * after it, and that a restart reads the same. Returns the new bootstrap. */
static const char *check_cleaned(long long started, struct marker_count all, struct marker_count kept)
{
    const char *bootstrap = broker_bootstrap(&broker);
    /* The markers follow EndTxn asynchronously: wait until read_committed
     * shows the last commit, then check it, cleaned or not. */
    struct view_summary s;
    long long deadline = harness_now_ms() + 10000;
    for (;;) {
        read_view(bootstrap, "read_committed", &committed);
        summarize(&committed, &s);
        if (s.latest_ok[0] || harness_now_ms() >= deadline)
            break;
        usleep(100000);
    }
    assert_int_equal(s.aborted_values, 0);
    for (int k = 0; k < SHARED_KEYS; k++)
        assert_true(s.copies[k] >= 1 && s.latest_ok[k]);

    /* Fillers until the active segment starts past every transactional
     * batch and marker, which makes all of them cleanable. */
    int fillers = 0;
    int64_t first_filler = produce_fillers(bootstrap, fillers, 1);
    fillers += 10;
    for (int i = 0; i < 100 && broker_active_segment_base(&broker, PARTITION_DIR) <= first_filler; i++, fillers += 10)
        produce_fillers(bootstrap, fillers, 1);
    assert_true(broker_active_segment_base(&broker, PARTITION_DIR) > first_filler);

    /* The cleaner drops the aborted batches and older committed copies. */
    deadline = harness_now_ms() + 20000;
    do {
        usleep(200000);
        read_view(bootstrap, "read_uncommitted", &uncommitted);
        summarize(&uncommitted, &s);
    } while (!view_is_clean(&s) && harness_now_ms() < deadline);
    assert_view_clean(&uncommitted, "read_uncommitted after the first clean");
    struct marker_count markers = count_markers(&broker);
    long long elapsed = harness_now_ms() - started;
    fprintf(stderr,
            "[txn-compaction] cleaned after %lld ms: %zu records, %d COMMIT and %d ABORT "
            "markers left\n",
            elapsed, uncommitted.count, markers.commits, markers.aborts);
    /* No segment has been clean for delete.retention.ms yet: every
     * marker stays, though the data of most went. */
    if (elapsed < RETENTION_MS - 100) {
        assert_int_equal(markers.commits, all.commits);
        assert_int_equal(markers.aborts, all.aborts);
    }

    /* Past the horizon, more dirty data make the cleaner run again: the
     * markers whose data are gone go, the others stay. */
    sleep(RETENTION_MS / 1000 + 1);
    deadline = harness_now_ms() + 20000;
    do {
        produce_fillers(bootstrap, fillers, 1);
        fillers += 10;
        usleep(500000);
        markers = count_markers(&broker);
    } while ((markers.commits != kept.commits || markers.aborts != kept.aborts) && harness_now_ms() < deadline);
    fprintf(stderr, "[txn-compaction] past the horizon: %d COMMIT and %d ABORT markers left\n", markers.commits,
            markers.aborts);
    assert_int_equal(markers.aborts, kept.aborts);
    assert_int_equal(markers.commits, kept.commits);

    /* Let the cleaner settle, then both views agree with each other. */
    sleep(1);
    read_view(bootstrap, "read_uncommitted", &uncommitted);
    assert_view_clean(&uncommitted, "read_uncommitted past the horizon");
    read_view(bootstrap, "read_committed", &committed);
    assert_view_clean(&committed, "read_committed past the horizon");
    assert_views_equal(&committed, &uncommitted);

    /* A restart reloads segments and .txnindex: the same records. */
    broker_stop(&broker);
    broker_restart(&broker);
    bootstrap = broker_bootstrap(&broker);
    read_view(bootstrap, "read_committed", &again);
    assert_view_clean(&again, "read_committed after restart");
    assert_views_equal(&again, &committed);
    read_view(bootstrap, "read_uncommitted", &again);
    assert_views_equal(&again, &uncommitted);
    return bootstrap;
}

static void test_compacted_transactions(void **state)
{
    (void)state;
    expected_value = single_expected;
    const char *bootstrap = start_compacted();
    long long started = harness_now_ms();
    produce_transactions(bootstrap);
    /* Past the horizon the markers of the last two commits stay: k6..k11
     * keep their values of round ROUNDS - 3. */
    struct marker_count all = {(ROUNDS + 1) / 2, ROUNDS / 2};
    struct marker_count kept = {2, 0};
    bootstrap = check_cleaned(started, all, kept);

    /* The same producer aborts and commits again over the reloaded log
     * whose old markers are gone: read_committed shows the new commit and
     * nothing of the new abort. */
    produce_late_transactions(bootstrap);
    struct view_summary late;
    long long deadline = harness_now_ms() + 10000;
    for (;;) {
        read_view(bootstrap, "read_committed", &again);
        summarize(&again, &late);
        if (late.late > 0 || harness_now_ms() >= deadline)
            break;
        usleep(100000);
    }
    assert_int_equal(late.late, 1);
    assert_view_clean(&again, "read_committed after a later commit");
    fprintf(stderr, "[txn-compaction] done in %lld ms\n", harness_now_ms() - started);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

#define INTERLEAVED_ROUNDS 6

/* Two producers, each round one commits and the other aborts, taking
 * turns; the last round's committer is the second producer. */
static void interleaved_expected(int key, char *buf, size_t len)
{
    txn_value(true, INTERLEAVED_ROUNDS - 1, key, buf, len);
}

/* Each round both producers have a transaction open at once and write
 * every key, one record per batch, the committer first: the aborted value
 * of a key is the later one and must not hide the committed one. */
static void produce_interleaved(const char *bootstrap)
{
    rd_kafka_t *producers[2];
    const char *ids[2] = {"txn-first", "txn-second"};
    for (int p = 0; p < 2; p++) {
        const char *conf[] = {"transactional.id", ids[p], "transaction.timeout.ms", "30000", "linger.ms", "0", NULL};
        producers[p] = rk_producer_new(bootstrap, conf);
        rk_expect_ok(rd_kafka_init_transactions(producers[p], 30000), "init_transactions");
    }
    char key[32], value[160];
    for (int round = 0; round < INTERLEAVED_ROUNDS; round++) {
        rd_kafka_t *committer = producers[round % 2 == 0 ? 0 : 1];
        rd_kafka_t *aborter = producers[round % 2 == 0 ? 1 : 0];
        rk_expect_ok(rd_kafka_begin_transaction(committer), "begin_transaction (committer)");
        rk_expect_ok(rd_kafka_begin_transaction(aborter), "begin_transaction (aborter)");
        for (int k = 0; k < SHARED_KEYS; k++) {
            snprintf(key, sizeof key, "k%d", k);
            for (int side = 0; side < 2; side++) {
                rd_kafka_t *rk = side == 0 ? committer : aborter;
                txn_value(side == 0, round, k, value, sizeof value);
                assert_int_equal(
                    rk_produce_blocking(rk, TOPIC, 0, key, strlen(key), value, strlen(value), 0, NULL, NULL),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
                assert_int_equal(rd_kafka_flush(rk, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
            }
        }
        rk_expect_ok(rd_kafka_commit_transaction(committer, 30000), "commit_transaction");
        rk_expect_ok(rd_kafka_abort_transaction(aborter, 30000), "abort_transaction");
    }
    for (int p = 0; p < 2; p++) {
        assert_int_equal(rk_producer_stats(producers[p])->failed, 0);
        rk_producer_destroy(producers[p]);
    }
}

static void test_interleaved_producers(void **state)
{
    (void)state;
    expected_value = interleaved_expected;
    const char *bootstrap = start_compacted();
    long long started = harness_now_ms();
    produce_interleaved(bootstrap);
    /* Past the horizon the last commit stays (its data are the latest
     * values) and so does the first producer's last ABORT: that producer's
     * last batch is kept, emptied, for its producer state. */
    struct marker_count all = {INTERLEAVED_ROUNDS, INTERLEAVED_ROUNDS};
    struct marker_count kept = {1, 1};
    check_cleaned(started, all, kept);
    fprintf(stderr, "[txn-compaction] interleaved done in %lld ms\n", harness_now_ms() - started);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compacted_transactions),
        cmocka_unit_test(test_interleaved_producers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
