/* ElectLeaders and the automatic preferred-leader rebalance (see
 * metadata_elect_leaders.h). */
#include "metadata/metadata_elect_leaders.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_election.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

#define LOG_COMPONENT "controller"

/* A broker may lead: registered, unfenced and not shutting down (Kafka's
 * isAcceptableLeader). */
static bool may_lead(void *ctx, int32_t node_id)
{
    const struct metadata_broker *br = metadata_image_broker(ctx, node_id);
    return br && !br->fenced && !br->in_controlled_shutdown;
}

static bool in_isr(const struct metadata_partition *p, int32_t id)
{
    for (int32_t i = 0; i < p->isr_count; i++)
        if (p->isr[i] == id)
            return true;
    return false;
}

static bool valid_leader(const struct metadata_image *img, const struct metadata_partition *p, int32_t id)
{
    return id >= 0 && in_isr(p, id) && may_lead((void *)img, id);
}

/* Kafka's PartitionChangeBuilder with the PREFERRED election: the first
 * replica if it can lead, else the current leader stays, else the next
 * replica that can. Returns the error; NONE fills *leader with a change. */
static int16_t elect_preferred(const struct metadata_image *img, const struct metadata_partition *p, int32_t *leader)
{
    if (p->replica_count <= 0)
        return KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
    int32_t preferred = p->replicas[0];
    if (p->leader == preferred)
        return KAFKA_ERR_ELECTION_NOT_NEEDED;
    if (valid_leader(img, p, preferred)) {
        *leader = preferred;
        return KAFKA_ERR_NONE;
    }
    if (valid_leader(img, p, p->leader))
        return KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
    for (int32_t i = 1; i < p->replica_count; i++) {
        if (valid_leader(img, p, p->replicas[i])) {
            *leader = p->replicas[i];
            return KAFKA_ERR_NONE;
        }
    }
    return KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
}

static int32_t topic_min_isr(const struct metadata_store *store, const struct metadata_image *img,
                             const struct metadata_topic *t)
{
    return metadata_min_insync_replicas(img, t, store->node_id, store->min_insync_replicas);
}

/* Decides one partition and appends its record; returns its error. */
static int16_t elect_one(const struct metadata_image *img, const struct metadata_topic *t,
                         const struct metadata_partition *p, int8_t type, int32_t min_isr,
                         struct metadata_record_list *records)
{
    struct metadata_partition_change c;
    int32_t *buf = NULL;
    if (type == METADATA_ELECTION_PREFERRED) {
        int32_t leader = -1;
        int16_t rc = elect_preferred(img, p, &leader);
        if (rc != KAFKA_ERR_NONE)
            return rc;
        c = (struct metadata_partition_change){.partition_index = p->partition_index, .leader = leader};
    } else {
        if (p->leader >= 0)
            return KAFKA_ERR_ELECTION_NOT_NEEDED;
        buf = malloc((size_t)metadata_election_buffer_len(p) * sizeof(*buf));
        if (!buf)
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        /* A live ELR member first (clean), as Kafka's UNCLEAN election. */
        struct metadata_elr_policy policy = {
            .enabled = img->elr_version >= 1, .min_isr = min_isr, .unclean_restart_id = -1};
        if (!metadata_elect_partition_elr(p, -1, may_lead, (void *)img, true, policy.enabled ? &policy : NULL, &c,
                                          buf)) {
            free(buf);
            return KAFKA_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
        }
    }
    metadata_record_write_partition_change(&records->w, &t->topic_id, &c);
    int rc = metadata_record_list_mark(records);
    if (rc == 0)
        logger_info(LOG_COMPONENT, "%s election for %s-%d: broker %d leads", type ? "unclean" : "preferred", t->name,
                    (int)p->partition_index, (int)(c.leader == -2 ? p->leader : c.leader));
    free(buf);
    return rc == 0 ? KAFKA_ERR_NONE : KAFKA_ERR_UNKNOWN_SERVER_ERROR;
}

