/* Shared steps for the quorum state machine's unit tests: draining its
 * outputs, nodes with a log, votes, an election, fetches. */
#ifndef CAIRN_TEST_RAFT_NODE_SUPPORT_H
#define CAIRN_TEST_RAFT_NODE_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raft/raft.h"

#define MAX_OUT 64

struct outs {
    struct raft_output o[MAX_OUT];
    int n;
};

static inline void drain(struct raft_node *node, struct outs *outs)
{
    struct raft_output o;
    outs->n = 0;
    while (raft_node_poll(node, &o)) {
        assert_true(outs->n < MAX_OUT);
        outs->o[outs->n++] = o;
    }
}

static inline void outs_free(struct outs *outs)
{
    for (int i = 0; i < outs->n; i++)
        raft_output_clear(&outs->o[i]);
    outs->n = 0;
}

static inline int count_type(const struct outs *outs, enum raft_output_type t)
{
    int c = 0;
    for (int i = 0; i < outs->n; i++)
        c += outs->o[i].type == t;
    return c;
}

static inline const struct raft_output *find_send(const struct outs *outs, enum raft_msg_type t, int dst)
{
    for (int i = 0; i < outs->n; i++)
        if (outs->o[i].type == RAFT_OUT_SEND && outs->o[i].msg.type == t && (dst < 0 || outs->o[i].msg.dst == dst))
            return &outs->o[i];
    return NULL;
}

/* The last output of a type: for PERSIST_QS, the newest quorum state. */
static inline const struct raft_output *find_type(const struct outs *outs, enum raft_output_type t)
{
    for (int i = outs->n - 1; i >= 0; i--)
        if (outs->o[i].type == t)
            return &outs->o[i];
    return NULL;
}

/* A node of a 3-voter quorum {0,1,2} whose log holds one entry per epoch
 * in `epochs` of counts[i] records (1 when counts is NULL), all durable. */
static inline struct raft_node *make_batches(int32_t id, const struct raft_quorum_state *qs, const int32_t *epochs,
                                             const int32_t *counts, int n_entries)
{
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = id;
    cfg.n_voters = 3;
    for (int i = 0; i < 3; i++)
        cfg.voters[i] = i;
    struct raft_entry entries[16];
    uint8_t body = 'x';
    int64_t offset = 0;
    for (int i = 0; i < n_entries; i++) {
        int32_t count = counts ? counts[i] : 1;
        entries[i] = (struct raft_entry){.offset = offset, .epoch = epochs[i], .count = count, .len = 1, .data = &body};
        offset += count;
    }
    struct raft_node *node;
    assert_int_equal(raft_node_create(&node, &cfg, qs, entries, n_entries, 0), RAFT_OK);
    struct outs outs;
    drain(node, &outs);
    outs_free(&outs);
    return node;
}

static inline struct raft_node *make_node(int32_t id, const struct raft_quorum_state *qs, const int32_t *epochs,
                                          int n_entries)
{
    return make_batches(id, qs, epochs, NULL, n_entries);
}

static inline struct raft_msg vote_req(int32_t from, int32_t to, int32_t epoch, int32_t last_epoch, int64_t last_offset,
                                       bool pre_vote)
{
    struct raft_msg m = {.type = RAFT_MSG_VOTE_REQ, .src = from, .dst = to};
    m.u.vote_req = (struct raft_vote_req){.candidate_epoch = epoch,
                                          .candidate_id = from,
                                          .last_offset_epoch = last_epoch,
                                          .last_offset = last_offset,
                                          .pre_vote = pre_vote};
    return m;
}

/* Delivers a vote request and persists whatever quorum state it produced;
 * returns whether the vote was granted. */
static inline bool ask_vote(struct raft_node *node, struct raft_msg *req, int64_t now)
{
    struct outs outs;
    raft_node_receive(node, now, req);
    drain(node, &outs);
    const struct raft_output *persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
    const struct raft_output *resp = find_send(&outs, RAFT_MSG_VOTE_RESP, req->src);
    if (persist) {
        /* Nothing answers before the vote is durable. */
        assert_null(resp);
        uint64_t version = persist->qs_version;
        outs_free(&outs);
        raft_node_qs_persisted(node, now, version);
        drain(node, &outs);
        resp = find_send(&outs, RAFT_MSG_VOTE_RESP, req->src);
    }
    assert_non_null(resp);
    bool granted = resp->msg.u.vote_resp.vote_granted;
    outs_free(&outs);
    return granted;
}

/* Elects node 0 of a 3-voter quorum with node 1's votes; returns the time. */
static inline int64_t elect(struct raft_node *node)
{
    struct outs outs;
    int64_t now = 2001; /* past any randomized election timeout */
    raft_node_tick(node, now);
    drain(node, &outs);
    assert_int_equal(raft_node_role(node), RAFT_PROSPECTIVE);
    outs_free(&outs);
    struct raft_msg resp = {.type = RAFT_MSG_VOTE_RESP, .src = 1, .dst = 0};
    resp.u.vote_resp = (struct raft_vote_resp){
        .leader_id = RAFT_NO_ID, .leader_epoch = raft_node_epoch(node), .vote_granted = true, .pre_vote = true};
    raft_node_receive(node, now, &resp);
    drain(node, &outs);
    assert_int_equal(raft_node_role(node), RAFT_CANDIDATE);
    const struct raft_output *persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
    assert_non_null(persist);
    assert_null(find_send(&outs, RAFT_MSG_VOTE_REQ, -1));
    uint64_t version = persist->qs_version;
    outs_free(&outs);
    raft_node_qs_persisted(node, now, version);
    drain(node, &outs);
    assert_non_null(find_send(&outs, RAFT_MSG_VOTE_REQ, 1));
    outs_free(&outs);
    resp.u.vote_resp.pre_vote = false;
    resp.u.vote_resp.leader_epoch = raft_node_epoch(node);
    raft_node_receive(node, now, &resp);
    drain(node, &outs);
    assert_int_equal(raft_node_role(node), RAFT_LEADER);
    persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
    if (persist)
        raft_node_qs_persisted(node, now, persist->qs_version);
    outs_free(&outs);
    drain(node, &outs);
    outs_free(&outs);
    return now;
}

static inline struct raft_msg fetch_req(int32_t from, int32_t epoch, int64_t offset, int32_t last_epoch)
{
    struct raft_msg m = {.type = RAFT_MSG_FETCH_REQ, .src = from, .dst = 0};
    m.u.fetch_req = (struct raft_fetch_req){
        .replica_id = from, .current_leader_epoch = epoch, .fetch_offset = offset, .last_fetched_epoch = last_epoch};
    return m;
}

/* The log's bytes the slow way: every entry's length, start to end. */
static inline int64_t walk_bytes(const struct raft_node *node)
{
    int64_t bytes = 0;
    for (int64_t off = raft_node_log_start(node); off < raft_node_end_offset(node);) {
        const struct raft_entry *e = raft_node_entry(node, off);
        assert_non_null(e);
        bytes += e->len;
        off = e->offset + e->count;
    }
    return bytes;
}

/* Delivers a fetch to leader 0 and drops whatever comes out. */
static inline void fetch_at(struct raft_node *node, int64_t now, int32_t from, int64_t offset, int32_t last_epoch)
{
    struct raft_msg m = fetch_req(from, raft_node_epoch(node), offset, last_epoch);
    struct outs outs;
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    outs_free(&outs);
}

#endif
