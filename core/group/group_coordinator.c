/* Group coordinator lifetime, the group table, timers and loading. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coordinator/coordinator_partition.h"
#include "coordinator/coordinator_runtime.h"
#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

/* Timers are checked at this granularity; session timeouts are seconds. */
#define GROUP_TIMER_TICK_MS 50

void group_coordinator_options_defaults(struct group_coordinator_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->min_session_timeout_ms = 6000;
    opts->max_session_timeout_ms = 1800000;
    opts->initial_rebalance_delay_ms = 3000;
    opts->max_group_size = INT32_MAX;
    opts->max_pending_members_per_group = 1000;
    opts->max_pending_members = 100000;
    opts->offset_metadata_max_bytes = 4096;
    opts->offsets_retention_ms = 10080LL * 60000;
    opts->offsets_retention_check_interval_ms = 600000;
}

int64_t group_now(struct group_coordinator *gc)
{
    return gc->opts.now_ms ? gc->opts.now_ms(gc->opts.clock_ctx) : clock_mono_ms();
}

int64_t group_wall_now(struct group_coordinator *gc)
{
    return gc->opts.now_ms ? gc->opts.now_ms(gc->opts.clock_ctx) : clock_wall_ms();
}

char *group_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *group_strndup_bytes(const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

uint8_t *group_memdup(const uint8_t *p, size_t n)
{
    uint8_t *out = malloc(n ? n : 1);
    if (out && n)
        memcpy(out, p, n);
    return out;
}

const char *group_state_name(enum group_state s)
{
    switch (s) {
    case GROUP_EMPTY:
        return "Empty";
    case GROUP_PREPARING_REBALANCE:
        return "PreparingRebalance";
    case GROUP_COMPLETING_REBALANCE:
        return "CompletingRebalance";
    case GROUP_STABLE:
        return "Stable";
    case GROUP_DEAD:
        return "Dead";
    }
    return "Dead";
}

struct group_shard *group_shard_of(struct group_coordinator *gc, const char *group_id)
{
    if (gc->shard_count == 1)
        return &gc->shards[0];
    const char *id = group_id ? group_id : "";
    return &gc->shards[coordinator_partition_for(id, strlen(id), gc->shard_count)];
}

struct group_shard *group_partition_shard(struct group_coordinator *gc, int32_t partition)
{
    return partition >= 0 && partition < gc->shard_count ? &gc->shards[partition] : &gc->shards[0];
}

struct group_shard *group_lock(struct group_coordinator *gc, const char *group_id)
{
    struct group_shard *shard = group_shard_of(gc, group_id);
    pthread_mutex_lock(&shard->lock);
    return shard;
}

void group_unlock(struct group_shard *shard)
{
    pthread_mutex_unlock(&shard->lock);
}

struct group *group_find(struct group_coordinator *gc, const char *group_id)
{
    struct group_shard *shard = group_shard_of(gc, group_id);
    LOCK_ASSERT_HELD(&shard->lock);
    return group_index_find(&shard->groups, group_id);
}

struct group *group_get_or_create(struct group_coordinator *gc, const char *group_id)
{
    struct group *g = group_find(gc, group_id);
    if (g)
        return g;
    g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    struct group_shard *shard = group_shard_of(gc, group_id);
    g->group_id = strdup(group_id);
    if (!g->group_id || group_index_put(&shard->groups, g) != 0) {
        free(g->group_id);
        free(g);
        return NULL;
    }
    g->state = GROUP_EMPTY;
    g->state_timestamp = group_wall_now(gc);
    g->partition = gc->opts.shards ? coordinator_shards_partition_of(gc->opts.shards, group_id) : -1;
    group_members_init(gc, g);
    g->shard = shard;
    g->next = shard->group_list;
    if (g->next)
        g->next->prev = g;
    shard->group_list = g;
    shard->group_count++;
    return g;
}

static void group_free(struct group_coordinator *gc, struct group *g)
{
    group_members_free(gc, g);
    group_offsets_free(g);
    group_txn_offsets_free(g);
    group_inflight_free(g);
    free(g->group_id);
    free(g->protocol_type);
    free(g->protocol);
    free(g->leader);
    free(g);
}

void group_remove(struct group_coordinator *gc, struct group *g)
{
    struct group_shard *shard = g->shard;
    group_index_del(&shard->groups, g);
    if (g->prev)
        g->prev->next = g->next;
    else
        shard->group_list = g->next;
    if (g->next)
        g->next->prev = g->prev;
    shard->group_count--;
    group_free(gc, g);
}

int16_t group_snapshot_write(struct group_coordinator *gc, struct group *g, struct group_sync_point *sync_point)
{
    bool split = sync_point && gc->opts.ops && gc->opts.ops->append_group && gc->opts.ops->sync;
    if (sync_point)
        *sync_point = (struct group_sync_point){.partition = -1, .end_offset = -1};
    if (!gc->opts.ops || (!split && !gc->opts.ops->store_group))
        return KAFKA_ERR_NONE;
    struct group_member_record *recs = calloc(g->member_count ? g->member_count : 1, sizeof *recs);
    if (!recs)
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    for (size_t i = 0; i < g->member_count; i++) {
        const struct group_member *m = g->members[i];
        const struct group_member_protocol *p = g->protocol ? group_member_protocol(m, g->protocol) : NULL;
        recs[i] = (struct group_member_record){
            .member_id = m->member_id,
            .group_instance_id = m->instance_id,
            .client_id = m->client_id ? m->client_id : "",
            .client_host = m->client_host ? m->client_host : "",
            .rebalance_timeout_ms = m->rebalance_timeout_ms,
            .session_timeout_ms = m->session_timeout_ms,
            .subscription = p ? p->metadata : NULL,
            .subscription_len = p ? p->metadata_len : 0,
            .assignment = m->assignment,
            .assignment_len = m->assignment_len,
        };
    }
    struct group_snapshot_record rec = {
        .group_id = g->group_id,
        .protocol_type = g->protocol_type ? g->protocol_type : "",
        .generation = g->generation,
        .protocol = g->protocol,
        .leader = g->leader,
        .current_state_timestamp = g->state_timestamp,
        .members = recs,
        .member_count = g->member_count,
    };
    int16_t err = split ? gc->opts.ops->append_group(gc->opts.store, &rec, sync_point)
                        : gc->opts.ops->store_group(gc->opts.store, &rec);
    if (err != KAFKA_ERR_NONE)
        logger_warn("group", "could not store group %s generation %d: error %d", g->group_id, g->generation, err);
    free(recs);
    return err;
}

void group_snapshot_store(struct group_coordinator *gc, struct group *g)
{
    (void)group_snapshot_write(gc, g, NULL);
}

int16_t group_coordinator_serving(struct group_coordinator *gc, const char *group_id)
{
    if (gc->shut_down)
        return KAFKA_ERR_NOT_COORDINATOR;
    if (gc->loading)
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    if (!gc->opts.shards)
        return KAFKA_ERR_NONE;
    /* NULL: a request over every group (ListGroups), which waits for loads. */
    if (!group_id)
        return coordinator_shards_any_loading(gc->opts.shards) ? KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS
                                                               : KAFKA_ERR_NONE;
    return coordinator_shards_serving_key(gc->opts.shards, group_id);
}

bool group_partition_active(struct group_coordinator *gc, const struct group *g)
{
    return !gc->opts.shards || coordinator_shards_state(gc->opts.shards, g->partition) == COORDINATOR_SHARD_ACTIVE;
}

int16_t group_coordinator_ownership(struct group_coordinator *gc, const char *group_id)
{
    if (!gc)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int16_t err = group_coordinator_serving(gc, group_id ? group_id : "");
    return err == KAFKA_ERR_NONE ? KAFKA_ERR_NONE : KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
}

/* How long a closed connection is looked for: its request may reach the
 * coordinator only after the close was queued. */
#define GROUP_CLOSED_CONN_KEEP_MS 1000

static void closed_conns_push(struct group_coordinator *gc, uint64_t id, int64_t at)
{
    if (gc->closed_count == gc->closed_cap) {
        size_t cap = gc->closed_cap ? gc->closed_cap * 2 : 16;
        struct group_closed_conn *grown = realloc(gc->closed_conns, cap * sizeof *grown);
        if (!grown)
            return; /* the parked request waits for its timeout, as before */
        gc->closed_conns = grown;
        gc->closed_cap = cap;
    }
    gc->closed_conns[gc->closed_count++] = (struct group_closed_conn){id, at};
}

void group_coordinator_connection_closed(struct group_coordinator *gc, uint64_t connection_id)
{
    if (!gc || connection_id == 0)
        return;
    int64_t now = group_now(gc);
    pthread_mutex_lock(&gc->closed_lock);
    closed_conns_push(gc, connection_id, now);
    pthread_mutex_unlock(&gc->closed_lock);
}

static int closed_conn_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct group_closed_conn *)a)->id, y = ((const struct group_closed_conn *)b)->id;
    return x < y ? -1 : x > y;
}

