/* Log manager: creation across log dirs, discovery on reopen, checkpoints,
 * clean-shutdown marker, recovery after an unclean stop, deletion and
 * maintenance (retention). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "log/log_checkpoint.h"
#include "log/log_manager.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

static char *g_root;
static char g_dirs[2][512];
static const char *g_dir_list[2] = {g_dirs[0], g_dirs[1]};

static int setup(void **state)
{
    (void)state;
    g_root = test_make_dir();
    snprintf(g_dirs[0], sizeof g_dirs[0], "%s/d0", g_root);
    snprintf(g_dirs[1], sizeof g_dirs[1], "%s/nested/d1", g_root);
    return g_root ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_root);
    free(g_root);
    return 0;
}

static struct log_manager *open_manager(const struct log_config *defaults)
{
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    struct log_manager *m = NULL;
    char err[256] = "";
    if (log_manager_open(g_dir_list, 2, defaults, &mcfg, &m, err, sizeof err) != 0)
        fail_msg("open: %s", err);
    return m;
}

static void append(struct partition_log *log, int batches)
{
    for (int i = 0; i < batches; i++) {
        size_t len;
        uint8_t *b = test_batch(2, 1000, 100, &len);
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
        free(b);
    }
}

static bool exists(const char *dir, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static const char *const topics[] = {"orders", "my.topic_v2", "a-b-c"};

/* Directories named "...-delete" in the two log dirs. */
static int deleted_dirs(void)
{
    int n = 0;
    for (int i = 0; i < 2; i++) {
        DIR *d = opendir(g_dirs[i]);
        struct dirent *ent;
        while (d && (ent = readdir(d)) != NULL) {
            size_t len = strlen(ent->d_name);
            if (len > 7 && strcmp(ent->d_name + len - 7, "-delete") == 0)
                n++;
        }
        if (d)
            closedir(d);
    }
    return n;
}

static void test_create_reopen_clean(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    char err[256];
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < 4; p++) {
            struct partition_log *log;
            assert_int_equal(log_manager_create(m, topics[t], p * 5, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
            append(log, t + p + 1);
            partition_log_close(log);
        }
    assert_int_equal(log_manager_partition_count(m), 12);
    /* Spread over both dirs. */
    assert_true(exists(g_dirs[0], "a-b-c-15") || exists(g_dirs[1], "a-b-c-15"));
    int in0 = 0;
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < 4; p++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%d", topics[t], p * 5);
            in0 += exists(g_dirs[0], name);
        }
    assert_int_equal(in0, 6);
    assert_int_equal(log_manager_create(m, "bad/topic", 0, NULL, NULL, NULL, err, sizeof err),
                     KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    assert_int_equal(log_manager_create(m, "__cluster_metadata", 0, NULL, NULL, NULL, err, sizeof err),
                     KAFKA_ERR_INVALID_TOPIC_EXCEPTION);
    assert_false(exists(g_dirs[0], "__cluster_metadata-0") || exists(g_dirs[1], "__cluster_metadata-0"));
    assert_null(log_manager_get(m, "orders", 1));
    log_manager_close(m, true);
    assert_true(exists(g_dirs[0], ".kafka_cleanshutdown"));
    assert_true(exists(g_dirs[1], ".kafka_cleanshutdown"));

    /* Checkpoint format: version, count, "topic partition offset". */
    char path[1024];
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", g_dirs[0]);
    struct log_offset_checkpoint_entry *entries;
    size_t n;
    assert_int_equal(log_offset_checkpoint_read(path, &entries, &n), 0);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        int t = strcmp(entries[i].topic, "orders") == 0 ? 0 : strcmp(entries[i].topic, "my.topic_v2") == 0 ? 1 : 2;
        assert_string_equal(entries[i].topic, topics[t]);
        assert_int_equal(entries[i].offset, 2 * (t + entries[i].partition / 5 + 1));
    }
    log_offset_checkpoint_free(entries, n);

    m = open_manager(&defaults);
    assert_false(exists(g_dirs[0], ".kafka_cleanshutdown"));
    assert_int_equal(log_manager_partition_count(m), 12);
    for (int t = 0; t < 3; t++)
        for (int p = 0; p < 4; p++) {
            struct partition_log *log = log_manager_get(m, topics[t], p * 5);
            assert_non_null(log);
            assert_int_equal(partition_log_end_offset(log), 2 * (t + p + 1));
            uint8_t back[16];
            assert_int_equal(partition_log_topic_id(log, back), 0);
            assert_memory_equal(back, id, 16);
            partition_log_close(log);
        }
    log_manager_close(m, true);
}

