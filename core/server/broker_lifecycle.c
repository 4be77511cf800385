#include "server/broker_lifecycle.h"
#include "server/links.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/listeners.h"
#include "config/uuid.h"
#include "metadata/metadata_store.h"
#include "log/log_checkpoint.h"
#include "net/client.h"
#include "protocol/generated/allocate_producer_ids_request.h"
#include "protocol/generated/allocate_producer_ids_response.h"
#include "protocol/generated/alter_partition_request.h"
#include "protocol/generated/alter_partition_response.h"
#include "protocol/generated/broker_heartbeat_request.h"
#include "protocol/generated/broker_heartbeat_response.h"
#include "protocol/generated/broker_registration_request.h"
#include "protocol/generated/broker_registration_response.h"
#include "protocol/generated/errors.h"
#include "metadata/metadata_alter_partition.h"
#include "raft/raft_shell_metadata.h"
#include "server/controller_alter_partition.h"
#include "server/controller_brokers.h"
#include "server/controller_route.h"
#include "util/logger.h"

#define LOG "server"

/* Owned by the main thread; the thread reads the options and sets
 * nothing shared but through the metadata store. */
struct broker_lifecycle {
    struct metadata_store *store;
    int32_t node_id;
    struct metadata_endpoint *endpoints;
    int32_t endpoint_count;
    char *rack;
    int64_t heartbeat_interval_ms;
    char cluster_id[64];
    struct kafka_uuid incarnation_id;
    struct raft_shell_metadata *quorum;
    struct controller_route route; /* the leader's address, from the quorum */
    struct controller_brokers *controller;
    struct net_client *client;
    pthread_mutex_t call_mu; /* serializes calls to the leader; guards epoch */
    int64_t epoch;           /* broker epoch from the last registration, -1 */
    /* epoch as other threads read it without call_mu (a call to the
     * controller may hold that for a heartbeat interval) */
    _Atomic int64_t published_epoch;
    /* The epoch of the previous process's clean stop, sent as
     * PreviousBrokerEpoch until a registration succeeds; -1. Under call_mu. */
    int64_t previous_epoch;
    char *state_dir;
    bool refused;     /* the last registration was refused as a duplicate; under call_mu */
    int64_t retry_ms; /* pause before the next round while unregistered; under call_mu */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu; /* guards stopping */
    pthread_cond_t cond;
    bool stopping;
};

/* Unfenced under this incarnation's registration: after a restart the
 * image read from disk may still list the previous one unfenced (its
 * fencing record not yet applied), and opening the listeners then would
 * send clients a Metadata answer without this broker in it. */
static bool unfenced_in_image(struct broker_lifecycle *lc)
{
    int64_t registered = atomic_load(&lc->published_epoch);
    if (registered < 0)
        return false;
    const struct metadata_image *img = metadata_image_acquire(lc->store);
    const struct metadata_broker *br = metadata_image_broker(img, lc->node_id);
    bool ok = br && !br->fenced && br->epoch == registered;
    metadata_image_release(img);
    return ok;
}

/* One request to the leader, waited for: the thread's only outbound call. */
struct call {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool done;
    int16_t error;
    int64_t broker_epoch;
    bool is_fenced;
    int64_t producer_id_start;
    int32_t partition_epoch; /* AlterPartition's answer */
};

/* Caller holds call_mu (or is the only thread, at start). */
static void set_epoch(struct broker_lifecycle *lc, int64_t epoch)
{
    if (epoch >= 0 && epoch != lc->epoch)
        logger_info(LOG, "broker %d now has broker epoch %lld", lc->node_id, (long long)epoch);
    lc->epoch = epoch;
    atomic_store(&lc->published_epoch, epoch);
}

#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 1000

/* A registration's outcome: a refusal as a duplicate (the previous
 * incarnation's session still runs at the controller) is logged once and
 * retried with a growing pause until that session lapses. Caller holds
 * call_mu. */
