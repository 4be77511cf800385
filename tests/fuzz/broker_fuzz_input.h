/* The input layout of fuzz_broker_requests, shared with its seed writer.
 *
 * Input: up to BROKER_FUZZ_MAX_REQUESTS requests separated by
 * BROKER_FUZZ_SEPARATOR, sent in order on one connection, so one input can
 * replay a whole flow (join then sync, begin then commit a transaction).
 * Each request: byte 0 picks the API, byte 1 the version, byte 2 holds
 * flags, the rest is the request body (what follows the request header).
 *  - byte 0: an API key the broker serves is taken as is; any other value
 *    picks handlers_table()[byte % count].
 *  - byte 1: a version in the API's served range is taken as is; any other
 *    value picks min + byte % (max - min + 1).
 *  - byte 2, bit 0: before sending a Produce, write the right CRC into every
 *    v2 record batch it carries, so mutated batches get past the CRC check.
 * Keys and versions are kept when valid so seeds stay meaningful when the
 * served table grows.
 *
 * Thread-safety: pure functions. */
#ifndef CAIRN_TESTS_FUZZ_BROKER_FUZZ_INPUT_H
#define CAIRN_TESTS_FUZZ_BROKER_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers/handlers.h"

#define BROKER_FUZZ_PREFIX_LEN 3
#define BROKER_FUZZ_FLAG_FIX_CRC 0x01
#define BROKER_FUZZ_SEPARATOR "\xfe\xedRQ"
#define BROKER_FUZZ_SEPARATOR_LEN 4
#define BROKER_FUZZ_MAX_REQUESTS 8

/* Topics the harness creates before the first input; seeds name them. */
#define BROKER_FUZZ_TOPIC "fuzz-a"           /* 2 partitions */
#define BROKER_FUZZ_COMPACTED_TOPIC "fuzz-c" /* 1 partition, cleanup.policy=compact */
#define BROKER_FUZZ_GROUP "fuzz-group"
#define BROKER_FUZZ_TXN_ID "fuzz-txn"
/* Values only the broker knows, which the harness writes over these
 * placeholders in a body before sending it:
 *  - topic ids (random per broker) of the two topics made at start;
 *  - the member id and generation of the last JoinGroup answer (member ids
 *    are "fuzz-" and a uuid: 41 bytes);
 *  - the producer id and epoch (8 + 2 bytes, contiguous in every request
 *    and record batch that carries them) of the last InitProducerId answer. */
#define BROKER_FUZZ_TOPIC_ID_PLACEHOLDER "fuzz-a topic id!"
#define BROKER_FUZZ_COMPACTED_TOPIC_ID_PLACEHOLDER "fuzz-c topic id!"
#define BROKER_FUZZ_MEMBER_ID_PLACEHOLDER "fuzz-member-id-from-the-last-joingroup!!!"
#define BROKER_FUZZ_MEMBER_ID_LEN 41
#define BROKER_FUZZ_GENERATION_PLACEHOLDER "GEN!"
#define BROKER_FUZZ_PRODUCER_PLACEHOLDER "PID+EPOCH!"

struct broker_fuzz_pick {
    const struct api_handler_entry *entry;
    int16_t version;
    uint8_t flags;
    const uint8_t *body;
    size_t body_len;
};

/* The placeholders as the integers a seed writer puts in a request. */
static inline int64_t broker_fuzz_placeholder_be(const char *bytes, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | (uint8_t)bytes[i];
    return n == 8 ? (int64_t)v : n == 4 ? (int32_t)(uint32_t)v : (int16_t)(uint16_t)v;
}
#define BROKER_FUZZ_PLACEHOLDER_GENERATION ((int32_t)broker_fuzz_placeholder_be(BROKER_FUZZ_GENERATION_PLACEHOLDER, 4))
#define BROKER_FUZZ_PLACEHOLDER_PRODUCER_ID broker_fuzz_placeholder_be(BROKER_FUZZ_PRODUCER_PLACEHOLDER, 8)
#define BROKER_FUZZ_PLACEHOLDER_EPOCH ((int16_t)broker_fuzz_placeholder_be(&BROKER_FUZZ_PRODUCER_PLACEHOLDER[8], 2))

static inline bool broker_fuzz_pick(const uint8_t *data, size_t size, struct broker_fuzz_pick *out)
{
    if (size < BROKER_FUZZ_PREFIX_LEN)
        return false;
    int count = 0;
    const struct api_handler_entry *table = handlers_table(&count);
    if (count <= 0)
        return false;
    const struct api_handler_entry *entry = handlers_find((int16_t)data[0]);
    if (!entry)
        entry = &table[data[0] % count];
    int16_t version = (int16_t)data[1];
    if (version < entry->min_version || version > entry->max_version)
        version = (int16_t)(entry->min_version + data[1] % (entry->max_version - entry->min_version + 1));
    out->entry = entry;
    out->version = version;
    out->flags = data[2];
    out->body = data + BROKER_FUZZ_PREFIX_LEN;
    out->body_len = size - BROKER_FUZZ_PREFIX_LEN;
    return true;
}

#endif
