#include "raft/raft_shell_metadata.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log_manager.h"
#include "metadata/metadata_snapshot.h"
#include "protocol/record_batch.h"
#include "raft/raft_codec.h"
#include "util/clock.h"
#include "util/logger.h"

struct raft_shell_metadata {
    pthread_mutex_t mu; /* guards shell, listener and delivered_end */
    struct raft_shell *shell;
    struct metadata_log_listener listener;
    int64_t delivered_end; /* written on the raft thread: offsets below it were handed to the listener */
    /* Set before the listener registers, read-only after: where the
     * quorum's log keeps its snapshot files (empty: no snapshots). */
    char snapshot_dir[PATH_MAX];
    struct metadata_snapshot_id latest; /* guarded by mu */
    bool have_latest;
};

int raft_shell_metadata_set_dir(struct raft_shell_metadata *log, const char *dir, char *err, size_t errlen)
{
    if ((size_t)snprintf(log->snapshot_dir, sizeof log->snapshot_dir, "%s/%s", dir, LOG_MANAGER_METADATA_DIR) >=
        sizeof log->snapshot_dir) {
        log->snapshot_dir[0] = '\0';
        snprintf(err, errlen, "metadata log path too long under %s", dir);
        return -1;
    }
    return 0;
}

struct raft_shell_metadata *raft_shell_metadata_create(void)
{
    struct raft_shell_metadata *log = calloc(1, sizeof *log);
    if (log)
        pthread_mutex_init(&log->mu, NULL);
    return log;
}

void raft_shell_metadata_destroy(struct raft_shell_metadata *log)
{
    if (!log)
        return;
    pthread_mutex_destroy(&log->mu);
    free(log);
}

void raft_shell_metadata_attach(struct raft_shell_metadata *log, struct raft_shell *shell)
{
    pthread_mutex_lock(&log->mu);
    log->shell = shell;
    pthread_mutex_unlock(&log->mu);
}

/* The records of one committed entry (its batch) to the listener. Offsets
 * come from the entry: the leader's copy of a batch it built has none. */
static int deliver_entry(const struct metadata_log_listener *listener, const struct raft_entry *e)
{
    struct metadata_log_entry *records = calloc((size_t)e->count, sizeof *records);
    if (!records)
        return -1;
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    int32_t n = 0;
    int rc = record_batch_records_begin(&it, e->data, e->len);
    while (rc == 0 && n < e->count && (rc = record_batch_records_next(&it, &rec)) == 1) {
        records[n++] = (struct metadata_log_entry){.value = rec.value,
                                                   .len = rec.value_len > 0 ? (size_t)rec.value_len : 0};
        rc = 0;
    }
    if (rc < 0 || n != e->count) {
        free(records);
        return -1;
    }
    struct metadata_batch batch = {.base_offset = e->offset,
                                   .epoch = e->epoch,
                                   .append_time_ms = clock_wall_ms(),
                                   .records = records,
                                   .count = n,
                                   .bytes = e->len};
    rc = listener->handle_commit(listener->ctx, &batch);
    free(records);
    return rc;
}

/* On the raft thread: every entry now below the high watermark, once. The
 * leader's LeaderChange entries are the quorum's own, not metadata. */
static void on_high_watermark(void *ctx, struct raft_shell *shell, int64_t hw)
{
    struct raft_shell_metadata *log = ctx;
    pthread_mutex_lock(&log->mu);
    struct metadata_log_listener listener = log->listener;
    pthread_mutex_unlock(&log->mu);
    for (int64_t next = log->delivered_end; next < hw;) {
        const struct raft_entry *e = raft_shell_entry(shell, next);
        if (!e)
            break;
        next = e->offset + e->count;
        if (!raft_codec_is_leader_change(e) && listener.handle_commit && deliver_entry(&listener, e) != 0)
            logger_error("raft", "the metadata listener failed on the committed entry at offset %lld",
                         (long long)e->offset);
        /* Moved after the listener has it: a leader writes only once its
         * image holds everything its log does (qm_leader_epoch). */
        pthread_mutex_lock(&log->mu);
        log->delivered_end = next;
        pthread_mutex_unlock(&log->mu);
    }
}

/* On the raft thread: a snapshot downloaded from the leader replaces the
 * image; deliveries go on after it. */
