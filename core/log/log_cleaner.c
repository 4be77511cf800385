/* The log cleaner of a log manager: its threads, which log each takes next,
 * the per-dir cleaner-offset-checkpoint files and the one-shot pass over
 * every compacted log used by tests and tools. */
#include "log/log_cleaner.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/log_checkpoint.h"
#include "log/log_manager.h"
#include "log/log_throttler.h"
#include "log/partition_log.h"
#include "util/clock.h"
#include "util/logger.h"

/* Cleaner state of one partition. */
struct cleaner_entry {
    char *topic;
    int32_t partition;
    int64_t first_dirty;    /* -1: never cleaned (not checkpointed) */
    bool in_progress;       /* a pass holds the log */
    int64_t retry_after_ms; /* monotonic; threads skip the log until then */
    uint64_t born;          /* entries_made when it was added */
};

/* cfg and manager are set once by create. lock guards entries and stop;
 * `released` is signalled when a pass gives a log back, `wake` ends a
 * thread's backoff early (stop). ckpt_lock serialises checkpoint writes, so
 * the file written last holds every entry as of its writing (writers copy
 * the entries under it). Lock order: ckpt_lock before lock, lock before a
 * log's write lock; the manager's lock is never taken under lock. */
struct log_cleaner {
    struct log_manager *manager;
    struct log_cleaner_config cfg;
    pthread_mutex_t lock;
    pthread_cond_t released;
    pthread_cond_t wake;
    struct cleaner_entry *entries;
    size_t count, cap;
    uint64_t entries_made; /* entries ever added */
    bool stop;
    pthread_mutex_t ckpt_lock;
    pthread_t *threads;
    size_t thread_count;
    struct log_throttler throttle; /* shared by every pass */
};

void log_cleaner_config_defaults(struct log_cleaner_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->enable = true;
    cfg->threads = 1;
    cfg->backoff_ms = 15000;
    cfg->dedupe_buffer_bytes = 134217728;
    cfg->load_factor = 0.9;
    cfg->io_max_bytes_per_second = DBL_MAX;
}

/* ---- entries (caller holds lock) ---- */

static struct cleaner_entry *entry_find(struct log_cleaner *c, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].partition == partition && strcmp(c->entries[i].topic, topic) == 0)
            return &c->entries[i];
    return NULL;
}

/* The partition's entry, added (never cleaned) when missing; NULL: ENOMEM. */
static struct cleaner_entry *entry_get(struct log_cleaner *c, const char *topic, int32_t partition)
{
    struct cleaner_entry *e = entry_find(c, topic, partition);
    if (e)
        return e;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct cleaner_entry *grown = realloc(c->entries, cap * sizeof *grown);
        if (!grown)
            return NULL;
        c->entries = grown;
        c->cap = cap;
    }
    char *copy = strdup(topic);
    if (!copy)
        return NULL;
    e = &c->entries[c->count++];
    *e = (struct cleaner_entry){.topic = copy, .partition = partition, .first_dirty = -1, .born = c->entries_made++};
    return e;
}

/* Drop the entries of partitions no longer hosted: a topic created again
 * under the same name must start with everything dirty. parts was listed
 * after entries_made was `listed_at`: an entry added since may be of a
 * partition created after the listing, and stays. A log in a pass keeps
 * its entry until the pass ends. Returns true when any went. */
static bool forget_missing(struct log_cleaner *c, const struct log_manager_partition *parts, size_t n,
                           uint64_t listed_at)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->count; i++) {
        bool present = c->entries[i].in_progress || c->entries[i].born >= listed_at;
        for (size_t j = 0; j < n && !present; j++)
            present = parts[j].partition == c->entries[i].partition && strcmp(parts[j].topic, c->entries[i].topic) == 0;
        if (present)
            c->entries[kept++] = c->entries[i];
        else
            free(c->entries[i].topic);
    }
    bool dropped = kept != c->count;
    c->count = kept;
    return dropped;
}

