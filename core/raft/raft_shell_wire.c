/* Frames in and out of the shell: requests on the controller listener
 * (decoded on the network layer's io thread), their responses, and the
 * core's requests to other voters through the outbound client. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/api_table.h"
#include "protocol/generated/api_versions_response.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/request_header.h"
#include "raft/raft_shell_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG "raft"
#define API_VERSIONS_KEY 18
#define API_VERSIONS_MAX 4

void shell_close(struct net_request *net)
{
    net_request_complete(net, NULL, 0, true);
}

void shell_respond(const struct shell_reply_to *reply, shell_body_fn body_fn, const void *arg)
{
    struct kafka_writer w;
    if (kafka_writer_init(&w, 256) != 0) {
        shell_close(reply->net);
        return;
    }
    size_t size_at = kafka_writer_reserve(&w, 4);
    kafka_write_int32(&w, reply->correlation_id);
    if (kafka_response_header_version(reply->api_key, reply->api_version) >= 1)
        kafka_write_uvarint(&w, 0);
    if (body_fn(&w, reply->api_version, arg) != 0 || w.failed) {
        logger_warn(LOG, "could not encode a response to API %d v%d for %s; closing the connection", reply->api_key,
                    reply->api_version, reply->net->peer);
        kafka_writer_free(&w);
        shell_close(reply->net);
        return;
    }
    kafka_writer_patch_int32(&w, size_at, (int32_t)(kafka_writer_total_len(&w) - 4));
    net_request_complete(reply->net, &w, 0, false);
    kafka_writer_free(&w);
}

/* ---- ApiVersions: what the controller listener serves ---- */

struct api_versions_arg {
    const struct raft_shell *s;
    int16_t error;
};

static int write_api_versions(struct kafka_writer *w, int16_t version, const void *arg)
{
    const struct api_versions_arg *a = arg;
    const struct raft_shell *s = a->s;
    int16_t error = a->error;
    static const int16_t keys[] = {RAFT_API_FETCH,
                                   API_VERSIONS_KEY,
                                   RAFT_API_VOTE,
                                   RAFT_API_BEGIN_QUORUM_EPOCH,
                                   RAFT_API_END_QUORUM_EPOCH,
                                   RAFT_API_DESCRIBE_QUORUM,
                                   RAFT_API_FETCH_SNAPSHOT};
    struct api_versions_response_api_version
        list[sizeof keys / sizeof keys[0] + RAFT_SHELL_MAX_OTHER_APIS + RAFT_SHELL_MAX_FRONT_APIS];
    size_t n = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < n; i++) {
        list[i].api_key = keys[i];
        if (keys[i] == API_VERSIONS_KEY) {
            list[i].min_version = 0;
            list[i].max_version = API_VERSIONS_MAX;
        } else {
            raft_codec_served(keys[i], &list[i].min_version, &list[i].max_version);
        }
    }
    for (int i = 0; i < s->cfg.n_other_api_keys && i < RAFT_SHELL_MAX_OTHER_APIS; i++) {
        const struct kafka_api_desc *d = kafka_api_lookup(s->cfg.other_api_keys[i]);
        if (d)
            list[n++] = (struct api_versions_response_api_version){
                .api_key = d->api_key, .min_version = d->min_version, .max_version = d->max_version};
    }
    for (int i = 0; i < s->cfg.n_front_apis && i < RAFT_SHELL_MAX_FRONT_APIS; i++)
        list[n++] = (struct api_versions_response_api_version){.api_key = s->cfg.front_apis[i].api_key,
                                                               .min_version = s->cfg.front_apis[i].min_version,
                                                               .max_version = s->cfg.front_apis[i].max_version};
    struct api_versions_response resp;
    api_versions_response_init(&resp);
    resp.error_code = error;
    resp.api_keys = list;
    resp.api_keys_count = (int32_t)n;
    return api_versions_response_encode(&resp, w, version);
}

static void answer_api_versions(const struct raft_shell *s, struct shell_reply_to *reply)
{
    struct api_versions_arg arg = {s, KAFKA_ERR_NONE};
    if (reply->api_version > API_VERSIONS_MAX) {
        /* Kafka's fallback: v0 layout, UNSUPPORTED_VERSION, our ranges. */
        reply->api_version = 0;
        arg.error = KAFKA_ERR_UNSUPPORTED_VERSION;
    }
    shell_respond(reply, write_api_versions, &arg);
}