static int on_snapshot(void *ctx, struct raft_shell *shell, int64_t end_offset, int32_t epoch, char *err, size_t errlen)
{
    (void)shell;
    struct raft_shell_metadata *log = ctx;
    pthread_mutex_lock(&log->mu);
    struct metadata_log_listener listener = log->listener;
    pthread_mutex_unlock(&log->mu);
    struct metadata_snapshot_id id = {end_offset, epoch};
    struct metadata_snapshot_contents snap;
    if (!listener.handle_load_snapshot) {
        snprintf(err, errlen, "the metadata listener loads no snapshots");
        return -1;
    }
    if (metadata_snapshot_read(log->snapshot_dir, &id, &snap, err, errlen) != 0)
        return -1;
    int rc = listener.handle_load_snapshot(listener.ctx, &id, snap.records, snap.count);
    metadata_snapshot_contents_free(&snap);
    if (rc != 0) {
        snprintf(err, errlen, "loading the metadata snapshot at offset %lld failed", (long long)end_offset);
        return -1;
    }
    pthread_mutex_lock(&log->mu);
    log->delivered_end = end_offset;
    log->latest = id;
    log->have_latest = true;
    pthread_mutex_unlock(&log->mu);
    return 0;
}

struct raft_shell_listener raft_shell_metadata_listener(struct raft_shell_metadata *log)
{
    return (struct raft_shell_listener){.ctx = log, .on_high_watermark = on_high_watermark, .on_snapshot = on_snapshot};
}

static struct raft_shell *shell_of(struct raft_shell_metadata *log)
{
    pthread_mutex_lock(&log->mu);
    struct raft_shell *shell = log->shell;
    pthread_mutex_unlock(&log->mu);
    return shell;
}

/* Hands the newest snapshot that reads back whole to the listener and
 * starts deliveries after it: the log's entries below its end offset are
 * in it. A snapshot that fails its checks (a torn write, a flipped bit) is
 * skipped with a log line for the next older one, and with none left the
 * whole log is replayed (its entries start at offset 0 while nothing
 * cleans the log). */
static int load_newest_snapshot(struct raft_shell_metadata *log, const struct metadata_log_listener *listener,
                                char *err, size_t errlen)
{
    if (!log->snapshot_dir[0] || !listener->handle_load_snapshot)
        return 0;
    metadata_snapshot_remove_parts(log->snapshot_dir);
    struct metadata_snapshot_id *ids = NULL;
    int n = metadata_snapshot_list(log->snapshot_dir, &ids, err, errlen);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int i = n - 1; i >= 0; i--) {
        struct metadata_snapshot_contents snap;
        char why[512];
        if (metadata_snapshot_read(log->snapshot_dir, &ids[i], &snap, why, sizeof why) != 0) {
            logger_warn("raft", "skipping the metadata snapshot at offset %lld, epoch %d: %s",
                        (long long)ids[i].end_offset, ids[i].epoch, why);
            continue;
        }
        rc = listener->handle_load_snapshot(listener->ctx, &ids[i], snap.records, snap.count);
        metadata_snapshot_contents_free(&snap);
        if (rc != 0) {
            snprintf(err, errlen, "loading the metadata snapshot at offset %lld failed", (long long)ids[i].end_offset);
            rc = -1;
            break;
        }
        logger_info("raft", "loaded the metadata snapshot at offset %lld, epoch %d; the log is replayed after it",
                    (long long)ids[i].end_offset, ids[i].epoch);
        pthread_mutex_lock(&log->mu);
        log->delivered_end = ids[i].end_offset;
        log->latest = ids[i];
        log->have_latest = true;
        pthread_mutex_unlock(&log->mu);
        break;
    }
    free(ids);
    return rc;
}

static int qm_register_listener(void *ctx, const struct metadata_log_listener *listener, char *err, size_t errlen)
{
    struct raft_shell_metadata *log = ctx;
    if (shell_of(log)) {
        snprintf(err, errlen, "register the metadata listener before the quorum starts");
        return -1;
    }
    pthread_mutex_lock(&log->mu);
    log->listener = *listener;
    pthread_mutex_unlock(&log->mu);
    return load_newest_snapshot(log, listener, err, errlen);
}

