/* The replica's state: its log copy, the output queue, the quorum state and
 * the messages held until that state is durable, and the input calls. */
#include <stdlib.h>
#include <string.h>

#include "raft/raft_internal.h"

const char *raft_role_name(enum raft_role role)
{
    switch (role) {
    case RAFT_UNATTACHED:
        return "unattached";
    case RAFT_FOLLOWER:
        return "follower";
    case RAFT_PROSPECTIVE:
        return "prospective";
    case RAFT_CANDIDATE:
        return "candidate";
    case RAFT_LEADER:
        return "leader";
    }
    return "?";
}

void raft_config_defaults(struct raft_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->node_id = RAFT_NO_ID;
    cfg->election_timeout_ms = 1000;
    cfg->fetch_timeout_ms = 2000;
    cfg->election_backoff_max_ms = 1000;
    cfg->fetch_idle_ms = 50;
    cfg->retry_backoff_ms = 20;
    cfg->fetch_max_records = 16;
    cfg->seed = 1;
}

static void entry_free(struct raft_entry *e)
{
    free(e->data);
    e->data = NULL;
    e->len = 0;
}

static int entry_copy(struct raft_entry *dst, const struct raft_entry *src)
{
    *dst = *src;
    if (!src->data) /* a header only: the bytes are in the caller's store */
        return RAFT_OK;
    dst->data = malloc(src->len ? src->len : 1);
    if (!dst->data)
        return RAFT_ERR_NOMEM;
    if (src->len)
        memcpy(dst->data, src->data, src->len);
    return RAFT_OK;
}

void raft_msg_clear(struct raft_msg *msg)
{
    if (msg->type == RAFT_MSG_FETCH_RESP) {
        for (int32_t i = 0; i < msg->u.fetch_resp.n_records; i++)
            entry_free(&msg->u.fetch_resp.records[i]);
        free(msg->u.fetch_resp.records);
        msg->u.fetch_resp.records = NULL;
        msg->u.fetch_resp.n_records = 0;
    }
}

int raft_msg_copy(struct raft_msg *dst, const struct raft_msg *src)
{
    *dst = *src;
    if (src->type != RAFT_MSG_FETCH_RESP || src->u.fetch_resp.n_records == 0)
        return RAFT_OK;
    int32_t n = src->u.fetch_resp.n_records;
    dst->u.fetch_resp.records = calloc((size_t)n, sizeof(struct raft_entry));
    dst->u.fetch_resp.n_records = 0;
    if (!dst->u.fetch_resp.records)
        return RAFT_ERR_NOMEM;
    for (int32_t i = 0; i < n; i++) {
        if (entry_copy(&dst->u.fetch_resp.records[i], &src->u.fetch_resp.records[i]) != RAFT_OK) {
            raft_msg_clear(dst);
            return RAFT_ERR_NOMEM;
        }
        dst->u.fetch_resp.n_records = i + 1;
    }
    return RAFT_OK;
}

void raft_output_clear(struct raft_output *out)
{
    if (out->type == RAFT_OUT_SEND)
        raft_msg_clear(&out->msg);
    if (out->type == RAFT_OUT_APPEND)
        entry_free(&out->entry);
    memset(out, 0, sizeof *out);
}

/* xorshift64*: each replica draws its own timeouts from its seed. */
uint64_t raft_rand(struct raft_node *n, uint64_t bound)
{
    uint64_t x = n->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    n->rng = x;
    return bound ? (x * 2685821657736338717ULL) % bound : 0;
}

int raft_voter_index(const struct raft_node *n, int32_t id)
{
    for (int i = 0; i < n->cfg.n_voters; i++)
        if (n->cfg.voters[i] == id)
            return i;
    return -1;
}

int raft_majority(const struct raft_node *n)
{
    return n->cfg.n_voters / 2 + 1;
}

int32_t raft_last_epoch(const struct raft_node *n)
{
    return n->log_len ? n->log[n->log_len - 1].epoch : n->log_start_epoch;
}

/* Outputs are few and small. If one cannot be queued the node stops for
 * good (raft_node_failed): going on without a persist or an append the
 * caller never saw could break the protocol's promises. */
void raft_emit(struct raft_node *n, struct raft_output *o)
{
    if (n->failed) {
        raft_output_clear(o);
        return;
    }
    if (n->out_head + n->out_len == n->out_cap) {
        if (n->out_head > 0) {
            memmove(n->out, n->out + n->out_head, n->out_len * sizeof *n->out);
            n->out_head = 0;
        } else {
            size_t cap = n->out_cap ? n->out_cap * 2 : 32;
            struct raft_output *grown = realloc(n->out, cap * sizeof *grown);
            if (!grown) {
                raft_output_clear(o);
                n->failed = true;
                return;
            }
            n->out = grown;
            n->out_cap = cap;
        }
    }
    n->out[n->out_head + n->out_len++] = *o;
}