static bool is_other_api(const struct raft_shell *s, int16_t key)
{
    for (int i = 0; s->cfg.other_handler && i < s->cfg.n_other_api_keys; i++)
        if (s->cfg.other_api_keys[i] == key)
            return true;
    return false;
}

/* ---- inbound ---- */

bool shell_log_now(struct raft_shell *s, int64_t *last_ms)
{
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&s->mu);
    bool quiet = *last_ms && now - *last_ms < 5000;
    if (!quiet)
        *last_ms = now;
    pthread_mutex_unlock(&s->mu);
    return !quiet;
}

void shell_voter_set_mismatch(struct raft_shell *s, int64_t *last_ms, const char *what, int32_t other)
{
    if (!shell_log_now(s, last_ms))
        return;
    char ids[RAFT_MAX_VOTERS * 12] = "";
    size_t used = 0;
    for (int i = 0; i < s->cfg.n_voters && used < sizeof ids; i++)
        used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%d", i ? "," : "", s->cfg.voters[i].id);
    logger_error(LOG,
                 "controller.quorum.voters disagree between nodes: %s node %d, but this node %d has voters "
                 "(%s); give every node the same controller.quorum.voters",
                 what, other, s->cfg.node_id, ids);
}

static bool is_voter(const struct raft_shell *s, int32_t id)
{
    for (int i = 0; i < s->cfg.n_voters; i++)
        if (s->cfg.voters[i].id == id)
            return true;
    return false;
}

static int write_error_body(struct kafka_writer *w, int16_t version, const void *arg)
{
    const struct shell_reply_to *reply = arg;
    const int16_t *code = (const int16_t *)(reply + 1);
    return raft_codec_write_error_response(w, reply->api_key, version, *code);
}

static void refuse(const struct shell_reply_to *reply, int16_t code)
{
    struct {
        struct shell_reply_to reply;
        int16_t code;
    } arg = {*reply, code};
    shell_respond(reply, write_error_body, &arg);
}

static struct shell_item *new_item(enum shell_item_kind kind, const struct shell_reply_to *reply)
{
    struct shell_item *it = calloc(1, sizeof *it);
    if (it) {
        it->kind = kind;
        it->reply = *reply;
    }
    return it;
}

void raft_shell_handle_request(struct net_request *req, void *arg)
{
    struct raft_shell *s = arg;
    struct kafka_reader r;
    kafka_reader_init(&r, req->frame, req->frame_len);
    if (req->frame_len < 8) {
        shell_close(req);
        return;
    }
    struct shell_reply_to reply = {.net = req};
    reply.api_key = (int16_t)((uint16_t)req->frame[0] << 8 | req->frame[1]);
    reply.api_version = (int16_t)((uint16_t)req->frame[2] << 8 | req->frame[3]);
    if (is_other_api(s, reply.api_key)) {
        s->cfg.other_handler(req, s->cfg.other_ctx);
        return;
    }
    int16_t min = 0, max = 0;
    bool served = reply.api_key == API_VERSIONS_KEY || raft_codec_served(reply.api_key, &min, &max);
    int16_t header_version = kafka_request_header_version(reply.api_key, reply.api_version);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct request_header header;
    request_header_init(&header);
    if (!served || header_version < 0 || request_header_decode(&header, &r, header_version, &arena) != 0) {
        logger_warn(LOG, "request API %d v%d from %s is not served on the controller listener; closing", reply.api_key,
                    reply.api_version, req->peer);
        kafka_arena_free(&arena);
        shell_close(req);
        return;
    }
    kafka_arena_free(&arena);
    reply.correlation_id = header.correlation_id;
    if (reply.api_key == API_VERSIONS_KEY) {
        answer_api_versions(s, &reply);
        return;
    }
    if (reply.api_version < min || reply.api_version > max) {
        logger_warn(LOG, "%s v%d from %s is outside the served range %d-%d; closing",
                    kafka_api_lookup(reply.api_key)->name, reply.api_version, req->peer, min, max);
        shell_close(req);
        return;
    }
    const uint8_t *body = req->frame + (req->frame_len - kafka_reader_remaining(&r));
    struct shell_item *it = NULL;
    if (reply.api_key == RAFT_API_FETCH_SNAPSHOT) {
        shell_serve_fetch_snapshot(s, &reply, body, kafka_reader_remaining(&r));
        return;
    }
    if (reply.api_key == RAFT_API_DESCRIBE_QUORUM) {
        it = new_item(ITEM_DESCRIBE, &reply);
    } else {
        struct raft_msg msg;
        char err[256] = "";
        int rc = raft_codec_read_request(reply.api_key, reply.api_version, body, kafka_reader_remaining(&r),
                                         s->cfg.cluster_id[0] ? s->cfg.cluster_id : NULL, &msg, err, sizeof err);
        if (rc < 0) {
            logger_warn(LOG, "malformed quorum request from %s: %s; closing", req->peer, err);
            shell_close(req);
            return;
        }
        if (rc > 0) {
            if (rc == KAFKA_ERR_INCONSISTENT_CLUSTER_ID && shell_log_now(s, &s->cluster_id_refused_ms))
                logger_error(LOG,
                             "%s sent a %s request for another cluster (this is cluster %s): refused with "
                             "INCONSISTENT_CLUSTER_ID",
                             req->peer, kafka_api_lookup(reply.api_key)->name, s->cfg.cluster_id);
            refuse(&reply, (int16_t)rc);
            return;
        }
        if ((msg.type == RAFT_MSG_VOTE_REQ || msg.type == RAFT_MSG_BEGIN_EPOCH_REQ ||
             msg.type == RAFT_MSG_END_EPOCH_REQ) &&
            !is_voter(s, msg.src))
            shell_voter_set_mismatch(s, &s->voter_set_request_ms,
                                     "a quorum request (Vote, BeginQuorumEpoch or EndQuorumEpoch) came from", msg.src);
        it = new_item(ITEM_REQUEST, &reply);
        if (it)
            it->msg = msg;
    }
    if (!it || !shell_enqueue(s, it)) {
        free(it);
        shell_close(req);
    }
}

