/* The raft thread: ticks the core, feeds it what arrives, and applies its
 * outputs (raft_shell.h). */
#include "raft/raft_shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "raft/raft_shell_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG "raft"

void raft_shell_config_defaults(struct raft_shell_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->node_id = RAFT_NO_ID;
    cfg->election_timeout_ms = 1000;
    cfg->fetch_timeout_ms = 2000;
    cfg->election_backoff_max_ms = 1000;
    cfg->request_timeout_ms = 2000;
    cfg->retry_backoff_ms = 20;
    cfg->tick_ms = 10;
    cfg->retention_bytes = 104857600;
    cfg->retention_ms = 604800000;
    cfg->snapshot_chunk_bytes = 1 << 20;
}

bool shell_enqueue(struct raft_shell *s, struct shell_item *item)
{
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return false;
    }
    item->next = NULL;
    if (s->tail)
        s->tail->next = item;
    else
        s->head = item;
    s->tail = item;
    /* Under the lock: the raft thread closes the handle once it has seen
     * stopping, and nothing may signal it after. */
    uv_async_send(&s->wake);
    pthread_mutex_unlock(&s->mu);
    return true;
}

void raft_shell_snapshot_written(struct raft_shell *s)
{
    struct shell_item *it = calloc(1, sizeof *it);
    if (!it)
        return; /* the periodic check finds the snapshot */
    it->kind = ITEM_SNAPSHOT_WRITTEN;
    if (!shell_enqueue(s, it))
        free(it);
}

/* ---- outputs ---- */

static void store_error(struct raft_shell *s, const char *what, const char *err)
{
    /* Nothing more is reported durable to the core: it stops counting
     * this node's log and votes instead of trusting a broken store. */
    if (!s->store_failed)
        logger_error(LOG, "node %d: the metadata quorum store failed to %s: %s; this node stops acknowledging writes",
                     s->cfg.node_id, what, err);
    s->store_failed = true;
}

static int write_response_body(struct kafka_writer *w, int16_t version, const void *arg)
{
    return raft_codec_write_response(w, version, arg);
}

struct fetch_body {
    const struct raft_msg *msg;
    const struct raft_codec_endpoint *leader;
};

static int write_fetch_body(struct kafka_writer *w, int16_t version, const void *arg)
{
    const struct fetch_body *b = arg;
    return raft_codec_write_fetch_answer(w, version, b->msg, b->leader);
}

/* The core answered an inbound request: send it back in its frame. */
static void send_response(struct raft_shell *s, const struct raft_msg *m)
{
    for (size_t i = 0; i < s->n_pending; i++) {
        struct shell_pending *p = &s->pending[i];
        if (p->local_correlation != m->correlation_id || p->src != m->dst)
            continue;
        struct shell_reply_to reply = p->reply;
        int32_t max_bytes = p->max_bytes;
        s->pending[i] = s->pending[--s->n_pending];
        if (m->type != RAFT_MSG_FETCH_RESP) {
            shell_respond(&reply, write_response_body, m);
            return;
        }
        struct raft_msg filled;
        shell_fill_fetch(s, m, max_bytes, &filled);
        /* The leader's endpoint goes with the answer (Kafka's voters do
         * the same from Fetch v17): an observer that knows only bootstrap
         * servers finds the leader through it. */
        struct raft_codec_endpoint leader = {.node_id = m->u.fetch_resp.current_leader_id};
        bool known = raft_shell_node_endpoint(s, leader.node_id, leader.host, sizeof leader.host, &leader.port);
        struct fetch_body body = {&filled, known ? &leader : NULL};
        shell_respond(&reply, write_fetch_body, &body);
        raft_msg_clear(&filled);
        return;
    }
    /* Its request timed out here already. */
}

static void set_status(struct raft_shell *s)
{
    pthread_mutex_lock(&s->mu);
    s->status.role = raft_node_role(s->node);
    s->status.epoch = raft_node_epoch(s->node);
    s->status.leader_id = raft_node_leader(s->node);
    s->status.high_watermark = raft_node_high_watermark(s->node);
    s->status.end_offset = raft_node_end_offset(s->node);
    s->status.log_start = raft_node_log_start(s->node);
    pthread_mutex_unlock(&s->mu);
}

