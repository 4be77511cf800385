/* The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup and the timers that drive a group through
 * Empty -> PreparingRebalance -> CompletingRebalance -> Stable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/uuid.h"
#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

struct group_member *group_member_find(struct group *g, const char *member_id)
{
    for (size_t i = 0; i < g->member_count; i++)
        if (strcmp(g->members[i]->member_id, member_id) == 0) return g->members[i];
    return NULL;
}

struct group_member *group_member_by_instance(struct group *g, const char *instance_id)
{
    if (!instance_id) return NULL;
    for (size_t i = 0; i < g->member_count; i++)
        if (g->members[i]->instance_id && strcmp(g->members[i]->instance_id, instance_id) == 0) return g->members[i];
    return NULL;
}

static void protocols_free(struct group_member_protocol *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].metadata);
    }
    free(p);
}

void group_member_free(struct group_member *m)
{
    if (!m) return;
    free(m->member_id);
    free(m->instance_id);
    free(m->client_id);
    free(m->client_host);
    protocols_free(m->protocols, m->protocol_count);
    free(m->assignment);
    free(m);
}

const struct group_member_protocol *group_member_protocol(const struct group_member *m, const char *name)
{
    for (size_t i = 0; i < m->protocol_count; i++)
        if (strcmp(m->protocols[i].name, name) == 0) return &m->protocols[i];
    return NULL;
}

static int pending_index(struct group *g, const char *member_id)
{
    for (size_t i = 0; i < g->pending_count; i++)
        if (strcmp(g->pending[i].member_id, member_id) == 0) return (int)i;
    return -1;
}

static void pending_remove_at(struct group *g, size_t i)
{
    free(g->pending[i].member_id);
    g->pending[i] = g->pending[--g->pending_count];
}

/* Kafka's form: "<client id>-<uuid>". */
static char *generate_member_id(const char *client_id)
{
    uint8_t u[16];
    if (uuid_random(u) != 0) return NULL;
    char buf[512];
    snprintf(buf, sizeof buf, "%.255s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             client_id ? client_id : "", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
             u[12], u[13], u[14], u[15]);
    return strdup(buf);
}

static struct group_member_protocol *protocols_copy(const struct group_protocol *src, size_t n)
{
    struct group_member_protocol *p = calloc(n ? n : 1, sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) {
        p[i].name = strdup(src[i].name ? src[i].name : "");
        p[i].metadata = group_memdup(src[i].metadata, src[i].metadata_len);
        p[i].metadata_len = src[i].metadata_len;
        if (!p[i].name || !p[i].metadata) {
            protocols_free(p, i + 1);
            return NULL;
        }
    }
    return p;
}

/* How many members support protocol name. */
static size_t protocol_support(const struct group *g, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < g->member_count; i++)
        if (group_member_protocol(g->members[i], name)) n++;
    return n;
}

/* Kafka's rule: an empty group takes any non-empty protocol type and list;
 * otherwise the type must match and one protocol must be supported by all. */
static bool group_supports(const struct group *g, const struct group_join_params *p)
{
    if (!p->protocol_type || !p->protocol_type[0] || p->protocol_count == 0) return false;
    if (g->member_count == 0) return true;
    if (!g->protocol_type || strcmp(g->protocol_type, p->protocol_type) != 0) return false;
    for (size_t i = 0; i < p->protocol_count; i++)
        if (p->protocols[i].name && protocol_support(g, p->protocols[i].name) == g->member_count) return true;
    return false;
}

/* Among protocols every member supports, each member votes for its most
 * preferred one; the most votes wins, ties go to the first member's order. */
static const char *select_protocol(const struct group *g)
{
    if (g->member_count == 0) return NULL;
    const struct group_member *first = g->members[0];
    const char *best = NULL;
    size_t best_votes = 0;
    for (size_t c = 0; c < first->protocol_count; c++) {
        const char *cand = first->protocols[c].name;
        if (protocol_support(g, cand) != g->member_count) continue;
        size_t votes = 0;
        for (size_t i = 0; i < g->member_count; i++) {
            const struct group_member *m = g->members[i];
            for (size_t k = 0; k < m->protocol_count; k++) {
                if (protocol_support(g, m->protocols[k].name) != g->member_count) continue;
                if (strcmp(m->protocols[k].name, cand) == 0) votes++;
                break;
            }
        }
        if (!best || votes > best_votes) {
            best = cand;
            best_votes = votes;
        }
    }
    return best;
}

