/* Elections and epochs: Vote (and pre-vote), BeginQuorumEpoch,
 * EndQuorumEpoch, election timers and the leader's check that a majority
 * still fetches from it. */
#include <string.h>

#include "raft/raft_internal.h"

int64_t raft_election_timeout(struct raft_node *n)
{
    /* Randomized in [T, 2T) so that split votes do not repeat. */
    return n->cfg.election_timeout_ms + (int64_t)raft_rand(n, (uint64_t)n->cfg.election_timeout_ms);
}

static int64_t election_backoff(struct raft_node *n)
{
    return 1 +
           (int64_t)raft_rand(n, (uint64_t)(n->cfg.election_backoff_max_ms > 0 ? n->cfg.election_backoff_max_ms : 1));
}

void raft_become_unattached(struct raft_node *n, int32_t epoch, int64_t deadline)
{
    int32_t voted = epoch > n->epoch ? RAFT_NO_ID : n->voted_id;
    raft_set_qs(n, epoch, voted, RAFT_NO_ID);
    n->election_deadline = deadline;
    n->fetch_inflight = false;
    n->leader_unreachable = false;
    n->next_fetch_at = n->now;
    n->leader_hw = 0;
    raft_set_role(n, RAFT_UNATTACHED);
}

void raft_become_follower(struct raft_node *n, int32_t epoch, int32_t leader)
{
    if (epoch != n->epoch || leader != n->leader_id) {
        n->leader_hw = 0;
        n->leader_contact = n->now - n->cfg.fetch_timeout_ms;
    }
    int32_t voted = epoch > n->epoch ? RAFT_NO_ID : n->voted_id;
    raft_set_qs(n, epoch, voted, leader);
    n->fetch_deadline = n->now + n->cfg.fetch_timeout_ms;
    n->fetch_inflight = false;
    n->leader_unreachable = false;
    n->next_fetch_at = n->now;
    raft_set_role(n, RAFT_FOLLOWER);
}

/* Learns of an epoch (and maybe its leader) from any message. Returns true
 * when the epoch was newer, so the message itself is stale for this role. */
bool raft_observe_epoch(struct raft_node *n, int32_t epoch, int32_t leader)
{
    int32_t self = n->cfg.node_id;
    if (epoch > n->epoch) {
        if (leader >= 0 && leader != self)
            raft_become_follower(n, epoch, leader);
        else
            raft_become_unattached(n, epoch, n->now + raft_election_timeout(n));
        return true;
    }
    if (epoch == n->epoch && leader >= 0 && leader != self && n->leader_id == RAFT_NO_ID && n->role != RAFT_LEADER)
        raft_become_follower(n, epoch, leader);
    return false;
}

static void send_votes(struct raft_node *n, int32_t candidate_epoch, bool pre_vote)
{
    for (int i = 0; i < n->cfg.n_voters; i++) {
        if (i == n->self_index)
            continue;
        struct raft_msg m = {.type = RAFT_MSG_VOTE_REQ, .dst = n->cfg.voters[i]};
        m.u.vote_req = (struct raft_vote_req){
            .candidate_epoch = candidate_epoch,
            .candidate_id = n->cfg.node_id,
            .last_offset_epoch = raft_last_epoch(n),
            .last_offset = raft_log_end(n),
            .pre_vote = pre_vote,
        };
        raft_send(n, &m);
    }
}

static void reset_tally(struct raft_node *n)
{
    memset(n->granted, 0, sizeof n->granted);
    memset(n->rejected, 0, sizeof n->rejected);
    n->granted[n->self_index] = true;
}

static int count(const bool *flags, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += flags[i];
    return c;
}

static void become_candidate(struct raft_node *n)
{
    /* The self-vote is persisted with the new epoch; the vote requests are
     * held until it is, so no vote counts before it is durable. */
    raft_set_qs(n, n->epoch + 1, n->cfg.node_id, RAFT_NO_ID);
    reset_tally(n);
    n->election_deadline = n->now + raft_election_timeout(n);
    raft_set_role(n, RAFT_CANDIDATE);
    send_votes(n, n->epoch, false);
}

void raft_become_prospective(struct raft_node *n)
{
    reset_tally(n);
    n->election_deadline = n->now + raft_election_timeout(n);
    n->fetch_inflight = false;
    raft_set_role(n, RAFT_PROSPECTIVE);
    if (count(n->granted, n->cfg.n_voters) >= raft_majority(n))
        become_candidate(n);
    else
        send_votes(n, n->epoch + 1, true);
}

static void become_leader(struct raft_node *n)
{
    raft_set_qs(n, n->epoch, n->voted_id, n->cfg.node_id);
    n->role = RAFT_LEADER;
    raft_leader_start(n);
    raft_set_role(n, RAFT_LEADER);
}

