/* Committed offsets (OffsetCommit, OffsetFetch, OffsetDelete, expiry),
 * DeleteGroups, and the read-only views DescribeGroups and ListGroups. */
#include <stdlib.h>
#include <string.h>

#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define CONSUMER_PROTOCOL_TYPE "consumer"

void group_offsets_free(struct group *g)
{
    group_offset_table_free(&g->offsets);
}

bool group_store_split_commits(const struct group_coordinator *gc)
{
    const struct group_store_ops *ops = gc->opts.ops;
    return ops && ops->append_offsets && ops->append_txn_offsets && ops->sync;
}

int16_t group_store_sync(struct group_coordinator *gc, const struct group_sync_point *sync_point,
                         struct group_offset_commit *offsets, size_t count)
{
    int16_t err = gc->opts.ops->sync(gc->opts.store, sync_point);
    if (err == KAFKA_ERR_NONE)
        return err;
    /* The entries still without an error are the ones that were written. */
    for (size_t i = 0; i < count; i++)
        if (offsets[i].error_code == KAFKA_ERR_NONE)
            offsets[i].error_code = err;
    return err;
}

/* After the sync of a commit's append: its offsets become committed, or
 * (the sync failed) are forgotten. The group is looked up again: it may
 * have been deleted or unloaded meanwhile, and then nothing of this commit
 * is left to apply (a reloaded group has fresh numbers). */
static void commit_finish(struct group_coordinator *gc, const char *group_id, uint64_t first_seq, uint64_t last_seq,
                          bool synced)
{
    struct group_shard *shard = group_lock(gc, group_id);
    struct group *g = group_find(gc, group_id);
    if (g) {
        group_inflight_finish(g, first_seq, last_seq, synced);
        if (!synced && group_unused(g))
            group_remove(gc, g);
    }
    group_unlock(shard);
}

/* Kafka's order: identity and generation first, then the group's state. */
static int16_t commit_check(struct group_coordinator *gc, struct group *g, const struct group_commit_params *p)
{
    const char *member_id = p->member_id ? p->member_id : "";
    if (!g && p->generation_id >= 0)
        return p->unknown_group_not_found ? KAFKA_ERR_GROUP_ID_NOT_FOUND : KAFKA_ERR_ILLEGAL_GENERATION;
    if (!g)
        return KAFKA_ERR_NONE;
    if (g->state == GROUP_DEAD)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    struct group_member *m = NULL;
    if (p->generation_id >= 0 || member_id[0] || p->group_instance_id) {
        struct group_member *by_instance = group_member_by_instance(g, p->group_instance_id);
        if (by_instance && strcmp(by_instance->member_id, member_id) != 0)
            return KAFKA_ERR_FENCED_INSTANCE_ID;
        m = group_member_find(g, member_id);
        if (!m)
            return KAFKA_ERR_UNKNOWN_MEMBER_ID;
        if (p->generation_id != g->generation)
            return KAFKA_ERR_ILLEGAL_GENERATION;
    } else if (g->state != GROUP_EMPTY) {
        return KAFKA_ERR_UNKNOWN_MEMBER_ID; /* only members commit to a non-empty group */
    }
    /* The member has the new generation but not its assignment yet. */
    if (g->state == GROUP_COMPLETING_REBALANCE)
        return KAFKA_ERR_REBALANCE_IN_PROGRESS;
    /* A commit is a sign of life, as a heartbeat is. */
    if (m)
        m->session_deadline = group_now(gc) + m->session_timeout_ms;
    return KAFKA_ERR_NONE;
}