static void registration_outcome(struct broker_lifecycle *lc, int16_t rc)
{
    if (rc == KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION) {
        if (!lc->refused)
            logger_warn(LOG, "broker %d: registration refused, previous incarnation's session still valid; retrying",
                        lc->node_id);
        lc->refused = true;
        lc->retry_ms = lc->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : lc->retry_ms * 2;
        return;
    }
    if (rc != KAFKA_ERR_NONE)
        return;
    if (lc->refused)
        logger_info(LOG, "broker %d: registration accepted after the previous incarnation's session lapsed",
                    lc->node_id);
    lc->refused = false;
    lc->retry_ms = RETRY_MIN_MS;
    lc->previous_epoch = -1; /* proves one clean stop, once */
}

int64_t broker_lifecycle_epoch(void *ctx)
{
    struct broker_lifecycle *lc = ctx;
    return atomic_load(&lc->published_epoch);
}

static void call_done(struct net_client_result *result, void *ctx)
{
    struct call *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->error = net_client_status_kafka_error(result->status);
    if (result->status == NET_CLIENT_OK && result->response) {
        if (result->api_key == CONTROLLER_API_ALLOCATE_PRODUCER_IDS) {
            const struct allocate_producer_ids_response *r = result->response;
            c->error = r->error_code;
            c->producer_id_start = r->producer_id_start;
            if (c->error == KAFKA_ERR_NONE && r->producer_id_len != METADATA_PRODUCER_ID_BLOCK_SIZE)
                c->error = KAFKA_ERR_UNKNOWN_SERVER_ERROR; /* the store hands out blocks of one size */
        } else if (result->api_key == CONTROLLER_API_ALTER_PARTITION) {
            /* One partition asked: its error, else the request's. */
            const struct alter_partition_response *r = result->response;
            c->error = r->error_code;
            if (c->error == KAFKA_ERR_NONE) {
                if (r->topics_count == 1 && r->topics[0].partitions_count == 1) {
                    c->error = r->topics[0].partitions[0].error_code;
                    c->partition_epoch = r->topics[0].partitions[0].partition_epoch;
                } else {
                    c->error = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
                }
            }
        } else if (result->api_key == CONTROLLER_API_BROKER_REGISTRATION) {
            const struct broker_registration_response *r = result->response;
            c->error = r->error_code;
            c->broker_epoch = r->broker_epoch;
        } else {
            const struct broker_heartbeat_response *r = result->response;
            c->error = r->error_code;
            c->is_fenced = r->is_fenced;
        }
    }
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
}

