/* Partition reassignment at the controller (KIP-455, Kafka's
 * ReplicationControlManager.alterPartitionReassignments):
 *  - a target list T for a partition with replicas C (its original ones
 *    when a reassignment is already under way) writes one
 *    PartitionChangeRecord with replicas = T then C - T, adding = T - C,
 *    removing = C - T;
 *  - once every adding replica is in the ISR (the leader grows it through
 *    AlterPartition, metadata_alter_partition calls the completion), the
 *    partition takes replicas = T, ISR = ISR & T and a leader from T when
 *    its leader is removed; adding and removing are cleared;
 *  - a null list cancels: replicas go back to C, the adding ones leave the
 *    ISR (and the leadership, when one of them led);
 *  - any of these that drops a replica bumps the leader epoch, as Kafka
 *    (metadata_partition_change_fence_removed).
 *
 * Thread-safety: metadata_alter_reassignments takes the controller lock;
 * the completion is a pure function over an image. */
#ifndef CAIRN_METADATA_METADATA_REASSIGN_H
#define CAIRN_METADATA_METADATA_REASSIGN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_store.h"

/* One partition of an AlterPartitionReassignments request and its answer. */
struct metadata_reassignment {
    const char *topic; /* not NUL-terminated */
    size_t topic_len;
    int32_t partition_index;
    const int32_t *replicas; /* NULL: cancel */
    int32_t replica_count;
    /* KIP-860 (AllowReplicationFactorChange false): a target whose length
     * differs from the replica count the partition is headed for is
     * refused with INVALID_REPLICATION_FACTOR. */
    bool keep_replication_factor;
    int16_t error_code;      /* out */
    char error_message[128]; /* out, "" when none */
};

/* Applies each reassignment (one batch of records). Returns NOT_CONTROLLER
 * when this node cannot write the metadata log, or the commit's error;
 * NONE leaves each partition's error: UNKNOWN_TOPIC_OR_PARTITION,
 * INVALID_REPLICA_ASSIGNMENT (empty list, a duplicate, a broker not
 * registered), INVALID_REPLICATION_FACTOR (keep_replication_factor),
 * NO_REASSIGNMENT_IN_PROGRESS (a cancel of nothing). */
int16_t metadata_alter_reassignments(struct metadata_store *store, struct metadata_reassignment *items, int32_t count,
                                     char *err, size_t errlen);

/* Kafka's PartitionChangeBuilder leader-epoch rule for a change c to p: a
 * leader equal to p's becomes -2 (unchanged), then a replica list that
 * drops any of p's replicas names p's leader again, which bumps the leader
 * epoch. A removed replica still fetching at the old epoch is fenced
 * (FENCED_LEADER_EPOCH) and the kept followers fetch at the new one. The
 * ISR shrinking alone bumps nothing: Kafka does so only below
 * metadata.version 3.6-IV0, and Cairn writes a later level. */
void metadata_partition_change_fence_removed(const struct metadata_partition *p, struct metadata_partition_change *c);

/* Whether p, given the ISR it is about to have, completes its
 * reassignment: fills *c (replicas, ISR, leader, cleared adding/removing;
 * its arrays point into buf, room for 2 * p->replica_count + 2 ids) and
 * returns true. False when no reassignment is under way, an adding
 * replica is not in isr, or no member of isr & target may lead. */
bool metadata_reassignment_complete(const struct metadata_image *img, const struct metadata_partition *p,
                                    const int32_t *isr, int32_t isr_count, struct metadata_partition_change *c,
                                    int32_t *buf);

static inline bool metadata_reassignment_in_progress(const struct metadata_partition *p)
{
    return p->adding_count > 0 || p->removing_count > 0;
}

#endif
