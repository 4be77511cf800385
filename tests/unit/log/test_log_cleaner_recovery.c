/* Log cleaner across restarts: crash leftovers (.cleaned discarded, .swap
 * completed, also when its .log is already gone), a damaged segment left
 * as it is, and the cleaner-offset-checkpoint kept by the log manager. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "log/log_checkpoint.h"
#include "log/log_manager.h"
#include "cleaner_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

static void test_crash_after_cleaned(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    int64_t size_before = partition_log_size_bytes(log);
    struct log_clean_options opt = default_opts;
    opt.stop_after = LOG_CLEAN_STOP_AFTER_CLEANED;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    assert_true(count_files(".log.cleaned") > 0);
    assert_int_equal(partition_log_size_bytes(log), size_before);
    partition_log_close(log);

    /* Unfinished output is thrown away; the log is the original one. */
    log = open_log(&cfg);
    assert_int_equal(count_files(".log.cleaned"), 0);
    assert_int_equal(partition_log_size_bytes(log), size_before);
    struct rec *recs = calloc(WRITES, sizeof *recs);
    assert_int_equal(read_all(log, recs, WRITES), WRITES);
    free(recs);
    partition_log_close(log);
}

static void test_crash_after_swap(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    int64_t active = active_base(log);
    int64_t size_before = partition_log_size_bytes(log);
    struct log_clean_options opt = default_opts;
    opt.stop_after = LOG_CLEAN_STOP_AFTER_SWAP;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    size_t swaps = count_files(".log.swap");
    assert_true(swaps > 0);
    assert_int_equal(count_files(".log.cleaned"), 0);
    /* Not yet visible: the in-memory log still reads the old files. */
    struct rec *recs = calloc(WRITES, sizeof *recs);
    assert_int_equal(read_all(log, recs, WRITES), WRITES);
    partition_log_close(log);

    /* Reopening completes the swaps and rebuilds their indexes. */
    log = open_log(&cfg);
    assert_int_equal(count_files(".log.swap"), 0);
    assert_true(partition_log_size_bytes(log) < size_before);
    size_t n = read_all(log, recs, WRITES);
    check_compacted(recs, n, active);
    char path[600];
    snprintf(path, sizeof path, "%s/%020d.index", g_dir, 0);
    assert_true(access(path, F_OK) == 0);
    free(recs);
    partition_log_close(log);
}

/* Base offset of the n-th segment file (0-based) of the test dir. */
static int64_t nth_segment(int n)
{
    int64_t bases[256];
    int count = 0;
    DIR *d = opendir(g_dir);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL && count < 256)
        if (strlen(ent->d_name) == 24 && strcmp(ent->d_name + 20, ".log") == 0)
            bases[count++] = atoll(ent->d_name);
    closedir(d);
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            if (bases[j] < bases[i]) {
                int64_t t = bases[i];
                bases[i] = bases[j];
                bases[j] = t;
            }
    assert_true(n < count);
    return bases[n];
}

/* Greatest base offset among the files named <base><suffix>, -1 if none. */
static int64_t last_base_with(const char *suffix)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    int64_t best = -1;
    size_t slen = strlen(suffix);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (strlen(ent->d_name) == 20 + slen && strcmp(ent->d_name + 20, suffix) == 0 && atoll(ent->d_name) > best)
            best = atoll(ent->d_name);
    closedir(d);
    return best;
}

static void test_swap_without_its_log(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    /* Every segment holds keys written once (kept) beside overwritten ones
     * (dropped), so each is rewritten with records left in it. */
    char key[16];
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof key, "u%d", i);
        put(log, key, "once");
        snprintf(key, sizeof key, "k%d", i % KEYS);
        put(log, key, "again");
    }
    struct log_clean_options opt = default_opts;
    opt.stop_after = LOG_CLEAN_STOP_AFTER_SWAP;
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &opt, &res), 0);
    partition_log_close(log);

    /* A crash between removing the old .log and the rename leaves only the
     * .swap: opening must still take it in as a segment. */
    int64_t base = last_base_with(".log.swap");
    assert_true(base > 0);
    char path[600];
    snprintf(path, sizeof path, "%s/%020lld.log.swap", g_dir, (long long)base);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    size_t len = (size_t)test_file_size(path);
    uint8_t *buf = malloc(len);
    assert_int_equal(pread(fd, buf, len, 0), (ssize_t)len);
    close(fd);
    size_t swapped = 0;
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    record_batch_iter_init(&it, buf, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        assert_int_equal(record_batch_parse_header(batch, blen, &h), 0);
        swapped += (size_t)h.record_count;
    }
    free(buf);
    assert_true(swapped > 0);
    snprintf(path, sizeof path, "%s/%020lld.log", g_dir, (long long)base);
    assert_int_equal(unlink(path), 0);

    log = open_log(&cfg);
    assert_int_equal(count_files(".log.swap"), 0);
    assert_true(access(path, F_OK) == 0);
    assert_int_equal((size_t)partition_log_segment_count(log), count_files(".log"));
    struct rec *recs = calloc(120, sizeof *recs);
    size_t n = read_all(log, recs, 120);
    size_t in_swapped = 0, once = 0;
    int64_t next = -1; /* base offset of the segment after it */
    for (int i = 0; i + 1 < partition_log_segment_count(log); i++)
        if (nth_segment(i) == base)
            next = nth_segment(i + 1);
    assert_true(next > base);
    for (size_t i = 0; i < n; i++) {
        in_swapped += recs[i].offset >= base && recs[i].offset < next;
        once += recs[i].key[0] == 'u';
    }
    assert_int_equal(in_swapped, swapped);
    assert_int_equal(once, 60);
    free(recs);
    partition_log_close(log);
}