static void apply_output(struct raft_shell *s, struct raft_output *out, bool *appended, uint64_t *qs_version)
{
    char err[256] = "";
    switch (out->type) {
    case RAFT_OUT_SEND:
        if (raft_codec_is_request(out->msg.type))
            shell_send_request(s, &out->msg);
        else
            send_response(s, &out->msg);
        break;
    case RAFT_OUT_APPEND:
        if (!s->store_failed && s->cfg.store_ops->append(s->cfg.store, &out->entry, err, sizeof err) != 0)
            store_error(s, "append", err);
        *appended = true;
        break;
    case RAFT_OUT_TRUNCATE:
        if (!s->store_failed && s->cfg.store_ops->truncate(s->cfg.store, out->offset, err, sizeof err) != 0)
            store_error(s, "truncate", err);
        break;
    case RAFT_OUT_PERSIST_QS:
        if (!s->store_failed && s->cfg.store_ops->persist_qs(s->cfg.store, &out->qs, err, sizeof err) != 0)
            store_error(s, "persist the quorum state", err);
        else
            *qs_version = out->qs_version;
        break;
    case RAFT_OUT_HIGH_WATERMARK:
        /* The listener may apply for long (a broker opening thousands of
         * partitions): publish the role and leader first, or a status left
         * at "no leader" by a fetch timeout stays so for the whole apply,
         * and a broker, heartbeating the leader it names, is fenced. */
        set_status(s);
        if (s->cfg.listener.on_high_watermark)
            s->cfg.listener.on_high_watermark(s->cfg.listener.ctx, s, out->offset);
        break;
    case RAFT_OUT_FETCH_SNAPSHOT:
        /* Behind the leader's log start (KIP-630). */
        shell_download_start(s, out->offset, out->epoch, out->leader_id);
        break;
    case RAFT_OUT_ROLE:
        logger_info(LOG, "node %d is %s in epoch %d (leader %d)", s->cfg.node_id, raft_role_name(out->role), out->epoch,
                    out->leader_id);
        if (s->cfg.listener.on_role)
            s->cfg.listener.on_role(s->cfg.listener.ctx, out->role, out->epoch, out->leader_id);
        break;
    }
}

/* Applies every queued output; reports durability, which may queue more. */
static void drain(struct raft_shell *s)
{
    for (;;) {
        bool appended = false;
        uint64_t qs_version = 0;
        struct raft_output out;
        while (raft_node_poll(s->node, &out)) {
            apply_output(s, &out, &appended, &qs_version);
            raft_output_clear(&out);
        }
        if (s->store_failed && !s->store_resigned && raft_node_role(s->node) == RAFT_LEADER) {
            /* A leader that cannot write would go on answering fetches, so
             * no follower would ever time out and the quorum would commit
             * nothing more: hand it over (EndQuorumEpoch). Unable to persist
             * a vote, this node cannot lead again, nor count. */
            logger_error(LOG, "node %d: resigning the leadership of epoch %d: its metadata store cannot write",
                         s->cfg.node_id, raft_node_epoch(s->node));
            s->store_resigned = true;
            raft_node_resign(s->node, clock_mono_ms());
            continue;
        }
        if (s->store_failed || (!appended && !qs_version))
            break;
        int64_t now = clock_mono_ms();
        if (qs_version)
            raft_node_qs_persisted(s->node, now, qs_version);
        if (appended) {
            char err[256] = "";
            int64_t end = 0;
            if (s->cfg.store_ops->flush(s->cfg.store, &end, err, sizeof err) != 0)
                store_error(s, "flush", err);
            else
                raft_node_flushed(s->node, now, end);
        }
    }
    if (raft_node_failed(s->node) && !s->store_failed) {
        logger_error(LOG, "node %d: out of memory in the quorum core; it ignores every input until restarted",
                     s->cfg.node_id);
        s->store_failed = true;
    }
    set_status(s);
}

/* ---- inputs ---- */

static int write_describe_body(struct kafka_writer *w, int16_t version, const void *arg)
{
    return raft_codec_write_describe_quorum(w, version, arg);
}

/* The core's times are on the monotonic clock; the answer carries wall time. */
static void view_replicas(const struct raft_replica_state *in, int n, int64_t mono, int64_t wall,
                          struct raft_quorum_replica *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = (struct raft_quorum_replica){in[i].replica_id, in[i].log_end_offset, -1, -1};
        if (in[i].last_fetch_ms >= 0)
            out[i].last_fetch_timestamp = wall - (mono - in[i].last_fetch_ms);
        if (in[i].last_caught_up_ms >= 0)
            out[i].last_caught_up_timestamp = wall - (mono - in[i].last_caught_up_ms);
    }
}

