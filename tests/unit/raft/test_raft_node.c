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
#include "raft_node_support.h"

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

/* Persists every quorum state in outs (so held messages go out) and
 * drains what follows into outs. */
static void persist_and_drain(struct raft_node *node, int64_t now, struct outs *outs)
{
    const struct raft_output *persist = find_type(outs, RAFT_OUT_PERSIST_QS);
    if (!persist)
        return;
    uint64_t version = persist->qs_version;
    outs_free(outs);
    raft_node_qs_persisted(node, now, version);
    drain(node, outs);
}

/* The one Fetch in outs, copied out; fails when there is none. */
static struct raft_msg the_fetch(const struct outs *outs)
{
    const struct raft_output *o = find_send(outs, RAFT_MSG_FETCH_REQ, -1);
    assert_non_null(o);
    return o->msg;
}

static struct raft_msg not_leader_answer(const struct raft_msg *req, int32_t leader, int32_t epoch)
{
    struct raft_msg m = {
        .type = RAFT_MSG_FETCH_RESP, .src = req->dst, .dst = req->src, .correlation_id = req->correlation_id};
    m.u.fetch_resp = (struct raft_fetch_resp){.error_code = RAFT_ERR_NOT_LEADER,
                                              .high_watermark = -1,
                                              .diverging_epoch = -1,
                                              .diverging_end_offset = -1,
                                              .current_leader_id = leader,
                                              .current_leader_epoch = epoch,
                                              .fetch_offset = req->u.fetch_req.fetch_offset,
                                              .snapshot_end_offset = -1,
                                              .snapshot_epoch = -1};
    return m;
}

/* An observer whose fetch to its leader fails (refused connection) asks
 * another voter who leads at once, tries the leader again after the retry
 * backoff while the voters still name it, and follows the new leader as
 * soon as a voter names it: all long before its fetch timeout (2000 ms). */
static void test_observer_asks_another_voter_when_its_leader_fails(void **state)
{
    (void)state;
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 0};
    struct raft_node *node = make_node(5, &qs, NULL, 0);
    assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    persist_and_drain(node, 1, &outs);
    struct raft_msg fetch = the_fetch(&outs);
    assert_int_equal(fetch.dst, 0);
    outs_free(&outs);

    raft_node_request_failed(node, 2, &fetch);
    drain(node, &outs);
    struct raft_msg ask = the_fetch(&outs);
    assert_true(ask.dst == 1 || ask.dst == 2);
    outs_free(&outs);
    /* That voter still follows leader 0 in epoch 3: back to the leader,
     * after the backoff. */
    struct raft_msg answer = not_leader_answer(&ask, 0, 3);
    raft_node_receive(node, 3, &answer);
    drain(node, &outs);
    assert_null(find_send(&outs, RAFT_MSG_FETCH_REQ, -1));
    outs_free(&outs);
    raft_node_tick(node, 3 + 20);
    drain(node, &outs);
    fetch = the_fetch(&outs);
    assert_int_equal(fetch.dst, 0);
    outs_free(&outs);

    /* Refused again; now a voter names leader 2 in epoch 4. */
    raft_node_request_failed(node, 30, &fetch);
    drain(node, &outs);
    ask = the_fetch(&outs);
    assert_true(ask.dst == 1 || ask.dst == 2);
    outs_free(&outs);
    answer = not_leader_answer(&ask, 2, 4);
    raft_node_receive(node, 31, &answer);
    drain(node, &outs);
    persist_and_drain(node, 31, &outs);
    assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
    assert_int_equal(raft_node_epoch(node), 4);
    assert_int_equal(raft_node_leader(node), 2);
    /* Its first fetch to the new leader goes once that state is durable. */
    assert_int_equal(the_fetch(&outs).dst, 2);
    outs_free(&outs);
    raft_node_destroy(node);
}

/* A voter whose fetch to its leader fails keeps at its leader (after the
 * retry backoff): it finds a new leader by its own election. */
static void test_voter_retries_its_leader_after_a_failed_fetch(void **state)
{
    (void)state;
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 0};
    struct raft_node *node = make_node(1, &qs, NULL, 0);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    persist_and_drain(node, 1, &outs);
    struct raft_msg fetch = the_fetch(&outs);
    assert_int_equal(fetch.dst, 0);
    outs_free(&outs);
    raft_node_request_failed(node, 2, &fetch);
    drain(node, &outs);
    assert_null(find_send(&outs, RAFT_MSG_FETCH_REQ, -1));
    outs_free(&outs);
    raft_node_tick(node, 2 + 20);
    drain(node, &outs);
    assert_int_equal(the_fetch(&outs).dst, 0);
    outs_free(&outs);
    raft_node_destroy(node);
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
        cmocka_unit_test(test_observer_asks_another_voter_when_its_leader_fails),
        cmocka_unit_test(test_voter_retries_its_leader_after_a_failed_fetch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
