/* Log manager start-up: discovery of the partition dirs of a log dir, the
 * clean-shutdown marker and the offset checkpoints, and a short-lived pool
 * of recovery threads that opens the partitions. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log_checkpoint.h"
#include "log/log_manager_internal.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

/* Where the partition dirs are found by name while the checkpoints are
 * read into them: open addressing over the jobs' indexes, so each entry
 * of the three files costs one hash instead of a bisection of strcmps
 * (plus three sorts), 100,000 partitions a file. */
struct job_index {
    size_t *slots; /* job index + 1; 0 is empty */
    size_t mask;
};

static uint64_t partition_hash(const char *topic, int32_t partition)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)topic; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ (uint32_t)partition) * 1099511628211ull;
    return h ^ (h >> 29); /* FNV's low bits mix poorly: fold the high ones in */
}

/* One partition dir of a log dir being loaded. The loading thread fills the
 * inputs before any worker starts; exactly one worker (whichever claims the
 * index) writes the outputs; the loading thread reads them after joining. */
struct load_job {
    char *pdir;
    char *topic;
    int32_t partition;
    int64_t recovery_point;
    /* After a clean stop, a partition whose log end (recovery point) and
     * start are both checkpointed is registered with them and loaded on its
     * first use (partition_log_open_deferred); start/end/hw are those. */
    bool deferred;
    int64_t start, end, hw;
    struct partition_log *log; /* output: NULL when opening failed */
    char err[256];             /* output: why opening failed */
};

/* Returns 0, or -1 when out of memory (nothing is found then). */
static int job_index_build(struct job_index *ix, const struct load_job *jobs, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2)
        cap *= 2;
    if (!(ix->slots = calloc(cap, sizeof *ix->slots)))
        return -1;
    ix->mask = cap - 1;
    for (size_t i = 0; i < n; i++) {
        size_t s = (size_t)partition_hash(jobs[i].topic, jobs[i].partition) & ix->mask;
        while (ix->slots[s])
            s = (s + 1) & ix->mask;
        ix->slots[s] = i + 1;
    }
    return 0;
}

static struct load_job *job_index_find(const struct job_index *ix, struct load_job *jobs, const char *topic,
                                       int32_t partition)
{
    if (!ix->slots)
        return NULL;
    for (size_t s = (size_t)partition_hash(topic, partition) & ix->mask; ix->slots[s]; s = (s + 1) & ix->mask) {
        struct load_job *job = &jobs[ix->slots[s] - 1];
        if (job->partition == partition && strcmp(job->topic, topic) == 0)
            return job;
    }
    return NULL;
}

/* Shared by the recovery workers of one log dir: jobs are claimed through
 * the atomic counter, so no lock is needed; the rest is read-only. */
struct load_pool {
    const struct log_config *defaults;
    struct load_job *jobs;
    size_t job_count;
    atomic_size_t next;
};

static void *load_worker(void *arg)
{
    struct load_pool *pool = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&pool->next, 1);
        if (i >= pool->job_count)
            break;
        struct load_job *job = &pool->jobs[i];
        if (job->deferred) {
            if (partition_log_open_deferred(job->pdir, pool->defaults, job->start, job->end, job->hw, &job->log,
                                            job->err, sizeof job->err) != 0)
                job->log = NULL;
            continue;
        }
        if (partition_log_open_from(job->pdir, pool->defaults, job->recovery_point, &job->log, job->err,
                                    sizeof job->err) != 0)
            job->log = NULL;
    }
    return NULL;
}

/* Open every job with up to `threads` threads, the caller being one of them.
 * A thread that cannot be started only means fewer workers. */
static void run_load_pool(struct load_pool *pool, int32_t threads)
{
    size_t helpers = threads > 1 ? (size_t)threads - 1 : 0;
    size_t useful = pool->job_count > 1 ? pool->job_count - 1 : 0;
    if (helpers > useful)
        helpers = useful;
    pthread_t *ids = helpers ? calloc(helpers, sizeof *ids) : NULL;
    size_t started = 0;
    for (size_t i = 0; ids && i < helpers; i++) {
        if (pthread_create(&ids[i], NULL, load_worker, pool) != 0) {
            logger_warn("log", "cannot start a recovery thread; loading with %zu", started + 1);
            break;
        }
        started++;
    }
    load_worker(pool);
    for (size_t i = 0; i < started; i++)
        pthread_join(ids[i], NULL);
    free(ids);
}

/* The partition dirs of dir in readdir order, which fixes the order of
 * table insertion and of error lines whatever the thread count. */
