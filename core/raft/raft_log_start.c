/* The log's start (KIP-630): cleaning the log behind a snapshot, and a
 * follower behind the leader's start catching up through the leader's
 * snapshot instead of the entries it no longer has. */
#include <stdlib.h>
#include <string.h>

#include "raft/raft_internal.h"

int raft_node_advance_log_start(struct raft_node *n, int64_t offset, int32_t epoch)
{
    if (n->failed)
        return RAFT_ERR_NOMEM;
    if (offset <= n->log_start)
        return RAFT_OK;
    /* Only committed entries may go: an uncommitted one can still be
     * truncated, and a snapshot never covers it. */
    if (offset > n->hw || offset > n->flushed_end || raft_log_boundary(n, offset) != offset)
        return RAFT_ERR_INVALID;
    int64_t keep = raft_log_index(n, offset);
    if (keep == 0 || n->log[keep - 1].epoch != epoch)
        return RAFT_ERR_INVALID;
    for (int64_t i = 0; i < keep; i++) {
        n->log_bytes -= n->log[i].len;
        free(n->log[i].data);
    }
    memmove(n->log, n->log + keep, (size_t)(n->log_len - keep) * sizeof *n->log);
    n->log_len -= keep;
    n->log_start = offset;
    n->log_start_epoch = epoch;
    /* The index shrinks with the log once most of it is unused. */
    if (n->log_cap > 64 && n->log_len < n->log_cap / 4) {
        int64_t cap = n->log_len * 2 > 64 ? n->log_len * 2 : 64;
        struct raft_entry *smaller = realloc(n->log, (size_t)cap * sizeof *smaller);
        if (smaller) {
            n->log = smaller;
            n->log_cap = cap;
        }
    }
    return RAFT_OK;
}

void raft_node_snapshot_progress(struct raft_node *n, int64_t now_ms)
{
    if (now_ms > n->now)
        n->now = now_ms;
    if (n->failed || !n->snapshot_pending || n->role != RAFT_FOLLOWER)
        return;
    n->leader_contact = n->now;
    n->fetch_deadline = n->now + n->cfg.fetch_timeout_ms;
}

void raft_node_snapshot_done(struct raft_node *n, int64_t now_ms, bool installed, int64_t offset, int32_t epoch)
{
    if (now_ms > n->now)
        n->now = now_ms;
    if (n->failed)
        return;
    n->snapshot_pending = false;
    n->fetch_inflight = false;
    /* A failed download is not retried in a tight loop. */
    n->next_fetch_at = installed ? n->now : n->now + n->cfg.fetch_idle_ms;
    /* The snapshot is committed state of the quorum whoever leads now, so
     * a late install is still right; one not past this start adds nothing. */
    if (installed && offset > n->log_start && offset >= 0) {
        for (int64_t i = 0; i < n->log_len; i++)
            free(n->log[i].data);
        n->log_len = 0;
        n->log_bytes = 0;
        n->log_start = offset;
        n->log_start_epoch = epoch;
        n->flushed_end = offset;
        if (n->role == RAFT_FOLLOWER) {
            n->leader_contact = n->now;
            n->fetch_deadline = n->now + n->cfg.fetch_timeout_ms;
        }
        raft_raise_hw(n, offset);
    }
    raft_replication_tick(n);
}

int64_t raft_node_log_bytes(const struct raft_node *n)
{
    return n->log_bytes;
}
