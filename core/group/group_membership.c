/* The classic rebalance protocol's core: members, protocol selection, and
 * the transitions and timers that drive a group through
 * Empty -> PreparingRebalance -> CompletingRebalance -> Stable. The request
 * entry points are in group_requests.c. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/uuid.h"
#include "group/group_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

struct group_member *group_member_find(struct group *g, const char *member_id)
{
    return group_index_find(&g->member_index, member_id);
}

struct group_member *group_member_by_instance(struct group *g, const char *instance_id)
{
    return instance_id ? group_index_find(&g->instance_index, instance_id) : NULL;
}

void group_members_init(struct group_coordinator *gc, struct group *g)
{
    group_index_init(&g->member_index, offsetof(struct group_member, member_id), gc->hash_seed);
    group_index_init(&g->instance_index, offsetof(struct group_member, instance_id), gc->hash_seed);
    group_index_init(&g->pending_index, offsetof(struct group_pending_member, member_id), gc->hash_seed);
}

void group_members_clear(struct group *g)
{
    for (size_t i = 0; i < g->member_count; i++)
        group_member_free(g->members[i]);
    g->member_count = 0;
    group_index_free(&g->member_index);
    group_index_free(&g->instance_index);
}

void group_members_free(struct group_coordinator *gc, struct group *g)
{
    group_members_clear(g);
    free(g->members);
    g->members = NULL;
    g->member_cap = 0;
    while (g->pending_count > 0)
        group_pending_remove(gc, g, g->pending[0]);
    free(g->pending);
    g->pending = NULL;
    g->pending_cap = 0;
    group_index_free(&g->pending_index);
}

char *group_member_rename(struct group *g, struct group_member *m, char *new_id)
{
    char *old_id = m->member_id;
    m->member_id = new_id;
    if (group_index_put(&g->member_index, m) != 0) {
        m->member_id = old_id;
        free(new_id);
        return NULL;
    }
    group_index_del_at_key(&g->member_index, m, old_id);
    return old_id;
}

void group_protocols_free(struct group_member_protocol *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].metadata);
    }
    free(p);
}

void group_member_free(struct group_member *m)
{
    if (!m)
        return;
    free(m->member_id);
    free(m->instance_id);
    free(m->client_id);
    free(m->client_host);
    group_protocols_free(m->protocols, m->protocol_count);
    free(m->assignment);
    free(m);
}

const struct group_member_protocol *group_member_protocol(const struct group_member *m, const char *name)
{
    for (size_t i = 0; i < m->protocol_count; i++)
        if (strcmp(m->protocols[i].name, name) == 0)
            return &m->protocols[i];
    return NULL;
}

struct group_pending_member *group_pending_find(struct group *g, const char *member_id)
{
    return group_index_find(&g->pending_index, member_id);
}

int group_pending_add(struct group_coordinator *gc, struct group *g, char *member_id, int64_t deadline)
{
    struct group_pending_member *pm = calloc(1, sizeof *pm);
    if (!pm)
        goto fail;
    pm->member_id = member_id;
    pm->deadline = deadline;
    if (g->pending_count == g->pending_cap) {
        size_t cap = g->pending_cap ? g->pending_cap * 2 : 8;
        struct group_pending_member **n = realloc(g->pending, cap * sizeof *n);
        if (!n)
            goto fail;
        g->pending = n;
        g->pending_cap = cap;
    }
    if (group_index_put(&g->pending_index, pm) != 0)
        goto fail;
    pm->pos = g->pending_count;
    g->pending[g->pending_count++] = pm;
    gc->pending_total++;
    return 0;
fail:
    free(pm);
    free(member_id);
    return -1;
}

void group_pending_remove(struct group_coordinator *gc, struct group *g, struct group_pending_member *pm)
{
    group_index_del(&g->pending_index, pm);
    struct group_pending_member *last = g->pending[--g->pending_count];
    g->pending[pm->pos] = last;
    last->pos = pm->pos;
    gc->pending_total--;
    free(pm->member_id);
    free(pm);
}

/* Kafka's form: "<client id>-<uuid>". */
char *group_generate_member_id(const char *client_id)
{
    uint8_t u[16];
    if (uuid_random(u) != 0)
        return NULL;
    char buf[512];
    snprintf(buf, sizeof buf, "%.255s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             client_id ? client_id : "", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
             u[12], u[13], u[14], u[15]);
    return strdup(buf);
}

