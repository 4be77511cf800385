/* Log cleaner: the dedupe map, batch rewriting and compaction passes over
 * a partition log (latest value per key, offsets kept, the dirty-ratio and
 * lag gates, transactions, tombstones, producer batches, a dedupe buffer
 * too small for one pass). Crash leftovers and the checkpoint are in
 * test_log_cleaner_recovery.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "log/log_offset_map.h"
#include "log/producer_state.h"
#include "cleaner_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

static void test_offset_map(void **state)
{
    (void)state;
    struct log_offset_map m;
    assert_int_equal(log_offset_map_init(&m, 1 << 20, 0.9), 0);
    assert_int_equal(log_offset_map_get(&m, (const uint8_t *)"a", 1), -1);
    assert_int_equal(log_offset_map_put(&m, (const uint8_t *)"a", 1, 5), 0);
    assert_int_equal(log_offset_map_put(&m, (const uint8_t *)"a", 1, 3), 0);
    assert_int_equal(log_offset_map_get(&m, (const uint8_t *)"a", 1), 5);
    assert_int_equal(log_offset_map_put(&m, (const uint8_t *)"", 0, 9), 0);
    assert_int_equal(log_offset_map_get(&m, (const uint8_t *)"", 0), 9);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        assert_int_equal(log_offset_map_put(&m, (const uint8_t *)key, (size_t)n, i), 0);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        assert_int_equal(log_offset_map_get(&m, (const uint8_t *)key, (size_t)n), i);
    }
    log_offset_map_free(&m);

    /* 64 slots at most: it reports full instead of growing past the cap. */
    assert_int_equal(log_offset_map_init(&m, 64 * LOG_OFFSET_MAP_SLOT_BYTES, 0.5), 0);
    size_t cap = log_offset_map_capacity(&m);
    assert_int_equal(cap, 32);
    int full_at = -1;
    for (int i = 0; i < 100 && full_at < 0; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        int rc = log_offset_map_put(&m, (const uint8_t *)key, (size_t)n, i);
        if (rc == 1)
            full_at = i;
        else
            assert_int_equal(rc, 0);
    }
    assert_int_equal(full_at, (int)cap);
    /* A known key still updates when full. */
    assert_int_equal(log_offset_map_put(&m, (const uint8_t *)"key-0", 5, 1000), 0);
    assert_int_equal(log_offset_map_get(&m, (const uint8_t *)"key-0", 5), 1000);
    log_offset_map_free(&m);
}

static bool keep_odd(void *arg, const struct record_batch_record *rec)
{
    (void)arg;
    return rec->offset_delta % 2 == 1;
}

static bool keep_all(void *arg, const struct record_batch_record *rec)
{
    (void)arg;
    (void)rec;
    return true;
}

static bool keep_none(void *arg, const struct record_batch_record *rec)
{
    (void)arg;
    (void)rec;
    return false;
}

