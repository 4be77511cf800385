/* AlterPartition at the controller (see metadata_alter_partition.h). */
#include "metadata/metadata_alter_partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_election.h"
#include "metadata/metadata_reassign.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"

/* Every member a replica, none twice (Kafka's Replicas.validateIsr). */
static bool isr_within_replicas(const struct metadata_partition *p, const struct metadata_isr_member *isr, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        bool replica = false;
        for (int32_t j = 0; j < p->replica_count; j++)
            replica |= p->replicas[j] == isr[i].broker_id;
        if (!replica)
            return false;
        for (int32_t k = 0; k < i; k++)
            if (isr[k].broker_id == isr[i].broker_id)
                return false;
    }
    return true;
}

static bool isr_has(const struct metadata_isr_member *isr, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (isr[i].broker_id == id)
            return true;
    return false;
}

/* Kafka's validateAlterPartitionData, in its order. */
static int16_t validate(const struct metadata_image *img, const struct metadata_partition *p, int32_t broker_id,
                        int16_t version, const struct metadata_isr_change *c)
{
    if (!p)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    /* Epochs ahead of this image: likely another node controls now. */
    if (c->leader_epoch > p->leader_epoch || c->partition_epoch > p->partition_epoch)
        return KAFKA_ERR_NOT_CONTROLLER;
    if (c->leader_epoch < p->leader_epoch)
        return KAFKA_ERR_FENCED_LEADER_EPOCH;
    if (broker_id != p->leader)
        return KAFKA_ERR_INVALID_REQUEST;
    if (c->partition_epoch < p->partition_epoch)
        return KAFKA_ERR_INVALID_UPDATE_VERSION;
    if (c->isr_count < 0 || (c->isr_count > 0 && !c->isr) || !isr_within_replicas(p, c->isr, c->isr_count) ||
        !isr_has(c->isr, c->isr_count, p->leader))
        return KAFKA_ERR_INVALID_REQUEST;
    /* Leaders here are always RECOVERED: RECOVERING is never a valid move. */
    if (c->leader_recovery_state != 0)
        return KAFKA_ERR_INVALID_REQUEST;
    for (int32_t i = 0; i < c->isr_count; i++) {
        const struct metadata_broker *br = metadata_image_broker(img, c->isr[i].broker_id);
        if (!br || br->in_controlled_shutdown || br->fenced ||
            (c->isr[i].broker_epoch != -1 && br->epoch != c->isr[i].broker_epoch))
            return version > 1 ? KAFKA_ERR_INELIGIBLE_REPLICA : KAFKA_ERR_OPERATION_NOT_ATTEMPTED;
    }
    return KAFKA_ERR_NONE;
}

static bool same_isr(const struct metadata_partition *p, const struct metadata_isr_member *isr, int32_t n)
{
    if (n != p->isr_count)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (p->isr[i] != isr[i].broker_id)
            return false;
    return true;
}

/* The ELR and LastKnownElr that follow an ISR change (KIP-966), against
 * the change's ISR (and replicas, when a reassignment completes); room
 * holds metadata_elr_room(p) ids. With ELR off, any left are cleared. */
static void set_elr(const struct metadata_store *store, const struct metadata_image *img,
                    const struct metadata_topic *t, const struct metadata_partition *p,
                    struct metadata_partition_change *pc, int32_t *room)
{
    bool on = img->elr_version >= 1;
    struct metadata_elr_policy policy = {
        .enabled = on,
        .min_isr = on ? metadata_min_insync_replicas(img, t, store->node_id, store->min_insync_replicas) : 1,
        .unclean_restart_id = -1};
    metadata_partition_change_set_elr(p, &policy, pc, room);
}

int16_t metadata_alter_partition(struct metadata_store *store, int32_t broker_id, int64_t broker_epoch, int16_t version,
                                 struct metadata_isr_change *changes, int32_t count, char *err, size_t errlen)
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
    const struct metadata_broker *self = metadata_image_broker(img, broker_id);
    int16_t rc = KAFKA_ERR_NONE;
    int32_t *ids = NULL;
    if (!self || self->epoch != broker_epoch) {
        snprintf(err, errlen, "broker %d is not registered at epoch %lld", (int)broker_id, (long long)broker_epoch);
        rc = KAFKA_ERR_STALE_BROKER_EPOCH;
        goto out;
    }
    int32_t written = 0;
    for (int32_t i = 0; i < count; i++) {
        struct metadata_isr_change *c = &changes[i];
        const struct metadata_topic *t = version > 1 ? (metadata_uuid_is_zero(&c->topic_id)
                                                            ? NULL
                                                            : metadata_image_topic_by_id(img, &c->topic_id))
                                                     : (c->topic_name ? metadata_image_topic_by_name(img, c->topic_name,
                                                                                                     c->topic_name_len)
                                                                      : NULL);
        if (!t) {
            c->error_code = version > 1 ? KAFKA_ERR_UNKNOWN_TOPIC_ID : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        const struct metadata_partition *p = metadata_topic_partition(t, c->partition_index);
        c->error_code = validate(img, p, broker_id, version, c);
        if (c->error_code != KAFKA_ERR_NONE) {
            logger_info(LOG_COMPONENT, "AlterPartition from broker %d for %s-%d refused: error %d", (int)broker_id,
                        t->name, (int)c->partition_index, (int)c->error_code);
            continue;
        }
        c->leader = p->leader;
        c->new_leader_epoch = p->leader_epoch;
        c->new_partition_epoch = p->partition_epoch;
        bool completes = metadata_reassignment_in_progress(p);
        if (same_isr(p, c->isr, c->isr_count) && !completes)
            continue; /* nothing to write: the current state answers */
        /* Room for the ISR, then the completion's replicas and ISR, then
         * the ELR and LastKnownElr. */
        size_t elr_room = (size_t)metadata_elr_room(p);
        size_t need = (size_t)c->isr_count + 2 * (size_t)p->replica_count + 3 + elr_room;
        int32_t *grown = realloc(ids, need * sizeof(*ids));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            goto out;
        }
        ids = grown;
        for (int32_t k = 0; k < c->isr_count; k++)
            ids[k] = c->isr[k].broker_id;
        struct metadata_partition_change pc = {
            .partition_index = c->partition_index, .leader = -2, .isr = ids, .isr_count = c->isr_count};
        /* Every adding replica in sync: the reassignment completes in the
         * same record (Kafka's PartitionChangeBuilder). */
        completes = completes && metadata_reassignment_complete(img, p, ids, c->isr_count, &pc, ids + c->isr_count);
        if (!completes && same_isr(p, c->isr, c->isr_count))
            continue;
        set_elr(store, img, t, p, &pc, ids + need - elr_room);
        metadata_record_write_partition_change(&records.w, &t->topic_id, &pc);
        if (metadata_record_list_mark(&records) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            goto out;
        }
        c->new_partition_epoch = p->partition_epoch + 1; /* the loader's bump */
        if (completes && pc.leader != -2) {              /* a new leader, or the epoch bump of a removal */
            c->leader = pc.leader;
            c->new_leader_epoch = p->leader_epoch + 1;
        }
        logger_info(LOG_COMPONENT, "broker %d alters the ISR of %s-%d to %d member(s)%s", (int)broker_id, t->name,
                    (int)c->partition_index, (int)c->isr_count, completes ? "; its reassignment completes" : "");
        written++;
    }
    if (written > 0)
        rc = metadata_store_commit_locked(store, &records, err, errlen);
out:
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    free(ids);
    return rc;
}
