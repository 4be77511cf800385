#include "server/controller_brokers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metadata/metadata_elect_leaders.h"
#include "metadata/metadata_store.h"
#include "metrics/metrics.h"
#include "server/controller_alter_partition.h"
#include "protocol/generated/allocate_producer_ids_request.h"
#include "protocol/generated/allocate_producer_ids_response.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/broker_heartbeat_request.h"
#include "protocol/generated/broker_heartbeat_response.h"
#include "protocol/generated/broker_registration_request.h"
#include "protocol/generated/broker_registration_response.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/request_header.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG "controller"
#define MAX_TRACKED 256
/* The session check runs every session timeout / SESSION_CHECK_PARTS,
 * within these bounds: a dead broker is fenced at most that long after its
 * session ran out (with a lowered broker.session.timeout.ms the fixed
 * 250 ms was a third of the failover). */
#define SESSION_CHECK_MAX_MS 250
#define SESSION_CHECK_MIN_MS 20
#define SESSION_CHECK_PARTS 8

struct session {
    int32_t node_id;
    int64_t last_heard_ms; /* monotonic */
    /* When a new incarnation's registration was last refused while this
     * session ran (-1: none): the id's old process is likely gone. */
    int64_t refused_ms;
};

/* A request waiting for the worker: a registration commits through the
 * quorum, whose Fetch requests need the server's io threads free. */
struct pending {
    struct net_request *req;
    struct pending *next;
};

/* Owned by the main thread; sessions under mu. */
struct controller_brokers {
    struct metadata_store *store;
    char cluster_id[64];
    int64_t session_timeout_ms;
    struct controller_rebalance rebalance; /* read-only after start */
    /* Kafka's OfflinePartitionsCount and PreferredReplicaImbalanceCount:
     * the active controller's counts, 0 on other nodes. */
    struct metrics_metric *offline_partitions;
    struct metrics_metric *preferred_imbalance;
    pthread_mutex_t mu;       /* guards sessions, n_sessions, stopping, the queue */
    pthread_mutex_t fence_mu; /* one fence_lapsed at a time; taken before mu */
    pthread_cond_t cond;
    struct session sessions[MAX_TRACKED];
    int n_sessions;
    bool stopping;
    struct pending *queue_head, *queue_tail; /* under mu */
    pthread_t thread;
    bool thread_started;
    /* Envelope requests (forwarded admin requests) go here, on the worker;
     * set before the quorum serves. */
    void (*forward)(void *ctx, struct net_request *req);
    void *forward_ctx;
};

void controller_brokers_set_forwarding(struct controller_brokers *cb, void (*serve)(void *ctx, struct net_request *req),
                                       void *ctx)
{
    cb->forward = serve;
    cb->forward_ctx = ctx;
}

static void heard_locked(struct controller_brokers *cb, int32_t node_id, int64_t now)
{
    for (int i = 0; i < cb->n_sessions; i++) {
        if (cb->sessions[i].node_id == node_id) {
            cb->sessions[i].last_heard_ms = now;
            return;
        }
    }
    if (cb->n_sessions < MAX_TRACKED)
        cb->sessions[cb->n_sessions++] = (struct session){node_id, now, -1};
}

static struct session *find_locked(struct controller_brokers *cb, int32_t node_id)
{
    for (int i = 0; i < cb->n_sessions; i++)
        if (cb->sessions[i].node_id == node_id)
            return &cb->sessions[i];
    return NULL;
}

void controller_brokers_heard(struct controller_brokers *cb, int32_t node_id)
{
    pthread_mutex_lock(&cb->mu);
    heard_locked(cb, node_id, clock_mono_ms());
    pthread_mutex_unlock(&cb->mu);
}

/* ---- session checks ---- */

/* Fences every unfenced broker whose session has lapsed, those with a
 * refused successor last (see check_sessions). On the worker and, for the
 * controller's own broker, the lifecycle thread: fence_mu keeps the order. */