static void test_filter_batch(void **state)
{
    (void)state;
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    b.producer_id = 77;
    b.producer_epoch = 3;
    b.base_sequence = 40;
    for (int i = 0; i < 5; i++) {
        char key[8], value[8];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(value, sizeof value, "v%d", i);
        record_batch_builder_add(&b, 1000 + i, key, 2, value, 2, NULL, 0);
    }
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    record_batch_set_base_offset(batch, 500);
    struct record_batch_header orig;
    record_batch_parse_header(batch, len, &orig);

    uint8_t *out = malloc(len);
    size_t out_len = 0;
    assert_int_equal(log_clean_filter_batch(batch, len, keep_all, NULL, false, out, &out_len), LOG_CLEAN_BATCH_ALL);
    assert_int_equal(log_clean_filter_batch(batch, len, keep_none, NULL, false, out, &out_len), LOG_CLEAN_BATCH_NONE);

    assert_int_equal(log_clean_filter_batch(batch, len, keep_odd, NULL, false, out, &out_len), LOG_CLEAN_BATCH_SOME);
    assert_true(out_len < len);
    struct record_batch_header h;
    record_batch_parse_header(out, out_len, &h);
    assert_int_equal(record_batch_total_size(&h), out_len);
    assert_true(record_batch_crc_ok(out, out_len));
    assert_int_equal(h.base_offset, 500);
    assert_int_equal(h.last_offset_delta, 4);
    assert_int_equal(h.record_count, 2);
    assert_int_equal(h.producer_id, 77);
    assert_int_equal(h.producer_epoch, 3);
    assert_int_equal(h.base_sequence, 40);
    assert_int_equal(h.attributes, orig.attributes);
    assert_int_equal(h.base_timestamp, orig.base_timestamp);
    assert_int_equal(h.max_timestamp, orig.max_timestamp);
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, out, out_len), 0);
    int64_t want[] = {501, 503};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(record_batch_records_next(&it, &rec), 1);
        assert_int_equal(rec.offset, want[i]);
        assert_int_equal(rec.timestamp, 1000 + (want[i] - 500));
        assert_memory_equal(rec.value, i == 0 ? "v1" : "v3", 2);
    }
    assert_int_equal(record_batch_records_next(&it, &rec), 0);

    /* keep_empty: the batch survives with its offsets and no records. */
    assert_int_equal(log_clean_filter_batch(batch, len, keep_none, NULL, true, out, &out_len), LOG_CLEAN_BATCH_SOME);
    assert_int_equal(out_len, RECORD_BATCH_HEADER_SIZE);
    record_batch_parse_header(out, out_len, &h);
    assert_true(record_batch_crc_ok(out, out_len));
    assert_int_equal(h.record_count, 0);
    assert_int_equal(h.last_offset_delta, 4);

    /* A corrupt record length is refused, not copied. */
    batch[RECORD_BATCH_HEADER_SIZE] = 0x7f;
    assert_int_equal(log_clean_filter_batch(batch, len, keep_odd, NULL, false, out, &out_len), -1);
    free(out);
    free(batch);
}

static void test_compacts_to_latest_per_key(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    int64_t end = write_overwrites(log);
    int64_t size_before = partition_log_size_bytes(log);
    int segments_before = partition_log_segment_count(log);
    assert_true(segments_before > 3);
    int64_t active = active_base(log);

    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    assert_true(res.dirty_ratio > 0.99);
    assert_int_equal(res.first_dirty_offset, active);
    assert_true(res.segments_rewritten > 0);
    assert_true(res.bytes_after < res.bytes_before);
    assert_true(partition_log_size_bytes(log) < size_before / 2);
    /* Emptied segments are gone, not kept as empty files. */
    assert_true(partition_log_segment_count(log) < segments_before / 2);
    assert_int_equal(partition_log_end_offset(log), end);
    assert_int_equal(partition_log_start_offset(log), 0);

    struct rec *recs = calloc(WRITES, sizeof *recs);
    size_t n = read_all(log, recs, WRITES);
    check_compacted(recs, n, active);
    assert_true(n < (size_t)WRITES / 2);

    /* Nothing dirty left: a second pass is not due. */
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms(), &default_opts, &res), 0);
    assert_false(res.cleaned);

    /* The cleaned files are what a reopen finds, indexes included. */
    partition_log_close(log);
    log = open_log(&cfg);
    struct rec *again = calloc(WRITES, sizeof *again);
    assert_int_equal(read_all(log, again, WRITES), n);
    assert_memory_equal(recs, again, n * sizeof *recs);
    /* A lookup through the rebuilt index lands on the surviving record. */
    struct log_read_result r;
    assert_int_equal(partition_log_read(log, recs[n / 2].offset, 1, INT64_MAX, &r), KAFKA_ERR_NONE);
    assert_true(r.len > 0);
    uint8_t *buf = test_read_region(&r);
    struct record_batch_header h;
    record_batch_parse_header(buf, (size_t)r.len, &h);
    assert_true(record_batch_last_offset(&h) >= recs[n / 2].offset);
    assert_true(h.base_offset <= recs[n / 2].offset);
    free(buf);
    free(again);
    free(recs);
    partition_log_close(log);
}

