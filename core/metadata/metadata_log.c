/* The single-voter metadata log: __cluster_metadata-0 on top of the
 * partition log (batch building, durable append, replay by reading the
 * segments back) plus its snapshot files, behind metadata_log_ops. */
#include "metadata/metadata_log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/partition_log.h"
#include "metadata/metadata_snapshot.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"
/* A topic with many partitions is one batch; allow it generous room. */
#define METADATA_MAX_BATCH_BYTES (64 * 1024 * 1024)
#define REPLAY_READ_BYTES (1024 * 1024)

/* The single voter's first term, stamped on batches before any epoch was
 * recorded; existing logs keep whatever epoch their batches carry. */
#define SINGLE_VOTER_FIRST_EPOCH 1

/* A committed batch waiting for the listener: its records copied. */
struct pending_batch {
    struct pending_batch *next;
    struct metadata_batch batch;
    struct metadata_log_entry *entries;
    uint8_t *data;
};

struct metadata_log {
    struct partition_log *log;
    char dir[PATH_MAX];
    struct metadata_log_listener listener; /* handle_commit NULL until registered */
    /* Once a listener is registered, committed batches reach it from a
     * thread of the log's own, in order, as the Raft thread delivers them
     * in a quorum: the appender (a controller operation) does not run the
     * loader's subscribers, which create the partition logs, so it can
     * answer within a request's TimeoutMs. mu guards the queue and flags. */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct pending_batch *head, *tail;
    bool delivering; /* the thread runs */
    bool stopping;
    pthread_t thread;
};

typedef int (*batch_fn)(void *ctx, const struct metadata_batch *batch);

int metadata_log_open(const char *parent_dir, struct metadata_log **out, char *err, size_t errlen)
{
    *out = NULL;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent_dir, METADATA_LOG_TOPIC_DIR) >= sizeof(path)) {
        snprintf(err, errlen, "metadata log path too long under %s", parent_dir);
        return -1;
    }
    if (fs_mkdir_p(path, err, errlen) != 0)
        return -1;
    struct metadata_log *ml = calloc(1, sizeof(*ml));
    if (!ml) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(ml->dir, path, sizeof(ml->dir));
    pthread_mutex_init(&ml->mu, NULL);
    pthread_cond_init(&ml->cond, NULL);
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.max_message_bytes = METADATA_MAX_BATCH_BYTES;
    /* Small and the source of truth: always validate it fully at open. */
    if (partition_log_open(path, &cfg, true, &ml->log, err, errlen) != 0) {
        free(ml);
        return -1;
    }
    *out = ml;
    return 0;
}

static void *delivery_main(void *arg)
{
    struct metadata_log *log = arg;
    pthread_mutex_lock(&log->mu);
    for (;;) {
        while (!log->head && !log->stopping)
            pthread_cond_wait(&log->cond, &log->mu);
        struct pending_batch *p = log->head;
        if (!p || log->stopping)
            break;
        log->head = p->next;
        if (!log->head)
            log->tail = NULL;
        pthread_mutex_unlock(&log->mu);
        log->listener.handle_commit(log->listener.ctx, &p->batch);
        free(p->entries);
        free(p->data);
        free(p);
        pthread_mutex_lock(&log->mu);
    }
    pthread_mutex_unlock(&log->mu);
    return NULL;
}

/* Queues a committed batch for the delivery thread; copies the records. */
static int enqueue_commit(struct metadata_log *log, const struct metadata_batch *batch)
{
    struct pending_batch *p = calloc(1, sizeof *p);
    size_t total = 0;
    for (int32_t i = 0; i < batch->count; i++)
        total += batch->records[i].len;
    if (p) {
        p->entries = calloc((size_t)(batch->count > 0 ? batch->count : 1), sizeof *p->entries);
        p->data = malloc(total ? total : 1);
    }
    if (!p || !p->entries || !p->data) {
        if (p) {
            free(p->entries);
            free(p->data);
        }
        free(p);
        return -1;
    }
    size_t at = 0;
    for (int32_t i = 0; i < batch->count; i++) {
        memcpy(p->data + at, batch->records[i].value, batch->records[i].len);
        p->entries[i] = (struct metadata_log_entry){p->data + at, batch->records[i].len};
        at += batch->records[i].len;
    }
    p->batch = *batch;
    p->batch.records = p->entries;
    pthread_mutex_lock(&log->mu);
    if (log->tail)
        log->tail->next = p;
    else
        log->head = p;
    log->tail = p;
    pthread_cond_signal(&log->cond);
    pthread_mutex_unlock(&log->mu);
    return 0;
}