void raft_send(struct raft_node *n, struct raft_msg *msg)
{
    msg->src = n->cfg.node_id;
    if (n->qs_persisted >= n->qs_version) {
        struct raft_output o = {.type = RAFT_OUT_SEND, .msg = *msg};
        raft_emit(n, &o);
        return;
    }
    if (n->held_len == n->held_cap) {
        size_t cap = n->held_cap ? n->held_cap * 2 : 16;
        struct raft_held_msg *grown = realloc(n->held, cap * sizeof *grown);
        if (!grown) {
            raft_msg_clear(msg);
            n->failed = true;
            return;
        }
        n->held = grown;
        n->held_cap = cap;
    }
    n->held[n->held_len].msg = *msg;
    n->held[n->held_len].qs_version = n->qs_version;
    n->held_len++;
}

void raft_set_qs(struct raft_node *n, int32_t epoch, int32_t voted, int32_t leader)
{
    if (epoch == n->epoch && voted == n->voted_id && leader == n->leader_id)
        return;
    n->epoch = epoch;
    n->voted_id = voted;
    n->leader_id = leader;
    n->qs_version++;
    struct raft_output o = {
        .type = RAFT_OUT_PERSIST_QS,
        .qs = {.leader_epoch = epoch, .voted_id = voted, .leader_id = leader},
        .qs_version = n->qs_version,
    };
    raft_emit(n, &o);
}

void raft_set_role(struct raft_node *n, enum raft_role role)
{
    n->role = role;
    struct raft_output o = {
        .type = RAFT_OUT_ROLE,
        .role = role,
        .epoch = n->epoch,
        .leader_id = n->leader_id,
    };
    raft_emit(n, &o);
}

int64_t raft_log_end(const struct raft_node *n)
{
    if (n->log_len == 0)
        return n->log_start;
    const struct raft_entry *last = &n->log[n->log_len - 1];
    return last->offset + last->count;
}

