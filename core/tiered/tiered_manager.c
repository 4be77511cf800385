/* The remote log manager's threads and partition table: a task thread
 * that queues tiered partitions every remote.log.manager.task.interval.ms,
 * and copier threads that take one partition at a time (its copies stay in
 * offset order; partitions proceed in parallel). */
#include "tiered/tiered_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin_host.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

#define TIERED_COPIER_NICE 10
/* ioprio_set(2): IOPRIO_WHO_PROCESS takes a thread id; class 2 (best
 * effort) << 13 | level 7, the lowest. */
#define TIERED_IOPRIO_WHO_PROCESS 1
#define TIERED_IOPRIO_BEST_EFFORT_LOWEST ((2 << 13) | 7)

struct tiered_partition *tiered_partition_find_locked(struct tiered *t, const char *topic, int32_t partition)
{
    /* Newest incarnation first: a recreated topic adds a later entry. */
    for (size_t i = t->part_count; i > 0; i--) {
        struct tiered_partition *p = t->parts[i - 1];
        if (!p->gone && p->partition == partition && strcmp(p->topic, topic) == 0)
            return p;
    }
    return NULL;
}

struct tiered_partition *tiered_partition_get_locked(struct tiered *t, const char *topic, int32_t partition,
                                                     const uint8_t topic_id[16])
{
    for (size_t i = 0; i < t->part_count; i++) {
        struct tiered_partition *p = t->parts[i];
        if (p->partition == partition && strcmp(p->topic, topic) == 0 && memcmp(p->topic_id, topic_id, 16) == 0)
            return p;
    }
    if (t->part_count == t->part_cap) {
        size_t cap = t->part_cap ? t->part_cap * 2 : 16;
        struct tiered_partition **grown = realloc(t->parts, cap * sizeof *grown);
        if (!grown)
            return NULL;
        t->parts = grown;
        t->part_cap = cap;
    }
    struct tiered_partition *p = calloc(1, sizeof *p);
    char id[33];
    tiered_hex(topic_id, 16, id);
    if (!p || !(p->topic = strdup(topic)) ||
        asprintf(&p->meta_path, "%s/%s-%" PRId32 "-%s.json", t->meta_dir, topic, partition, id) < 0) {
        if (p)
            free(p->topic);
        free(p);
        return NULL;
    }
    p->partition = partition;
    p->log_start_offset = -1;
    p->leading_epoch = p->synced_epoch = p->manifest_epoch = -1;
    memcpy(p->topic_id, topic_id, 16);
    pthread_mutex_init(&p->lock, NULL);
    t->parts[t->part_count++] = p;
    return p;
}

