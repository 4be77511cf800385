/* Transactional offsets (TxnOffsetCommit): pending per producer until the
 * transaction's marker in the group's __consumer_offsets partition commits
 * or aborts them. Everything here runs under group_coordinator.lock. */
#include <stdlib.h>
#include <string.h>

#include "coordinator/coordinator_partition.h"
#include "coordinator/coordinator_runtime.h"
#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/lock_check.h"
#include "util/logger.h"

static void txn_offset_release(struct group_txn_offset *t)
{
    group_offset_release(&t->offset);
}

void group_txn_offsets_free(struct group *g)
{
    for (size_t i = 0; i < g->txn_offset_count; i++)
        txn_offset_release(&g->txn_offsets[i]);
    free(g->txn_offsets);
    g->txn_offsets = NULL;
    g->txn_offset_count = g->txn_offset_cap = 0;
}

bool group_txn_offset_pending(const struct group *g, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < g->txn_offset_count; i++) {
        const struct group_offset *o = &g->txn_offsets[i].offset;
        if (o->partition == partition && strcmp(o->topic, topic) == 0)
            return true;
    }
    return false;
}

static struct group_txn_offset *txn_offset_find(struct group *g, int64_t producer_id, const char *topic,
                                                int32_t partition)
{
    for (size_t i = 0; i < g->txn_offset_count; i++) {
        struct group_txn_offset *t = &g->txn_offsets[i];
        if (t->producer_id == producer_id && t->offset.partition == partition && strcmp(t->offset.topic, topic) == 0)
            return t;
    }
    return NULL;
}

/* Records (or replaces) the producer's pending offset for a partition.
 * Returns 0, or -1 when out of memory. */
static int txn_offset_put(struct group_coordinator *gc, struct group *g, int64_t producer_id,
                          const struct group_offset_record *rec)
{
    char *metadata = NULL;
    if (rec->metadata && !(metadata = group_strndup_bytes(rec->metadata, rec->metadata_len)))
        return -1;
    struct group_txn_offset *t = txn_offset_find(g, producer_id, rec->topic, rec->partition);
    if (!t) {
        if (g->txn_offset_count == g->txn_offset_cap) {
            size_t cap = g->txn_offset_cap ? g->txn_offset_cap * 2 : 8;
            struct group_txn_offset *n = realloc(g->txn_offsets, cap * sizeof *n);
            if (!n) {
                free(metadata);
                return -1;
            }
            g->txn_offsets = n;
            g->txn_offset_cap = cap;
        }
        char *topic = strdup(rec->topic);
        if (!topic) {
            free(metadata);
            return -1;
        }
        t = &g->txn_offsets[g->txn_offset_count++];
        *t = (struct group_txn_offset){.producer_id = producer_id, .offset = {.topic = topic}};
    }
    free(t->offset.metadata);
    t->offset.metadata = metadata;
    t->offset.metadata_len = metadata ? rec->metadata_len : 0;
    t->offset.partition = rec->partition;
    t->offset.offset = rec->offset;
    t->offset.leader_epoch = rec->leader_epoch;
    t->offset.commit_timestamp = rec->commit_timestamp;
    t->offset.expire_timestamp = rec->expire_timestamp;
    t->offset.write_seq = ++gc->write_seq;
    return 0;
}

/* Kafka's checks for TxnOffsetCommit: the member's identity and generation
 * when given, but not the rebalance state (the producer keeps its
 * transaction across a rebalance). A missing group counts as a new Empty one. */
static int16_t txn_commit_check(const struct group *g, const struct group_txn_commit_params *p)
{
    const char *member_id = p->member_id ? p->member_id : "";
    if (!g) {
        if (member_id[0])
            return KAFKA_ERR_UNKNOWN_MEMBER_ID;
        if (p->generation_id >= 0 && p->generation_id != 0)
            return KAFKA_ERR_ILLEGAL_GENERATION;
        return KAFKA_ERR_NONE;
    }
    if (g->state == GROUP_DEAD)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    if (p->group_instance_id) {
        struct group_member *by_instance = group_member_by_instance((struct group *)g, p->group_instance_id);
        if (by_instance && strcmp(by_instance->member_id, member_id) != 0)
            return KAFKA_ERR_FENCED_INSTANCE_ID;
    }
    if (member_id[0] && !group_member_find((struct group *)g, member_id))
        return KAFKA_ERR_UNKNOWN_MEMBER_ID;
    if (p->generation_id >= 0 && p->generation_id != g->generation)
        return KAFKA_ERR_ILLEGAL_GENERATION;
    return KAFKA_ERR_NONE;
}

/* The sync of a TxnOffsetCommit failed: its pending offsets are taken back,
 * so that no later marker of the producer commits what the client was told
 * failed. One the producer wrote again since (a newer number) stays. */