/* Caller holds call_mu. */
static int16_t call_leader(struct broker_lifecycle *lc, int32_t leader, int16_t api_key, const void *body,
                           struct call *c)
{
    /* The leader's address as the quorum knows it: from the voters, or
     * from the controllers' Fetch answers (bootstrap servers). */
    if (!controller_route_reach(&lc->route, lc->client, lc->quorum, leader))
        return KAFKA_ERR_NOT_CONTROLLER;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    struct net_client_request req = {.node_id = leader,
                                     .api_key = api_key,
                                     /* AlterPartition v3: by topic id, the ISR with broker epochs (KIP-903) */
                                     .pinned_version = api_key == CONTROLLER_API_ALTER_PARTITION ? 3 : -1,
                                     .body = body,
                                     .timeout_ms = lc->heartbeat_interval_ms,
                                     .done = call_done,
                                     .ctx = c};
    char err[256] = "";
    int16_t error = KAFKA_ERR_NETWORK_EXCEPTION;
    if (net_client_send(lc->client, &req, err, sizeof err) == 0) {
        pthread_mutex_lock(&c->mu);
        while (!c->done)
            pthread_cond_wait(&c->cond, &c->mu);
        error = c->error;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    return error;
}

static void register_remote(struct broker_lifecycle *lc, int32_t leader)
{
    struct broker_registration_request_listener listeners[16];
    int32_t n = lc->endpoint_count < 16 ? lc->endpoint_count : 16;
    for (int32_t i = 0; i < n; i++) {
        broker_registration_request_listener_init(&listeners[i]);
        listeners[i].name = (struct kafka_str){lc->endpoints[i].listener, (int32_t)strlen(lc->endpoints[i].listener)};
        listeners[i].host = (struct kafka_str){lc->endpoints[i].host, (int32_t)strlen(lc->endpoints[i].host)};
        listeners[i].port = lc->endpoints[i].port;
        listeners[i].security_protocol = lc->endpoints[i].security_protocol;
    }
    struct broker_registration_request req;
    broker_registration_request_init(&req);
    req.broker_id = lc->node_id;
    req.cluster_id = (struct kafka_str){lc->cluster_id, (int32_t)strlen(lc->cluster_id)};
    req.incarnation_id = lc->incarnation_id;
    req.listeners = listeners;
    req.listeners_count = n;
    req.rack = lc->rack ? (struct kafka_str){lc->rack, (int32_t)strlen(lc->rack)} : (struct kafka_str){NULL, -1};
    req.previous_broker_epoch = lc->previous_epoch;
    struct call c = {.broker_epoch = -1};
    int16_t rc = call_leader(lc, leader, CONTROLLER_API_BROKER_REGISTRATION, &req, &c);
    registration_outcome(lc, rc);
    if (rc == KAFKA_ERR_NONE) {
        set_epoch(lc, c.broker_epoch);
        logger_info(LOG, "broker %d registered with controller %d at epoch %lld", lc->node_id, leader,
                    (long long)lc->epoch);
    } else if (rc != KAFKA_ERR_NOT_CONTROLLER && rc != KAFKA_ERR_NETWORK_EXCEPTION &&
               rc != KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION) {
        logger_warn(LOG, "broker %d: registration with controller %d failed (error %d)", lc->node_id, leader, rc);
    }
}

static int16_t heartbeat_remote(struct broker_lifecycle *lc, int32_t leader, bool want_shut_down)
{
    const struct metadata_image *img = metadata_image_acquire(lc->store);
    int64_t offset = img->last_offset;
    metadata_image_release(img);
    struct broker_heartbeat_request req;
    broker_heartbeat_request_init(&req);
    req.broker_id = lc->node_id;
    req.broker_epoch = lc->epoch;
    req.current_metadata_offset = offset;
    req.want_shut_down = want_shut_down;
    struct call c = {.broker_epoch = -1};
    int16_t rc = call_leader(lc, leader, CONTROLLER_API_BROKER_HEARTBEAT, &req, &c);
    if (rc == KAFKA_ERR_STALE_BROKER_EPOCH || rc == KAFKA_ERR_BROKER_ID_NOT_REGISTERED) {
        logger_info(LOG, "broker %d: controller %d does not know epoch %lld (error %d): registering again", lc->node_id,
                    leader, (long long)lc->epoch, rc);
        set_epoch(lc, -1);
    }
    return rc;
}

/* One round: register (or re-register after a change) and heartbeat; at
 * the active controller's own node directly through the store. Caller
 * holds call_mu. */
static void lifecycle_round_locked(struct broker_lifecycle *lc)
{
    if (lc->controller && metadata_store_is_controller(lc->store)) {
        /* The same rule as over the network: a restart within the previous
         * incarnation's session waits for it to lapse. */
        char err[256] = "";
        int64_t epoch = lc->epoch;
        int16_t rc = controller_brokers_register(lc->controller, lc->node_id, lc->endpoints, lc->endpoint_count,
                                                 lc->rack, &lc->incarnation_id, lc->previous_epoch, false, &epoch, err,
                                                 sizeof err);
        set_epoch(lc, epoch);
        registration_outcome(lc, rc);
        if (rc != KAFKA_ERR_NONE && rc != KAFKA_ERR_NOT_CONTROLLER && rc != KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION)
            logger_warn(LOG, "broker %d could not register: %s (error %d)", lc->node_id, err, (int)rc);
        return;
    }
    int32_t leader = raft_shell_metadata_leader_id(lc->quorum);
    if (leader < 0 || leader == lc->node_id)
        return; /* no leader yet, or this node's controller is still catching up */
    if (lc->epoch < 0)
        register_remote(lc, leader);
    if (lc->epoch >= 0)
        heartbeat_remote(lc, leader, false);
}

/* The CLOCK_REALTIME time ms from now, as lc->cond's waits take it. */
static struct timespec deadline_in(int64_t ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    return deadline;
}

static bool deadline_passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Waits until deadline on lc->cond; with stop_wakes, stop ends the wait
 * early. Returns true when stopping. */
static bool wait_until(struct broker_lifecycle *lc, const struct timespec *deadline, bool stop_wakes)
{
    pthread_mutex_lock(&lc->mu);
    while (!(stop_wakes && lc->stopping) && pthread_cond_timedwait(&lc->cond, &lc->mu, deadline) != ETIMEDOUT)
        ;
    bool stopping = lc->stopping;
    pthread_mutex_unlock(&lc->mu);
    return stopping;
}

/* Waits ms or until stop; returns true when stopping. */
static bool wait_or_stop(struct broker_lifecycle *lc, int64_t ms)
{
    struct timespec deadline = deadline_in(ms);
    return wait_until(lc, &deadline, true);
}

static void lifecycle_round(struct broker_lifecycle *lc)
{
    pthread_mutex_lock(&lc->call_mu);
    lifecycle_round_locked(lc);
    pthread_mutex_unlock(&lc->call_mu);
}

int16_t broker_lifecycle_allocate_producer_ids(void *ctx, int64_t *first, char *err, size_t errlen)
{
    struct broker_lifecycle *lc = ctx;
    if (metadata_store_is_controller(lc->store))
        return metadata_allocate_producer_ids(lc->store, lc->node_id, first, err, errlen);
    int32_t leader = raft_shell_metadata_leader_id(lc->quorum);
    if (leader < 0 || leader == lc->node_id) {
        snprintf(err, errlen, "no active controller to allocate producer ids");
        return KAFKA_ERR_NOT_CONTROLLER;
    }
    pthread_mutex_lock(&lc->call_mu);
    struct allocate_producer_ids_request req;
    allocate_producer_ids_request_init(&req);
    req.broker_id = lc->node_id;
    req.broker_epoch = lc->epoch;
    struct call c = {.producer_id_start = -1};
    int16_t rc = call_leader(lc, leader, CONTROLLER_API_ALLOCATE_PRODUCER_IDS, &req, &c);
    pthread_mutex_unlock(&lc->call_mu);
    if (rc != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "controller %d did not allocate producer ids (error %d)", leader, rc);
        return rc;
    }
    *first = c.producer_id_start;
    return KAFKA_ERR_NONE;
}

