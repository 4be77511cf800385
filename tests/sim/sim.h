/* Deterministic simulator of a KRaft quorum: voters and observers built on
 * core/raft, a network that delays, drops, duplicates, reorders and
 * partitions messages, disks that fsync late and lose their unsynced tail
 * on a crash, and clocks that drift. Everything derives from one seed, and
 * the invariants are checked after every step. Single-threaded. */
#ifndef CAIRN_SIM_H
#define CAIRN_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "raft/raft.h"

#define SIM_MAX_NODES (RAFT_MAX_VOTERS + 3)
#define SIM_TICK_MS 5
/* After the faults heal, a leader must commit a new client entry within
 * this much simulated time. */
#define SIM_LIVENESS_BOUND_MS 15000

struct sim_rng {
    uint64_t s;
};
uint64_t sim_rand(struct sim_rng *r);
uint64_t sim_below(struct sim_rng *r, uint64_t bound);

enum sim_ev_type {
    SIM_EV_DELIVER = 1,
    SIM_EV_FSYNC,
    SIM_EV_QS_DONE,
    SIM_EV_RESTART,
    SIM_EV_FAULT,
    SIM_EV_CLIENT,
    SIM_EV_CRASH, /* a planned crash of this incarnation */
    /* msg: a Fetch that reached a crashed node; its sender (node) learns
     * that it failed, as a refused connection tells a real one */
    SIM_EV_REFUSED,
};

struct sim_event {
    int64_t time;
    uint64_t seq;
    enum sim_ev_type type;
    int node;
    uint32_t incarnation;
    struct raft_msg msg;
    int64_t offset;
    uint64_t version;
    struct raft_quorum_state qs;
};

struct sim_disk {
    struct raft_entry *entries; /* owned; the written log, synced or not */
    int64_t len, cap;           /* in entries */
    int64_t durable_end;        /* an offset: entries ending at or below it are fsynced */
    struct raft_quorum_state qs;
    bool has_qs;
    int64_t busy_until; /* writes complete in order */
    bool slow;
};

struct sim_node {
    struct raft_node *raft; /* NULL while crashed */
    uint32_t incarnation;
    struct sim_disk disk;
    int64_t drift_ppm;
    int64_t clock_offset;
    int64_t checked_upto; /* committed prefix verified against this node */
};

struct sim_committed {
    int64_t offset;
    int32_t count;
    int32_t epoch;
    int32_t commit_epoch; /* epoch of the node that first reported it committed */
    uint32_t len;
    uint8_t data[16];
};

struct sim_world {
    uint64_t seed;
    bool trace;
    struct sim_rng rng;
    int64_t now;
    int n_voters, n_nodes;
    struct sim_node nodes[SIM_MAX_NODES];

    struct sim_event *heap;
    size_t heap_len, heap_cap;
    uint64_t next_seq;

    /* network */
    bool blocked[SIM_MAX_NODES][SIM_MAX_NODES]; /* [from][to] */
    uint32_t loss_pct, dup_pct;
    int64_t max_delay_ms;
    int64_t election_timeout_ms; /* fetch timeout and backoff follow it */
    int32_t fetch_max_records;   /* small: a lagging voter catches up in steps */
    uint32_t leader_crash_pct;   /* new leaders that crash soon after election */

    /* schedule */
    int64_t fault_end;
    bool healed;
    uint64_t client_seq;
    uint64_t heal_seq; /* client entries from this one on were sent after healing */
    int64_t live_at;   /* when one of them committed; -1 until then */

    /* invariants */
    int32_t *leader_of_epoch;
    int32_t n_epochs;
    struct sim_committed *committed; /* whole entries, in offset order */
    int64_t n_committed, committed_cap;
    int64_t committed_end; /* offset after the last committed entry */
    char violation[256];
    bool liveness_failed; /* the violation is the recovery bound, not safety */

    /* statistics */
    int32_t max_epoch;
    uint64_t crashes, messages;
};

/* sim_world.c */
int sim_world_init(struct sim_world *w, uint64_t seed, bool trace);
void sim_world_free(struct sim_world *w);
/* Runs the seed to the end; returns false on a violation (in w->violation). */
bool sim_world_run(struct sim_world *w);
int64_t sim_local_time(const struct sim_world *w, int node);
void sim_trace(const struct sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sim_check.c */
void sim_violation(struct sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_check_role(struct sim_world *w, int node, enum raft_role role, int32_t epoch);
void sim_check_hw(struct sim_world *w, int node, int64_t hw);
void sim_check_truncate(struct sim_world *w, int node, int64_t offset);
void sim_check_free(struct sim_world *w);
int64_t sim_disk_end(const struct sim_disk *d);
/* Client entries carry 'C' and their sequence number. */
#define SIM_CLIENT_ENTRY_LEN 9

#endif