/* ---- controller endpoints ---- */

/* A configured voter's endpoint (ids >= 0: bootstrap entries name no node). */
static const struct raft_shell_voter *configured_voter(const struct raft_shell *s, int32_t id)
{
    for (int i = 0; id >= 0 && i < s->cfg.n_voters; i++)
        if (s->cfg.voters[i].id == id)
            return &s->cfg.voters[i];
    return NULL;
}

void shell_learn_endpoint(struct raft_shell *s, const struct raft_codec_endpoint *ep)
{
    if (ep->node_id < 0 || configured_voter(s, ep->node_id))
        return;
    pthread_mutex_lock(&s->mu);
    int i = 0;
    while (i < s->n_learned && s->learned[i].node_id != ep->node_id)
        i++;
    bool same = i < s->n_learned && s->learned[i].port == ep->port && strcmp(s->learned[i].host, ep->host) == 0;
    if (!same && i == s->n_learned) {
        /* Full: the oldest goes (a quorum has at most RAFT_MAX_VOTERS). */
        if (s->n_learned == RAFT_MAX_VOTERS) {
            memmove(&s->learned[0], &s->learned[1], (RAFT_MAX_VOTERS - 1) * sizeof s->learned[0]);
            i = RAFT_MAX_VOTERS - 1;
        } else {
            s->n_learned++;
        }
    }
    if (!same)
        s->learned[i] = *ep;
    pthread_mutex_unlock(&s->mu);
    if (same)
        return;
    logger_info(LOG, "node %d: the quorum names controller %d at %s:%d", s->cfg.node_id, ep->node_id, ep->host,
                ep->port);
    /* Only on a change: adding a node again closes its connection. */
    if (net_client_add_node(s->client, ep->node_id, ep->host, ep->port) != 0)
        logger_warn(LOG, "cannot add controller %d (%s:%d) to the quorum client", ep->node_id, ep->host, ep->port);
}

