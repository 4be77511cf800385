/* Replay of __consumer_offsets into a load visitor: each partition from
 * its log start to its end, batch by batch, record by record.
 * Transactional offsets are held per producer until a COMMIT or ABORT
 * marker of that producer appears later in the same partition. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group/group_log.h"
#include "group/group_log_codec.h"
#include "group/group_log_internal.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/logger.h"

/* Warnings per partition before only a count is kept. */
#define LOAD_WARN_LIMIT 10

/* A transactional offset read before its producer's marker. */
struct pending_txn_offset {
    int64_t producer_id;
    char *group_id;
    struct group_offset_record record; /* topic and metadata owned here */
    /* A plain commit of the same partition came later in the log: Kafka
     * keeps the newer write, so the COMMIT marker must not apply this. */
    bool superseded;
};

/* One partition's replay; owned by the loading thread. */
struct partition_loader {
    const struct group_load_visitor *visitor;
    void *ctx;
    const char *dir;
    int32_t partition;
    int64_t records;
    int64_t skipped;
    /* Log order; entries of one producer leave together at its marker. */
    struct pending_txn_offset *pending;
    size_t pending_count, pending_cap;
};

static void loader_skip(struct partition_loader *l, int64_t offset, const char *why)
{
    l->skipped++;
    if (l->skipped <= LOAD_WARN_LIMIT)
        logger_warn("group", "%s-%d offset %" PRId64 ": skipping record: %s", GROUP_LOG_TOPIC, (int)l->partition,
                    offset, why);
}

static void pending_free(struct pending_txn_offset *p)
{
    free(p->group_id);
    free((char *)p->record.topic);
    free((char *)p->record.metadata);
}

static bool pending_same_key(const struct pending_txn_offset *p, const char *group_id, const char *topic,
                             int32_t partition)
{
    return p->record.partition == partition && strcmp(p->record.topic, topic) == 0 &&
           strcmp(p->group_id, group_id) == 0;
}

static void pending_remove_at(struct partition_loader *l, size_t i)
{
    pending_free(&l->pending[i]);
    memmove(&l->pending[i], &l->pending[i + 1], (l->pending_count - i - 1) * sizeof *l->pending);
    l->pending_count--;
}

/* A plain commit of the partition: earlier transactional offsets for it
 * are older writes. (A plain deletion does not count: Kafka applies a
 * committed transaction's offset over a deleted one.) */
static void pending_supersede(struct partition_loader *l, const char *group_id, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < l->pending_count; i++)
        if (pending_same_key(&l->pending[i], group_id, topic, partition))
            l->pending[i].superseded = true;
}

/* Holds a transactional offset (NULL value: drops the producer's earlier
 * one for the partition) until its producer's marker. */
static void pending_put(struct partition_loader *l, int64_t producer_id, const char *group_id, const char *topic,
                        int32_t partition, const struct group_offset_record *value_or_null, int64_t offset)
{
    for (size_t i = 0; i < l->pending_count; i++) {
        if (l->pending[i].producer_id == producer_id && pending_same_key(&l->pending[i], group_id, topic, partition)) {
            pending_remove_at(l, i);
            break;
        }
    }
    if (!value_or_null)
        return;
    if (l->pending_count == l->pending_cap) {
        size_t cap = l->pending_cap ? l->pending_cap * 2 : 16;
        struct pending_txn_offset *grown = realloc(l->pending, cap * sizeof *grown);
        if (!grown) {
            loader_skip(l, offset, "out of memory holding a transactional offset");
            return;
        }
        l->pending = grown;
        l->pending_cap = cap;
    }
    struct pending_txn_offset p = {.producer_id = producer_id, .record = *value_or_null};
    p.group_id = strdup(group_id);
    p.record.topic = strdup(topic);
    p.record.partition = partition;
    p.record.metadata = value_or_null->metadata ? strdup(value_or_null->metadata) : NULL;
    if (!p.group_id || !p.record.topic || (value_or_null->metadata && !p.record.metadata)) {
        pending_free(&p);
        loader_skip(l, offset, "out of memory holding a transactional offset");
        return;
    }
    l->pending[l->pending_count++] = p;
}

/* A COMMIT or ABORT marker of producer_id: its held offsets are applied
 * (in log order) or dropped. */
static void pending_complete(struct partition_loader *l, int64_t producer_id, bool commit)
{
    size_t kept = 0;
    for (size_t i = 0; i < l->pending_count; i++) {
        struct pending_txn_offset *p = &l->pending[i];
        if (p->producer_id != producer_id) {
            l->pending[kept++] = *p;
            continue;
        }
        if (commit && !p->superseded && l->visitor->offset)
            l->visitor->offset(l->ctx, p->group_id, p->record.topic, p->record.partition, &p->record);
        pending_free(p);
    }
    l->pending_count = kept;
}

