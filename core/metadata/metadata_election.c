/* Leader election on broker fencing and unfencing (see metadata_election.h). */
#include "metadata/metadata_election.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"

static bool contains(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static bool same_ids(const int32_t *a, int32_t an, const int32_t *b, int32_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, (size_t)an * sizeof(*a)) == 0);
}

/* An empty list in a change (NULL means unchanged). */
static const int32_t no_ids[1];

int32_t metadata_election_buffer_len(const struct metadata_partition *p)
{
    return 3 * (p->replica_count + p->isr_count + p->elr_count + p->last_known_elr_count + 1);
}

/* Appends id to out unless it is there, in target_isr, outside the
 * replicas, or the broker back from an unclean shutdown. */
static void add_candidate(int32_t *out, int32_t *n, int32_t id, const int32_t *target_isr, int32_t isr_n,
                          const int32_t *replicas, int32_t replica_count, int32_t unclean_restart_id)
{
    if (id != unclean_restart_id && !contains(out, *n, id) && !contains(target_isr, isr_n, id) &&
        contains(replicas, replica_count, id))
        out[(*n)++] = id;
}

void metadata_elr_target(const struct metadata_partition *p, const int32_t *replicas, int32_t replica_count,
                         const int32_t *target_isr, int32_t isr_n, const struct metadata_elr_policy *policy,
                         int32_t *elr, int32_t *elr_n, int32_t *last_known, int32_t *last_known_n)
{
    *elr_n = 0;
    *last_known_n = 0;
    /* Off, or the ISR at min.insync.replicas again: both lists empty. */
    if (!policy || !policy->enabled || isr_n >= policy->min_isr)
        return;
    /* Kafka's PartitionChangeBuilder.populateTargetElr: the old ELR and the
     * old ISR, less the new ISR. Every member of an ISR has the records up
     * to the high watermark, which stops while the ISR is below the
     * minimum, so a replica leaving it keeps that guarantee. */
    int32_t unclean = policy->unclean_restart_id;
    for (int32_t i = 0; i < p->elr_count; i++)
        add_candidate(elr, elr_n, p->elr[i], target_isr, isr_n, replicas, replica_count, unclean);
    for (int32_t i = 0; i < p->isr_count; i++)
        add_candidate(elr, elr_n, p->isr[i], target_isr, isr_n, replicas, replica_count, unclean);
    /* LastKnownElr: its old members and a member that lost the guarantee
     * (back from an unclean shutdown), less the new ISR and ELR. */
    for (int32_t i = 0; i < p->last_known_elr_count; i++)
        if (!contains(elr, *elr_n, p->last_known_elr[i]))
            add_candidate(last_known, last_known_n, p->last_known_elr[i], target_isr, isr_n, replicas, replica_count,
                          -1);
    if (unclean >= 0 && (contains(p->elr, p->elr_count, unclean) || contains(p->isr, p->isr_count, unclean)))
        add_candidate(last_known, last_known_n, unclean, target_isr, isr_n, replicas, replica_count, -1);
}

int32_t metadata_elr_room(const struct metadata_partition *p)
{
    return 2 * (p->elr_count + p->isr_count + p->last_known_elr_count + 1);
}

void metadata_partition_change_set_elr(const struct metadata_partition *p, const struct metadata_elr_policy *policy,
                                       struct metadata_partition_change *c, int32_t *room)
{
    int32_t half = metadata_elr_room(p) / 2;
    int32_t *elr = room, *last_known = room + half;
    int32_t elr_n = 0, last_known_n = 0;
    metadata_elr_target(p, c->replicas ? c->replicas : p->replicas, c->replicas ? c->replica_count : p->replica_count,
                        c->isr ? c->isr : p->isr, c->isr ? c->isr_count : p->isr_count, policy, elr, &elr_n, last_known,
                        &last_known_n);
    if (!same_ids(elr, elr_n, p->elr, p->elr_count)) {
        c->elr = elr_n > 0 ? elr : no_ids;
        c->elr_count = elr_n;
    }
    if (!same_ids(last_known, last_known_n, p->last_known_elr, p->last_known_elr_count)) {
        c->last_known_elr = last_known_n > 0 ? last_known : no_ids;
        c->last_known_elr_count = last_known_n;
    }
}

/* Whether r may lead: in the ISR, or in the ELR when the ISR is empty
 * (Kafka's isValidNewLeader), and live. */
static bool valid_leader(int32_t r, int32_t remove_id, const int32_t *isr, int32_t isr_n, const int32_t *elr,
                         int32_t elr_n, metadata_broker_live_fn is_live, void *live_ctx)
{
    return r >= 0 && r != remove_id && (contains(isr, isr_n, r) || (isr_n == 0 && contains(elr, elr_n, r))) &&
           is_live(live_ctx, r);
}