static void test_null_key_refused(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    struct record_batch_builder b;
    record_batch_builder_init(&b, clock_wall_ms());
    record_batch_builder_add(&b, clock_wall_ms(), "k", 1, "v", 1, NULL, 0);
    record_batch_builder_add(&b, clock_wall_ms(), NULL, -1, "v", 1, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_INVALID_RECORD);
    assert_string_equal(res.error_message, "Compacted topic cannot accept message without key");
    assert_int_equal(partition_log_end_offset(log), 0);
    /* The same batch is fine for a delete-policy topic. */
    cfg.cleanup_compact = false;
    partition_log_set_config(log, &cfg);
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(log), 2);
    free(batch);
    partition_log_close(log);
}

static void test_transactions(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    char key[8];
    put(log, "k1", "good");
    int64_t txn_first = put_txn(log, 9, 0, "k1", "bad");
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof key, "f%d", i % 3);
        put(log, key, "filler");
    }
    /* The open transaction bounds the pass: nothing from it on is touched. */
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.first_dirty_offset <= txn_first);
    struct rec *recs = calloc(200, sizeof *recs);
    size_t n = read_all(log, recs, 200);
    assert_int_equal(count_key(recs, n, "f0", NULL) + count_key(recs, n, "f1", NULL) + count_key(recs, n, "f2", NULL),
                     60);

    int64_t marker = -1;
    assert_int_equal(partition_log_append_txn_marker(log, 9, 0, 0, false, 0, &marker), KAFKA_ERR_NONE);
    assert_true(marker > txn_first);
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof key, "f%d", i % 3);
        put(log, key, "filler");
    }
    int64_t active = active_base(log);
    assert_true(active > marker);
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    assert_int_equal(res.first_dirty_offset, active);
    g_control_batches = 0;
    n = read_all(log, recs, 200);
    /* The aborted write never hid the committed one; the marker stays. */
    assert_int_equal(count_key(recs, n, "k1", "good"), 1);
    assert_int_equal(g_control_batches, 1);
    size_t below_active = 0;
    for (size_t i = 0; i < n; i++)
        below_active += recs[i].key[0] == 'f' && recs[i].offset < active;
    assert_true(below_active <= 3);
    /* read_committed still learns about the abort. */
    assert_int_equal(partition_log_aborted_txns(log, 0, INT64_MAX, NULL, NULL), 1);
    free(recs);
    partition_log_close(log);
}

static void test_dirty_ratio_gate(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    cfg.min_cleanable_dirty_ratio = 0.99;
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    int64_t first_dirty = res.first_dirty_offset;
    /* New dirty data beside the clean part: below 0.99. */
    for (int i = 0; i < 30; i++)
        put(log, "k0", "again");
    assert_int_equal(partition_log_clean(log, first_dirty, clock_wall_ms(), &default_opts, &res), 0);
    assert_false(res.cleaned);
    assert_true(res.dirty_ratio > 0.0 && res.dirty_ratio < 0.99);
    /* min.compaction.lag.ms keeps young records out of reach. */
    cfg.min_cleanable_dirty_ratio = 0.0;
    cfg.min_compaction_lag_ms = 3600000;
    partition_log_set_config(log, &cfg);
    assert_int_equal(partition_log_clean(log, first_dirty, clock_wall_ms(), &default_opts, &res), 0);
    assert_false(res.cleaned);
    cfg.min_compaction_lag_ms = 0;
    partition_log_set_config(log, &cfg);
    assert_int_equal(partition_log_clean(log, first_dirty, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    assert_true(res.first_dirty_offset > first_dirty);
    /* Not a compacted topic: never cleaned. */
    cfg.cleanup_compact = false;
    cfg.cleanup_delete = true;
    partition_log_set_config(log, &cfg);
    for (int i = 0; i < 30; i++)
        put(log, "k1", "more");
    struct log_clean_options force = default_opts;
    force.force = true;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &force, &res), 0);
    assert_false(res.cleaned);
    partition_log_close(log);
}

