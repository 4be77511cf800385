/* Aborted transactions of a partition: the in-memory list a read_committed
 * fetch consults, and the per-segment .txnindex files that persist it.
 *
 * File layout (Kafka's), entries of TXN_INDEX_ENTRY_SIZE bytes, big-endian:
 *   Version int16 (0) | ProducerId int64 | FirstOffset int64 |
 *   LastOffset int64 (the ABORT marker) | LastStableOffset int64
 * An entry lives in the .txnindex of the segment holding its marker.
 *
 * Thread-safety: none of its own. struct partition_log owns one list and
 * changes it under its write_lock plus its rwlock held exclusively; readers
 * hold the rwlock shared. */
#ifndef CAIRN_LOG_TXN_INDEX_H
#define CAIRN_LOG_TXN_INDEX_H
#include <stddef.h>
#include <stdint.h>

#define TXN_INDEX_ENTRY_SIZE 34
#define TXN_INDEX_VERSION 0

struct txn_index_entry {
    int64_t producer_id;
    int64_t first_offset;
    int64_t last_offset;
    int64_t last_stable_offset;
};

/* Entries in ascending last_offset (marker) order. */
struct txn_index {
    struct txn_index_entry *entries;
    size_t count, cap;
};

void txn_index_free(struct txn_index *idx);
/* Append e (its last_offset must not be below the last entry's). 0 or ENOMEM. */
int txn_index_add(struct txn_index *idx, const struct txn_index_entry *e);
/* Drop entries whose marker is at or after offset (log truncation). */
void txn_index_truncate(struct txn_index *idx, int64_t offset);
/* Drop entries whose marker is before offset (segments deleted). */
void txn_index_drop_before(struct txn_index *idx, int64_t offset);
/* Kafka's collectAbortedTransactions: entries with last_offset >= fetch_offset
 * and first_offset < upper_bound, in marker order. Calls fn for each; returns
 * how many matched. */
size_t txn_index_collect(const struct txn_index *idx, int64_t fetch_offset, int64_t upper_bound,
                         void (*fn)(void *arg, const struct txn_index_entry *e), void *arg);

/* ---- files ---- */

void txn_index_encode(uint8_t out[TXN_INDEX_ENTRY_SIZE], const struct txn_index_entry *e);
/* 0, or -1 for an unknown version. */
int txn_index_decode(const uint8_t in[TXN_INDEX_ENTRY_SIZE], struct txn_index_entry *e);
/* Add the entries of the file at path to idx (a missing file has none). A
 * torn last entry or a malformed one ends the read. Returns 0 or an errno. */
int txn_index_load_file(struct txn_index *idx, const char *path);
/* Append one entry to the file, created if missing, and sync it: markers are
 * rare and an abort must survive a power cut once acknowledged. */
int txn_index_append_file(const char *path, const struct txn_index_entry *e);
/* Replace the file with entries[0..n) (removes it when n is 0). */
int txn_index_write_file(const char *path, const struct txn_index_entry *entries, size_t n);

#endif
