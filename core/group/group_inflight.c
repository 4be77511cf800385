/* Plain OffsetCommits between their append to the group log and the end of
 * their sync (disk, then the ISR): Kafka's pending offset commits. They
 * reach the committed table only once that sync succeeds, so OffsetFetch
 * never shows an offset whose commit may still be answered with an error,
 * and a failed sync leaves memory as it was. Everything here runs under
 * group_coordinator.lock. */
#include <stdlib.h>
#include <string.h>

#include "group/group_internal.h"
#include "util/lock_check.h"
#include "util/logger.h"

void group_offset_release(struct group_offset *o)
{
    free(o->topic);
    free(o->metadata);
    o->topic = NULL;
    o->metadata = NULL;
}

void group_offset_apply(struct group *g, struct group_offset *src)
{
    struct group_offset *o = group_offset_table_find(&g->offsets, src->topic, src->partition);
    /* Log order decides, not the order syncs end in: a commit written
     * later (a plain one, or a transaction's that committed) stays. */
    if (o && o->write_seq > src->write_seq) {
        group_offset_release(src);
        return;
    }
    if (!o)
        o = group_offset_table_add(&g->offsets, src->topic, src->partition);
    if (!o) {
        logger_warn("group", "group %s: out of memory applying a committed offset", g->group_id);
        group_offset_release(src);
        return;
    }
    free(o->metadata);
    o->metadata = src->metadata; /* takes it */
    o->metadata_len = src->metadata_len;
    src->metadata = NULL;
    o->offset = src->offset;
    o->leader_epoch = src->leader_epoch;
    o->commit_timestamp = src->commit_timestamp;
    o->expire_timestamp = src->expire_timestamp;
    o->write_seq = src->write_seq;
    group_offset_release(src);
}

int group_inflight_add(struct group_coordinator *gc, struct group *g, const struct group_offset_record *rec)
{
    LOCK_ASSERT_HELD(&g->shard->lock);
    if (g->inflight_count == g->inflight_cap) {
        size_t cap = g->inflight_cap ? g->inflight_cap * 2 : 8;
        struct group_offset *grown = realloc(g->inflight, cap * sizeof *grown);
        if (!grown)
            return -1;
        g->inflight = grown;
        g->inflight_cap = cap;
    }
    char *topic = strdup(rec->topic);
    char *metadata = rec->metadata ? group_strndup_bytes(rec->metadata, rec->metadata_len) : NULL;
    if (!topic || (rec->metadata && !metadata)) {
        free(topic);
        free(metadata);
        return -1;
    }
    g->inflight[g->inflight_count++] = (struct group_offset){
        .topic = topic,
        .partition = rec->partition,
        .offset = rec->offset,
        .leader_epoch = rec->leader_epoch,
        .metadata = metadata,
        .metadata_len = metadata ? rec->metadata_len : 0,
        .commit_timestamp = rec->commit_timestamp,
        .expire_timestamp = rec->expire_timestamp,
        .write_seq = ++gc->write_seq,
    };
    return 0;
}

void group_inflight_finish(struct group *g, uint64_t first_seq, uint64_t last_seq, bool apply)
{
    size_t kept = 0;
    for (size_t i = 0; i < g->inflight_count; i++) {
        struct group_offset *o = &g->inflight[i];
        if (o->write_seq < first_seq || o->write_seq > last_seq) {
            g->inflight[kept++] = *o;
            continue;
        }
        if (apply)
            group_offset_apply(g, o);
        else
            group_offset_release(o);
    }
    g->inflight_count = kept;
}

bool group_inflight_pending(const struct group *g, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < g->inflight_count; i++)
        if (g->inflight[i].partition == partition && strcmp(g->inflight[i].topic, topic) == 0)
            return true;
    return false;
}

void group_inflight_drop_partition(struct group *g, const char *topic, int32_t partition)
{
    size_t kept = 0;
    for (size_t i = 0; i < g->inflight_count; i++) {
        struct group_offset *o = &g->inflight[i];
        if (o->partition == partition && strcmp(o->topic, topic) == 0)
            group_offset_release(o);
        else
            g->inflight[kept++] = *o;
    }
    g->inflight_count = kept;
}

void group_inflight_free(struct group *g)
{
    for (size_t i = 0; i < g->inflight_count; i++)
        group_offset_release(&g->inflight[i]);
    free(g->inflight);
    g->inflight = NULL;
    g->inflight_count = g->inflight_cap = 0;
}

bool group_unused(const struct group *g)
{
    return g->state == GROUP_EMPTY && g->generation == 0 && !g->protocol_type && g->member_count == 0 &&
           g->pending_count == 0 && g->offsets.count == 0 && g->txn_offset_count == 0 && g->inflight_count == 0;
}
