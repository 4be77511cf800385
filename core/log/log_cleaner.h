/* The log cleaner: Kafka's compaction (cleanup.policy=compact) for the
 * partition logs of one broker.
 *
 * A pass over a log keeps, for every key, the record with the greatest
 * offset, below the active segment, the first unstable offset (open
 * transactions) and min.compaction.lag.ms. A log is cleaned when the bytes
 * after its first dirty offset make up at least min.cleanable.dirty.ratio
 * of its closed segments, or when dirty data is older than
 * max.compaction.lag.ms. Tombstones (null values) outlive the first clean
 * of their segment by delete.retention.ms, measured from the segment file's
 * modification time as Kafka does. Offsets never change: a cleaned log has
 * gaps. Batches of aborted transactions go whole and never shadow older
 * records of their key; COMMIT/ABORT markers go once the pass meets no data
 * of their transaction and delete.retention.ms has passed, their .txnindex
 * entries with them (log_clean_txn.h); the last batch of every known
 * producer id is kept (empty if all its records go) so producer state can
 * be rebuilt from the log. Compressed batches are decompressed (codec/
 * record_codec.h), filtered by the same rules and recompressed with their
 * codec; one that cannot be decompressed is kept whole and maps no keys;
 * one emptied but kept for its producer is written uncompressed. A segment cleaned
 * down to nothing is deleted unless it is the first one; segments are not
 * merged otherwise.
 *
 * Each rewritten segment goes through Kafka's files: <base>.log.cleaned,
 * renamed to <base>.log.swap once durable, then over <base>.log, with the
 * indexes rebuilt. Start-up (partition_log_clean_recover_files) deletes
 * .cleaned leftovers and completes .swap files. Fetches keep reading the
 * old file through their dup()ed descriptors.
 *
 * Per log dir, cleaner-offset-checkpoint (Kafka's offset checkpoint format)
 * records each compacted partition's first dirty offset.
 *
 * log.cleaner.threads threads each take the filthiest due log that no other
 * pass holds, as Kafka's LogCleanerManager does; each pass gets an even
 * share of log.cleaner.dedupe.buffer.size.
 *
 * Thread-safety: partition_log_clean may run beside appends, reads,
 * retention and truncation of the same log; two passes on one log must not
 * overlap (struct log_cleaner marks a log in progress for its pass). The
 * log_cleaner_* functions may be called from any thread. */
#ifndef CAIRN_LOG_LOG_CLEANER_H
#define CAIRN_LOG_LOG_CLEANER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "protocol/record_batch.h"

struct log_manager;
struct log_throttler;
struct partition_log;

#define LOG_CLEANER_CHECKPOINT_FILE "cleaner-offset-checkpoint"

/* Where a pass stops early, for crash tests: the files are left as a crash
 * at that point would leave them and the in-memory log is not changed. */
enum log_clean_stop {
    LOG_CLEAN_STOP_NONE = 0,
    LOG_CLEAN_STOP_AFTER_CLEANED, /* .cleaned files written */
    LOG_CLEAN_STOP_AFTER_SWAP,    /* renamed to .swap */
    LOG_CLEAN_STOP_AFTER_MEMBERS, /* merged members' files deleted, .swap not yet .log */
};

struct log_clean_options {
    size_t dedupe_buffer_bytes;      /* log.cleaner.dedupe.buffer.size */
    double load_factor;              /* fill of the dedupe map that counts as full */
    bool force;                      /* ignore min.cleanable.dirty.ratio (tests, tools) */
    struct log_throttler *throttler; /* bytes read and written go through it; NULL: none */
    enum log_clean_stop stop_after;
};

struct log_clean_result {
    bool cleaned;               /* a pass ran over the log */
    int64_t first_dirty_offset; /* where the next pass starts */
    double dirty_ratio;         /* as found before the pass */
    int segments_rewritten;
    int64_t bytes_before; /* of the segments the pass covered */
    int64_t bytes_after;
};

/* One pass over log if it is eligible. first_dirty: the checkpointed first
 * dirty offset (-1 or out of range: the log start). Returns 0 (see *out) or
 * an errno value; on error the log is unchanged unless it went offline. */
int partition_log_clean(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                        const struct log_clean_options *opt, struct log_clean_result *out);

/* How dirty a log is, from its segment list alone (no file is read), as
 * partition_log_clean would find it: what the cleaner threads rank logs by. */
