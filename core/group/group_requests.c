/* The entry points of the classic group protocol: JoinGroup, SyncGroup,
 * Heartbeat and LeaveGroup. The transitions they cause are in
 * group_membership.c. */
#include <stdlib.h>
#include <string.h>

#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

static int16_t check_timeouts(struct group_coordinator *gc, const struct group_join_params *p)
{
    if (p->session_timeout_ms < gc->opts.min_session_timeout_ms ||
        p->session_timeout_ms > gc->opts.max_session_timeout_ms)
        return KAFKA_ERR_INVALID_SESSION_TIMEOUT;
    return KAFKA_ERR_NONE;
}

/* Whether a new pending member (KIP-394) would be over a bound: the
 * group's answers GROUP_MAX_SIZE_REACHED, as a full group does; the
 * coordinator's COORDINATOR_LOAD_IN_PROGRESS, which clients retry (other
 * groups' strays must not fail a healthy group for good). */
static int16_t pending_refused(const struct group_coordinator *gc, const struct group *g)
{
    if (gc->opts.max_pending_members_per_group > 0 &&
        g->pending_count >= (size_t)gc->opts.max_pending_members_per_group)
        return KAFKA_ERR_GROUP_MAX_SIZE_REACHED;
    if (gc->opts.max_pending_members > 0 && gc->pending_total >= (size_t)gc->opts.max_pending_members)
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    return KAFKA_ERR_NONE;
}

static void join_new_member(struct group_coordinator *gc, struct group *g, const struct group_join_params *p,
                            group_join_cb cb, void *arg, int64_t now)
{
    struct group_member *known = group_member_by_instance(g, p->group_instance_id);
    if (known) {
        /* A static member restarted: it takes over its old identity. */
        char *new_id = group_generate_member_id(p->client_id);
        if (!new_id)
            return group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
        if (known->join_cb) {
            group_join_respond_error(known->join_cb, known->join_arg, KAFKA_ERR_FENCED_INSTANCE_ID, known->member_id);
            known->join_cb = NULL;
        }
        if (known->sync_cb) {
            group_sync_respond_error(known->sync_cb, known->sync_arg, KAFKA_ERR_FENCED_INSTANCE_ID);
            known->sync_cb = NULL;
        }
        bool was_leader = g->leader && strcmp(g->leader, known->member_id) == 0;
        char *leader = was_leader ? group_strdup(new_id) : NULL;
        /* Kept until the answer is sent: a leader that cannot skip the
         * assignment is told the old id leads (below). */
        char *old_id = NULL;
        if (was_leader && !leader)
            free(new_id);
        else
            old_id = group_member_rename(g, known, new_id);
        if (!old_id) {
            free(leader);
            return group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
        }
        if (was_leader) {
            free(g->leader);
            g->leader = leader;
        }
        known->session_deadline = now + p->session_timeout_ms;
        /* Kafka's rule: a Stable group skips the rebalance when the protocol
         * it would pick next, with the member's new protocols, is the one it
         * runs; the assignment then carries over to the new member id. */
        struct group_member_protocol *np = group_protocols_copy(p->protocols, p->protocol_count);
        if (np) {
            group_protocols_free(known->protocols, known->protocol_count);
            known->protocols = np;
            known->protocol_count = p->protocol_count;
        }
        const char *next = g->state == GROUP_STABLE ? group_select_protocol(g) : NULL;
        if (next && g->protocol && strcmp(next, g->protocol) == 0) {
            logger_info("group", "group %s: static member %s rejoined as %s without a rebalance", g->group_id,
                        p->group_instance_id, new_id);
            group_snapshot_store(gc, g);
            /* KIP-814: before JoinGroup v9 a client named leader would run
             * an assignment the Stable group ignores, so, as Kafka does, it
             * hears the old id lead and acts as a follower. */
            if (was_leader && !p->supports_skip_assignment)
                group_join_respond_follower(g, known, cb, arg, old_id);
            else
                group_join_respond_current(g, known, cb, arg, true);
            free(old_id);
            return;
        }
        free(old_id);
        group_member_update_and_park(gc, g, known, p, cb, arg, now);
        return;
    }
    if (g->member_count + g->pending_count >= (size_t)gc->opts.max_group_size)
        return group_join_respond_error(cb, arg, KAFKA_ERR_GROUP_MAX_SIZE_REACHED, "");
    bool pending = p->require_known_member_id && !p->group_instance_id;
    int16_t full = pending ? pending_refused(gc, g) : KAFKA_ERR_NONE;
    if (full != KAFKA_ERR_NONE)
        return group_join_respond_error(cb, arg, full, "");
    char *member_id = group_generate_member_id(p->client_id);
    if (!member_id)
        return group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
    if (pending) {
        /* KIP-394: hand out the id first; the member joins with it. The
         * entry lives until the member joins or its session timeout. */
        if (group_pending_add(gc, g, member_id, now + p->session_timeout_ms) != 0)
            return group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
        return group_join_respond_error(cb, arg, KAFKA_ERR_MEMBER_ID_REQUIRED,
                                        g->pending[g->pending_count - 1]->member_id);
    }
    struct group_member *m = group_member_new(p, member_id);
    if (!m || group_member_append(g, m) != 0) {
        if (m)
            group_member_free(m);
        else
            free(member_id);
        return group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
    }
    if (g->member_count == 1 && !g->protocol_type)
        g->protocol_type = group_strdup(p->protocol_type);
    m->session_deadline = now + p->session_timeout_ms;
    g->new_member_added = true;
    group_member_update_and_park(gc, g, m, p, cb, arg, now);
}