static void fence_lapsed(struct controller_brokers *cb)
{
    pthread_mutex_lock(&cb->fence_mu);
    int64_t now = clock_mono_ms();
    const struct metadata_image *img = metadata_image_acquire(cb->store);
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t i = 0; i < img->broker_count; i++) {
            const struct metadata_broker *br = &img->brokers[i];
            if (br->fenced)
                continue;
            pthread_mutex_lock(&cb->mu);
            struct session *s = find_locked(cb, br->node_id);
            int64_t last = s ? s->last_heard_ms : -1;
            bool successor = s && s->refused_ms >= 0 && now - s->refused_ms <= cb->session_timeout_ms;
            if (last < 0)
                heard_locked(cb, br->node_id, now);
            pthread_mutex_unlock(&cb->mu);
            if (last < 0 || now - last <= cb->session_timeout_ms || successor != (pass == 1))
                continue;
            char err[256] = "";
            logger_info(LOG, "broker %d sent no heartbeat for %lld ms: fencing it", br->node_id,
                        (long long)(now - last));
            int16_t rc = metadata_set_broker_fenced(cb->store, br->node_id, br->epoch, true, err, sizeof err);
            if (rc != KAFKA_ERR_NONE)
                logger_warn(LOG, "could not fence broker %d: %s (error %d)", br->node_id, err, (int)rc);
        }
    }
    metadata_image_release(img);
    pthread_mutex_unlock(&cb->fence_mu);
}

/* At the controller: fences every unfenced broker not heard from within the
 * session timeout. A broker never heard from since this node took over gets
 * a full session from then (a new controller knows no heartbeat times). Of
 * the sessions that lapse in one check, those with a refused new
 * incarnation waiting go last: fencing moves leaderships and ISR places to
 * the brokers still unfenced, and the last ISR member kept is best the one
 * about to come back (after a restart of several brokers at once, fencing
 * by node id left a partition waiting for a broker that was really down). */
static void check_sessions(struct controller_brokers *cb, bool *was_controller)
{
    bool is_controller = metadata_store_is_controller(cb->store);
    /* A leader whose image is behind its log (every burst of metadata
     * writes, such as the ISR shrinks that follow a broker's death) checks
     * later and keeps the heartbeat times: forgetting them gave every broker,
     * a dead one too, a new full session from the end of the burst. */
    if (!is_controller && metadata_store_catching_up(cb->store))
        return;
    if (!is_controller) {
        pthread_mutex_lock(&cb->mu);
        cb->n_sessions = 0;
        pthread_mutex_unlock(&cb->mu);
        *was_controller = false;
        return;
    }
    fence_lapsed(cb);
    *was_controller = true;
}

/* Valid unless its last heartbeat is more than a session ago; a broker not
 * heard from since this node took over counts from then, as in the check. */
static bool session_valid(struct controller_brokers *cb, int32_t node_id)
{
    pthread_mutex_lock(&cb->mu);
    struct session *s = find_locked(cb, node_id);
    bool valid = !s || clock_mono_ms() - s->last_heard_ms <= cb->session_timeout_ms;
    pthread_mutex_unlock(&cb->mu);
    return valid;
}

int16_t controller_brokers_register(struct controller_brokers *cb, int32_t node_id,
                                    const struct metadata_endpoint *endpoints, int32_t endpoint_count, const char *rack,
                                    const struct kafka_uuid *incarnation_id, int64_t previous_epoch, bool stay_fenced,
                                    int64_t *epoch, char *err, size_t errlen)
{
    /* A lapsed session is fenced first, with every other lapsed one in
     * the check's order, rather than by this registration's new record:
     * fenced here, a restarted broker's leaderships could go to a broker
     * whose session was about to lapse too. */
    if (!session_valid(cb, node_id) && metadata_store_is_controller(cb->store))
        fence_lapsed(cb);
    struct metadata_incarnation inc = {
        .id = *incarnation_id,
        .previous_epoch = previous_epoch,
        .registered_session_valid = session_valid(cb, node_id),
    };
    int16_t rc = metadata_register_broker(cb->store, node_id, endpoints, endpoint_count, rack, &inc, stay_fenced, epoch,
                                          err, errlen);
    pthread_mutex_lock(&cb->mu);
    int64_t now = clock_mono_ms();
    struct session *s = find_locked(cb, node_id);
    if (rc == KAFKA_ERR_NONE) {
        heard_locked(cb, node_id, now);
        if ((s = find_locked(cb, node_id)))
            s->refused_ms = -1;
    } else if (rc == KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION && s) {
        s->refused_ms = now; /* the session itself is not extended */
    }
    pthread_mutex_unlock(&cb->mu);
    return rc;
}