static void join_respond_error(group_join_cb cb, void *arg, int16_t err, const char *member_id)
{
    struct group_join_result r = {.error_code = err, .generation_id = -1, .member_id = member_id ? member_id : ""};
    cb(arg, &r);
}

static void sync_respond_error(group_sync_cb cb, void *arg, int16_t err)
{
    struct group_sync_result r = {.error_code = err};
    cb(arg, &r);
}

/* Answers m's parked JoinGroup with the current generation; the leader gets
 * every member's metadata for the chosen protocol. */
static void join_respond_current(struct group *g, struct group_member *m, group_join_cb cb, void *arg,
                                 bool skip_assignment)
{
    bool leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    struct group_join_member *list = NULL;
    size_t n = 0;
    if (leader) {
        list = calloc(g->member_count ? g->member_count : 1, sizeof *list);
        if (!list) {
            join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, m->member_id);
            return;
        }
        for (size_t i = 0; i < g->member_count; i++) {
            const struct group_member *o = g->members[i];
            const struct group_member_protocol *p = g->protocol ? group_member_protocol(o, g->protocol) : NULL;
            list[n++] = (struct group_join_member){
                .member_id = o->member_id,
                .group_instance_id = o->instance_id,
                .metadata = p ? p->metadata : NULL,
                .metadata_len = p ? p->metadata_len : 0,
            };
        }
    }
    struct group_join_result r = {
        .error_code = KAFKA_ERR_NONE,
        .generation_id = g->generation,
        .protocol_type = g->protocol_type,
        .protocol_name = g->protocol,
        .leader = g->leader ? g->leader : "",
        .member_id = m->member_id,
        .skip_assignment = leader && skip_assignment,
        .members = list,
        .member_count = n,
    };
    cb(arg, &r);
    free(list);
}

void group_fail_parked(struct group *g, int16_t err)
{
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *m = g->members[i];
        if (m->join_cb) {
            group_join_cb cb = m->join_cb;
            m->join_cb = NULL;
            join_respond_error(cb, m->join_arg, err, m->member_id);
        }
        if (m->sync_cb) {
            group_sync_cb cb = m->sync_cb;
            m->sync_cb = NULL;
            sync_respond_error(cb, m->sync_arg, err);
        }
    }
}

static int32_t max_rebalance_timeout(const struct group *g)
{
    int32_t t = 0;
    for (size_t i = 0; i < g->member_count; i++)
        if (g->members[i]->rebalance_timeout_ms > t) t = g->members[i]->rebalance_timeout_ms;
    return t;
}

static void prepare_rebalance(struct group_coordinator *gc, struct group *g, int64_t now)
{
    if (g->state == GROUP_COMPLETING_REBALANCE) {
        /* The assignment being distributed is void: members rejoin. */
        for (size_t i = 0; i < g->member_count; i++) {
            struct group_member *m = g->members[i];
            free(m->assignment);
            m->assignment = NULL;
            m->assignment_len = 0;
            if (m->sync_cb) {
                group_sync_cb cb = m->sync_cb;
                m->sync_cb = NULL;
                sync_respond_error(cb, m->sync_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS);
            }
        }
    }
    int32_t timeout = max_rebalance_timeout(g);
    if (g->state == GROUP_EMPTY) {
        int32_t delay = gc->opts.initial_rebalance_delay_ms;
        g->initial_delay = true;
        g->new_member_added = false;
        g->initial_delay_remaining_ms = timeout > delay ? timeout - delay : 0;
        g->join_deadline = now + delay;
    } else {
        g->initial_delay = false;
        g->join_deadline = now + timeout;
    }
    group_set_state(gc, g, GROUP_PREPARING_REBALANCE);
    logger_info("group", "group %s rebalancing (generation %d, %zu members)", g->group_id, g->generation,
                g->member_count);
}

static void remove_member_at(struct group *g, size_t i)
{
    struct group_member *m = g->members[i];
    if (m->join_cb) join_respond_error(m->join_cb, m->join_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, m->member_id);
    if (m->sync_cb) sync_respond_error(m->sync_cb, m->sync_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID);
    bool was_leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    memmove(&g->members[i], &g->members[i + 1], (g->member_count - i - 1) * sizeof *g->members);
    g->member_count--;
    group_member_free(m);
    if (was_leader) {
        free(g->leader);
        g->leader = g->member_count > 0 ? group_strdup(g->members[0]->member_id) : NULL;
    }
}