void metadata_log_stop_delivery(struct metadata_log *log)
{
    if (!log)
        return;
    pthread_mutex_lock(&log->mu);
    bool running = log->delivering;
    log->stopping = true;
    log->delivering = false;
    pthread_cond_signal(&log->cond);
    pthread_mutex_unlock(&log->mu);
    if (running)
        pthread_join(log->thread, NULL);
    /* Batches not delivered are in the log: the next open replays them. */
    while (log->head) {
        struct pending_batch *p = log->head;
        log->head = p->next;
        free(p->entries);
        free(p->data);
        free(p);
    }
    log->tail = NULL;
}

void metadata_log_close(struct metadata_log *log)
{
    if (!log)
        return;
    metadata_log_stop_delivery(log);
    pthread_mutex_destroy(&log->mu);
    pthread_cond_destroy(&log->cond);
    if (log->log) {
        partition_log_flush(log->log);
        partition_log_close(log->log);
    }
    free(log);
}

int64_t metadata_log_end_offset(struct metadata_log *log)
{
    return partition_log_end_offset(log->log);
}

/* Entries of one batch, reused across batches of a replay. */
struct entry_buf {
    struct metadata_log_entry *v;
    int32_t cap;
};

/* Hands the records of one batch at or after from to fn; returns fn's
 * non-zero result, -1 on OOM, or 0 (damaged batches are skipped, as before). */
static int replay_batch(const uint8_t *batch, size_t len, int64_t from, struct entry_buf *eb, batch_fn fn, void *ctx)
{
    struct record_batch_header h;
    if (record_batch_parse_header(batch, len, &h) != 0)
        return 0;
    if (record_batch_is_control(&h))
        return 0;
    if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
        logger_warn(LOG_COMPONENT, "skipping compressed metadata batch at offset %lld", (long long)h.base_offset);
        return 0;
    }
    struct record_batch_record_iter it;
    if (record_batch_records_begin(&it, batch, len) != 0) {
        logger_warn(LOG_COMPONENT, "skipping metadata batch at offset %lld: %s", (long long)h.base_offset, it.err);
        return 0;
    }
    struct metadata_batch mb = {.base_offset = -1,
                                .epoch = h.partition_leader_epoch,
                                .append_time_ms = h.max_timestamp,
                                .records = NULL,
                                .bytes = len};
    int32_t n = 0;
    struct record_batch_record rec;
    int more;
    while ((more = record_batch_records_next(&it, &rec)) == 1) {
        if (rec.offset < from)
            continue;
        if (rec.value_len < 0) {
            logger_warn(LOG_COMPONENT, "metadata record at offset %lld has no value", (long long)rec.offset);
            continue;
        }
        /* A record skipped in the middle would shift offsets: deliver what came before it. */
        if (n > 0 && rec.offset != mb.base_offset + n) {
            mb.records = eb->v;
            mb.count = n;
            int rc = fn(ctx, &mb);
            if (rc != 0)
                return rc;
            n = 0;
        }
        if (n == eb->cap) {
            int32_t cap = eb->cap ? eb->cap * 2 : 64;
            struct metadata_log_entry *grown = realloc(eb->v, (size_t)cap * sizeof(*grown));
            if (!grown)
                return -1;
            eb->v = grown;
            eb->cap = cap;
        }
        if (n == 0)
            mb.base_offset = rec.offset;
        eb->v[n++] = (struct metadata_log_entry){rec.value, (size_t)rec.value_len};
    }
    if (more < 0)
        logger_warn(LOG_COMPONENT, "metadata batch at offset %lld is malformed: %s", (long long)h.base_offset, it.err);
    if (n == 0)
        return 0;
    mb.records = eb->v;
    mb.count = n;
    return fn(ctx, &mb);
}