static void test_unreadable_segment_left_alone(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = open_log(&cfg);
    write_overwrites(log);
    partition_log_close(log);
    /* Break the magic byte of the second batch of the second segment. */
    char path[600];
    snprintf(path, sizeof path, "%s/%020lld.log", g_dir, (long long)nth_segment(1));
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t hdr[12];
    assert_int_equal(pread(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    int64_t second = 12 + ((int64_t)hdr[8] << 24 | hdr[9] << 16 | hdr[10] << 8 | hdr[11]);
    uint8_t bad = 9;
    assert_int_equal(pwrite(fd, &bad, 1, second + RECORD_BATCH_OFFSET_MAGIC), 1);
    close(fd);
    int64_t size = test_file_size(path);

    log = open_log(&cfg);
    struct log_clean_result res;
    assert_int_equal(partition_log_clean(log, -1, clock_wall_ms(), &default_opts, &res), 0);
    assert_true(res.cleaned);
    assert_true(res.segments_rewritten > 0);
    /* That segment is untouched (bytes after the damage are not lost). */
    assert_int_equal(test_file_size(path), size);
    partition_log_close(log);
}

static void test_manager_checkpoint(void **state)
{
    (void)state;
    struct log_config cfg;
    compact_config(&cfg);
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    const char *dirs[] = {g_dir};
    struct log_manager *m;
    char err[256];
    assert_int_equal(log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err), 0);
    struct partition_log *log;
    assert_int_equal(log_manager_create(m, "compacted", 0, NULL, &cfg, &log, err, sizeof err), KAFKA_ERR_NONE);
    struct log_config plain;
    log_config_defaults(&plain);
    plain.segment_bytes = 1024;
    struct partition_log *other;
    assert_int_equal(log_manager_create(m, "plain", 0, NULL, &plain, &other, err, sizeof err), KAFKA_ERR_NONE);
    for (int i = 0; i < 100; i++) {
        put(log, "same", "value");
        put(other, "same", "value");
    }
    int64_t plain_size = partition_log_size_bytes(other);
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 1);
    int64_t first_dirty = log_cleaner_first_dirty(log_manager_cleaner(m), "compacted", 0);
    assert_true(first_dirty > 0);
    assert_int_equal(log_cleaner_first_dirty(log_manager_cleaner(m), "plain", 0), -1);
    assert_int_equal(partition_log_size_bytes(other), plain_size);
    partition_log_close(log);
    partition_log_close(other);
    log_manager_close(m, true);

    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, LOG_CLEANER_CHECKPOINT_FILE);
    struct log_offset_checkpoint_entry *e;
    size_t n;
    assert_int_equal(log_offset_checkpoint_read(path, &e, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(e[0].topic, "compacted");
    assert_int_equal(e[0].offset, first_dirty);
    log_offset_checkpoint_free(e, n);

    assert_int_equal(log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err), 0);
    assert_int_equal(log_cleaner_first_dirty(log_manager_cleaner(m), "compacted", 0), first_dirty);
    /* Reopened with compacting defaults, "plain" now gets cleaned while the
     * checkpoint keeps "compacted" (nothing new) from being redone. */
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 1);
    assert_int_equal(log_cleaner_first_dirty(log_manager_cleaner(m), "compacted", 0), first_dirty);
    assert_true(log_cleaner_first_dirty(log_manager_cleaner(m), "plain", 0) > 0);
    log_manager_close(m, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_after_cleaned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_after_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swap_without_its_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_segment_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manager_checkpoint, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