static void partition_free(struct tiered_partition *p)
{
    for (size_t i = 0; i < p->count; i++)
        tiered_segment_free(&p->segs[i]);
    free(p->segs);
    free(p->topic);
    free(p->meta_path);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void tiered_partition_offsets_locked(const struct tiered_partition *p, int64_t *remote_start, int64_t *copied_end)
{
    *remote_start = -1;
    *copied_end = -1;
    for (size_t i = 0; i < p->count; i++) {
        const struct tiered_segment *s = &p->segs[i];
        if (s->state != TIERED_COPY_FINISHED)
            continue;
        if (*remote_start < 0)
            *remote_start = s->start_offset;
        if (s->end_offset + 1 > *copied_end)
            *copied_end = s->end_offset + 1;
    }
}

void tiered_segment_view(const struct tiered *t, const struct tiered_partition *p, const struct tiered_segment *s,
                         struct cairn_remote_segment *out)
{
    (void)t;
    *out = (struct cairn_remote_segment){
        .struct_size = sizeof *out,
        .topic = p->topic,
        .partition = p->partition,
        .start_offset = s->start_offset,
        .end_offset = s->end_offset,
        .max_timestamp_ms = s->max_timestamp_ms,
        .broker_id = s->broker_id,
        .event_timestamp_ms = s->event_timestamp_ms,
        .segment_size_bytes = s->size_bytes,
        .epochs = s->epochs,
        .epoch_start_offsets = s->epoch_starts,
        .epoch_count = s->epoch_count,
        .custom_metadata = s->custom_len ? s->custom : NULL,
        .custom_metadata_len = s->custom_len,
    };
    memcpy(out->topic_id, p->topic_id, 16);
    memcpy(out->segment_id, s->id, 16);
}

/* Queues p for a copier unless it is queued or being worked on. Caller
 * holds t->lock. */
static void enqueue_locked(struct tiered *t, struct tiered_partition *p)
{
    if (p->queued || p->busy)
        return;
    if (t->queue_count == t->queue_cap) {
        size_t cap = t->queue_cap ? t->queue_cap * 2 : 16;
        struct tiered_partition **grown = realloc(t->queue, cap * sizeof *grown);
        if (!grown)
            return; /* the next pass tries again */
        t->queue = grown;
        t->queue_cap = cap;
    }
    t->queue[t->queue_count++] = p;
    p->queued = true;
    pthread_cond_signal(&t->work);
}

static void work_on(struct tiered *t, struct tiered_partition *p)
{
    if (p->gone)
        return;
    bool exists = !t->opts.topic_exists || t->opts.topic_exists(t->opts.ctx, p->topic_id);
    if (!exists)
        tiered_delete_partition(t, p);
    else
        tiered_copy_partition(t, p, clock_wall_ms());
}

/* A copier reads segments back and writes them to the store while the
 * producers that filled them keep producing, on the same cores and disk:
 * at background priority (nice 10, SCHED_BATCH, the lowest best-effort
 * I/O level) the request path wins the CPU, and copies take what is left.
 * Best effort: a sandbox may refuse any of it, and the copy goes on. */
static void copier_background_priority(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    struct sched_param param = {.sched_priority = 0};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
    (void)setpriority(PRIO_PROCESS, (id_t)tid, TIERED_COPIER_NICE);
    (void)syscall(SYS_ioprio_set, TIERED_IOPRIO_WHO_PROCESS, tid, TIERED_IOPRIO_BEST_EFFORT_LOWEST);
    (void)pthread_setname_np(pthread_self(), "cairn-rlm-copy");
}

static void *copier_main(void *arg)
{
    struct tiered *t = arg;
    copier_background_priority();
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->stopping && t->queue_count == 0)
            pthread_cond_wait(&t->work, &t->lock);
        if (t->stopping)
            break;
        struct tiered_partition *p = t->queue[0];
        memmove(t->queue, t->queue + 1, (t->queue_count - 1) * sizeof *t->queue);
        t->queue_count--;
        p->queued = false;
        p->busy = true;
        pthread_mutex_unlock(&t->lock);
        work_on(t, p);
        pthread_mutex_lock(&t->lock);
        p->busy = false;
        pthread_cond_broadcast(&t->work); /* tiered_run_once may wait for it */
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Every partition with a remote list, and every local log of a tiered
 * topic, goes to the copiers. */
static void queue_all(struct tiered *t)
{
    struct log_manager_partition *logs = NULL;
    size_t n = 0;
    if (log_manager_list(t->opts.logs, &logs, &n) != 0)
        return;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < n; i++) {
        struct log_config cfg;
        partition_log_get_config(logs[i].log, &cfg);
        uint8_t id[16];
        if (!cfg.remote_storage_enable || partition_log_topic_id(logs[i].log, id) != 0)
            continue;
        struct tiered_partition *p = tiered_partition_get_locked(t, logs[i].topic, logs[i].partition, id);
        if (p)
            enqueue_locked(t, p);
    }
    for (size_t i = 0; i < t->part_count; i++)
        if (!t->parts[i]->gone)
            enqueue_locked(t, t->parts[i]);
    pthread_mutex_unlock(&t->lock);
    log_manager_list_free(logs, n);
}