void group_coordinator_commit(struct group_coordinator *gc, const struct group_commit_params *p,
                              struct group_offset_commit *offsets, size_t count)
{
    struct group_sync_point sync_point = {.partition = -1, .end_offset = -1};
    bool need_sync = false;
    uint64_t first_seq = 0, last_seq = 0;
    struct group_shard *shard = group_lock(gc, p->group_id);
    int16_t err = group_coordinator_serving(gc, p->group_id);
    struct group *g = NULL;
    if (err == KAFKA_ERR_NONE && (!p->group_id || !p->group_id[0]))
        err = KAFKA_ERR_INVALID_GROUP_ID;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, p->group_id);
        err = commit_check(gc, g, p);
    }
    if (err == KAFKA_ERR_NONE && !g) {
        g = group_get_or_create(gc, p->group_id);
        if (!g)
            err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        if (offsets[i].error_code != KAFKA_ERR_NONE)
            continue;
        if (err != KAFKA_ERR_NONE)
            offsets[i].error_code = err;
        else if (offsets[i].metadata && offsets[i].metadata_len > (size_t)gc->opts.offset_metadata_max_bytes)
            offsets[i].error_code = KAFKA_ERR_OFFSET_METADATA_TOO_LARGE;
        else
            valid++;
    }
    if (valid == 0)
        goto out;

    int64_t wall = group_wall_now(gc);
    int64_t expire = p->retention_ms > 0 ? wall + p->retention_ms : -1;
    struct group_offset_record *recs = calloc(valid, sizeof *recs);
    if (!recs)
        err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    /* Kept in flight, not in the committed table, until the write is
     * durable and replicated (Kafka's pending offset commits). */
    first_seq = gc->write_seq + 1;
    size_t n = 0;
    for (size_t i = 0; i < count && recs && err == KAFKA_ERR_NONE; i++) {
        if (offsets[i].error_code != KAFKA_ERR_NONE)
            continue;
        recs[n] = (struct group_offset_record){
            .topic = offsets[i].topic,
            .partition = offsets[i].partition,
            .offset = offsets[i].offset,
            .leader_epoch = offsets[i].leader_epoch,
            .metadata = offsets[i].metadata,
            .metadata_len = offsets[i].metadata_len,
            .commit_timestamp = wall,
            .expire_timestamp = expire,
        };
        if (group_inflight_add(gc, g, &recs[n++]) != 0)
            err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    last_seq = gc->write_seq;
    if (err == KAFKA_ERR_NONE && gc->opts.ops && group_store_split_commits(gc)) {
        err = gc->opts.ops->append_offsets(gc->opts.store, g->group_id, recs, n, &sync_point);
        need_sync = err == KAFKA_ERR_NONE;
    } else if (err == KAFKA_ERR_NONE && gc->opts.ops && gc->opts.ops->store_offsets) {
        err = gc->opts.ops->store_offsets(gc->opts.store, g->group_id, recs, n);
    }
    free(recs);
    /* Written and durable already (or no store): committed now. */
    if (!need_sync)
        group_inflight_finish(g, first_seq, last_seq, err == KAFKA_ERR_NONE);
    if (err != KAFKA_ERR_NONE) {
        for (size_t i = 0; i < count; i++)
            if (offsets[i].error_code == KAFKA_ERR_NONE)
                offsets[i].error_code = err;
        /* A group made only for this commit does not outlive its failure. */
        if (group_unused(g))
            group_remove(gc, g);
    }
out:
    group_unlock(shard);
    /* Outside the lock, so other groups' requests do not wait for the disk. */
    if (need_sync) {
        int16_t serr = group_store_sync(gc, &sync_point, offsets, count);
        commit_finish(gc, p->group_id, first_seq, last_seq, serr == KAFKA_ERR_NONE);
    }
}

/* o: the committed entry, NULL when none (or unstable). */
static void fill_fetch_entry(struct group_offset_fetch *f, const struct group_offset *o, bool unstable)
{
    /* KIP-447: the client retries until the transaction (or the commit in
     * flight) has ended. */
    f->error_code = unstable ? KAFKA_ERR_UNSTABLE_OFFSET_COMMIT : KAFKA_ERR_NONE;
    f->offset = o ? o->offset : -1;
    f->leader_epoch = o ? o->leader_epoch : -1;
    f->metadata = o && o->metadata ? group_strndup_bytes(o->metadata, o->metadata_len) : NULL;
    f->metadata_len = f->metadata ? o->metadata_len : 0;
}

