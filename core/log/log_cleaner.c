/* The log cleaner of a log manager: its thread, the per-dir
 * cleaner-offset-checkpoint files and one pass over the compacted logs. */
#include "log/log_cleaner.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/log_checkpoint.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "util/clock.h"
#include "util/logger.h"

struct cleaner_entry {
    char *topic;
    int32_t partition;
    int64_t first_dirty;
};

/* run_lock serialises passes (the thread and callers of run_once) and
 * guards entries; lock guards stop and pairs with wake. */
struct log_cleaner {
    struct log_manager *manager;
    struct log_cleaner_config cfg;
    pthread_mutex_t run_lock;
    struct cleaner_entry *entries;
    size_t count, cap;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    bool thread_running;
    pthread_t thread;
};

void log_cleaner_config_defaults(struct log_cleaner_config *cfg)
{
    cfg->enable = true;
    cfg->backoff_ms = 15000;
    cfg->dedupe_buffer_bytes = 134217728;
    cfg->load_factor = 0.9;
}

static struct cleaner_entry *entry_find(struct log_cleaner *c, const char *topic,
                                        int32_t partition)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].partition == partition && strcmp(c->entries[i].topic, topic) == 0)
            return &c->entries[i];
    return NULL;
}

static int entry_set(struct log_cleaner *c, const char *topic, int32_t partition, int64_t offset)
{
    struct cleaner_entry *e = entry_find(c, topic, partition);
    if (e) {
        e->first_dirty = offset;
        return 0;
    }
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct cleaner_entry *grown = realloc(c->entries, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        c->entries = grown;
        c->cap = cap;
    }
    char *copy = strdup(topic);
    if (!copy)
        return ENOMEM;
    c->entries[c->count++] = (struct cleaner_entry){copy, partition, offset};
    return 0;
}

static char *checkpoint_path(const char *dir)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, LOG_CLEANER_CHECKPOINT_FILE) < 0)
        return NULL;
    return path;
}

static void load_checkpoints(struct log_cleaner *c)
{
    for (size_t d = 0; d < log_manager_dir_count(c->manager); d++) {
        char *path = checkpoint_path(log_manager_dir_path(c->manager, d));
        struct log_offset_checkpoint_entry *e = NULL;
        size_t n = 0;
        int rc = path ? log_offset_checkpoint_read(path, &e, &n) : ENOMEM;
        if (rc != 0 && rc != ENOENT)
            logger_warn("log", "ignoring %s: %s", path ? path : "cleaner checkpoint",
                        rc == EINVAL ? "malformed" : strerror(rc));
        for (size_t i = 0; rc == 0 && i < n; i++)
            entry_set(c, e[i].topic, e[i].partition, e[i].offset);
        if (rc == 0)
            log_offset_checkpoint_free(e, n);
        free(path);
    }
}

/* One file per dir with the compacted partitions it holds. Caller holds run_lock. */
static void write_checkpoints(struct log_cleaner *c, const struct log_manager_partition *parts,
                              size_t n)
{
    struct log_offset_checkpoint_entry *out = calloc(n + 1, sizeof *out);
    if (!out)
        return;
    for (size_t d = 0; d < log_manager_dir_count(c->manager); d++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const struct cleaner_entry *e = entry_find(c, parts[i].topic, parts[i].partition);
            if (parts[i].dir_index != d || !e || e->first_dirty < 0)
                continue;
            out[k++] = (struct log_offset_checkpoint_entry){parts[i].topic, parts[i].partition,
                                                            e->first_dirty};
        }
        char *path = checkpoint_path(log_manager_dir_path(c->manager, d));
        int rc = path ? log_offset_checkpoint_write(path, out, k) : ENOMEM;
        if (rc != 0)
            logger_warn("log", "cannot write %s: %s", path ? path : "cleaner checkpoint",
                        strerror(rc));
        free(path);
    }
    free(out);
}

static bool stopping(struct log_cleaner *c)
{
    pthread_mutex_lock(&c->lock);
    bool stop = c->stop;
    pthread_mutex_unlock(&c->lock);
    return stop;
}

/* Drop the entries of partitions no longer hosted: a topic created again
 * under the same name must start with everything dirty. Caller holds
 * run_lock. Returns true when any went. */