static void serve(struct controller_brokers *cb, struct net_request *req);

static void update_gauges(struct controller_brokers *cb, bool controller)
{
    int64_t imbalanced = 0, offline = 0;
    if (controller) {
        const struct metadata_image *img = metadata_image_acquire(cb->store);
        metadata_leader_balance_counts(img, &imbalanced, &offline);
        metadata_image_release(img);
    }
    metrics_set(cb->offline_partitions, offline);
    metrics_set(cb->preferred_imbalance, imbalanced);
}

/* Kafka's periodic leader-imbalance check at the active controller. */
static void rebalance(struct controller_brokers *cb)
{
    char err[256] = "";
    int32_t moved = metadata_rebalance_leaders(cb->store, cb->rebalance.percentage, err, sizeof err);
    if (moved > 0)
        logger_info(LOG, "leader rebalance: %d partition(s) moved to their preferred leader", (int)moved);
    else if (moved < 0)
        logger_warn(LOG, "leader rebalance failed: %s", err);
}

static int64_t session_check_interval_ms(int64_t session_timeout_ms)
{
    int64_t interval = session_timeout_ms / SESSION_CHECK_PARTS;
    if (interval > SESSION_CHECK_MAX_MS)
        return SESSION_CHECK_MAX_MS;
    return interval < SESSION_CHECK_MIN_MS ? SESSION_CHECK_MIN_MS : interval;
}

/* The worker: queued requests first, the session check every
 * session_check_interval_ms. */
static void *sessions_main(void *arg)
{
    struct controller_brokers *cb = arg;
    const int64_t check_ms = session_check_interval_ms(cb->session_timeout_ms);
    bool was_controller = false;
    int64_t next_check = 0, next_rebalance = 0, next_gauges = 0;
    pthread_mutex_lock(&cb->mu);
    while (!cb->stopping) {
        struct pending *p = cb->queue_head;
        if (p) {
            cb->queue_head = p->next;
            if (!cb->queue_head)
                cb->queue_tail = NULL;
            pthread_mutex_unlock(&cb->mu);
            serve(cb, p->req);
            free(p);
            pthread_mutex_lock(&cb->mu);
            continue;
        }
        if (clock_mono_ms() >= next_check) {
            pthread_mutex_unlock(&cb->mu);
            bool was = was_controller;
            check_sessions(cb, &was_controller);
            /* The gauges walk every partition: at most every 250 ms, however
             * often the sessions are checked. */
            if (clock_mono_ms() >= next_gauges || was_controller != was) {
                update_gauges(cb, was_controller);
                next_gauges = clock_mono_ms() + SESSION_CHECK_MAX_MS;
            }
            next_check = clock_mono_ms() + check_ms;
            /* A new controller waits a full interval, as Kafka's. */
            if (was_controller && !was)
                next_rebalance = clock_mono_ms() + cb->rebalance.interval_ms;
            if (was_controller && cb->rebalance.enable && clock_mono_ms() >= next_rebalance) {
                rebalance(cb);
                next_rebalance = clock_mono_ms() + cb->rebalance.interval_ms;
            }
            pthread_mutex_lock(&cb->mu);
            continue;
        }
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += check_ms * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cb->cond, &cb->mu, &deadline);
    }
    /* Stopping: whatever still waits is closed. */
    while (cb->queue_head) {
        struct pending *p = cb->queue_head;
        cb->queue_head = p->next;
        net_request_complete(p->req, NULL, 0, true);
        free(p);
    }
    cb->queue_tail = NULL;
    pthread_mutex_unlock(&cb->mu);
    return NULL;
}

