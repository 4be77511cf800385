/* What the networked shell needs from storage: the quorum-state record and
 * the log of __cluster_metadata-0. The shell applies the core's outputs
 * through these ops on its own thread, in order, and reports back to the
 * core only what flush / persist_qs said is durable.
 *
 * raft_shell_mem_store is the one implementation today. It is NOT DURABLE:
 * it keeps everything in memory, so a restarted node comes back with no
 * vote and an empty log and catches up from the leader. Losing the vote on
 * a crash can let a node vote twice in one epoch, which Raft's safety
 * argument forbids; it is used only until the on-disk store (the
 * quorum-state file and the log, core/raft/raft_store) is plugged in behind
 * these same ops.
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
    /* Calls fn for every durable entry from offset on, in order; a
     * non-zero return from fn stops the read and is returned. */
    int (*read)(void *store, int64_t offset, int (*fn)(void *arg, const struct raft_entry *e), void *arg, char *err,
                size_t errlen);
    void (*close)(void *store);
};

extern const struct raft_shell_store_ops raft_shell_mem_store_ops;

/* A new, empty in-memory store (NULL when out of memory). */
void *raft_shell_mem_store_create(void);

#endif
