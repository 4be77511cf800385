/* Single steps of the quorum state machine: vote rules, pre-vote, the
 * quorum state persisted before a vote leaves, BeginQuorumEpoch, the high
 * watermark rules and divergence truncation. */
#include <setjmp.h>
#include <stdarg.h>
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

static void drain(struct raft_node *node, struct outs *outs)
{
    struct raft_output o;
    outs->n = 0;
    while (raft_node_poll(node, &o)) {
        assert_true(outs->n < MAX_OUT);
        outs->o[outs->n++] = o;
    }
}

static void outs_free(struct outs *outs)
{
    for (int i = 0; i < outs->n; i++)
        raft_output_clear(&outs->o[i]);
    outs->n = 0;
}

static int count_type(const struct outs *outs, enum raft_output_type t)
{
    int c = 0;
    for (int i = 0; i < outs->n; i++)
        c += outs->o[i].type == t;
    return c;
}

static const struct raft_output *find_send(const struct outs *outs, enum raft_msg_type t, int dst)
{
    for (int i = 0; i < outs->n; i++)
        if (outs->o[i].type == RAFT_OUT_SEND && outs->o[i].msg.type == t && (dst < 0 || outs->o[i].msg.dst == dst))
            return &outs->o[i];
    return NULL;
}

/* The last output of a type: for PERSIST_QS, the newest quorum state. */
static const struct raft_output *find_type(const struct outs *outs, enum raft_output_type t)
{
    for (int i = outs->n - 1; i >= 0; i--)
        if (outs->o[i].type == t)
            return &outs->o[i];
    return NULL;
}

/* A node of a 3-voter quorum {0,1,2} whose log holds one entry per epoch
 * in `epochs` of counts[i] records (1 when counts is NULL), all durable. */
static struct raft_node *make_batches(int32_t id, const struct raft_quorum_state *qs, const int32_t *epochs,
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

static struct raft_node *make_node(int32_t id, const struct raft_quorum_state *qs, const int32_t *epochs, int n_entries)
{
    return make_batches(id, qs, epochs, NULL, n_entries);
}

static struct raft_msg vote_req(int32_t from, int32_t to, int32_t epoch, int32_t last_epoch, int64_t last_offset,
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
static bool ask_vote(struct raft_node *node, struct raft_msg *req, int64_t now)
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

static void test_vote_log_check(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 2};
    struct raft_quorum_state qs = {.leader_epoch = 2, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, epochs, 3);

    /* Behind by last epoch, then by end offset: refused. */
    struct raft_msg req = vote_req(1, 0, 3, 1, 10, false);
    assert_false(ask_vote(node, &req, 1));
    assert_int_equal(raft_node_epoch(node), 3); /* the epoch moved on all the same */
    req = vote_req(2, 0, 3, 2, 2, false);
    assert_false(ask_vote(node, &req, 2));
    /* As up to date: granted. */
    req = vote_req(2, 0, 3, 2, 3, false);
    assert_true(ask_vote(node, &req, 3));
    raft_node_destroy(node);
}

static void test_vote_once_per_epoch(void **state)
{
    (void)state;
    struct raft_node *node = make_node(0, NULL, NULL, 0);
    struct raft_msg req = vote_req(1, 0, 1, 0, 0, false);
    assert_true(ask_vote(node, &req, 1));
    req = vote_req(2, 0, 1, 0, 0, false);
    assert_false(ask_vote(node, &req, 2));
    req = vote_req(1, 0, 1, 0, 0, false); /* a retry from the same candidate */
    assert_true(ask_vote(node, &req, 3));
    raft_node_destroy(node);

    /* The vote survives a restart through the persisted quorum state. */
    struct raft_quorum_state qs = {.leader_epoch = 1, .voted_id = 1, .leader_id = RAFT_NO_ID};
    node = make_node(0, &qs, NULL, 0);
    req = vote_req(2, 0, 1, 0, 0, false);
    assert_false(ask_vote(node, &req, 1));
    raft_node_destroy(node);
}

/* Delivers a vote request that must be answered without persisting
 * anything; returns the answer. */
static struct raft_vote_resp answer_unpersisted(struct raft_node *node, struct raft_msg *req, int64_t now)
{
    struct outs outs;
    raft_node_receive(node, now, req);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_PERSIST_QS), 0);
    const struct raft_output *resp = find_send(&outs, RAFT_MSG_VOTE_RESP, req->src);
    assert_non_null(resp);
    struct raft_vote_resp answer = resp->msg.u.vote_resp;
    outs_free(&outs);
    return answer;
}