/* The leader answers from what it tracks of every replica (Kafka's
 * LeaderState); any other node with its own view: itself and unknowns. */
static void describe_quorum(struct raft_shell *s, const struct shell_reply_to *reply)
{
    const struct raft_node *n = s->node;
    struct raft_quorum_view v = {
        .leader_id = raft_node_leader(n),
        .leader_epoch = raft_node_epoch(n),
        .high_watermark = raft_node_high_watermark(n),
    };
    int64_t mono = clock_mono_ms(), wall = clock_wall_ms();
    struct raft_replica_state states[RAFT_MAX_VOTERS];
    int n_voters = raft_node_voter_states(n, states);
    if (n_voters >= 0) {
        v.n_voters = n_voters;
        view_replicas(states, n_voters, mono, wall, v.voters);
        struct raft_replica_state observers[RAFT_QUORUM_VIEW_MAX_OBSERVERS];
        int n_observers = raft_node_observer_states(n, observers, RAFT_QUORUM_VIEW_MAX_OBSERVERS);
        v.n_observers = n_observers < RAFT_QUORUM_VIEW_MAX_OBSERVERS ? n_observers : RAFT_QUORUM_VIEW_MAX_OBSERVERS;
        if (v.n_observers > 0)
            view_replicas(observers, v.n_observers, mono, wall, v.observers);
        else
            v.n_observers = 0;
    } else {
        for (int i = 0; i < s->cfg.n_voters; i++) {
            struct raft_quorum_replica *r = &v.voters[v.n_voters++];
            *r = (struct raft_quorum_replica){s->cfg.voters[i].id, -1, -1, -1};
            if (r->replica_id == s->cfg.node_id) {
                r->log_end_offset = raft_node_end_offset(n);
                r->last_fetch_timestamp = r->last_caught_up_timestamp = wall;
            }
        }
    }
    shell_respond(reply, write_describe_body, &v);
}

static void take_request(struct raft_shell *s, struct shell_item *it, int64_t now)
{
    if (s->n_pending == s->cap_pending) {
        size_t ncap = s->cap_pending ? s->cap_pending * 2 : 16;
        struct shell_pending *grown = realloc(s->pending, ncap * sizeof *grown);
        if (!grown) {
            shell_close(it->reply.net);
            return;
        }
        s->pending = grown;
        s->cap_pending = ncap;
    }
    int32_t local = ++s->next_local_correlation;
    s->pending[s->n_pending++] = (struct shell_pending){
        .reply = it->reply,
        .src = it->msg.src,
        .local_correlation = local,
        .max_bytes = it->msg.type == RAFT_MSG_FETCH_REQ ? it->msg.u.fetch_req.max_bytes : 0,
        .received_ms = now};
    it->msg.correlation_id = local;
    it->msg.dst = s->cfg.node_id;
    raft_node_receive(s->node, now, &it->msg);
}

/* The records as one batch: the one entry the core appends for them. */
static int records_batch(const struct shell_append *a, uint8_t **out, size_t *out_len)
{
    int64_t now = clock_wall_ms();
    struct record_batch_builder b;
    record_batch_builder_init(&b, now);
    int rc = 0;
    for (int32_t i = 0; i < a->count && rc == 0; i++)
        rc = record_batch_builder_add(&b, now, NULL, -1, a->records[i].data, (int32_t)a->records[i].len, NULL, 0);
    if (rc == 0)
        rc = record_batch_builder_finish(&b, out, out_len);
    record_batch_builder_free(&b);
    return rc;
}

static void take_append(struct raft_shell *s, struct shell_append *a, int64_t now)
{
    a->epoch = raft_node_epoch(s->node);
    a->rc = 0;
    if (raft_node_role(s->node) != RAFT_LEADER || (a->want_epoch >= 0 && a->want_epoch != a->epoch))
        a->rc = RAFT_ERR_NOT_LEADER;
    uint8_t *batch = NULL;
    size_t len = 0;
    if (a->rc == 0 && (records_batch(a, &batch, &len) != 0 || len > UINT32_MAX))
        a->rc = -1;
    if (a->rc == 0) {
        int64_t first = 0;
        int rc = raft_node_append(s->node, now, batch, (uint32_t)len, a->count, &first);
        a->rc = rc == RAFT_OK ? 0 : rc == RAFT_ERR_NOT_LEADER ? rc : -1;
        a->last_offset = first + a->count - 1;
    }
    free(batch);
    drain(s);
    pthread_mutex_lock(&s->mu);
    a->done = true;
    pthread_cond_broadcast(&s->appended);
    pthread_mutex_unlock(&s->mu);
}