/* The first live member of ids in p's replica order, or -1. */
static int32_t first_live_in(const struct metadata_partition *p, const int32_t *ids, int32_t n, int32_t remove_id,
                             metadata_broker_live_fn is_live, void *live_ctx)
{
    for (int32_t i = 0; i < p->replica_count; i++) {
        int32_t r = p->replicas[i];
        if (r != remove_id && contains(ids, n, r) && is_live(live_ctx, r))
            return r;
    }
    return -1;
}

bool metadata_elect_partition_elr(const struct metadata_partition *p, int32_t remove_id,
                                  metadata_broker_live_fn is_live, void *live_ctx, bool unclean,
                                  const struct metadata_elr_policy *policy, struct metadata_partition_change *out,
                                  int32_t *buf)
{
    bool elr_on = policy && policy->enabled;
    int32_t region = elr_on ? metadata_election_buffer_len(p) / 3 : 0;
    int32_t *isr_buf = buf, *elr_buf = buf + region, *lke_buf = buf + 2 * region;
    /* The target ISR: without the removed broker. Without ELR the last
     * member stays (Kafka keeps it so the partition waits for that
     * replica); with ELR the ISR may empty, the member moving to the ELR. */
    int32_t n = 0;
    for (int32_t i = 0; i < p->isr_count; i++)
        if (p->isr[i] != remove_id)
            isr_buf[n++] = p->isr[i];
    if (!elr_on && n == 0 && p->isr_count > 0) {
        memcpy(isr_buf, p->isr, (size_t)p->isr_count * sizeof(*isr_buf));
        n = p->isr_count;
    }
    int32_t elr_n = 0, lke_n = 0;
    if (elr_on)
        metadata_elr_target(p, p->replicas, p->replica_count, isr_buf, n, policy, elr_buf, &elr_n, lke_buf, &lke_n);
    bool clear_elr = false;
    int32_t leader = -1;
    if (valid_leader(p->leader, remove_id, isr_buf, n, elr_buf, elr_n, is_live, live_ctx)) {
        leader = p->leader; /* still a valid leader: keep it */
    } else {
        for (int32_t i = 0; i < p->replica_count && leader < 0; i++)
            if (valid_leader(p->replicas[i], remove_id, isr_buf, n, elr_buf, elr_n, is_live, live_ctx))
                leader = p->replicas[i];
        if (leader >= 0 && !contains(isr_buf, n, leader)) {
            /* A clean election from the ELR: it becomes the ISR alone. */
            isr_buf[0] = leader;
            n = 1;
            int32_t kept = 0;
            for (int32_t i = 0; i < elr_n; i++)
                if (elr_buf[i] != leader)
                    elr_buf[kept++] = elr_buf[i];
            elr_n = kept;
        }
        if (leader < 0 && unclean) {
            /* Unclean: a live replica outside the ISR and ELR, which may
             * lack acknowledged records; it becomes the ISR alone, and the
             * ELR lists, no longer meaningful, are cleared (as Kafka).
             * With ISR and ELR empty, a live LastKnownElr member comes
             * first (KIP-966's unclean recovery from the last known ELR):
             * it had every acknowledged record until it lost at most its
             * unflushed tail, where another replica may lack far more. */
            if (n == 0 && elr_n == 0)
                leader = first_live_in(p, lke_buf, lke_n, remove_id, is_live, live_ctx);
            for (int32_t i = 0; i < p->replica_count && leader < 0; i++) {
                int32_t r = p->replicas[i];
                if (r != remove_id && is_live(live_ctx, r))
                    leader = r;
            }
            if (leader >= 0) {
                isr_buf[0] = leader;
                n = 1;
                clear_elr = true;
            }
        }
    }
    if (clear_elr)
        elr_n = lke_n = 0;
    bool isr_changed = !same_ids(isr_buf, n, p->isr, p->isr_count);
    bool elr_changed = !same_ids(elr_buf, elr_n, p->elr, p->elr_count);
    bool lke_changed = !same_ids(lke_buf, lke_n, p->last_known_elr, p->last_known_elr_count);
    if (leader == p->leader && !isr_changed && !elr_changed && !lke_changed)
        return false;
    *out = (struct metadata_partition_change){
        .partition_index = p->partition_index,
        .leader = leader == p->leader ? -2 : leader,
        .isr = isr_changed ? (n > 0 ? isr_buf : no_ids) : NULL,
        .isr_count = isr_changed ? n : 0,
        .elr = elr_changed ? (elr_n > 0 ? elr_buf : no_ids) : NULL,
        .elr_count = elr_changed ? elr_n : 0,
        .last_known_elr = lke_changed ? (lke_n > 0 ? lke_buf : no_ids) : NULL,
        .last_known_elr_count = lke_changed ? lke_n : 0,
    };
    return true;
}

bool metadata_elect_partition(const struct metadata_partition *p, int32_t remove_id, metadata_broker_live_fn is_live,
                              void *live_ctx, bool unclean, struct metadata_partition_change *out, int32_t *isr_buf)
{
    return metadata_elect_partition_elr(p, remove_id, is_live, live_ctx, unclean, NULL, out, isr_buf);
}

