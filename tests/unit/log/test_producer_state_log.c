/* Producer state inside the partition log: duplicate appends answered with
 * the original offsets, rejected batches, snapshots at roll and close,
 * rebuild from the log after losing snapshots, truncation, retention, and
 * racing retries from several threads. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/log_manager.h"
#include "log/producer_state.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

static void open_log(struct log_fixture *f, bool recover)
{
    char err[256];
    assert_int_equal(partition_log_open(f->dir, &f->cfg, recover, &f->log, err, sizeof err), KAFKA_ERR_NONE);
}

static void reopen(struct log_fixture *f, bool recover)
{
    partition_log_close(f->log);
    f->log = NULL;
    open_log(f, recover);
}

/* A batch of `records` records from producer pid/epoch starting at seq. */
static uint8_t *idem_batch(int64_t pid, int16_t epoch, int32_t seq, int records, int16_t attrs, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    b.producer_id = pid;
    b.producer_epoch = epoch;
    b.base_sequence = seq;
    b.attributes = attrs;
    for (int i = 0; i < records; i++) {
        char value[32];
        int n = snprintf(value, sizeof value, "p%lld-s%d", (long long)pid, seq + i);
        record_batch_builder_add(&b, 1000 + i, NULL, -1, value, n, NULL, 0);
    }
    uint8_t *out = NULL;
    assert_int_equal(record_batch_builder_finish(&b, &out, len), 0);
    return out;
}

/* Append and return the error; *base gets the base offset. */
static int16_t produce(struct log_fixture *f, int64_t pid, int16_t epoch, int32_t seq, int records, int64_t *base)
{
    size_t len;
    uint8_t *batch = idem_batch(pid, epoch, seq, records, 0, &len);
    struct log_append_result res;
    int16_t code = partition_log_append(f->log, batch, len, 0, &res);
    free(batch);
    if (base)
        *base = res.base_offset;
    return code;
}

static int count_snapshots(const char *dir, int64_t *latest)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    int n = 0;
    *latest = -1;
    while ((ent = readdir(d)) != NULL) {
        size_t l = strlen(ent->d_name);
        if (l == 29 && strcmp(ent->d_name + 20, ".snapshot") == 0) {
            n++;
            long long off = atoll(ent->d_name);
            if (off > *latest)
                *latest = off;
        }
    }
    closedir(d);
    return n;
}

