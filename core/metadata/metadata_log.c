/* __cluster_metadata-0 on top of the partition log: batch building, durable
 * append, and replay by reading the segments back. */
#include "metadata/metadata_log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"
/* A topic with many partitions is one batch; allow it generous room. */
#define METADATA_MAX_BATCH_BYTES (64 * 1024 * 1024)
#define REPLAY_READ_BYTES (1024 * 1024)

struct metadata_log {
    struct partition_log *log;
};

int metadata_log_open(const char *parent_dir, struct metadata_log **out, char *err, size_t errlen)
{
    *out = NULL;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent_dir, METADATA_LOG_TOPIC_DIR) >= sizeof(path)) {
        snprintf(err, errlen, "metadata log path too long under %s", parent_dir);
        return -1;
    }
    if (mkdir(parent_dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", parent_dir, strerror(errno));
        return -1;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    struct metadata_log *ml = calloc(1, sizeof(*ml));
    if (!ml) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
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

void metadata_log_close(struct metadata_log *log)
{
    if (!log)
        return;
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

/* Feeds the records of one batch to fn; returns fn's non-zero result or 0. */
static int replay_batch(const uint8_t *batch, size_t len, metadata_log_record_fn fn, void *ctx)
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
    struct record_batch_record rec;
    int more;
    while ((more = record_batch_records_next(&it, &rec)) == 1) {
        if (rec.value_len < 0) {
            logger_warn(LOG_COMPONENT, "metadata record at offset %lld has no value", (long long)rec.offset);
            continue;
        }
        int rc = fn(ctx, rec.offset, rec.value, (size_t)rec.value_len);
        if (rc != 0)
            return rc;
    }
    if (more < 0)
        logger_warn(LOG_COMPONENT, "metadata batch at offset %lld is malformed: %s", (long long)h.base_offset, it.err);
    return 0;
}

int metadata_log_replay(struct metadata_log *log, metadata_log_record_fn fn, void *ctx, char *err, size_t errlen)
{
    int64_t offset = partition_log_start_offset(log->log);
    int64_t end = partition_log_end_offset(log->log);
    uint8_t *buf = NULL;
    size_t cap = 0;
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
            if (last >= offset && (result = replay_batch(batch, batch_len, fn, ctx)) != 0)
                break;
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
    return 0;
}
