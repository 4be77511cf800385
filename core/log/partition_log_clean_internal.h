/* What one cleaner pass shares between its rewrite
 * (partition_log_clean.c) and its swap and start-up recovery
 * (partition_log_clean_swap.c). Internal to core/log.
 *
 * Thread-safety: a plan is owned by the thread running the pass; the
 * segment pointers in it are only compared (never dereferenced) outside
 * the log's write_lock. */
#ifndef CAIRN_LOG_PARTITION_LOG_CLEAN_INTERNAL_H
#define CAIRN_LOG_PARTITION_LOG_CLEAN_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "log/log_cleaner.h"
#include "log/log_clean_txn.h"
#include "log/partition_log_internal.h"

/* A cleanable segment as captured under write_lock. */
struct clean_segment {
    struct log_segment *seg; /* identity check at swap time only */
    int64_t base;
    int64_t next_base; /* base offset of the following segment */
    int64_t size;
    int64_t index_bytes; /* size of its offset index */
    int fd;              /* dup() of the .log */
    struct timespec mtime;
    int64_t out_bytes; /* bytes of it the rewrite kept */
};

/* Consecutive segments rewritten into one <segs[first].base>.log.cleaned
 * (Kafka's groupSegmentsBySize). */
struct clean_group {
    size_t first, count; /* plan->segs[first, first + count) */
    bool rewritten;      /* its .cleaned file exists and replaces the members */
    int64_t new_size;
};

struct producer_last {
    int64_t producer_id;
    int64_t last_offset;
};

struct clean_plan {
    struct log_config cfg;
    struct clean_segment *segs; /* [0, count) cleanable, ascending */
    size_t count;
    struct clean_group *groups; /* [0, group_count), ascending; room for count */
    size_t group_count;
    size_t first_dirty_index; /* first segment holding dirty offsets */
    int64_t first_dirty;
    /* Tiered (remote.storage.enable, or remote data exists). Tombstones and
     * transaction markers stay: older records of their keys may be in
     * remote segments, which are never rewritten. And each segment keeps
     * its last batch (emptied if need be), so a copied segment holds data
     * up to its last offset and a remote reader always finds a batch at or
     * after its offset in the segment that covers it. */
    bool tiered;
    uint64_t truncations;
    struct producer_last *producers;
    size_t producer_count, producer_cap;
    struct txn_index_entry *aborted;
    size_t aborted_count;
    struct log_throttler *throttler; /* NULL: unthrottled */
    int64_t unthrottled_reads;       /* bytes read not yet reported to it */
};

/* Caller holds write_lock. Replace the members of every rewritten group by
 * its cleaned file (see docs/architecture.md, Log compaction, for the
 * order). Returns 0, ESTALE when the log changed under the pass (nothing
 * swapped), or another errno value (the log is then offline). */
int clean_swap_in(struct partition_log *log, struct clean_plan *plan, const struct clean_txn *txn, int64_t now_ms,
                  enum log_clean_stop stop_after);
/* Remove <group base><ext> of every rewritten group. */
void clean_remove_output(const char *dir, const struct clean_plan *plan, const char *ext);

#endif