/* The end of the partition: what is still open stays pending (deliver
 * false: the load failed, drop it). */
static void pending_finish(struct partition_loader *l, bool deliver)
{
    for (size_t i = 0; i < l->pending_count; i++) {
        struct pending_txn_offset *p = &l->pending[i];
        if (deliver && !p->superseded && l->visitor->pending_offset)
            l->visitor->pending_offset(l->ctx, p->group_id, p->producer_id, p->record.topic, p->record.partition,
                                       &p->record);
        pending_free(p);
    }
    free(l->pending);
    l->pending = NULL;
    l->pending_count = l->pending_cap = 0;
}

/* Control record key: version int16 (0), type int16 (0 ABORT, 1 COMMIT). */
static void load_control_batch(struct partition_loader *l, const uint8_t *batch, size_t len,
                               const struct record_batch_header *h)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (record_batch_records_begin(&it, batch, len) != 0 || record_batch_records_next(&it, &rec) != 1) {
        loader_skip(l, h->base_offset, "unreadable control batch");
        return;
    }
    if (rec.key_len < 4) {
        loader_skip(l, h->base_offset, "control record key too short");
        return;
    }
    int16_t version = (int16_t)(rec.key[0] << 8 | rec.key[1]);
    int16_t type = (int16_t)(rec.key[2] << 8 | rec.key[3]);
    if (version != 0)
        return; /* a newer marker layout: leave the transaction open */
    if (type == 0 || type == 1)
        pending_complete(l, h->producer_id, type == 1);
}

static void load_record(struct partition_loader *l, const struct record_batch_header *h,
                        const struct record_batch_record *rec, struct kafka_arena *arena)
{
    char why[192] = "";
    struct group_log_key key;
    if (rec->key_len < 0 || group_log_decode_key(rec->key, (size_t)rec->key_len, arena, &key, why, sizeof why) != 0) {
        loader_skip(l, rec->offset, rec->key_len < 0 ? "null key" : why);
        return;
    }
    bool tombstone = rec->value_len < 0;
    if (key.type == GROUP_LOG_KEY_OFFSET) {
        struct group_offset_record value;
        if (!tombstone &&
            group_log_decode_offset_value(rec->value, (size_t)rec->value_len, arena, &value, why, sizeof why) != 0) {
            loader_skip(l, rec->offset, why);
            return;
        }
        if (!tombstone) {
            value.topic = key.topic;
            value.partition = key.partition;
        }
        if (record_batch_is_transactional(h)) {
            pending_put(l, h->producer_id, key.group_id, key.topic, key.partition, tombstone ? NULL : &value,
                        rec->offset);
        } else {
            if (!tombstone)
                pending_supersede(l, key.group_id, key.topic, key.partition);
            if (l->visitor->offset)
                l->visitor->offset(l->ctx, key.group_id, key.topic, key.partition, tombstone ? NULL : &value);
        }
    } else if (record_batch_is_transactional(h)) {
        loader_skip(l, rec->offset, "group metadata in a transactional batch");
        return;
    } else {
        struct group_snapshot_record value;
        if (!tombstone && group_log_decode_group_value(rec->value, (size_t)rec->value_len, key.group_id, arena,
                                                       &value, why, sizeof why) != 0) {
            loader_skip(l, rec->offset, why);
            return;
        }
        if (l->visitor->group)
            l->visitor->group(l->ctx, key.group_id, tombstone ? NULL : &value);
    }
    l->records++;
}

/* Visits the records of one whole batch. */
static void load_batch(struct partition_loader *l, const uint8_t *batch, size_t len,
                       const struct record_batch_header *h)
{
    if (!record_batch_crc_ok(batch, len)) {
        loader_skip(l, h->base_offset, "batch CRC mismatch");
        return;
    }
    if (record_batch_compression(h) != RECORD_BATCH_COMPRESSION_NONE) {
        loader_skip(l, h->base_offset, "compressed batch");
        return;
    }
    if (record_batch_is_control(h)) {
        if (record_batch_is_transactional(h))
            load_control_batch(l, batch, len, h);
        return;
    }
    struct record_batch_record_iter it;
    if (record_batch_records_begin(&it, batch, len) != 0) {
        loader_skip(l, h->base_offset, it.err);
        return;
    }
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct record_batch_record rec;
    int rc;
    while ((rc = record_batch_records_next(&it, &rec)) == 1) {
        load_record(l, h, &rec, &arena);
        kafka_arena_free(&arena);
        kafka_arena_init(&arena);
    }
    kafka_arena_free(&arena);
    if (rc < 0)
        loader_skip(l, h->base_offset, it.err);
}