/* conns sorted by id: a tick costs O(members log closed), not their product. */
static struct group_closed_conn *closed_conn(struct group_closed_conn *conns, size_t n, uint64_t id)
{
    if (id == 0)
        return NULL;
    struct group_closed_conn key = {.id = id};
    return bsearch(&key, conns, n, sizeof *conns, closed_conn_cmp);
}

/* Answers g's requests parked by the closed connections conns (sorted). */
static void cancel_closed_group(struct group_coordinator *gc, struct group *g, struct group_closed_conn *conns,
                                size_t n, int64_t now)
{
    bool removed = false;
    for (size_t i = 0; i < g->member_count;) {
        struct group_member *m = g->members[i];
        struct group_closed_conn *jc = m->join_cb ? closed_conn(conns, n, m->join_conn) : NULL;
        struct group_closed_conn *sc = m->sync_cb ? closed_conn(conns, n, m->sync_conn) : NULL;
        if (!jc && !sc) {
            i++;
            continue;
        }
        if (!m->instance_id) {
            logger_info("group", "group %s: member %s left with its connection (a parked %s)", g->group_id,
                        m->member_id, jc ? "JoinGroup" : "SyncGroup");
            group_remove_member_at(g, i); /* answers its parked requests */
            removed = true;
            continue;
        }
        if (jc) {
            group_join_respond_error(m->join_cb, m->join_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, m->member_id);
            m->join_cb = NULL;
        }
        if (sc) {
            group_sync_respond_error(m->sync_cb, m->sync_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID);
            m->sync_cb = NULL;
        }
        i++;
    }
    if (removed)
        group_member_removed(gc, g, now);
}

