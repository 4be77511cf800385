/* Log cleaner threads: several threads clean several compacted logs to the
 * same records one thread leaves, never two passes on one log at once, the
 * checkpoint ends with every log's first dirty offset; the filthiest due
 * log (overdue ones first) is taken first; the dedupe buffer is split
 * between the threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "log/log_checkpoint.h"
#include "log/log_manager.h"
#include "log/log_offset_map.h"
#include "cleaner_test_util.h"

#define LOGS 6
#define MAX_RECS 4096

/* ---- watching passes through the pass hook ---- */

struct pass_watch {
    int active[LOGS];     /* passes running per log */
    int max_active[LOGS]; /* most at once per log */
    int passes[LOGS];
    int running, max_running; /* over all logs */
    int sleep_ms;             /* inside the pass, to make passes overlap */
    char order[16][32];       /* topics in the order their passes started */
    int order_count;
};

static pthread_mutex_t g_watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pass_watch g_watch; /* under g_watch_lock */

/* A copy to assert on: a failing assertion must not leave the lock held. */
static struct pass_watch watch_copy(void)
{
    pthread_mutex_lock(&g_watch_lock);
    struct pass_watch w = g_watch;
    pthread_mutex_unlock(&g_watch_lock);
    return w;
}

static void watch_reset(int sleep_ms)
{
    pthread_mutex_lock(&g_watch_lock);
    memset(g_watch.active, 0, sizeof g_watch.active);
    memset(g_watch.max_active, 0, sizeof g_watch.max_active);
    memset(g_watch.passes, 0, sizeof g_watch.passes);
    g_watch.running = g_watch.max_running = 0;
    g_watch.order_count = 0;
    g_watch.sleep_ms = sleep_ms;
    pthread_mutex_unlock(&g_watch_lock);
}

/* Topics are t0..t5 in the threads test; others only get their order. */
static void watch_pass(void *arg, const char *topic, int32_t partition, bool starting)
{
    (void)arg;
    (void)partition;
    int i = topic[0] == 't' ? atoi(topic + 1) : -1;
    pthread_mutex_lock(&g_watch_lock);
    if (starting && g_watch.order_count < 16)
        snprintf(g_watch.order[g_watch.order_count++], sizeof g_watch.order[0], "%s", topic);
    if (i >= 0 && i < LOGS) {
        g_watch.active[i] += starting ? 1 : -1;
        if (g_watch.active[i] > g_watch.max_active[i])
            g_watch.max_active[i] = g_watch.active[i];
        g_watch.passes[i] += starting;
    }
    g_watch.running += starting ? 1 : -1;
    if (g_watch.running > g_watch.max_running)
        g_watch.max_running = g_watch.running;
    int sleep_ms = g_watch.sleep_ms;
    pthread_mutex_unlock(&g_watch_lock);
    if (starting && sleep_ms > 0)
        usleep((useconds_t)sleep_ms * 1000);
}

/* ---- managers over a subdirectory of g_dir ---- */

static struct log_manager *open_manager(const char *sub, int threads, bool background, int64_t dedupe_bytes,
                                        double load_factor)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, sub);
    const char *dirs[] = {path};
    struct log_config cfg;
    compact_config(&cfg);
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = background;
    mcfg.cleaner.threads = threads;
    mcfg.cleaner.backoff_ms = 10;
    mcfg.cleaner.dedupe_buffer_bytes = dedupe_bytes;
    mcfg.cleaner.load_factor = load_factor;
    mcfg.cleaner.pass_hook = watch_pass;
    struct log_manager *m = NULL;
    char err[256] = "";
    if (log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err) != 0)
        fail_msg("open %s: %s", path, err);
    return m;
}

static struct partition_log *create_log(struct log_manager *m, const char *topic, const struct log_config *cfg)
{
    struct partition_log *log = NULL;
    char err[256] = "";
    if (log_manager_create(m, topic, 0, NULL, cfg, &log, err, sizeof err) != KAFKA_ERR_NONE)
        fail_msg("create %s: %s", topic, err);
    return log;
}

/* count overwrites of `keys` keys, values tagged with the log and round. */
static void overwrite(struct partition_log *log, int tag, int keys, int from, int count)
{
    char key[16], value[32];
    for (int i = from; i < from + count; i++) {
        snprintf(key, sizeof key, "k%d", i % keys);
        snprintf(value, sizeof value, "t%d-v%d", tag, i);
        put(log, key, value);
    }
}

/* Six logs of different dirty ratios: t0..t2 cleaned once, then written
 * 40, 80 and 120 more records; t3..t5 never cleaned (ratio 1). */
static void build_logs(const char *sub)
{
    struct log_manager *m = open_manager(sub, 1, false, 1 << 20, 0.9);
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *logs[LOGS];
    char topic[8];
    for (int i = 0; i < 3; i++) {
        snprintf(topic, sizeof topic, "t%d", i);
        logs[i] = create_log(m, topic, &cfg);
        overwrite(logs[i], i, 5 + i, 0, 150);
    }
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 3);
    for (int i = 0; i < 3; i++)
        overwrite(logs[i], i, 5 + i, 150, 40 * (i + 1));
    for (int i = 3; i < LOGS; i++) {
        snprintf(topic, sizeof topic, "t%d", i);
        logs[i] = create_log(m, topic, &cfg);
        overwrite(logs[i], i, 3 + i, 0, 100 + 30 * i);
    }
    for (int i = 0; i < LOGS; i++)
        partition_log_close(logs[i]);
    log_manager_close(m, true);
}

