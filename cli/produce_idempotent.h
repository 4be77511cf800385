/* The idempotent producer of `cairn produce` (Kafka's enable.idempotence):
 * one producer id from InitProducerId (no transactional id), and per
 * partition the next sequence number, stamped on each batch when it is
 * sealed. A batch keeps its sequence across retries, so the leader writes
 * it once however often it is sent (a retry of one already written is
 * answered with its original offsets, or DUPLICATE_SEQUENCE_NUMBER).
 *
 * Owned by the main thread, like the producer that holds it. */
#ifndef CAIRN_CLI_PRODUCE_IDEMPOTENT_H
#define CAIRN_CLI_PRODUCE_IDEMPOTENT_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "protocol/record_batch.h"

struct produce_idem {
    bool enabled;
    int64_t producer_id; /* -1 when not enabled */
    int16_t epoch;
    int32_t partitions;
    int32_t *next_seq; /* per partition */
    int bumps;         /* epoch bumps after lost sequence state */
};

/* Resolves enable.idempotence against the acks asked for, as Kafka 3's
 * producer does: on by default, off when the user chose acks 0 or 1
 * without asking for idempotence, refused when both are asked for.
 * setting: -1 unset, 0 or 1; acks_set: --acks was given. Returns 0 with
 * *on set, or CLI_EXIT_USAGE with the reason printed. */
int produce_idem_resolve(int setting, bool acks_set, int16_t acks, bool *on);

/* Asks any broker for a producer id (retrying retriable errors until
 * deadline_ms) when on; otherwise leaves the state disabled. Returns 0 or
 * an exit code (message printed). */
int produce_idem_init(struct produce_idem *id, struct cli_conn *c, bool on, int32_t partitions, int64_t deadline_ms);
void produce_idem_free(struct produce_idem *id);

/* Stamps the producer id, epoch and the partition's next base sequence on
 * a batch about to be finished, and advances the sequence by its records
 * (wrapping to 0 after INT32_MAX, as Kafka). No-op when disabled. */
void produce_idem_stamp(struct produce_idem *id, int32_t partition, struct record_batch_builder *b);

/* For an answer's error: true when it means the batch is in the log
 * (DUPLICATE_SEQUENCE_NUMBER: a retry of a batch already written). */
bool produce_idem_already_written(const struct produce_idem *id, int16_t code);
/* For an answer's error: true when the leader lost this producer's
 * sequence state (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID), which
 * Kafka's producer recovers from by bumping its epoch (KIP-360). */
bool produce_idem_recoverable(const struct produce_idem *id, int16_t code);
/* Bumps the epoch (InitProducerId with the current id and epoch; a broker
 * that no longer knows the id hands out a new one) and restarts every
 * partition's sequence at 0. Returns 0 or an exit code (message printed). */
int produce_idem_bump(struct produce_idem *id, struct cli_conn *c, int64_t deadline_ms);
/* Rewrites a sealed batch's producer id, epoch and base sequence with the
 * current ones (the CRC recomputed) and advances the partition's sequence:
 * the unacknowledged batches go out again under the new epoch. */
void produce_idem_restamp(struct produce_idem *id, int32_t partition, uint8_t *batch, size_t len);
/* A hint for the idempotence errors that stop the producer (the broker
 * lost or rejected this producer's sequence state), or NULL. */
const char *produce_idem_hint(int16_t code);

#endif