int16_t broker_lifecycle_alter_partition(void *ctx, const char *topic, const uint8_t topic_id[16], int32_t partition,
                                         int32_t leader_epoch, int32_t partition_epoch, const int32_t *isr,
                                         const int64_t *isr_epochs, int32_t isr_count, int32_t *new_partition_epoch)
{
    struct broker_lifecycle *lc = ctx;
    *new_partition_epoch = -1;
    if (isr_count < 1 || isr_count > 64)
        return KAFKA_ERR_INVALID_REQUEST;
    struct kafka_uuid id;
    memcpy(id.bytes, topic_id, sizeof id.bytes);
    pthread_mutex_lock(&lc->call_mu);
    int64_t broker_epoch = lc->epoch;
    int16_t rc;
    if (metadata_store_is_controller(lc->store)) {
        /* The active controller's own node: straight to the store. */
        struct metadata_isr_member members[64];
        for (int32_t i = 0; i < isr_count; i++)
            members[i] = (struct metadata_isr_member){isr[i], isr_epochs[i]};
        struct metadata_isr_change change = {
            .topic_name = topic,
            .topic_name_len = strlen(topic),
            .topic_id = id,
            .partition_index = partition,
            .leader_epoch = leader_epoch,
            .partition_epoch = partition_epoch,
            .isr = members,
            .isr_count = isr_count,
        };
        char err[256] = "";
        rc = metadata_alter_partition(lc->store, lc->node_id, broker_epoch, 3, &change, 1, err, sizeof err);
        if (rc == KAFKA_ERR_NONE)
            rc = change.error_code;
        if (rc == KAFKA_ERR_NONE)
            *new_partition_epoch = change.new_partition_epoch;
        pthread_mutex_unlock(&lc->call_mu);
        return rc;
    }
    int32_t leader = raft_shell_metadata_leader_id(lc->quorum);
    if (leader < 0 || leader == lc->node_id || broker_epoch < 0) {
        pthread_mutex_unlock(&lc->call_mu);
        return KAFKA_ERR_NOT_CONTROLLER; /* rediscovered at the next try */
    }
    struct alter_partition_request_partition_data pd;
    alter_partition_request_partition_data_init(&pd);
    pd.partition_index = partition;
    pd.leader_epoch = leader_epoch;
    pd.partition_epoch = partition_epoch;
    struct alter_partition_request_broker_state states[64];
    for (int32_t i = 0; i < isr_count; i++)
        states[i] = (struct alter_partition_request_broker_state){isr[i], isr_epochs[i]};
    pd.new_isr_with_epochs = states;
    pd.new_isr_with_epochs_count = isr_count;
    struct alter_partition_request_topic_data td;
    alter_partition_request_topic_data_init(&td);
    td.topic_name = (struct kafka_str){topic, (int32_t)strlen(topic)};
    td.topic_id = id;
    td.partitions = &pd;
    td.partitions_count = 1;
    struct alter_partition_request req;
    alter_partition_request_init(&req);
    req.broker_id = lc->node_id;
    req.broker_epoch = broker_epoch;
    req.topics = &td;
    req.topics_count = 1;
    struct call c = {.partition_epoch = -1};
    rc = call_leader(lc, leader, CONTROLLER_API_ALTER_PARTITION, &req, &c);
    pthread_mutex_unlock(&lc->call_mu);
    if (rc == KAFKA_ERR_NONE)
        *new_partition_epoch = c.partition_epoch;
    return rc;
}