static void test_pre_vote_keeps_epoch(void **state)
{
    (void)state;
    struct raft_quorum_state qs = {.leader_epoch = 4, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, NULL, 0);
    struct raft_msg req = vote_req(1, 0, 5, 0, 0, true);
    struct raft_vote_resp answer = answer_unpersisted(node, &req, 1);
    assert_true(answer.vote_granted);
    assert_int_equal(answer.leader_epoch, 4);
    assert_int_equal(raft_node_epoch(node), 4);
    /* A pre-vote is no vote: a real vote for another candidate still goes. */
    req = vote_req(2, 0, 5, 0, 0, false);
    assert_true(ask_vote(node, &req, 2));
    raft_node_destroy(node);
}

static void test_observer_never_votes(void **state)
{
    (void)state;
    struct raft_node *node = make_node(5, NULL, NULL, 0);
    assert_false(raft_node_is_voter(node));
    struct raft_msg req = vote_req(1, 5, 1, 0, 0, false);
    assert_false(answer_unpersisted(node, &req, 1).vote_granted);
    struct outs outs;
    /* Nor does it ever stand: long past any timeout it only asks voters
     * who leads. */
    raft_node_tick(node, 100000);
    drain(node, &outs);
    assert_int_equal(raft_node_role(node), RAFT_UNATTACHED);
    assert_null(find_send(&outs, RAFT_MSG_VOTE_REQ, -1));
    assert_non_null(find_send(&outs, RAFT_MSG_FETCH_REQ, -1));
    outs_free(&outs);
    raft_node_destroy(node);
}

static void test_begin_epoch_makes_follower(void **state)
{
    (void)state;
    struct raft_node *node = make_node(0, NULL, NULL, 0);
    struct raft_msg m = {.type = RAFT_MSG_BEGIN_EPOCH_REQ, .src = 2, .dst = 0};
    m.u.begin_req = (struct raft_begin_epoch_req){.leader_id = 2, .leader_epoch = 7};
    struct outs outs;
    raft_node_receive(node, 1, &m);
    drain(node, &outs);
    assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
    assert_int_equal(raft_node_epoch(node), 7);
    assert_int_equal(raft_node_leader(node), 2);
    const struct raft_output *persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
    assert_non_null(persist);
    assert_int_equal(persist->qs.leader_epoch, 7);
    assert_int_equal(persist->qs.leader_id, 2);
    uint64_t version = persist->qs_version;
    outs_free(&outs);
    raft_node_qs_persisted(node, 1, version);
    drain(node, &outs);
    assert_non_null(find_send(&outs, RAFT_MSG_BEGIN_EPOCH_RESP, 2));
    assert_non_null(find_send(&outs, RAFT_MSG_FETCH_REQ, 2));
    outs_free(&outs);

    /* A follower still hearing from its leader refuses pre-votes. */
    struct raft_msg req = vote_req(1, 0, 8, 9, 100, true);
    assert_false(ask_vote(node, &req, 2));
    raft_node_destroy(node);
}

/* Elects node 0 of a 3-voter quorum with node 1's votes; returns the time. */
static int64_t elect(struct raft_node *node)
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

static struct raft_msg fetch_req(int32_t from, int32_t epoch, int64_t offset, int32_t last_epoch)
{
    struct raft_msg m = {.type = RAFT_MSG_FETCH_REQ, .src = from, .dst = 0};
    m.u.fetch_req = (struct raft_fetch_req){
        .replica_id = from, .current_leader_epoch = epoch, .fetch_offset = offset, .last_fetched_epoch = last_epoch};
    return m;
}

/* The log's bytes the slow way: every entry's length, start to end. */
static int64_t walk_bytes(const struct raft_node *node)
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

