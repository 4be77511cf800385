/* Helpers shared by the transaction API handlers. Run on io threads. */
#ifndef CAIRN_HANDLERS_TXN_HANDLER_UTIL_H
#define CAIRN_HANDLERS_TXN_HANDLER_UTIL_H

#include "handlers/handlers.h"

struct txn_topic_partition;

/* A NUL-terminated copy of s in the request arena; NULL for a null string,
 * one with an embedded NUL, or when out of memory. */
const char *txn_handler_cstr(struct request_context *ctx, struct kafka_str s);

/* Older API versions know INVALID_PRODUCER_EPOCH where newer ones answer
 * PRODUCER_FENCED (KIP-588): the version the newer code starts at. */
int16_t txn_handler_fenced_error(int16_t code, int16_t api_version, int16_t fenced_from);

/* NONE when the topic exists and has the partition, else
 * UNKNOWN_TOPIC_OR_PARTITION. */
int16_t txn_handler_partition_exists(struct request_context *ctx, const char *topic, int32_t partition);

/* The __consumer_offsets partition holding a group's offsets. */
int32_t txn_handler_offsets_partition(struct request_context *ctx, const char *group_id);

#endif