void group_coordinator_join(struct group_coordinator *gc, const struct group_join_params *p, group_join_cb cb,
                            void *arg)
{
    struct group_shard *shard = group_lock(gc, p->group_id);
    int64_t now = group_now(gc);
    const char *member_id = p->member_id ? p->member_id : "";
    int16_t err = group_coordinator_serving(gc, p->group_id);
    if (err == KAFKA_ERR_NONE && (!p->group_id || !p->group_id[0]))
        err = KAFKA_ERR_INVALID_GROUP_ID;
    if (err == KAFKA_ERR_NONE)
        err = check_timeouts(gc, p);
    if (err != KAFKA_ERR_NONE) {
        group_join_respond_error(cb, arg, err, member_id);
        goto out;
    }
    struct group *g = member_id[0] ? group_find(gc, p->group_id) : group_get_or_create(gc, p->group_id);
    if (!g) {
        group_join_respond_error(cb, arg, member_id[0] ? KAFKA_ERR_UNKNOWN_MEMBER_ID : KAFKA_ERR_UNKNOWN_SERVER_ERROR,
                                 member_id);
        goto out;
    }
    if (g->state == GROUP_DEAD) {
        group_join_respond_error(cb, arg, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE, member_id);
        goto out;
    }
    if (!group_supports_protocols(g, p)) {
        group_join_respond_error(cb, arg, KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL, member_id);
        goto out;
    }
    if (!member_id[0]) {
        join_new_member(gc, g, p, cb, arg, now);
        goto out;
    }
    struct group_pending_member *pm = group_pending_find(g, member_id);
    if (pm) {
        group_pending_remove(gc, g, pm);
        struct group_member *m = group_member_new(p, strdup(member_id));
        if (!m || !m->member_id || group_member_append(g, m) != 0) {
            group_member_free(m);
            group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, member_id);
            goto out;
        }
        if (g->member_count == 1 && !g->protocol_type)
            g->protocol_type = group_strdup(p->protocol_type);
        m->session_deadline = now + p->session_timeout_ms;
        g->new_member_added = true;
        group_member_update_and_park(gc, g, m, p, cb, arg, now);
        goto out;
    }
    struct group_member *by_instance = group_member_by_instance(g, p->group_instance_id);
    if (by_instance && strcmp(by_instance->member_id, member_id) != 0) {
        group_join_respond_error(cb, arg, KAFKA_ERR_FENCED_INSTANCE_ID, member_id);
        goto out;
    }
    struct group_member *m = group_member_find(g, member_id);
    if (!m) {
        group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, member_id);
        goto out;
    }
    m->session_deadline = now + p->session_timeout_ms;
    bool is_leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    switch (g->state) {
    case GROUP_PREPARING_REBALANCE:
        group_member_update_and_park(gc, g, m, p, cb, arg, now);
        break;
    case GROUP_COMPLETING_REBALANCE:
        if (group_same_protocols(m, p))
            group_join_respond_current(g, m, cb, arg, false);
        else
            group_member_update_and_park(gc, g, m, p, cb, arg, now);
        break;
    case GROUP_STABLE:
        /* The leader rejoining means it wants a new assignment (e.g. the
         * topics it watches changed). */
        if (is_leader || !group_same_protocols(m, p))
            group_member_update_and_park(gc, g, m, p, cb, arg, now);
        else
            group_join_respond_current(g, m, cb, arg, false);
        break;
    default:
        group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, member_id);
        break;
    }
out:
    group_unlock(shard);
}

