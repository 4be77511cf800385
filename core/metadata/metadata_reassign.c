/* Partition reassignment at the controller (see metadata_reassign.h). */
#include "metadata/metadata_reassign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_election.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

#define LOG_COMPONENT "controller"

static bool has(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* out = a - b, in a's order; returns the count. */
static int32_t minus(const int32_t *a, int32_t an, const int32_t *b, int32_t bn, int32_t *out)
{
    int32_t n = 0;
    for (int32_t i = 0; i < an; i++)
        if (!has(b, bn, a[i]))
            out[n++] = a[i];
    return n;
}

/* out = a & b, in a's order. */
static int32_t intersect(const int32_t *a, int32_t an, const int32_t *b, int32_t bn, int32_t *out)
{
    int32_t n = 0;
    for (int32_t i = 0; i < an; i++)
        if (has(b, bn, a[i]))
            out[n++] = a[i];
    return n;
}

/* Kafka's isAcceptableLeader: registered, unfenced, not shutting down. */
static bool may_lead(const struct metadata_image *img, int32_t id)
{
    const struct metadata_broker *br = metadata_image_broker(img, id);
    return br && !br->fenced && !br->in_controlled_shutdown;
}

/* The current leader when it stays in isr, else the first of order in isr
 * that may lead, else -1. */
static int32_t pick_leader(const struct metadata_image *img, int32_t current, const int32_t *order, int32_t order_n,
                           const int32_t *isr, int32_t isr_n)
{
    if (current >= 0 && has(isr, isr_n, current) && has(order, order_n, current))
        return current;
    for (int32_t i = 0; i < order_n; i++)
        if (has(isr, isr_n, order[i]) && may_lead(img, order[i]))
            return order[i];
    return -1;
}

void metadata_partition_change_fence_removed(const struct metadata_partition *p, struct metadata_partition_change *c)
{
    if (c->leader == p->leader)
        c->leader = -2; /* no leader change of its own */
    if (c->leader != -2 || !c->replicas)
        return;
    for (int32_t i = 0; i < p->replica_count; i++)
        if (!has(c->replicas, c->replica_count, p->replicas[i])) {
            c->leader = p->leader; /* names the leader: the epoch moves */
            return;
        }
}

bool metadata_reassignment_complete(const struct metadata_image *img, const struct metadata_partition *p,
                                    const int32_t *isr, int32_t isr_count, struct metadata_partition_change *c,
                                    int32_t *buf)
{
    if (!metadata_reassignment_in_progress(p))
        return false;
    for (int32_t i = 0; i < p->adding_count; i++)
        if (!has(isr, isr_count, p->adding[i]))
            return false; /* an adding replica still catching up */
    int32_t *target = buf;
    int32_t tn = minus(p->replicas, p->replica_count, p->removing, p->removing_count, target);
    int32_t *new_isr = buf + tn;
    int32_t in = intersect(isr, isr_count, target, tn, new_isr);
    int32_t leader = pick_leader(img, p->leader, target, tn, new_isr, in);
    if (in == 0 || leader < 0)
        return false;
    *c = (struct metadata_partition_change){
        .partition_index = p->partition_index,
        .leader = leader,
        .isr = new_isr,
        .isr_count = in,
        .replicas = target,
        .replica_count = tn,
        .adding = target, /* any non-NULL pointer: an empty list */
        .adding_count = 0,
        .removing = target,
        .removing_count = 0,
    };
    metadata_partition_change_fence_removed(p, c);
    return true;
}

static int16_t refuse(struct metadata_reassignment *it, int16_t code, const char *msg)
{
    snprintf(it->error_message, sizeof it->error_message, "%s", msg);
    return it->error_code = code;
}

/* Kafka's validateManualPartitionAssignment. */
static int16_t validate_target(const struct metadata_image *img, struct metadata_reassignment *it)
{
    if (it->replica_count <= 0)
        return refuse(it, KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment is empty.");
    for (int32_t i = 0; i < it->replica_count; i++) {
        if (has(it->replicas, i, it->replicas[i]))
            return refuse(it, KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT,
                          "The manual partition assignment contains a duplicate replica.");
        if (!metadata_image_broker(img, it->replicas[i])) {
            char msg[96];
            snprintf(msg, sizeof msg, "The manual partition assignment includes broker %d, which is not registered.",
                     (int)it->replicas[i]);
            return refuse(it, KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, msg);
        }
    }
    return KAFKA_ERR_NONE;
}

/* Kafka's validatePartitionReplicationFactorUnchanged: the count the
 * partition is headed for (its replicas less those being removed) against
 * the target's. */
static int16_t validate_replication_factor(const struct metadata_partition *p, struct metadata_reassignment *it)
{
    int32_t current = 0;
    for (int32_t i = 0; i < p->replica_count; i++)
        current += !has(p->removing, p->removing_count, p->replicas[i]);
    if (current == it->replica_count)
        return KAFKA_ERR_NONE;
    char msg[96];
    snprintf(msg, sizeof msg, "The replication factor is changed from %d to %d", (int)current, (int)it->replica_count);
    return refuse(it, KAFKA_ERR_INVALID_REPLICATION_FACTOR, msg);
}

static bool same_list(const int32_t *a, int32_t an, const int32_t *b, int32_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, (size_t)an * sizeof(*a)) == 0);
}

/* Decides one partition and appends its record (none when nothing moves),
 * its ELR lists under policy. Returns the partition's error;
 * UNKNOWN_SERVER_ERROR when out of memory. */
