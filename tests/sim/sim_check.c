/* The safety invariants, checked as each node reports them: one leader per
 * epoch, and one committed sequence of which every node's committed prefix
 * is a prefix, never truncated or changed afterwards. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_violation(struct sim_world *w, const char *fmt, ...)
{
    if (w->violation[0])
        return; /* the first one is the one to replay */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->violation, sizeof w->violation, fmt, ap);
    va_end(ap);
    sim_trace(w, "VIOLATION: %s", w->violation);
}

static void check_leader_log(struct sim_world *w, int node, int32_t epoch);

void sim_check_role(struct sim_world *w, int node, enum raft_role role, int32_t epoch)
{
    if (epoch > w->max_epoch)
        w->max_epoch = epoch;
    if (role != RAFT_LEADER)
        return;
    if (epoch >= w->n_epochs) {
        int32_t n = w->n_epochs ? w->n_epochs : 16;
        while (n <= epoch)
            n *= 2;
        int32_t *grown = realloc(w->leader_of_epoch, (size_t)n * sizeof *grown);
        if (!grown) {
            sim_violation(w, "simulator out of memory");
            return;
        }
        for (int32_t i = w->n_epochs; i < n; i++)
            grown[i] = RAFT_NO_ID;
        w->leader_of_epoch = grown;
        w->n_epochs = n;
    }
    if (w->leader_of_epoch[epoch] != RAFT_NO_ID && w->leader_of_epoch[epoch] != node)
        sim_violation(w, "two leaders in epoch %d: node %d and node %d", epoch, w->leader_of_epoch[epoch], node);
    w->leader_of_epoch[epoch] = node;
    check_leader_log(w, node, epoch);
}

static bool push_committed(struct sim_world *w, const struct raft_entry *e, int32_t commit_epoch)
{
    if (w->n_committed == w->committed_cap) {
        int64_t cap = w->committed_cap ? w->committed_cap * 2 : 256;
        struct sim_committed *grown = realloc(w->committed, (size_t)cap * sizeof *grown);
        if (!grown)
            return false;
        w->committed = grown;
        w->committed_cap = cap;
    }
    struct sim_committed *c = &w->committed[w->n_committed++];
    memset(c, 0, sizeof *c);
    c->offset = e->offset;
    c->count = e->count;
    c->epoch = e->epoch;
    c->commit_epoch = commit_epoch;
    c->len = e->len;
    memcpy(c->data, e->data, e->len < sizeof c->data ? e->len : sizeof c->data);
    w->committed_end = e->offset + e->count;
    return true;
}

/* The committed entry starting at offset, or NULL. */
static const struct sim_committed *committed_at(const struct sim_world *w, int64_t offset)
{
    int64_t lo = 0, hi = w->n_committed;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (w->committed[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->n_committed && w->committed[lo].offset == offset ? &w->committed[lo] : NULL;
}

static bool same_entry(const struct sim_committed *c, const struct raft_entry *e)
{
    size_t n = e->len < sizeof c->data ? e->len : sizeof c->data;
    return c->epoch == e->epoch && c->count == e->count && c->len == e->len && memcmp(c->data, e->data, n) == 0;
}

/* Leader completeness: a leader of epoch E holds every entry committed in
 * an epoch below E. Checked when it is elected, before it could overwrite
 * anything, so a lost commit shows even if the new leader never commits. */
static void check_leader_log(struct sim_world *w, int node, int32_t epoch)
{
    const struct raft_node *r = w->nodes[node].raft;
    for (int64_t i = 0; i < w->n_committed; i++) {
        const struct sim_committed *c = &w->committed[i];
        if (c->commit_epoch >= epoch)
            continue;
        const struct raft_entry *e = raft_node_entry(r, c->offset);
        if (!e || e->offset != c->offset || !same_entry(c, e)) {
            sim_violation(w,
                          "node %d leads epoch %d without the entry at %lld (epoch %d) committed in epoch %d; it "
                          "holds %s",
                          node, epoch, (long long)c->offset, c->epoch, c->commit_epoch,
                          e ? "another entry there" : "nothing there");
            return;
        }
    }
}

static uint64_t client_seq_of(const struct raft_entry *e)
{
    uint64_t seq = 0;
    if (e->len != SIM_CLIENT_ENTRY_LEN || e->data[0] != 'C')
        return UINT64_MAX;
    memcpy(&seq, e->data + 1, sizeof seq);
    return seq;
}

/* The core's running byte count (what metadata.max.retention.bytes reads)
 * is the sum of its entries, however the log got where it is. */
static void check_log_bytes(struct sim_world *w, int node)
{
    const struct raft_node *r = w->nodes[node].raft;
    int64_t bytes = 0;
    for (int64_t off = raft_node_log_start(r); off < raft_node_end_offset(r);) {
        const struct raft_entry *e = raft_node_entry(r, off);
        if (!e)
            break;
        bytes += e->len;
        off = e->offset + e->count;
    }
    if (bytes != raft_node_log_bytes(r))
        sim_violation(w, "node %d counts %lld log bytes, its entries hold %lld", node,
                      (long long)raft_node_log_bytes(r), (long long)bytes);
}

/* Checks the entries a node's new HW commits, whole batches at a time. */
void sim_check_hw(struct sim_world *w, int node, int64_t hw)
{
    struct sim_node *sn = &w->nodes[node];
    check_log_bytes(w, node);
    for (int64_t off = sn->checked_upto; off < hw;) {
        const struct raft_entry *e = raft_node_entry(sn->raft, off);
        if (!e) {
            sim_violation(w, "node %d reports HW %lld past its log end %lld", node, (long long)hw,
                          (long long)raft_node_end_offset(sn->raft));
            return;
        }
        if (e->offset != off || e->offset + e->count > hw) {
            sim_violation(w, "node %d commits part of the batch at %lld..%lld (HW %lld)", node, (long long)e->offset,
                          (long long)(e->offset + e->count - 1), (long long)hw);
            return;
        }
        if (off == w->committed_end) {
            if (!push_committed(w, e, raft_node_epoch(sn->raft))) {
                sim_violation(w, "simulator out of memory");
                return;
            }
            uint64_t seq = client_seq_of(e);
            if (w->healed && seq != UINT64_MAX && seq >= w->heal_seq && w->live_at < 0) {
                w->live_at = w->now;
                sim_trace(w, "liveness: client entry %llu committed at offset %lld", (unsigned long long)seq,
                          (long long)off);
            }
        } else {
            const struct sim_committed *c = committed_at(w, off);
            if (!c || !same_entry(c, e)) {
                sim_violation(w,
                              "node %d committed offset %lld as epoch %d (%d records), but epoch %d (%d records) "
                              "was committed there before",
                              node, (long long)off, e->epoch, e->count, c ? c->epoch : -1, c ? c->count : 0);
                return;
            }
        }
        off = e->offset + e->count;
    }
    if (hw > sn->checked_upto)
        sn->checked_upto = hw;
}

void sim_check_truncate(struct sim_world *w, int node, int64_t offset)
{
    check_log_bytes(w, node);
    if (offset < w->nodes[node].checked_upto)
        sim_violation(w, "node %d truncated its log to %lld below its own HW %lld", node, (long long)offset,
                      (long long)w->nodes[node].checked_upto);
}

void sim_check_free(struct sim_world *w)
{
    free(w->leader_of_epoch);
    free(w->committed);
    w->leader_of_epoch = NULL;
    w->committed = NULL;
}