static void take_item(struct raft_shell *s, struct shell_item *it)
{
    int64_t now = clock_mono_ms();
    switch (it->kind) {
    case ITEM_REQUEST:
        take_request(s, it, now);
        break;
    case ITEM_DESCRIBE:
        describe_quorum(s, &it->reply);
        break;
    case ITEM_RESPONSE:
        raft_node_receive(s->node, now, &it->msg);
        break;
    case ITEM_REQUEST_FAILED:
        raft_node_request_failed(s->node, now, &it->msg);
        break;
    case ITEM_APPEND:
        take_append(s, it->append, now);
        return;
    case ITEM_SNAPSHOT_CHUNK:
        shell_download_chunk(s, it->chunk);
        break;
    case ITEM_SNAPSHOT_WRITTEN:
        s->next_clean_ms = 0; /* retention is checked now */
        shell_maybe_clean(s, now);
        break;
    }
    drain(s);
}

/* Requests the core never answered (it drops some, e.g. from a stale
 * epoch) are closed, so the sender's connection does not stall. */
static void expire_pending(struct raft_shell *s, int64_t now)
{
    for (size_t i = 0; i < s->n_pending;) {
        if (now - s->pending[i].received_ms <= s->cfg.request_timeout_ms) {
            i++;
            continue;
        }
        shell_close(s->pending[i].reply.net);
        s->pending[i] = s->pending[--s->n_pending];
    }
}

static void on_tick(uv_timer_t *t)
{
    struct raft_shell *s = t->data;
    int64_t now = clock_mono_ms();
    raft_node_tick(s->node, now);
    drain(s);
    expire_pending(s, now);
    shell_maybe_clean(s, now);
}

static void free_item(struct shell_item *it)
{
    raft_msg_clear(&it->msg);
    shell_chunk_free(it->chunk);
    free(it);
}

static void on_wake(uv_async_t *a)
{
    struct raft_shell *s = a->data;
    pthread_mutex_lock(&s->mu);
    struct shell_item *it = s->head;
    s->head = s->tail = NULL;
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    /* Items taken before a stop are still served; the rest are failed by
     * raft_shell_stop. */
    while (it) {
        struct shell_item *next = it->next;
        take_item(s, it);
        if (it->kind == ITEM_APPEND)
            free(it);
        else
            free_item(it);
        it = next;
    }
    if (stopping) {
        uv_close((uv_handle_t *)&s->timer, NULL);
        uv_close((uv_handle_t *)&s->wake, NULL);
    }
}

static void raft_thread(void *arg)
{
    struct raft_shell *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
}

/* ---- start / stop ---- */

/* A cleaned log (its store starts past 0) starts where the newest snapshot
 * ends: the entries below are in it, and the epoch before the start is
 * the snapshot's. A snapshot past the log's end (installed, then a crash
 * before the store restarted) restarts the store there. */
static int log_start(struct raft_shell *s, struct raft_config *rc, char *err, size_t errlen)
{
    int64_t start = s->cfg.store_ops->start_offset ? s->cfg.store_ops->start_offset(s->cfg.store) : 0;
    if (start == 0)
        return 0;
    struct metadata_snapshot_id *ids = NULL;
    int n = s->cfg.snapshot_dir[0] ? metadata_snapshot_list(s->cfg.snapshot_dir, &ids, err, errlen) : 0;
    if (n < 0)
        return -1;
    /* The newest that reads back whole: the one the listener loaded. */
    struct metadata_snapshot_id newest = {-1, -1};
    for (int i = n - 1; i >= 0 && newest.end_offset < 0; i--) {
        struct metadata_snapshot_contents snap;
        char why[256];
        if (metadata_snapshot_read(s->cfg.snapshot_dir, &ids[i], &snap, why, sizeof why) != 0)
            continue;
        metadata_snapshot_contents_free(&snap);
        newest = ids[i];
    }
    free(ids);
    if (newest.end_offset < start) {
        snprintf(err, errlen, "the metadata log starts at %lld but no readable snapshot covers the offsets below it",
                 (long long)start);
        return -1;
    }
    struct raft_entry *probe = NULL;
    int64_t n_probe = 0;
    if (shell_load_headers(s, start, &probe, &n_probe, err, errlen) != 0)
        return -1;
    int64_t end = n_probe ? probe[n_probe - 1].offset + probe[n_probe - 1].count : start;
    free(probe);
    if (newest.end_offset > end && s->cfg.store_ops->start_at(s->cfg.store, newest.end_offset, err, errlen) != 0)
        return -1;
    if (newest.end_offset < end && newest.end_offset > start &&
        s->cfg.store_ops->delete_before(s->cfg.store, newest.end_offset, err, errlen) != 0)
        return -1;
    rc->log_start_offset = newest.end_offset;
    rc->log_start_epoch = newest.epoch;
    return 0;
}