static void *lifecycle_main(void *arg)
{
    struct broker_lifecycle *lc = arg;
    int64_t pause;
    do {
        lifecycle_round(lc);
        pthread_mutex_lock(&lc->call_mu);
        pause = lc->retry_ms;
        pthread_mutex_unlock(&lc->call_mu);
        /* Quick rounds until registered (slower while refused), then at
         * the heartbeat interval. */
    } while (!wait_or_stop(lc, unfenced_in_image(lc) ? lc->heartbeat_interval_ms : pause));
    return NULL;
}

/* The epoch the previous process left at its clean stop, -1; the file is
 * removed, so a crash after this start does not pass for a clean stop. */
static int64_t take_clean_shutdown_epoch(struct broker_lifecycle *lc)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", lc->state_dir, BROKER_LIFECYCLE_EPOCH_FILE) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long epoch = -1;
    if (fscanf(f, "%lld", &epoch) != 1 || epoch < 0)
        epoch = -1;
    fclose(f);
    if (unlink(path) != 0)
        logger_warn(LOG, "cannot remove %s: %s", path, strerror(errno));
    if (epoch >= 0)
        logger_info(LOG, "broker %d stopped cleanly at broker epoch %lld", lc->node_id, epoch);
    return epoch;
}

/* Leaves the epoch for the next start: it proves to the controller that
 * this registration ended cleanly, so the next one need not wait for the
 * session to lapse (the active controller's own broker is not fenced at
 * its shutdown). */
