/* Log manager: the partition table, checkpoints, the clean-shutdown marker
 * and the maintenance thread. Loading the log dirs at start-up is in
 * log_manager_load.c. */
#include "log/log_manager.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log/log_checkpoint.h"
#include "log/log_manager_internal.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/lock_check.h"
#include "util/logger.h"
#include "util/topic_name.h"

void log_manager_config_defaults(struct log_manager_config *cfg)
{
    cfg->retention_check_interval_ms = 300000;
    cfg->flush_scheduler_interval_ms = INT64_MAX;
    cfg->flush_offset_checkpoint_interval_ms = 60000;
    cfg->flush_start_offset_checkpoint_interval_ms = 60000;
    cfg->high_watermark_checkpoint_interval_ms = 5000;
    cfg->roll_check_interval_ms = 1000;
    cfg->producer_expiration_check_interval_ms = 600000;
    cfg->background_thread = true;
    cfg->recovery_threads_per_data_dir = 1;
    log_cleaner_config_defaults(&cfg->cleaner);
}

static size_t bucket_of(const struct log_manager *m, const char *topic, int32_t partition)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = topic; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ (uint32_t)partition) * 1099511628211ull;
    return (size_t)(h & (m->bucket_count - 1));
}

static struct log_manager_entry *find_locked(struct log_manager *m, const char *topic, int32_t partition)
{
    LOCK_ASSERT_HELD(&m->lock);
    for (struct log_manager_entry *e = m->buckets[bucket_of(m, topic, partition)]; e; e = e->next)
        if (e->partition == partition && strcmp(e->topic, topic) == 0)
            return e;
    return NULL;
}

/* Under lock: doubles the buckets once chains average two entries. On
 * failure the table stays as it is (longer chains, still correct). */
static void maybe_grow_locked(struct log_manager *m)
{
    if (m->count < m->bucket_count * 2)
        return;
    size_t count = m->bucket_count * 2;
    struct log_manager_entry **grown = calloc(count, sizeof *grown);
    if (!grown)
        return;
    struct log_manager_entry **old = m->buckets;
    size_t old_count = m->bucket_count;
    m->buckets = grown;
    m->bucket_count = count;
    for (size_t i = 0; i < old_count; i++) {
        while (old[i]) {
            struct log_manager_entry *e = old[i];
            old[i] = e->next;
            size_t b = bucket_of(m, e->topic, e->partition);
            e->next = grown[b];
            grown[b] = e;
        }
    }
    free(old);
}

int log_manager_insert_locked(struct log_manager *m, const char *topic, int32_t partition, size_t dir_index,
                              struct partition_log *log)
{
    LOCK_ASSERT_HELD(&m->lock);
    maybe_grow_locked(m);
    struct log_manager_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->topic = strdup(topic))) {
        free(e);
        return ENOMEM;
    }
    e->partition = partition;
    e->dir_index = dir_index;
    e->log = log;
    size_t b = bucket_of(m, topic, partition);
    e->next = m->buckets[b];
    m->buckets[b] = e;
    m->count++;
    m->dir_partitions[dir_index]++;
    return 0;
}

char *log_manager_join(const char *dir, const char *name)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        return NULL;
    return path;
}

/* References to every log, for work done without the table lock. */
static struct partition_log **snapshot(struct log_manager *m, size_t **dir_of, char ***topics, int32_t **partitions,
                                       size_t *n)
{
    pthread_mutex_lock(&m->lock);
    size_t count = m->count;
    struct partition_log **logs = calloc(count + 1, sizeof *logs);
    *dir_of = calloc(count + 1, sizeof **dir_of);
    *topics = calloc(count + 1, sizeof **topics);
    *partitions = calloc(count + 1, sizeof **partitions);
    size_t k = 0;
    if (logs && *dir_of && *topics && *partitions) {
        for (size_t b = 0; b < m->bucket_count; b++)
            for (struct log_manager_entry *e = m->buckets[b]; e && k < count; e = e->next) {
                (*topics)[k] = strdup(e->topic);
                if (!(*topics)[k])
                    continue;
                partition_log_retain(e->log);
                logs[k] = e->log;
                (*dir_of)[k] = e->dir_index;
                (*partitions)[k] = e->partition;
                k++;
            }
    }
    pthread_mutex_unlock(&m->lock);
    *n = k;
    return logs;
}