/* Index of the entry holding offset: log_len at or past the end, 0 below the start. */
int64_t raft_log_index(const struct raft_node *n, int64_t offset)
{
    int64_t lo = 0, hi = n->log_len;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (n->log[mid].offset + n->log[mid].count <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The largest entry boundary at or below offset. */
int64_t raft_log_boundary(const struct raft_node *n, int64_t offset)
{
    if (offset >= raft_log_end(n))
        return raft_log_end(n);
    if (offset <= n->log_start)
        return n->log_start;
    const struct raft_entry *e = &n->log[raft_log_index(n, offset)];
    return e->offset == offset ? offset : e->offset;
}

int raft_log_append(struct raft_node *n, int32_t epoch, const void *data, uint32_t len, int32_t count)
{
    if (n->log_len == n->log_cap) {
        int64_t cap = n->log_cap ? n->log_cap * 2 : 64;
        struct raft_entry *grown = realloc(n->log, (size_t)cap * sizeof *grown);
        if (!grown)
            return RAFT_ERR_NOMEM;
        n->log = grown;
        n->log_cap = cap;
    }
    struct raft_entry src = {
        .offset = raft_log_end(n), .epoch = epoch, .count = count, .len = len, .data = (uint8_t *)data};
    struct raft_output o = {.type = RAFT_OUT_APPEND};
    struct raft_entry kept = src;
    if (n->cfg.entries_on_disk)
        kept.data = NULL;
    if (entry_copy(&n->log[n->log_len], &kept) != RAFT_OK)
        return RAFT_ERR_NOMEM;
    if (entry_copy(&o.entry, &src) != RAFT_OK) {
        entry_free(&n->log[n->log_len]);
        return RAFT_ERR_NOMEM;
    }
    n->log_len++;
    n->log_bytes += len;
    raft_emit(n, &o);
    return RAFT_OK;
}

/* An offset inside an entry drops that whole entry: batches are atomic. */
void raft_log_truncate(struct raft_node *n, int64_t offset)
{
    int64_t first = raft_log_index(n, offset);
    if (first >= n->log_len)
        return;
    offset = n->log[first].offset;
    for (int64_t i = first; i < n->log_len; i++) {
        n->log_bytes -= n->log[i].len;
        entry_free(&n->log[i]);
    }
    n->log_len = first;
    if (n->flushed_end > offset)
        n->flushed_end = offset;
    struct raft_output o = {.type = RAFT_OUT_TRUNCATE, .offset = offset};
    raft_emit(n, &o);
}

void raft_raise_hw(struct raft_node *n, int64_t hw)
{
    if (hw <= n->hw)
        return;
    n->hw = hw;
    struct raft_output o = {.type = RAFT_OUT_HIGH_WATERMARK, .offset = hw};
    raft_emit(n, &o);
}

/* Kafka's endOffsetForEpoch: the largest epoch in the log not above `epoch`
 * and the offset where it ends. Epochs never decrease along the log. */
void raft_end_offset_for_epoch(const struct raft_node *n, int32_t epoch, int32_t *epoch_out, int64_t *end_out)
{
    int64_t i = n->log_len - 1;
    while (i >= 0 && n->log[i].epoch > epoch)
        i--;
    if (i >= 0) {
        *epoch_out = n->log[i].epoch;
        *end_out = n->log[i].offset + n->log[i].count;
    } else {
        /* Nothing left in the log: the snapshot's id stands for what is below. */
        *epoch_out = n->log_start > 0 ? n->log_start_epoch : -1;
        *end_out = n->log_start;
    }
}

int raft_node_create(struct raft_node **out, const struct raft_config *cfg, const struct raft_quorum_state *qs,
                     const struct raft_entry *entries, int64_t n_entries, int64_t now_ms)
{
    *out = NULL;
    if (cfg->n_voters < 1 || cfg->n_voters > RAFT_MAX_VOTERS || cfg->node_id < 0 || cfg->election_timeout_ms <= 0 ||
        cfg->fetch_timeout_ms <= 0 || cfg->fetch_max_records <= 0)
        return RAFT_ERR_INVALID;
    struct raft_node *n = calloc(1, sizeof *n);
    if (!n)
        return RAFT_ERR_NOMEM;
    n->cfg = *cfg;
    n->self_index = raft_voter_index(n, cfg->node_id);
    n->rng = cfg->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)cfg->node_id + 1;
    n->now = now_ms;
    n->epoch = qs ? qs->leader_epoch : 0;
    n->voted_id = qs ? qs->voted_id : RAFT_NO_ID;
    n->leader_id = qs ? qs->leader_id : RAFT_NO_ID;
    if (cfg->log_start_offset < 0) {
        raft_node_destroy(n);
        return RAFT_ERR_INVALID;
    }
    n->log_start = cfg->log_start_offset;
    n->log_start_epoch = cfg->log_start_epoch;
    n->hw = n->log_start; /* a snapshot holds committed entries only */
    for (int64_t i = 0; i < n_entries; i++) {
        if (entries[i].offset != raft_log_end(n) || entries[i].count < 1 ||
            raft_log_append(n, entries[i].epoch, entries[i].data, entries[i].len, entries[i].count) != RAFT_OK) {
            raft_node_destroy(n);
            return RAFT_ERR_INVALID;
        }
    }
    /* Restored entries are durable already: the caller wrote them. */
    for (size_t i = 0; i < n->out_len; i++)
        raft_output_clear(&n->out[n->out_head + i]);
    n->out_len = 0;
    n->flushed_end = raft_log_end(n);
    n->leader_contact = now_ms - cfg->fetch_timeout_ms; /* not heard since the restart */
    /* A leader that restarts resigns: it never leads its old epoch again,
     * and tells the voters so they need not wait out a fetch timeout. */
    if (n->leader_id >= 0 && n->leader_id != cfg->node_id)
        raft_become_follower(n, n->epoch, n->leader_id);
    else if (n->leader_id == cfg->node_id && n->self_index >= 0)
        raft_resign(n);
    else
        raft_become_unattached(n, n->epoch, now_ms + raft_election_timeout(n));
    if (n->failed) {
        raft_node_destroy(n);
        return RAFT_ERR_NOMEM;
    }
    *out = n;
    return RAFT_OK;
}

void raft_node_destroy(struct raft_node *n)
{
    if (!n)
        return;
    for (int64_t i = 0; i < n->log_len; i++)
        entry_free(&n->log[i]);
    free(n->log);
    for (size_t i = 0; i < n->out_len; i++)
        raft_output_clear(&n->out[n->out_head + i]);
    free(n->out);
    for (size_t i = 0; i < n->held_len; i++)
        raft_msg_clear(&n->held[i].msg);
    free(n->held);
    free(n->observers);
    free(n);
}

/* Returns false once the node has failed: then inputs are ignored. */
static bool advance_clock(struct raft_node *n, int64_t now_ms)
{
    /* A caller's clock that steps back is treated as standing still. */
    if (now_ms > n->now)
        n->now = now_ms;
    return !n->failed;
}

void raft_node_tick(struct raft_node *n, int64_t now_ms)
{
    if (!advance_clock(n, now_ms))
        return;
    raft_election_tick(n);
    raft_replication_tick(n);
}

void raft_node_receive(struct raft_node *n, int64_t now_ms, const struct raft_msg *m)
{
    if (!advance_clock(n, now_ms))
        return;
    if (m->dst != n->cfg.node_id)
        return;
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ:
        raft_on_vote_req(n, m);
        break;
    case RAFT_MSG_VOTE_RESP:
        raft_on_vote_resp(n, m);
        break;
    case RAFT_MSG_BEGIN_EPOCH_REQ:
        raft_on_begin_req(n, m);
        break;
    case RAFT_MSG_END_EPOCH_REQ:
        raft_on_end_req(n, m);
        break;
    case RAFT_MSG_BEGIN_EPOCH_RESP:
    case RAFT_MSG_END_EPOCH_RESP:
        raft_on_epoch_resp(n, m);
        break;
    case RAFT_MSG_FETCH_REQ:
        raft_on_fetch_req(n, m);
        break;
    case RAFT_MSG_FETCH_RESP:
        raft_on_fetch_resp(n, m);
        break;
    }
    raft_node_tick(n, now_ms);
}