static void txn_commit_failed(struct group_coordinator *gc, const char *group_id, int64_t producer_id,
                              uint64_t first_seq, uint64_t last_seq)
{
    struct group_shard *shard = group_lock(gc, group_id);
    struct group *g = group_find(gc, group_id);
    if (g) {
        size_t kept = 0;
        for (size_t i = 0; i < g->txn_offset_count; i++) {
            struct group_txn_offset *t = &g->txn_offsets[i];
            uint64_t seq = t->offset.write_seq;
            if (t->producer_id == producer_id && seq >= first_seq && seq <= last_seq)
                txn_offset_release(t);
            else
                g->txn_offsets[kept++] = *t;
        }
        g->txn_offset_count = kept;
        if (group_unused(g))
            group_remove(gc, g);
    }
    group_unlock(shard);
}

void group_coordinator_txn_commit(struct group_coordinator *gc, const struct group_txn_commit_params *p,
                                  struct group_offset_commit *offsets, size_t count)
{
    struct group_sync_point sync_point = {.partition = -1, .end_offset = -1};
    bool need_sync = false;
    uint64_t first_seq = 0, last_seq = 0;
    struct group_shard *shard = group_lock(gc, p->group_id);
    int16_t err = group_coordinator_serving(gc, p->group_id);
    if (err == KAFKA_ERR_NONE && (!p->group_id || !p->group_id[0]))
        err = KAFKA_ERR_INVALID_GROUP_ID;
    /* The log refuses a transactional batch without a producer. */
    if (err == KAFKA_ERR_NONE && p->producer_id < 0)
        err = KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING;
    if (err == KAFKA_ERR_NONE && p->producer_epoch < 0)
        err = KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    struct group *g = NULL;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, p->group_id);
        err = txn_commit_check(g, p);
    }
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        if (offsets[i].error_code != KAFKA_ERR_NONE)
            continue;
        if (err != KAFKA_ERR_NONE)
            offsets[i].error_code = err;
        else if (!offsets[i].topic)
            offsets[i].error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        else if (offsets[i].metadata && offsets[i].metadata_len > (size_t)gc->opts.offset_metadata_max_bytes)
            offsets[i].error_code = KAFKA_ERR_OFFSET_METADATA_TOO_LARGE;
        else
            valid++;
    }
    if (valid == 0)
        goto out;

    bool created = false;
    if (!g) {
        g = group_get_or_create(gc, p->group_id);
        if (!g) {
            err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            goto fail;
        }
        created = true;
    }
    struct group_offset_record *recs = calloc(valid, sizeof *recs);
    if (!recs) {
        err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        goto fail_group;
    }
    int64_t wall = group_wall_now(gc);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (offsets[i].error_code != KAFKA_ERR_NONE)
            continue;
        recs[n++] = (struct group_offset_record){
            .topic = offsets[i].topic,
            .partition = offsets[i].partition,
            .offset = offsets[i].offset,
            .leader_epoch = offsets[i].leader_epoch,
            .metadata = offsets[i].metadata,
            .metadata_len = offsets[i].metadata_len,
            .commit_timestamp = wall,
            .expire_timestamp = -1,
        };
    }
    if (group_store_split_commits(gc)) {
        err = gc->opts.ops->append_txn_offsets(gc->opts.store, g->group_id, p->producer_id, p->producer_epoch, recs, n,
                                               &sync_point);
        need_sync = err == KAFKA_ERR_NONE;
    } else if (gc->opts.ops && gc->opts.ops->store_txn_offsets)
        err = gc->opts.ops->store_txn_offsets(gc->opts.store, g->group_id, p->producer_id, p->producer_epoch, recs, n);
    else if (gc->opts.ops)
        err = KAFKA_ERR_UNKNOWN_SERVER_ERROR; /* a store that cannot keep them must not ack them */
    if (err == KAFKA_ERR_NONE) {
        /* Pending from the append on, as in the log: a marker written
         * after it ends it whether or not the sync has returned; a failed
         * sync takes it back (txn_commit_failed). */
        first_seq = gc->write_seq + 1;
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            if (offsets[i].error_code != KAFKA_ERR_NONE)
                continue;
            /* Written, but memory ran out: the reload will find it. */
            if (txn_offset_put(gc, g, p->producer_id, &recs[k++]) != 0)
                logger_warn("group", "group %s: out of memory keeping a pending transactional offset", g->group_id);
        }
        last_seq = gc->write_seq;
    }
    free(recs);
    if (err == KAFKA_ERR_NONE)
        goto out;
fail_group:
    /* A group made only for this request does not outlive its failure. */
    if (created && g->txn_offset_count == 0 && g->offsets.count == 0)
        group_remove(gc, g);
