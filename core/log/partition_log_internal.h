/* The partition_log struct, shared by the files of core/log only. */
#ifndef CAIRN_LOG_PARTITION_LOG_INTERNAL_H
#define CAIRN_LOG_PARTITION_LOG_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>

#include "log/log_segment.h"
#include "log/partition_log.h"

struct log_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

/* Locking: write_lock serialises every mutation; lock (rwlock) guards the
 * segment array, each segment's index arrays/size and the epoch array, and
 * is held exclusively only while a mutation is published. Offsets are atomics
 * so getters need no lock. */
struct partition_log {
    char *dir;
    struct log_config cfg;
    pthread_mutex_t write_lock;
    pthread_rwlock_t lock;
    struct log_segment **segments; /* ascending base offset; last is active */
    size_t segment_count, segment_cap;
    _Atomic int64_t log_start_offset;
    _Atomic int64_t log_end_offset;
    _Atomic int64_t recovery_point;
    int64_t unflushed_records;  /* write_lock */
    int64_t first_unflushed_ms; /* write_lock; -1 when all flushed */
    struct log_epoch_entry *epochs;
    size_t epoch_count, epoch_cap;
    atomic_int refcount;
    atomic_bool offline;
    atomic_bool deleted;
};

/* Helpers used across files; callers hold write_lock. */
int partition_log_roll_locked(struct partition_log *log, int64_t now_ms);
int16_t partition_log_flush_locked(struct partition_log *log);
void partition_log_mark_offline(struct partition_log *log, const char *what, int err);
int partition_log_write_epochs(struct partition_log *log);
void partition_log_load_epochs(struct partition_log *log);
/* Drop epoch entries starting at or after end_offset. Caller holds both locks. */
void partition_log_truncate_epochs(struct partition_log *log, int64_t end_offset);
/* Remove segments[0], which must not be the active one; under both locks. */
void partition_log_remove_first_segment(struct partition_log *log);

#endif