/* The running count retention reads (metadata.max.retention.bytes) is
 * the walk's after a restart, appends, and cleaning behind a snapshot. */
static void test_log_bytes_follow_appends_and_cleaning(void **state)
{
    (void)state;
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 0;
    cfg.n_voters = 3;
    for (int i = 0; i < 3; i++)
        cfg.voters[i] = i;
    static uint8_t body[300];
    struct raft_entry restored[] = {{.offset = 0, .epoch = 1, .count = 2, .len = 10, .data = body},
                                    {.offset = 2, .epoch = 1, .count = 1, .len = 20, .data = body},
                                    {.offset = 3, .epoch = 1, .count = 3, .len = 30, .data = body}};
    struct raft_quorum_state qs = {.leader_epoch = 1, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node;
    assert_int_equal(raft_node_create(&node, &cfg, &qs, restored, 3, 0), RAFT_OK);
    struct outs outs;
    drain(node, &outs);
    outs_free(&outs);
    assert_int_equal(raft_node_log_bytes(node), 60);
    assert_int_equal(walk_bytes(node), 60);

    int64_t now = elect(node); /* the leader's LeaderChange entry */
    int32_t epoch = raft_node_epoch(node);
    assert_true(raft_node_log_bytes(node) > 60);
    assert_int_equal(raft_node_log_bytes(node), walk_bytes(node));
    int64_t offset = -1;
    assert_int_equal(raft_node_append(node, now, body, 300, 4, &offset), RAFT_OK);
    assert_int_equal(raft_node_append(node, now, body, 7, 1, &offset), RAFT_OK);
    drain(node, &outs);
    outs_free(&outs);
    int64_t all = raft_node_log_bytes(node);
    assert_int_equal(all, walk_bytes(node));

    /* Committed and cleaned behind a snapshot at offset 3 (epoch 1). */
    int64_t end = raft_node_end_offset(node);
    raft_node_flushed(node, now, end);
    struct raft_msg m = fetch_req(1, epoch, end, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    outs_free(&outs);
    assert_int_equal(raft_node_high_watermark(node), end);
    assert_int_equal(raft_node_advance_log_start(node, 3, 1), RAFT_OK);
    assert_int_equal(raft_node_log_bytes(node), all - 30);
    assert_int_equal(raft_node_log_bytes(node), walk_bytes(node));
    /* A refused move changes nothing. */
    assert_int_equal(raft_node_advance_log_start(node, end + 1, epoch), RAFT_ERR_INVALID);
    assert_int_equal(raft_node_log_bytes(node), all - 30);
    assert_int_equal(raft_node_advance_log_start(node, end, epoch), RAFT_OK);
    assert_int_equal(raft_node_log_bytes(node), 0);
    assert_int_equal(walk_bytes(node), 0);
    assert_int_equal(raft_node_append(node, now, body, 5, 1, &offset), RAFT_OK);
    assert_int_equal(raft_node_log_bytes(node), 5);
    assert_int_equal(walk_bytes(node), 5);
    drain(node, &outs);
    outs_free(&outs);
    raft_node_destroy(node);
}

static void test_hw_waits_for_own_epoch(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 1};
    struct raft_quorum_state qs = {.leader_epoch = 1, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, epochs, 3);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    assert_int_equal(epoch, 2);
    assert_int_equal(raft_node_end_offset(node), 4); /* the LeaderChange entry */
    assert_int_equal(raft_node_entry(node, 3)->epoch, 2);

    /* A voter holds the three old entries: a majority, but of epoch 1. */
    struct outs outs;
    struct raft_msg m = fetch_req(1, epoch, 3, 1);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_HIGH_WATERMARK), 0);
    const struct raft_output *resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 1);
    assert_non_null(resp);
    assert_int_equal(resp->msg.u.fetch_resp.n_records, 1);
    assert_int_equal(resp->msg.u.fetch_resp.diverging_end_offset, -1);
    outs_free(&outs);

    /* The voter fetched past the new epoch's entry, but the leader has not
     * fsynced it: still no majority. */
    m = fetch_req(1, epoch, 4, 2);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_HIGH_WATERMARK), 0);
    outs_free(&outs);

    raft_node_flushed(node, now, 4);
    drain(node, &outs);
    const struct raft_output *hw = find_type(&outs, RAFT_OUT_HIGH_WATERMARK);
    assert_non_null(hw);
    assert_int_equal(hw->offset, 4);
    outs_free(&outs);

    /* Observers do not count: only the observer has entry 4. */
    int64_t off;
    assert_int_equal(raft_node_append(node, now, "y", 1, 1, &off), RAFT_OK);
    assert_int_equal(off, 4);
    raft_node_flushed(node, now, 5);
    m = fetch_req(7, epoch, 5, 2);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_HIGH_WATERMARK), 0);
    outs_free(&outs);
    raft_node_destroy(node);
}