static void fill_fetch(struct group_offset_fetch *f, const struct group *g, const char *topic, int32_t partition,
                       bool require_stable)
{
    const struct group_offset *o = g ? group_offset_table_find(&g->offsets, topic, partition) : NULL;
    bool unstable = require_stable && g &&
                    (group_txn_offset_pending(g, topic, partition) || group_inflight_pending(g, topic, partition));
    fill_fetch_entry(f, unstable ? NULL : o, unstable);
}

int16_t group_coordinator_fetch_offsets(struct group_coordinator *gc, const char *group_id,
                                        struct group_offset_fetch *offsets, size_t count)
{
    return group_coordinator_fetch_offsets_stable(gc, group_id, false, offsets, count);
}

int16_t group_coordinator_fetch_offsets_stable(struct group_coordinator *gc, const char *group_id, bool require_stable,
                                               struct group_offset_fetch *offsets, size_t count)
{
    struct group_shard *shard = group_lock(gc, group_id);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = err == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    for (size_t i = 0; i < count; i++)
        fill_fetch(&offsets[i], g, offsets[i].topic, offsets[i].partition, require_stable);
    group_unlock(shard);
    return err;
}

int16_t group_coordinator_fetch_all_offsets(struct group_coordinator *gc, const char *group_id,
                                            struct group_offset_fetch **out, size_t *count)
{
    return group_coordinator_fetch_all_offsets_stable(gc, group_id, false, out, count);
}

int16_t group_coordinator_fetch_all_offsets_stable(struct group_coordinator *gc, const char *group_id,
                                                   bool require_stable, struct group_offset_fetch **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    struct group_shard *shard = group_lock(gc, group_id);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = err == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    if (g && g->offsets.count > 0) {
        struct group_offset_fetch *f = calloc(g->offsets.count, sizeof *f);
        bool *unstable = NULL;
        if (!f || (require_stable && group_offsets_pending_flags(g, true, &unstable) != 0)) {
            free(f);
            err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        } else {
            for (size_t i = 0; i < g->offsets.count; i++) {
                const struct group_offset *o = &g->offsets.items[i];
                f[i].topic = strdup(o->topic);
                f[i].partition = o->partition;
                fill_fetch_entry(&f[i], unstable && unstable[i] ? NULL : o, unstable && unstable[i]);
            }
            free(unstable);
            *out = f;
            *count = g->offsets.count;
        }
    }
    group_unlock(shard);
    return err;
}

void group_offset_fetch_free(struct group_offset_fetch *offsets, size_t count)
{
    if (!offsets)
        return;
    for (size_t i = 0; i < count; i++) {
        free((char *)offsets[i].topic);
        free(offsets[i].metadata);
    }
    free(offsets);
}

static int16_t store_delete_offsets(struct group_coordinator *gc, struct group *g, struct group_offset **list, size_t n,
                                    bool whole_group)
{
    if (!gc->opts.ops)
        return KAFKA_ERR_NONE;
    struct group_offset_record *recs = calloc(n ? n : 1, sizeof *recs);
    if (!recs)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    for (size_t i = 0; i < n; i++)
        recs[i] = (struct group_offset_record){.topic = list[i]->topic,
                                               .partition = list[i]->partition,
                                               .offset = list[i]->offset,
                                               .leader_epoch = list[i]->leader_epoch,
                                               .metadata = list[i]->metadata,
                                               .metadata_len = list[i]->metadata_len,
                                               .commit_timestamp = list[i]->commit_timestamp,
                                               .expire_timestamp = list[i]->expire_timestamp};
    int16_t err = KAFKA_ERR_NONE;
    if (whole_group && gc->opts.ops->delete_group)
        err = gc->opts.ops->delete_group(gc->opts.store, g->group_id, recs, n);
    else if (!whole_group && gc->opts.ops->delete_offsets)
        err = gc->opts.ops->delete_offsets(gc->opts.store, g->group_id, recs, n);
    free(recs);
    return err;
}