/* Gives up the requests parked by connections that closed (see
 * group_coordinator_connection_closed). */
static void cancel_closed_locked(struct group_coordinator *gc, int64_t now)
{
    pthread_mutex_lock(&gc->closed_lock);
    struct group_closed_conn *conns = gc->closed_conns;
    size_t n = gc->closed_count;
    gc->closed_conns = NULL;
    gc->closed_count = gc->closed_cap = 0;
    pthread_mutex_unlock(&gc->closed_lock);
    if (n == 0) {
        free(conns);
        return;
    }
    qsort(conns, n, sizeof *conns, closed_conn_cmp);
    for (int32_t i = 0; i < gc->shard_count; i++) {
        struct group_shard *shard = &gc->shards[i];
        pthread_mutex_lock(&shard->lock);
        for (struct group *g = shard->group_list, *next; g; g = next) {
            next = g->next;
            cancel_closed_group(gc, g, conns, n, now);
        }
        pthread_mutex_unlock(&shard->lock);
    }
    /* Kept a while: a request sent just before its connection closed may
     * park only after this tick. Connection ids are never reused. */
    pthread_mutex_lock(&gc->closed_lock);
    for (size_t i = 0; i < n; i++)
        if (now - conns[i].at < GROUP_CLOSED_CONN_KEEP_MS)
            closed_conns_push(gc, conns[i].id, conns[i].at);
    pthread_mutex_unlock(&gc->closed_lock);
    free(conns);
}