void tiered_run_once(struct tiered *t, int64_t now_ms)
{
    (void)now_ms;
    queue_all(t);
    pthread_mutex_lock(&t->lock);
    for (;;) {
        bool idle = t->queue_count == 0;
        for (size_t i = 0; idle && i < t->part_count; i++)
            idle = !t->parts[i]->busy;
        if (idle || t->stopping)
            break;
        pthread_cond_wait(&t->work, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
}

static void *task_main(void *arg)
{
    struct tiered *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stopping) {
        pthread_mutex_unlock(&t->lock);
        queue_all(t);
        pthread_mutex_lock(&t->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = until.tv_nsec + (t->opts.task_interval_ms % 1000) * 1000000;
        until.tv_sec += (time_t)(t->opts.task_interval_ms / 1000 + ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        while (!t->stopping && pthread_cond_timedwait(&t->tick, &t->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Before any fetch: the local logs learn their remote start and copied end. */
static void publish_all(struct tiered *t)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->part_count; i++) {
        struct tiered_partition *p = t->parts[i];
        struct partition_log *log = log_manager_get(t->opts.logs, p->topic, p->partition);
        uint8_t id[16];
        if (log && partition_log_topic_id(log, id) == 0 && memcmp(id, p->topic_id, 16) == 0) {
            int64_t start, end;
            pthread_mutex_lock(&p->lock);
            tiered_partition_offsets_locked(p, &start, &end);
            pthread_mutex_unlock(&p->lock);
            partition_log_set_remote_offsets(log, start, end);
            if (p->log_start_offset >= 0)
                partition_log_delete_records_before(log, p->log_start_offset);
        }
        if (log)
            partition_log_close(log);
    }
    pthread_mutex_unlock(&t->lock);
}

void tiered_set_quotas(struct tiered *t, int64_t copy_max_bytes_per_second, int64_t fetch_max_bytes_per_second)
{
    if (!t)
        return;
    tiered_quota_set_bound(&t->copy_quota, copy_max_bytes_per_second);
    tiered_quota_set_bound(&t->fetch_quota, fetch_max_bytes_per_second);
    pthread_mutex_lock(&t->lock);
    pthread_cond_broadcast(&t->quota_wake);
    pthread_mutex_unlock(&t->lock);
    logger_info("tiered",
                "remote quotas now remote.log.manager.copy.max.bytes.per.second=%" PRId64
                " remote.log.manager.fetch.max.bytes.per.second=%" PRId64,
                copy_max_bytes_per_second, fetch_max_bytes_per_second);
}

int tiered_start(const struct tiered_options *opts, struct tiered **out, char *err, size_t errlen)
{
    *out = NULL;
    struct tiered *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->opts = *opts;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->work, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->tick, &attr);
    pthread_cond_init(&t->quota_wake, &attr);
    pthread_condattr_destroy(&attr);
    tiered_quota_init(&t->copy_quota, opts->copy_max_bytes_per_second, opts->copy_quota_window_num,
                      (int64_t)opts->copy_quota_window_seconds * 1000);
    tiered_quota_init(&t->fetch_quota, opts->fetch_max_bytes_per_second, opts->fetch_quota_window_num,
                      (int64_t)opts->fetch_quota_window_seconds * 1000);
    tiered_metrics_register(&t->metrics);
    if (!plugin_host_remote_storage(opts->plugins, &t->rsm, &t->rsm_instance, &t->plugin_name)) {
        snprintf(err, errlen,
                 "remote.log.storage.system.enable is true but no plugin in plugins= provides remote "
                 "storage (e.g. storage-local)");
        goto fail;
    }
    if (asprintf(&t->meta_dir, "%s/remote-log-metadata", opts->state_dir) < 0) {
        t->meta_dir = NULL;
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (fs_mkdir_p(t->meta_dir, err, errlen) != 0 || tiered_metadata_load_all(t, err, errlen) != 0 ||
        tiered_cache_create(t, err, errlen) != 0)
        goto fail;
    publish_all(t);
    size_t copiers = opts->copier_threads > 0 ? (size_t)opts->copier_threads : 1;
    t->copiers = calloc(copiers, sizeof *t->copiers);
    if (!t->copiers) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (; t->copier_count < copiers; t->copier_count++) {
        if (pthread_create(&t->copiers[t->copier_count], NULL, copier_main, t) != 0) {
            snprintf(err, errlen, "cannot start a remote log copier thread");
            goto fail;
        }
    }
    if (pthread_create(&t->task_thread, NULL, task_main, t) != 0) {
        snprintf(err, errlen, "cannot start the remote log manager thread");
        goto fail;
    }
    t->task_started = true;
    logger_info("tiered", "remote log manager: plugin %s, %zu partitions with remote segments, %zu copiers",
                t->plugin_name, t->part_count, t->copier_count);
    *out = t;
    return 0;
fail:
    tiered_stop(t);
    return -1;
}

void tiered_stop(struct tiered *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    pthread_cond_broadcast(&t->work);
    pthread_cond_broadcast(&t->tick);
    pthread_cond_broadcast(&t->quota_wake);
    pthread_mutex_unlock(&t->lock);
    if (t->task_started)
        pthread_join(t->task_thread, NULL);
    for (size_t i = 0; i < t->copier_count; i++)
        pthread_join(t->copiers[i], NULL);
    tiered_cache_destroy(t);
    for (size_t i = 0; i < t->part_count; i++)
        partition_free(t->parts[i]);
    free(t->parts);
    free(t->queue);
    free(t->copiers);
    free(t->meta_dir);
    pthread_cond_destroy(&t->work);
    pthread_cond_destroy(&t->tick);
    pthread_cond_destroy(&t->quota_wake);
    tiered_quota_destroy(&t->copy_quota);
    tiered_quota_destroy(&t->fetch_quota);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
