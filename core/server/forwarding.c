/* The broker's side of forwarding (KIP-590): a client's admin request
 * wrapped in an Envelope to the active controller, held and sent again
 * while no leader is known, answered locally when that fails; and the
 * broker's own CreateTopics through the same path. What the controller
 * does with an Envelope is forwarding_controller.c. */
#include "server/forwarding.h"
#include "server/forwarding_internal.h"
#include "server/controller_route.h"
#include "server/links.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/listeners.h"
#include "handlers/handlers.h"
#include "handlers/sasl.h"
#include "net/client.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/create_topics_request.h"
#include "protocol/generated/create_topics_response.h"
#include "protocol/generated/envelope_request.h"
#include "protocol/generated/envelope_response.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/request_header.h"
#include "raft/raft_shell_metadata.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG "forwarding"
/* Bounds one Envelope, connection included: a controller that just died
 * still leads in this broker's view until its fetch times out, and the
 * client is better told NOT_CONTROLLER (it retries) than left waiting. */
#define FORWARD_REQUEST_TIMEOUT_MS 5000
/* How long a forwarded request is tried again, at the leader this broker
 * knows, when no answer came (a controller's failover). */
#define FORWARD_RETRY_MS 15000
/* While a forwarded request waits for a new leader: how often the retry
 * looks at the leader the quorum layer knows, and how often it tries the
 * same leader again. */
#define FORWARD_LEADER_POLL_MS 10
#define FORWARD_RETRY_SAME_MS 100
/* How long a topic this broker created may take to reach its own image. */
#define FORWARD_TIMEOUT_MS 30000

bool forwarding_api_forwarded(int16_t api_key)
{
    switch (api_key) {
    case 19: /* CreateTopics */
    case 20: /* DeleteTopics */
    case 30: /* CreateAcls */
    case 31: /* DeleteAcls */
    case 33: /* AlterConfigs */
    case 37: /* CreatePartitions */
    case 43: /* ElectLeaders */
    case 44: /* IncrementalAlterConfigs */
    case 45: /* AlterPartitionReassignments */
    case 49: /* AlterClientQuotas */
    case 51: /* AlterUserScramCredentials */
        return true;
    default:
        return false;
    }
}

/* A voter runs most admin requests itself (its store answers
 * NOT_CONTROLLER when it does not lead, as the tests and clients expect),
 * but config changes are forwarded as Kafka's brokers forward them: a
 * client sends a BROKER resource's change to that broker (or to any, for
 * the cluster-wide default), not to the controller. */
static bool voter_forwards(int16_t api_key)
{
    return api_key == 33 /* AlterConfigs */ || api_key == 44 /* IncrementalAlterConfigs */;
}

/* Kafka's principal serde (DefaultPrincipalData, version-prefixed):
 * int16 version 0, compact type, compact name, token flag, no tags. */
void forwarding_write_principal(struct kafka_writer *w, const char *type, const char *name)
{
    kafka_write_int16(w, 0);
    kafka_write_compact_string(w, (struct kafka_str){type, (int32_t)strlen(type)});
    kafka_write_compact_string(w, (struct kafka_str){name, (int32_t)strlen(name)});
    kafka_write_bool(w, false);
    kafka_write_uvarint(w, 0);
}

int forwarding_read_principal(struct kafka_bytes b, char *type, size_t type_len, char *name, size_t name_len)
{
    struct kafka_reader r;
    kafka_reader_init(&r, b.data, b.len > 0 ? (size_t)b.len : 0);
    if (kafka_read_int16(&r) != 0)
        return -1;
    struct kafka_str t = kafka_read_compact_string(&r);
    struct kafka_str n = kafka_read_compact_string(&r);
    if (r.error[0] || t.len < 0 || n.len < 0 || (size_t)t.len >= type_len || (size_t)n.len >= name_len)
        return -1;
    memcpy(type, t.data, (size_t)t.len);
    type[t.len] = '\0';
    memcpy(name, n.data, (size_t)n.len);
    name[n.len] = '\0';
    return memchr(type, 0, (size_t)t.len) || memchr(name, 0, (size_t)n.len) ? -1 : 0;
}