static void leave_clean_shutdown_epoch(struct broker_lifecycle *lc)
{
    char path[4096], text[32];
    if (!lc->state_dir || lc->epoch < 0 ||
        snprintf(path, sizeof path, "%s/%s", lc->state_dir, BROKER_LIFECYCLE_EPOCH_FILE) >= (int)sizeof path)
        return;
    int len = snprintf(text, sizeof text, "%lld\n", (long long)lc->epoch);
    if (log_file_write_atomic(path, text, (size_t)len) != 0)
        logger_warn(LOG, "cannot write %s: the next start waits for this session to lapse", path);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int broker_lifecycle_start(const struct broker_lifecycle_options *opts, struct broker_lifecycle **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    struct broker_lifecycle *lc = calloc(1, sizeof *lc);
    if (!lc)
        goto oom;
    lc->store = opts->store;
    lc->node_id = opts->node_id;
    lc->heartbeat_interval_ms = opts->heartbeat_interval_ms > 0 ? opts->heartbeat_interval_ms : 2000;
    lc->quorum = opts->quorum;
    lc->controller = opts->controller;
    set_epoch(lc, -1);
    lc->retry_ms = RETRY_MIN_MS;
    lc->previous_epoch = -1;
    if (opts->state_dir) {
        if (!(lc->state_dir = strdup(opts->state_dir)))
            goto oom;
        lc->previous_epoch = take_clean_shutdown_epoch(lc);
    }
    snprintf(lc->cluster_id, sizeof lc->cluster_id, "%s", opts->cluster_id ? opts->cluster_id : "");
    pthread_mutex_init(&lc->mu, NULL);
    pthread_mutex_init(&lc->call_mu, NULL);
    controller_route_init(&lc->route);
    pthread_cond_init(&lc->cond, NULL);
    lc->endpoints = calloc(opts->endpoint_count > 0 ? (size_t)opts->endpoint_count : 1, sizeof *lc->endpoints);
    if (!lc->endpoints)
        goto oom;
    for (int32_t i = 0; i < opts->endpoint_count; i++) {
        lc->endpoints[i] = opts->endpoints[i];
        lc->endpoints[i].listener = strdup(opts->endpoints[i].listener);
        lc->endpoints[i].host = strdup(opts->endpoints[i].host);
        lc->endpoint_count = i + 1;
        if (!lc->endpoints[i].listener || !lc->endpoints[i].host)
            goto oom;
    }
    lc->rack = dup_or_null(opts->rack);
    if (opts->rack && !lc->rack)
        goto oom;
    if (uuid_random(lc->incarnation_id.bytes) != 0) {
        snprintf(err, errlen, "cannot draw the broker's incarnation id");
        broker_lifecycle_stop(lc);
        return -1;
    }
    struct net_client_config ccfg;
    net_client_config_defaults(&ccfg);
    snprintf(ccfg.client_id, sizeof ccfg.client_id, "cairn-broker-%d", (int)lc->node_id);
    ccfg.reconnect_backoff_max_ms = 500;
    server_link_apply(opts->link, &ccfg);
    if (net_client_create(&ccfg, &lc->client, err, errlen) != 0) {
        broker_lifecycle_stop(lc);
        return -1;
    }
    if (pthread_create(&lc->thread, NULL, lifecycle_main, lc) != 0) {
        snprintf(err, errlen, "cannot start the broker lifecycle thread");
        broker_lifecycle_stop(lc);
        return -1;
    }
    lc->thread_started = true;
    *out = lc;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    broker_lifecycle_stop(lc);
    return -1;
}

static bool stop_signal_pending(void)
{
    sigset_t pending;
    if (sigpending(&pending) != 0)
        return false;
    return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

int broker_lifecycle_wait_unfenced(struct broker_lifecycle *lc, int64_t timeout_ms)
{
    for (int64_t waited = 0; waited < timeout_ms; waited += 50) {
        if (unfenced_in_image(lc))
            return 0;
        if (stop_signal_pending())
            return BROKER_LIFECYCLE_STOP_PENDING;
        if (wait_or_stop(lc, 50))
            return -1;
    }
    return unfenced_in_image(lc) ? 0 : -1;
}

/* This node's registration epoch as the image has it while it is listed
 * unfenced, else -1: a broker stopped right after a restart may not have
 * heard its own registration answer, yet clients are sent to it. */
static int64_t unfenced_epoch_in_image(struct broker_lifecycle *lc)
{
    const struct metadata_image *img = metadata_image_acquire(lc->store);
    const struct metadata_broker *br = metadata_image_broker(img, lc->node_id);
    int64_t epoch = br && !br->fenced ? br->epoch : -1;
    metadata_image_release(img);
    return epoch;
}

/* Kafka's controlled shutdown, reduced: the controller fences this broker
 * at once, so clients stop being sent to it before the session would lapse.
 * The active controller's own broker skips it: its quorum goes too, and the
 * next leader fences it after the session. While the leader is unknown or
 * moving (NOT_CONTROLLER, no answer) it is tried again for up to
 * CONTROLLED_SHUTDOWN_MS, as Kafka's broker keeps asking until told. */
#define CONTROLLED_SHUTDOWN_MS 2000
static void controlled_shutdown(struct broker_lifecycle *lc)
{
    struct timespec give_up = deadline_in(CONTROLLED_SHUTDOWN_MS);
    int32_t leader = -1;
    int16_t rc = KAFKA_ERR_NOT_CONTROLLER;
    for (;;) {
        pthread_mutex_lock(&lc->call_mu);
        leader = raft_shell_metadata_leader_id(lc->quorum);
        if (lc->epoch < 0)
            set_epoch(lc, unfenced_epoch_in_image(lc));
        bool own = leader == lc->node_id;
        rc = leader >= 0 && !own && lc->epoch >= 0 ? heartbeat_remote(lc, leader, true) : KAFKA_ERR_NOT_CONTROLLER;
        pthread_mutex_unlock(&lc->call_mu);
        if (rc == KAFKA_ERR_NONE || own || rc == KAFKA_ERR_STALE_BROKER_EPOCH ||
            rc == KAFKA_ERR_BROKER_ID_NOT_REGISTERED)
            break;
        if (unfenced_epoch_in_image(lc) < 0 && lc->epoch < 0)
            break; /* not listed unfenced: nothing to take back */
        if (deadline_passed(&give_up))
            break;
        /* Stopping is already set: the pause is not cut short by it. */
        struct timespec retry = deadline_in(100);
        (void)wait_until(lc, &retry, false);
    }
    if (rc == KAFKA_ERR_NONE)
        logger_info(LOG, "broker %d fenced by controller %d for its shutdown", lc->node_id, leader);
    else
        logger_info(LOG, "broker %d shuts down without a controlled shutdown (error %d)", lc->node_id, rc);
}

void broker_lifecycle_stop(struct broker_lifecycle *lc)
{
    if (!lc)
        return;
    if (lc->thread_started) {
        pthread_mutex_lock(&lc->mu);
        lc->stopping = true;
        pthread_cond_broadcast(&lc->cond);
        pthread_mutex_unlock(&lc->mu);
        pthread_join(lc->thread, NULL);
        controlled_shutdown(lc);
        leave_clean_shutdown_epoch(lc);
    }
    if (lc->client)
        net_client_destroy(lc->client);
    for (int32_t i = 0; i < lc->endpoint_count; i++) {
        free(lc->endpoints[i].listener);
        free(lc->endpoints[i].host);
    }
    free(lc->endpoints);
    free(lc->rack);
    free(lc->state_dir);
    pthread_mutex_destroy(&lc->mu);
    controller_route_destroy(&lc->route);
    pthread_mutex_destroy(&lc->call_mu);
    pthread_cond_destroy(&lc->cond);
    free(lc);
}