static void complete_join(struct group_coordinator *gc, struct group *g, int64_t now);

static void try_complete_join(struct group_coordinator *gc, struct group *g, int64_t now)
{
    if (g->state != GROUP_PREPARING_REBALANCE || g->initial_delay) return;
    if (g->pending_count > 0) return;
    for (size_t i = 0; i < g->member_count; i++)
        if (!g->members[i]->join_cb) return;
    complete_join(gc, g, now);
}

/* After a member left or expired: the group rebalances without it. */
static void member_removed(struct group_coordinator *gc, struct group *g, int64_t now)
{
    switch (g->state) {
    case GROUP_STABLE:
    case GROUP_COMPLETING_REBALANCE:
        prepare_rebalance(gc, g, now);
        /* With nobody left, the group completes (to Empty) right away. */
        if (g->member_count == 0) complete_join(gc, g, now);
        break;
    case GROUP_PREPARING_REBALANCE:
        if (g->member_count == 0 && g->pending_count == 0) complete_join(gc, g, now);
        else try_complete_join(gc, g, now);
        break;
    default:
        break;
    }
}

static void complete_join(struct group_coordinator *gc, struct group *g, int64_t now)
{
    /* Dynamic members that did not rejoin in time are out; static ones stay
     * until their session expires (KIP-345). */
    for (size_t i = 0; i < g->member_count;) {
        struct group_member *m = g->members[i];
        if (!m->join_cb && !m->instance_id) {
            logger_info("group", "group %s: member %s did not rejoin in time; removing it", g->group_id,
                        m->member_id);
            remove_member_at(g, i);
        } else {
            i++;
        }
    }
    g->initial_delay = false;
    g->generation++;
    free(g->protocol);
    g->protocol = NULL;
    if (g->member_count == 0) {
        free(g->leader);
        g->leader = NULL;
        group_set_state(gc, g, GROUP_EMPTY);
        group_snapshot_store(gc, g);
        logger_info("group", "group %s is empty (generation %d)", g->group_id, g->generation);
        return;
    }
    const char *chosen = select_protocol(g);
    g->protocol = group_strdup(chosen);
    bool leader_joined = false;
    struct group_member *leader = g->leader ? group_member_find(g, g->leader) : NULL;
    leader_joined = leader && leader->join_cb;
    if (!leader_joined) {
        for (size_t i = 0; i < g->member_count; i++) {
            if (!g->members[i]->join_cb) continue;
            free(g->leader);
            g->leader = group_strdup(g->members[i]->member_id);
            break;
        }
    }
    group_set_state(gc, g, GROUP_COMPLETING_REBALANCE);
    g->sync_deadline = now + max_rebalance_timeout(g);
    logger_info("group", "group %s generation %d: %zu members, protocol %s, leader %s", g->group_id,
                g->generation, g->member_count, g->protocol ? g->protocol : "(none)", g->leader);
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *m = g->members[i];
        m->synced = false;
        m->session_deadline = now + m->session_timeout_ms;
        free(m->assignment);
        m->assignment = NULL;
        m->assignment_len = 0;
        if (m->join_cb) {
            group_join_cb cb = m->join_cb;
            m->join_cb = NULL;
            join_respond_current(g, m, cb, m->join_arg, false);
        }
    }
}

static int16_t check_timeouts(struct group_coordinator *gc, const struct group_join_params *p)
{
    if (p->session_timeout_ms < gc->opts.min_session_timeout_ms ||
        p->session_timeout_ms > gc->opts.max_session_timeout_ms)
        return KAFKA_ERR_INVALID_SESSION_TIMEOUT;
    return KAFKA_ERR_NONE;
}

static struct group_member *member_new(const struct group_join_params *p, char *member_id)
{
    struct group_member *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->member_id = member_id;
    m->instance_id = group_strdup(p->group_instance_id);
    m->client_id = group_strdup(p->client_id ? p->client_id : "");
    m->client_host = group_strdup(p->client_host ? p->client_host : "");
    m->protocols = protocols_copy(p->protocols, p->protocol_count);
    m->protocol_count = p->protocol_count;
    m->session_timeout_ms = p->session_timeout_ms;
    m->rebalance_timeout_ms = p->rebalance_timeout_ms > 0 ? p->rebalance_timeout_ms : p->session_timeout_ms;
    if (!m->client_id || !m->client_host || !m->protocols || (p->group_instance_id && !m->instance_id)) {
        m->member_id = NULL;
        group_member_free(m);
        return NULL;
    }
    return m;
}