/* Shard by shard: a tick holds one partition's groups at a time. */
static void tick_locked(struct group_coordinator *gc)
{
    LOCK_ASSERT_HELD(&gc->timer_lock);
    if (gc->shut_down || gc->loading)
        return;
    int64_t now = group_now(gc);
    cancel_closed_locked(gc, now);
    bool check_expiry = now >= gc->next_expiry_check;
    if (check_expiry)
        gc->next_expiry_check = now + gc->opts.offsets_retention_check_interval_ms;
    int64_t wall = group_wall_now(gc);
    for (int32_t i = 0; i < gc->shard_count; i++) {
        struct group_shard *shard = &gc->shards[i];
        pthread_mutex_lock(&shard->lock);
        for (struct group *g = shard->group_list, *next; g; g = next) {
            next = g->next;
            if (!group_partition_active(gc, g))
                continue; /* loading: its members get a full session once loaded */
            group_membership_tick(gc, g, now);
            if (check_expiry)
                group_offsets_expire(gc, g, wall);
        }
        pthread_mutex_unlock(&shard->lock);
    }
}

void group_coordinator_tick(struct group_coordinator *gc)
{
    pthread_mutex_lock(&gc->timer_lock);
    tick_locked(gc);
    pthread_mutex_unlock(&gc->timer_lock);
}

static void group_coordinator_free(struct group_coordinator *gc);

static void *timer_main(void *arg)
{
    struct group_coordinator *gc = arg;
    pthread_mutex_lock(&gc->timer_lock);
    while (!gc->stopping) {
        tick_locked(gc);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += GROUP_TIMER_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&gc->cond, &gc->timer_lock, &ts);
    }
    pthread_mutex_unlock(&gc->timer_lock);
    return NULL;
}

int group_coordinator_create(const struct group_coordinator_options *opts, struct group_coordinator **out)
{
    struct group_coordinator *gc = calloc(1, sizeof *gc);
    if (!gc)
        return -1;
    gc->opts = *opts;
    atomic_init(&gc->loading, opts->start_loading);
    atomic_init(&gc->shut_down, false);
    atomic_init(&gc->pending_total, 0);
    atomic_init(&gc->write_seq, 0);
    gc->hash_seed = group_index_random_seed();
    /* One shard per __consumer_offsets partition: a group's shard is its
     * partition, so loading one takes that shard alone. */
    int32_t n = opts->shards ? coordinator_shards_partition_count(opts->shards) : opts->offsets_topic_partitions;
    gc->shard_count = n > 0 ? n : 1;
    gc->shards = calloc((size_t)gc->shard_count, sizeof *gc->shards);
    if (!gc->shards) {
        free(gc);
        return -1;
    }
    for (int32_t i = 0; i < gc->shard_count; i++) {
        pthread_mutex_init(&gc->shards[i].lock, NULL);
        group_index_init(&gc->shards[i].groups, offsetof(struct group, group_id), gc->hash_seed);
    }
    pthread_mutex_init(&gc->timer_lock, NULL);
    pthread_mutex_init(&gc->closed_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&gc->cond, &attr);
    pthread_condattr_destroy(&attr);
    gc->next_expiry_check = group_now(gc) + opts->offsets_retention_check_interval_ms;
    if (!opts->manual_time) {
        if (pthread_create(&gc->timer_thread, NULL, timer_main, gc) != 0) {
            group_coordinator_free(gc);
            return -1;
        }
        gc->timer_started = true;
    }
    *out = gc;
    return 0;
}

void group_coordinator_shutdown(struct group_coordinator *gc)
{
    if (!gc || atomic_exchange(&gc->shut_down, true))
        return;
    /* Set before the walk: a request that takes a shard after the walk
     * passed it sees the flag and does not park. */
    for (int32_t i = 0; i < gc->shard_count; i++) {
        struct group_shard *shard = &gc->shards[i];
        pthread_mutex_lock(&shard->lock);
        for (struct group *g = shard->group_list; g; g = g->next)
            group_fail_parked(g, KAFKA_ERR_NOT_COORDINATOR);
        pthread_mutex_unlock(&shard->lock);
    }
}

