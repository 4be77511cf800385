/* Which partition of an internal topic (__consumer_offsets,
 * __transaction_state) holds a coordinator key. Kafka places a key by the
 * Java String hashCode of the key, made non-negative with Utils.abs,
 * modulo the partition count; clients and tools rely on the same placement. */
#ifndef CAIRN_COORDINATOR_COORDINATOR_PARTITION_H
#define CAIRN_COORDINATOR_COORDINATOR_PARTITION_H

#include <stddef.h>
#include <stdint.h>

/* Java's String.hashCode over the UTF-16 form of a UTF-8 key. Invalid
 * UTF-8 bytes count as U+FFFD, as Java's decoder replaces them. */
int32_t coordinator_key_hash(const char *key, size_t len);

/* abs(hash) % partition_count (abs(INT32_MIN) is 0, as Kafka's Utils.abs);
 * 0 when partition_count <= 0. */
int32_t coordinator_partition_for(const char *key, size_t len, int32_t partition_count);

#endif