static void snapshot_free(struct partition_log **logs, size_t *dir_of, char **topics, int32_t *partitions, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        partition_log_close(logs[i]);
        free(topics[i]);
    }
    free(logs);
    free(dir_of);
    free(topics);
    free(partitions);
}

/* References to every log and nothing else: the periodic maintenance
 * needs no names, and copying 100,000 of them every second was most of
 * its cost on an idle broker. */
static struct partition_log **snapshot_logs(struct log_manager *m, size_t *n)
{
    pthread_mutex_lock(&m->lock);
    size_t count = m->count, k = 0;
    struct partition_log **logs = calloc(count + 1, sizeof *logs);
    for (size_t b = 0; logs && b < m->bucket_count; b++)
        for (struct log_manager_entry *e = m->buckets[b]; e && k < count; e = e->next) {
            partition_log_retain(e->log);
            logs[k++] = e->log;
        }
    pthread_mutex_unlock(&m->lock);
    *n = k;
    return logs;
}

static void snapshot_logs_free(struct partition_log **logs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        partition_log_close(logs[i]);
    free(logs);
}

static const char *const checkpoint_files[] = {RECOVERY_CHECKPOINT_FILE, START_CHECKPOINT_FILE, HW_CHECKPOINT_FILE};

static int64_t checkpoint_value(int kind, struct partition_log *log)
{
    return kind == 0   ? partition_log_recovery_point(log)
           : kind == 1 ? partition_log_start_offset(log)
                       : partition_log_high_watermark(log);
}

static int write_checkpoint_files(struct log_manager *m, bool recovery, bool starts, bool hws)
{
    pthread_mutex_lock(&m->checkpoint_lock);
    size_t *dir_of, n;
    char **topics;
    int32_t *partitions;
    struct partition_log **logs = snapshot(m, &dir_of, &topics, &partitions, &n);
    struct log_offset_checkpoint_entry *entries = calloc(n + 1, sizeof *entries);
    int result = (logs && entries) ? 0 : ENOMEM;
    for (size_t d = 0; result == 0 && d < m->dir_count; d++) {
        for (int kind = 0; kind < 3; kind++) {
            if ((kind == 0 && !recovery) || (kind == 1 && !starts) || (kind == 2 && !hws))
                continue;
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                if (dir_of[i] != d || partition_log_is_offline(logs[i]))
                    continue;
                entries[k].topic = topics[i];
                entries[k].partition = partitions[i];
                entries[k].offset = checkpoint_value(kind, logs[i]);
                k++;
            }
            char *path = log_manager_join(m->dirs[d], checkpoint_files[kind]);
            int rc = path ? log_offset_checkpoint_write(path, entries, k) : ENOMEM;
            if (rc != 0) {
                logger_error("log", "cannot write %s: %s", path ? path : m->dirs[d], strerror(rc));
                result = rc;
            }
            free(path);
        }
    }
    free(entries);
    snapshot_free(logs, dir_of, topics, partitions, n);
    pthread_mutex_unlock(&m->checkpoint_lock);
    return result;
}

int log_manager_list(struct log_manager *m, struct log_manager_partition **out, size_t *n)
{
    size_t *dir_of;
    char **topics;
    int32_t *partitions;
    struct partition_log **logs = snapshot(m, &dir_of, &topics, &partitions, n);
    *out = calloc(*n + 1, sizeof **out);
    if (!logs || !*out) {
        snapshot_free(logs, dir_of, topics, partitions, logs ? *n : 0);
        free(*out);
        *out = NULL;
        *n = 0;
        return ENOMEM;
    }
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = (struct log_manager_partition){topics[i], partitions[i], dir_of[i], logs[i]};
    free(logs);
    free(dir_of);
    free(topics);
    free(partitions);
    return 0;
}