static void test_leader_answers_divergence(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 3};
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, epochs, 3);
    int64_t now = elect(node);
    /* The fetcher's last entries are of epoch 2, which this log lacks. */
    struct raft_msg m = fetch_req(1, raft_node_epoch(node), 4, 2);
    struct outs outs;
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    const struct raft_output *resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 1);
    assert_non_null(resp);
    assert_int_equal(resp->msg.u.fetch_resp.diverging_epoch, 1);
    assert_int_equal(resp->msg.u.fetch_resp.diverging_end_offset, 2);
    assert_int_equal(resp->msg.u.fetch_resp.n_records, 0);
    outs_free(&outs);
    raft_node_destroy(node);
}

static void test_follower_truncates_on_divergence(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 2, 2};
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 2};
    struct raft_node *node = make_node(0, &qs, epochs, 4);
    assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    const struct raft_output *req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 4);
    assert_int_equal(req->msg.u.fetch_req.last_fetched_epoch, 2);
    int32_t correlation = req->msg.correlation_id;
    outs_free(&outs);

    struct raft_msg m = {.type = RAFT_MSG_FETCH_RESP, .src = 2, .dst = 0, .correlation_id = correlation};
    m.u.fetch_resp = (struct raft_fetch_resp){
        .high_watermark = 2,
        .diverging_epoch = 1,
        .diverging_end_offset = 3,
        .current_leader_id = 2,
        .current_leader_epoch = 3,
        .fetch_offset = 4,
    };
    raft_node_receive(node, 2, &m);
    drain(node, &outs);
    /* Its own epoch-1 entries end at 2: the lower of the two ends wins. */
    const struct raft_output *trunc = find_type(&outs, RAFT_OUT_TRUNCATE);
    assert_non_null(trunc);
    assert_int_equal(trunc->offset, 2);
    assert_int_equal(raft_node_end_offset(node), 2);
    req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 2);
    assert_int_equal(req->msg.u.fetch_req.last_fetched_epoch, 1);
    m.correlation_id = req->msg.correlation_id;
    outs_free(&outs);

    /* A late answer to the first fetch, even one that fits the log as it is
     * now, no longer matches the fetch in flight and is dropped. */
    struct raft_msg late = m;
    late.correlation_id = correlation;
    late.u.fetch_resp.fetch_offset = 2;
    late.u.fetch_resp.diverging_end_offset = 1;
    raft_node_receive(node, 2, &late);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_TRUNCATE), 0);
    outs_free(&outs);

    /* The matching answer brings the leader's entry; the HW follows only
     * once it is fsynced. */
    struct raft_entry rec = {.offset = 2, .epoch = 3, .count = 1, .len = 1, .data = (uint8_t *)"z"};
    m.u.fetch_resp = (struct raft_fetch_resp){
        .high_watermark = 3,
        .diverging_epoch = -1,
        .diverging_end_offset = -1,
        .current_leader_id = 2,
        .current_leader_epoch = 3,
        .fetch_offset = 2,
        .records = &rec,
        .n_records = 1,
    };
    raft_node_receive(node, 3, &m);
    drain(node, &outs);
    assert_int_equal(count_type(&outs, RAFT_OUT_APPEND), 1);
    const struct raft_output *hw = find_type(&outs, RAFT_OUT_HIGH_WATERMARK);
    assert_non_null(hw);
    assert_int_equal(hw->offset, 2);
    assert_null(find_send(&outs, RAFT_MSG_FETCH_REQ, 2)); /* not before the fsync */
    outs_free(&outs);
    raft_node_flushed(node, 4, 3);
    drain(node, &outs);
    hw = find_type(&outs, RAFT_OUT_HIGH_WATERMARK);
    assert_non_null(hw);
    assert_int_equal(hw->offset, 3);
    assert_non_null(find_send(&outs, RAFT_MSG_FETCH_REQ, 2));
    outs_free(&outs);
    raft_node_destroy(node);
}