/* Calls fn for every batch holding records at or after from, in offset order. */
static int replay_from(struct metadata_log *log, int64_t from, batch_fn fn, void *ctx, char *err, size_t errlen)
{
    int64_t offset = partition_log_start_offset(log->log);
    if (from > offset)
        offset = from;
    int64_t end = partition_log_end_offset(log->log);
    uint8_t *buf = NULL;
    size_t cap = 0;
    struct entry_buf eb = {0};
    int result = 0;
    while (offset < end) {
        struct log_read_result rd;
        int16_t code = partition_log_read(log->log, offset, REPLAY_READ_BYTES, INT64_MAX, &rd);
        if (code != KAFKA_ERR_NONE) {
            snprintf(err, errlen, "reading the metadata log at offset %lld failed (error %d)", (long long)offset,
                     (int)code);
            result = -1;
            break;
        }
        if (rd.len <= 0) {
            if (rd.fd >= 0)
                close(rd.fd);
            break;
        }
        if ((size_t)rd.len > cap) {
            uint8_t *grown = realloc(buf, (size_t)rd.len);
            if (!grown) {
                close(rd.fd);
                snprintf(err, errlen, "out of memory reading the metadata log");
                result = -1;
                break;
            }
            buf = grown;
            cap = (size_t)rd.len;
        }
        size_t got = 0;
        while (got < (size_t)rd.len) {
            ssize_t n = pread(rd.fd, buf + got, (size_t)rd.len - got, rd.file_pos + (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        close(rd.fd);
        if (got < (size_t)rd.len) {
            snprintf(err, errlen, "short read from the metadata log at offset %lld", (long long)offset);
            result = -1;
            break;
        }
        struct record_batch_iter it;
        record_batch_iter_init(&it, buf, got);
        const uint8_t *batch;
        size_t batch_len;
        int64_t next = offset;
        while (record_batch_iter_next(&it, &batch, &batch_len) == 1) {
            struct record_batch_header h;
            if (record_batch_parse_header(batch, batch_len, &h) != 0)
                break;
            int64_t last = record_batch_last_offset(&h);
            /* A read may begin at a batch holding offsets already replayed. */
            if (last >= offset && (result = replay_batch(batch, batch_len, offset, &eb, fn, ctx)) != 0) {
                snprintf(err, errlen, "replaying the metadata log stopped at offset %lld", (long long)h.base_offset);
                break;
            }
            if (last + 1 > next)
                next = last + 1;
        }
        if (result != 0)
            break;
        if (next <= offset) {
            snprintf(err, errlen, "metadata log makes no progress at offset %lld", (long long)offset);
            result = -1;
            break;
        }
        offset = next;
    }
    free(buf);
    free(eb.v);
    return result;
}

int metadata_log_append(struct metadata_log *log, const struct metadata_log_entry *entries, int32_t count,
                        int32_t leader_epoch, int64_t *base_offset_out, char *err, size_t errlen)
{
    if (count <= 0) {
        snprintf(err, errlen, "empty metadata batch");
        return -1;
    }
    int64_t now = clock_wall_ms();
    struct record_batch_builder b;
    record_batch_builder_init(&b, now);
    for (int32_t i = 0; i < count; i++) {
        if (entries[i].len > INT32_MAX ||
            record_batch_builder_add(&b, now, NULL, -1, entries[i].value, (int32_t)entries[i].len, NULL, 0) != 0) {
            record_batch_builder_free(&b);
            snprintf(err, errlen, "could not build the metadata batch");
            return -1;
        }
    }
    uint8_t *batch = NULL;
    size_t batch_len = 0;
    if (record_batch_builder_finish(&b, &batch, &batch_len) != 0) {
        record_batch_builder_free(&b);
        snprintf(err, errlen, "could not build the metadata batch");
        return -1;
    }
    record_batch_builder_free(&b);
    struct log_append_result res;
    memset(&res, 0, sizeof(res));
    int16_t code = partition_log_append(log->log, batch, batch_len, leader_epoch, &res);
    free(batch);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "metadata log append failed (error %d): %s", (int)code, res.error_message);
        return -1;
    }
    code = partition_log_flush(log->log);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "metadata log fsync failed (error %d)", (int)code);
        return -1;
    }
    *base_offset_out = res.base_offset;
    if (log->listener.handle_commit) {
        /* Appended and synced: committed, for a single voter. */
        struct metadata_batch mb = {.base_offset = res.base_offset,
                                    .epoch = leader_epoch,
                                    .append_time_ms = now,
                                    .records = entries,
                                    .count = count,
                                    .bytes = batch_len};
        pthread_mutex_lock(&log->mu);
        bool queued = log->delivering;
        pthread_mutex_unlock(&log->mu);
        if (!queued) {
            log->listener.handle_commit(log->listener.ctx, &mb);
        } else if (enqueue_commit(log, &mb) != 0) {
            /* Appended and synced: the next open replays it. */
            snprintf(err, errlen, "out of memory handing the committed batch to the loader");
            return -1;
        }
    }
    return 0;
}