/* After a clean stop the logs are registered with their checkpointed
 * offsets and no file opened; the offsets, sizes and a leader epoch
 * assigned meanwhile need no load; the first read loads the segments, with
 * the epoch applied at the same log end. A log never loaded keeps its
 * offsets over the next clean stop. */
static void test_clean_reopen_defers_load(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    uint8_t id[16] = {1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 0, 1, 2};
    char err[256];
    struct partition_log *log;
    for (int p = 0; p < 2; p++) {
        assert_int_equal(log_manager_create(m, "orders", p, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
        append(log, 3 + p);
        partition_log_close(log);
    }
    log = log_manager_get(m, "orders", 0);
    assert_int_equal(partition_log_delete_records_before(log, 2), KAFKA_ERR_NONE);
    int64_t size = partition_log_size_bytes(log);
    partition_log_close(log);
    log_manager_close(m, true);

    m = open_manager(&defaults);
    log = log_manager_get(m, "orders", 0);
    assert_non_null(log);
    assert_false(partition_log_is_loaded(log));
    assert_int_equal(partition_log_start_offset(log), 2);
    assert_int_equal(partition_log_end_offset(log), 6);
    assert_int_equal(partition_log_high_watermark(log), 6);
    assert_int_equal(partition_log_size_bytes(log), size);
    assert_int_equal(partition_log_assign_leader_epoch(log, 7), KAFKA_ERR_NONE);
    assert_false(partition_log_is_loaded(log));

    struct log_read_result r;
    assert_int_equal(partition_log_read(log, 2, 1 << 20, INT64_MAX, &r), KAFKA_ERR_NONE);
    assert_true(partition_log_is_loaded(log));
    assert_true(r.len > 0);
    close(r.fd);
    assert_int_equal(r.log_start_offset, 2);
    assert_int_equal(partition_log_latest_epoch(log), 7);
    int32_t found = -1;
    assert_int_equal(partition_log_end_offset_for_epoch(log, 6, &found), 6);
    append(log, 1);
    assert_int_equal(partition_log_end_offset(log), 8);
    partition_log_close(log);
    log_manager_close(m, true);

    m = open_manager(&defaults);
    log = log_manager_get(m, "orders", 1);
    assert_false(partition_log_is_loaded(log));
    assert_int_equal(partition_log_end_offset(log), 8);
    assert_int_equal(partition_log_segment_count(log), 1);
    assert_true(partition_log_is_loaded(log));
    partition_log_close(log);
    log = log_manager_get(m, "orders", 0);
    assert_int_equal(partition_log_end_offset(log), 8);
    assert_int_equal(partition_log_start_offset(log), 2);
    uint8_t back[16];
    assert_int_equal(partition_log_topic_id(log, back), 0);
    assert_memory_equal(back, id, 16);
    partition_log_close(log);
    log_manager_close(m, true);
}

static ino_t inode_of(const char *dir, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_ino;
}

/* Lays out, as a clean stop leaves them, `count` partition dirs of topic
 * "wide" in dir 0 (plus one dir missing from the checkpoints when
 * `one_unlisted`), their checkpoints and both dirs' clean-shutdown markers. */
static void lay_out_clean_stop(int count, bool one_unlisted)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/nested", g_root);
    assert_int_equal(mkdir(path, 0755), 0);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(mkdir(g_dirs[d], 0755), 0);
        snprintf(path, sizeof path, "%s/.kafka_cleanshutdown", g_dirs[d]);
        assert_int_equal(log_file_write_atomic(path, "", 0), 0);
    }
    struct log_offset_checkpoint_entry *entries = calloc((size_t)count, sizeof *entries);
    assert_non_null(entries);
    for (int p = 0; p < count + (one_unlisted ? 1 : 0); p++) {
        snprintf(path, sizeof path, "%s/wide-%d", g_dirs[0], p);
        assert_int_equal(mkdir(path, 0755), 0);
        if (p < count)
            entries[p] = (struct log_offset_checkpoint_entry){.topic = "wide", .partition = p, .offset = 0};
    }
    static const char *const files[] = {"recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                                        "replication-offset-checkpoint"};
    for (int f = 0; f < 3; f++) {
        snprintf(path, sizeof path, "%s/%s", g_dirs[0], files[f]);
        assert_int_equal(log_offset_checkpoint_write(path, entries, (size_t)count), 0);
    }
    free(entries);
}

/* A clean start whose checkpoints name every partition registers them
 * all (past the table's first doubling) and leaves the checkpoint files
 * as they are: rewriting them would write every partition's offsets
 * again, with nothing changed. */
static void test_clean_start_keeps_checkpoints(void **state)
{
    (void)state;
    enum { COUNT = 2500 }; /* > 2 x the 1,024 initial buckets: the table grows */
    lay_out_clean_stop(COUNT, false);
    ino_t recovery = inode_of(g_dirs[0], "recovery-point-offset-checkpoint");
    ino_t starts = inode_of(g_dirs[0], "log-start-offset-checkpoint");
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    assert_false(exists(g_dirs[0], ".kafka_cleanshutdown"));
    assert_int_equal(log_manager_partition_count(m), COUNT);
    for (int p = 0; p < COUNT; p++) {
        struct partition_log *log = log_manager_get(m, "wide", p);
        assert_non_null(log);
        assert_false(partition_log_is_loaded(log));
        partition_log_close(log);
    }
    assert_null(log_manager_get(m, "wide", COUNT));
    assert_int_equal(inode_of(g_dirs[0], "recovery-point-offset-checkpoint"), recovery);
    assert_int_equal(inode_of(g_dirs[0], "log-start-offset-checkpoint"), starts);
    log_manager_close(m, true);
}

/* A partition dir the checkpoints do not name is loaded in full, and the
 * checkpoints are written again at the start, now naming it. */
static void test_clean_start_rewrites_incomplete_checkpoints(void **state)
{
    (void)state;
    lay_out_clean_stop(10, true);
    ino_t recovery = inode_of(g_dirs[0], "recovery-point-offset-checkpoint");
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    assert_int_equal(log_manager_partition_count(m), 11);
    assert_int_not_equal(inode_of(g_dirs[0], "recovery-point-offset-checkpoint"), recovery);
    char path[1024];
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", g_dirs[0]);
    struct log_offset_checkpoint_entry *entries;
    size_t n;
    assert_int_equal(log_offset_checkpoint_read(path, &entries, &n), 0);
    assert_int_equal(n, 11);
    log_offset_checkpoint_free(entries, n);
    log_manager_close(m, true);
}

/* Threads whose first uses of a deferred log race: one load, every read
 * answers with the data. */
static void *read_deferred(void *arg)
{
    struct partition_log *log = arg;
    struct log_read_result r;
    int16_t code = partition_log_read(log, 0, 1 << 20, INT64_MAX, &r);
    if (code == KAFKA_ERR_NONE && r.len > 0)
        close(r.fd);
    return (void *)(intptr_t)(code == KAFKA_ERR_NONE && r.len > 0 && r.log_end_offset == 20);
}

static void test_deferred_load_races(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    char err[256];
    struct partition_log *log;
    assert_int_equal(log_manager_create(m, "orders", 0, NULL, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    append(log, 10);
    partition_log_close(log);
    log_manager_close(m, true);

    m = open_manager(&defaults);
    log = log_manager_get(m, "orders", 0);
    assert_false(partition_log_is_loaded(log));
    pthread_t threads[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, read_deferred, log), 0);
    for (int i = 0; i < 6; i++) {
        void *ok = NULL;
        pthread_join(threads[i], &ok);
        assert_true(ok != NULL);
    }
    assert_true(partition_log_is_loaded(log));
    assert_int_equal(partition_log_segment_count(log), 1);
    append(log, 1);
    assert_int_equal(partition_log_end_offset(log), 22);
    partition_log_close(log);
    log_manager_close(m, true);
}

/* A kill -9 between a partition dir's creation and partition.metadata's
 * rename leaves a log without a topic id. Loaded at the next start, it
 * gets the id when the partition is hosted again (Kafka's
 * assignTopicId): a follower fetches by topic id, and without it the
 * leader answered UNKNOWN_TOPIC_ID forever. */
static void test_loaded_log_without_topic_id_gets_it(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    uint8_t id[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
    char err[256];
    struct partition_log *log;
    assert_int_equal(log_manager_create(m, "orders", 3, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    append(log, 2);
    partition_log_close(log);
    log_manager_close(m, false);
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s/orders-3", exists(g_dirs[0], "orders-3") ? g_dirs[0] : g_dirs[1]);
    snprintf(path, sizeof path, "%s/partition.metadata", dir);
    assert_int_equal(unlink(path), 0);

    m = open_manager(&defaults);
    log = log_manager_get(m, "orders", 3);
    assert_non_null(log);
    uint8_t back[16];
    assert_int_not_equal(partition_log_topic_id(log, back), 0);
    partition_log_close(log);
    assert_int_equal(log_manager_create(m, "orders", 3, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_topic_id(log, back), 0);
    assert_memory_equal(back, id, 16);
    assert_int_equal(partition_log_end_offset(log), 4);
    partition_log_close(log);
    log_manager_close(m, true);
    assert_true(exists(dir, "partition.metadata"));
}

/* A marker that cannot be removed (here a directory of that name) would
 * make a later crash pass for a clean stop: the open refuses, naming it. */
static void test_marker_not_removable_refuses_open(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    log_manager_close(m, true);
    char marker[1024], inside[1100];
    snprintf(marker, sizeof marker, "%s/.kafka_cleanshutdown", g_dirs[0]);
    assert_int_equal(unlink(marker), 0);
    assert_int_equal(mkdir(marker, 0755), 0);
    snprintf(inside, sizeof inside, "%s/keep", marker);
    FILE *f = fopen(inside, "w");
    assert_non_null(f);
    fclose(f);
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    char err[512] = "";
    m = NULL;
    assert_int_not_equal(log_manager_open(g_dir_list, 2, &defaults, &mcfg, &m, err, sizeof err), 0);
    assert_null(m);
    assert_non_null(strstr(err, ".kafka_cleanshutdown"));
    assert_non_null(strstr(err, "durably"));
}

static void test_unclean_recovery(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    struct partition_log *log;
    char err[256];
    assert_int_equal(log_manager_create(m, "events", 3, NULL, NULL, &log, err, sizeof err), 0);
    append(log, 5);
    char segment[1024];
    snprintf(segment, sizeof segment, "%s/00000000000000000000.log", partition_log_dir(log));
    partition_log_close(log);
    log_manager_close(m, false);
    assert_false(exists(g_dirs[0], ".kafka_cleanshutdown"));
    int64_t good = test_file_size(segment);
    FILE *fp = fopen(segment, "ab");
    fputs("torn write torn write torn write torn write torn write torn write", fp);
    fclose(fp);

    m = open_manager(&defaults);
    log = log_manager_get(m, "events", 3);
    assert_non_null(log);
    assert_int_equal(partition_log_end_offset(log), 10);
    assert_int_equal(test_file_size(segment), good);
    partition_log_close(log);
    log_manager_close(m, true);
}

static void test_delete_and_retention(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    defaults.segment_bytes = 1024;
    defaults.retention_bytes = 2000;
    defaults.retention_ms = -1;
    struct log_manager *m = open_manager(&defaults);
    struct partition_log *log;
    char err[256];
    assert_int_equal(log_manager_create(m, "gone", 0, NULL, NULL, &log, err, sizeof err), 0);
    append(log, 30);
    int before = partition_log_segment_count(log);
    log_manager_maintain(m, clock_wall_ms(), true);
    assert_true(partition_log_segment_count(log) < before);
    assert_true(partition_log_start_offset(log) > 0);
    int64_t start = partition_log_start_offset(log);
    char pdir[1024];
    snprintf(pdir, sizeof pdir, "%s", partition_log_dir(log));
    /* The caller's reference keeps the log usable after delete, its
     * directory moved aside at once... */
    assert_int_equal(log_manager_delete(m, "gone", 0), 0);
    assert_null(log_manager_get(m, "gone", 0));
    assert_int_not_equal(access(pdir, F_OK), 0);
    assert_int_equal(deleted_dirs(), 1);
    /* ...and the directory goes with the last reference. */
    partition_log_close(log);
    assert_int_equal(deleted_dirs(), 0);
    assert_int_equal(log_manager_delete(m, "gone", 0), -1);

    /* Start offsets are checkpointed and restored. */
    assert_int_equal(log_manager_create(m, "kept", 0, NULL, NULL, &log, err, sizeof err), 0);
    append(log, 30);
    assert_int_equal(partition_log_delete_records_before(log, 7), 0);
    partition_log_close(log);
    log_manager_close(m, true);
    m = open_manager(&defaults);
    log = log_manager_get(m, "kept", 0);
    assert_non_null(log);
    assert_int_equal(partition_log_start_offset(log), 7);
    /* Written at once, a moved start offset survives an unclean stop too. */
    assert_int_equal(partition_log_delete_records_before(log, 12), 0);
    assert_int_equal(log_manager_write_start_offsets(m), 0);
    partition_log_close(log);
    log_manager_close(m, false);
    m = open_manager(&defaults);
    log = log_manager_get(m, "kept", 0);
    assert_non_null(log);
    assert_int_equal(partition_log_start_offset(log), 12);
    partition_log_close(log);
    log_manager_close(m, true);
    (void)start;
}

static void test_background_thread(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    defaults.flush_ms = 0;
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.flush_scheduler_interval_ms = 10;
    mcfg.flush_offset_checkpoint_interval_ms = 10;
    struct log_manager *m;
    char err[256];
    assert_int_equal(log_manager_open(g_dir_list, 2, &defaults, &mcfg, &m, err, sizeof err), 0);
    struct partition_log *log;
    assert_int_equal(log_manager_create(m, "bg", 0, NULL, NULL, &log, err, sizeof err), 0);
    append(log, 3);
    /* flush.ms = 0: the thread flushes and moves the recovery point. */
    for (int i = 0; i < 200 && partition_log_recovery_point(log) != 6; i++)
        usleep(10000);
    assert_int_equal(partition_log_recovery_point(log), 6);
    partition_log_close(log);
    log_manager_close(m, true);
}

/* A roll's background flush moves the recovery point, and the checkpoint
 * file records it at once instead of at the next checkpoint interval. */
static void test_roll_flush_checkpointed(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    defaults.segment_bytes = 2048;
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    mcfg.roll_check_interval_ms = 0;
    mcfg.flush_offset_checkpoint_interval_ms = INT64_MAX;
    struct log_manager *m;
    char err[256];
    assert_int_equal(log_manager_open(g_dir_list, 2, &defaults, &mcfg, &m, err, sizeof err), 0);
    struct partition_log *log;
    assert_int_equal(log_manager_create(m, "rolled", 0, NULL, NULL, &log, err, sizeof err), 0);
    append(log, 20);
    assert_true(partition_log_segment_count(log) >= 2);
    assert_int_equal(partition_log_recovery_point(log), 0);
    log_manager_maintain(m, clock_wall_ms(), false);
    int64_t rp = partition_log_recovery_point(log);
    assert_true(rp > 0 && rp < partition_log_end_offset(log));

    char path[1024];
    snprintf(path, sizeof path, "%s/../recovery-point-offset-checkpoint", partition_log_dir(log));
    struct log_offset_checkpoint_entry *entries = NULL;
    size_t n = 0;
    assert_int_equal(log_offset_checkpoint_read(path, &entries, &n), 0);
    int64_t recorded = -1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(entries[i].topic, "rolled") == 0 && entries[i].partition == 0)
            recorded = entries[i].offset;
    log_offset_checkpoint_free(entries, n);
    assert_int_equal(recorded, rp);
    partition_log_close(log);
    log_manager_close(m, true);
}

/* Where a partition's dir lives (g_dirs index), or -1. */
/* The high watermarks written to replication-offset-checkpoint come back
 * at open, capped at the log end, and hold (not the log end) when the
 * replica layer stops tracking; a partition not in the file tracks its end. */
static void test_high_watermark_checkpoint(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    char err[256];
    struct partition_log *a, *b, *c;
    assert_int_equal(log_manager_create(m, "hw", 0, NULL, NULL, &a, err, sizeof err), 0);
    assert_int_equal(log_manager_create(m, "hw", 1, NULL, NULL, &b, err, sizeof err), 0);
    append(a, 5); /* 10 records */
    append(b, 5);
    partition_log_set_high_watermark_tracks_end(a, false);
    partition_log_set_high_watermark_tracks_end(b, false);
    /* Stopping tracking takes the log end. */
    assert_int_equal(partition_log_high_watermark(a), 10);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/..", partition_log_dir(a));
    char path[1100];
    snprintf(path, sizeof path, "%s/replication-offset-checkpoint", dir);
    char bpath[1100];
    snprintf(bpath, sizeof bpath, "%s/../replication-offset-checkpoint", partition_log_dir(b));
    partition_log_close(a);
    partition_log_close(b);
    log_manager_close(m, true);

    /* The clean close wrote both at 10. */
    struct log_offset_checkpoint_entry *entries = NULL;
    size_t n = 0;
    assert_int_equal(log_offset_checkpoint_read(path, &entries, &n), 0);
    bool seen = false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(entries[i].topic, "hw") == 0 && entries[i].partition == 0) {
            assert_int_equal(entries[i].offset, 10);
            seen = true;
        }
    assert_true(seen);
    log_offset_checkpoint_free(entries, n);

    /* Hand-written values: 4 for hw-0, past the end for hw-1 (a log cut
     * short by a crash), whichever dir each lives in. */
    struct log_offset_checkpoint_entry e[] = {{"hw", 0, 4}, {"hw", 1, 99}};
    assert_int_equal(log_offset_checkpoint_write(path, e, 2), 0);
    if (strcmp(path, bpath) != 0)
        assert_int_equal(log_offset_checkpoint_write(bpath, e, 2), 0);
    m = open_manager(&defaults);
    assert_int_equal(log_manager_create(m, "hw", 2, NULL, NULL, &c, err, sizeof err), 0);
    a = log_manager_get(m, "hw", 0);
    b = log_manager_get(m, "hw", 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(partition_log_high_watermark(a), 4);
    assert_int_equal(partition_log_high_watermark(b), 10);
    assert_false(partition_log_high_watermark_tracks_end(a));
    assert_true(partition_log_high_watermark_tracks_end(c));
    /* A follower or a leader with other ISR members keeps the restored value. */
    partition_log_set_high_watermark_tracks_end(a, false);
    assert_int_equal(partition_log_high_watermark(a), 4);
    /* Led alone: it follows the log end again. */
    partition_log_set_high_watermark_tracks_end(a, true);
    assert_int_equal(partition_log_high_watermark(a), 10);
    partition_log_close(a);
    partition_log_close(b);
    partition_log_close(c);
    log_manager_close(m, true);
}

static int dir_of(const char *name)
{
    for (int i = 0; i < 2; i++)
        if (exists(g_dirs[i], name))
            return i;
    return -1;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* A partition dir on disk that is not in the table (it failed to load at
 * start-up) is reopened where it is, with its tail rescanned; a dir holding
 * another topic id is refused and left alone. */
static void test_create_over_unloaded_dir(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    uint8_t id[16] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    uint8_t other_id[16] = {9};
    char err[256];
    struct log_manager *m = open_manager(&defaults);
    struct partition_log *log;
    /* Put "orders-3" in the second dir by loading the first one. */
    assert_int_equal(log_manager_create(m, "filler", 0, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    partition_log_close(log);
    assert_int_equal(log_manager_create(m, "orders", 3, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    append(log, 3);
    partition_log_close(log);
    log_manager_close(m, true);
    int home = dir_of("orders-3");
    assert_int_equal(home, 1);

    /* Hide it while the manager opens, then put it back with a torn tail.
     * The filler goes too, so the first dir is the emptier one and a new
     * log would be placed there. */
    char pdir[1100], hidden[1100], seg[1200], filler[1100], filler_hidden[1100];
    snprintf(pdir, sizeof pdir, "%s/orders-3", g_dirs[home]);
    snprintf(hidden, sizeof hidden, "%s/hidden", g_root);
    snprintf(seg, sizeof seg, "%s/%020d.log", pdir, 0);
    snprintf(filler, sizeof filler, "%s/filler-0", g_dirs[0]);
    snprintf(filler_hidden, sizeof filler_hidden, "%s/filler-hidden", g_root);
    assert_int_equal(rename(pdir, hidden), 0);
    assert_int_equal(rename(filler, filler_hidden), 0);
    m = open_manager(&defaults);
    assert_null(log_manager_get(m, "orders", 3));
    assert_int_equal(rename(hidden, pdir), 0);
    int64_t whole = file_size(seg);
    FILE *fp = fopen(seg, "ab");
    assert_non_null(fp);
    fputs("half a batch", fp);
    fclose(fp);

    assert_int_equal(log_manager_create(m, "orders", 3, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(log), 6);
    assert_int_equal(file_size(seg), whole);
    append(log, 1);
    assert_int_equal(partition_log_end_offset(log), 8);
    partition_log_close(log);
    /* Reopened in place: no second copy in the emptier dir. */
    assert_false(exists(g_dirs[0], "orders-3"));

    /* The same dir under another topic id (a recreated topic) is refused. */
    log_manager_close(m, true);
    assert_int_equal(rename(pdir, hidden), 0);
    m = open_manager(&defaults);
    assert_int_equal(rename(hidden, pdir), 0);
    assert_int_equal(log_manager_create(m, "orders", 3, other_id, NULL, &log, err, sizeof err),
                     KAFKA_ERR_KAFKA_STORAGE_ERROR);
    assert_non_null(strstr(err, "topic id"));
    assert_true(exists(g_dirs[home], "orders-3"));
    assert_true(file_size(seg) > 0);
    log_manager_close(m, true);
}

/* What a crash can leave of partitions created without per-file syncs
 * (their first flush syncs the directory): a bare directory, one whose
 * small files are empty, one with only an empty segment file and a temp
 * file. The unclean open loads them and the create (the metadata replay)
 * completes each: topic id written, records taken. */
static void make_file(const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
}

static void test_half_made_partition_dirs_complete(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    uint8_t id[16] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    char dirs[3][1100];
    const char *names[3] = {"bare-0", "empty-files-0", "segment-only-0"};
    assert_int_equal(mkdir(g_dirs[0], 0755), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/%s", g_dirs[0], names[i]);
        assert_int_equal(mkdir(dirs[i], 0755), 0);
    }
    make_file(dirs[1], "partition.metadata");
    make_file(dirs[1], "leader-epoch-checkpoint");
    make_file(dirs[2], "00000000000000000000.log");
    make_file(dirs[2], "partition.metadata.tmp");

    struct log_manager *m = open_manager(&defaults);
    char err[256];
    const char *topics[3] = {"bare", "empty-files", "segment-only"};
    for (int i = 0; i < 3; i++) {
        struct partition_log *log;
        assert_int_equal(log_manager_create(m, topics[i], 0, id, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
        uint8_t back[16];
        assert_int_equal(partition_log_topic_id(log, back), 0);
        assert_memory_equal(back, id, 16);
        assert_int_equal(partition_log_end_offset(log), 0);
        append(log, 1);
        assert_int_equal(partition_log_flush(log), KAFKA_ERR_NONE);
        assert_int_equal(partition_log_end_offset(log), 2);
        partition_log_close(log);
    }
    log_manager_close(m, true);
    m = open_manager(&defaults);
    for (int i = 0; i < 3; i++) {
        struct partition_log *log = log_manager_get(m, topics[i], 0);
        assert_non_null(log);
        assert_int_equal(partition_log_end_offset(log), 2);
        partition_log_close(log);
    }
    log_manager_close(m, true);
}

/* A topic deleted and created again under the same name while a reference
 * to the old log is still held (a request in flight, a cleaner pass): the
 * new log is made at once, and the old reference's last close removes only
 * the old directory. Leftovers of deletions are removed at start-up. */
static void test_recreate_while_old_reference_held(void **state)
{
    (void)state;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager *m = open_manager(&defaults);
    uint8_t old_id[16], new_id[16];
    memset(old_id, 0xa1, sizeof old_id);
    memset(new_id, 0xb2, sizeof new_id);
    struct partition_log *old_log, *new_log;
    char err[256] = "";
    assert_int_equal(log_manager_create(m, "churn", 0, old_id, NULL, &old_log, err, sizeof err), KAFKA_ERR_NONE);
    append(old_log, 3);
    assert_int_equal(log_manager_delete(m, "churn", 0), 0);
    if (log_manager_create(m, "churn", 0, new_id, NULL, &new_log, err, sizeof err) != KAFKA_ERR_NONE)
        fail_msg("recreate while the old log is referenced: %s", err);
    append(new_log, 2);
    int64_t new_end = partition_log_end_offset(new_log);
    assert_true(new_end > 0);
    char pdir[1024];
    snprintf(pdir, sizeof pdir, "%s", partition_log_dir(new_log));
    partition_log_close(old_log);
    assert_int_equal(deleted_dirs(), 0);
    assert_true(exists(pdir, "partition.metadata"));
    assert_true(exists(pdir, "00000000000000000000.log"));
    assert_int_equal(partition_log_end_offset(new_log), new_end);
    partition_log_close(new_log);
    log_manager_close(m, true);

    /* A deletion the process did not finish (killed with a reference held). */
    char leftover[1200];
    snprintf(leftover, sizeof leftover, "%s/churn-1.00000000000000ab-delete", g_dirs[0]);
    assert_int_equal(mkdir(leftover, 0755), 0);
    char file[1300];
    snprintf(file, sizeof file, "%s/00000000000000000000.log", leftover);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    m = open_manager(&defaults);
    assert_int_equal(deleted_dirs(), 0);
    assert_null(log_manager_get(m, "churn", 1));
    new_log = log_manager_get(m, "churn", 0);
    assert_non_null(new_log);
    assert_int_equal(partition_log_end_offset(new_log), new_end);
    partition_log_close(new_log);
    log_manager_close(m, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_reopen_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loaded_log_without_topic_id_gets_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_reopen_defers_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_start_keeps_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_start_rewrites_incomplete_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_load_races, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclean_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_marker_not_removable_refuses_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_and_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recreate_while_old_reference_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_background_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roll_flush_checkpointed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_over_unloaded_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_high_watermark_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_made_partition_dirs_complete, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