static int member_append(struct group *g, struct group_member *m)
{
    if (g->member_count == g->member_cap) {
        size_t cap = g->member_cap ? g->member_cap * 2 : 8;
        struct group_member **n = realloc(g->members, cap * sizeof *n);
        if (!n) return -1;
        g->members = n;
        g->member_cap = cap;
    }
    g->members[g->member_count++] = m;
    return 0;
}

/* A member (re)joins with these protocols and waits for the join phase. */
static void member_update_and_park(struct group_coordinator *gc, struct group *g, struct group_member *m,
                                   const struct group_join_params *p, group_join_cb cb, void *arg, int64_t now)
{
    struct group_member_protocol *np = protocols_copy(p->protocols, p->protocol_count);
    if (np) {
        protocols_free(m->protocols, m->protocol_count);
        m->protocols = np;
        m->protocol_count = p->protocol_count;
    }
    m->session_timeout_ms = p->session_timeout_ms;
    m->rebalance_timeout_ms = p->rebalance_timeout_ms > 0 ? p->rebalance_timeout_ms : p->session_timeout_ms;
    if (m->join_cb) join_respond_error(m->join_cb, m->join_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS, m->member_id);
    m->join_cb = cb;
    m->join_arg = arg;
    if (g->state != GROUP_PREPARING_REBALANCE) prepare_rebalance(gc, g, now);
    try_complete_join(gc, g, now);
}

static bool same_protocols(const struct group_member *m, const struct group_join_params *p)
{
    if (m->protocol_count != p->protocol_count) return false;
    for (size_t i = 0; i < m->protocol_count; i++) {
        const struct group_protocol *q = &p->protocols[i];
        if (!q->name || strcmp(m->protocols[i].name, q->name) != 0 || m->protocols[i].metadata_len != q->metadata_len ||
            (q->metadata_len && memcmp(m->protocols[i].metadata, q->metadata, q->metadata_len) != 0))
            return false;
    }
    return true;
}

static void join_new_member(struct group_coordinator *gc, struct group *g, const struct group_join_params *p,
                            group_join_cb cb, void *arg, int64_t now)
{
    struct group_member *known = group_member_by_instance(g, p->group_instance_id);
    if (known) {
        /* A static member restarted: it takes over its old identity. */
        char *new_id = generate_member_id(p->client_id);
        if (!new_id) return join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
        if (known->join_cb) {
            join_respond_error(known->join_cb, known->join_arg, KAFKA_ERR_FENCED_INSTANCE_ID, known->member_id);
            known->join_cb = NULL;
        }
        if (known->sync_cb) {
            sync_respond_error(known->sync_cb, known->sync_arg, KAFKA_ERR_FENCED_INSTANCE_ID);
            known->sync_cb = NULL;
        }
        if (g->leader && strcmp(g->leader, known->member_id) == 0) {
            free(g->leader);
            g->leader = group_strdup(new_id);
        }
        free(known->member_id);
        known->member_id = new_id;
        known->session_deadline = now + p->session_timeout_ms;
        /* Kafka's rule: a Stable group skips the rebalance when the protocol
         * it would pick next, with the member's new protocols, is the one it
         * runs; the assignment then carries over to the new member id. */
        struct group_member_protocol *np = protocols_copy(p->protocols, p->protocol_count);
        if (np) {
            protocols_free(known->protocols, known->protocol_count);
            known->protocols = np;
            known->protocol_count = p->protocol_count;
        }
        const char *next = g->state == GROUP_STABLE ? select_protocol(g) : NULL;
        if (next && g->protocol && strcmp(next, g->protocol) == 0) {
            logger_info("group", "group %s: static member %s rejoined as %s without a rebalance", g->group_id,
                        p->group_instance_id, new_id);
            group_snapshot_store(gc, g);
            join_respond_current(g, known, cb, arg, true);
            return;
        }
        member_update_and_park(gc, g, known, p, cb, arg, now);
        return;
    }
    if (g->member_count + g->pending_count >= (size_t)gc->opts.max_group_size)
        return join_respond_error(cb, arg, KAFKA_ERR_GROUP_MAX_SIZE_REACHED, "");
    char *member_id = generate_member_id(p->client_id);
    if (!member_id) return join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
    if (p->require_known_member_id && !p->group_instance_id) {
        /* KIP-394: hand out the id first; the member joins with it. */
        if (g->pending_count == g->pending_cap) {
            size_t cap = g->pending_cap ? g->pending_cap * 2 : 8;
            struct group_pending_member *n = realloc(g->pending, cap * sizeof *n);
            if (!n) {
                free(member_id);
                return join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
            }
            g->pending = n;
            g->pending_cap = cap;
        }
        g->pending[g->pending_count++] = (struct group_pending_member){member_id, now + p->session_timeout_ms};
        return join_respond_error(cb, arg, KAFKA_ERR_MEMBER_ID_REQUIRED, member_id);
    }
    struct group_member *m = member_new(p, member_id);
    if (!m || member_append(g, m) != 0) {
        if (m) group_member_free(m);
        else free(member_id);
        return join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "");
    }
    if (g->member_count == 1 && !g->protocol_type) g->protocol_type = group_strdup(p->protocol_type);
    m->session_deadline = now + p->session_timeout_ms;
    g->new_member_added = true;
    member_update_and_park(gc, g, m, p, cb, arg, now);
}