int16_t group_coordinator_delete_offsets(struct group_coordinator *gc, const char *group_id,
                                         struct group_offset_delete *offsets, size_t count)
{
    struct group_shard *shard = group_lock(gc, group_id);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = err == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    if (err == KAFKA_ERR_NONE && (!g || g->state == GROUP_DEAD))
        err = KAFKA_ERR_GROUP_ID_NOT_FOUND;
    bool consumer = g && g->protocol_type && strcmp(g->protocol_type, CONSUMER_PROTOCOL_TYPE) == 0;
    if (err == KAFKA_ERR_NONE && g->state != GROUP_EMPTY && !consumer)
        err = KAFKA_ERR_NON_EMPTY_GROUP;
    struct group_offset **del = NULL;
    size_t n = 0;
    struct group_topic_set subscribed = {0};
    if (err == KAFKA_ERR_NONE) {
        del = calloc(count ? count : 1, sizeof *del);
        if (!del || (g->state != GROUP_EMPTY && group_subscribed_topics(g, gc->hash_seed, &subscribed) != 0))
            err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    if (err != KAFKA_ERR_NONE)
        goto out;
    for (size_t i = 0; i < count; i++) {
        offsets[i].error_code = KAFKA_ERR_NONE;
        if (g->state != GROUP_EMPTY && group_topic_set_has(&subscribed, offsets[i].topic)) {
            offsets[i].error_code = KAFKA_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
            continue;
        }
        struct group_offset *o = group_offset_table_find(&g->offsets, offsets[i].topic, offsets[i].partition);
        /* The mark drops a partition named twice. */
        if (o && !o->marked) {
            o->marked = true;
            del[n++] = o;
        }
    }
    int16_t serr = store_delete_offsets(gc, g, del, n, false);
    if (serr != KAFKA_ERR_NONE) {
        for (size_t k = 0; k < n; k++)
            del[k]->marked = false;
        for (size_t i = 0; i < count; i++)
            if (offsets[i].error_code == KAFKA_ERR_NONE)
                offsets[i].error_code = serr;
        goto out;
    }
    group_offset_table_remove_marked(&g->offsets);
    /* A commit of a deleted partition still in flight is not applied
     * after the tombstone (Kafka drops pending commits here too). */
    for (size_t i = 0; i < count; i++)
        if (offsets[i].error_code == KAFKA_ERR_NONE)
            group_inflight_drop_partition(g, offsets[i].topic, offsets[i].partition);
out:
    free(del);
    group_topic_set_free(&subscribed);
    group_unlock(shard);
    return err;
}

static int16_t delete_group_locked(struct group_coordinator *gc, struct group *g)
{
    LOCK_ASSERT_HELD(&g->shard->lock);
    /* Commits in flight get tombstones too: their records may be in the
     * log ahead of the group's tombstone. */
    size_t n = g->offsets.count + g->inflight_count;
    struct group_offset **all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    for (size_t i = 0; i < g->offsets.count; i++)
        all[i] = &g->offsets.items[i];
    for (size_t i = 0; i < g->inflight_count; i++)
        all[g->offsets.count + i] = &g->inflight[i];
    int16_t err = store_delete_offsets(gc, g, all, n, true);
    free(all);
    if (err != KAFKA_ERR_NONE)
        return err;
    group_set_state(gc, g, GROUP_DEAD);
    group_remove(gc, g);
    return KAFKA_ERR_NONE;
}

int16_t group_coordinator_delete_group(struct group_coordinator *gc, const char *group_id)
{
    struct group_shard *shard = group_lock(gc, group_id);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = NULL;
    if (err == KAFKA_ERR_NONE && (!group_id || !group_id[0]))
        err = KAFKA_ERR_INVALID_GROUP_ID;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, group_id);
        if (!g || g->state == GROUP_DEAD)
            err = KAFKA_ERR_GROUP_ID_NOT_FOUND;
        else if (g->state != GROUP_EMPTY)
            err = KAFKA_ERR_NON_EMPTY_GROUP;
        /* Kafka keeps a group with open transactional offsets: its
         * transaction may still commit them. */
        else if (g->txn_offset_count > 0)
            err = KAFKA_ERR_NON_EMPTY_GROUP;
    }
    if (err == KAFKA_ERR_NONE) {
        err = delete_group_locked(gc, g);
        if (err == KAFKA_ERR_NONE)
            logger_info("group", "group %s deleted", group_id);
    }
    group_unlock(shard);
    return err;
}