struct log_records {
    struct rec recs[MAX_RECS];
    size_t n;
    int64_t first_dirty;
};

static void read_logs(struct log_manager *m, struct log_records *out)
{
    char topic[8];
    for (int i = 0; i < LOGS; i++) {
        snprintf(topic, sizeof topic, "t%d", i);
        struct partition_log *log = log_manager_get(m, topic, 0);
        assert_non_null(log);
        out[i].n = read_all(log, out[i].recs, MAX_RECS);
        out[i].first_dirty = log_cleaner_first_dirty(log_manager_cleaner(m), topic, 0);
        partition_log_close(log);
    }
}

/* Cleans the same six logs once with one thread and once with three, and
 * compares. with_run_once: the caller's run_once goes through the logs
 * while the threads work. */
static void check_three_threads(bool with_run_once)
{
    build_logs("one");
    build_logs("three");
    static struct log_records want[LOGS], got[LOGS], before[LOGS];

    /* One thread's result, pass after pass on the caller's thread. */
    watch_reset(0);
    struct log_manager *m = open_manager("one", 1, false, 1 << 20, 0.9);
    read_logs(m, before);
    int rounds = 0;
    while (log_manager_clean(m, clock_wall_ms(), false) > 0)
        assert_true(++rounds < 10);
    assert_true(rounds >= 1);
    read_logs(m, want);
    log_manager_close(m, true);
    for (int i = 0; i < LOGS; i++) {
        assert_true(want[i].n < before[i].n); /* every log had something to drop */
        assert_true(want[i].first_dirty > before[i].first_dirty);
    }

    /* Three threads; passes are slowed so they overlap. */
    watch_reset(30);
    m = open_manager("three", 3, true, 1 << 20, 0.9);
    if (with_run_once)
        log_manager_clean(m, clock_wall_ms(), false);
    int64_t deadline = clock_mono_ms() + 20000;
    bool done = false;
    while (!done && clock_mono_ms() < deadline) {
        usleep(20000);
        done = true;
        char topic[8];
        for (int i = 0; i < LOGS; i++) {
            snprintf(topic, sizeof topic, "t%d", i);
            done = done && log_cleaner_first_dirty(log_manager_cleaner(m), topic, 0) == want[i].first_dirty;
        }
    }
    assert_true(done);
    usleep(100000); /* no further pass is due: let the threads go idle */
    read_logs(m, got);
    log_manager_close(m, true);

    struct pass_watch w = watch_copy();
    for (int i = 0; i < LOGS; i++) {
        assert_int_equal(w.max_active[i], 1); /* never two passes on one log */
        assert_true(w.passes[i] >= 1);
    }
    assert_true(w.max_running >= 2); /* logs were cleaned side by side */
    assert_int_equal(w.running, 0);

    for (int i = 0; i < LOGS; i++) {
        assert_int_equal(got[i].first_dirty, want[i].first_dirty);
        assert_int_equal(got[i].n, want[i].n);
        for (size_t r = 0; r < got[i].n; r++) {
            assert_int_equal(got[i].recs[r].offset, want[i].recs[r].offset);
            assert_string_equal(got[i].recs[r].key, want[i].recs[r].key);
            assert_string_equal(got[i].recs[r].value, want[i].recs[r].value);
        }
    }

    /* The checkpoint holds every log's first dirty offset, as the threads
     * wrote it (close writes none). */
    char path[700];
    snprintf(path, sizeof path, "%s/three/%s", g_dir, LOG_CLEANER_CHECKPOINT_FILE);
    struct log_offset_checkpoint_entry *e;
    size_t n;
    assert_int_equal(log_offset_checkpoint_read(path, &e, &n), 0);
    assert_int_equal(n, LOGS);
    bool seen[LOGS] = {false};
    for (size_t k = 0; k < n; k++) {
        int i = atoi(e[k].topic + 1);
        assert_true(i >= 0 && i < LOGS && !seen[i]);
        seen[i] = true;
        assert_int_equal(e[k].partition, 0);
        assert_int_equal(e[k].offset, want[i].first_dirty);
    }
    log_offset_checkpoint_free(e, n);
}

static void test_three_threads_clean_as_one(void **state)
{
    (void)state;
    check_three_threads(false);
}

static void test_run_once_beside_threads(void **state)
{
    (void)state;
    check_three_threads(true);
}

/* ---- selection order ---- */

/* Logs named by roles[]: overdue (below its ratio but past
 * max.compaction.lag.ms), filthy (never cleaned: ratio 1), medium (cleaned,
 * then dirtied), idle (below its ratio). One thread must take overdue,
 * filthy, medium, in that order, and leave idle. */
