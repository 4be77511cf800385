/* partition_log_flush_records: syncs records without moving the recovery
 * point, so an unclean stop rescans everything it synced and rebuilds the
 * indexes it did not sync. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>

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

static void append_n(struct partition_log *log, int batches, int records)
{
    for (int i = 0; i < batches; i++) {
        size_t len;
        uint8_t *b = test_batch(records, 1000 + i, 100, &len);
        assert_non_null(b);
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
        free(b);
    }
}

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

/* Overwrites every index and time index of segments whose base offset is
 * at least `from_base` with garbage, as if those writes never reached the
 * disk. Returns how many files it spoiled. */
static int spoil_indexes(int64_t from_base)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int spoiled = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dot = strchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".index") != 0 && strcmp(dot, ".timeindex") != 0))
            continue;
        if (strtoll(e->d_name, NULL, 10) < from_base)
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
        FILE *fp = fopen(path, "r+b");
        assert_non_null(fp);
        for (int i = 0; i < 96; i++)
            fputc((i * 37 + 11) & 0xff, fp);
        fclose(fp);
        spoiled++;
    }
    closedir(d);
    return spoiled;
}

static void test_flush_records_keeps_recovery_point(void **state)
{
    (void)state;
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 4096; /* several segments past the recovery point */
    cfg.index_interval_bytes = 200;
    struct partition_log *log = NULL;
    char err[256] = "";
    assert_int_equal(partition_log_open(g_dir, &cfg, false, &log, err, sizeof err), 0);

    append_n(log, 10, 2);
    assert_int_equal(partition_log_flush(log), KAFKA_ERR_NONE);
    int64_t checkpointed = partition_log_recovery_point(log);
    assert_int_equal(checkpointed, 20);

    append_n(log, 60, 2);
    int64_t end = partition_log_end_offset(log);
    assert_int_equal(end, 140);
    assert_int_equal(partition_log_flush_records(log), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), checkpointed);
    assert_int_equal(partition_log_flush_records(log), KAFKA_ERR_NONE); /* nothing new: still fine */
    check_all_readable(log, end);
    partition_log_close(log);

    /* Unclean stop: the recovery checkpoint says `checkpointed`, the records
     * past it are on disk, their indexes are not. */
    assert_true(spoil_indexes(checkpointed) >= 2);
    log = NULL;
    assert_int_equal(partition_log_open_from(g_dir, &cfg, checkpointed, &log, err, sizeof err), 0);
    assert_int_equal(partition_log_end_offset(log), end);
    check_all_readable(log, end);
    int64_t ts_offset = -1, ts = -1;
    assert_int_equal(partition_log_max_timestamp(log, &ts_offset, &ts), KAFKA_ERR_NONE);
    assert_true(ts >= 1000 && ts_offset >= 0 && ts_offset < end);
    append_n(log, 1, 2);
    assert_int_equal(partition_log_end_offset(log), end + 2);
    partition_log_close(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_records_keeps_recovery_point, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