static bool forget_missing(struct log_cleaner *c, const struct log_manager_partition *parts,
                           size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->count; i++) {
        bool present = false;
        for (size_t j = 0; j < n && !present; j++)
            present = parts[j].partition == c->entries[i].partition &&
                      strcmp(parts[j].topic, c->entries[i].topic) == 0;
        if (present)
            c->entries[kept++] = c->entries[i];
        else
            free(c->entries[i].topic);
    }
    bool dropped = kept != c->count;
    c->count = kept;
    return dropped;
}

int log_cleaner_run_once(struct log_cleaner *c, int64_t now_ms, bool force)
{
    struct log_manager_partition *parts;
    size_t n;
    if (log_manager_list(c->manager, &parts, &n) != 0)
        return 0;
    struct log_clean_options opt = {
        .dedupe_buffer_bytes = c->cfg.dedupe_buffer_bytes > 0 ? (size_t)c->cfg.dedupe_buffer_bytes
                                                              : 0,
        .load_factor = c->cfg.load_factor,
        .force = force,
    };
    int cleaned = 0;
    bool changed = false;
    pthread_mutex_lock(&c->run_lock);
    for (size_t i = 0; i < n && !stopping(c); i++) {
        struct log_config cfg;
        partition_log_get_config(parts[i].log, &cfg);
        if (!cfg.cleanup_compact || partition_log_is_offline(parts[i].log))
            continue;
        const struct cleaner_entry *e = entry_find(c, parts[i].topic, parts[i].partition);
        int64_t first_dirty = e ? e->first_dirty : -1;
        struct log_clean_result res;
        int64_t started = clock_mono_ns();
        int rc = partition_log_clean(parts[i].log, first_dirty, now_ms, &opt, &res);
        if (rc != 0) {
            logger_warn("log", "%s-%" PRId32 ": cleaning failed: %s", parts[i].topic,
                        parts[i].partition, strerror(rc));
            continue;
        }
        if (res.first_dirty_offset != first_dirty) {
            entry_set(c, parts[i].topic, parts[i].partition, res.first_dirty_offset);
            changed = true;
        }
        if (!res.cleaned)
            continue;
        cleaned++;
        logger_info("log",
                    "%s-%" PRId32 ": cleaned up to offset %" PRId64 " (dirty ratio %.2f): %" PRId64
                    " -> %" PRId64 " bytes, %d segments rewritten in %.3f s",
                    parts[i].topic, parts[i].partition, res.first_dirty_offset, res.dirty_ratio,
                    res.bytes_before, res.bytes_after, res.segments_rewritten,
                    (double)(clock_mono_ns() - started) / 1e9);
    }
    changed |= forget_missing(c, parts, n);
    if (changed)
        write_checkpoints(c, parts, n);
    pthread_mutex_unlock(&c->run_lock);
    log_manager_list_free(parts, n);
    return cleaned;
}

int64_t log_cleaner_first_dirty(struct log_cleaner *c, const char *topic, int32_t partition)
{
    pthread_mutex_lock(&c->run_lock);
    const struct cleaner_entry *e = entry_find(c, topic, partition);
    int64_t offset = e ? e->first_dirty : -1;
    pthread_mutex_unlock(&c->run_lock);
    return offset;
}

static void *cleaner_thread(void *arg)
{
    struct log_cleaner *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        pthread_mutex_unlock(&c->lock);
        int cleaned = log_cleaner_run_once(c, clock_wall_ms(), false);
        pthread_mutex_lock(&c->lock);
        /* Back off only when nothing was due, as Kafka's cleaner does. */
        if (cleaned > 0 || c->stop)
            continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t wait = c->cfg.backoff_ms > 0 ? c->cfg.backoff_ms : 1;
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&c->wake, &c->lock, &ts);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int log_cleaner_create(struct log_manager *m, const struct log_cleaner_config *cfg,
                       bool start_thread, struct log_cleaner **out)
{
    struct log_cleaner *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    c->manager = m;
    c->cfg = *cfg;
    pthread_mutex_init(&c->run_lock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    load_checkpoints(c);
    if (cfg->enable && start_thread) {
        int rc = pthread_create(&c->thread, NULL, cleaner_thread, c);
        if (rc != 0) {
            log_cleaner_destroy(c);
            return rc;
        }
        c->thread_running = true;
    }
    *out = c;
    return 0;
}

void log_cleaner_destroy(struct log_cleaner *c)
{
    if (!c)
        return;
    if (c->thread_running) {
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
    }
    for (size_t i = 0; i < c->count; i++)
        free(c->entries[i].topic);
    free(c->entries);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->run_lock);
    free(c);
}