int controller_brokers_start(struct metadata_store *store, const char *cluster_id, int64_t session_timeout_ms,
                             const struct controller_rebalance *rebalance, struct controller_brokers **out, char *err,
                             size_t errlen)
{
    *out = NULL;
    struct controller_brokers *cb = calloc(1, sizeof *cb);
    if (!cb) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cb->store = store;
    snprintf(cb->cluster_id, sizeof cb->cluster_id, "%s", cluster_id);
    cb->session_timeout_ms = session_timeout_ms > 0 ? session_timeout_ms : 9000;
    if (rebalance)
        cb->rebalance = *rebalance;
    if (cb->rebalance.interval_ms <= 0)
        cb->rebalance.interval_ms = 300000;
    cb->offline_partitions = metrics_register(METRICS_GAUGE, "cairn_controller_offline_partitions", NULL,
                                              "Partitions without a leader (the active controller's count).");
    cb->preferred_imbalance = metrics_register(
        METRICS_GAUGE, "cairn_controller_preferred_replica_imbalance", NULL,
        "Partitions not led by their preferred (first) replica (the active controller's count).");
    pthread_mutex_init(&cb->mu, NULL);
    pthread_mutex_init(&cb->fence_mu, NULL);
    pthread_cond_init(&cb->cond, NULL);
    if (pthread_create(&cb->thread, NULL, sessions_main, cb) != 0) {
        snprintf(err, errlen, "cannot start the broker session thread");
        controller_brokers_stop(cb);
        return -1;
    }
    cb->thread_started = true;
    *out = cb;
    return 0;
}

void controller_brokers_stop(struct controller_brokers *cb)
{
    if (!cb)
        return;
    if (cb->thread_started) {
        pthread_mutex_lock(&cb->mu);
        cb->stopping = true;
        pthread_cond_broadcast(&cb->cond);
        pthread_mutex_unlock(&cb->mu);
        pthread_join(cb->thread, NULL);
    }
    pthread_mutex_destroy(&cb->mu);
    pthread_mutex_destroy(&cb->fence_mu);
    pthread_cond_destroy(&cb->cond);
    free(cb);
}

/* ---- requests ---- */

typedef int (*body_encoder)(const void *msg, struct kafka_writer *w, int16_t version);

static int encode_registration(const void *msg, struct kafka_writer *w, int16_t version)
{
    return broker_registration_response_encode(msg, w, version);
}

static int encode_allocate(const void *msg, struct kafka_writer *w, int16_t version)
{
    return allocate_producer_ids_response_encode(msg, w, version);
}

static int encode_alter_partition(const void *msg, struct kafka_writer *w, int16_t version)
{
    return alter_partition_response_encode(msg, w, version);
}

static int encode_heartbeat(const void *msg, struct kafka_writer *w, int16_t version)
{
    return broker_heartbeat_response_encode(msg, w, version);
}

static void respond(struct net_request *req, int16_t api_key, int16_t version, int32_t correlation_id,
                    body_encoder encode, const void *msg)
{
    struct kafka_writer w;
    if (kafka_writer_init(&w, 128) != 0) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    size_t size_at = kafka_writer_reserve(&w, 4);
    kafka_write_int32(&w, correlation_id);
    if (kafka_response_header_version(api_key, version) >= 1)
        kafka_write_uvarint(&w, 0);
    if (encode(msg, &w, version) != 0 || w.failed) {
        kafka_writer_free(&w);
        net_request_complete(req, NULL, 0, true);
        return;
    }
    kafka_writer_patch_int32(&w, size_at, (int32_t)(kafka_writer_total_len(&w) - 4));
    net_request_complete(req, &w, 0, false);
    kafka_writer_free(&w);
}