/* The manager's partitions, and entries_made just before they were listed. */
static int list_partitions(struct log_cleaner *c, struct log_manager_partition **parts, size_t *n, uint64_t *listed_at)
{
    pthread_mutex_lock(&c->lock);
    *listed_at = c->entries_made;
    pthread_mutex_unlock(&c->lock);
    return log_manager_list(c->manager, parts, n);
}

/* ---- checkpoints ---- */

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
        for (size_t i = 0; rc == 0 && i < n; i++) {
            struct cleaner_entry *entry = entry_get(c, e[i].topic, e[i].partition);
            if (entry)
                entry->first_dirty = e[i].offset;
        }
        if (rc == 0)
            log_offset_checkpoint_free(e, n);
        free(path);
    }
}

/* One file per dir with the compacted partitions it holds now. Passes run
 * beside this: each file is built from the entries as they are under
 * ckpt_lock, so a later write never carries an older entry than an
 * earlier one. */
static void write_checkpoints(struct log_cleaner *c)
{
    pthread_mutex_lock(&c->ckpt_lock);
    struct log_manager_partition *parts;
    size_t n;
    if (log_manager_list(c->manager, &parts, &n) != 0) {
        pthread_mutex_unlock(&c->ckpt_lock);
        return;
    }
    struct log_offset_checkpoint_entry *out = calloc(n + 1, sizeof *out);
    for (size_t d = 0; out && d < log_manager_dir_count(c->manager); d++) {
        size_t k = 0;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < n; i++) {
            const struct cleaner_entry *e = entry_find(c, parts[i].topic, parts[i].partition);
            if (parts[i].dir_index != d || !e || e->first_dirty < 0)
                continue;
            out[k++] = (struct log_offset_checkpoint_entry){parts[i].topic, parts[i].partition, e->first_dirty};
        }
        pthread_mutex_unlock(&c->lock);
        char *path = checkpoint_path(log_manager_dir_path(c->manager, d));
        int rc = path ? log_offset_checkpoint_write(path, out, k) : ENOMEM;
        if (rc != 0)
            logger_warn("log", "cannot write %s: %s", path ? path : "cleaner checkpoint", strerror(rc));
        free(path);
    }
    free(out);
    log_manager_list_free(parts, n);
    pthread_mutex_unlock(&c->ckpt_lock);
}

/* ---- one pass over one log ---- */

size_t log_cleaner_dedupe_bytes_per_pass(const struct log_cleaner *c)
{
    if (c->cfg.dedupe_buffer_bytes <= 0)
        return 0;
    int64_t share = c->cfg.dedupe_buffer_bytes / (c->cfg.threads > 1 ? c->cfg.threads : 1);
    return share > (int64_t)(SIZE_MAX / 2) ? SIZE_MAX / 2 : (size_t)share;
}

/* Clean the log of part, which the caller marked in progress, and give it
 * back. was_due: the caller took it as due. Returns true when the pass
 * moved the first dirty offset (the checkpoint needs writing); *cleaned
 * tells whether it rewrote the log. */
static bool clean_held(struct log_cleaner *c, const struct log_manager_partition *part, int64_t first_dirty,
                       int64_t now_ms, bool force, bool was_due, bool *cleaned)
{
    struct log_clean_options opt = {
        .dedupe_buffer_bytes = log_cleaner_dedupe_bytes_per_pass(c),
        .load_factor = c->cfg.load_factor,
        .force = force,
        .throttler = c->throttle.enabled ? &c->throttle : NULL,
    };
    log_cleaner_pass_hook hook = c->cfg.pass_hook; /* cfg never changes after create */
    void *hook_arg = c->cfg.pass_hook_arg;
    if (hook)
        hook(hook_arg, part->topic, part->partition, true);
    struct log_clean_result res;
    int64_t started = clock_mono_ns();
    int rc = partition_log_clean(part->log, first_dirty, now_ms, &opt, &res);
    if (hook)
        hook(hook_arg, part->topic, part->partition, false);
    if (rc != 0)
        logger_warn("log", "%s-%" PRId32 ": cleaning failed: %s", part->topic, part->partition, strerror(rc));
    else if (res.cleaned)
        logger_info("log",
                    "%s-%" PRId32 ": cleaned up to offset %" PRId64 " (dirty ratio %.2f): %" PRId64 " -> %" PRId64
                    " bytes, %d segments rewritten in %.3f s",
                    part->topic, part->partition, res.first_dirty_offset, res.dirty_ratio, res.bytes_before,
                    res.bytes_after, res.segments_rewritten, (double)(clock_mono_ns() - started) / 1e9);
    *cleaned = rc == 0 && res.cleaned;

    bool changed = false;
    pthread_mutex_lock(&c->lock);
    struct cleaner_entry *e = entry_find(c, part->topic, part->partition);
    if (e) {
        if (rc == 0 && res.first_dirty_offset != e->first_dirty) {
            e->first_dirty = res.first_dirty_offset;
            changed = true;
        }
        /* A failed pass, or one that found it could do nothing (dedupe
         * buffer too small, the log changed under it), must not keep the
         * threads from the other logs. */
        if (rc != 0 || (was_due && !*cleaned))
            e->retry_after_ms = clock_mono_ms() + (c->cfg.backoff_ms > 0 ? c->cfg.backoff_ms : 1);
        e->in_progress = false;
    }
    pthread_cond_broadcast(&c->released);
    pthread_mutex_unlock(&c->lock);
    return changed;
}