fail:
    for (size_t i = 0; i < count; i++)
        if (offsets[i].error_code == KAFKA_ERR_NONE)
            offsets[i].error_code = err;
out:
    group_unlock(shard);
    if (need_sync && group_store_sync(gc, &sync_point, offsets, count) != KAFKA_ERR_NONE)
        txn_commit_failed(gc, p->group_id, p->producer_id, first_seq, last_seq);
}

/* Caller holds the lock. */
static void complete_txn_locked(struct group_coordinator *gc, int32_t offsets_partition, int64_t producer_id,
                                bool commit)
{
    struct group_shard *shard = group_partition_shard(gc, offsets_partition);
    LOCK_ASSERT_HELD(&shard->lock);
    int32_t partitions = gc->opts.offsets_topic_partitions;
    for (struct group *g = shard->group_list; g; g = g->next) {
        if (g->txn_offset_count == 0)
            continue;
        if (partitions > 0 &&
            coordinator_partition_for(g->group_id, strlen(g->group_id), partitions) != offsets_partition)
            continue;
        size_t kept = 0, done = 0;
        for (size_t i = 0; i < g->txn_offset_count; i++) {
            struct group_txn_offset *t = &g->txn_offsets[i];
            if (t->producer_id != producer_id) {
                g->txn_offsets[kept++] = *t;
                continue;
            }
            done++;
            if (commit)
                group_offset_apply(g, &t->offset);
            else
                txn_offset_release(t);
        }
        g->txn_offset_count = kept;
        if (done > 0)
            logger_debug("group", "group %s: %s %zu transactional offset(s) of producer %lld", g->group_id,
                         commit ? "committed" : "aborted", done, (long long)producer_id);
    }
}

/* A load may have read its partition up to an end before this marker, and
 * hands over that partition's pending offsets only when it finishes; so
 * the end is kept and applied again then. That is idempotent when the load
 * saw the marker: the producer's next transaction cannot have offsets in
 * the partition yet, as TxnOffsetCommit answers LOAD_IN_PROGRESS there.
 * Caller holds the lock. */
static void defer_txn_end(struct group_shard *shard, int32_t partition, int64_t producer_id, bool commit)
{
    if (shard->deferred_count == shard->deferred_cap) {
        size_t cap = shard->deferred_cap ? shard->deferred_cap * 2 : 8;
        struct group_deferred_txn_end *grown = realloc(shard->deferred, cap * sizeof *grown);
        if (!grown) {
            logger_warn("group", "out of memory keeping a transaction end for __consumer_offsets-%d", (int)partition);
            return;
        }
        shard->deferred = grown;
        shard->deferred_cap = cap;
    }
    shard->deferred[shard->deferred_count++] = (struct group_deferred_txn_end){
        .partition = partition, .producer_id = producer_id, .commit = commit};
}

void group_txn_ends_replay(struct group_coordinator *gc, int32_t partition, bool apply)
{
    struct group_shard *shard = group_partition_shard(gc, partition);
    size_t kept = 0;
    for (size_t i = 0; i < shard->deferred_count; i++) {
        struct group_deferred_txn_end d = shard->deferred[i];
        if (d.partition != partition) {
            shard->deferred[kept++] = d;
            continue;
        }
        if (apply)
            complete_txn_locked(gc, d.partition, d.producer_id, d.commit);
    }
    shard->deferred_count = kept;
}

void group_coordinator_complete_txn(struct group_coordinator *gc, int32_t offsets_partition, int64_t producer_id,
                                    bool commit)
{
    struct group_shard *shard = group_partition_shard(gc, offsets_partition);
    pthread_mutex_lock(&shard->lock);
    complete_txn_locked(gc, offsets_partition, producer_id, commit);
    if (gc->opts.shards && coordinator_shards_state(gc->opts.shards, offsets_partition) == COORDINATOR_SHARD_LOADING)
        defer_txn_end(shard, offsets_partition, producer_id, commit);
    pthread_mutex_unlock(&shard->lock);
}

void group_load_pending_offset(void *ctx, const char *group_id, int64_t producer_id, const char *topic,
                               int32_t partition, const struct group_offset_record *record)
{
    struct group_coordinator *gc = ctx;
    if (!record || !topic)
        return;
    struct group_shard *shard = group_lock(gc, group_id);
    struct group *g = group_get_or_create(gc, group_id);
    struct group_offset_record rec = *record;
    rec.topic = topic;
    rec.partition = partition;
    if (!g || txn_offset_put(gc, g, producer_id, &rec) != 0)
        logger_warn("group", "group %s: out of memory loading a pending transactional offset", group_id);
    group_unlock(shard);
}