static struct load_job *list_partition_dirs(const char *dir, size_t *count)
{
    struct load_job *jobs = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    struct dirent *ent;
    while (d && (ent = readdir(d)) != NULL) {
        char *topic;
        int32_t partition;
        size_t name_len = strlen(ent->d_name), suffix_len = strlen(PARTITION_LOG_DELETED_SUFFIX);
        if (name_len > suffix_len && strcmp(ent->d_name + name_len - suffix_len, PARTITION_LOG_DELETED_SUFFIX) == 0) {
            /* A deleted partition whose last reference went with the process. */
            char *moved = log_manager_join(dir, ent->d_name);
            if (moved)
                partition_log_remove_dir(moved);
            free(moved);
            continue;
        }
        /* The cluster metadata log lives beside the partitions but belongs
         * to the metadata store, which opens it itself. */
        if (ent->d_name[0] == '.' || strcmp(ent->d_name, LOG_MANAGER_METADATA_DIR) == 0 ||
            log_parse_partition_dir(ent->d_name, &topic, &partition) != 0)
            continue;
        char *pdir = log_manager_join(dir, ent->d_name);
        /* readdir's type spares a stat per partition; a file system that
         * does not fill it in (DT_UNKNOWN), or a symbolic link, is asked. */
        struct stat st;
        bool is_dir = ent->d_type == DT_DIR || ((ent->d_type == DT_UNKNOWN || ent->d_type == DT_LNK) && pdir &&
                                                stat(pdir, &st) == 0 && S_ISDIR(st.st_mode));
        if (!pdir || !is_dir) {
            free(pdir);
            free(topic);
            continue;
        }
        if (n == cap) {
            size_t grown_cap = cap ? cap * 2 : 64;
            struct load_job *grown = realloc(jobs, grown_cap * sizeof *grown);
            if (!grown) {
                logger_error("log", "%s: out of memory listing partitions", dir);
                free(pdir);
                free(topic);
                break;
            }
            jobs = grown;
            cap = grown_cap;
        }
        memset(&jobs[n], 0, sizeof jobs[n]);
        jobs[n].pdir = pdir;
        jobs[n].topic = topic;
        jobs[n].partition = partition;
        n++;
    }
    if (d)
        closedir(d);
    *count = n;
    return jobs;
}

/* Returns 0, or -1 with err when the clean shutdown marker cannot be
 * removed durably: the broker must not run on a directory where a crash
 * would afterwards pass for a clean stop. */