struct log_clean_dirtiness {
    int64_t first_dirty_offset;     /* the checkpointed one, or the log start */
    int64_t cleanable_end;          /* first offset a pass may not touch */
    size_t cleanable_segments;      /* segments below cleanable_end */
    size_t first_dirty_segment;     /* index of the first one holding dirty offsets */
    size_t first_cleanable_segment; /* tiered: the first at or above the tier floor */
    int64_t clean_bytes;            /* cleanable bytes below the first dirty offset */
    int64_t dirty_bytes;            /* cleanable bytes from it on */
    double dirty_ratio;             /* dirty_bytes / (clean_bytes + dirty_bytes), 0 if none */
    bool overdue;                   /* dirty data older than max.compaction.lag.ms */
    bool due;                       /* dirty, and ratio >= min.cleanable.dirty.ratio or overdue */
};

/* Takes the log's write lock briefly; a log that is not compacted, offline,
 * deleted or has a single segment is never due. */
void partition_log_dirtiness(struct partition_log *log, int64_t first_dirty, int64_t now_ms,
                             struct log_clean_dirtiness *out);

/* ---- batch rewriting ---- */

enum log_clean_batch_outcome {
    LOG_CLEAN_BATCH_ALL = 0,  /* every record kept: copy the batch as it is */
    LOG_CLEAN_BATCH_SOME = 1, /* a smaller batch was written to out */
    LOG_CLEAN_BATCH_NONE = 2, /* no record kept: drop the batch */
};

typedef bool (*log_clean_keep_fn)(void *arg, const struct record_batch_record *rec);

/* Filter the records of one uncompressed v2 batch (len = its total size).
 * The new batch keeps base offset, lastOffsetDelta, producer id/epoch, base
 * sequence, attributes and timestamps; recordCount, batchLength and the
 * CRC32C are recomputed. With keep_empty a batch losing every record is
 * written with no records instead of dropped. out needs len bytes.
 * Returns an outcome, or -1 when the batch is compressed or malformed. */
int log_clean_filter_batch(const uint8_t *batch, size_t len, log_clean_keep_fn keep, void *arg, bool keep_empty,
                           uint8_t *out, size_t *out_len);

/* ---- the cleaner of a log manager ---- */

/* Tests: called on the thread calling partition_log_clean for a log, right
 * before (starting) and right after the call, while the log is marked in
 * progress. run_once calls it for every compacted log, due or not. */
typedef void (*log_cleaner_pass_hook)(void *arg, const char *topic, int32_t partition, bool starting);

struct log_cleaner_config {
    bool enable;                    /* log.cleaner.enable: run the background threads */
    int32_t threads;                /* log.cleaner.threads; 0 starts none */
    int64_t backoff_ms;             /* log.cleaner.backoff.ms: sleep when nothing is due */
    int64_t dedupe_buffer_bytes;    /* log.cleaner.dedupe.buffer.size, split between the threads */
    double load_factor;             /* log.cleaner.io.buffer.load.factor */
    double io_max_bytes_per_second; /* log.cleaner.io.max.bytes.per.second, all threads */
    log_cleaner_pass_hook pass_hook;
    void *pass_hook_arg;
};

void log_cleaner_config_defaults(struct log_cleaner_config *cfg);

struct log_cleaner;

/* Read the checkpoints of every log dir of m and, when cfg->enable and
 * start_thread, start cfg->threads cleaner threads. Returns 0 or an errno
 * value. */
int log_cleaner_create(struct log_manager *m, const struct log_cleaner_config *cfg, bool start_thread,
                       struct log_cleaner **out);
/* One pass over every compacted log that is due, in list order, on the
 * caller's thread (waiting for a log a cleaner thread holds); force ignores
 * the dirty ratio. Returns the number of logs cleaned. */
int log_cleaner_run_once(struct log_cleaner *c, int64_t now_ms, bool force);
/* What each cleaner thread does in a loop: take the filthiest due log no
 * other pass holds (logs overdue by max.compaction.lag.ms first, then the
 * highest dirty ratio), clean it, release it. Returns false when no log was
 * due; *cleaned (may be NULL) tells whether the pass rewrote the log. */
bool log_cleaner_clean_filthiest(struct log_cleaner *c, int64_t now_ms, bool *cleaned);
/* Bytes of dedupe map each pass may use: the buffer split between threads. */
size_t log_cleaner_dedupe_bytes_per_pass(const struct log_cleaner *c);
/* Checkpointed first dirty offset of a partition, or -1. */
int64_t log_cleaner_first_dirty(struct log_cleaner *c, const char *topic, int32_t partition);
/* Stop the threads, free. */
void log_cleaner_destroy(struct log_cleaner *c);

#endif