static bool stopping(struct log_cleaner *c)
{
    pthread_mutex_lock(&c->lock);
    bool stop = c->stop;
    pthread_mutex_unlock(&c->lock);
    return stop;
}

int log_cleaner_run_once(struct log_cleaner *c, int64_t now_ms, bool force)
{
    struct log_manager_partition *parts;
    size_t n;
    uint64_t listed_at;
    if (list_partitions(c, &parts, &n, &listed_at) != 0)
        return 0;
    int cleaned = 0;
    bool changed = false;
    for (size_t i = 0; i < n && !stopping(c); i++) {
        struct log_config cfg;
        partition_log_get_config(parts[i].log, &cfg);
        if (!cfg.cleanup_compact || partition_log_is_offline(parts[i].log))
            continue;
        pthread_mutex_lock(&c->lock);
        struct cleaner_entry *e = entry_get(c, parts[i].topic, parts[i].partition);
        while (e && e->in_progress && !c->stop) {
            pthread_cond_wait(&c->released, &c->lock);
            e = entry_get(c, parts[i].topic, parts[i].partition); /* entries may move */
        }
        bool skip = !e || c->stop;
        int64_t first_dirty = e ? e->first_dirty : -1;
        if (!skip)
            e->in_progress = true;
        pthread_mutex_unlock(&c->lock);
        if (skip)
            continue;
        bool done = false;
        changed |= clean_held(c, &parts[i], first_dirty, now_ms, force, false, &done);
        cleaned += done;
    }
    pthread_mutex_lock(&c->lock);
    changed |= forget_missing(c, parts, n, listed_at);
    pthread_mutex_unlock(&c->lock);
    log_manager_list_free(parts, n);
    if (changed)
        write_checkpoints(c);
    return cleaned;
}

/* Whether candidate a should be cleaned before b. */
static bool filthier(const struct log_clean_dirtiness *a, const struct log_clean_dirtiness *b)
{
    if (a->overdue != b->overdue)
        return a->overdue;
    return a->dirty_ratio > b->dirty_ratio;
}