/* A lost pre-vote returns to the leader still known (KIP-996); a lost
 * election backs off before the next pre-vote. */
static void election_lost(struct raft_node *n)
{
    if (n->role == RAFT_PROSPECTIVE && n->leader_id >= 0) {
        /* Others still hear from that leader. Ask again after a backoff,
         * not a whole fetch timeout, in case they stop hearing too. */
        raft_become_follower(n, n->epoch, n->leader_id);
        n->fetch_deadline = n->now + election_backoff(n);
    } else
        raft_become_unattached(n, n->epoch, n->now + election_backoff(n));
}

static void maybe_win(struct raft_node *n)
{
    if (n->role == RAFT_CANDIDATE && n->qs_persisted >= n->qs_version &&
        count(n->granted, n->cfg.n_voters) >= raft_majority(n))
        become_leader(n);
}

static void check_quorum(struct raft_node *n)
{
    /* A leader cut off from a majority for 1.5 fetch timeouts resigns, so
     * that the rest can elect without waiting for it. */
    int64_t limit = n->cfg.fetch_timeout_ms + n->cfg.fetch_timeout_ms / 2;
    int alive = 0;
    for (int i = 0; i < n->cfg.n_voters; i++)
        alive += i == n->self_index || n->now - n->voter_last_fetch[i] < limit;
    if (alive < raft_majority(n))
        raft_resign(n);
}

void raft_election_tick(struct raft_node *n)
{
    if (n->self_index < 0) {
        if (n->role == RAFT_FOLLOWER && n->now >= n->fetch_deadline)
            raft_become_unattached(n, n->epoch, n->now);
        return;
    }
    switch (n->role) {
    case RAFT_UNATTACHED:
        if (n->now >= n->election_deadline)
            raft_become_prospective(n);
        break;
    case RAFT_FOLLOWER:
        if (n->now >= n->fetch_deadline)
            raft_become_prospective(n);
        break;
    case RAFT_PROSPECTIVE:
        if (n->now >= n->election_deadline)
            election_lost(n);
        break;
    case RAFT_CANDIDATE:
        maybe_win(n);
        if (n->role == RAFT_CANDIDATE && n->now >= n->election_deadline)
            election_lost(n);
        break;
    case RAFT_LEADER:
        check_quorum(n);
        break;
    }
}

static bool log_up_to_date(const struct raft_node *n, const struct raft_vote_req *r)
{
#ifdef RAFT_PLANT_BUG_VOTE_WITHOUT_LOG_CHECK
    (void)n;
    (void)r;
    return true;
#else
    int32_t mine = raft_last_epoch(n);
    return r->last_offset_epoch > mine || (r->last_offset_epoch == mine && r->last_offset >= raft_log_end(n));
#endif
}

static bool grant_pre_vote(const struct raft_node *n, const struct raft_vote_req *r)
{
    /* A replica still hearing from its leader refuses, so a partitioned
     * replica cannot disrupt a working quorum. */
    if (n->role == RAFT_LEADER)
        return false;
    if (n->role == RAFT_FOLLOWER && n->now - n->leader_contact < n->cfg.fetch_timeout_ms)
        return false;
    return log_up_to_date(n, r);
}

static bool grant_vote(struct raft_node *n, const struct raft_vote_req *r)
{
    if (n->voted_id == r->candidate_id)
        return true;
    if (n->voted_id != RAFT_NO_ID || n->leader_id != RAFT_NO_ID)
        return false;
    if (n->role != RAFT_UNATTACHED && n->role != RAFT_PROSPECTIVE)
        return false;
    if (!log_up_to_date(n, r))
        return false;
    raft_set_qs(n, n->epoch, r->candidate_id, RAFT_NO_ID);
    n->election_deadline = n->now + raft_election_timeout(n);
    if (n->role != RAFT_UNATTACHED)
        raft_set_role(n, RAFT_UNATTACHED);
    return true;
}

void raft_on_vote_req(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_vote_req *r = &m->u.vote_req;
    struct raft_msg resp = {.type = RAFT_MSG_VOTE_RESP, .dst = m->src, .correlation_id = m->correlation_id};
    bool granted = false;

    resp.u.vote_resp.pre_vote = r->pre_vote;
    if (n->self_index < 0 || raft_voter_index(n, r->candidate_id) < 0) {
        resp.u.vote_resp.error_code = RAFT_ERR_INCONSISTENT_VOTER_SET;
    } else if (r->candidate_epoch >= n->epoch) {
        if (r->pre_vote) {
            granted = grant_pre_vote(n, r);
        } else {
            if (r->candidate_epoch > n->epoch)
                raft_become_unattached(n, r->candidate_epoch, n->now + raft_election_timeout(n));
            granted = grant_vote(n, r);
        }
    }
    resp.u.vote_resp.vote_granted = granted;
    resp.u.vote_resp.leader_epoch = n->epoch;
    resp.u.vote_resp.leader_id = n->leader_id;
    raft_send(n, &resp);
}