static int16_t reassign_one(const struct metadata_image *img, const struct metadata_topic *t,
                            const struct metadata_partition *p, const struct metadata_elr_policy *policy,
                            struct metadata_reassignment *it, struct metadata_record_list *records)
{
    if (!it->replicas && !metadata_reassignment_in_progress(p))
        return refuse(it, KAFKA_ERR_NO_REASSIGNMENT_IN_PROGRESS, "No reassignment is in progress for this partition.");
    if (it->replicas && validate_target(img, it) != KAFKA_ERR_NONE)
        return it->error_code;
    if (it->replicas && it->keep_replication_factor && validate_replication_factor(p, it) != KAFKA_ERR_NONE)
        return it->error_code;
    size_t cap = (size_t)(p->replica_count + p->isr_count + it->replica_count + 1);
    int32_t *buf = malloc((8 * cap + (size_t)metadata_elr_room(p)) * sizeof(*buf));
    if (!buf)
        return refuse(it, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
    /* The original replicas (those before any reassignment under way). */
    int32_t *orig = buf;
    int32_t on = minus(p->replicas, p->replica_count, p->adding, p->adding_count, orig);
    const int32_t *target = it->replicas ? it->replicas : orig;
    int32_t tn = it->replicas ? it->replica_count : on;
    int32_t *replicas = orig + cap, *adding = replicas + cap, *removing = adding + cap, *isr = removing + cap;
    memcpy(replicas, target, (size_t)tn * sizeof(*replicas));
    int32_t rn = tn + minus(orig, on, target, tn, replicas + tn);
    int32_t an = minus(target, tn, orig, on, adding);
    int32_t mn = minus(orig, on, target, tn, removing);
    int32_t in = intersect(p->isr, p->isr_count, replicas, rn, isr);
    struct metadata_partition next = *p;
    next.replicas = replicas;
    next.replica_count = rn;
    next.adding = adding;
    next.adding_count = an;
    next.removing = removing;
    next.removing_count = mn;
    next.isr = isr;
    next.isr_count = in;
    struct metadata_partition_change c;
    if (!metadata_reassignment_complete(img, &next, isr, in, &c, isr + cap)) {
        if (!metadata_reassignment_in_progress(p) && an == 0 && mn == 0 &&
            same_list(replicas, rn, p->replicas, p->replica_count)) {
            free(buf);
            return it->error_code = KAFKA_ERR_NONE; /* already the assignment */
        }
        c = (struct metadata_partition_change){
            .partition_index = p->partition_index,
            .leader = pick_leader(img, p->leader, replicas, rn, isr, in),
            .isr = isr,
            .isr_count = in,
            .replicas = replicas,
            .replica_count = rn,
            .adding = adding,
            .adding_count = an,
            .removing = removing,
            .removing_count = mn,
        };
    }
    /* Judged against the partition as it is (c may come from next). */
    metadata_partition_change_fence_removed(p, &c);
    /* KIP-966: a replica the new replica set drops (a cancellation
     * restoring the original replicas, a completion) leaves the ELR and
     * LastKnownElr in the same record, as it leaves the ISR. */
    metadata_partition_change_set_elr(p, policy, &c, buf + 8 * cap);
    metadata_record_write_partition_change(&records->w, &t->topic_id, &c);
    int rc = metadata_record_list_mark(records);
    if (rc == 0)
        logger_info(LOG_COMPONENT, "%s-%d: %s; %d replica(s) adding, %d removing, leader %d", t->name,
                    (int)p->partition_index,
                    it->replicas ? (c.adding_count || c.removing_count ? "reassignment started" : "reassigned")
                                 : "reassignment cancelled",
                    (int)c.adding_count, (int)c.removing_count, (int)(c.leader == -2 ? p->leader : c.leader));
    free(buf);
    it->error_message[0] = '\0';
    return it->error_code = rc == 0 ? KAFKA_ERR_NONE : KAFKA_ERR_UNKNOWN_SERVER_ERROR;
}

int16_t metadata_alter_reassignments(struct metadata_store *store, struct metadata_reassignment *items, int32_t count,
                                     char *err, size_t errlen)
{
    if (!metadata_store_is_controller(store)) {
        snprintf(err, errlen, "this node is not the active controller");
        return KAFKA_ERR_NOT_CONTROLLER;
    }
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    for (int32_t i = 0; i < count; i++) {
        struct metadata_reassignment *it = &items[i];
        it->error_message[0] = '\0';
        const struct metadata_topic *t = it->topic ? metadata_image_topic_by_name(img, it->topic, it->topic_len) : NULL;
        const struct metadata_partition *p = t ? metadata_topic_partition(t, it->partition_index) : NULL;
        if (!p) {
            refuse(it, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, "The topic or partition does not exist.");
            continue;
        }
        /* A partition named twice: the first wins, as the batch is one commit. */
        bool twice = false;
        for (int32_t k = 0; k < i && !twice; k++)
            twice = items[k].partition_index == it->partition_index && items[k].topic_len == it->topic_len &&
                    memcmp(items[k].topic, it->topic, it->topic_len) == 0;
        if (twice) {
            refuse(it, KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT, "The partition is named twice in the request.");
            continue;
        }
        bool elr_on = img->elr_version >= 1;
        struct metadata_elr_policy policy = {
            .enabled = elr_on,
            .min_isr = elr_on ? metadata_min_insync_replicas(img, t, store->node_id, store->min_insync_replicas) : 1,
            .unclean_restart_id = -1};
        reassign_one(img, t, p, &policy, it, &records);
    }
    int16_t rc = KAFKA_ERR_NONE;
    if (records.w.failed) {
        snprintf(err, errlen, "out of memory");
        rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    } else if (records.count > 0) {
        rc = metadata_store_commit_locked(store, &records, err, errlen);
    }
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    return rc;
}