int log_manager_load_dir(struct log_manager *m, size_t dir_index, bool *checkpoints_current, char *err, size_t errlen)
{
    *checkpoints_current = false;
    const char *dir = m->dirs[dir_index];
    char *marker = log_manager_join(dir, CLEAN_SHUTDOWN_FILE);
    bool clean = marker && access(marker, F_OK) == 0;
    if (clean) {
        /* The marker is trusted once: removed, and the removal synced,
         * before any log opens, so a crash from here on reads as one. */
        int rc = unlink(marker) == 0 ? fs_fsync_dir(dir) : errno;
        if (rc != 0) {
            snprintf(err, errlen, "cannot remove the clean shutdown marker %s durably: %s", marker, strerror(rc));
            free(marker);
            return -1;
        }
    }
    struct log_offset_checkpoint_entry *recovery = NULL, *starts = NULL, *hws = NULL;
    size_t n_recovery = 0, n_starts = 0, n_hws = 0;
    char *path = log_manager_join(dir, RECOVERY_CHECKPOINT_FILE);
    /* After a clean stop the recovery points are the log ends. */
    if (path && log_offset_checkpoint_read(path, &recovery, &n_recovery) != 0)
        n_recovery = 0;
    free(path);
    path = log_manager_join(dir, START_CHECKPOINT_FILE);
    if (path && log_offset_checkpoint_read(path, &starts, &n_starts) != 0)
        n_starts = 0;
    free(path);
    path = log_manager_join(dir, HW_CHECKPOINT_FILE);
    if (path && log_offset_checkpoint_read(path, &hws, &n_hws) != 0)
        n_hws = 0;
    free(path);
    if (!clean)
        logger_info("log", "%s: no clean shutdown marker, recovering from checkpoints", dir);
    int64_t load_start_ns = clock_mono_ns();

    struct load_pool pool = {.defaults = &m->defaults};
    pool.jobs = list_partition_dirs(dir, &pool.job_count);
    atomic_init(&pool.next, 0);
    for (size_t i = 0; i < pool.job_count; i++)
        pool.jobs[i].start = pool.jobs[i].end = pool.jobs[i].hw = -1;
    struct job_index index = {0};
    if (job_index_build(&index, pool.jobs, pool.job_count) != 0)
        logger_warn("log", "%s: out of memory reading the checkpoints; every partition is recovered", dir);
    /* The recovery points are the log ends after a clean stop. */
    for (size_t i = 0; i < n_recovery; i++) {
        struct load_job *job = job_index_find(&index, pool.jobs, recovery[i].topic, recovery[i].partition);
        if (job)
            job->end = recovery[i].offset;
    }
    for (size_t i = 0; i < n_starts; i++) {
        struct load_job *job = job_index_find(&index, pool.jobs, starts[i].topic, starts[i].partition);
        if (job)
            job->start = starts[i].offset;
    }
    for (size_t i = 0; i < n_hws; i++) {
        struct load_job *job = job_index_find(&index, pool.jobs, hws[i].topic, hws[i].partition);
        if (job)
            job->hw = hws[i].offset;
    }
    free(index.slots);
    size_t deferred = 0;
    for (size_t i = 0; i < pool.job_count; i++) {
        struct load_job *job = &pool.jobs[i];
        /* Missing from the file: recovered from the start. */
        job->recovery_point = clean ? -1 : job->end >= 0 ? job->end : 0;
        /* A partition missing from a checkpoint (offline at the stop, or not
         * loaded then) is opened now, as after an unclean stop it all is. */
        job->deferred = clean && job->start >= 0 && job->end >= job->start;
        deferred += job->deferred;
    }
    run_load_pool(&pool, m->cfg.recovery_threads_per_data_dir);
    bool registered_all = true;

    struct partition_log_recovery_stats total = {0};
    size_t recovered = 0;
    for (size_t i = 0; i < pool.job_count; i++) {
        struct load_job *job = &pool.jobs[i];
        if (!job->log) {
            logger_error("log", "cannot load %s: %s", job->pdir, job->err);
        } else if (!job->deferred) {
            struct partition_log_recovery_stats one;
            partition_log_recovery_stats(job->log, &one);
            if (one.scanned_bytes > 0) {
                recovered++;
                total.scanned_bytes += one.scanned_bytes;
                total.scan_ns += one.scan_ns;
                total.producers_ns += one.producers_ns;
            }
            if (job->start >= 0)
                partition_log_restore_start_offset(job->log, job->start);
            /* After the start: the high watermark is clamped to it. A
             * partition missing from the file keeps following its log end
             * until the replica layer decides. */
            if (job->hw >= 0)
                partition_log_restore_high_watermark(job->log, job->hw);
        }
        if (job->log) {
            pthread_mutex_lock(&m->lock);
            int rc = log_manager_insert_locked(m, job->topic, job->partition, dir_index, job->log);
            pthread_mutex_unlock(&m->lock);
            if (rc != 0) {
                partition_log_close(job->log);
                job->log = NULL;
            }
        }
        if (!job->log || !job->deferred)
            registered_all = false;
        free(job->pdir);
        free(job->topic);
    }
    /* Each deferred partition found its own entry in both files, so equal
     * counts mean the files hold these partitions' values and nothing
     * else (no stale entry of a partition gone meanwhile). */
    *checkpoints_current = clean && registered_all && deferred == pool.job_count && n_recovery == deferred &&
                           n_starts == deferred;
    free(pool.jobs);
    if (clean)
        logger_info("log", "%s: %zu of %zu partitions registered from the checkpoints, loaded on first use", dir,
                    deferred, pool.job_count);
    if (!clean) {
        /* One line with the rescan rate: recovery time is what an operator
         * waits for after a crash. Scan and producer times are summed over
         * the recovery threads, so they may exceed the wall time. */
        int64_t wall_ns = clock_mono_ns() - load_start_ns;
        double mib = (double)total.scanned_bytes / (1024.0 * 1024.0);
        logger_info("log",
                    "%s: recovered %zu partitions, rescanned %.1f MiB in %.3f s (%.0f MiB/s; "
                    "scan %.3f s, producer state %.3f s; %" PRId32 " recovery threads)",
                    dir, recovered, mib, (double)wall_ns / 1e9, wall_ns > 0 ? mib / ((double)wall_ns / 1e9) : 0.0,
                    (double)total.scan_ns / 1e9, (double)total.producers_ns / 1e9,
                    m->cfg.recovery_threads_per_data_dir);
    }
    log_offset_checkpoint_free(recovery, n_recovery);
    log_offset_checkpoint_free(starts, n_starts);
    log_offset_checkpoint_free(hws, n_hws);
    free(marker);
    return 0;
}
