/* Transaction verification for Produce (KIP-890 part 1): before a
 * transactional batch opens a transaction on a partition, the leader asks
 * the transaction coordinator of the request's transactional id whether
 * the partition is in that producer's ongoing transaction. The coordinator
 * in this process is called directly; another broker is asked with
 * AddPartitionsToTxn v4 verify_only over the broker's outbound client, and
 * the produce resumes when the answer comes. The partition log's guard
 * (partition_log_txn_verification_start) makes a verification that a
 * marker overtook worthless at the append.
 *
 * Runs on the io thread handling the Produce; resume runs there too, or
 * on the outbound client's thread when the coordinator is remote. */
#ifndef CAIRN_HANDLERS_PRODUCE_VERIFY_H
#define CAIRN_HANDLERS_PRODUCE_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "handlers/handlers.h"

struct produce_request;

/* What verification decided for one partition of a Produce. In the
 * request's arena; owned by whichever thread runs the request. */
struct produce_verdict {
    uint64_t guard; /* for partition_log_append_verified */
    int16_t code;   /* NONE, or the partition's answer (nothing appended) */
    bool guarded;   /* append through partition_log_append_verified */
    bool remote;    /* waiting for another broker's answer */
};

/* Appends and answers once every verdict is in; verdicts has one entry per
 * partition of the request, topics in order (NULL: nothing was verified).
 * Returns what handle_produce would. */
typedef enum handler_result (*produce_verify_resume_fn)(struct request_context *ctx, struct produce_verdict *verdicts);

/* Fills *verdicts, asking the local coordinator in place. HANDLER_RESPOND:
 * every verdict is in, call resume now. HANDLER_DEFERRED: resume is called
 * with them when the remote coordinator answers (or fails to), and its
 * answer completes the request. HANDLER_CLOSE: out of memory. */
enum handler_result produce_verify(struct request_context *ctx, const struct produce_request *req,
                                   struct produce_verdict **verdicts, produce_verify_resume_fn resume);

/* Kafka's translation of a coordinator's verification answer for a Produce
 * of api_version: not in the transaction is TRANSACTION_ABORTABLE from v11,
 * INVALID_TXN_STATE before; a coordinator that cannot answer now is the
 * retriable NOT_ENOUGH_REPLICAS (no metadata refresh). */
int16_t produce_verify_error(int16_t code, int16_t api_version);

#endif