void raft_node_request_failed(struct raft_node *n, int64_t now_ms, const struct raft_msg *m)
{
    if (!advance_clock(n, now_ms))
        return;
    if (m->type == RAFT_MSG_FETCH_REQ && n->fetch_inflight && m->correlation_id == n->fetch_correlation)
        raft_fetch_failed(n);
    raft_node_tick(n, now_ms);
}

int raft_node_append(struct raft_node *n, int64_t now_ms, const void *data, uint32_t len, int32_t count,
                     int64_t *offset_out)
{
    if (!advance_clock(n, now_ms))
        return RAFT_ERR_NOMEM;
    if (n->role != RAFT_LEADER)
        return RAFT_ERR_NOT_LEADER;
    if (count < 1)
        return RAFT_ERR_INVALID;
    int64_t offset = raft_log_end(n);
    int rc = raft_log_append(n, n->epoch, data, len, count);
    if (rc != RAFT_OK)
        return rc;
    if (offset_out)
        *offset_out = offset;
    return RAFT_OK;
}

void raft_node_flushed(struct raft_node *n, int64_t now_ms, int64_t offset)
{
    if (!advance_clock(n, now_ms))
        return;
    offset = raft_log_boundary(n, offset);
    if (offset > n->flushed_end)
        n->flushed_end = offset;
    raft_update_hw(n);
    raft_replication_tick(n);
}

void raft_node_qs_persisted(struct raft_node *n, int64_t now_ms, uint64_t version)
{
    if (!advance_clock(n, now_ms))
        return;
    if (version > n->qs_persisted)
        n->qs_persisted = version;
    size_t kept = 0;
    for (size_t i = 0; i < n->held_len; i++) {
        if (n->held[i].qs_version <= n->qs_persisted) {
            struct raft_output o = {.type = RAFT_OUT_SEND, .msg = n->held[i].msg};
            raft_emit(n, &o);
        } else {
            n->held[kept++] = n->held[i];
        }
    }
    n->held_len = kept;
}

void raft_node_resign(struct raft_node *n, int64_t now_ms)
{
    if (!advance_clock(n, now_ms))
        return;
    if (n->role == RAFT_LEADER)
        raft_resign(n);
}

bool raft_node_poll(struct raft_node *n, struct raft_output *out)
{
    if (n->out_len == 0)
        return false;
    *out = n->out[n->out_head++];
    n->out_len--;
    if (n->out_len == 0)
        n->out_head = 0;
    return true;
}

enum raft_role raft_node_role(const struct raft_node *n)
{
    return n->role;
}
int32_t raft_node_epoch(const struct raft_node *n)
{
    return n->epoch;
}
int32_t raft_node_leader(const struct raft_node *n)
{
    return n->leader_id;
}
int64_t raft_node_high_watermark(const struct raft_node *n)
{
    return n->hw;
}
int64_t raft_node_log_start(const struct raft_node *n)
{
    return n->log_start;
}
int64_t raft_node_end_offset(const struct raft_node *n)
{
    return raft_log_end(n);
}
bool raft_node_is_voter(const struct raft_node *n)
{
    return n->self_index >= 0;
}
bool raft_node_failed(const struct raft_node *n)
{
    return n->failed;
}

const struct raft_entry *raft_node_entry(const struct raft_node *n, int64_t offset)
{
    if (offset < n->log_start || offset >= raft_log_end(n))
        return NULL;
    return &n->log[raft_log_index(n, offset)];
}