/* Batches: a fetch offset inside an entry diverges at the entry's start,
 * and the HW only lands on entry boundaries. */
static void test_leader_batches(void **state)
{
    (void)state;
    struct raft_node *node = make_node(0, NULL, NULL, 0);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    int64_t off;
    assert_int_equal(raft_node_append(node, now, "b", 1, 0, &off), RAFT_ERR_INVALID);
    assert_int_equal(raft_node_append(node, now, "b", 1, 5, &off), RAFT_OK);
    assert_int_equal(off, 1); /* after the LeaderChange entry */
    assert_int_equal(raft_node_end_offset(node), 6);
    assert_int_equal(raft_node_entry(node, 4)->offset, 1);
    /* An fsync report inside the batch covers only the entry before it. */
    raft_node_flushed(node, now, 4);
    struct outs outs;
    drain(node, &outs);
    outs_free(&outs);

    struct raft_msg m = fetch_req(1, epoch, 3, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    const struct raft_output *resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 1);
    assert_non_null(resp);
    assert_int_equal(resp->msg.u.fetch_resp.diverging_epoch, epoch);
    assert_int_equal(resp->msg.u.fetch_resp.diverging_end_offset, 1);
    assert_int_equal(resp->msg.u.fetch_resp.n_records, 0);
    outs_free(&outs);

    /* From the boundary the whole batch comes as one record entry. */
    m = fetch_req(1, epoch, 1, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 1);
    assert_non_null(resp);
    assert_int_equal(resp->msg.u.fetch_resp.n_records, 1);
    assert_int_equal(resp->msg.u.fetch_resp.records[0].offset, 1);
    assert_int_equal(resp->msg.u.fetch_resp.records[0].count, 5);
    /* The voter holds the LeaderChange entry; the leader only that durably. */
    const struct raft_output *hw = find_type(&outs, RAFT_OUT_HIGH_WATERMARK);
    assert_non_null(hw);
    assert_int_equal(hw->offset, 1);
    outs_free(&outs);

    raft_node_flushed(node, now, 6);
    m = fetch_req(1, epoch, 6, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    hw = find_type(&outs, RAFT_OUT_HIGH_WATERMARK);
    assert_non_null(hw);
    assert_int_equal(hw->offset, 6);
    outs_free(&outs);
    raft_node_destroy(node);
}

/* A follower told to truncate inside one of its batches drops the batch. */
static void test_follower_truncates_whole_batch(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 2};
    int32_t counts[] = {3, 4};
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 2};
    struct raft_node *node = make_batches(0, &qs, epochs, counts, 2);
    assert_int_equal(raft_node_end_offset(node), 7);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    const struct raft_output *req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 7);
    int32_t correlation = req->msg.correlation_id;
    outs_free(&outs);

    struct raft_msg m = {.type = RAFT_MSG_FETCH_RESP, .src = 2, .dst = 0, .correlation_id = correlation};
    m.u.fetch_resp = (struct raft_fetch_resp){
        .high_watermark = 3,
        .diverging_epoch = 2,
        .diverging_end_offset = 5,
        .current_leader_id = 2,
        .current_leader_epoch = 3,
        .fetch_offset = 7,
    };
    raft_node_receive(node, 2, &m);
    drain(node, &outs);
    const struct raft_output *trunc = find_type(&outs, RAFT_OUT_TRUNCATE);
    assert_non_null(trunc);
    assert_int_equal(trunc->offset, 3);
    assert_int_equal(raft_node_end_offset(node), 3);
    /* The running byte count dropped the truncated entry. */
    assert_int_equal(raft_node_log_bytes(node), 1);
    assert_int_equal(raft_node_log_bytes(node), walk_bytes(node));
    req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 3);
    assert_int_equal(req->msg.u.fetch_req.last_fetched_epoch, 1);
    outs_free(&outs);
    raft_node_destroy(node);
}