static int16_t registration(struct controller_brokers *cb, const struct broker_registration_request *in, int64_t *epoch)
{
    if (in->cluster_id.len >= 0 && (strlen(cb->cluster_id) != (size_t)in->cluster_id.len ||
                                    memcmp(cb->cluster_id, in->cluster_id.data, (size_t)in->cluster_id.len) != 0)) {
        logger_error(LOG, "broker %d registered for cluster %.*s, but this is cluster %s: refused", in->broker_id,
                     (int)in->cluster_id.len, in->cluster_id.data, cb->cluster_id);
        return KAFKA_ERR_INCONSISTENT_CLUSTER_ID;
    }
    if (in->listeners_count <= 0 || in->listeners_count > 16)
        return KAFKA_ERR_INVALID_REQUEST;
    struct metadata_endpoint eps[16];
    char names[16][64], hosts[16][256];
    for (int32_t i = 0; i < in->listeners_count; i++) {
        const struct broker_registration_request_listener *l = &in->listeners[i];
        snprintf(names[i], sizeof names[i], "%.*s", (int)(l->name.len > 0 ? l->name.len : 0), l->name.data);
        snprintf(hosts[i], sizeof hosts[i], "%.*s", (int)(l->host.len > 0 ? l->host.len : 0), l->host.data);
        eps[i] = (struct metadata_endpoint){names[i], hosts[i], l->port, l->security_protocol};
    }
    char rack[256];
    snprintf(rack, sizeof rack, "%.*s", (int)(in->rack.len > 0 ? in->rack.len : 0), in->rack.data);
    char err[256] = "";
    /* Registered fenced; the first heartbeat that has caught up unfences.
     * PreviousBrokerEpoch is -1 from requests before v3. */
    int16_t rc = controller_brokers_register(cb, in->broker_id, eps, in->listeners_count,
                                             in->rack.len > 0 ? rack : NULL, &in->incarnation_id,
                                             in->previous_broker_epoch, true, epoch, err, sizeof err);
    if (rc == KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION)
        logger_info(LOG, "registration of broker %d refused: %s", in->broker_id, err);
    else if (rc != KAFKA_ERR_NONE && rc != KAFKA_ERR_NOT_CONTROLLER)
        logger_warn(LOG, "registration of broker %d failed: %s (error %d)", in->broker_id, err, (int)rc);
    return rc;
}

/* NONE when node_id is registered at epoch (*fenced: its state), else the
 * error Kafka's controller gives. */
static int16_t check_broker_epoch(struct controller_brokers *cb, int32_t node_id, int64_t epoch, bool *fenced,
                                  int64_t *registered_epoch)
{
    const struct metadata_image *img = metadata_image_acquire(cb->store);
    const struct metadata_broker *br = metadata_image_broker(img, node_id);
    bool registered = br != NULL;
    *fenced = !br || br->fenced;
    *registered_epoch = br ? br->epoch : -1;
    metadata_image_release(img);
    if (!registered)
        return KAFKA_ERR_BROKER_ID_NOT_REGISTERED;
    return *registered_epoch == epoch ? KAFKA_ERR_NONE : KAFKA_ERR_STALE_BROKER_EPOCH;
}

static void heartbeat(struct controller_brokers *cb, const struct broker_heartbeat_request *in,
                      struct broker_heartbeat_response *out)
{
    bool fenced = true;
    int64_t epoch = -1;
    int16_t known = check_broker_epoch(cb, in->broker_id, in->broker_epoch, &fenced, &epoch);
    out->is_fenced = fenced;
    bool controller = metadata_store_is_controller(cb->store);
    out->error_code = controller ? known : KAFKA_ERR_NOT_CONTROLLER;
    /* A leader catching up with its log answers NOT_CONTROLLER (the broker
     * tries again) but has heard from the broker all the same. */
    if (known == KAFKA_ERR_NONE && (controller || metadata_store_catching_up(cb->store)))
        controller_brokers_heard(cb, in->broker_id);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    if (in->want_shut_down) {
        /* Controlled shutdown: fenced now rather than a session later; its
         * partitions get new leaders from their ISRs in the same batch. */
        char err[256] = "";
        out->error_code = metadata_set_broker_fenced(cb->store, in->broker_id, epoch, true, err, sizeof err);
        out->is_fenced = out->error_code == KAFKA_ERR_NONE || fenced;
        out->should_shut_down = out->error_code == KAFKA_ERR_NONE;
        return;
    }
    /* Caught up once it has loaded its own registration. */
    out->is_caught_up = in->current_metadata_offset >= epoch;
    if (fenced && out->is_caught_up && !in->want_fence) {
        char err[256] = "";
        int16_t rc = metadata_set_broker_fenced(cb->store, in->broker_id, epoch, false, err, sizeof err);
        if (rc == KAFKA_ERR_NONE)
            out->is_fenced = false;
        else
            out->error_code = rc;
    }
}

void controller_brokers_handle_request(struct net_request *req, void *ctx)
{
    struct controller_brokers *cb = ctx;
    struct pending *p = calloc(1, sizeof *p);
    if (!p) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    p->req = req;
    pthread_mutex_lock(&cb->mu);
    bool stopping = cb->stopping;
    if (!stopping) {
        if (cb->queue_tail)
            cb->queue_tail->next = p;
        else
            cb->queue_head = p;
        cb->queue_tail = p;
        pthread_cond_signal(&cb->cond);
    }
    pthread_mutex_unlock(&cb->mu);
    if (stopping) {
        free(p);
        net_request_complete(req, NULL, 0, true);
    }
}