bool log_cleaner_clean_filthiest(struct log_cleaner *c, int64_t now_ms, bool *cleaned)
{
    if (cleaned)
        *cleaned = false;
    struct log_manager_partition *parts;
    size_t n;
    uint64_t listed_at;
    if (list_partitions(c, &parts, &n, &listed_at) != 0)
        return false;
    /* Only compacted logs are looked at under the lock: the dirtiness
     * check takes each log's append lock. */
    bool *compacted = calloc(n + 1, sizeof *compacted);
    if (!compacted) {
        log_manager_list_free(parts, n);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct log_config cfg;
        partition_log_get_config(parts[i].log, &cfg);
        compacted[i] = cfg.cleanup_compact;
    }
    pthread_mutex_lock(&c->lock);
    bool changed = forget_missing(c, parts, n, listed_at);
    int64_t mono = clock_mono_ms();
    size_t best = n;
    struct log_clean_dirtiness best_dirt = {0};
    for (size_t i = 0; i < n && !c->stop; i++) {
        if (!compacted[i])
            continue;
        const struct cleaner_entry *e = entry_find(c, parts[i].topic, parts[i].partition);
        if (e && (e->in_progress || e->retry_after_ms > mono))
            continue;
        struct log_clean_dirtiness d;
        partition_log_dirtiness(parts[i].log, e ? e->first_dirty : -1, now_ms, &d);
        if (d.due && (best == n || filthier(&d, &best_dirt))) {
            best = i;
            best_dirt = d;
        }
    }
    struct cleaner_entry *e = best < n ? entry_get(c, parts[best].topic, parts[best].partition) : NULL;
    int64_t first_dirty = -1;
    if (e) {
        e->in_progress = true;
        first_dirty = e->first_dirty;
    }
    pthread_mutex_unlock(&c->lock);
    free(compacted);
    bool done = false;
    if (e)
        changed |= clean_held(c, &parts[best], first_dirty, now_ms, false, true, &done);
    log_manager_list_free(parts, n);
    if (changed)
        write_checkpoints(c);
    if (cleaned)
        *cleaned = done;
    return e != NULL;
}

int64_t log_cleaner_first_dirty(struct log_cleaner *c, const char *topic, int32_t partition)
{
    pthread_mutex_lock(&c->lock);
    const struct cleaner_entry *e = entry_find(c, topic, partition);
    int64_t offset = e ? e->first_dirty : -1;
    pthread_mutex_unlock(&c->lock);
    return offset;
}

/* ---- threads ---- */

static void *cleaner_thread(void *arg)
{
    struct log_cleaner *c = arg;
    while (!stopping(c)) {
        /* Back off only when no log was due, as Kafka's cleaner threads do. */
        if (log_cleaner_clean_filthiest(c, clock_wall_ms(), NULL))
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
        pthread_mutex_lock(&c->lock);
        if (!c->stop)
            pthread_cond_timedwait(&c->wake, &c->lock, &ts);
        pthread_mutex_unlock(&c->lock);
    }
    return NULL;
}

static void stop_threads(struct log_cleaner *c)
{
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_broadcast(&c->wake);
    pthread_cond_broadcast(&c->released);
    pthread_mutex_unlock(&c->lock);
    log_throttler_cancel(&c->throttle);
    for (size_t i = 0; i < c->thread_count; i++)
        pthread_join(c->threads[i], NULL);
    c->thread_count = 0;
}

int log_cleaner_create(struct log_manager *m, const struct log_cleaner_config *cfg, bool start_thread,
                       struct log_cleaner **out)
{
    struct log_cleaner *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    c->manager = m;
    c->cfg = *cfg;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->released, NULL);
    pthread_cond_init(&c->wake, NULL);
    pthread_mutex_init(&c->ckpt_lock, NULL);
    log_throttler_init(&c->throttle, cfg->io_max_bytes_per_second);
    load_checkpoints(c);
    size_t want = cfg->enable && start_thread && cfg->threads > 0 ? (size_t)cfg->threads : 0;
    if (want > 0 && !(c->threads = calloc(want, sizeof *c->threads))) {
        log_cleaner_destroy(c);
        return ENOMEM;
    }
    for (size_t i = 0; i < want; i++) {
        int rc = pthread_create(&c->threads[i], NULL, cleaner_thread, c);
        if (rc != 0) {
            log_cleaner_destroy(c);
            return rc;
        }
        c->thread_count++;
    }
    if (want > 0)
        logger_info("log", "started %zu log cleaner threads, %zu bytes of dedupe buffer each", want,
                    log_cleaner_dedupe_bytes_per_pass(c));
    *out = c;
    return 0;
}

void log_cleaner_destroy(struct log_cleaner *c)
{
    if (!c)
        return;
    stop_threads(c);
    free(c->threads);
    for (size_t i = 0; i < c->count; i++)
        free(c->entries[i].topic);
    free(c->entries);
    log_throttler_destroy(&c->throttle);
    pthread_mutex_destroy(&c->ckpt_lock);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->released);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