int16_t metadata_elect_leaders(struct metadata_store *store, int8_t type, struct metadata_election_target *targets,
                               int32_t count, metadata_election_report_fn report, void *report_ctx, char *err,
                               size_t errlen)
{
    if (type != METADATA_ELECTION_PREFERRED && type != METADATA_ELECTION_UNCLEAN) {
        snprintf(err, errlen, "unknown election type %d", (int)type);
        return KAFKA_ERR_INVALID_REQUEST;
    }
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
    if (targets) {
        for (int32_t i = 0; i < count; i++) {
            struct metadata_election_target *tg = &targets[i];
            const struct metadata_topic *t = tg->topic ? metadata_image_topic_by_name(img, tg->topic, tg->topic_len)
                                                       : NULL;
            const struct metadata_partition *p = t ? metadata_topic_partition(t, tg->partition_index) : NULL;
            tg->error_code = p ? elect_one(img, t, p, type, topic_min_isr(store, img, t), &records)
                               : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
    } else {
        for (int32_t ti = 0; ti < img->topic_count; ti++) {
            const struct metadata_topic *t = img->topics[ti];
            for (int32_t pi = 0; pi < t->partition_count; pi++) {
                const struct metadata_partition *p = &t->partitions[pi];
                if (!p->present)
                    continue;
                int16_t rc = elect_one(img, t, p, type, topic_min_isr(store, img, t), &records);
                if (rc != KAFKA_ERR_ELECTION_NOT_NEEDED && report)
                    report(report_ctx, t->name, p->partition_index, rc);
            }
        }
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

void metadata_leader_balance_counts(const struct metadata_image *img, int64_t *imbalanced, int64_t *offline)
{
    *imbalanced = 0;
    *offline = 0;
    for (int32_t ti = 0; img && ti < img->topic_count; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        for (int32_t pi = 0; pi < t->partition_count; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (!p->present)
                continue;
            if (p->leader < 0)
                (*offline)++;
            if (p->replica_count > 0 && p->leader != p->replicas[0])
                (*imbalanced)++;
        }
    }
}

/* A broker's counts as preferred replica: partitions, and those it does not lead. */
struct preferred_share {
    int32_t node_id;
    int64_t total;
    int64_t not_leading;
};

static struct preferred_share *share_of(struct preferred_share **shares, int32_t *n, int32_t node_id)
{
    for (int32_t i = 0; i < *n; i++)
        if ((*shares)[i].node_id == node_id)
            return &(*shares)[i];
    struct preferred_share *grown = realloc(*shares, (size_t)(*n + 1) * sizeof(**shares));
    if (!grown)
        return NULL;
    *shares = grown;
    grown[*n] = (struct preferred_share){.node_id = node_id};
    return &grown[(*n)++];
}

int32_t metadata_rebalance_leaders(struct metadata_store *store, int32_t percentage, char *err, size_t errlen)
{
    if (!metadata_store_is_controller(store)) {
        snprintf(err, errlen, "this node is not the active controller");
        return -1;
    }
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    struct preferred_share *shares = NULL;
    int32_t share_count = 0;
    int32_t moved = 0;
    bool oom = false;
    for (int32_t ti = 0; ti < img->topic_count && !oom; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        for (int32_t pi = 0; pi < t->partition_count && !oom; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (!p->present || p->replica_count <= 0)
                continue;
            struct preferred_share *s = share_of(&shares, &share_count, p->replicas[0]);
            if (!s) {
                oom = true;
                break;
            }
            s->total++;
            s->not_leading += p->leader != p->replicas[0];
        }
    }
    /* Kafka's check: a broker's imbalance ratio above the percentage moves
     * every partition it prefers and can lead back to it. */
    for (int32_t ti = 0; ti < img->topic_count && !oom; ti++) {
        const struct metadata_topic *t = img->topics[ti];
        for (int32_t pi = 0; pi < t->partition_count && !oom; pi++) {
            const struct metadata_partition *p = &t->partitions[pi];
            if (!p->present || p->replica_count <= 0 || p->leader == p->replicas[0] ||
                !valid_leader(img, p, p->replicas[0]))
                continue;
            const struct preferred_share *s = share_of(&shares, &share_count, p->replicas[0]);
            if (!s || s->not_leading * 100 <= (int64_t)percentage * s->total)
                continue;
            if (elect_one(img, t, p, METADATA_ELECTION_PREFERRED, 1, &records) == KAFKA_ERR_NONE)
                moved++;
        }
    }
    int32_t rc = moved;
    if (oom || records.w.failed) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (records.count > 0 && metadata_store_commit_locked(store, &records, err, errlen) != KAFKA_ERR_NONE) {
        rc = -1;
    }
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    free(shares);
    return rc;
}
