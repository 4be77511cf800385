/* AlterPartition (API 56) on the controller listener: the request decoded
 * into metadata_alter_partition's changes and its answer built, as Kafka's
 * controller gives it. Runs on the controller_brokers worker thread. */
#ifndef CAIRN_SERVER_CONTROLLER_ALTER_PARTITION_H
#define CAIRN_SERVER_CONTROLLER_ALTER_PARTITION_H
#include <stdint.h>

#include "protocol/generated/alter_partition_request.h"
#include "protocol/generated/alter_partition_response.h"

struct metadata_store;

#define CONTROLLER_API_ALTER_PARTITION 56

/* Fills out (initialized by the caller) from in; arrays of out live in arena. */
void controller_alter_partition(struct metadata_store *store, const struct alter_partition_request *in, int16_t version,
                                struct alter_partition_response *out, struct kafka_arena *arena);

#endif