/* A block of producer ids for a registered broker at its epoch. */
static void allocate_ids(struct controller_brokers *cb, const struct allocate_producer_ids_request *in,
                         struct allocate_producer_ids_response *out)
{
    bool fenced = true;
    int64_t epoch = -1;
    out->error_code = check_broker_epoch(cb, in->broker_id, in->broker_epoch, &fenced, &epoch);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    char err[256] = "";
    int64_t first = -1;
    out->error_code = metadata_allocate_producer_ids(cb->store, in->broker_id, &first, err, sizeof err);
    if (out->error_code == KAFKA_ERR_NONE) {
        out->producer_id_start = first;
        out->producer_id_len = METADATA_PRODUCER_ID_BLOCK_SIZE;
    } else if (out->error_code != KAFKA_ERR_NOT_CONTROLLER) {
        logger_warn(LOG, "producer ids for broker %d: %s (error %d)", in->broker_id, err, (int)out->error_code);
    }
}

static void serve(struct controller_brokers *cb, struct net_request *req)
{
    if (req->frame_len < 8) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    int16_t key = (int16_t)((uint16_t)req->frame[0] << 8 | req->frame[1]);
    int16_t version = (int16_t)((uint16_t)req->frame[2] << 8 | req->frame[3]);
    if (key == CONTROLLER_API_ENVELOPE) {
        if (cb->forward)
            cb->forward(cb->forward_ctx, req);
        else
            net_request_complete(req, NULL, 0, true);
        return;
    }
    if (key != CONTROLLER_API_BROKER_REGISTRATION && key != CONTROLLER_API_BROKER_HEARTBEAT &&
        key != CONTROLLER_API_ALLOCATE_PRODUCER_IDS && key != CONTROLLER_API_ALTER_PARTITION) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    const struct kafka_api_desc *desc = kafka_api_lookup(key);
    int16_t header_version = kafka_request_header_version(key, version);
    struct kafka_reader r;
    kafka_reader_init(&r, req->frame, req->frame_len);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct request_header header;
    request_header_init(&header);
    union {
        struct broker_registration_request reg;
        struct broker_heartbeat_request hb;
        struct allocate_producer_ids_request alloc;
        struct alter_partition_request alter;
    } in;
    if (desc)
        desc->request_init(&in);
    if (!desc || version < desc->min_version || version > desc->max_version || header_version < 0 ||
        request_header_decode(&header, &r, header_version, &arena) != 0 ||
        desc->request_decode(&in, &r, version, &arena) != 0) {
        logger_warn(LOG, "malformed request API %d v%d from %s; closing", key, version, req->peer);
        kafka_arena_free(&arena);
        net_request_complete(req, NULL, 0, true);
        return;
    }
    if (key == CONTROLLER_API_BROKER_REGISTRATION) {
        struct broker_registration_response out;
        broker_registration_response_init(&out);
        out.broker_epoch = -1;
        out.error_code = registration(cb, &in.reg, &out.broker_epoch);
        respond(req, key, version, header.correlation_id, encode_registration, &out);
    } else if (key == CONTROLLER_API_ALLOCATE_PRODUCER_IDS) {
        struct allocate_producer_ids_response out;
        allocate_producer_ids_response_init(&out);
        allocate_ids(cb, &in.alloc, &out);
        respond(req, key, version, header.correlation_id, encode_allocate, &out);
    } else if (key == CONTROLLER_API_ALTER_PARTITION) {
        struct alter_partition_response out;
        alter_partition_response_init(&out);
        controller_alter_partition(cb->store, &in.alter, version, &out, &arena);
        respond(req, key, version, header.correlation_id, encode_alter_partition, &out);
    } else {
        struct broker_heartbeat_response out;
        broker_heartbeat_response_init(&out);
        heartbeat(cb, &in.hb, &out);
        respond(req, key, version, header.correlation_id, encode_heartbeat, &out);
    }
    kafka_arena_free(&arena);
}
