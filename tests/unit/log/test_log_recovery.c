/* Recovery after an unclean stop (garbage tail, torn batch, corrupt batch in
 * an older segment, lost index files) and retention by bytes and time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/resource.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = test_make_dir();
    return g_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_dir);
    free(g_dir);
    return 0;
}

static struct partition_log *open_or_fail(const struct log_config *cfg, bool recover)
{
    struct partition_log *log = NULL;
    char err[256] = "";
    if (partition_log_open(g_dir, cfg, recover, &log, err, sizeof err) != 0)
        fail_msg("open: %s", err);
    return log;
}

static void append_n(struct partition_log *log, int batches, int records, int64_t ts, size_t value_size)
{
    for (int i = 0; i < batches; i++) {
        size_t len;
        uint8_t *b = test_batch(records, ts, value_size, &len);
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
        free(b);
    }
}

static void segment_path(char *out, size_t n, int64_t base, const char *ext)
{
    snprintf(out, n, "%s/%020lld%s", g_dir, (long long)base, ext);
}

/* Every offset in [0, end) can be read back as a valid batch. */
static void check_all_readable(struct partition_log *log, int64_t end)
{
    for (int64_t off = 0; off < end; off++) {
        struct log_read_result r;
        assert_int_equal(partition_log_read(log, off, 1, INT64_MAX, &r), 0);
        uint8_t *buf = test_read_region(&r);
        assert_non_null(buf);
        struct record_batch_header h;
        char err[128];
        assert_int_equal(record_batch_validate(buf, (size_t)r.len, -1, &h, err, sizeof err), 0);
        assert_true(h.base_offset <= off && record_batch_last_offset(&h) >= off);
        free(buf);
    }
}

static void test_garbage_tail(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.index_interval_bytes = 300;
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 20, 3, 1000, 120);
    partition_log_close(log);

    char path[512];
    segment_path(path, sizeof path, 0, ".log");
    int64_t good_size = test_file_size(path);
    FILE *fp = fopen(path, "ab");
    for (int i = 0; i < 1000; i++)
        fputc((i * 7) & 0xff, fp);
    fclose(fp);
    /* Lose the index too: recovery must rebuild it. */
    segment_path(path, sizeof path, 0, ".index");
    int64_t index_size = test_file_size(path);
    assert_true(index_size > 0);
    assert_int_equal(truncate(path, 0), 0);

    log = open_or_fail(&cfg, true);
    assert_int_equal(partition_log_end_offset(log), 60);
    segment_path(path, sizeof path, 0, ".log");
    assert_int_equal(test_file_size(path), good_size);
    segment_path(path, sizeof path, 0, ".index");
    assert_int_equal(test_file_size(path), index_size);
    check_all_readable(log, 60);
    append_n(log, 1, 3, 1000, 10);
    assert_int_equal(partition_log_end_offset(log), 63);
    partition_log_close(log);
}

static void test_torn_last_batch(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 10, 4, 1000, 200);
    partition_log_close(log);
    char path[512];
    segment_path(path, sizeof path, 0, ".log");
    int64_t size = test_file_size(path);
    size_t one;
    free(test_batch(4, 1000, 200, &one));
    /* Cut the last batch in half. */
    assert_int_equal(truncate(path, size - (int64_t)one / 2), 0);
    log = open_or_fail(&cfg, true);
    assert_int_equal(partition_log_end_offset(log), 36);
    assert_int_equal(test_file_size(path), size - (int64_t)one);
    check_all_readable(log, 36);
    partition_log_close(log);

    /* Without the recover flag the tail of the last segment is still checked. */
    assert_int_equal(truncate(path, size - (int64_t)one - 10), 0);
    log = open_or_fail(&cfg, false);
    assert_int_equal(partition_log_end_offset(log), 32);
    check_all_readable(log, 32);
    partition_log_close(log);
}