/* Finds member_id in g, applying the static-member fence. */
static int16_t member_check(struct group *g, const char *member_id, const char *instance_id, struct group_member **out)
{
    *out = NULL;
    struct group_member *by_instance = group_member_by_instance(g, instance_id);
    if (by_instance && strcmp(by_instance->member_id, member_id) != 0)
        return KAFKA_ERR_FENCED_INSTANCE_ID;
    *out = group_member_find(g, member_id);
    return *out ? KAFKA_ERR_NONE : KAFKA_ERR_UNKNOWN_MEMBER_ID;
}

static void sync_respond_assignment(struct group *g, struct group_member *m, group_sync_cb cb, void *arg)
{
    struct group_sync_result r = {
        .error_code = KAFKA_ERR_NONE,
        .protocol_type = g->protocol_type,
        .protocol_name = g->protocol,
        .assignment = m->assignment,
        .assignment_len = m->assignment_len,
    };
    cb(arg, &r);
}

/* The assignment could not be written (or replicated): every waiting
 * member gets the error, and the group rebalances (Kafka's
 * resetAndPropagateAssignmentError, then maybePrepareRebalance). */
static void assignment_failed(struct group_coordinator *gc, struct group *g, int16_t err, int64_t now)
{
    logger_warn("group", "group %s generation %d: the assignment was not stored (error %d); rebalancing", g->group_id,
                g->generation, (int)err);
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *o = g->members[i];
        if (!o->sync_cb)
            continue;
        group_sync_cb ocb = o->sync_cb;
        o->sync_cb = NULL;
        group_sync_respond_error(ocb, o->sync_arg, err);
    }
    group_prepare_rebalance(gc, g, now);
}

void group_coordinator_sync(struct group_coordinator *gc, const struct group_sync_params *p, group_sync_cb cb,
                            void *arg)
{
    struct group_shard *shard = group_lock(gc, p->group_id);
    int64_t now = group_now(gc);
    int16_t err = group_coordinator_serving(gc, p->group_id);
    struct group *g = NULL;
    struct group_member *m = NULL;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, p->group_id ? p->group_id : "");
        if (!g)
            err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
    }
    if (err == KAFKA_ERR_NONE)
        err = member_check(g, p->member_id ? p->member_id : "", p->group_instance_id, &m);
    if (err == KAFKA_ERR_NONE && p->generation_id != g->generation)
        err = KAFKA_ERR_ILLEGAL_GENERATION;
    if (err == KAFKA_ERR_NONE &&
        ((p->protocol_type && (!g->protocol_type || strcmp(p->protocol_type, g->protocol_type) != 0)) ||
         (p->protocol_name && (!g->protocol || strcmp(p->protocol_name, g->protocol) != 0))))
        err = KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL;
    if (err == KAFKA_ERR_NONE) {
        switch (g->state) {
        case GROUP_PREPARING_REBALANCE:
            err = KAFKA_ERR_REBALANCE_IN_PROGRESS;
            break;
        case GROUP_STABLE:
            m->session_deadline = now + m->session_timeout_ms;
            sync_respond_assignment(g, m, cb, arg);
            goto out;
        case GROUP_COMPLETING_REBALANCE:
            break;
        default:
            err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
            break;
        }
    }
    if (err != KAFKA_ERR_NONE) {
        group_sync_respond_error(cb, arg, err);
        goto out;
    }
    if (m->sync_cb)
        group_sync_respond_error(m->sync_cb, m->sync_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS);
    m->sync_cb = cb;
    m->sync_arg = arg;
    m->sync_conn = p->connection_id;
    m->synced = true;
    m->session_deadline = now + m->session_timeout_ms;
    if (!g->leader || strcmp(g->leader, m->member_id) != 0)
        goto out;
    /* The leader again while its assignment is being written: it waits
     * with the others for that write. */
    if (g->assignment_writing == g->generation)
        goto out;

    /* The leader's assignment completes the generation. A member named
     * twice gets its first entry (walked backwards, the first is set last). */
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *o = g->members[i];
        free(o->assignment);
        o->assignment = NULL;
        o->assignment_len = 0;
    }
    for (size_t a = p->assignment_count; a-- > 0;) {
        struct group_member *o = p->assignments[a].member_id ? group_member_find(g, p->assignments[a].member_id) : NULL;
        if (!o)
            continue;
        free(o->assignment);
        o->assignment = group_memdup(p->assignments[a].assignment, p->assignments[a].assignment_len);
        o->assignment_len = o->assignment ? p->assignments[a].assignment_len : 0;
    }
    bool split = gc->opts.ops && gc->opts.ops->append_group && gc->opts.ops->sync;
    struct group_sync_point sync_point;
    int16_t werr = group_snapshot_write(gc, g, split ? &sync_point : NULL);
    if (!split)
        werr = KAFKA_ERR_NONE; /* a store that writes in one step: a failure is only logged */
    else if (werr == KAFKA_ERR_NONE && sync_point.partition >= 0) {
        /* Kafka answers the generation only once its record is replicated
         * (offsets.commit.timeout.ms); the wait runs outside the lock. */
        int32_t generation = g->generation;
        g->assignment_writing = generation;
        group_unlock(shard);
        werr = gc->opts.ops->sync(gc->opts.store, &sync_point);
        pthread_mutex_lock(&shard->lock);
        /* The group may have moved on (a rebalance, an unload) meanwhile;
         * then this write decides nothing. */
        g = group_find(gc, p->group_id ? p->group_id : "");
        if (!g || g->assignment_writing != generation)
            goto out;
        g->assignment_writing = 0;
        if (g->state != GROUP_COMPLETING_REBALANCE || g->generation != generation)
            goto out;
    }
    if (werr != KAFKA_ERR_NONE) {
        assignment_failed(gc, g, werr, group_now(gc));
        goto out;
    }
    group_set_state(gc, g, GROUP_STABLE);
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *o = g->members[i];
        if (!o->sync_cb)
            continue;
        group_sync_cb ocb = o->sync_cb;
        o->sync_cb = NULL;
        sync_respond_assignment(g, o, ocb, o->sync_arg);
    }
