/* What a quorum replica keeps on disk, for the networked shell around the
 * pure core (raft.h): the `quorum-state` file and the Raft log.
 *
 * quorum-state: Kafka's FileQuorumStateStore format, one JSON object
 *   {"clusterId":"...","leaderId":N,"leaderEpoch":N,"votedId":N,
 *    "appliedOffset":N,"currentVoters":[{"voterId":N},...],"data_version":0}
 * replaced atomically (temp file, fsync, rename, fsync of the directory).
 * A file that cannot be read or parsed is an error naming the file; it is
 * never taken for "no state".
 *
 * The log: <log.dir>/__cluster_metadata-0, Kafka record batches (v2) in
 * the partition log's segments. One raft_entry is one record batch, and
 * entry.data is the WHOLE encoded batch (header included): the core never
 * looks inside it, a Fetch response carries it as it is, and the loader
 * parses it as any batch. The batch's baseOffset and partitionLeaderEpoch
 * are set from entry.offset and entry.epoch when it is written (they lie
 * outside the CRC), and its record count must equal entry.count. The one
 * exception is the core's own LeaderChange entry (the RAFT_LEADER_CHANGE_BYTE
 * body): raft_store_entry_batch encodes it as Kafka's LeaderChange control
 * batch (a LeaderChangeMessage v0 naming the leader and the voters), so
 * after a restart that entry's data is the control batch.
 *
 * Ownership and threads: a raft_store is owned by the thread that runs the
 * replica (the Raft thread); nothing here is thread-safe. Entries returned
 * by the read calls are owned by the caller (raft_store_entries_free). */
#ifndef CAIRN_RAFT_STORE_H
#define CAIRN_RAFT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"

#define RAFT_STORE_QUORUM_STATE_FILE "quorum-state"
#define RAFT_STORE_CLUSTER_ID_MAX 64

/* The quorum-state file's content: the core's quorum state plus what Kafka
 * stores beside it. */
struct raft_store_qs {
    char cluster_id[RAFT_STORE_CLUSTER_ID_MAX];
    struct raft_quorum_state qs;
    int64_t applied_offset;
    int32_t voters[RAFT_MAX_VOTERS];
    int n_voters;
};

/* Writes <dir>/quorum-state atomically and durably. Returns 0, or -1 with
 * err naming the file. */
int raft_store_qs_write(const char *dir, const struct raft_store_qs *qs, char *err, size_t errlen);
/* Reads <dir>/quorum-state: 1 when read, 0 when there is no such file (a
 * first start), -1 with err naming the file when it is unreadable,
 * corrupt or holds out-of-range fields. */
int raft_store_qs_read(const char *dir, struct raft_store_qs *out, char *err, size_t errlen);

struct raft_store;

/* Opens (creating when missing) <parent_dir>/__cluster_metadata-0 with full
 * recovery: a torn or corrupt tail is cut to the last whole batch. */
int raft_store_open(const char *parent_dir, struct raft_store **out, char *err, size_t errlen);
void raft_store_close(struct raft_store *store);
/* Segment rolling of the log (metadata.log.segment.bytes / .ms): cleaning
 * behind a snapshot deletes whole segments only, so smaller ones free disk
 * sooner. Takes effect at the next append; values <= 0 keep the current. */
void raft_store_set_segments(struct raft_store *store, int64_t segment_bytes, int64_t segment_ms);

/* Reads the log back as the entries raft_node_create takes (one per batch,
 * from the log start). *entries_out is NULL when the log is empty. Returns 0,
 * or -1 with err. */
int raft_store_recover(struct raft_store *store, struct raft_entry **entries_out, int64_t *n_out, char *err,
                       size_t errlen);

/* The encoded batch an entry stands for, with its offset and epoch set
 * (the LeaderChange body becomes a control batch). *out is malloc'd.
 * Returns 0, or -1 with err when data is no single batch of entry.count
 * records. */
int raft_store_entry_batch(const struct raft_entry *entry, uint8_t **out, size_t *out_len, char *err, size_t errlen);

/* The core's own LeaderChange body (raft.h), before it became a batch. */
bool raft_store_is_leader_change_body(const struct raft_entry *entry);

/* RAFT_OUT_APPEND: writes the entry at entry.offset, which must be the log
 * end. Not durable until raft_store_flush. Returns 0, or -1 with err. */
int raft_store_append(struct raft_store *store, const struct raft_entry *entry, char *err, size_t errlen);
/* RAFT_OUT_TRUNCATE: drops every batch holding offsets >= offset. */
int raft_store_truncate(struct raft_store *store, int64_t offset, char *err, size_t errlen);
/* Makes every batch below offset durable (one fsync covers what is
 * written by then); *flushed_out gets the offset to hand to
 * raft_node_flushed, at least offset (capped at the log end). Returns 0,
 * or -1 with err (the disk failed: the caller stops the replica). */
int raft_store_flush(struct raft_store *store, int64_t offset, int64_t *flushed_out, char *err, size_t errlen);
int64_t raft_store_end_offset(struct raft_store *store);

/* Whole entries from offset (an entry boundary) for a Fetch answer: at
 * least one when any is there, then more while their data stays within
 * max_bytes. Returns 0 (with *n_out possibly 0 at the log end), or -1 with
 * err (offset out of range, a read error). */
int raft_store_read(struct raft_store *store, int64_t offset, int32_t max_bytes, struct raft_entry **entries_out,
                    int64_t *n_out, char *err, size_t errlen);

void raft_store_entries_free(struct raft_entry *entries, int64_t n);

/* Log start (KIP-630). The first offset the log holds. After a restart it
 * may be below where raft_store_delete_before last moved it (whole
 * segments only are deleted), never above. */
int64_t raft_store_start_offset(struct raft_store *store);
/* Cleaning behind a snapshot: the log starts at offset (at most the log
 * end); whole segments below it are deleted. Returns 0, or -1 with err. */
int raft_store_delete_before(struct raft_store *store, int64_t offset, char *err, size_t errlen);
/* After installing a snapshot ending at offset: drops every batch and
 * starts an empty log there (Kafka's truncateFullyAndStartAt). Returns 0,
 * or -1 with err. */
int raft_store_start_at(struct raft_store *store, int64_t offset, char *err, size_t errlen);

#endif