static void test_tombstones_expire(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    cfg.delete_retention_ms = 60000;
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    put(log, "k0", NULL);
    for (int i = 0; i < 40; i++)
        put(log, "k1", "filler"); /* rolls past the tombstone */
    struct log_clean_result res;
    int64_t now = clock_wall_ms();
    assert_int_equal(partition_log_clean(log, -1, now, &default_opts, &res), 0);
    assert_true(res.cleaned);
    struct rec *recs = calloc(WRITES + 64, sizeof *recs);
    size_t n = read_all(log, recs, WRITES + 64);
    bool tombstone = false, k0_value = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(recs[i].key, "k0") == 0) {
            tombstone |= recs[i].tombstone;
            k0_value |= !recs[i].tombstone;
        }
    }
    assert_true(tombstone); /* kept through the first clean */
    assert_false(k0_value); /* the older values of k0 are gone */

    /* Within delete.retention.ms of that clean: still there. */
    struct log_clean_options force = default_opts;
    force.force = true;
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, now + 1000, &force, &res), 0);
    n = read_all(log, recs, WRITES + 64);
    tombstone = false;
    for (size_t i = 0; i < n; i++)
        tombstone |= strcmp(recs[i].key, "k0") == 0;
    assert_true(tombstone);
    /* Past it: the next clean drops it. */
    assert_int_equal(partition_log_clean(log, res.first_dirty_offset, now + 120000, &force, &res), 0);
    assert_true(res.cleaned);
    n = read_all(log, recs, WRITES + 64);
    for (size_t i = 0; i < n; i++)
        assert_string_not_equal(recs[i].key, "k0");
    free(recs);
    partition_log_close(log);
}

static void test_keeps_last_producer_batch(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    /* Producer 42 writes key "p" once; later plain writes shadow it. */
    struct record_batch_builder b;
    record_batch_builder_init(&b, clock_wall_ms());
    b.producer_id = 42;
    b.producer_epoch = 0;
    b.base_sequence = 0;
    record_batch_builder_add(&b, clock_wall_ms(), "p", 1, "first", 5, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    free(batch);
    int64_t producer_offset = res.base_offset;
    for (int i = 0; i < 60; i++)
        put(log, "p", "later");
    struct log_clean_result cres;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &cres), 0);
    assert_true(cres.cleaned);

    /* The batch is still there, empty, CRC valid. */
    struct record_batch_header h;
    uint8_t *buf = read_first_batch(log, &h);
    assert_int_equal(h.base_offset, producer_offset);
    assert_int_equal(h.producer_id, 42);
    assert_int_equal(h.record_count, 0);
    assert_true(record_batch_crc_ok(buf, record_batch_total_size(&h)));
    free(buf);

    /* Producer state rebuilt from the log alone still knows producer 42. */
    log = reopen_without_snapshots(log, &cfg);
    struct producer_entry e;
    assert_true(partition_log_producer_lookup(log, 42, &e));
    partition_log_close(log);
}

static void test_dedupe_buffer_limit(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    /* 300 distinct keys, each written twice far apart. */
    char key[16];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 300; i++) {
            snprintf(key, sizeof key, "x%d", i);
            put(log, key, round == 0 ? "old" : "new");
        }
    int64_t active = active_base(log);
    struct log_clean_options opt = default_opts;
    opt.dedupe_buffer_bytes = 256 * LOG_OFFSET_MAP_SLOT_BYTES; /* ~230 keys */
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    assert_true(res.cleaned);
    assert_true(res.first_dirty_offset > 0 && res.first_dirty_offset < active);
    /* The rest comes with the next passes. */
    int passes = 0;
    while (res.first_dirty_offset < active && passes++ < 10)
        assert_int_equal(partition_log_clean(log, res.first_dirty_offset, clock_wall_ms(), &opt, &res), 0);
    assert_int_equal(res.first_dirty_offset, active);
    struct rec *recs = calloc(600, sizeof *recs);
    size_t n = read_all(log, recs, 600);
    int below_active[300] = {0};
    const char *last[300] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = atoi(recs[i].key + 1);
        assert_true(k >= 0 && k < 300);
        below_active[k] += recs[i].offset < active;
        last[k] = recs[i].value;
    }
    for (int k = 0; k < 300; k++) {
        assert_true(below_active[k] <= 1);
        assert_non_null(last[k]);
        assert_string_equal(last[k], "new");
    }
    assert_true(n < 400);
    free(recs);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_map),
        cmocka_unit_test(test_filter_batch),
        cmocka_unit_test_setup_teardown(test_compacts_to_latest_per_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirty_ratio_gate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_key_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tombstones_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keeps_last_producer_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dedupe_buffer_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