/* ==== the broker's side ==== */

/* Set while the outbound client's thread runs a request's local handler:
 * nothing may then wait for that client. */
static _Thread_local bool answering_locally;

/* Owned by the main thread; the client is thread-safe. */
struct broker_forwarding {
    struct handler_env *env;
    int32_t node_id;
    bool voter; /* a combined node: forwards only while another node leads */
    struct raft_shell_metadata *quorum;
    struct controller_route route; /* the leader's address, from the quorum */
    struct net_client *client;
    pthread_mutex_t mu; /* guards retrying and stopping */
    pthread_cond_t cond;
    int retrying; /* retry threads running */
    bool stopping;
};

/* One forwarded request, from send to answer. */
struct forward_call {
    struct broker_forwarding *f;
    struct net_request *req;
    struct kafka_writer principal;
    uint8_t address[16];
    struct envelope_request body;
    int64_t deadline_ms;   /* retries end here (monotonic) */
    int32_t failed_leader; /* the controller the last attempt went to */
};

static bool send_call(struct forward_call *c);
static void *retry_main(void *arg);
static bool wait_for_topic(struct broker_forwarding *f, const char *name, int timeout_ms);

/* A client that created topics through this broker goes on to ask it for
 * them: the answer waits (briefly) until this broker's image has them. */
#define CREATED_VISIBLE_WAIT_MS 5000

static void await_created_topics(struct broker_forwarding *f, const struct net_request *req,
                                 struct kafka_bytes response)
{
    int16_t key = (int16_t)((uint16_t)req->frame[0] << 8 | req->frame[1]);
    int16_t version = (int16_t)((uint16_t)req->frame[2] << 8 | req->frame[3]);
    if (key != 19)
        return;
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    /* validate_only creates nothing to wait for. */
    struct kafka_reader rq;
    kafka_reader_init(&rq, req->frame, req->frame_len);
    struct request_header header;
    request_header_init(&header);
    struct create_topics_request in;
    create_topics_request_init(&in);
    bool created = request_header_decode(&header, &rq, kafka_request_header_version(key, version), &arena) == 0 &&
                   create_topics_request_decode(&in, &rq, version, &arena) == 0 && !in.validate_only;
    struct kafka_reader r;
    kafka_reader_init(&r, response.data, (size_t)response.len);
    (void)kafka_read_int32(&r);
    if (kafka_response_header_version(key, version) >= 1)
        kafka_reader_skip_tagged_fields(&r);
    struct create_topics_response out;
    create_topics_response_init(&out);
    /* Within the request's TimeoutMs, as the controller's answer was; none
     * with TimeoutMs 0 (answer once committed). */
    int64_t started = clock_mono_ms();
    int32_t budget = created && in.timeout_ms < CREATED_VISIBLE_WAIT_MS ? in.timeout_ms : CREATED_VISIBLE_WAIT_MS;
    if (created && budget > 0 && create_topics_response_decode(&out, &r, version, &arena) == 0) {
        char name[256];
        for (int32_t i = 0; i < out.topics_count; i++) {
            int64_t left = budget - (clock_mono_ms() - started);
            if (left > 0 && out.topics[i].error_code == KAFKA_ERR_NONE &&
                kafka_str_to_cstr(out.topics[i].name, name, sizeof name) && name[0])
                (void)wait_for_topic(f, name, (int)left);
        }
    }
    kafka_arena_free(&arena);
}

static void forward_call_free(struct forward_call *c)
{
    kafka_writer_free(&c->principal);
    free(c);
}

/* Hands c to a retry thread; false when none can start (stopping). */
static bool start_retry(struct forward_call *c)
{
    struct broker_forwarding *f = c->f;
    pthread_mutex_lock(&f->mu);
    bool go = !f->stopping;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (go && pthread_create(&t, &attr, retry_main, c) == 0)
        f->retrying++;
    else
        go = false;
    pthread_attr_destroy(&attr);
    pthread_mutex_unlock(&f->mu);
    return go;
}