static void test_corrupt_middle_segment(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 3000;
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 30, 2, 1000, 200);
    int segments = partition_log_segment_count(log);
    assert_true(segments >= 4);
    partition_log_close(log);
    /* Flip a byte inside the second batch of segment 0. */
    size_t one;
    free(test_batch(2, 1000, 200, &one));
    char path[512];
    segment_path(path, sizeof path, 0, ".log");
    FILE *fp = fopen(path, "r+b");
    fseek(fp, (long)(one + one / 2), SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, (long)(one + one / 2), SEEK_SET);
    fputc(c ^ 0x55, fp);
    fclose(fp);
    log = open_or_fail(&cfg, true);
    /* Only the first batch survives; later segments are gone. */
    assert_int_equal(partition_log_end_offset(log), 2);
    assert_int_equal(partition_log_segment_count(log), 1);
    check_all_readable(log, 2);
    partition_log_close(log);
}

static void test_retention_by_bytes(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 2048;
    cfg.retention_ms = -1;
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 40, 2, 1000, 150);
    int64_t size = partition_log_size_bytes(log);
    int segments = partition_log_segment_count(log);
    /* Nothing to do with the default (unlimited) bytes. */
    assert_int_equal(partition_log_apply_retention(log, 2000), 0);
    partition_log_close(log);

    cfg.retention_bytes = 5000;
    log = open_or_fail(&cfg, false);
    int deleted = partition_log_apply_retention(log, 2000);
    assert_true(deleted > 0);
    assert_int_equal(partition_log_segment_count(log), segments - deleted);
    int64_t after = partition_log_size_bytes(log);
    assert_true(after < size);
    assert_true(after >= 5000 || partition_log_segment_count(log) == 1);
    /* Deleting one more would go below the limit: retention stops there. */
    assert_int_equal(partition_log_apply_retention(log, 2000), 0);
    int64_t start = partition_log_start_offset(log);
    assert_true(start > 0);
    char path[512];
    segment_path(path, sizeof path, 0, ".log");
    assert_int_equal(test_file_size(path), -1);
    struct log_read_result r;
    assert_int_equal(partition_log_read(log, 0, 100, INT64_MAX, &r), KAFKA_ERR_OFFSET_OUT_OF_RANGE);
    assert_int_equal(partition_log_read(log, start, 100, INT64_MAX, &r), 0);
    assert_true(r.len > 0);
    close(r.fd);
    partition_log_close(log);
    /* The start offset survives a reopen (it is the first segment's base). */
    log = open_or_fail(&cfg, false);
    assert_int_equal(partition_log_start_offset(log), start);
    partition_log_close(log);
}

static void test_retention_by_time(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 2048;
    cfg.retention_ms = 10000;
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 20, 2, 100000, 150); /* old */
    append_n(log, 20, 2, 500000, 150); /* new */
    int segments = partition_log_segment_count(log);
    /* At now = 505000 the old data (max ts ~100001) is expired, the new is not. */
    int deleted = partition_log_apply_retention(log, 505000);
    assert_true(deleted > 0 && deleted < segments);
    int64_t off, ts;
    assert_int_equal(partition_log_offset_for_timestamp(log, 0, &off, &ts), 0);
    assert_true(ts >= 100000);
    /* Far in the future everything but the active segment goes. */
    partition_log_apply_retention(log, 10000000);
    assert_int_equal(partition_log_segment_count(log), 1);
    assert_int_equal(partition_log_end_offset(log), 80);
    partition_log_close(log);
}

/* A rescan validates without flushing: the recovery point stays at the
 * checkpoint's offset (so a second crash rescans the same bytes) until a
 * flush moves it to the log end. */
static void test_rescan_keeps_recovery_point(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 5, 3, 1000, 100);
    partition_log_close(log);

    char err[256] = "";
    assert_int_equal(partition_log_open_from(g_dir, &cfg, 6, &log, err, sizeof err), 0);
    struct partition_log_recovery_stats stats;
    partition_log_recovery_stats(log, &stats);
    assert_true(stats.scanned_bytes > 0);
    assert_int_equal(stats.scanned_bytes, partition_log_size_bytes(log));
    assert_int_equal(partition_log_end_offset(log), 15);
    assert_int_equal(partition_log_recovery_point(log), 6);
    check_all_readable(log, 15);
    assert_int_equal(partition_log_flush(log), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), 15);
    partition_log_close(log);

    /* A checkpoint past the end (data lost with the page cache) is capped. */
    assert_int_equal(partition_log_open_from(g_dir, &cfg, 40, &log, err, sizeof err), 0);
    assert_int_equal(partition_log_recovery_point(log), 15);
    partition_log_close(log);

    /* A clean open trusts the files and reports no rescan. */
    assert_int_equal(partition_log_open_from(g_dir, &cfg, -1, &log, err, sizeof err), 0);
    partition_log_recovery_stats(log, &stats);
    assert_int_equal(stats.scanned_bytes, 0);
    assert_int_equal(partition_log_recovery_point(log), 15);
    partition_log_close(log);
}

