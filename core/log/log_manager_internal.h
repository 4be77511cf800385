/* Shared by the log manager's files: log_manager.c (the table, checkpoints,
 * maintenance) and log_manager_load.c (loading the log dirs at open). */
#ifndef CAIRN_LOG_MANAGER_INTERNAL_H
#define CAIRN_LOG_MANAGER_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_manager.h"

/* The table starts with this many buckets (a power of two) and doubles
 * once chains average two entries: 100,000 partitions in 1,024 fixed
 * buckets made every lookup walk ~100 entries. */
#define LOG_MANAGER_INITIAL_BUCKETS 1024
#define CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"
#define RECOVERY_CHECKPOINT_FILE "recovery-point-offset-checkpoint"
#define START_CHECKPOINT_FILE "log-start-offset-checkpoint"
#define HW_CHECKPOINT_FILE "replication-offset-checkpoint"

struct log_manager_entry {
    char *topic;
    int32_t partition;
    size_t dir_index;
    struct partition_log *log; /* the table's reference */
    struct log_manager_entry *next;
};

/* lock guards buckets, counts and the stop flag; the thread is joined in close. */
struct log_manager {
    char **dirs;
    size_t dir_count;
    size_t *dir_partitions;
    struct log_config defaults;
    struct log_manager_config cfg;
    pthread_mutex_t lock;
    /* Serialises checkpoint writers (maintenance thread, DeleteRecords
     * handlers): each takes its snapshot and writes under it, so an older
     * snapshot never overwrites a newer file. Taken before lock, never inside it. */
    pthread_mutex_t checkpoint_lock;
    pthread_cond_t wake;
    bool stop;
    bool thread_running;
    pthread_t thread;
    struct log_manager_entry **buckets;
    size_t bucket_count; /* a power of two */
    size_t count;
    int64_t last_retention_ms, last_flush_ms, last_recovery_ckpt_ms, last_start_ckpt_ms, last_roll_ms;
    int64_t last_producer_expiry_ms, last_hw_ckpt_ms;
    struct log_cleaner *cleaner;
};

/* Under lock: adds log (the table takes the reference) for topic-partition
 * in dir_index. Returns 0, or ENOMEM. */
int log_manager_insert_locked(struct log_manager *m, const char *topic, int32_t partition, size_t dir_index,
                              struct partition_log *log);
/* dir "/" name, malloc'd; NULL when out of memory. */
char *log_manager_join(const char *dir, const char *name);
/* Opens the partitions of m->dirs[dir_index] into the table. Sets
 * *checkpoints_current when the dir's recovery-point and log-start
 * checkpoints already hold exactly what writing them now would (a clean
 * start where every partition registered from them), so they need not be
 * rewritten. Returns 0, or -1 with err when the clean shutdown marker
 * cannot be removed durably. */
int log_manager_load_dir(struct log_manager *m, size_t dir_index, bool *checkpoints_current, char *err, size_t errlen);

#endif