static void forward_done(struct net_client_result *result, void *ctx)
{
    struct forward_call *c = ctx;
    const struct envelope_response *resp = result->status == NET_CLIENT_OK ? result->response : NULL;
    /* No answer (the controller died, most likely) or NOT_CONTROLLER (it
     * no longer leads): again, from a thread of its own, once this broker
     * knows a leader, as Kafka's forwarding channel does. */
    bool moved = !resp || resp->error_code == KAFKA_ERR_NOT_CONTROLLER;
    c->failed_leader = result->node_id;
    if (moved && clock_mono_ms() < c->deadline_ms && start_retry(c))
        return;
    if (!resp || resp->error_code != KAFKA_ERR_NONE || resp->response_data.len < 4) {
        /* The broker answers itself: NOT_CONTROLLER, which clients retry. */
        logger_debug(LOG, "forwarding to controller %d failed (%s, error %d): answering locally", result->node_id,
                     result->error, resp ? resp->error_code : -1);
        struct handler_env *env = c->f->env;
        struct net_request *req = c->req;
        forward_call_free(c);
        /* On the client's thread: the handlers must not wait for it (a
         * creation through broker_forwarding_create_topic would). */
        answering_locally = true;
        handlers_dispatch(req, env);
        answering_locally = false;
        return;
    }
    await_created_topics(c->f, c->req, resp->response_data);
    struct kafka_writer w;
    kafka_writer_init(&w, (size_t)resp->response_data.len + 4);
    kafka_write_int32(&w, resp->response_data.len);
    kafka_write_raw(&w, resp->response_data.data, (size_t)resp->response_data.len);
    bool ok = !w.failed;
    net_request_complete(c->req, ok ? &w : NULL, 0, !ok);
    kafka_writer_free(&w);
    forward_call_free(c);
}

/* The client's address as Kafka sends it: the raw IPv4 or IPv6 bytes. */
static int peer_address(const char *peer, uint8_t out[16])
{
    char host[64];
    snprintf(host, sizeof host, "%s", peer);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    char *h = host;
    if (h[0] == '[') {
        h++;
        char *end = strchr(h, ']');
        if (end)
            *end = '\0';
    }
    if (inet_pton(AF_INET, h, out) == 1)
        return 4;
    if (inet_pton(AF_INET6, h, out) == 1)
        return 16;
    return 0;
}

static void *retry_main(void *arg)
{
    struct forward_call *c = arg;
    struct broker_forwarding *f = c->f;
    bool sent = false;
    int64_t last_try_ms = clock_mono_ms();
    for (;;) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = FORWARD_LEADER_POLL_MS * 1000 * 1000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&f->mu);
        bool stopping = f->stopping;
        pthread_mutex_unlock(&f->mu);
        int32_t leader = raft_shell_metadata_leader_id(f->quorum);
        int64_t now = clock_mono_ms();
        /* A voter that became the leader meanwhile runs the request itself. */
        if (stopping || now >= c->deadline_ms || (f->voter && leader == f->node_id))
            break;
        /* Sent as soon as the quorum layer names another leader (its
         * observer asks the voters once the old one refuses); the same
         * one is tried again only every FORWARD_RETRY_SAME_MS. */
        if (leader == c->failed_leader && now - last_try_ms < FORWARD_RETRY_SAME_MS)
            continue;
        last_try_ms = now;
        if (send_call(c)) {
            sent = true;
            break;
        }
    }
    if (!sent) {
        struct handler_env *env = f->env;
        struct net_request *req = c->req;
        forward_call_free(c);
        answering_locally = true; /* stopping: no waiting for the client either */
        handlers_dispatch(req, env);
        answering_locally = false;
    }
    pthread_mutex_lock(&f->mu);
    f->retrying--;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Sends c to the leader this broker knows; false when it knows none. */