/* After a roll the closed segments are synced in the background and the
 * recovery point moves to the new segment's base, so an unclean open
 * rescans the active segment only. */
static void test_flush_rolled_segments(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 4096;
    struct partition_log *log = open_or_fail(&cfg, false);
    assert_int_equal(partition_log_flush_rolled(log), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), 0);
    append_n(log, 12, 3, 1000, 500);
    assert_true(partition_log_segment_count(log) >= 3);
    int64_t end = partition_log_end_offset(log);
    assert_int_equal(partition_log_recovery_point(log), 0);
    assert_int_equal(partition_log_flush_rolled(log), KAFKA_ERR_NONE);
    int64_t rp = partition_log_recovery_point(log);
    assert_true(rp > 0 && rp < end);
    char path[512];
    struct stat st;
    segment_path(path, sizeof path, rp, ".log");
    assert_int_equal(stat(path, &st), 0); /* rp is the active segment's base */
    /* Nothing new rolled: a second call changes nothing. */
    assert_int_equal(partition_log_flush_rolled(log), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), rp);
    int64_t total = partition_log_size_bytes(log);
    partition_log_close(log);

    char err[256] = "";
    assert_int_equal(partition_log_open_from(g_dir, &cfg, rp, &log, err, sizeof err), 0);
    struct partition_log_recovery_stats stats;
    partition_log_recovery_stats(log, &stats);
    assert_int_equal(stats.scanned_bytes, (int64_t)st.st_size);
    assert_true(stats.scanned_bytes < total);
    assert_int_equal(partition_log_end_offset(log), end);
    check_all_readable(log, end);
    partition_log_close(log);
}

/* Descriptors opened until only `spare` remain under a lowered limit;
 * restore_descriptors undoes it. */
struct fd_squeeze {
    struct rlimit saved;
    int fds[256];
    int count;
};

static void squeeze_descriptors(struct fd_squeeze *q, int spare)
{
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &q->saved), 0);
    int probe = open("/dev/null", O_RDONLY);
    assert_true(probe >= 0);
    close(probe);
    struct rlimit low = q->saved;
    low.rlim_cur = (rlim_t)probe + 200;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    q->count = 0;
    int fd;
    while (q->count < 256 && (fd = open("/dev/null", O_RDONLY)) >= 0)
        q->fds[q->count++] = fd;
    assert_true(q->count < 256);
    for (int i = 0; i < spare; i++)
        close(q->fds[--q->count]);
}

static void restore_descriptors(struct fd_squeeze *q)
{
    while (q->count > 0)
        close(q->fds[--q->count]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &q->saved), 0);
}

/* A rolled segment whose files cannot all be opened for the sync is not
 * synced, so the recovery point must stay before it; the flush is retried
 * once descriptors are back. */
static void test_flush_rolled_keeps_point_on_failure(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 4096;
    struct partition_log *log = open_or_fail(&cfg, false);
    append_n(log, 12, 3, 1000, 500);
    assert_true(partition_log_segment_count(log) >= 3);
    assert_int_equal(partition_log_recovery_point(log), 0);
    struct fd_squeeze q;
    /* Two spare: the first segment's log and offset index, not the rest. */
    squeeze_descriptors(&q, 2);
    partition_log_flush_rolled(log);
    int64_t rp = partition_log_recovery_point(log);
    restore_descriptors(&q);
    assert_int_equal(rp, 0);
    assert_int_equal(partition_log_flush_rolled(log), KAFKA_ERR_NONE);
    assert_true(partition_log_recovery_point(log) > 0);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_garbage_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rescan_keeps_recovery_point, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_rolled_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_rolled_keeps_point_on_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_last_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_middle_segment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_time, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
