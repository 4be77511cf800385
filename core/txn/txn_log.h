/* The durable transaction store: one record per transactional id in the
 * internal compacted topic __transaction_state, keyed and valued per Kafka's
 * TransactionLogKey/TransactionLogValue schemas so Kafka tools can read it.
 *
 * An id lives in partition coordinator_partition_for(id,
 * transaction.state.log.num.partitions). Each write is one batch, flushed
 * before the call returns.
 *
 * Thread-safety: after txn_log_open, writes and loads may come from any
 * thread (the partition logs serialise appends). txn_log_close runs once,
 * after the last call. */
#ifndef CAIRN_TXN_TXN_LOG_H
#define CAIRN_TXN_TXN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TXN_LOG_TOPIC "__transaction_state"

struct log_manager;
struct metadata_store;
struct txn_log;

/* Kafka's TransactionState ids, as stored in TransactionStatus. */
enum txn_state {
    TXN_STATE_EMPTY = 0,
    TXN_STATE_ONGOING = 1,
    TXN_STATE_PREPARE_COMMIT = 2,
    TXN_STATE_PREPARE_ABORT = 3,
    TXN_STATE_COMPLETE_COMMIT = 4,
    TXN_STATE_COMPLETE_ABORT = 5,
    TXN_STATE_DEAD = 6,
    TXN_STATE_PREPARE_EPOCH_FENCE = 7,
};

struct txn_topic_partition {
    char *topic;
    int32_t partition;
};

/* One stored value. Strings are owned by whoever built the record; a loaded
 * record's memory lasts only through the visitor call. */
struct txn_log_record {
    int64_t producer_id;
    int64_t previous_producer_id; /* -1 when none; stored only by value version 1 */
    int16_t producer_epoch;
    int32_t timeout_ms;
    enum txn_state state;
    const struct txn_topic_partition *partitions;
    size_t partition_count;
    int64_t last_update_ms;
    int64_t start_ms; /* -1 when no transaction is open */
};

struct purgatory;

struct txn_log_options {
    struct log_manager *logs;
    struct metadata_store *metadata;
    int32_t num_partitions;     /* transaction.state.log.num.partitions, default 50 */
    int16_t replication_factor; /* transaction.state.log.replication.factor (capped by live brokers) */
    int32_t segment_bytes;      /* transaction.state.log.segment.bytes, default 104857600 */
    int32_t node_id;
    int32_t load_buffer_size; /* transaction.state.log.load.buffer.size; <= 0 means 5242880 */
    struct purgatory *fetch_purgatory; /* woken on each append (followers' parked fetches); may be NULL */
    int32_t expected_brokers; /* internal_topic_options.expected_brokers */
    int32_t min_insync_replicas; /* transaction.state.log.min.isr: internal_topic_options.min_insync_replicas */
};

/* Creates __transaction_state on first start and opens its partitions held
 * here. On failure -1 with the reason in err. */
int txn_log_open(const struct txn_log_options *opts, struct txn_log **out, char *err, size_t errlen);

int32_t txn_log_partition_count(const struct txn_log *tl);

/* Whether this broker can store the id: NONE, NOT_COORDINATOR (no replica
 * here) or COORDINATOR_NOT_AVAILABLE (log missing or offline). */
int16_t txn_log_check(struct txn_log *tl, const char *transactional_id);

/* Appends the id's record (rec NULL: tombstone) and flushes it. Errors as
 * txn_log_check; a failed append as txn_log_append_error maps it;
 * UNKNOWN_SERVER_ERROR when the record does not encode. */
int16_t txn_log_write(struct txn_log *tl, const char *transactional_id, const struct txn_log_record *rec);

/* What a coordinator answers when appending to its log failed with code,
 * as Kafka's TransactionStateManager maps it: the storage failing
 * (KAFKA_STORAGE_ERROR, a full disk) or leadership gone -> NOT_COORDINATOR;
 * partition missing, too few replicas, timeout -> COORDINATOR_NOT_AVAILABLE;
 * anything else -> UNKNOWN_SERVER_ERROR. Both retriable answers make the
 * client look the coordinator up again and retry. */
int16_t txn_log_append_error(int16_t code);

/* Replays every partition held here in offset order (rec NULL for a
 * tombstone). Unreadable records are skipped with a warning. Returns 0, or -1
 * with err on an I/O failure. */
typedef void (*txn_log_visit_fn)(void *ctx, const char *transactional_id, const struct txn_log_record *rec);
int txn_log_load(struct txn_log *tl, txn_log_visit_fn visit, void *ctx, char *err, size_t errlen);
/* The same for one partition (partition < 0: every partition held here);
 * -1 with err also when the partition is not held here. */
int txn_log_load_partition(struct txn_log *tl, int32_t partition, txn_log_visit_fn visit, void *ctx, char *err,
                           size_t errlen);

/* The topic under the store, for the partitions held here. */
struct internal_topic;
struct internal_topic *txn_log_topic(const struct txn_log *tl);

/* Record codec, exposed for tests: key and value with their version prefix. */
struct kafka_writer;
int txn_log_encode_key(struct kafka_writer *w, const char *transactional_id);
int txn_log_encode_value(struct kafka_writer *w, const struct txn_log_record *rec);

void txn_log_close(struct txn_log *tl);

#endif
