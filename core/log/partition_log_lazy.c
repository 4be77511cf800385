/* Deferred partition logs: after a clean shutdown a broker registers every
 * partition with the offsets of its checkpoints and opens no file of it;
 * the first use that needs the segments loads them. With many partitions,
 * start-up then costs a table entry per partition rather than a directory
 * scan and three open descriptors (.log, .index, .timeindex), and a
 * partition nobody uses holds no descriptor. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/partition_log_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

int partition_log_open_deferred(const char *dir, const struct log_config *cfg, int64_t log_start, int64_t log_end,
                                int64_t high_watermark, struct partition_log **out, char *err, size_t errlen)
{
    if (log_start < 0 || log_end < log_start) {
        snprintf(err, errlen, "%s: checkpointed offsets %" PRId64 "..%" PRId64 " are not a log", dir, log_start,
                 log_end);
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    struct partition_log *log = partition_log_alloc(dir, cfg);
    if (!log) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    atomic_store(&log->loaded, false);
    atomic_store(&log->log_start_offset, log_start);
    atomic_store(&log->log_end_offset, log_end);
    /* Everything below the end was flushed before the clean stop. */
    atomic_store(&log->recovery_point, log_end);
    if (high_watermark >= 0)
        partition_log_restore_high_watermark(log, high_watermark);
    *out = log;
    return KAFKA_ERR_NONE;
}

int partition_log_create_deferred(const char *dir, const struct log_config *cfg, struct partition_log **out, char *err,
                                  size_t errlen)
{
    if (mkdir(dir, 0755) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return KAFKA_ERR_KAFKA_STORAGE_ERROR;
    }
    int code = partition_log_open_deferred(dir, cfg, 0, 0, -1, out, err, errlen);
    if (code != KAFKA_ERR_NONE) {
        rmdir(dir);
        return code;
    }
    /* As a full open that creates the directory: its entry (and the small
     * files written meanwhile, unsynced) is made durable by the first
     * flush, before anything counts as durable. */
    atomic_store(&(*out)->dir_unsynced, true);
    return KAFKA_ERR_NONE;
}

bool partition_log_is_loaded(struct partition_log *log)
{
    return atomic_load(&log->loaded);
}

bool partition_log_defer_topic_id(struct partition_log *log, const uint8_t topic_id[16])
{
    if (atomic_load(&log->loaded))
        return false;
    pthread_mutex_lock(&log->load_lock);
    bool deferred = !atomic_load(&log->loaded);
    if (deferred) {
        memcpy(log->deferred_topic_id, topic_id, 16);
        log->deferred_topic_id_set = true;
    }
    pthread_mutex_unlock(&log->load_lock);
    return deferred;
}

/* Moves what a full open of the same directory loaded into the deferred
 * log, whose table entry and references stay. Its high watermark, configs
 * and remote offsets are kept: the replica layer and the remote log manager
 * have set them meanwhile. Caller holds load_lock. */
static void adopt_loaded(struct partition_log *log, struct partition_log *fresh)
{
    pthread_mutex_lock(&log->write_lock);
    pthread_rwlock_wrlock(&log->lock);
    log->segments = fresh->segments;
    log->segment_count = fresh->segment_count;
    log->segment_cap = fresh->segment_cap;
    fresh->segments = NULL;
    fresh->segment_count = fresh->segment_cap = 0;
    log->epochs = fresh->epochs;
    leader_epoch_cache_init(&fresh->epochs);
    log->producers = fresh->producers;
    fresh->producers = NULL;
    log->aborted = fresh->aborted;
    memset(&fresh->aborted, 0, sizeof fresh->aborted);
    atomic_store(&log->log_start_offset, atomic_load(&fresh->log_start_offset));
    atomic_store(&log->log_end_offset, atomic_load(&fresh->log_end_offset));
    atomic_store(&log->recovery_point, atomic_load(&fresh->recovery_point));
    atomic_store(&log->first_unstable_offset, atomic_load(&fresh->first_unstable_offset));
    /* Either may have created files not yet synced. */
    if (atomic_load(&fresh->dir_unsynced))
        atomic_store(&log->dir_unsynced, true);
    log->first_unflushed_ms = fresh->first_unflushed_ms;
    log->unflushed_records = fresh->unflushed_records;
    atomic_store_explicit(&log->loaded, true, memory_order_release);
    pthread_rwlock_unlock(&log->lock);
    pthread_mutex_unlock(&log->write_lock);
}

static int load_deferred(struct partition_log *log)
{
    struct log_config cfg;
    partition_log_get_config(log, &cfg);
    struct partition_log *fresh = NULL;
    char err[256] = "";
    if (partition_log_open_from(log->dir, &cfg, -1, &fresh, err, sizeof err) != KAFKA_ERR_NONE) {
        logger_error("log", "%s: cannot load the partition on first use: %s", log->dir, err);
        return EIO;
    }
    /* fresh is private until adopted: the public calls below act on it as
     * the eager start-up acts on a log it has just opened. */
    int64_t start = atomic_load(&log->log_start_offset);
    partition_log_restore_start_offset(fresh, start);
    int64_t end = atomic_load(&log->log_end_offset), loaded_end = atomic_load(&fresh->log_end_offset);
    if (loaded_end != end)
        logger_warn("log", "%s: the log ends at %" PRId64 ", the checkpoint said %" PRId64, log->dir, loaded_end, end);
    if (log->deferred_leader_epoch >= 0 &&
        partition_log_assign_leader_epoch(fresh, log->deferred_leader_epoch) != KAFKA_ERR_NONE) {
        partition_log_close(fresh);
        return EIO;
    }
    uint8_t on_disk[16];
    if (log->deferred_topic_id_set && partition_log_topic_id(fresh, on_disk) != 0 &&
        partition_log_write_metadata(fresh, log->deferred_topic_id) != 0)
        logger_warn("log", "%s: cannot write partition.metadata", log->dir);
    adopt_loaded(log, fresh);
    /* Nothing of fresh's is left to flush or snapshot: free, not close. */
    partition_log_free(fresh);
    return 0;
}

int partition_log_ensure_loaded(struct partition_log *log)
{
    if (atomic_load_explicit(&log->loaded, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&log->load_lock);
    int rc = atomic_load(&log->loaded) ? 0 : load_deferred(log);
    pthread_mutex_unlock(&log->load_lock);
    return rc;
}

int64_t partition_log_deferred_size(struct partition_log *log)
{
    DIR *d = opendir(log->dir);
    if (!d)
        return 0;
    int64_t total = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        struct stat st;
        if (len > 4 && strcmp(ent->d_name + len - 4, ".log") == 0 && fstatat(dirfd(d), ent->d_name, &st, 0) == 0)
            total += st.st_size;
    }
    closedir(d);
    return total;
}