static bool send_call(struct forward_call *c)
{
    struct broker_forwarding *f = c->f;
    int32_t leader = raft_shell_metadata_leader_id(f->quorum);
    /* Also false while the quorum does not know where the leader listens
     * (a broker with bootstrap servers before the controllers named it). */
    if (leader < 0 || leader == f->node_id || !controller_route_reach(&f->route, f->client, f->quorum, leader))
        return false;
    /* Fail fast: a leader killed a moment ago refuses the connection, and
     * the request would otherwise wait out its whole timeout for it while
     * this broker learns the new leader; the retry thread sends it again
     * once the broker knows another leader. */
    struct net_client_request creq = {.node_id = leader,
                                      .api_key = FORWARDING_API_ENVELOPE,
                                      .pinned_version = -1,
                                      .body = &c->body,
                                      .timeout_ms = FORWARD_REQUEST_TIMEOUT_MS,
                                      .done = forward_done,
                                      .ctx = c,
                                      .fail_fast = true};
    char err[256] = "";
    return net_client_send(f->client, &creq, err, sizeof err) == 0;
}

static bool forward(struct broker_forwarding *f, struct net_request *req)
{
    struct forward_call *c = calloc(1, sizeof *c);
    if (!c)
        return false;
    c->f = f;
    c->req = req;
    kafka_writer_init(&c->principal, 64);
    forwarding_write_principal(&c->principal, req->principal_type ? req->principal_type : "User",
                               req->principal_name ? req->principal_name : "ANONYMOUS");
    envelope_request_init(&c->body);
    c->body.request_data = (struct kafka_bytes){req->frame, (int32_t)req->frame_len};
    c->body.request_principal = (struct kafka_bytes){c->principal.buf, (int32_t)c->principal.len};
    int alen = peer_address(req->peer, c->address);
    c->body.client_host_address = (struct kafka_bytes){c->address, alen};
    c->deadline_ms = clock_mono_ms() + FORWARD_RETRY_MS;
    c->failed_leader = -1;
    /* No leader known (an election, or this broker still finding the new
     * one): the retry thread waits for one. */
    if (c->principal.failed || (!send_call(c) && !start_retry(c))) {
        forward_call_free(c);
        return false;
    }
    return true;
}

void broker_forwarding_dispatch(struct net_request *req, void *arg)
{
    struct broker_forwarding *f = arg;
    /* On a SASL listener nothing is forwarded before the connection has
     * authenticated: the local handlers run the exchange (and refuse). */
    bool sasl = req->security_protocol == NET_SECURITY_SASL_PLAINTEXT ||
                req->security_protocol == NET_SECURITY_SASL_SSL;
    bool authenticated = !sasl || (req->principal_name && strcmp(req->principal_name, "ANONYMOUS") != 0);
    /* With an authorizer loaded the controller authorizes the forwarded
     * request as the principal this broker authenticated: every node loads
     * the same plugins (controller-only ones too). */
    bool own_type = req->principal_type && strcmp(req->principal_type, FORWARDING_OWN_PRINCIPAL_TYPE) == 0;
    if (f->voter && req->frame_len >= 8) {
        int32_t leader = raft_shell_metadata_leader_id(f->quorum);
        if (!voter_forwards(forwarding_be16(req->frame)) || leader < 0 || leader == f->node_id) {
            handlers_dispatch(req, f->env);
            return;
        }
    }
    if (req->frame_len >= 8 && authenticated && !own_type && !sasl_expects_raw_token(req) &&
        forwarding_api_forwarded(forwarding_be16(req->frame)) && forward(f, req))
        return;
    handlers_dispatch(req, f->env);
}

/* A CreateTopics of the broker's own, waited for. */
struct create_call {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
    int16_t error;
    char message[200];
};

