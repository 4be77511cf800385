/* Fixture of the cleaner tests: one partition log in a temporary directory,
 * a compacted-topic config with small segments and the cleaner options.
 * Include from one test file each (it defines that file's g_dir). */
#ifndef CAIRN_TEST_CLEANER_TEST_UTIL_H
#define CAIRN_TEST_CLEANER_TEST_UTIL_H

#include <unistd.h>

#include "log/log_cleaner.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

static char *g_dir;

static inline int setup(void **state)
{
    (void)state;
    g_dir = test_make_dir();
    return g_dir ? 0 : -1;
}

static inline int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_dir);
    free(g_dir);
    return 0;
}

static inline struct partition_log *open_log(const struct log_config *cfg)
{
    struct partition_log *log = NULL;
    char err[256] = "";
    if (partition_log_open(g_dir, cfg, false, &log, err, sizeof err) != KAFKA_ERR_NONE)
        fail_msg("open: %s", err);
    return log;
}

/* cleanup.policy=compact, 1 KiB segments, cleanable from 10 % dirty. */
static inline void compact_config(struct log_config *cfg)
{
    log_config_defaults(cfg);
    cfg->segment_bytes = 1024;
    cfg->cleanup_compact = true;
    cfg->cleanup_delete = false;
    cfg->min_cleanable_dirty_ratio = 0.1;
}

/* Calls fn for every batch from the log start to its end, read as a fetch
 * reads them, each with its CRC checked (not validated: a cleaned batch
 * holds fewer records than its offset span, as in Kafka). */
static inline void for_each_batch(struct partition_log *log,
                                  void (*fn)(void *arg, const uint8_t *batch, size_t len),
                                  void *arg)
{
    int64_t offset = partition_log_start_offset(log);
    while (offset < partition_log_end_offset(log)) {
        struct log_read_result r;
        assert_int_equal(partition_log_read(log, offset, 1 << 20, INT64_MAX, &r), KAFKA_ERR_NONE);
        if (r.len == 0)
            break;
        uint8_t *buf = test_read_region(&r);
        assert_non_null(buf);
        struct record_batch_iter it;
        const uint8_t *batch;
        size_t blen;
        record_batch_iter_init(&it, buf, (size_t)r.len);
        while (record_batch_iter_next(&it, &batch, &blen) == 1) {
            assert_true(record_batch_crc_ok(batch, blen));
            fn(arg, batch, blen);
        }
        free(buf);
        assert_true(r.next_offset > offset);
        offset = r.next_offset;
    }
}

/* Base offset of the active segment: the greatest base offset among the
 * segment files. */
static inline int64_t active_base(struct partition_log *log)
{
    int64_t best = -1;
    for (int64_t off = partition_log_end_offset(log); off >= 0 && best < 0; off--) {
        char path[600];
        snprintf(path, sizeof path, "%s/%020lld.log", g_dir, (long long)off);
        if (access(path, F_OK) == 0)
            best = off;
    }
    return best;
}

static const struct log_clean_options default_opts = {
    .dedupe_buffer_bytes = 1 << 20,
    .load_factor = 0.9,
};

#endif