/* Delivers a fetch to leader 0 and drops whatever comes out. */
static void fetch_at(struct raft_node *node, int64_t now, int32_t from, int64_t offset, int32_t last_epoch)
{
    struct raft_msg m = fetch_req(from, raft_node_epoch(node), offset, last_epoch);
    struct outs outs;
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    outs_free(&outs);
}

/* DescribeQuorum's views: per replica its fetch offset, last fetch and last
 * caught-up time, as Kafka's LeaderState keeps them. */
static void test_replica_states(void **state)
{
    (void)state;
    struct raft_node *node = make_node(0, NULL, NULL, 0);
    struct raft_replica_state voters[RAFT_MAX_VOTERS], observers[4];
    assert_true(raft_node_voter_states(node, voters) < 0); /* only the leader knows */
    assert_true(raft_node_observer_states(node, observers, 4) < 0);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    int64_t off;
    assert_int_equal(raft_node_append(node, now, "b", 1, 3, &off), RAFT_OK);
    assert_int_equal(raft_node_voter_states(node, voters), 3);
    assert_int_equal(voters[0].replica_id, 0);
    assert_int_equal(voters[0].log_end_offset, 4);
    assert_int_equal(voters[0].last_fetch_ms, now);
    assert_int_equal(voters[1].replica_id, 1);
    assert_int_equal(voters[1].log_end_offset, -1);
    assert_int_equal(voters[1].last_fetch_ms, -1);
    assert_int_equal(voters[1].last_caught_up_ms, -1);

    fetch_at(node, now + 10, 1, 4, epoch); /* at the leader's end: caught up */
    fetch_at(node, now + 20, 2, 1, epoch); /* behind */
    assert_int_equal(raft_node_voter_states(node, voters), 3);
    assert_int_equal(voters[1].log_end_offset, 4);
    assert_int_equal(voters[1].last_fetch_ms, now + 10);
    assert_int_equal(voters[1].last_caught_up_ms, now + 10);
    assert_int_equal(voters[2].log_end_offset, 1);
    assert_int_equal(voters[2].last_fetch_ms, now + 20);
    assert_int_equal(voters[2].last_caught_up_ms, -1);

    /* The leader moved on, but voter 2 reached the end the leader had at
     * its previous fetch: caught up as of that fetch. */
    assert_int_equal(raft_node_append(node, now + 25, "c", 1, 2, &off), RAFT_OK);
    fetch_at(node, now + 30, 2, 4, epoch);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[2].log_end_offset, 4);
    assert_int_equal(voters[2].last_caught_up_ms, now + 20);
    /* A fetch that diverges (inside the last batch) changes nothing. */
    fetch_at(node, now + 35, 2, 5, epoch);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[2].log_end_offset, 4);
    assert_int_equal(voters[2].last_fetch_ms, now + 30);
    assert_int_equal(raft_node_high_watermark(node), 4); /* two voters of three hold 0..3 */

    /* Observers are listed apart, and forgotten after their session. */
    fetch_at(node, now + 40, 7, 0, 0);
    assert_int_equal(raft_node_observer_states(node, observers, 4), 1);
    assert_int_equal(observers[0].replica_id, 7);
    assert_int_equal(observers[0].log_end_offset, 0);
    assert_int_equal(observers[0].last_fetch_ms, now + 40);
    assert_int_equal(raft_node_observer_states(node, observers, 0), 1); /* counted past cap */
    /* Voters keep fetching, so the leader stays; the observer falls silent. */
    int64_t later = now + 40 + RAFT_OBSERVER_SESSION_MS;
    fetch_at(node, later, 1, 6, epoch);
    fetch_at(node, later, 2, 6, epoch);
    assert_int_equal(raft_node_role(node), RAFT_LEADER);
    assert_int_equal(raft_node_observer_states(node, observers, 4), 0);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[1].last_caught_up_ms, later);
    raft_node_destroy(node);
}

/* entries_on_disk: the core keeps headers only, restored or appended, and
 * its APPEND output still carries the bytes for the store. */