static void remove_snapshots(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.snapshot", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_duplicates_and_errors(void **state)
{
    struct log_fixture *f = *state;
    open_log(f, false);
    int64_t base;
    assert_int_equal(produce(f, 5, 0, 0, 3, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 0);
    assert_int_equal(produce(f, 6, 0, 0, 2, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 3);
    /* The retry gets the original offset and the log does not grow. */
    assert_int_equal(produce(f, 5, 0, 0, 3, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 0);
    assert_int_equal(partition_log_end_offset(f->log), 5);
    assert_int_equal(produce(f, 5, 0, 4, 1, &base), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(produce(f, 7, 0, 3, 1, &base), KAFKA_ERR_UNKNOWN_PRODUCER_ID);
    assert_int_equal(produce(f, 5, 1, 0, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce(f, 5, 0, 3, 1, &base), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(partition_log_end_offset(f->log), 6);

    size_t len;
    struct log_append_result res;
    /* Control batches are the broker's own: a producer cannot send one. */
    uint8_t *txn = idem_batch(8, 0, 0, 1, RECORD_BATCH_TRANSACTIONAL_BIT | RECORD_BATCH_CONTROL_BIT, &len);
    assert_int_equal(partition_log_append(f->log, txn, len, 0, &res), KAFKA_ERR_INVALID_RECORD);
    free(txn);
    /* Two idempotent batches in one append are refused. */
    size_t l1, l2;
    uint8_t *b1 = idem_batch(9, 0, 0, 1, 0, &l1), *b2 = idem_batch(9, 0, 1, 1, 0, &l2);
    uint8_t *both = malloc(l1 + l2);
    memcpy(both, b1, l1);
    memcpy(both + l1, b2, l2);
    assert_int_equal(partition_log_append(f->log, both, l1 + l2, 0, &res), KAFKA_ERR_INVALID_RECORD);
    free(b1);
    free(b2);
    free(both);
    /* Plain (non-idempotent) batches are untouched by producer state. */
    uint8_t *plain = test_batch(2, 1000, 10, &len);
    assert_int_equal(partition_log_append(f->log, plain, len, 0, &res), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_append(f->log, plain, len, 0, &res), KAFKA_ERR_NONE);
    free(plain);
    assert_int_equal(partition_log_end_offset(f->log), 10);
    assert_int_equal(partition_log_producer_count(f->log), 2);
}

static void test_snapshot_on_roll_and_close(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 400;
    open_log(f, false);
    int64_t base, latest;
    for (int i = 0; i < 20; i++)
        assert_int_equal(produce(f, 1, 0, i * 2, 2, &base), KAFKA_ERR_NONE);
    assert_true(partition_log_segment_count(f->log) > 2);
    assert_true(count_snapshots(f->dir, &latest) >= 2);
    assert_true(latest > 0 && latest < 40);
    reopen(f, false);
    assert_int_equal(count_snapshots(f->dir, &latest), partition_log_segment_count(f->log));
    assert_int_equal(latest, 40);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 1, &e));
    assert_int_equal(e.batch_count, PRODUCER_STATE_CACHED_BATCHES);
    assert_int_equal(e.batches[e.batch_count - 1].last_seq, 39);
    /* Retry of the oldest cached batch after the restart. */
    assert_int_equal(produce(f, 1, 0, 30, 2, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 30);
    assert_int_equal(produce(f, 1, 0, 40, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 40);
}

/* Logs without producers get snapshots too, so a start after an unclean
 * stop replays from the last one instead of scanning the whole log. */
static void test_plain_log_gets_snapshots(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 400;
    open_log(f, false);
    int64_t latest;
    for (int i = 0; i < 10; i++) {
        size_t len;
        struct log_append_result res;
        uint8_t *plain = test_batch(2, 1000, 10, &len);
        assert_int_equal(partition_log_append(f->log, plain, len, 0, &res), KAFKA_ERR_NONE);
        free(plain);
    }
    int segments = partition_log_segment_count(f->log);
    assert_true(segments > 2);
    assert_int_equal(count_snapshots(f->dir, &latest), segments - 1);
    reopen(f, false);
    assert_int_equal(count_snapshots(f->dir, &latest), segments);
    assert_int_equal(latest, 20);
    assert_int_equal(partition_log_producer_count(f->log), 0);
}

static void test_rebuild_without_snapshots(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 500;
    open_log(f, false);
    int64_t base, latest;
    for (int i = 0; i < 12; i++) {
        assert_int_equal(produce(f, 100, 2, i, 1, &base), KAFKA_ERR_NONE);
        assert_int_equal(produce(f, 200, 0, i * 3, 3, &base), KAFKA_ERR_NONE);
    }
    partition_log_close(f->log);
    f->log = NULL;
    remove_snapshots(f->dir);
    assert_int_equal(count_snapshots(f->dir, &latest), 0);
    open_log(f, true);
    assert_int_equal(partition_log_producer_count(f->log), 2);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 200, &e));
    assert_int_equal(e.batches[e.batch_count - 1].last_seq, 35);
    assert_int_equal(e.batches[e.batch_count - 1].last_offset, 47);
    assert_true(partition_log_producer_lookup(f->log, 100, &e));
    assert_int_equal(e.epoch, 2);
    for (int i = 7; i < 12; i++) {
        assert_int_equal(produce(f, 100, 2, i, 1, &base), KAFKA_ERR_NONE);
        assert_int_equal(base, i * 4);
    }
    assert_int_equal(produce(f, 100, 1, 12, 1, &base), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(produce(f, 100, 2, 13, 1, &base), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(partition_log_end_offset(f->log), 48);
    /* The rebuild left a snapshot at the log end for the next start. */
    assert_true(count_snapshots(f->dir, &latest) >= 1);
    assert_int_equal(latest, 48);

    /* A stale snapshot past the log end (e.g. the log lost its tail) is ignored. */
    partition_log_close(f->log);
    f->log = NULL;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s/00000000000000000048.snapshot' '%s/00000000000000000999.snapshot'", f->dir,
             f->dir);
    assert_int_equal(system(cmd), 0);
    open_log(f, true);
    assert_int_equal(count_snapshots(f->dir, &latest), 1);
    assert_int_equal(latest, 48);
}

static void test_corrupt_snapshot_falls_back(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 400;
    open_log(f, false);
    int64_t base, latest;
    for (int i = 0; i < 20; i++)
        assert_int_equal(produce(f, 21, 0, i, 1, &base), KAFKA_ERR_NONE);
    partition_log_close(f->log);
    f->log = NULL;
    int before = count_snapshots(f->dir, &latest);
    assert_true(before >= 2);
    assert_int_equal(latest, 20);
    /* Damage the newest snapshot: the next older one plus a replay must do. */
    char path[600];
    snprintf(path, sizeof path, "%s/%020d.snapshot", f->dir, 20);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 12, SEEK_SET);
    fputc(0x7f, fp);
    fclose(fp);
    open_log(f, false);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(f->log, 21, &e));
    assert_int_equal(e.batches[e.batch_count - 1].last_seq, 19);
    assert_int_equal(e.batch_count, PRODUCER_STATE_CACHED_BATCHES);
    assert_int_equal(produce(f, 21, 0, 15, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 15);
    assert_int_equal(partition_log_end_offset(f->log), 20);
}

static void test_truncate_rebuilds_state(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 300;
    open_log(f, false);
    int64_t base, latest;
    for (int i = 0; i < 10; i++)
        assert_int_equal(produce(f, 3, 0, i, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_truncate_to(f->log, 6), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(f->log), 6);
    count_snapshots(f->dir, &latest);
    assert_true(latest <= 6);
    /* Sequence 6 was cut: it is new again, not a duplicate of offset 6. */
    assert_int_equal(produce(f, 3, 0, 7, 1, &base), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(produce(f, 3, 0, 6, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 6);
    assert_int_equal(produce(f, 3, 0, 5, 1, &base), KAFKA_ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(partition_log_end_offset(f->log), 7);
}

static void test_retention_and_expiry(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.segment_bytes = 300;
    f->cfg.retention_bytes = 600;
    f->cfg.producer_id_expiration_ms = 60000;
    open_log(f, false);
    int64_t base, latest;
    for (int i = 0; i < 30; i++)
        assert_int_equal(produce(f, 4, 0, i, 1, &base), KAFKA_ERR_NONE);
    int before = count_snapshots(f->dir, &latest);
    assert_true(partition_log_apply_retention(f->log, 1000 + 1000) > 0);
    int after = count_snapshots(f->dir, &latest);
    assert_true(after < before);
    /* Each remaining snapshot belongs to a remaining segment. */
    assert_true(after <= partition_log_segment_count(f->log));
    assert_int_equal(partition_log_producer_count(f->log), 1);
    /* Batch timestamps are 1000; a minute later the producer is idle. */
    assert_int_equal(partition_log_expire_producers(f->log, 1029 + 59000), 0);
    assert_int_equal(partition_log_expire_producers(f->log, 1029 + 60000), 1);
    assert_int_equal(produce(f, 4, 0, 30, 1, &base), KAFKA_ERR_UNKNOWN_PRODUCER_ID);
    assert_int_equal(produce(f, 4, 0, 0, 1, &base), KAFKA_ERR_NONE);
}

/* The log manager's maintenance pass expires idle producers. */
static void test_manager_expires_producers(void **state)
{
    struct log_fixture *f = *state;
    f->cfg.producer_id_expiration_ms = 1000;
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    const char *dirs[] = {f->dir};
    struct log_manager *m = NULL;
    char err[256] = "";
    assert_int_equal(log_manager_open(dirs, 1, &f->cfg, &mcfg, &m, err, sizeof err), 0);
    assert_int_equal(log_manager_create(m, "t", 0, NULL, NULL, &f->log, err, sizeof err), KAFKA_ERR_NONE);
    int64_t base;
    assert_int_equal(produce(f, 31, 0, 0, 1, &base), KAFKA_ERR_NONE);
    log_manager_maintain(m, 1000 + 999, true);
    assert_int_equal(partition_log_producer_count(f->log), 1);
    log_manager_maintain(m, 1000 + 1000, true);
    assert_int_equal(partition_log_producer_count(f->log), 0);
    partition_log_close(f->log);
    f->log = NULL;
    log_manager_close(m, true);
}

#define RACE_THREADS 4
#define RACE_BATCHES 400

struct race_ctx {
    struct log_fixture *f;
    int accepted, duplicates, behind;
    int unexpected; /* any other outcome */
};

/* Every thread sends the same producer's batches in order, as a client
 * retrying on several connections would: each batch must land once. */
static void *race_main(void *arg)
{
    struct race_ctx *c = arg;
    for (int seq = 0; seq < RACE_BATCHES; seq++) {
        size_t len;
        uint8_t *batch = idem_batch(77, 0, seq, 1, 0, &len);
        struct log_append_result res;
        int16_t code = partition_log_append(c->f->log, batch, len, 0, &res);
        free(batch);
        if (code == KAFKA_ERR_NONE && res.duplicate && res.base_offset == seq)
            c->duplicates++;
        else if (code == KAFKA_ERR_NONE && !res.duplicate && res.base_offset == seq)
            c->accepted++;
        else if (code == KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER)
            c->behind++; /* fell more than the cached batches behind another thread */
        else
            c->unexpected++;
    }
    return NULL;
}

static void test_concurrent_retries_land_once(void **state)
{
    struct log_fixture *f = *state;
    open_log(f, false);
    pthread_t threads[RACE_THREADS];
    struct race_ctx ctx[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        ctx[i] = (struct race_ctx){.f = f};
        assert_int_equal(pthread_create(&threads[i], NULL, race_main, &ctx[i]), 0);
    }
    int accepted = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(ctx[i].unexpected, 0);
        accepted += ctx[i].accepted;
    }
    assert_int_equal(accepted, RACE_BATCHES);
    assert_int_equal(partition_log_end_offset(f->log), RACE_BATCHES);
    /* Read back: offset i holds sequence i. */
    struct log_read_result r;
    assert_int_equal(partition_log_read(f->log, 0, 1 << 24, INT64_MAX, &r), KAFKA_ERR_NONE);
    uint8_t *data = test_read_region(&r);
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int n = 0;
    record_batch_iter_init(&it, data, (size_t)r.len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        assert_int_equal(h.base_offset, n);
        assert_int_equal(h.base_sequence, n);
        n++;
    }
    assert_int_equal(n, RACE_BATCHES);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        LOG_FIXTURE_TEST(test_duplicates_and_errors),       LOG_FIXTURE_TEST(test_snapshot_on_roll_and_close),
        LOG_FIXTURE_TEST(test_plain_log_gets_snapshots),    LOG_FIXTURE_TEST(test_rebuild_without_snapshots),
        LOG_FIXTURE_TEST(test_corrupt_snapshot_falls_back), LOG_FIXTURE_TEST(test_truncate_rebuilds_state),
        LOG_FIXTURE_TEST(test_retention_and_expiry),        LOG_FIXTURE_TEST(test_concurrent_retries_land_once),
        LOG_FIXTURE_TEST(test_manager_expires_producers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