/* ---- metadata_log_ops of the single voter ---- */

static int local_register_listener(void *ctx, const struct metadata_log_listener *listener, char *err, size_t errlen)
{
    struct metadata_log *log = ctx;
    struct metadata_snapshot_id id = {.end_offset = 0, .epoch = 0};
    metadata_snapshot_remove_parts(log->dir);
    int found = metadata_snapshot_latest(log->dir, &id, err, errlen);
    if (found < 0)
        return -1;
    if (found) {
        int64_t end = partition_log_end_offset(log->log);
        if (id.end_offset > end) {
            snprintf(err, errlen, "metadata snapshot at offset %lld is ahead of the metadata log, which ends at %lld",
                     (long long)id.end_offset, (long long)end);
            return -1;
        }
        struct metadata_snapshot_contents snap;
        if (metadata_snapshot_read(log->dir, &id, &snap, err, errlen) != 0)
            return -1;
        int rc = listener->handle_load_snapshot(listener->ctx, &id, snap.records, snap.count);
        metadata_snapshot_contents_free(&snap);
        if (rc != 0) {
            snprintf(err, errlen, "loading the metadata snapshot at offset %lld failed", (long long)id.end_offset);
            return -1;
        }
    }
    if (replay_from(log, id.end_offset, listener->handle_commit, listener->ctx, err, errlen) != 0)
        return -1;
    log->listener = *listener;
    pthread_mutex_lock(&log->mu);
    /* Without the thread, appends deliver inline (as before a listener). */
    log->delivering = !log->stopping && pthread_create(&log->thread, NULL, delivery_main, log) == 0;
    pthread_mutex_unlock(&log->mu);
    return 0;
}

static int local_append(void *ctx, int32_t epoch, const struct metadata_log_entry *records, int32_t count,
                        int64_t *last_offset, char *err, size_t errlen)
{
    int64_t base = -1;
    if (metadata_log_append(ctx, records, count, epoch, &base, err, errlen) != 0)
        return -1;
    *last_offset = base + count - 1;
    return 0;
}

static int32_t local_leader_epoch(void *ctx)
{
    struct metadata_log *log = ctx;
    int32_t epoch = partition_log_latest_epoch(log->log);
    return epoch >= 0 ? epoch : SINGLE_VOTER_FIRST_EPOCH;
}

static int64_t local_end_offset(void *ctx)
{
    return metadata_log_end_offset(ctx);
}

static bool local_latest_snapshot(void *ctx, struct metadata_snapshot_id *out)
{
    struct metadata_log *log = ctx;
    char err[256];
    return metadata_snapshot_latest(log->dir, out, err, sizeof(err)) == 1;
}

static int local_create_snapshot(void *ctx, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                                 const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen)
{
    struct metadata_log *log = ctx;
    if (metadata_snapshot_write(log->dir, id, last_timestamp_ms, records, count, err, errlen) != 0)
        return -1;
    /* Log segments behind the snapshot stay for now: they are small, and
     * deleting them waits for the log start offset to follow snapshots. */
    metadata_snapshot_prune(log->dir, METADATA_SNAPSHOTS_KEPT);
    return 0;
}

const struct metadata_log_ops metadata_local_log_ops = {
    .register_listener = local_register_listener,
    .append = local_append,
    .leader_epoch = local_leader_epoch,
    .end_offset = local_end_offset,
    .latest_snapshot = local_latest_snapshot,
    .create_snapshot = local_create_snapshot,
};
