/* Replication: followers and observers pull with Fetch; the leader checks
 * each fetch against its log (answering a divergence with the end offset of
 * the fetcher's last epoch) and moves the high watermark to what a majority
 * of voters has fetched past, counting only entries of its own epoch. */
#include <stdlib.h>
#include <string.h>

#include "raft/raft_internal.h"

static int64_t begin_retry_ms(const struct raft_node *n)
{
    return n->cfg.election_timeout_ms / 5 + 1;
}

static int64_t request_timeout_ms(const struct raft_node *n)
{
    return n->cfg.election_timeout_ms / 2 + 1;
}

static int64_t retry_backoff_ms(const struct raft_node *n)
{
    return n->cfg.retry_backoff_ms > 0 ? n->cfg.retry_backoff_ms : 1;
}

static void send_begin(struct raft_node *n, int i)
{
    struct raft_msg m = {.type = RAFT_MSG_BEGIN_EPOCH_REQ, .dst = n->cfg.voters[i]};
    m.u.begin_req = (struct raft_begin_epoch_req){.leader_id = n->cfg.node_id, .leader_epoch = n->epoch};
    raft_send(n, &m);
}

/* A replica not heard from in this epoch. */
static struct raft_replica_track fresh_track(int32_t id)
{
    return (struct raft_replica_track){
        .view = {.replica_id = id, .log_end_offset = -1, .last_fetch_ms = -1, .last_caught_up_ms = -1},
        .leader_end_at_fetch = -1};
}