out:
    group_unlock(shard);
}

int16_t group_coordinator_heartbeat(struct group_coordinator *gc, const char *group_id, int32_t generation_id,
                                    const char *member_id, const char *group_instance_id)
{
    struct group_shard *shard = group_lock(gc, group_id);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = NULL;
    struct group_member *m = NULL;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, group_id ? group_id : "");
        if (!g)
            err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
        else if (g->state == GROUP_DEAD)
            err = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (err == KAFKA_ERR_NONE)
        err = member_check(g, member_id ? member_id : "", group_instance_id, &m);
    if (err == KAFKA_ERR_NONE && generation_id != g->generation)
        err = KAFKA_ERR_ILLEGAL_GENERATION;
    if (err == KAFKA_ERR_NONE) {
        m->session_deadline = group_now(gc) + m->session_timeout_ms;
        if (g->state == GROUP_PREPARING_REBALANCE)
            err = KAFKA_ERR_REBALANCE_IN_PROGRESS;
        else if (g->state == GROUP_EMPTY)
            err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
    }
    group_unlock(shard);
    return err;
}

int16_t group_coordinator_leave(struct group_coordinator *gc, const char *group_id, struct group_leave_member *members,
                                size_t count)
{
    struct group_shard *shard = group_lock(gc, group_id);
    int64_t now = group_now(gc);
    int16_t err = group_coordinator_serving(gc, group_id);
    struct group *g = err == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    if (err == KAFKA_ERR_NONE && g && g->state == GROUP_DEAD)
        err = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    if (err != KAFKA_ERR_NONE)
        goto out;
    bool removed = false;
    for (size_t k = 0; k < count; k++) {
        struct group_leave_member *lm = &members[k];
        const char *mid = lm->member_id ? lm->member_id : "";
        lm->error_code = KAFKA_ERR_UNKNOWN_MEMBER_ID;
        if (!g)
            continue;
        if (lm->group_instance_id) {
            struct group_member *m = group_member_by_instance(g, lm->group_instance_id);
            if (!m)
                continue;
            if (mid[0] && strcmp(mid, m->member_id) != 0) {
                lm->error_code = KAFKA_ERR_FENCED_INSTANCE_ID;
                continue;
            }
            mid = m->member_id;
        }
        struct group_pending_member *pm = group_pending_find(g, mid);
        if (pm) {
            group_pending_remove(gc, g, pm);
            lm->error_code = KAFKA_ERR_NONE;
            removed = true;
            continue;
        }
        struct group_member *leaving = group_member_find(g, mid);
        for (size_t i = 0; leaving && i < g->member_count; i++) {
            if (g->members[i] != leaving)
                continue;
            logger_info("group", "group %s: member %s leaves", g->group_id, mid);
            group_remove_member_at(g, i);
            lm->error_code = KAFKA_ERR_NONE;
            removed = true;
            break;
        }
    }
    if (removed)
        group_member_removed(gc, g, now);
out:
    group_unlock(shard);
    return err;
}