static int create_node(struct raft_shell *s, char *err, size_t errlen)
{
    struct raft_config rc;
    raft_config_defaults(&rc);
    rc.node_id = s->cfg.node_id;
    for (int i = 0; i < s->cfg.n_voters; i++)
        rc.voters[i] = s->cfg.voters[i].id;
    rc.n_voters = s->cfg.n_voters;
    rc.election_timeout_ms = s->cfg.election_timeout_ms;
    rc.fetch_timeout_ms = s->cfg.fetch_timeout_ms;
    rc.election_backoff_max_ms = s->cfg.election_backoff_max_ms;
    rc.retry_backoff_ms = s->cfg.retry_backoff_ms;
    /* The store holds the bytes; the core only their headers. */
    rc.entries_on_disk = true;
    rc.seed = (uint64_t)clock_mono_ns() ^ ((uint64_t)(uint32_t)s->cfg.node_id << 32);

    struct raft_quorum_state qs;
    bool has_qs = false;
    if (s->cfg.store_ops->load_qs(s->cfg.store, &qs, &has_qs, err, errlen) != 0)
        return -1;
    shell_download_remove_leftovers(s);
    if (log_start(s, &rc, err, errlen) != 0)
        return -1;
    struct raft_entry *headers = NULL;
    int64_t n_entries = 0;
    if (shell_load_headers(s, rc.log_start_offset, &headers, &n_entries, err, errlen) != 0)
        return -1;
    int rc_create = raft_node_create(&s->node, &rc, has_qs ? &qs : NULL, headers, n_entries, clock_mono_ms());
    int64_t end = n_entries ? headers[n_entries - 1].offset + headers[n_entries - 1].count : 0;
    free(headers);
    if (rc_create != RAFT_OK) {
        snprintf(err, errlen, "cannot start the quorum core (error %d)", rc_create);
        return -1;
    }
    logger_info(LOG,
                "node %d starts the metadata quorum of %d voters: epoch %d, voted for %d, %lld entries to offset %lld",
                s->cfg.node_id, s->cfg.n_voters, has_qs ? qs.leader_epoch : 0, has_qs ? qs.voted_id : RAFT_NO_ID,
                (long long)n_entries, (long long)end);
    return 0;
}

static int start_client(struct raft_shell *s, char *err, size_t errlen)
{
    struct net_client_config cc;
    net_client_config_defaults(&cc);
    snprintf(cc.client_id, sizeof cc.client_id, "raft-client-%d", s->cfg.node_id);
    cc.request_timeout_ms = s->cfg.request_timeout_ms;
    cc.reconnect_backoff_ms = s->cfg.retry_backoff_ms > 0 ? s->cfg.retry_backoff_ms : 1;
    cc.reconnect_backoff_max_ms = s->cfg.election_timeout_ms;
    cc.connection_setup_timeout_ms = s->cfg.request_timeout_ms;
    if (s->cfg.client_setup)
        s->cfg.client_setup(s->cfg.client_setup_ctx, &cc);
    if (net_client_create(&cc, &s->client, err, errlen) != 0)
        return -1;
    for (int i = 0; i < s->cfg.n_voters; i++) {
        const struct raft_shell_voter *v = &s->cfg.voters[i];
        if (v->id != s->cfg.node_id && net_client_add_node(s->client, v->id, v->host, v->port) != 0) {
            snprintf(err, errlen, "cannot add voter %d (%s:%d) to the quorum client", v->id, v->host, v->port);
            return -1;
        }
    }
    return 0;
}

