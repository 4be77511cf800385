/* AlterPartition at the controller: a partition leader asks to shrink or
 * grow its ISR. Validation follows Kafka's ReplicationControlManager in
 * order and error codes; the accepted changes of one request are one batch
 * of PartitionChangeRecords (partition epoch + 1 each).
 *
 * Thread-safety: callable from any thread; takes the controller lock. */
#ifndef CAIRN_METADATA_METADATA_ALTER_PARTITION_H
#define CAIRN_METADATA_METADATA_ALTER_PARTITION_H
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_store.h"

struct metadata_isr_member {
    int32_t broker_id;
    int64_t broker_epoch; /* -1: not checked (versions 0-2 carry none) */
};

/* One partition of the request and, after the call, its answer. */
struct metadata_isr_change {
    /* in: the topic by name (versions 0-1) or by id (2+) */
    const char *topic_name;
    size_t topic_name_len;
    struct kafka_uuid topic_id;
    int32_t partition_index;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int8_t leader_recovery_state; /* 0 RECOVERED, 1 RECOVERING */
    const struct metadata_isr_member *isr;
    int32_t isr_count;
    /* out: error_code, and on NONE the partition as committed (its ISR is
     * the requested one) */
    int16_t error_code;
    int32_t leader;
    int32_t new_leader_epoch;
    int32_t new_partition_epoch;
};

/* Validates each change against the image and commits the valid ones.
 * Returns the request's error: NOT_CONTROLLER when this node may not write
 * the metadata log, STALE_BROKER_EPOCH when broker_id is not registered at
 * broker_epoch, or the commit's error; NONE leaves each change's own
 * error_code: UNKNOWN_TOPIC_ID (version 2+) / UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_CONTROLLER for epochs ahead of the image, FENCED_LEADER_EPOCH,
 * INVALID_REQUEST (not the leader, an ISR outside the replicas or without
 * the leader, a recovering leader), INVALID_UPDATE_VERSION (stale partition
 * epoch), INELIGIBLE_REPLICA (version 2+; OPERATION_NOT_ATTEMPTED before)
 * for an ISR member not registered, fenced, shutting down or at another
 * broker epoch. */
int16_t metadata_alter_partition(struct metadata_store *store, int32_t broker_id, int64_t broker_epoch, int16_t version,
                                 struct metadata_isr_change *changes, int32_t count, char *err, size_t errlen);

#endif