void raft_leader_start(struct raft_node *n)
{
    n->epoch_start_offset = raft_log_end(n);
    for (int i = 0; i < n->cfg.n_voters; i++) {
        n->voter_end[i] = 0;
        n->voter_last_fetch[i] = n->now;
        n->begin_acked[i] = i == n->self_index;
        n->voters_seen[i] = fresh_track(n->cfg.voters[i]);
    }
    n->n_observers = 0;
    /* The LeaderChange control entry: the first entry of the new epoch,
     * whose commit also commits everything before it. */
    uint8_t body[RAFT_LEADER_CHANGE_MAX_LEN] = {RAFT_LEADER_CHANGE_BYTE};
    memcpy(body + 1, &n->cfg.node_id, sizeof n->cfg.node_id);
    memcpy(body + 5, n->cfg.voters, (size_t)n->cfg.n_voters * sizeof n->cfg.voters[0]);
    raft_log_append(n, n->epoch, body, (uint32_t)(5 + n->cfg.n_voters * sizeof n->cfg.voters[0]), 1);
    for (int i = 0; i < n->cfg.n_voters; i++)
        if (i != n->self_index)
            send_begin(n, i);
    n->next_begin_at = n->now + begin_retry_ms(n);
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

void raft_update_hw(struct raft_node *n)
{
    if (n->role == RAFT_FOLLOWER) {
        /* Only what is fsynced here and committed at the leader. */
        raft_raise_hw(n, raft_log_boundary(n, n->leader_hw < n->flushed_end ? n->leader_hw : n->flushed_end));
        return;
    }
    if (n->role != RAFT_LEADER)
        return;
    int64_t ends[RAFT_MAX_VOTERS];
    for (int i = 0; i < n->cfg.n_voters; i++)
        ends[i] = i == n->self_index ? n->flushed_end : n->voter_end[i];
    qsort(ends, (size_t)n->cfg.n_voters, sizeof ends[0], cmp_desc);
    int64_t majority_end = ends[raft_majority(n) - 1];
    /* Entries of older epochs commit only under one of this epoch (Raft's
     * Figure 8: a majority may hold an old entry that a later leader, with a
     * newer last epoch, still overwrites). */
#ifdef RAFT_PLANT_BUG_COMMIT_OLD_EPOCH
    raft_raise_hw(n, majority_end);
#else
    if (majority_end > n->epoch_start_offset)
        raft_raise_hw(n, majority_end);
#endif
}

static void send_fetch(struct raft_node *n, int32_t to)
{
    struct raft_msg m = {.type = RAFT_MSG_FETCH_REQ, .dst = to};
    m.u.fetch_req = (struct raft_fetch_req){
        .replica_id = n->cfg.node_id,
        .current_leader_epoch = n->epoch,
        .fetch_offset = raft_log_end(n),
        .last_fetched_epoch = raft_last_epoch(n),
    };
    m.correlation_id = ++n->fetch_correlation;
    n->fetch_inflight = true;
    n->fetch_dst = to;
    n->fetch_sent_at = n->now;
    raft_send(n, &m);
}

/* A voter other than the leader and this replica, at random (Kafka's
 * observer picks a random voter too); RAFT_NO_ID when there is none. */
static int32_t other_voter(struct raft_node *n)
{
    int32_t candidates[RAFT_MAX_VOTERS];
    int count = 0;
    for (int i = 0; i < n->cfg.n_voters; i++)
        if (n->cfg.voters[i] != n->leader_id && i != n->self_index)
            candidates[count++] = n->cfg.voters[i];
    return count ? candidates[raft_rand(n, (uint64_t)count)] : RAFT_NO_ID;
}

/* The fetch in flight will get no answer; the next goes out after
 * backoff_ms. */
static void fetch_lost(struct raft_node *n, int64_t backoff_ms)
{
    n->fetch_inflight = false;
    n->next_fetch_at = n->now + backoff_ms;
    /* An observer learns of a new leader only from the leader's answers,
     * so one that cannot reach its leader asks another voter at once
     * rather than waiting out controller.quorum.fetch.timeout.ms; a voter
     * keeps at its leader and elects once the fetch timeout passes. */
    if (n->self_index < 0 && n->role == RAFT_FOLLOWER && n->fetch_dst == n->leader_id) {
        n->leader_unreachable = true;
        n->ask_other = true;
        n->next_fetch_at = n->now;
    }
}

void raft_fetch_failed(struct raft_node *n)
{
    fetch_lost(n, retry_backoff_ms(n));
}

void raft_replication_tick(struct raft_node *n)
{
    if (n->role == RAFT_LEADER) {
        if (n->now < n->next_begin_at)
            return;
        for (int i = 0; i < n->cfg.n_voters; i++)
            if (!n->begin_acked[i])
                send_begin(n, i);
        n->next_begin_at = n->now + begin_retry_ms(n);
        return;
    }
    bool discovering = n->self_index < 0 && n->role == RAFT_UNATTACHED;
    if (n->role != RAFT_FOLLOWER && !discovering)
        return;
    /* A timed-out fetch has waited long enough: the next goes at once. */
    if (n->fetch_inflight && n->now - n->fetch_sent_at >= request_timeout_ms(n))
        fetch_lost(n, 0);
    if (n->fetch_inflight || n->snapshot_pending || n->now < n->next_fetch_at)
        return;
    if (n->leader_unreachable && n->ask_other) {
        /* Any other voter answers with the leader and epoch it knows. */
        n->ask_other = false;
        int32_t other = other_voter(n);
        if (other != RAFT_NO_ID) {
            send_fetch(n, other);
            return;
        }
    }
    if (discovering) {
        /* An observer asks the voters in turn who leads. */
        int i = n->discover_next++ % n->cfg.n_voters;
        n->next_fetch_at = n->now + n->cfg.fetch_idle_ms;
        send_fetch(n, n->cfg.voters[i]);
        return;
    }
    /* Fetching at the log end tells the leader this replica has everything
     * below it, so fetch only once all of it is fsynced. */
    if (n->flushed_end == raft_log_end(n))
        send_fetch(n, n->leader_id);
}

static int16_t fetch_error(const struct raft_node *n, const struct raft_fetch_req *r)
{
    if (n->role != RAFT_LEADER)
        return RAFT_ERR_NOT_LEADER;
    if (r->current_leader_epoch < n->epoch)
        return RAFT_ERR_FENCED_LEADER_EPOCH;
    if (r->current_leader_epoch > n->epoch)
        return RAFT_ERR_UNKNOWN_LEADER_EPOCH;
    return RAFT_OK;
}

/* Whole entries from fetch_offset, an entry boundary, up to fetch_max_records entries. */
static void attach_records(const struct raft_node *n, struct raft_fetch_resp *resp)
{
    int64_t first = raft_log_index(n, resp->fetch_offset);
    int64_t end = n->log_len;
    if (end - first > n->cfg.fetch_max_records)
        end = first + n->cfg.fetch_max_records;
    if (end <= first)
        return;
    struct raft_msg view = {.type = RAFT_MSG_FETCH_RESP};
    view.u.fetch_resp.records = &n->log[first];
    view.u.fetch_resp.n_records = (int32_t)(end - first);
    struct raft_msg copy;
    /* Without memory the answer goes out empty; the follower fetches again. */
    if (raft_msg_copy(&copy, &view) == RAFT_OK) {
        resp->records = copy.u.fetch_resp.records;
        resp->n_records = copy.u.fetch_resp.n_records;
    }
}

/* The fetcher needs what only the snapshot at the log start still holds. */
static void answer_snapshot(struct raft_node *n, struct raft_msg *resp)
{
    resp->u.fetch_resp.snapshot_end_offset = n->log_start;
    resp->u.fetch_resp.snapshot_epoch = n->log_start_epoch;
    resp->u.fetch_resp.high_watermark = n->hw;
    raft_send(n, resp);
}

void raft_on_fetch_req(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_fetch_req *r = &m->u.fetch_req;
    struct raft_msg resp = {.type = RAFT_MSG_FETCH_RESP, .dst = m->src, .correlation_id = m->correlation_id};
    struct raft_fetch_resp *fr = &resp.u.fetch_resp;
    fr->error_code = fetch_error(n, r);
    fr->high_watermark = -1;
    fr->diverging_epoch = -1;
    fr->diverging_end_offset = -1;
    fr->current_leader_id = n->leader_id;
    fr->current_leader_epoch = n->epoch;
    fr->fetch_offset = r->fetch_offset;
    fr->snapshot_end_offset = -1;
    fr->snapshot_epoch = -1;
    if (fr->error_code != RAFT_OK || r->fetch_offset < 0) {
        raft_send(n, &resp);
        return;
    }
    int idx = raft_voter_index(n, r->replica_id);
    if (idx >= 0 && idx != n->self_index) {
        n->voter_last_fetch[idx] = n->now;
        n->begin_acked[idx] = true;
    }
    /* Kafka's validateOffsetAndEpoch with a log start: at the start with
     * the snapshot's epoch matches; below it (or at it with another epoch)
     * only the snapshot can bring the fetcher up. */
    bool at_start = r->fetch_offset == n->log_start &&
                    (n->log_start == 0 || r->last_fetched_epoch == n->log_start_epoch);
    if (!at_start && r->fetch_offset <= n->log_start) {
        answer_snapshot(n, &resp);
        return;
    }
    if (!at_start) {
        int32_t epoch;
        int64_t end;
        raft_end_offset_for_epoch(n, r->last_fetched_epoch, &epoch, &end);
        if (epoch == r->last_fetched_epoch && end >= r->fetch_offset &&
            raft_log_boundary(n, r->fetch_offset) != r->fetch_offset) {
            /* Inside an entry of the fetcher's last epoch: its copy of that
             * batch ends elsewhere, so it diverges at the batch's start. */
            int64_t i = raft_log_index(n, r->fetch_offset);
            epoch = i > 0 ? n->log[i - 1].epoch : -1;
            end = n->log[i].offset;
        }
        if ((epoch != r->last_fetched_epoch || end < r->fetch_offset) && end < n->log_start) {
            answer_snapshot(n, &resp);
            return;
        }
        if (epoch != r->last_fetched_epoch || end < r->fetch_offset) {
            fr->diverging_epoch = epoch;
            fr->diverging_end_offset = end;
            fr->high_watermark = n->hw;
            raft_send(n, &resp);
            return;
        }
    }
    raft_track_fetch(n, r->replica_id, r->fetch_offset);
    /* The fetcher's log matches this one below fetch_offset. Observers
     * never count towards the high watermark. */
    if (idx >= 0 && idx != n->self_index) {
        n->voter_end[idx] = r->fetch_offset;
        raft_update_hw(n);
    }
    fr->high_watermark = n->hw;
    attach_records(n, fr);
    raft_send(n, &resp);
}

void raft_on_fetch_resp(struct raft_node *n, const struct raft_msg *m)
{
    const struct raft_fetch_resp *r = &m->u.fetch_resp;
    /* An answer to an older fetch is dropped. */
    if (!n->fetch_inflight || m->correlation_id != n->fetch_correlation)
        return;
    if (raft_observe_epoch(n, r->current_leader_epoch, r->current_leader_id))
        return;
    if (n->role != RAFT_FOLLOWER || m->src != n->leader_id) {
        if (n->role == RAFT_UNATTACHED)
            n->fetch_inflight = false;
        if (n->role == RAFT_FOLLOWER && n->leader_unreachable) {
            /* Another voter still names the same leader: try the leader
             * again after a backoff (a failure there asks again). */
            n->fetch_inflight = false;
            n->next_fetch_at = n->now + retry_backoff_ms(n);
        }
        return;
    }
    if (r->current_leader_epoch == n->epoch && r->current_leader_id != n->leader_id) {
        /* The leader restarted or resigned: it no longer leads this epoch. */
        raft_become_unattached(n, n->epoch, n->now + raft_election_timeout(n));
        return;
    }
    if (r->error_code != RAFT_OK || r->current_leader_epoch != n->epoch) {
        n->fetch_inflight = false;
        n->next_fetch_at = n->now + n->cfg.fetch_idle_ms;
        return;
    }
    if (r->fetch_offset != raft_log_end(n))
        return;
    n->fetch_inflight = false;
    n->leader_unreachable = false;
    n->fetch_deadline = n->now + n->cfg.fetch_timeout_ms;
    n->leader_contact = n->now;
    if (r->snapshot_end_offset > 0) {
        /* Behind the leader's log start: the caller downloads its snapshot. */
        if (r->high_watermark > n->leader_hw)
            n->leader_hw = r->high_watermark;
        n->snapshot_pending = true;
        struct raft_output o = {.type = RAFT_OUT_FETCH_SNAPSHOT,
                                .offset = r->snapshot_end_offset,
                                .epoch = r->snapshot_epoch,
                                .leader_id = n->leader_id};
        raft_emit(n, &o);
        return;
    }
    if (r->diverging_end_offset >= 0) {
        int32_t epoch;
        int64_t end;
        raft_end_offset_for_epoch(n, r->diverging_epoch, &epoch, &end);
        raft_log_truncate(n, end < r->diverging_end_offset ? end : r->diverging_end_offset);
        n->next_fetch_at = n->now;
        return;
    }
    for (int32_t i = 0; i < r->n_records; i++) {
        const struct raft_entry *e = &r->records[i];
        if (e->offset != raft_log_end(n) || e->count < 1 ||
            raft_log_append(n, e->epoch, e->data, e->len, e->count) != RAFT_OK)
            break;
    }
    if (r->high_watermark > n->leader_hw)
        n->leader_hw = r->high_watermark;
    raft_update_hw(n);
    n->next_fetch_at = r->n_records ? n->now : n->now + n->cfg.fetch_idle_ms;
}

/* ---- DescribeQuorum's view of the replicas ---- */

static struct raft_replica_track *observer_slot(struct raft_node *n, int32_t id)
{
    size_t kept = 0;
    struct raft_replica_track *found = NULL;
    /* Observers silent past the session timeout are forgotten here. */
    for (size_t i = 0; i < n->n_observers; i++) {
        struct raft_replica_track *t = &n->observers[i];
        if (t->view.replica_id != id && n->now - t->view.last_fetch_ms >= RAFT_OBSERVER_SESSION_MS)
            continue;
        n->observers[kept] = *t;
        if (t->view.replica_id == id)
            found = &n->observers[kept];
        kept++;
    }
    n->n_observers = kept;
    if (found)
        return found;
    if (n->n_observers == n->observers_cap) {
        size_t cap = n->observers_cap ? n->observers_cap * 2 : 8;
        struct raft_replica_track *grown = realloc(n->observers, cap * sizeof *grown);
        if (!grown)
            return NULL; /* the view misses it; replication does not care */
        n->observers = grown;
        n->observers_cap = cap;
    }
    found = &n->observers[n->n_observers++];
    *found = fresh_track(id);
    return found;
}

/* A successful fetch at fetch_offset (Kafka's updateReplicaState): caught up
 * when it reached the leader's end now, or the end the leader had at its
 * previous fetch (then as of that fetch). */
void raft_track_fetch(struct raft_node *n, int32_t replica_id, int64_t fetch_offset)
{
    int idx = raft_voter_index(n, replica_id);
    if (replica_id < 0 || (idx == n->self_index && idx >= 0))
        return;
    struct raft_replica_track *t = idx >= 0 ? &n->voters_seen[idx] : observer_slot(n, replica_id);
    if (!t)
        return;
    int64_t end = raft_log_end(n);
    if (fetch_offset >= end)
        t->view.last_caught_up_ms = n->now;
    else if (t->leader_end_at_fetch > 0 && fetch_offset >= t->leader_end_at_fetch &&
             t->view.last_fetch_ms > t->view.last_caught_up_ms)
        t->view.last_caught_up_ms = t->view.last_fetch_ms;
    t->leader_end_at_fetch = end;
    t->view.last_fetch_ms = n->now;
    t->view.log_end_offset = fetch_offset;
}

int raft_node_voter_states(const struct raft_node *n, struct raft_replica_state out[RAFT_MAX_VOTERS])
{
    if (n->role != RAFT_LEADER)
        return -RAFT_ERR_NOT_LEADER;
    for (int i = 0; i < n->cfg.n_voters; i++) {
        out[i] = n->voters_seen[i].view;
        if (i == n->self_index) {
            out[i].log_end_offset = raft_log_end(n);
            out[i].last_fetch_ms = n->now;
            out[i].last_caught_up_ms = n->now;
        }
    }
    return n->cfg.n_voters;
}

int raft_node_observer_states(const struct raft_node *n, struct raft_replica_state *out, int cap)
{
    if (n->role != RAFT_LEADER)
        return -RAFT_ERR_NOT_LEADER;
    int count = 0;
    for (size_t i = 0; i < n->n_observers; i++) {
        const struct raft_replica_track *t = &n->observers[i];
        if (n->now - t->view.last_fetch_ms >= RAFT_OBSERVER_SESSION_MS)
            continue;
        if (count < cap)
            out[count] = t->view;
        count++;
    }
    return count;
}