bool raft_shell_node_endpoint(struct raft_shell *s, int32_t node_id, char *host, size_t hostlen, int *port)
{
    const struct raft_shell_voter *v = configured_voter(s, node_id);
    if (v) {
        snprintf(host, hostlen, "%s", v->host);
        *port = v->port;
        return true;
    }
    bool found = false;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; node_id >= 0 && i < s->n_learned && !found; i++) {
        if (s->learned[i].node_id != node_id)
            continue;
        snprintf(host, hostlen, "%s", s->learned[i].host);
        *port = s->learned[i].port;
        found = true;
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* ---- outbound ---- */

struct outbound {
    struct raft_shell *s;
    struct raft_msg msg; /* a request: owns nothing */
};

static int encode_outbound(struct kafka_writer *w, int16_t version, void *ctx)
{
    struct outbound *o = ctx;
    return raft_codec_write_request(w, version, o->s->cfg.cluster_id[0] ? o->s->cfg.cluster_id : NULL, &o->msg);
}

/* Tells the core that its request o will get no answer, so that it need
 * not wait for its own timers (a Fetch to a leader just killed). */
static void hand_back_failure(struct outbound *o)
{
    struct shell_item *it = calloc(1, sizeof *it);
    if (!it)
        return;
    it->kind = ITEM_REQUEST_FAILED;
    it->msg = o->msg; /* a request: owns nothing */
    if (!shell_enqueue(o->s, it))
        free(it);
}

/* On the client's thread: map the answer and hand it to the raft thread.
 * A failed Fetch is reported to the core; other failed requests are
 * simply lost: the core's timers cover them. */
static void outbound_done(struct net_client_result *result, void *ctx)
{
    struct outbound *o = ctx;
    if (result->status == NET_CLIENT_OK && result->response) {
        struct shell_item *it = calloc(1, sizeof *it);
        char err[256] = "";
        if (it && raft_codec_read_response(result->response, &o->msg, &it->msg, err, sizeof err) == 0) {
            it->kind = ITEM_RESPONSE;
            /* Before the core hears of the leader, so that its next Fetch
             * (and the broker's controller calls) find the leader's
             * address. */
            struct raft_codec_endpoint leader;
            if (it->msg.type == RAFT_MSG_FETCH_RESP &&
                raft_codec_fetch_endpoint(result->response, it->msg.u.fetch_resp.current_leader_id, &leader))
                shell_learn_endpoint(o->s, &leader);
            int16_t code = it->msg.type == RAFT_MSG_VOTE_RESP    ? it->msg.u.vote_resp.error_code
                           : it->msg.type == RAFT_MSG_FETCH_RESP ? it->msg.u.fetch_resp.error_code
                                                                 : it->msg.u.epoch_resp.error_code;
            if (code == KAFKA_ERR_INCONSISTENT_VOTER_SET)
                shell_voter_set_mismatch(o->s, &o->s->voter_set_answer_ms, "INCONSISTENT_VOTER_SET came back from",
                                         o->msg.dst);
            if (!shell_enqueue(o->s, it)) {
                raft_msg_clear(&it->msg);
                free(it);
            }
        } else {
            if (strstr(err, "INCONSISTENT_CLUSTER_ID")) {
                if (shell_log_now(o->s, &o->s->cluster_id_answer_ms))
                    logger_error(LOG, "voter %d belongs to another cluster (this is cluster %s): %s", o->msg.dst,
                                 o->s->cfg.cluster_id, err);
            } else if (err[0]) {
                logger_warn(LOG, "answer from voter %d: %s", o->msg.dst, err);
            }
            free(it);
        }
    } else if (result->status != NET_CLIENT_CANCELLED) {
        logger_debug(LOG, "request to voter %d: %s %s", o->msg.dst, net_client_status_name(result->status),
                     result->error);
        if (o->msg.type == RAFT_MSG_FETCH_REQ)
            hand_back_failure(o);
    }
    free(o);
}

void shell_send_request(struct raft_shell *s, const struct raft_msg *m)
{
    struct outbound *o = malloc(sizeof *o);
    if (!o)
        return;
    o->s = s;
    o->msg = *m;
    struct net_client_request req = {
        .node_id = m->dst,
        .api_key = raft_codec_api_key(m->type),
        .pinned_version = -1,
        .encode = encode_outbound,
        .encode_ctx = o,
        .timeout_ms = s->cfg.request_timeout_ms,
        .done = outbound_done,
        .ctx = o,
        /* A Fetch to a node that refuses connections fails at once: its
         * sender (an observer above all) then asks another voter. */
        .fail_fast = m->type == RAFT_MSG_FETCH_REQ,
    };
    char err[160];
    if (net_client_send(s->client, &req, err, sizeof err) != 0) {
        logger_debug(LOG, "cannot send to voter %d: %s", m->dst, err);
        free(o);
    }
}