void group_coordinator_join(struct group_coordinator *gc, const struct group_join_params *p, group_join_cb cb,
                            void *arg)
{
    pthread_mutex_lock(&gc->lock);
    int64_t now = group_now(gc);
    const char *member_id = p->member_id ? p->member_id : "";
    int16_t err = group_coordinator_available(gc);
    if (err == KAFKA_ERR_NONE && (!p->group_id || !p->group_id[0])) err = KAFKA_ERR_INVALID_GROUP_ID;
    if (err == KAFKA_ERR_NONE) err = check_timeouts(gc, p);
    if (err != KAFKA_ERR_NONE) {
        join_respond_error(cb, arg, err, member_id);
        goto out;
    }
    struct group *g = member_id[0] ? group_find(gc, p->group_id) : group_get_or_create(gc, p->group_id);
    if (!g) {
        join_respond_error(cb, arg, member_id[0] ? KAFKA_ERR_UNKNOWN_MEMBER_ID : KAFKA_ERR_UNKNOWN_SERVER_ERROR,
                           member_id);
        goto out;
    }
    if (g->state == GROUP_DEAD) {
        join_respond_error(cb, arg, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE, member_id);
        goto out;
    }
    if (!group_supports(g, p)) {
        join_respond_error(cb, arg, KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL, member_id);
        goto out;
    }
    if (!member_id[0]) {
        join_new_member(gc, g, p, cb, arg, now);
        goto out;
    }
    int pi = pending_index(g, member_id);
    if (pi >= 0) {
        pending_remove_at(g, (size_t)pi);
        struct group_member *m = member_new(p, strdup(member_id));
        if (!m || !m->member_id || member_append(g, m) != 0) {
            group_member_free(m);
            join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, member_id);
            goto out;
        }
        if (g->member_count == 1 && !g->protocol_type) g->protocol_type = group_strdup(p->protocol_type);
        m->session_deadline = now + p->session_timeout_ms;
        g->new_member_added = true;
        member_update_and_park(gc, g, m, p, cb, arg, now);
        goto out;
    }
    struct group_member *by_instance = group_member_by_instance(g, p->group_instance_id);
    if (by_instance && strcmp(by_instance->member_id, member_id) != 0) {
        join_respond_error(cb, arg, KAFKA_ERR_FENCED_INSTANCE_ID, member_id);
        goto out;
    }
    struct group_member *m = group_member_find(g, member_id);
    if (!m) {
        join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, member_id);
        goto out;
    }
    m->session_deadline = now + p->session_timeout_ms;
    bool is_leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    switch (g->state) {
    case GROUP_PREPARING_REBALANCE:
        member_update_and_park(gc, g, m, p, cb, arg, now);
        break;
    case GROUP_COMPLETING_REBALANCE:
        if (same_protocols(m, p)) join_respond_current(g, m, cb, arg, false);
        else member_update_and_park(gc, g, m, p, cb, arg, now);
        break;
    case GROUP_STABLE:
        /* The leader rejoining means it wants a new assignment (e.g. the
         * topics it watches changed). */
        if (is_leader || !same_protocols(m, p)) member_update_and_park(gc, g, m, p, cb, arg, now);
        else join_respond_current(g, m, cb, arg, false);
        break;
    default:
        join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, member_id);
        break;
    }
