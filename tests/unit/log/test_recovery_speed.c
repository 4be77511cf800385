/* Recovery scan throughput: 256 MiB of unflushed batches, reopened with
 * recover=true (every CRC checked, indexes rebuilt). Prints MB/s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

#define SPEED_TOTAL_BYTES (256ll * 1024 * 1024)

static void test_recovery_speed(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    assert_non_null(dir);
    struct log_config cfg;
    log_config_defaults(&cfg);
    struct partition_log *log;
    char err[256];
    assert_int_equal(partition_log_open(dir, &cfg, false, &log, err, sizeof err), 0);

    /* ~1 MiB batches of 1 KiB records. */
    size_t len;
    uint8_t *batch = test_batch(1000, 1700000000000LL, 1024, &len);
    assert_non_null(batch);
    int64_t written = 0;
    int batches = 0;
    while (written < SPEED_TOTAL_BYTES) {
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
        written += (int64_t)len;
        batches++;
    }
    free(batch);
    int64_t end = partition_log_end_offset(log);
    /* Drop the reference without the clean-close flush cost mattering: the
     * scan below reads from the page cache either way. */
    partition_log_close(log);

    int64_t t0 = clock_mono_ns();
    assert_int_equal(partition_log_open(dir, &cfg, true, &log, err, sizeof err), 0);
    int64_t t1 = clock_mono_ns();
    assert_int_equal(partition_log_end_offset(log), end);
    double seconds = (double)(t1 - t0) / 1e9;
    double mbps = (double)written / (1024.0 * 1024.0) / seconds;
    printf("recovery scan: %d batches, %.1f MiB in %.3f s = %.0f MiB/s\n", batches, (double)written / (1024.0 * 1024.0),
           seconds, mbps);
    /* Spot-check that reads work after the rebuilt index. */
    struct log_read_result r;
    assert_int_equal(partition_log_read(log, end / 2, 1, INT64_MAX, &r), KAFKA_ERR_NONE);
    assert_int_equal(r.len, (int64_t)len);
    close(r.fd);
    partition_log_close(log);
    test_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recovery_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
