/* Replica placement for new partitions, as Kafka's AdminUtils places them
 * (assignReplicasToBrokersRackUnaware / RackAware): leaders walk the
 * brokers from a random start, followers are shifted by a per-round offset
 * so consecutive partitions spread their replicas, and with racks the
 * brokers are taken alternately from each rack and a partition's replicas
 * go to distinct racks while racks remain.
 *
 * Pure: no image, no lock, no randomness of its own (the caller passes the
 * random start and shift), so a test can pin every choice. */
#ifndef CAIRN_METADATA_METADATA_PLACEMENT_H
#define CAIRN_METADATA_METADATA_PLACEMENT_H

#include <stdint.h>

/* Fills out (count * rf ids, partition by partition) with the replicas of
 * partitions first_partition .. first_partition + count - 1 over the n
 * brokers in `brokers` (ascending ids; 1 <= rf <= n). racks[i] is broker
 * i's rack or NULL; placement is rack-aware only when every broker has one
 * (Kafka refuses a mix; Cairn places such a cluster rack-unaware). start
 * and shift are random draws. Returns 0, or -1 when out of memory. */
int metadata_place_replicas(const int32_t *brokers, const char *const *racks, int32_t n, int32_t first_partition,
                            int32_t count, int16_t rf, uint32_t start, uint32_t shift, int32_t *out);

#endif
