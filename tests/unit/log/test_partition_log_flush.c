/* partition_log_flush_to: the recovery point covers the caller's records
 * on return, concurrent callers share syncs, segments rolled meanwhile are
 * synced too, and records cut by a truncation are reported, not claimed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"

#define WRITERS 4
#define APPENDS_PER_WRITER 60

static struct partition_log *open_log(char **dir, int32_t segment_bytes)
{
    *dir = test_make_dir();
    assert_non_null(*dir);
    struct log_config cfg;
    log_config_defaults(&cfg);
    if (segment_bytes > 0)
        cfg.segment_bytes = segment_bytes;
    struct partition_log *log = NULL;
    char err[256];
    assert_int_equal(partition_log_open(*dir, &cfg, false, &log, err, sizeof err), 0);
    return log;
}

static int64_t append_one(struct partition_log *log, int records)
{
    size_t len;
    uint8_t *b = test_batch(records, 1000, 100, &len);
    assert_non_null(b);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
    free(b);
    return res.last_offset + 1;
}

static void test_flush_to_moves_recovery_point(void **state)
{
    (void)state;
    char *dir;
    struct partition_log *log = open_log(&dir, 0);
    int64_t end = append_one(log, 3);
    assert_int_equal(end, 3);
    /* Appends alone do not sync (flush.messages is unbounded by default). */
    assert_true(partition_log_recovery_point(log) < end);
    assert_int_equal(partition_log_flush_to(log, end), KAFKA_ERR_NONE);
    assert_true(partition_log_recovery_point(log) >= end);

    int64_t second = append_one(log, 2);
    /* Already covered: returns without syncing the newer batch. */
    assert_int_equal(partition_log_flush_to(log, end), KAFKA_ERR_NONE);
    assert_true(partition_log_recovery_point(log) < second);
    assert_int_equal(partition_log_flush_to(log, second), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), second);
    partition_log_close(log);
    test_remove_tree(dir);
    free(dir);
}

static void test_flush_to_covers_rolled_segments(void **state)
{
    (void)state;
    char *dir;
    /* Small segments: the appends below roll several times. */
    struct partition_log *log = open_log(&dir, 2048);
    int64_t end = 0;
    for (int i = 0; i < 40; i++)
        end = append_one(log, 2);
    assert_true(partition_log_recovery_point(log) < end);
    assert_int_equal(partition_log_flush_to(log, end), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), end);
    partition_log_close(log);
    test_remove_tree(dir);
    free(dir);
}

static void test_flush_to_after_truncation(void **state)
{
    (void)state;
    char *dir;
    struct partition_log *log = open_log(&dir, 0);
    append_one(log, 3);
    int64_t end = append_one(log, 3);
    assert_int_equal(partition_log_truncate_to(log, 3), KAFKA_ERR_NONE);
    /* The records below end are gone: nothing may claim them durable. */
    assert_int_equal(partition_log_flush_to(log, end), KAFKA_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_true(partition_log_recovery_point(log) < end);
    assert_int_equal(partition_log_flush_to(log, 3), KAFKA_ERR_NONE);
    assert_true(partition_log_recovery_point(log) >= 3);
    partition_log_close(log);
    test_remove_tree(dir);
    free(dir);
}

/* Shared by the writer threads. */
struct flush_shared {
    struct partition_log *log;
    atomic_int errors;
    atomic_int uncovered; /* returns whose records were not yet synced */
};

static void *flush_writer(void *p)
{
    struct flush_shared *s = p;
    for (int i = 0; i < APPENDS_PER_WRITER; i++) {
        size_t len;
        uint8_t *b = test_batch(2, 1000 + i, 64, &len);
        struct log_append_result res;
        if (!b || partition_log_append(s->log, b, len, 0, &res) != KAFKA_ERR_NONE) {
            atomic_fetch_add(&s->errors, 1);
            free(b);
            continue;
        }
        free(b);
        if (partition_log_flush_to(s->log, res.last_offset + 1) != KAFKA_ERR_NONE)
            atomic_fetch_add(&s->errors, 1);
        else if (partition_log_recovery_point(s->log) < res.last_offset + 1)
            atomic_fetch_add(&s->uncovered, 1);
    }
    return NULL;
}

static void test_concurrent_flush_to(void **state)
{
    (void)state;
    char *dir;
    struct flush_shared s = {0};
    s.log = open_log(&dir, 4096);
    pthread_t threads[WRITERS];
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, flush_writer, &s), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&s.errors), 0);
    assert_int_equal(atomic_load(&s.uncovered), 0);
    assert_int_equal(partition_log_end_offset(s.log), WRITERS * APPENDS_PER_WRITER * 2);
    assert_int_equal(partition_log_recovery_point(s.log), partition_log_end_offset(s.log));
    partition_log_close(s.log);
    test_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flush_to_moves_recovery_point),
        cmocka_unit_test(test_flush_to_covers_rolled_segments),
        cmocka_unit_test(test_flush_to_after_truncation),
        cmocka_unit_test(test_concurrent_flush_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