void log_manager_cancel_replication_waits(struct log_manager *m)
{
    struct log_manager_partition *parts;
    size_t n;
    if (!m || log_manager_list(m, &parts, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++)
        partition_log_cancel_replication_waits(parts[i].log);
    log_manager_list_free(parts, n);
}

void log_manager_list_free(struct log_manager_partition *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        partition_log_close(parts[i].log);
        free(parts[i].topic);
    }
    free(parts);
}

size_t log_manager_dir_count(const struct log_manager *m)
{
    return m->dir_count;
}

const char *log_manager_dir_path(const struct log_manager *m, size_t dir_index)
{
    return dir_index < m->dir_count ? m->dirs[dir_index] : NULL;
}

int log_manager_clean(struct log_manager *m, int64_t now_ms, bool force)
{
    return m->cleaner ? log_cleaner_run_once(m->cleaner, now_ms, force) : 0;
}

struct log_cleaner *log_manager_cleaner(struct log_manager *m)
{
    return m->cleaner;
}

int log_manager_write_checkpoints(struct log_manager *m)
{
    return write_checkpoint_files(m, true, true, true);
}

int log_manager_write_start_offsets(struct log_manager *m)
{
    return write_checkpoint_files(m, false, true, false);
}

static bool due(int64_t *last, int64_t interval, int64_t now, bool force)
{
    if (force || (interval != INT64_MAX && now - *last >= interval)) {
        *last = now;
        return true;
    }
    return false;
}

void log_manager_maintain(struct log_manager *m, int64_t now_ms, bool force)
{
    int64_t mono = clock_mono_ms();
    bool roll = due(&m->last_roll_ms, m->cfg.roll_check_interval_ms, mono, force);
    bool flush = due(&m->last_flush_ms, m->cfg.flush_scheduler_interval_ms, mono, force);
    bool retention = due(&m->last_retention_ms, m->cfg.retention_check_interval_ms, mono, force);
    bool recovery_ckpt = due(&m->last_recovery_ckpt_ms, m->cfg.flush_offset_checkpoint_interval_ms, mono, force);
    bool start_ckpt = due(&m->last_start_ckpt_ms, m->cfg.flush_start_offset_checkpoint_interval_ms, mono, force);
    bool hw_ckpt = due(&m->last_hw_ckpt_ms, m->cfg.high_watermark_checkpoint_interval_ms, mono, force);
    bool expire_producers = due(&m->last_producer_expiry_ms, m->cfg.producer_expiration_check_interval_ms, mono, force);
    if (roll || flush || retention || expire_producers) {
        size_t n;
        struct partition_log **logs = snapshot_logs(m, &n);
        for (size_t i = 0; logs && i < n; i++) {
            if (roll) {
                partition_log_roll_if_due(logs[i], now_ms);
                int64_t before = partition_log_recovery_point(logs[i]);
                partition_log_flush_rolled(logs[i]);
                /* Record it now rather than at the next checkpoint interval:
                 * a crash in between would rescan the whole rolled segment. */
                if (partition_log_recovery_point(logs[i]) != before)
                    recovery_ckpt = true;
            }
            if (flush)
                partition_log_flush_if_due(logs[i], now_ms);
            if (retention)
                partition_log_apply_retention(logs[i], now_ms);
            if (expire_producers)
                partition_log_expire_producers(logs[i], now_ms);
        }
        snapshot_logs_free(logs, n);
    }
    if (recovery_ckpt || start_ckpt || hw_ckpt)
        write_checkpoint_files(m, recovery_ckpt, start_ckpt, hw_ckpt);
}