out:
    pthread_mutex_unlock(&gc->lock);
}

/* Finds member_id in g, applying the static-member fence. */
static int16_t member_check(struct group *g, const char *member_id, const char *instance_id,
                            struct group_member **out)
{
    *out = NULL;
    struct group_member *by_instance = group_member_by_instance(g, instance_id);
    if (by_instance && strcmp(by_instance->member_id, member_id) != 0) return KAFKA_ERR_FENCED_INSTANCE_ID;
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

void group_coordinator_sync(struct group_coordinator *gc, const struct group_sync_params *p, group_sync_cb cb,
                            void *arg)
{
    pthread_mutex_lock(&gc->lock);
    int64_t now = group_now(gc);
    int16_t err = group_coordinator_available(gc);
    struct group *g = NULL;
    struct group_member *m = NULL;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, p->group_id ? p->group_id : "");
        if (!g) err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
    }
    if (err == KAFKA_ERR_NONE) err = member_check(g, p->member_id ? p->member_id : "", p->group_instance_id, &m);
    if (err == KAFKA_ERR_NONE && p->generation_id != g->generation) err = KAFKA_ERR_ILLEGAL_GENERATION;
    if (err == KAFKA_ERR_NONE &&
        ((p->protocol_type && (!g->protocol_type || strcmp(p->protocol_type, g->protocol_type) != 0)) ||
         (p->protocol_name && (!g->protocol || strcmp(p->protocol_name, g->protocol) != 0))))
        err = KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL;
    if (err == KAFKA_ERR_NONE) {
        switch (g->state) {
        case GROUP_PREPARING_REBALANCE: err = KAFKA_ERR_REBALANCE_IN_PROGRESS; break;
        case GROUP_STABLE:
            m->session_deadline = now + m->session_timeout_ms;
            sync_respond_assignment(g, m, cb, arg);
            goto out;
        case GROUP_COMPLETING_REBALANCE: break;
        default: err = KAFKA_ERR_UNKNOWN_MEMBER_ID; break;
        }
    }
    if (err != KAFKA_ERR_NONE) {
        sync_respond_error(cb, arg, err);
        goto out;
    }
    if (m->sync_cb) sync_respond_error(m->sync_cb, m->sync_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS);
    m->sync_cb = cb;
    m->sync_arg = arg;
    m->synced = true;
    m->session_deadline = now + m->session_timeout_ms;
    if (!g->leader || strcmp(g->leader, m->member_id) != 0) goto out;

    /* The leader's assignment completes the generation. */
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *o = g->members[i];
        free(o->assignment);
        o->assignment = NULL;
        o->assignment_len = 0;
        for (size_t a = 0; a < p->assignment_count; a++) {
            if (!p->assignments[a].member_id || strcmp(p->assignments[a].member_id, o->member_id) != 0) continue;
            o->assignment = group_memdup(p->assignments[a].assignment, p->assignments[a].assignment_len);
            o->assignment_len = o->assignment ? p->assignments[a].assignment_len : 0;
            break;
        }
    }
    group_set_state(gc, g, GROUP_STABLE);
    group_snapshot_store(gc, g);
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *o = g->members[i];
        if (!o->sync_cb) continue;
        group_sync_cb ocb = o->sync_cb;
        o->sync_cb = NULL;
        sync_respond_assignment(g, o, ocb, o->sync_arg);
    }
out:
    pthread_mutex_unlock(&gc->lock);
}