static void create_done(struct net_client_result *result, void *ctx)
{
    struct create_call *c = ctx;
    /* No answer is retried as if no controller led: the callers wait for one. */
    int16_t error = KAFKA_ERR_NOT_CONTROLLER;
    char message[200] = "";
    const struct envelope_response *resp = result->status == NET_CLIENT_OK ? result->response : NULL;
    if (resp && resp->error_code != KAFKA_ERR_NONE) {
        error = resp->error_code;
        if (error == KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED)
            snprintf(message, sizeof message,
                     "the Envelope was refused: this broker has no CLUSTER_ACTION on the "
                     "cluster at the controller");
        else if (error == KAFKA_ERR_NOT_CONTROLLER)
            snprintf(message, sizeof message, "the Envelope was refused: not the active controller");
    } else if (resp) {
        /* The inner answer: CreateTopics v4, response header v0. */
        struct kafka_reader r;
        kafka_reader_init(&r, resp->response_data.data,
                          resp->response_data.len > 0 ? (size_t)resp->response_data.len : 0);
        (void)kafka_read_int32(&r);
        struct kafka_arena arena;
        kafka_arena_init(&arena);
        struct create_topics_response out;
        create_topics_response_init(&out);
        error = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        if (create_topics_response_decode(&out, &r, 4, &arena) == 0 && out.topics_count == 1) {
            error = out.topics[0].error_code;
            kafka_str_to_cstr(out.topics[0].error_message, message, sizeof message);
        }
        kafka_arena_free(&arena);
    }
    pthread_mutex_lock(&c->mu);
    c->error = error;
    snprintf(c->message, sizeof c->message, "%s", message);
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

/* As at the controller's own node, a creation returns once this node's
 * image has the topic: its caller goes on to open the partitions. */
static bool wait_for_topic(struct broker_forwarding *f, const char *name, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        const struct metadata_image *img = metadata_image_acquire(f->env->metadata);
        bool found = metadata_image_topic_by_name(img, name, strlen(name)) != NULL;
        metadata_image_release(img);
        if (found)
            return true;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

int16_t broker_forwarding_create_topic(void *arg, const char *name, int32_t num_partitions, int16_t replication_factor,
                                       const struct metadata_config_kv *configs, int32_t config_count, char *err,
                                       size_t errlen)
{
    struct broker_forwarding *f = arg;
    int32_t leader = raft_shell_metadata_leader_id(f->quorum);
    if (leader < 0 || leader == f->node_id || answering_locally ||
        !controller_route_reach(&f->route, f->client, f->quorum, leader)) {
        snprintf(err, errlen, "no active controller");
        return KAFKA_ERR_NOT_CONTROLLER;
    }
    struct create_topics_request_creatable_topic_config cfgs[16];
    int32_t n_cfgs = config_count < 16 ? config_count : 16;
    for (int32_t i = 0; i < n_cfgs; i++) {
        create_topics_request_creatable_topic_config_init(&cfgs[i]);
        cfgs[i].name = kafka_str_from_cstr(configs[i].key);
        cfgs[i].value = configs[i].value ? kafka_str_from_cstr(configs[i].value) : (struct kafka_str){NULL, -1};
    }
    struct create_topics_request_creatable_topic topic;
    create_topics_request_creatable_topic_init(&topic);
    topic.name = kafka_str_from_cstr(name);
    topic.num_partitions = num_partitions;
    topic.replication_factor = replication_factor;
    topic.configs = n_cfgs ? cfgs : NULL;
    topic.configs_count = n_cfgs;
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = &topic;
    req.topics_count = 1;
    req.timeout_ms = FORWARD_TIMEOUT_MS;
    /* The inner frame as a client would send it: header v1, CreateTopics v4. */
    struct request_header header;
    request_header_init(&header);
    header.request_api_key = 19;
    header.request_api_version = 4;
    header.correlation_id = 0;
    header.client_id = kafka_str_from_cstr("cairn-broker");
    struct kafka_writer frame, principal;
    kafka_writer_init(&frame, 256);
    kafka_writer_init(&principal, 64);
    char own_name[16];
    snprintf(own_name, sizeof own_name, "%d", (int)f->node_id);
    forwarding_write_principal(&principal, FORWARDING_OWN_PRINCIPAL_TYPE, own_name);
    int16_t error = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    if (request_header_encode(&header, &frame, 1) != 0 || create_topics_request_encode(&req, &frame, 4) != 0 ||
        frame.failed || principal.failed || kafka_writer_flatten(&frame) != 0) {
        snprintf(err, errlen, "cannot encode CreateTopics for %s", name);
        goto out;
    }
    struct envelope_request body;
    envelope_request_init(&body);
    body.request_data = (struct kafka_bytes){frame.buf, (int32_t)frame.len};
    body.request_principal = (struct kafka_bytes){principal.buf, (int32_t)principal.len};
    body.client_host_address = (struct kafka_bytes){(const uint8_t *)"\x7f\0\0\x01", 4};
    struct create_call c = {.error = KAFKA_ERR_NETWORK_EXCEPTION};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cond, NULL);
    struct net_client_request creq = {.node_id = leader,
                                      .api_key = FORWARDING_API_ENVELOPE,
                                      .pinned_version = -1,
                                      .body = &body,
                                      .timeout_ms = FORWARD_REQUEST_TIMEOUT_MS,
                                      .done = create_done,
                                      .ctx = &c};
    char why[256] = "";
    if (net_client_send(f->client, &creq, why, sizeof why) == 0) {
        pthread_mutex_lock(&c.mu);
        while (!c.done)
            pthread_cond_wait(&c.cond, &c.mu);
        pthread_mutex_unlock(&c.mu);
        error = c.error;
        snprintf(err, errlen, "controller %d: %s", (int)leader, c.message[0] ? c.message : "no message");
        /* Created, or created meanwhile by another broker: either way the
         * caller goes on to use it. */
        if ((error == KAFKA_ERR_NONE || error == KAFKA_ERR_TOPIC_ALREADY_EXISTS) &&
            !wait_for_topic(f, name, FORWARD_TIMEOUT_MS)) {
            snprintf(err, errlen, "%s was created but this broker's metadata has not caught up within %d ms", name,
                     FORWARD_TIMEOUT_MS);
            error = KAFKA_ERR_REQUEST_TIMED_OUT;
        }
    } else {
        error = KAFKA_ERR_NOT_CONTROLLER; /* retried by the callers that wait for a controller */
        snprintf(err, errlen, "CreateTopics to controller %d not sent: %s", (int)leader, why);
    }
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cond);
out:
    kafka_writer_free(&frame);
    kafka_writer_free(&principal);
    return error;
}