static int qm_append(void *ctx, int32_t epoch, const struct metadata_log_entry *records, int32_t count,
                     int64_t *last_offset, char *err, size_t errlen)
{
    struct raft_shell *shell = shell_of(ctx);
    if (!shell || count <= 0) {
        snprintf(err, errlen, shell ? "an empty metadata batch" : "the metadata quorum is not running");
        return -1;
    }
    struct raft_shell_record *list = calloc((size_t)count, sizeof *list);
    if (!list) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int32_t i = 0; i < count; i++)
        list[i] = (struct raft_shell_record){records[i].value, (uint32_t)records[i].len};
    int32_t at_epoch = -1;
    int rc = raft_shell_append(shell, epoch, list, count, &at_epoch, last_offset);
    free(list);
    if (rc == RAFT_ERR_NOT_LEADER) {
        struct raft_shell_status st;
        raft_shell_status(shell, &st);
        snprintf(err, errlen, "this node is not the quorum leader at epoch %d (epoch %d, leader %d)", epoch, st.epoch,
                 st.leader_id);
        return METADATA_LOG_NOT_LEADER;
    }
    if (rc != 0) {
        snprintf(err, errlen, "the metadata quorum could not take the batch");
        return -1;
    }
    return 0;
}

/* 1 when this node leads and its listener has every entry of its log, 0
 * when it leads but is still catching up, -1 when it does not lead. */
static int leader_state(struct raft_shell_metadata *log, int32_t *epoch)
{
    struct raft_shell *shell = shell_of(log);
    if (!shell)
        return -1;
    struct raft_shell_status st;
    raft_shell_status(shell, &st);
    if (st.role != RAFT_LEADER)
        return -1;
    *epoch = st.epoch;
    pthread_mutex_lock(&log->mu);
    bool caught_up = log->delivered_end >= st.end_offset;
    pthread_mutex_unlock(&log->mu);
    return caught_up ? 1 : 0;
}

static int32_t qm_leader_epoch(void *ctx)
{
    int32_t epoch = -1;
    return leader_state(ctx, &epoch) == 1 ? epoch : -1;
}

static bool qm_catching_up(void *ctx)
{
    int32_t epoch = -1;
    return leader_state(ctx, &epoch) == 0;
}

int32_t raft_shell_metadata_leader_id(struct raft_shell_metadata *log)
{
    struct raft_shell *shell = shell_of(log);
    if (!shell)
        return -1;
    struct raft_shell_status st;
    raft_shell_status(shell, &st);
    return st.leader_id;
}

bool raft_shell_metadata_node_endpoint(struct raft_shell_metadata *log, int32_t node_id, char *host, size_t hostlen,
                                       int *port)
{
    struct raft_shell *shell = shell_of(log);
    return shell && raft_shell_node_endpoint(shell, node_id, host, hostlen, port);
}

static int64_t qm_end_offset(void *ctx)
{
    struct raft_shell *shell = shell_of(ctx);
    if (!shell)
        return 0;
    struct raft_shell_status st;
    raft_shell_status(shell, &st);
    return st.end_offset;
}

static bool qm_latest_snapshot(void *ctx, struct metadata_snapshot_id *out)
{
    struct raft_shell_metadata *log = ctx;
    pthread_mutex_lock(&log->mu);
    bool have = log->have_latest;
    if (have)
        *out = log->latest;
    pthread_mutex_unlock(&log->mu);
    return have;
}

/* On the store's snapshot writer thread: the records are the image as of
 * id, and id.end_offset is at or below the high watermark (only committed
 * entries reach the loader). The raft thread hears of it through its
 * inbox, so cleaning behind it need not wait for the periodic check. */
static int qm_create_snapshot(void *ctx, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                              const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen)
{
    struct raft_shell_metadata *log = ctx;
    if (!log->snapshot_dir[0]) {
        snprintf(err, errlen, "the metadata quorum has no snapshot directory");
        return -1;
    }
    if (metadata_snapshot_write(log->snapshot_dir, id, last_timestamp_ms, records, count, err, errlen) != 0)
        return -1;
    metadata_snapshot_prune(log->snapshot_dir, METADATA_SNAPSHOTS_KEPT);
    pthread_mutex_lock(&log->mu);
    /* A snapshot downloaded while this one was written may be newer. */
    if (!log->have_latest || id->end_offset > log->latest.end_offset)
        log->latest = *id;
    log->have_latest = true;
    /* Under mu: the quorum detaches the shell before stopping it. */
    if (log->shell)
        raft_shell_snapshot_written(log->shell);
    pthread_mutex_unlock(&log->mu);
    return 0;
}

const struct metadata_log_ops raft_shell_metadata_ops = {
    .register_listener = qm_register_listener,
    .append = qm_append,
    .leader_epoch = qm_leader_epoch,
    .catching_up = qm_catching_up,
    .end_offset = qm_end_offset,
    .latest_snapshot = qm_latest_snapshot,
    .create_snapshot = qm_create_snapshot,
};