/* Frees everything; no other thread uses gc any more. */
static void group_coordinator_free(struct group_coordinator *gc)
{
    for (int32_t i = 0; i < gc->shard_count; i++) {
        struct group_shard *shard = &gc->shards[i];
        pthread_mutex_lock(&shard->lock);
        while (shard->group_list)
            group_remove(gc, shard->group_list);
        pthread_mutex_unlock(&shard->lock);
        group_index_free(&shard->groups);
        free(shard->deferred);
        pthread_mutex_destroy(&shard->lock);
    }
    free(gc->shards);
    free(gc->closed_conns);
    pthread_mutex_destroy(&gc->closed_lock);
    pthread_cond_destroy(&gc->cond);
    pthread_mutex_destroy(&gc->timer_lock);
    free(gc);
}

void group_coordinator_destroy(struct group_coordinator *gc)
{
    if (!gc)
        return;
    group_coordinator_shutdown(gc);
    pthread_mutex_lock(&gc->timer_lock);
    gc->stopping = true;
    pthread_cond_broadcast(&gc->cond);
    pthread_mutex_unlock(&gc->timer_lock);
    if (gc->timer_started)
        pthread_join(gc->timer_thread, NULL);
    group_coordinator_free(gc);
}

/* Loaded members of shard get a full session from now to show up again.
 * Caller holds shard's lock. */
static void restart_sessions(struct group_coordinator *gc, struct group_shard *shard)
{
    LOCK_ASSERT_HELD(&shard->lock);
    int64_t now = group_now(gc);
    for (struct group *g = shard->group_list; g; g = g->next)
        for (size_t i = 0; i < g->member_count; i++)
            g->members[i]->session_deadline = now + g->members[i]->session_timeout_ms;
}

void group_coordinator_set_loaded(struct group_coordinator *gc)
{
    atomic_store(&gc->loading, false);
    for (int32_t i = 0; i < gc->shard_count; i++) {
        pthread_mutex_lock(&gc->shards[i].lock);
        restart_sessions(gc, &gc->shards[i]);
        pthread_mutex_unlock(&gc->shards[i].lock);
    }
}

bool group_coordinator_is_loading(struct group_coordinator *gc)
{
    return atomic_load(&gc->loading);
}

/* ---- replay from the durable store ---- */

static void load_offset(void *ctx, const char *group_id, const char *topic, int32_t partition,
                        const struct group_offset_record *rec)
{
    struct group_coordinator *gc = ctx;
    struct group_shard *shard = group_lock(gc, group_id);
    struct group *g = rec ? group_get_or_create(gc, group_id) : group_find(gc, group_id);
    if (!g)
        goto out;
    if (!rec) {
        struct group_offset *gone = group_offset_table_find(&g->offsets, topic, partition);
        if (gone)
            group_offset_table_remove(&g->offsets, gone);
        if (g->offsets.count == 0 && g->txn_offset_count == 0 && g->state == GROUP_EMPTY && g->generation == 0 &&
            !g->protocol_type)
            group_remove(gc, g);
        goto out;
    }
    struct group_offset *o = group_offset_table_add(&g->offsets, topic, partition);
    if (!o)
        goto out;
    free(o->metadata);
    o->offset = rec->offset;
    o->leader_epoch = rec->leader_epoch;
    o->metadata = group_strndup_bytes(rec->metadata, rec->metadata_len);
    o->metadata_len = o->metadata ? rec->metadata_len : 0;
    o->commit_timestamp = rec->commit_timestamp;
    o->expire_timestamp = rec->expire_timestamp;
    o->write_seq = atomic_fetch_add(&gc->write_seq, 1) + 1;
out:
    group_unlock(shard);
}

