/* Concurrent appends and reads on one partition, and the storage-error path
 * (a write that fails takes the partition offline without a partial batch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"

#define WRITERS 4
#define APPENDS_PER_WRITER 300
#define RECORDS_PER_BATCH 3

struct shared {
    struct partition_log *log;
    atomic_bool done;
    atomic_int errors;
    int64_t base_offsets[WRITERS][APPENDS_PER_WRITER];
};

struct writer_arg {
    struct shared *s;
    int id;
};

static void *writer(void *p)
{
    struct writer_arg *a = p;
    for (int i = 0; i < APPENDS_PER_WRITER; i++) {
        size_t len;
        uint8_t *b = test_batch(RECORDS_PER_BATCH, 1000 + i, 64, &len);
        struct log_append_result res;
        if (partition_log_append(a->s->log, b, len, 0, &res) != KAFKA_ERR_NONE)
            atomic_fetch_add(&a->s->errors, 1);
        a->s->base_offsets[a->id][i] = res.base_offset;
        free(b);
    }
    return NULL;
}

/* Reads whatever is visible and checks every returned batch is whole. */
static void *reader(void *p)
{
    struct shared *s = p;
    while (!atomic_load(&s->done)) {
        int64_t end = partition_log_end_offset(s->log);
        int64_t off = end > 0 ? end / 2 : 0;
        struct log_read_result r;
        if (partition_log_read(s->log, off, 4096, INT64_MAX, &r) != KAFKA_ERR_NONE) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        uint8_t *buf = test_read_region(&r);
        if (!buf)
            continue;
        struct record_batch_iter it;
        const uint8_t *batch;
        size_t blen;
        record_batch_iter_init(&it, buf, (size_t)r.len);
        while (record_batch_iter_next(&it, &batch, &blen) == 1)
            if (!record_batch_crc_ok(batch, blen))
                atomic_fetch_add(&s->errors, 1);
        if (it.pos != (size_t)r.len)
            atomic_fetch_add(&s->errors, 1);
        free(buf);
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_concurrent_append_read(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 64 * 1024;
    cfg.index_interval_bytes = 512;
    struct shared *s = calloc(1, sizeof *s);
    char err[256];
    assert_int_equal(partition_log_open(dir, &cfg, false, &s->log, err, sizeof err), 0);
    pthread_t writers[WRITERS], readers[2];
    struct writer_arg args[WRITERS];
    for (int i = 0; i < 2; i++)
        pthread_create(&readers[i], NULL, reader, s);
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (struct writer_arg){s, i};
        pthread_create(&writers[i], NULL, writer, &args[i]);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(writers[i], NULL);
    atomic_store(&s->done, true);
    for (int i = 0; i < 2; i++)
        pthread_join(readers[i], NULL);
    assert_int_equal(atomic_load(&s->errors), 0);
    int64_t total = (int64_t)WRITERS * APPENDS_PER_WRITER * RECORDS_PER_BATCH;
    assert_int_equal(partition_log_end_offset(s->log), total);
    /* Every append got its own offset range, with no gaps. */
    int64_t *all = &s->base_offsets[0][0];
    qsort(all, WRITERS * APPENDS_PER_WRITER, sizeof *all, cmp_i64);
    for (int i = 0; i < WRITERS * APPENDS_PER_WRITER; i++)
        assert_int_equal(all[i], (int64_t)i * RECORDS_PER_BATCH);
    assert_true(partition_log_segment_count(s->log) > 1);
    partition_log_close(s->log);
    free(s);
    test_remove_tree(dir);
    free(dir);
}

static void test_write_failure_goes_offline(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    struct log_config cfg;
    log_config_defaults(&cfg);
    struct partition_log *log;
    char err[256];
    assert_int_equal(partition_log_open(dir, &cfg, false, &log, err, sizeof err), 0);
    size_t len;
    uint8_t *b = test_batch(5, 0, 1000, &len);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, b, len, 0, &res), 0);

    /* A file-size limit makes the next write fail part-way (EFBIG), like a
     * full disk would. */
    struct rlimit saved, limited;
    getrlimit(RLIMIT_FSIZE, &saved);
    limited = saved;
    limited.rlim_cur = (rlim_t)(len + len / 2);
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limited), 0);
    int16_t code = partition_log_append(log, b, len, 0, &res);
    setrlimit(RLIMIT_FSIZE, &saved);
    assert_int_equal(code, KAFKA_ERR_KAFKA_STORAGE_ERROR);
    assert_true(partition_log_is_offline(log));
    assert_int_equal(partition_log_end_offset(log), 5);
    char path[512];
    snprintf(path, sizeof path, "%s/%020d.log", dir, 0);
    assert_int_equal(test_file_size(path), (int64_t)len);
    /* Offline: later appends and reads are refused, nothing crashes. */
    assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_KAFKA_STORAGE_ERROR);
    struct log_read_result r;
    assert_int_equal(partition_log_read(log, 0, 100, INT64_MAX, &r), KAFKA_ERR_KAFKA_STORAGE_ERROR);
    partition_log_close(log);
    free(b);
    /* The data written before the failure is intact after reopening. */
    assert_int_equal(partition_log_open(dir, &cfg, true, &log, err, sizeof err), 0);
    assert_int_equal(partition_log_end_offset(log), 5);
    partition_log_close(log);
    test_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_append_read),
        cmocka_unit_test(test_write_failure_goes_offline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