int raft_shell_start(const struct raft_shell_config *cfg, struct raft_shell **out, char *err, size_t errlen)
{
    *out = NULL;
    struct raft_shell *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        if (cfg->store_ops && cfg->store)
            cfg->store_ops->close(cfg->store);
        return -1;
    }
    s->cfg = *cfg;
    if (s->cfg.tick_ms <= 0)
        s->cfg.tick_ms = 10;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->appended, NULL);
    if (!s->cfg.store_ops || !s->cfg.store) {
        snprintf(err, errlen, "no store for the metadata quorum");
        goto fail;
    }
    if (create_node(s, err, errlen) != 0 || start_client(s, err, errlen) != 0)
        goto fail;
    set_status(s);
    if (uv_loop_init(&s->loop) != 0) {
        snprintf(err, errlen, "cannot create the raft loop");
        goto fail;
    }
    uv_timer_init(&s->loop, &s->timer);
    uv_async_init(&s->loop, &s->wake, on_wake);
    s->timer.data = s->wake.data = s;
    uv_timer_start(&s->timer, on_tick, (uint64_t)s->cfg.tick_ms, (uint64_t)s->cfg.tick_ms);
    if (uv_thread_create(&s->thread, raft_thread, s) != 0) {
        snprintf(err, errlen, "cannot start the raft thread");
        uv_close((uv_handle_t *)&s->timer, NULL);
        uv_close((uv_handle_t *)&s->wake, NULL);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        goto fail;
    }
    s->thread_started = true;
    *out = s;
    return 0;
fail:
    if (s->client)
        net_client_destroy(s->client);
    raft_node_destroy(s->node);
    if (s->cfg.store_ops && s->cfg.store)
        s->cfg.store_ops->close(s->cfg.store);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->appended);
    free(s);
    return -1;
}

/* Fails what the raft thread will never take. */
static void fail_items(struct raft_shell *s, struct shell_item *it)
{
    while (it) {
        struct shell_item *next = it->next;
        if (it->kind == ITEM_APPEND) {
            pthread_mutex_lock(&s->mu);
            it->append->rc = -1;
            it->append->done = true;
            pthread_cond_broadcast(&s->appended);
            pthread_mutex_unlock(&s->mu);
            free(it);
        } else {
            if (it->kind == ITEM_REQUEST || it->kind == ITEM_DESCRIBE)
                shell_close(it->reply.net);
            free_item(it);
        }
        it = next;
    }
}

void raft_shell_stop(struct raft_shell *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    uv_async_send(&s->wake);
    pthread_mutex_unlock(&s->mu);
    uv_thread_join(&s->thread);
    uv_loop_close(&s->loop);
    /* Its completions of requests still in flight only free them now
     * (enqueueing is refused while stopping). */
    net_client_destroy(s->client);
    pthread_mutex_lock(&s->mu);
    struct shell_item *left = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    fail_items(s, left);
    for (size_t i = 0; i < s->n_pending; i++)
        shell_close(s->pending[i].reply.net);
    free(s->pending);
    if (s->download.active) { /* a download cut short by the stop */
        close(s->download.fd);
        unlink(s->download.part_path);
    }
    raft_node_destroy(s->node);
    free(s->scratch.data);
    s->cfg.store_ops->close(s->cfg.store);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->appended);
    free(s);
}

void raft_shell_status(struct raft_shell *s, struct raft_shell_status *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->status;
    pthread_mutex_unlock(&s->mu);
}

int raft_shell_append(struct raft_shell *s, int32_t epoch, const struct raft_shell_record *records, int32_t count,
                      int32_t *epoch_out, int64_t *last_offset_out)
{
    if (count <= 0)
        return -1;
    struct shell_append a = {.records = records, .count = count, .want_epoch = epoch, .rc = -1};
    struct shell_item *it = calloc(1, sizeof *it);
    if (!it)
        return -1;
    it->kind = ITEM_APPEND;
    it->append = &a;
    if (!shell_enqueue(s, it)) {
        free(it);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    while (!a.done)
        pthread_cond_wait(&s->appended, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (epoch_out)
        *epoch_out = a.epoch;
    if (a.rc == 0 && last_offset_out)
        *last_offset_out = a.last_offset;
    return a.rc;
}

const struct raft_entry *raft_shell_entry(struct raft_shell *s, int64_t offset)
{
    const struct raft_entry *e = raft_node_entry(s->node, offset);
    return e && !e->data ? shell_entry_from_store(s, e) : e;
}