struct group_member_protocol *group_protocols_copy(const struct group_protocol *src, size_t n)
{
    struct group_member_protocol *p = calloc(n ? n : 1, sizeof *p);
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        p[i].name = strdup(src[i].name ? src[i].name : "");
        p[i].metadata = group_memdup(src[i].metadata, src[i].metadata_len);
        p[i].metadata_len = src[i].metadata_len;
        if (!p[i].name || !p[i].metadata) {
            group_protocols_free(p, i + 1);
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
        if (group_member_protocol(g->members[i], name))
            n++;
    return n;
}

/* Kafka's rule: an empty group takes any non-empty protocol type and list;
 * otherwise the type must match and one protocol must be supported by all. */
bool group_supports_protocols(const struct group *g, const struct group_join_params *p)
{
    if (!p->protocol_type || !p->protocol_type[0] || p->protocol_count == 0)
        return false;
    if (g->member_count == 0)
        return true;
    if (!g->protocol_type || strcmp(g->protocol_type, p->protocol_type) != 0)
        return false;
    for (size_t i = 0; i < p->protocol_count; i++)
        if (p->protocols[i].name && protocol_support(g, p->protocols[i].name) == g->member_count)
            return true;
    return false;
}

/* Among protocols every member supports, each member votes for its most
 * preferred one; the most votes wins, ties go to the first member's order.
 * Only the first member's protocols can be supported by all, so counting
 * against that short list keeps this linear in the members. */
const char *group_select_protocol(const struct group *g)
{
    if (g->member_count == 0)
        return NULL;
    const struct group_member *first = g->members[0];
    size_t k = first->protocol_count;
    size_t *count = calloc(k ? 2 * k : 1, sizeof *count);
    if (!count)
        return NULL;
    size_t *votes = count + k;
    for (size_t c = 0; c < k; c++)
        count[c] = protocol_support(g, first->protocols[c].name);
    for (size_t i = 0; i < g->member_count; i++) {
        const struct group_member *m = g->members[i];
        bool voted = false;
        for (size_t p = 0; p < m->protocol_count && !voted; p++)
            for (size_t c = 0; c < k && !voted; c++)
                if (count[c] == g->member_count && strcmp(m->protocols[p].name, first->protocols[c].name) == 0) {
                    votes[c]++;
                    voted = true;
                }
    }
    const char *best = NULL;
    size_t best_votes = 0;
    for (size_t c = 0; c < k; c++) {
        if (count[c] != g->member_count)
            continue;
        if (!best || votes[c] > best_votes) {
            best = first->protocols[c].name;
            best_votes = votes[c];
        }
    }
    free(count);
    return best;
}

void group_join_respond_error(group_join_cb cb, void *arg, int16_t err, const char *member_id)
{
    struct group_join_result r = {.error_code = err, .generation_id = -1, .member_id = member_id ? member_id : ""};
    cb(arg, &r);
}

void group_sync_respond_error(group_sync_cb cb, void *arg, int16_t err)
{
    struct group_sync_result r = {.error_code = err};
    cb(arg, &r);
}

/* Answers m's parked JoinGroup with the current generation; the leader gets
 * every member's metadata for the chosen protocol. */
void group_join_respond_current(struct group *g, struct group_member *m, group_join_cb cb, void *arg,
                                bool skip_assignment)
{
    bool leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    struct group_join_member *list = NULL;
    size_t n = 0;
    if (leader) {
        list = calloc(g->member_count ? g->member_count : 1, sizeof *list);
        if (!list) {
            group_join_respond_error(cb, arg, KAFKA_ERR_UNKNOWN_SERVER_ERROR, m->member_id);
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

/* Answers m with the current generation as a follower of leader_id. */
void group_join_respond_follower(const struct group *g, const struct group_member *m, group_join_cb cb, void *arg,
                                 const char *leader_id)
{
    struct group_join_result r = {
        .error_code = KAFKA_ERR_NONE,
        .generation_id = g->generation,
        .protocol_type = g->protocol_type,
        .protocol_name = g->protocol,
        .leader = leader_id,
        .member_id = m->member_id,
    };
    cb(arg, &r);
}

void group_fail_parked(struct group *g, int16_t err)
{
    for (size_t i = 0; i < g->member_count; i++) {
        struct group_member *m = g->members[i];
        if (m->join_cb) {
            group_join_cb cb = m->join_cb;
            m->join_cb = NULL;
            group_join_respond_error(cb, m->join_arg, err, m->member_id);
        }
        if (m->sync_cb) {
            group_sync_cb cb = m->sync_cb;
            m->sync_cb = NULL;
            group_sync_respond_error(cb, m->sync_arg, err);
        }
    }
}

static int32_t max_rebalance_timeout(const struct group *g)
{
    int32_t t = 0;
    for (size_t i = 0; i < g->member_count; i++)
        if (g->members[i]->rebalance_timeout_ms > t)
            t = g->members[i]->rebalance_timeout_ms;
    return t;
}

void group_prepare_rebalance(struct group_coordinator *gc, struct group *g, int64_t now)
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
                group_sync_respond_error(cb, m->sync_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS);
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

void group_remove_member_at(struct group *g, size_t i)
{
    struct group_member *m = g->members[i];
    if (m->join_cb)
        group_join_respond_error(m->join_cb, m->join_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID, m->member_id);
    if (m->sync_cb)
        group_sync_respond_error(m->sync_cb, m->sync_arg, KAFKA_ERR_UNKNOWN_MEMBER_ID);
    bool was_leader = g->leader && strcmp(g->leader, m->member_id) == 0;
    group_index_del(&g->member_index, m);
    if (m->instance_id)
        group_index_del(&g->instance_index, m);
    memmove(&g->members[i], &g->members[i + 1], (g->member_count - i - 1) * sizeof *g->members);
    g->member_count--;
    group_member_free(m);
    if (was_leader) {
        free(g->leader);
        g->leader = g->member_count > 0 ? group_strdup(g->members[0]->member_id) : NULL;
    }
}

void group_try_complete_join(struct group_coordinator *gc, struct group *g, int64_t now)
{
    if (g->state != GROUP_PREPARING_REBALANCE || g->initial_delay)
        return;
    if (g->pending_count > 0)
        return;
    for (size_t i = 0; i < g->member_count; i++)
        if (!g->members[i]->join_cb)
            return;
    group_complete_join(gc, g, now);
}

/* After a member left or expired: the group rebalances without it. */
void group_member_removed(struct group_coordinator *gc, struct group *g, int64_t now)
{
    switch (g->state) {
    case GROUP_STABLE:
    case GROUP_COMPLETING_REBALANCE:
        group_prepare_rebalance(gc, g, now);
        /* With nobody left, the group completes (to Empty) right away. */
        if (g->member_count == 0)
            group_complete_join(gc, g, now);
        break;
    case GROUP_PREPARING_REBALANCE:
        if (g->member_count == 0 && g->pending_count == 0)
            group_complete_join(gc, g, now);
        else
            group_try_complete_join(gc, g, now);
        break;
    default:
        break;
    }
}

void group_complete_join(struct group_coordinator *gc, struct group *g, int64_t now)
{
    /* Dynamic members that did not rejoin in time are out; static ones stay
     * until their session expires (KIP-345). */
    for (size_t i = 0; i < g->member_count;) {
        struct group_member *m = g->members[i];
        if (!m->join_cb && !m->instance_id) {
            logger_info("group", "group %s: member %s did not rejoin in time; removing it", g->group_id, m->member_id);
            group_remove_member_at(g, i);
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
    const char *chosen = group_select_protocol(g);
    g->protocol = group_strdup(chosen);
    bool leader_joined = false;
    struct group_member *leader = g->leader ? group_member_find(g, g->leader) : NULL;
    leader_joined = leader && leader->join_cb;
    if (!leader_joined) {
        for (size_t i = 0; i < g->member_count; i++) {
            if (!g->members[i]->join_cb)
                continue;
            free(g->leader);
            g->leader = group_strdup(g->members[i]->member_id);
            break;
        }
    }
    group_set_state(gc, g, GROUP_COMPLETING_REBALANCE);
    g->sync_deadline = now + max_rebalance_timeout(g);
    logger_info("group", "group %s generation %d: %zu members, protocol %s, leader %s", g->group_id, g->generation,
                g->member_count, g->protocol ? g->protocol : "(none)", g->leader);
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
            group_join_respond_current(g, m, cb, m->join_arg, false);
        }
    }
}

struct group_member *group_member_new(const struct group_join_params *p, char *member_id)
{
    struct group_member *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->member_id = member_id;
    m->instance_id = group_strdup(p->group_instance_id);
    m->client_id = group_strdup(p->client_id ? p->client_id : "");
    m->client_host = group_strdup(p->client_host ? p->client_host : "");
    m->protocols = group_protocols_copy(p->protocols, p->protocol_count);
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

int group_member_append(struct group *g, struct group_member *m)
{
    if (g->member_count == g->member_cap) {
        size_t cap = g->member_cap ? g->member_cap * 2 : 8;
        struct group_member **n = realloc(g->members, cap * sizeof *n);
        if (!n)
            return -1;
        g->members = n;
        g->member_cap = cap;
    }
    if (group_index_put(&g->member_index, m) != 0)
        return -1;
    if (m->instance_id && group_index_put(&g->instance_index, m) != 0) {
        group_index_del(&g->member_index, m);
        return -1;
    }
    g->members[g->member_count++] = m;
    return 0;
}

/* A member (re)joins with these protocols and waits for the join phase. */
void group_member_update_and_park(struct group_coordinator *gc, struct group *g, struct group_member *m,
                                  const struct group_join_params *p, group_join_cb cb, void *arg, int64_t now)
{
    struct group_member_protocol *np = group_protocols_copy(p->protocols, p->protocol_count);
    if (np) {
        group_protocols_free(m->protocols, m->protocol_count);
        m->protocols = np;
        m->protocol_count = p->protocol_count;
    }
    m->session_timeout_ms = p->session_timeout_ms;
    m->rebalance_timeout_ms = p->rebalance_timeout_ms > 0 ? p->rebalance_timeout_ms : p->session_timeout_ms;
    if (m->join_cb)
        group_join_respond_error(m->join_cb, m->join_arg, KAFKA_ERR_REBALANCE_IN_PROGRESS, m->member_id);
    m->join_cb = cb;
    m->join_arg = arg;
    m->join_conn = p->connection_id;
    if (g->state != GROUP_PREPARING_REBALANCE)
        group_prepare_rebalance(gc, g, now);
    group_try_complete_join(gc, g, now);
}

bool group_same_protocols(const struct group_member *m, const struct group_join_params *p)
{
    if (m->protocol_count != p->protocol_count)
        return false;
    for (size_t i = 0; i < m->protocol_count; i++) {
        const struct group_protocol *q = &p->protocols[i];
        if (!q->name || strcmp(m->protocols[i].name, q->name) != 0 || m->protocols[i].metadata_len != q->metadata_len ||
            (q->metadata_len && memcmp(m->protocols[i].metadata, q->metadata, q->metadata_len) != 0))
            return false;
    }
    return true;
}

void group_membership_tick(struct group_coordinator *gc, struct group *g, int64_t now)
{
    bool removed = false;
    for (size_t i = 0; i < g->pending_count;) {
        if (now >= g->pending[i]->deadline) {
            group_pending_remove(gc, g, g->pending[i]);
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
            group_remove_member_at(g, i);
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
                group_remove_member_at(g, i);
                removed = true;
            } else {
                i++;
            }
        }
    }
    if (removed)
        group_member_removed(gc, g, now);
    if (g->state != GROUP_PREPARING_REBALANCE || now < g->join_deadline)
        return;
    if (g->initial_delay && g->new_member_added && g->initial_delay_remaining_ms > 0) {
        /* Members keep arriving: wait one more delay, within the budget. */
        int64_t delay = gc->opts.initial_rebalance_delay_ms;
        if (delay > g->initial_delay_remaining_ms)
            delay = g->initial_delay_remaining_ms;
        g->initial_delay_remaining_ms -= delay;
        g->new_member_added = false;
        g->join_deadline = now + delay;
        if (delay > 0)
            return;
    }
    group_complete_join(gc, g, now);
}