static void test_entries_on_disk_keeps_headers(void **state)
{
    (void)state;
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 0;
    cfg.n_voters = 1;
    cfg.voters[0] = 0;
    cfg.entries_on_disk = true;
    struct raft_entry restored = {.offset = 0, .epoch = 1, .count = 2, .len = 5, .data = NULL};
    struct raft_node *node;
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &restored, 1, 0), RAFT_OK);
    const struct raft_entry *e = raft_node_entry(node, 1);
    assert_non_null(e);
    assert_null(e->data);
    assert_int_equal(e->len, 5);
    struct outs outs;
    for (int64_t now = 0; now < 5000 && raft_node_role(node) != RAFT_LEADER; now += 10) {
        raft_node_tick(node, now);
        drain(node, &outs);
        const struct raft_output *persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
        uint64_t version = persist ? persist->qs_version : 0;
        outs_free(&outs);
        if (version)
            raft_node_qs_persisted(node, now, version);
        drain(node, &outs);
        outs_free(&outs);
    }
    assert_int_equal(raft_node_role(node), RAFT_LEADER);
    int64_t offset = -1;
    assert_int_equal(raft_node_append(node, 5000, "hello", 5, 1, &offset), RAFT_OK);
    drain(node, &outs);
    const struct raft_output *append = find_type(&outs, RAFT_OUT_APPEND);
    assert_non_null(append);
    assert_int_equal(append->entry.offset, offset);
    assert_memory_equal(append->entry.data, "hello", 5);
    outs_free(&outs);
    e = raft_node_entry(node, offset);
    assert_non_null(e);
    assert_null(e->data);
    assert_int_equal(e->len, 5);
    raft_node_destroy(node);
}

/* KIP-630 at the leader: the log start moves only to a committed entry
 * boundary with its epoch, and a fetch below it (or at it with another
 * epoch) is answered with the snapshot's id instead of records. */
