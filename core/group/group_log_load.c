/* Replay of __consumer_offsets into a load visitor, record by record of the
 * batches internal_topic_replay hands over in log order.
 * Transactional offsets are held per producer until a COMMIT or ABORT
 * marker of that producer appears later in the same partition. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_log.h"
#include "group/group_log_codec.h"
#include "group/group_internal.h"
#include "group/group_log_internal.h"
#include "coordinator/internal_topic.h"
#include "protocol/record_batch.h"
#include "util/logger.h"

/* A transactional offset read before its producer's marker. */
struct pending_txn_offset {
    int64_t producer_id;
    char *group_id;
    struct group_offset_record record; /* topic and metadata owned here */
    /* A plain commit of the same partition came later in the log: Kafka
     * keeps the newer write, so the COMMIT marker must not apply this. */
    bool superseded;
};

/* The replay's state; owned by the loading thread. Per partition: records
 * and pending are reset when a partition ends. */
struct partition_loader {
    const struct group_load_visitor *visitor;
    void *ctx;
    struct internal_topic_replay *replay; /* the partition being replayed */
    int64_t records;
    /* Log order; entries of one producer leave together at its marker. */
    struct pending_txn_offset *pending;
    size_t pending_count, pending_cap;
};

static void loader_skip(struct partition_loader *l, int64_t offset, const char *why)
{
    internal_topic_replay_skip(l->replay, offset, why);
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
    p.record.metadata = group_strndup_bytes(value_or_null->metadata, value_or_null->metadata_len);
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
        if (!tombstone && group_log_decode_group_value(rec->value, (size_t)rec->value_len, key.group_id, arena, &value,
                                                       why, sizeof why) != 0) {
            loader_skip(l, rec->offset, why);
            return;
        }
        if (l->visitor->group)
            l->visitor->group(l->ctx, key.group_id, tombstone ? NULL : &value);
    }
    l->records++;
}

/* Visits the records of one whole batch. */
static void load_batch(void *ctx, struct internal_topic_replay *r, const uint8_t *batch, size_t len,
                       const struct record_batch_header *h)
{
    struct partition_loader *l = ctx;
    l->replay = r;
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

/* The end of a partition: markers never cross partitions, so what is still
 * pending is handed over (or dropped when the read failed) here. */
static void load_partition_done(void *ctx, struct internal_topic_replay *r, bool ok)
{
    struct partition_loader *l = ctx;
    if (ok && l->pending_count > 0)
        logger_info("group", "%s-%d: %zu transactional offset(s) await their transaction's end", GROUP_LOG_TOPIC,
                    (int)r->partition, l->pending_count);
    pending_finish(l, ok);
    if (l->records > 0)
        logger_debug("group", "%s-%d: loaded %" PRId64 " record(s)", GROUP_LOG_TOPIC, (int)r->partition, l->records);
    l->records = 0;
}

int group_log_load(struct group_log *gl, const struct group_load_visitor *visitor, void *ctx, char *err, size_t errlen)
{
    return group_log_load_partition(gl, -1, visitor, ctx, err, errlen);
}

int group_log_load_partition(struct group_log *gl, int32_t partition, const struct group_load_visitor *visitor,
                             void *ctx, char *err, size_t errlen)
{
    if (!gl || !visitor) {
        snprintf(err, errlen, "group_log_load needs a group log and a visitor");
        return -1;
    }
    struct partition_loader l = {.visitor = visitor, .ctx = ctx};
    if (partition < 0)
        return internal_topic_replay(gl->topic, gl->load_buffer_size, load_batch, load_partition_done, &l, err, errlen);
    return internal_topic_replay_partition(gl->topic, partition, gl->load_buffer_size, load_batch, load_partition_done,
                                           &l, err, errlen);
}

struct internal_topic *group_log_topic(const struct group_log *gl)
{
    return gl ? gl->topic : NULL;
}