int16_t group_coordinator_heartbeat(struct group_coordinator *gc, const char *group_id, int32_t generation_id,
                                    const char *member_id, const char *group_instance_id)
{
    pthread_mutex_lock(&gc->lock);
    int16_t err = group_coordinator_available(gc);
    struct group *g = NULL;
    struct group_member *m = NULL;
    if (err == KAFKA_ERR_NONE) {
        g = group_find(gc, group_id ? group_id : "");
        if (!g) err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
        else if (g->state == GROUP_DEAD) err = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (err == KAFKA_ERR_NONE) err = member_check(g, member_id ? member_id : "", group_instance_id, &m);
    if (err == KAFKA_ERR_NONE && generation_id != g->generation) err = KAFKA_ERR_ILLEGAL_GENERATION;
    if (err == KAFKA_ERR_NONE) {
        m->session_deadline = group_now(gc) + m->session_timeout_ms;
        if (g->state == GROUP_PREPARING_REBALANCE) err = KAFKA_ERR_REBALANCE_IN_PROGRESS;
        else if (g->state == GROUP_EMPTY) err = KAFKA_ERR_UNKNOWN_MEMBER_ID;
    }
    pthread_mutex_unlock(&gc->lock);
    return err;
}

int16_t group_coordinator_leave(struct group_coordinator *gc, const char *group_id,
                                struct group_leave_member *members, size_t count)
{
    pthread_mutex_lock(&gc->lock);
    int64_t now = group_now(gc);
    int16_t err = group_coordinator_available(gc);
    struct group *g = err == KAFKA_ERR_NONE ? group_find(gc, group_id ? group_id : "") : NULL;
    if (err == KAFKA_ERR_NONE && g && g->state == GROUP_DEAD) err = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    if (err != KAFKA_ERR_NONE) goto out;
    bool removed = false;
    for (size_t k = 0; k < count; k++) {
        struct group_leave_member *lm = &members[k];
        const char *mid = lm->member_id ? lm->member_id : "";
        lm->error_code = KAFKA_ERR_UNKNOWN_MEMBER_ID;
        if (!g) continue;
        if (lm->group_instance_id) {
            struct group_member *m = group_member_by_instance(g, lm->group_instance_id);
            if (!m) continue;
            if (mid[0] && strcmp(mid, m->member_id) != 0) {
                lm->error_code = KAFKA_ERR_FENCED_INSTANCE_ID;
                continue;
            }
            mid = m->member_id;
        }
        int pi = pending_index(g, mid);
        if (pi >= 0) {
            pending_remove_at(g, (size_t)pi);
            lm->error_code = KAFKA_ERR_NONE;
            removed = true;
            continue;
        }
        for (size_t i = 0; i < g->member_count; i++) {
            if (strcmp(g->members[i]->member_id, mid) != 0) continue;
            logger_info("group", "group %s: member %s leaves", g->group_id, mid);
            remove_member_at(g, i);
            lm->error_code = KAFKA_ERR_NONE;
            removed = true;
            break;
        }
    }
    if (removed) member_removed(gc, g, now);
out:
    pthread_mutex_unlock(&gc->lock);
    return err;
}

void group_membership_tick(struct group_coordinator *gc, struct group *g, int64_t now)
{
    bool removed = false;
    for (size_t i = 0; i < g->pending_count;) {
        if (now >= g->pending[i].deadline) {
            pending_remove_at(g, i);
            removed = true;
        } else {
            i++;
        }
    }
    for (size_t i = 0; i < g->member_count;) {
        struct group_member *m = g->members[i];
        /* A member waiting on a parked request is alive by definition. */
        if (!m->join_cb && !m->sync_cb && now >= m->session_deadline) {
            logger_info("group", "group %s: member %s session timed out; removing it", g->group_id, m->member_id);
            remove_member_at(g, i);
            removed = true;
        } else {
            i++;
        }
    }
    if (g->state == GROUP_COMPLETING_REBALANCE && now >= g->sync_deadline) {
        for (size_t i = 0; i < g->member_count;) {
            if (!g->members[i]->synced) {
                logger_info("group", "group %s: member %s did not sync in time; removing it", g->group_id,
                            g->members[i]->member_id);
                remove_member_at(g, i);
                removed = true;
            } else {
                i++;
            }
        }
    }
    if (removed) member_removed(gc, g, now);
    if (g->state != GROUP_PREPARING_REBALANCE || now < g->join_deadline) return;
    if (g->initial_delay && g->new_member_added && g->initial_delay_remaining_ms > 0) {
        /* Members keep arriving: wait one more delay, within the budget. */
        int64_t delay = gc->opts.initial_rebalance_delay_ms;
        if (delay > g->initial_delay_remaining_ms) delay = g->initial_delay_remaining_ms;
        g->initial_delay_remaining_ms -= delay;
        g->new_member_added = false;
        g->join_deadline = now + delay;
        if (delay > 0) return;
    }
    complete_join(gc, g, now);
}