static int read_fully(int fd, uint8_t *buf, size_t len, int64_t pos)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(pos + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}

static int load_partition(struct partition_loader *l, struct partition_log *log, uint8_t **buf, size_t *cap,
                          size_t read_size, char *err, size_t errlen)
{
    int64_t offset = partition_log_start_offset(log);
    int64_t end = partition_log_end_offset(log);
    while (offset < end) {
        struct log_read_result rr;
        int16_t code = partition_log_read(log, offset, (int32_t)(read_size > INT32_MAX ? INT32_MAX : read_size),
                                          end, &rr);
        if (code == KAFKA_ERR_OFFSET_OUT_OF_RANGE && partition_log_start_offset(log) > offset) {
            offset = partition_log_start_offset(log); /* retention moved the start meanwhile */
            continue;
        }
        if (code != KAFKA_ERR_NONE) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": error %d", l->dir, offset, (int)code);
            return -1;
        }
        if (rr.len <= 0)
            break;
        if ((uint64_t)rr.len > (uint64_t)INT32_MAX) {
            close(rr.fd);
            snprintf(err, errlen, "%s: read of %" PRId64 " bytes at offset %" PRId64 " is too large", l->dir,
                     rr.len, offset);
            return -1;
        }
        if ((size_t)rr.len > *cap) {
            /* A single batch larger than the buffer: the log returns it whole. */
            uint8_t *grown = realloc(*buf, (size_t)rr.len);
            if (!grown) {
                close(rr.fd);
                snprintf(err, errlen, "out of memory reading %s", l->dir);
                return -1;
            }
            *buf = grown;
            *cap = (size_t)rr.len;
        }
        int rc = read_fully(rr.fd, *buf, (size_t)rr.len, rr.file_pos);
        close(rr.fd);
        if (rc != 0) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": %s", l->dir, offset, strerror(rc));
            return -1;
        }
        int64_t before = offset;
        struct record_batch_iter it;
        record_batch_iter_init(&it, *buf, (size_t)rr.len);
        const uint8_t *batch;
        size_t batch_len;
        while ((rc = record_batch_iter_next(&it, &batch, &batch_len)) == 1) {
            struct record_batch_header h;
            if (record_batch_parse_header(batch, batch_len, &h) != 0 || h.magic != RECORD_BATCH_MAGIC) {
                rc = -1;
                break;
            }
            if (record_batch_last_offset(&h) < offset)
                continue; /* the region may start before the offset wanted */
            load_batch(l, batch, batch_len, &h);
            offset = record_batch_last_offset(&h) + 1;
        }
        if (rc < 0) {
            /* The log hands out whole batches, so this is damage on disk past
             * which batch boundaries are unknown. */
            snprintf(err, errlen, "%s: malformed batch framing after offset %" PRId64, l->dir, offset);
            return -1;
        }
        if (offset <= before) {
            logger_warn("group", "%s: no progress reading at offset %" PRId64 "; stopping its load", l->dir, offset);
            break;
        }
    }
    return 0;
}

int group_log_load(struct group_log *gl, const struct group_load_visitor *visitor, void *ctx, char *err,
                   size_t errlen)
{
    if (!gl || !visitor) {
        snprintf(err, errlen, "group_log_load needs a group log and a visitor");
        return -1;
    }
    size_t cap = gl->load_buffer_size;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory for the %zu-byte load buffer", cap);
        return -1;
    }
    int rc = 0;
    for (int32_t p = 0; p < gl->partition_count && rc == 0; p++) {
        struct partition_log *log = gl->partitions[p];
        if (!log)
            continue;
        struct partition_loader l = {
            .visitor = visitor,
            .ctx = ctx,
            .dir = partition_log_dir(log),
            .partition = p,
        };
        rc = load_partition(&l, log, &buf, &cap, gl->load_buffer_size, err, errlen);
        if (rc == 0 && l.pending_count > 0)
            logger_info("group", "%s-%d: %zu transactional offset(s) await their transaction's end",
                        GROUP_LOG_TOPIC, (int)p, l.pending_count);
        pending_finish(&l, rc == 0);
        if (l.skipped > 0)
            logger_warn("group", "%s-%d: skipped %" PRId64 " unreadable record(s) or batch(es)", GROUP_LOG_TOPIC,
                        (int)p, l.skipped);
        if (l.records > 0)
            logger_debug("group", "%s-%d: loaded %" PRId64 " record(s)", GROUP_LOG_TOPIC, (int)p, l.records);
    }
    free(buf);
    return rc;
}