void raft_on_vote_resp(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_vote_resp *r = &m->u.vote_resp;
    int idx = raft_voter_index(n, m->src);
    if (idx < 0 || n->self_index < 0 || r->error_code != RAFT_OK)
        return;
    if (raft_observe_epoch(n, r->leader_epoch, r->leader_id))
        return;
    bool tally = (n->role == RAFT_PROSPECTIVE && r->pre_vote) ||
                 (n->role == RAFT_CANDIDATE && !r->pre_vote && r->leader_epoch == n->epoch);
    if (!tally)
        return;
    n->granted[idx] = r->vote_granted;
    n->rejected[idx] = !r->vote_granted;
    if (count(n->granted, n->cfg.n_voters) >= raft_majority(n)) {
        if (n->role == RAFT_PROSPECTIVE)
            become_candidate(n);
        else
            maybe_win(n);
    } else if (count(n->rejected, n->cfg.n_voters) > n->cfg.n_voters - raft_majority(n)) {
        election_lost(n);
    }
}

static void send_epoch_resp(struct raft_node *n, const struct raft_msg *m, enum raft_msg_type type, int16_t error)
{
    struct raft_msg resp = {.type = type, .dst = m->src, .correlation_id = m->correlation_id};
    resp.u.epoch_resp = (struct raft_epoch_resp){
        .error_code = error,
        .leader_id = n->leader_id,
        .leader_epoch = n->epoch,
    };
    raft_send(n, &resp);
}

void raft_on_begin_req(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_begin_epoch_req *r = &m->u.begin_req;
    int16_t error = RAFT_OK;
    if (r->leader_epoch < n->epoch || r->leader_id == n->cfg.node_id ||
        (r->leader_epoch == n->epoch &&
         (n->role == RAFT_LEADER || (n->leader_id >= 0 && n->leader_id != r->leader_id))))
        error = RAFT_ERR_FENCED_LEADER_EPOCH;
    else if (n->role != RAFT_FOLLOWER || n->epoch != r->leader_epoch || n->leader_id != r->leader_id)
        raft_become_follower(n, r->leader_epoch, r->leader_id);
    if (error == RAFT_OK)
        n->leader_contact = n->now;
    send_epoch_resp(n, m, RAFT_MSG_BEGIN_EPOCH_RESP, error);
}

void raft_on_end_req(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_end_epoch_req *r = &m->u.end_req;
    int16_t error = RAFT_OK;
    int64_t soon = n->now + (int64_t)raft_rand(n, (uint64_t)n->cfg.election_timeout_ms / 2 + 1);
    if (r->leader_epoch < n->epoch) {
        error = RAFT_ERR_FENCED_LEADER_EPOCH;
    } else if (r->leader_epoch > n->epoch) {
        raft_become_unattached(n, r->leader_epoch, soon);
    } else if (n->role == RAFT_FOLLOWER && n->leader_id == r->leader_id) {
        /* The leader stepped down: elect soon instead of after a fetch timeout. */
        if (n->fetch_deadline > soon)
            n->fetch_deadline = soon;
        n->leader_contact = n->now - n->cfg.fetch_timeout_ms;
    }
    send_epoch_resp(n, m, RAFT_MSG_END_EPOCH_RESP, error);
}

void raft_on_epoch_resp(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_epoch_resp *r = &m->u.epoch_resp;
    if (raft_observe_epoch(n, r->leader_epoch, r->leader_id))
        return;
    int idx = raft_voter_index(n, m->src);
    if (m->type == RAFT_MSG_BEGIN_EPOCH_RESP && n->role == RAFT_LEADER && idx >= 0 && r->error_code == RAFT_OK &&
        r->leader_epoch == n->epoch)
        n->begin_acked[idx] = true;
}

void raft_resign(struct raft_node *n)
{
    for (int i = 0; i < n->cfg.n_voters; i++) {
        if (i == n->self_index)
            continue;
        struct raft_msg m = {.type = RAFT_MSG_END_EPOCH_REQ, .dst = n->cfg.voters[i]};
        m.u.end_req = (struct raft_end_epoch_req){.leader_id = n->cfg.node_id, .leader_epoch = n->epoch};
        raft_send(n, &m);
    }
    raft_become_unattached(n, n->epoch, n->now + raft_election_timeout(n));
}