void group_offsets_expire(struct group_coordinator *gc, struct group *g, int64_t wall_now)
{
    /* Kafka 2.1+ (KIP-211): an empty group's offsets live for the retention
     * period after it became empty or after the commit, whichever is later;
     * a Stable consumer group keeps the offsets of the topics it subscribes
     * to, and the others expire by their commit time. */
    bool stable_consumer = g->state == GROUP_STABLE && g->protocol_type &&
                           strcmp(g->protocol_type, CONSUMER_PROTOCOL_TYPE) == 0;
    if (g->state != GROUP_EMPTY && !stable_consumer)
        return;
    if (g->state == GROUP_EMPTY && g->offsets.count == 0 && g->pending_count == 0 && g->txn_offset_count == 0 &&
        g->inflight_count == 0) {
        /* Nothing left to keep (Kafka drops such groups too): this also
         * bounds the groups that stray JoinGroups leave behind. */
        if (delete_group_locked(gc, g) != KAFKA_ERR_NONE)
            logger_warn("group", "could not remove empty group %s", g->group_id);
        return;
    }
    /* Out of memory: the next sweep tries again. */
    struct group_offset **del = calloc(g->offsets.count ? g->offsets.count : 1, sizeof *del);
    struct group_topic_set subscribed = {0};
    bool *inflight = NULL;
    if (!del || group_offsets_pending_flags(g, false, &inflight) != 0 ||
        (stable_consumer && group_subscribed_topics(g, gc->hash_seed, &subscribed) != 0)) {
        free(del);
        free(inflight);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < g->offsets.count; i++) {
        struct group_offset *o = &g->offsets.items[i];
        if (stable_consumer && group_topic_set_has(&subscribed, o->topic))
            continue;
        /* Kafka keeps an offset while a newer commit of it is in flight. */
        if (inflight && inflight[i])
            continue;
        int64_t base = o->commit_timestamp;
        if (!stable_consumer && g->state_timestamp > base)
            base = g->state_timestamp;
        int64_t deadline = o->expire_timestamp >= 0 ? o->expire_timestamp : base + gc->opts.offsets_retention_ms;
        if (wall_now >= deadline)
            del[n++] = o;
    }
    free(inflight);
    group_topic_set_free(&subscribed);
    /* Pending transactional offsets keep the group (not its expired
     * committed offsets) until their transaction ends. */
    if (n > 0 && n == g->offsets.count && g->state == GROUP_EMPTY && g->txn_offset_count == 0 &&
        g->inflight_count == 0) {
        logger_info("group", "group %s: every committed offset expired; removing the group", g->group_id);
        if (delete_group_locked(gc, g) != KAFKA_ERR_NONE)
            logger_warn("group", "could not remove expired group %s", g->group_id);
        free(del);
        return;
    }
    if (n > 0 && store_delete_offsets(gc, g, del, n, false) == KAFKA_ERR_NONE) {
        for (size_t k = 0; k < n; k++)
            del[k]->marked = true;
        group_offset_table_remove_marked(&g->offsets);
    }
    free(del);
}