static void check_selection_order(const char *const names[4])
{
    enum { OVERDUE, FILTHY, MEDIUM, IDLE };
    watch_reset(0);
    struct log_manager *m = open_manager("order", 1, false, 1 << 20, 0.9);
    struct log_config base, strict, lagging;
    compact_config(&base);
    strict = base;
    strict.min_cleanable_dirty_ratio = 1.0;
    lagging = strict;
    lagging.max_compaction_lag_ms = 1;
    struct partition_log *overdue = create_log(m, names[OVERDUE], &lagging);
    struct partition_log *medium = create_log(m, names[MEDIUM], &base);
    struct partition_log *idle = create_log(m, names[IDLE], &strict);
    overwrite(overdue, 0, 5, 0, 150);
    overwrite(medium, 1, 5, 0, 150);
    overwrite(idle, 2, 5, 0, 150);
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 3);
    overwrite(overdue, 0, 5, 150, 60);
    overwrite(medium, 1, 5, 150, 60);
    overwrite(idle, 2, 5, 150, 60);
    struct partition_log *filthy = create_log(m, names[FILTHY], &base);
    overwrite(filthy, 3, 5, 0, 100);
    usleep(20000); /* overdue's dirty data is now older than 1 ms */

    struct log_cleaner *c = log_manager_cleaner(m);
    struct log_clean_dirtiness d[4];
    struct partition_log *logs[4] = {overdue, filthy, medium, idle};
    for (int i = 0; i < 4; i++)
        partition_log_dirtiness(logs[i], log_cleaner_first_dirty(c, names[i], 0), clock_wall_ms(), &d[i]);
    /* The setup holds what the order below relies on. */
    assert_true(d[OVERDUE].due && d[OVERDUE].overdue && d[OVERDUE].dirty_ratio < strict.min_cleanable_dirty_ratio);
    assert_true(d[FILTHY].due && !d[FILTHY].overdue && d[FILTHY].dirty_ratio == 1.0);
    assert_true(d[MEDIUM].due && d[MEDIUM].dirty_ratio < 1.0);
    assert_true(d[OVERDUE].dirty_ratio < d[FILTHY].dirty_ratio);
    assert_false(d[IDLE].due);
    int64_t idle_dirty = log_cleaner_first_dirty(c, names[IDLE], 0);

    bool cleaned = false;
    for (int i = 0; i < 3; i++) {
        assert_true(log_cleaner_clean_filthiest(c, clock_wall_ms(), &cleaned));
        assert_true(cleaned);
    }
    assert_false(log_cleaner_clean_filthiest(c, clock_wall_ms(), &cleaned));
    assert_false(cleaned);
    struct pass_watch w = watch_copy();
    assert_int_equal(w.order_count, 3 + 3); /* the setup's run_once, then ours */
    assert_string_equal(w.order[3], names[OVERDUE]);
    assert_string_equal(w.order[4], names[FILTHY]);
    assert_string_equal(w.order[5], names[MEDIUM]);
    assert_int_equal(log_cleaner_first_dirty(c, names[IDLE], 0), idle_dirty);
    for (int i = 0; i < 4; i++)
        partition_log_close(logs[i]);
    log_manager_close(m, true);
}

static void test_filthiest_first(void **state)
{
    (void)state;
    const char *names[] = {"alpha", "bravo", "charlie", "delta"};
    check_selection_order(names);
}

/* The same roles under the reversed names: whatever order the manager
 * lists its logs in, it cannot match both. */
static void test_filthiest_first_other_names(void **state)
{
    (void)state;
    const char *names[] = {"charlie", "bravo", "alpha", "delta"};
    check_selection_order(names);
}

/* ---- the dedupe buffer is shared by the threads ---- */

/* 64 slots at a load factor of 0.5 hold 32 keys: two 1 KiB segments of
 * distinct keys. Split over four threads, 8 keys: not one segment, so a
 * pass cannot start. */
static void test_dedupe_buffer_split(void **state)
{
    (void)state;
    const int64_t total = 64 * LOG_OFFSET_MAP_SLOT_BYTES;
    struct log_manager *m = open_manager("split", 4, false, total, 0.5);
    assert_int_equal(log_cleaner_dedupe_bytes_per_pass(log_manager_cleaner(m)), (size_t)total / 4);
    struct log_config cfg;
    compact_config(&cfg);
    struct partition_log *log = create_log(m, "distinct", &cfg);
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "key-%03d", i);
        put(log, key, "v");
    }
    partition_log_close(log);
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 0);
    assert_int_equal(log_cleaner_first_dirty(log_manager_cleaner(m), "distinct", 0), 0);
    log_manager_close(m, true);

    m = open_manager("split", 1, false, total, 0.5);
    assert_int_equal(log_cleaner_dedupe_bytes_per_pass(log_manager_cleaner(m)), (size_t)total);
    assert_int_equal(log_manager_clean(m, clock_wall_ms(), false), 1);
    assert_true(log_cleaner_first_dirty(log_manager_cleaner(m), "distinct", 0) > 0);
    log_manager_close(m, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_threads_clean_as_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_once_beside_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filthiest_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filthiest_first_other_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dedupe_buffer_split, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