static bool config_true(const char *v)
{
    return v && strcasecmp(v, "true") == 0;
}

/* The value a dynamic broker config resource gives key, or NULL. */
static const char *broker_config(const struct metadata_image *img, const char *resource, const char *key)
{
    const struct metadata_broker_config *first = NULL;
    int32_t n = metadata_image_broker_configs(img, resource, &first);
    for (int32_t i = 0; i < n; i++)
        if (strcmp(first[i].name, key) == 0)
            return first[i].value;
    return NULL;
}

/* A config's value in Kafka's order: the topic's, the controller node's
 * dynamic value, the cluster-wide dynamic default; NULL: the static one. */
static const char *layered_config(const struct metadata_image *img, const struct metadata_topic *t,
                                  int32_t controller_id, const char *key)
{
    const char *v = t ? metadata_topic_config(t, key) : NULL;
    char node[16];
    snprintf(node, sizeof node, "%d", (int)controller_id);
    if (!v)
        v = broker_config(img, node, key);
    if (!v)
        v = broker_config(img, "", key);
    return v;
}

bool metadata_unclean_election_enabled(const struct metadata_image *img, const struct metadata_topic *t,
                                       const struct metadata_unclean_source *src)
{
    const char *v = layered_config(img, t, src->controller_id, METADATA_UNCLEAN_ELECTION_KEY);
    return v ? config_true(v) : src->static_default;
}

int32_t metadata_min_insync_replicas(const struct metadata_image *img, const struct metadata_topic *t,
                                     int32_t controller_id, int32_t static_min_isr)
{
    const char *v = layered_config(img, t, controller_id, METADATA_MIN_ISR_KEY);
    if (v) {
        char *end = NULL;
        errno = 0;
        long parsed = strtol(v, &end, 10);
        if (errno == 0 && end != v && *end == '\0' && parsed >= 1 && parsed <= INT32_MAX)
            return (int32_t)parsed;
    }
    return static_min_isr >= 1 ? static_min_isr : 1;
}

/* Liveness after the change: the image's, with one broker's replaced. */
struct liveness {
    const struct metadata_image *img;
    int32_t node_id;
    bool fenced;
};

static bool live_after(void *ctx, int32_t node_id)
{
    const struct liveness *l = ctx;
    if (node_id == l->node_id)
        return !l->fenced;
    const struct metadata_broker *br = metadata_image_broker(l->img, node_id);
    return br && !br->fenced;
}

/* Whether a fencing (or unfencing) of node_id may change p. */
static bool touches(const struct metadata_partition *p, int32_t node_id, bool fenced, bool unclean_restart)
{
    if (unclean_restart && (contains(p->elr, p->elr_count, node_id) || contains(p->isr, p->isr_count, node_id)))
        return true;
    /* Fencing touches partitions the broker is in the ISR of or leads;
     * unfencing, only partitions without a leader. */
    return fenced ? p->leader == node_id || contains(p->isr, p->isr_count, node_id) : p->leader < 0;
}

int32_t metadata_election_for_broker(const struct metadata_image *img, int32_t node_id, bool fenced,
                                     bool unclean_restart, const struct metadata_unclean_source *src,
                                     int32_t static_min_isr, struct metadata_record_list *records)
{
    struct liveness live = {img, node_id, fenced};
    int32_t written = 0;
    int32_t *buf = NULL;
    int32_t cap = 0;
    bool elr_on = img->elr_version >= 1;
    for (int32_t ti = 0; ti < img->topic_count; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        bool unclean = metadata_unclean_election_enabled(img, t, src);
        struct metadata_elr_policy policy = {
            .enabled = elr_on,
            .min_isr = elr_on ? metadata_min_insync_replicas(img, t, src->controller_id, static_min_isr) : 1,
            .unclean_restart_id = unclean_restart ? node_id : -1,
        };
        for (int32_t pi = 0; pi < t->partition_count; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (!p->present || !touches(p, node_id, fenced, elr_on && unclean_restart))
                continue;
            int32_t need = metadata_election_buffer_len(p);
            if (need > cap) {
                int32_t *grown = realloc(buf, (size_t)need * sizeof(*buf));
                if (!grown) {
                    free(buf);
                    return -1;
                }
                buf = grown;
                cap = need;
            }
            struct metadata_partition_change c;
            if (!metadata_elect_partition_elr(p, fenced ? node_id : -1, live_after, &live, unclean,
                                              elr_on ? &policy : NULL, &c, buf))
                continue;
            metadata_record_write_partition_change(&records->w, &t->topic_id, &c);
            if (metadata_record_list_mark(records) != 0) {
                free(buf);
                return -1;
            }
            written++;
        }
    }
    free(buf);
    return records->w.failed ? -1 : written;
}