void group_coordinator_describe(struct group_coordinator *gc, const char *group_id, struct group_description *out)
{
    memset(out, 0, sizeof *out);
    out->group_id = strdup(group_id ? group_id : "");
    out->state = group_state_name(GROUP_DEAD);
    out->protocol_type = strdup("");
    out->protocol = strdup("");
    struct group_shard *shard = group_lock(gc, group_id);
    out->error_code = group_coordinator_serving(gc, group_id);
    struct group *g = out->error_code == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    if (g) {
        out->state = group_state_name(g->state);
        out->generation_id = g->generation;
        free(out->protocol_type);
        out->protocol_type = strdup(g->protocol_type ? g->protocol_type : "");
        bool stable = g->state == GROUP_STABLE;
        if (stable && g->protocol) {
            free(out->protocol);
            out->protocol = strdup(g->protocol);
        }
        out->members = calloc(g->member_count ? g->member_count : 1, sizeof *out->members);
        for (size_t i = 0; out->members && i < g->member_count; i++) {
            const struct group_member *m = g->members[i];
            struct group_member_description *d = &out->members[out->member_count++];
            d->member_id = strdup(m->member_id);
            d->group_instance_id = group_strdup(m->instance_id);
            d->client_id = strdup(m->client_id ? m->client_id : "");
            d->client_host = strdup(m->client_host ? m->client_host : "");
            const struct group_member_protocol *p = stable && g->protocol ? group_member_protocol(m, g->protocol)
                                                                          : NULL;
            if (p) {
                d->metadata = group_memdup(p->metadata, p->metadata_len);
                d->metadata_len = d->metadata ? p->metadata_len : 0;
            }
            if (stable && m->assignment) {
                d->assignment = group_memdup(m->assignment, m->assignment_len);
                d->assignment_len = d->assignment ? m->assignment_len : 0;
            }
        }
    }
    group_unlock(shard);
}

void group_description_free(struct group_description *d)
{
    for (size_t i = 0; i < d->member_count; i++) {
        struct group_member_description *m = &d->members[i];
        free(m->member_id);
        free(m->group_instance_id);
        free(m->client_id);
        free(m->client_host);
        free(m->metadata);
        free(m->assignment);
    }
    free(d->members);
    free(d->group_id);
    free(d->protocol_type);
    free(d->protocol);
    memset(d, 0, sizeof *d);
}

static bool state_wanted(const char *state, const char *const *states, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (states[i] && strcasecmp(states[i], state) == 0)
            return true;
    return false;
}

int16_t group_coordinator_list(struct group_coordinator *gc, const char *const *states, size_t state_count,
                               struct group_listing **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    int16_t err = group_coordinator_serving(gc, NULL);
    struct group_listing *l = NULL;
    size_t n = 0, cap = 0;
    /* One shard at a time; the list grows as groups are found. */
    for (int32_t i = 0; err == KAFKA_ERR_NONE && i < gc->shard_count; i++) {
        struct group_shard *shard = &gc->shards[i];
        pthread_mutex_lock(&shard->lock);
        if (n + shard->group_count > cap) {
            size_t want = n + shard->group_count;
            struct group_listing *grown = realloc(l, want * sizeof *l);
            if (grown) {
                l = grown;
                cap = want;
            } else {
                err = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            }
        }
        for (struct group *g = err == KAFKA_ERR_NONE ? shard->group_list : NULL; g; g = g->next) {
            const char *state = group_state_name(g->state);
            if (!state_wanted(state, states, state_count))
                continue;
            l[n].group_id = strdup(g->group_id);
            l[n].protocol_type = strdup(g->protocol_type ? g->protocol_type : "");
            l[n].state = state;
            n++;
        }
        pthread_mutex_unlock(&shard->lock);
    }
    if (err != KAFKA_ERR_NONE) {
        group_listing_free(l, n);
        return err;
    }
    *out = l;
    *count = n;
    return err;
}

void group_listing_free(struct group_listing *l, size_t count)
{
    if (!l)
        return;
    for (size_t i = 0; i < count; i++) {
        free(l[i].group_id);
        free(l[i].protocol_type);
    }
    free(l);
}