static int64_t min_interval(const struct log_manager_config *c)
{
    int64_t v = c->retention_check_interval_ms;
    int64_t others[] = {c->flush_scheduler_interval_ms,
                        c->flush_offset_checkpoint_interval_ms,
                        c->flush_start_offset_checkpoint_interval_ms,
                        c->roll_check_interval_ms,
                        c->high_watermark_checkpoint_interval_ms,
                        c->producer_expiration_check_interval_ms};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (others[i] < v)
            v = others[i];
    return v < 10 ? 10 : v > 1000 ? 1000 : v;
}

static void *maintenance_thread(void *arg)
{
    struct log_manager *m = arg;
    int64_t tick = min_interval(&m->cfg);
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tick / 1000;
        ts.tv_nsec += (tick % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&m->wake, &m->lock, &ts);
        if (m->stop)
            break;
        pthread_mutex_unlock(&m->lock);
        log_manager_maintain(m, clock_wall_ms(), false);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

int log_manager_open(const char *const *dirs, size_t dir_count, const struct log_config *defaults,
                     const struct log_manager_config *cfg, struct log_manager **out, char *err, size_t errlen)
{
    if (dir_count == 0) {
        snprintf(err, errlen, "no log directories");
        return -1;
    }
    struct log_manager *m = calloc(1, sizeof *m);
    if (!m || !(m->dirs = calloc(dir_count, sizeof *m->dirs)) ||
        !(m->dir_partitions = calloc(dir_count, sizeof *m->dir_partitions)) ||
        !(m->buckets = calloc(LOG_MANAGER_INITIAL_BUCKETS, sizeof *m->buckets))) {
        if (m) {
            free(m->dirs);
            free(m->dir_partitions);
        }
        free(m);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m->defaults = *defaults;
    m->cfg = *cfg;
    m->dir_count = dir_count;
    m->bucket_count = LOG_MANAGER_INITIAL_BUCKETS;
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->checkpoint_lock, NULL);
    pthread_cond_init(&m->wake, NULL);
    int64_t mono = clock_mono_ms();
    m->last_retention_ms = m->last_flush_ms = m->last_recovery_ckpt_ms = m->last_start_ckpt_ms = m->last_roll_ms = mono;
    m->last_producer_expiry_ms = m->last_hw_ckpt_ms = mono;
    for (size_t i = 0; i < dir_count; i++) {
        if (!(m->dirs[i] = strdup(dirs[i])))
            snprintf(err, errlen, "cannot create log dir %s: out of memory", dirs[i]);
        if (!m->dirs[i] || fs_mkdir_p(dirs[i], err, errlen) != 0) {
            log_manager_close(m, false);
            return -1;
        }
    }
    bool checkpoints_current = true;
    for (size_t i = 0; i < dir_count; i++) {
        bool dir_current = false;
        if (log_manager_load_dir(m, i, &dir_current, err, errlen) != 0) {
            log_manager_close(m, false);
            return -1;
        }
        checkpoints_current &= dir_current;
    }
    /* Record the recovery points as loaded (unchanged by a rescan, which
     * does not flush) and the start offsets. Not the high watermarks: the
     * replica layer has not placed them yet. After a clean stop whose
     * checkpoints registered every partition the files already say this:
     * rewriting them (two fsynced files of every partition) is skipped. */
    if (!checkpoints_current)
        write_checkpoint_files(m, true, true, false);
    if (log_cleaner_create(m, &cfg->cleaner, cfg->background_thread, &m->cleaner) != 0) {
        snprintf(err, errlen, "cannot start the log cleaner");
        log_manager_close(m, false);
        return -1;
    }
    if (cfg->background_thread) {
        if (pthread_create(&m->thread, NULL, maintenance_thread, m) != 0) {
            snprintf(err, errlen, "cannot start the log maintenance thread");
            log_manager_close(m, false);
            return -1;
        }
        m->thread_running = true;
    }
    logger_info("log", "loaded %zu partitions from %zu log dirs", m->count, dir_count);
    *out = m;
    return 0;
}

struct partition_log *log_manager_get(struct log_manager *m, const char *topic, int32_t partition)
{
    pthread_mutex_lock(&m->lock);
    struct log_manager_entry *e = find_locked(m, topic, partition);
    struct partition_log *log = e ? e->log : NULL;
    if (log)
        partition_log_retain(log);
    pthread_mutex_unlock(&m->lock);
    return log;
}

int16_t log_manager_create(struct log_manager *m, const char *topic, int32_t partition, const uint8_t *topic_id,
                           const struct log_config *cfg, struct partition_log **out, char *err, size_t errlen)
{
    if (!topic_name_valid(topic, strlen(topic), NULL, 0) || partition < 0) {
        snprintf(err, errlen, "invalid topic partition %s-%" PRId32, topic, partition);
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    }
    if (strcmp(topic, LOG_MANAGER_METADATA_TOPIC) == 0) {
        /* Its partition 0 would be opened on the cluster metadata log. */
        snprintf(err, errlen, "%s names the cluster metadata log", topic);
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    }
    pthread_mutex_lock(&m->lock);
    struct log_manager_entry *e = find_locked(m, topic, partition);
    if (e) {
        /* Loaded at start without a topic id: a kill -9 between the dir's
         * creation and partition.metadata's rename leaves none. As Kafka's
         * assignTopicId, the id is written now; without it a follower's
         * fetches (by topic id) got UNKNOWN_TOPIC_ID from the leader forever. */
        uint8_t on_disk_id[16];
        /* A log not loaded yet checks and writes it at its load: reading
         * the file here would open one per partition at every start. */
        if (topic_id && !partition_log_defer_topic_id(e->log, topic_id) &&
            partition_log_topic_id(e->log, on_disk_id) != 0) {
            if (partition_log_write_metadata(e->log, topic_id) != 0) {
                pthread_mutex_unlock(&m->lock);
                snprintf(err, errlen, "cannot write partition.metadata");
                return KAFKA_ERR_KAFKA_STORAGE_ERROR;
            }
            logger_info("log", "%s-%" PRId32 ": had no topic id on disk; partition.metadata written", topic, partition);
        }
        if (out) {
            partition_log_retain(e->log);
            *out = e->log;
        }
        pthread_mutex_unlock(&m->lock);
        return KAFKA_ERR_NONE;
    }
    /* A directory already on disk for a partition not in the table did not
     * load at start-up (the error was logged then): open that one, with a
     * full rescan since nothing vouches for its tail, rather than start an
     * empty log in another dir beside it. */
    size_t dir_index = 0;
    bool existed = false;
    char *pdir = NULL;
    for (size_t i = 0; i < m->dir_count && !existed; i++) {
        char *candidate = NULL;
        struct stat st;
        if (asprintf(&candidate, "%s/%s-%" PRId32, m->dirs[i], topic, partition) < 0)
            break;
        if (stat(candidate, &st) == 0 && S_ISDIR(st.st_mode)) {
            existed = true;
            dir_index = i;
        }
        free(candidate);
    }
    if (!existed)
        for (size_t i = 1; i < m->dir_count; i++)
            if (m->dir_partitions[i] < m->dir_partitions[dir_index])
                dir_index = i;
    if (asprintf(&pdir, "%s/%s-%" PRId32, m->dirs[dir_index], topic, partition) < 0) {
        pthread_mutex_unlock(&m->lock);
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (existed)
        logger_warn("log",
                    "%s: opening a partition dir that was not loaded at start-up; "
                    "rescanning all of it",
                    pdir);
    struct partition_log *log;
    /* A new partition is empty: its segment and index files are made by
     * its first use, so that creating many costs a directory and
     * partition.metadata each, and holds no descriptor. */
    int16_t code = existed ? (int16_t)partition_log_open(pdir, cfg ? cfg : &m->defaults, true, &log, err, errlen)
                           : (int16_t)partition_log_create_deferred(pdir, cfg ? cfg : &m->defaults, &log, err, errlen);
    uint8_t on_disk_id[16];
    if (code == KAFKA_ERR_NONE && existed && topic_id && partition_log_topic_id(log, on_disk_id) == 0 &&
        memcmp(on_disk_id, topic_id, 16) != 0) {
        /* Another incarnation of the topic (Kafka's inconsistent topic id):
         * neither serve its records nor delete them. */
        snprintf(err, errlen, "%s holds the log of another topic with this name (topic id differs)", pdir);
        partition_log_close(log);
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    /* A directory found on disk is left in place on failure: it may hold
     * the only copy of its records. */
    void (*discard)(struct partition_log *) = existed ? partition_log_close : partition_log_delete;
    free(pdir);
    if (code == KAFKA_ERR_NONE && topic_id && partition_log_write_metadata(log, topic_id) != 0) {
        snprintf(err, errlen, "cannot write partition.metadata");
        discard(log);
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (code == KAFKA_ERR_NONE && log_manager_insert_locked(m, topic, partition, dir_index, log) != 0) {
        discard(log);
        snprintf(err, errlen, "out of memory");
        code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    if (code == KAFKA_ERR_NONE && out) {
        partition_log_retain(log);
        *out = log;
    }
    pthread_mutex_unlock(&m->lock);
    return code;
}

int log_manager_delete(struct log_manager *m, const char *topic, int32_t partition)
{
    pthread_mutex_lock(&m->lock);
    struct log_manager_entry **pp = &m->buckets[bucket_of(m, topic, partition)];
    while (*pp && !((*pp)->partition == partition && strcmp((*pp)->topic, topic) == 0))
        pp = &(*pp)->next;
    struct log_manager_entry *e = *pp;
    if (e) {
        *pp = e->next;
        m->count--;
        m->dir_partitions[e->dir_index]--;
    }
    pthread_mutex_unlock(&m->lock);
    if (!e)
        return -1;
    partition_log_delete(e->log);
    free(e->topic);
    free(e);
    return 0;
}

size_t log_manager_partition_count(struct log_manager *m)
{
    pthread_mutex_lock(&m->lock);
    size_t n = m->count;
    pthread_mutex_unlock(&m->lock);
    return n;
}

void log_manager_close(struct log_manager *m, bool clean)
{
    if (!m)
        return;
    if (m->thread_running) {
        pthread_mutex_lock(&m->lock);
        m->stop = true;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    log_cleaner_destroy(m->cleaner);
    bool all_flushed = true;
    if (clean) {
        for (size_t b = 0; b < m->bucket_count; b++)
            for (struct log_manager_entry *e = m->buckets[b]; e; e = e->next)
                if (partition_log_flush(e->log) != KAFKA_ERR_NONE)
                    all_flushed = false;
        if (log_manager_write_checkpoints(m) != 0)
            all_flushed = false;
    }
    for (size_t b = 0; b < m->bucket_count; b++) {
        struct log_manager_entry *e = m->buckets[b];
        while (e) {
            struct log_manager_entry *next = e->next;
            partition_log_close(e->log);
            free(e->topic);
            free(e);
            e = next;
        }
    }
    for (size_t i = 0; i < m->dir_count && m->dirs[i]; i++) {
        if (clean && all_flushed) {
            char *marker = log_manager_join(m->dirs[i], CLEAN_SHUTDOWN_FILE);
            if (!marker || log_file_write_atomic(marker, "", 0) != 0)
                logger_error("log", "cannot write the clean shutdown marker in %s", m->dirs[i]);
            free(marker);
        }
        free(m->dirs[i]);
    }
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->checkpoint_lock);
    free(m->dirs);
    free(m->dir_partitions);
    free(m->buckets);
    free(m);
}
