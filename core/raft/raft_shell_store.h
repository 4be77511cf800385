/* What the networked shell needs from storage: the quorum-state record and
 * the log of __cluster_metadata-0. The shell applies the core's outputs
 * through these ops on its own thread, in order, and reports back to the
 * core only what flush / persist_qs said is durable.
 *
 * raft_shell_disk_store is the implementation: the quorum-state file and
 * the Raft log of raft_store.h, persist_qs durable before it returns and
 * flush an fsync. A restarted voter comes back with its vote and its log.
 *
 * Thread-safety: a store is used by one thread at a time (the shell's raft
 * thread once started). */
#ifndef CAIRN_RAFT_RAFT_SHELL_STORE_H
#define CAIRN_RAFT_RAFT_SHELL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raft/raft.h"

/* Each returns 0, or -1 with err filled. */
struct raft_shell_store_ops {
    /* The last persisted quorum state; *found false when none was. */
    int (*load_qs)(void *store, struct raft_quorum_state *qs, bool *found, char *err, size_t errlen);
    /* Replaces the quorum state durably before returning. */
    int (*persist_qs)(void *store, const struct raft_quorum_state *qs, char *err, size_t errlen);
    /* Writes e at e->offset, which is the store's end offset. Durable only
     * after flush. */
    int (*append)(void *store, const struct raft_entry *e, char *err, size_t errlen);
    /* Drops every entry at or past offset. */
    int (*truncate)(void *store, int64_t offset, char *err, size_t errlen);
    /* Makes every entry written so far durable; *end gets the offset after
     * the last durable one. */
    int (*flush)(void *store, int64_t *end, char *err, size_t errlen);
    /* Calls fn for the entries from offset (an entry boundary) on, in
     * order: at least one when any is there, then more while their bytes
     * stay within max_bytes. A non-zero return from fn stops the read and
     * is returned. The entry passed to fn is valid during the call. */
    int (*read)(void *store, int64_t offset, int32_t max_bytes, int (*fn)(void *arg, const struct raft_entry *e),
                void *arg, char *err, size_t errlen);
    /* Log start (KIP-630): the first offset held; moving it up behind a
     * snapshot (whole segments below it go); restarting an empty log at a
     * downloaded snapshot's end. */
    int64_t (*start_offset)(void *store);
    int (*delete_before)(void *store, int64_t offset, char *err, size_t errlen);
    int (*start_at)(void *store, int64_t offset, char *err, size_t errlen);
    void (*close)(void *store);
};

extern const struct raft_shell_store_ops raft_shell_disk_store_ops;

/* Opens the quorum's store under the metadata log directory dir: the log
 * in <dir>/__cluster_metadata-0 and the quorum-state file beside its
 * segments. The cluster id and the voters are written into every quorum
 * state; a quorum-state of another cluster is refused on load. NULL with
 * err filled on failure. */
void *raft_shell_disk_store_open(const char *dir, const char *cluster_id, const int32_t *voters, int n_voters,
                                 char *err, size_t errlen);
/* The log's segment size and age (raft_store_set_segments). */
void raft_shell_disk_store_set_segments(void *store, int64_t segment_bytes, int64_t segment_ms);

#endif