int broker_forwarding_start(int32_t node_id, bool voter, struct raft_shell_metadata *quorum, struct handler_env *env,
                            const struct server_link *link, struct broker_forwarding **out, char *err, size_t errlen)
{
    *out = NULL;
    struct broker_forwarding *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    f->env = env;
    f->node_id = node_id;
    f->voter = voter;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->quorum = quorum;
    controller_route_init(&f->route);
    struct net_client_config ccfg;
    net_client_config_defaults(&ccfg);
    snprintf(ccfg.client_id, sizeof ccfg.client_id, "cairn-forwarding-%d", (int)node_id);
    ccfg.reconnect_backoff_max_ms = 500;
    server_link_apply(link, &ccfg);
    if (net_client_create(&ccfg, &f->client, err, errlen) != 0) {
        controller_route_destroy(&f->route);
        free(f);
        return -1;
    }
    *out = f;
    return 0;
}

void broker_forwarding_quiesce(struct broker_forwarding *f)
{
    if (!f)
        return;
    /* Held requests answer locally now, and no failure is retried. */
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    while (f->retrying > 0)
        pthread_cond_wait(&f->cond, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

void broker_forwarding_stop(struct broker_forwarding *f)
{
    if (!f)
        return;
    /* Requests still in flight complete (as failures, answered locally)
     * before the client is gone. */
    broker_forwarding_quiesce(f);
    if (f->client)
        net_client_destroy(f->client);
    pthread_mutex_lock(&f->mu);
    while (f->retrying > 0)
        pthread_cond_wait(&f->cond, &f->mu);
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cond);
    controller_route_destroy(&f->route);
    free(f);
}