static void test_log_start_answers_snapshot(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 1};
    struct raft_quorum_state qs = {.leader_epoch = 1, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, epochs, 3);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    struct outs outs;
    raft_node_flushed(node, now, 4);
    struct raft_msg m = fetch_req(1, epoch, 4, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    outs_free(&outs);
    assert_int_equal(raft_node_high_watermark(node), 4);
    assert_int_equal(raft_node_advance_log_start(node, 4, 1), RAFT_ERR_INVALID);     /* entry 3 is of epoch 2 */
    assert_int_equal(raft_node_advance_log_start(node, 5, epoch), RAFT_ERR_INVALID); /* past the HW */
    assert_int_equal(raft_node_advance_log_start(node, 3, 1), RAFT_OK);
    assert_int_equal(raft_node_log_start(node), 3);
    assert_null(raft_node_entry(node, 2));
    assert_non_null(raft_node_entry(node, 3));

    struct {
        int64_t offset;
        int32_t last_epoch;
        bool snapshot;
    } cases[] = {{0, 0, true}, {1, 1, true}, {3, 0, true}, {3, 1, false}, {4, epoch, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m = fetch_req(2, epoch, cases[i].offset, cases[i].last_epoch);
        raft_node_receive(node, now, &m);
        drain(node, &outs);
        const struct raft_output *resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 2);
        assert_non_null(resp);
        const struct raft_fetch_resp *fr = &resp->msg.u.fetch_resp;
        assert_int_equal(fr->error_code, RAFT_OK);
        assert_int_equal(fr->diverging_end_offset, -1);
        assert_int_equal(fr->snapshot_end_offset, cases[i].snapshot ? 3 : -1);
        assert_int_equal(fr->snapshot_epoch, cases[i].snapshot ? 1 : -1);
        assert_int_equal(fr->n_records, cases[i].snapshot || cases[i].offset == 4 ? 0 : 1);
        assert_int_equal(fr->high_watermark, 4);
        outs_free(&outs);
    }

    /* An empty log past its start still checks epochs against the snapshot's. */
    assert_int_equal(raft_node_advance_log_start(node, 4, epoch), RAFT_OK);
    assert_int_equal(raft_node_end_offset(node), 4);
    assert_null(raft_node_entry(node, 3));
    m = fetch_req(2, epoch, 4, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    assert_int_equal(find_send(&outs, RAFT_MSG_FETCH_RESP, 2)->msg.u.fetch_resp.snapshot_end_offset, -1);
    outs_free(&outs);
    raft_node_destroy(node);
}

/* KIP-630 at a follower: a SnapshotId answer asks the caller to download
 * it and stops fetching until raft_node_snapshot_done; the download's
 * progress keeps the leader's silence from starting an election; once
 * installed, the log starts at the snapshot's end and fetching goes on. */
static void test_follower_installs_snapshot(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1};
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 2};
    struct raft_node *node = make_node(0, &qs, epochs, 2);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    const struct raft_output *req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    struct raft_msg m = {.type = RAFT_MSG_FETCH_RESP, .src = 2, .dst = 0, .correlation_id = req->msg.correlation_id};
    m.u.fetch_resp = (struct raft_fetch_resp){.high_watermark = 12,
                                              .diverging_epoch = -1,
                                              .diverging_end_offset = -1,
                                              .current_leader_id = 2,
                                              .current_leader_epoch = 3,
                                              .fetch_offset = 2,
                                              .snapshot_end_offset = 10,
                                              .snapshot_epoch = 2};
    outs_free(&outs);
    raft_node_receive(node, 2, &m);
    drain(node, &outs);
    const struct raft_output *want = find_type(&outs, RAFT_OUT_FETCH_SNAPSHOT);
    assert_non_null(want);
    assert_int_equal(want->offset, 10);
    assert_int_equal(want->epoch, 2);
    assert_int_equal(want->leader_id, 2);
    outs_free(&outs);

    for (int64_t now = 500; now <= 6000; now += 500) {
        raft_node_snapshot_progress(node, now);
        raft_node_tick(node, now);
        drain(node, &outs);
        assert_null(find_send(&outs, RAFT_MSG_FETCH_REQ, -1));
        assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
        outs_free(&outs);
    }
    assert_int_equal(raft_node_log_bytes(node), 2);
    raft_node_snapshot_done(node, 6001, true, 10, 2);
    drain(node, &outs);
    assert_int_equal(raft_node_log_bytes(node), 0);
    assert_int_equal(raft_node_log_start(node), 10);
    assert_int_equal(raft_node_end_offset(node), 10);
    assert_int_equal(raft_node_high_watermark(node), 10);
    assert_non_null(find_type(&outs, RAFT_OUT_HIGH_WATERMARK));
    req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 10);
    assert_int_equal(req->msg.u.fetch_req.last_fetched_epoch, 2);
    outs_free(&outs);
    raft_node_destroy(node);

    /* A restart from a cleaned log: entries from the configured start. */
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 0;
    cfg.n_voters = 1;
    cfg.log_start_offset = 5;
    cfg.log_start_epoch = 1;
    struct raft_entry e = {.offset = 5, .epoch = 1, .count = 2, .len = 1, .data = (uint8_t *)"x"};
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &e, 1, 0), RAFT_OK);
    assert_int_equal(raft_node_end_offset(node), 7);
    assert_int_equal(raft_node_high_watermark(node), 5);
    raft_node_destroy(node);
    e.offset = 0;
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &e, 1, 0), RAFT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vote_log_check),
        cmocka_unit_test(test_vote_once_per_epoch),
        cmocka_unit_test(test_pre_vote_keeps_epoch),
        cmocka_unit_test(test_observer_never_votes),
        cmocka_unit_test(test_begin_epoch_makes_follower),
        cmocka_unit_test(test_log_bytes_follow_appends_and_cleaning),
        cmocka_unit_test(test_hw_waits_for_own_epoch),
        cmocka_unit_test(test_leader_answers_divergence),
        cmocka_unit_test(test_follower_truncates_on_divergence),
        cmocka_unit_test(test_leader_batches),
        cmocka_unit_test(test_follower_truncates_whole_batch),
        cmocka_unit_test(test_replica_states),
        cmocka_unit_test(test_entries_on_disk_keeps_headers),
        cmocka_unit_test(test_log_start_answers_snapshot),
        cmocka_unit_test(test_follower_installs_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