static void load_group(void *ctx, const char *group_id, const struct group_snapshot_record *rec)
{
    struct group_coordinator *gc = ctx;
    struct group_shard *shard = group_lock(gc, group_id);
    struct group *g = group_find(gc, group_id);
    if (!rec) {
        if (g)
            group_remove(gc, g);
        goto out;
    }
    if (!g)
        g = group_get_or_create(gc, group_id);
    if (!g)
        goto out;
    group_members_clear(g);
    free(g->protocol_type);
    free(g->protocol);
    free(g->leader);
    g->protocol_type = group_strdup(rec->protocol_type);
    g->protocol = group_strdup(rec->protocol);
    g->leader = group_strdup(rec->leader);
    g->generation = rec->generation;
    g->state_timestamp = rec->current_state_timestamp;
    g->state = GROUP_EMPTY;
    if (rec->member_count > 0 && rec->protocol) {
        if (rec->member_count > g->member_cap) {
            struct group_member **n = realloc(g->members, rec->member_count * sizeof *n);
            if (n) {
                g->members = n;
                g->member_cap = rec->member_count;
            }
        }
        for (size_t i = 0; i < rec->member_count && i < g->member_cap; i++) {
            const struct group_member_record *mr = &rec->members[i];
            struct group_member *m = calloc(1, sizeof *m);
            struct group_member_protocol *p = calloc(1, sizeof *p);
            if (!m || !p) {
                free(m);
                free(p);
                break;
            }
            m->member_id = group_strdup(mr->member_id);
            m->instance_id = group_strdup(mr->group_instance_id);
            m->client_id = group_strdup(mr->client_id);
            m->client_host = group_strdup(mr->client_host);
            m->session_timeout_ms = mr->session_timeout_ms;
            m->rebalance_timeout_ms = mr->rebalance_timeout_ms;
            p->name = group_strdup(rec->protocol);
            p->metadata = group_memdup(mr->subscription, mr->subscription_len);
            p->metadata_len = mr->subscription_len;
            m->protocols = p;
            m->protocol_count = 1;
            m->assignment = group_memdup(mr->assignment, mr->assignment_len);
            m->assignment_len = mr->assignment_len;
            m->synced = true;
            m->session_deadline = group_now(gc) + m->session_timeout_ms;
            /* A record naming a member twice keeps the first. */
            if (!m->member_id || group_member_find(g, m->member_id) ||
                (m->instance_id && group_member_by_instance(g, m->instance_id)) || group_member_append(g, m) != 0)
                group_member_free(m);
        }
        if (g->member_count > 0)
            g->state = GROUP_STABLE;
    }
    if (g->state == GROUP_EMPTY) {
        free(g->leader);
        g->leader = NULL;
    }
out:
    group_unlock(shard);
}

static const struct group_load_visitor load_visitor = {
    .offset = load_offset,
    .group = load_group,
    .pending_offset = group_load_pending_offset,
};

const struct group_load_visitor *group_coordinator_load_visitor(void)
{
    return &load_visitor;
}

/* ---- per-partition loading (the coordinator runtime's hooks) ---- */

static int shard_load(void *coordinator, int32_t partition, int32_t epoch, char *err, size_t errlen)
{
    struct group_coordinator *gc = coordinator;
    if (!gc->opts.ops || !gc->opts.ops->load_partition) {
        snprintf(err, errlen, "the group store cannot load one partition");
        return -1;
    }
    int64_t started = group_now(gc);
    if (gc->opts.ops->load_partition(gc->opts.store, partition, &load_visitor, gc, err, errlen) != 0)
        return -1;
    struct group_shard *shard = group_partition_shard(gc, partition);
    pthread_mutex_lock(&shard->lock);
    group_txn_ends_replay(gc, partition, true);
    restart_sessions(gc, shard);
    pthread_mutex_unlock(&shard->lock);
    logger_debug("group", "loaded __consumer_offsets-%d (coordinator epoch %d) in %lld ms", (int)partition, (int)epoch,
                 (long long)(group_now(gc) - started));
    return 0;
}

static void shard_unload(void *coordinator, int32_t partition)
{
    struct group_coordinator *gc = coordinator;
    struct group_shard *shard = group_partition_shard(gc, partition);
    pthread_mutex_lock(&shard->lock);
    group_txn_ends_replay(gc, partition, false); /* of a load that did not finish */
    size_t dropped = 0;
    for (struct group *g = shard->group_list, *next; g; g = next) {
        next = g->next;
        if (g->partition == partition) {
            group_fail_parked(g, KAFKA_ERR_NOT_COORDINATOR);
            group_remove(gc, g);
            dropped++;
        }
    }
    pthread_mutex_unlock(&shard->lock);
    if (dropped > 0)
        logger_debug("group", "dropped %zu group(s) of __consumer_offsets-%d", dropped, (int)partition);
}

static const struct coordinator_shard_ops shard_ops = {.load = shard_load, .unload = shard_unload};

const struct coordinator_shard_ops *group_coordinator_shard_ops(void)
{
    return &shard_ops;
}
