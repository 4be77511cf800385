/* InitProducerId for idempotent producers: a fresh producer id (epoch 0)
 * from this broker's block of ids, which the controller records in the
 * cluster metadata so ids never repeat across restarts. From v3 a producer
 * may present its current id and epoch to have the epoch bumped (KIP-360).
 * Transactional ids go to the transaction coordinator. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "handlers/txn_handler_util.h"
#include "txn/txn_coordinator.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_PRODUCER_ID_EXPIRATION_MS 86400000
/* Past this many remembered producers, idle ones are dropped before growing. */
#define ISSUED_PRUNE_THRESHOLD 4096
/* Hard bound on the table (24 MiB): a flood of InitProducerId cannot grow it
 * further; producers left out get a new id if they ever ask for a bump. */
#define ISSUED_MAX ((size_t)1 << 20)

/* The epoch this broker last gave each idempotent producer id, so a bump
 * request can be told current from stale. Process-wide: one broker per
 * process. Guarded by issued_lock; entries sorted by id. */
struct issued_producer {
    int64_t producer_id;
    int16_t epoch;
    int64_t issued_ms;
};

static pthread_mutex_t issued_lock = PTHREAD_MUTEX_INITIALIZER;
static struct issued_producer *issued;
static size_t issued_count, issued_cap;

/* Index of the first entry with id >= producer_id. Caller holds issued_lock. */
static size_t issued_lower_bound(int64_t producer_id)
{
    size_t lo = 0, hi = issued_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (issued[mid].producer_id < producer_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void issued_prune(int64_t now_ms, int64_t expiration_ms)
{
    size_t kept = 0;
    for (size_t i = 0; i < issued_count; i++)
        if (now_ms - issued[i].issued_ms < expiration_ms)
            issued[kept++] = issued[i];
    issued_count = kept;
}

/* Remember (id, epoch). Caller holds issued_lock. Best effort: when memory
 * runs out the producer simply cannot bump its epoch later. */
static void issued_record(int64_t producer_id, int16_t epoch, int64_t now_ms, int64_t expiration_ms)
{
    size_t at = issued_lower_bound(producer_id);
    if (at < issued_count && issued[at].producer_id == producer_id) {
        issued[at].epoch = epoch;
        issued[at].issued_ms = now_ms;
        return;
    }
    if (issued_count == issued_cap) {
        if (issued_count >= ISSUED_PRUNE_THRESHOLD) {
            issued_prune(now_ms, expiration_ms);
            at = issued_lower_bound(producer_id);
        }
        if (issued_count == issued_cap) {
            if (issued_cap >= ISSUED_MAX)
                return;
            size_t cap = issued_cap ? issued_cap * 2 : 64;
            struct issued_producer *grown = realloc(issued, cap * sizeof *grown);
            if (!grown)
                return;
            issued = grown;
            issued_cap = cap;
        }
    }
    memmove(issued + at + 1, issued + at, (issued_count - at) * sizeof *issued);
    issued[at] = (struct issued_producer){producer_id, epoch, now_ms};
    issued_count++;
}

static int64_t expiration_ms(const struct request_context *ctx)
{
    if (!ctx->env->config)
        return DEFAULT_PRODUCER_ID_EXPIRATION_MS;
    return config_get_long(ctx->env->config, "producer.id.expiration.ms");
}

static int16_t new_producer_id(struct request_context *ctx, struct init_producer_id_response *resp)
{
    char err[256] = "";
    int64_t id = -1;
    int16_t code = metadata_next_producer_id(ctx->env->metadata, &id, err, sizeof err);
    if (code != KAFKA_ERR_NONE) {
        logger_error("init_producer_id", "cannot allocate a producer id: %s", err);
        /* Retriable for the client, as Kafka answers when its id block is not ready. */
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    }
    int64_t now = clock_wall_ms();
    pthread_mutex_lock(&issued_lock);
    issued_record(id, 0, now, expiration_ms(ctx));
    pthread_mutex_unlock(&issued_lock);
    resp->producer_id = id;
    resp->producer_epoch = 0;
    return KAFKA_ERR_NONE;
}

/* KIP-360: the producer presents (id, epoch) and gets epoch + 1 when that
 * epoch is the one last handed out. */
static int16_t bump_epoch(struct request_context *ctx, int64_t producer_id, int16_t epoch,
                          struct init_producer_id_response *resp)
{
    int64_t now = clock_wall_ms();
    pthread_mutex_lock(&issued_lock);
    size_t at = issued_lower_bound(producer_id);
    bool known = at < issued_count && issued[at].producer_id == producer_id;
    int16_t current = known ? issued[at].epoch : -1;
    if (known && current == epoch && epoch < INT16_MAX - 1) {
        issued[at].epoch = (int16_t)(epoch + 1);
        issued[at].issued_ms = now;
        pthread_mutex_unlock(&issued_lock);
        resp->producer_id = producer_id;
        resp->producer_epoch = (int16_t)(epoch + 1);
        return KAFKA_ERR_NONE;
    }
    pthread_mutex_unlock(&issued_lock);
    if (known && current != epoch) {
        /* v4 introduced PRODUCER_FENCED; older clients know the epoch error. */
        return ctx->api_version >= 4 ? KAFKA_ERR_PRODUCER_FENCED : KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    }
    /* Unknown here (e.g. issued before a restart) or the epoch is exhausted:
     * an idempotent producer carries no state that needs the old id. */
    return new_producer_id(ctx, resp);
}

/* A transactional id: the coordinator owns its producer id and epoch. */
static int16_t init_transactional(struct request_context *ctx, const struct init_producer_id_request *req,
                                  struct init_producer_id_response *resp)
{
    const char *id = txn_handler_cstr(ctx, req->transactional_id);
    if (!id || !id[0])
        return KAFKA_ERR_INVALID_REQUEST;
    if (!ctx->env->txn_coordinator)
        return KAFKA_ERR_NOT_COORDINATOR;
    int64_t pid = ctx->api_version >= 3 ? req->producer_id : -1;
    int16_t epoch = ctx->api_version >= 3 ? req->producer_epoch : -1;
    if ((pid < 0) != (epoch < 0))
        return KAFKA_ERR_INVALID_REQUEST;
    int16_t code = txn_coordinator_init_producer(ctx->env->txn_coordinator, id, req->transaction_timeout_ms, pid, epoch,
                                                 &resp->producer_id, &resp->producer_epoch);
    logger_debug("init_producer_id", "%s: transactional id %s: producer id %lld epoch %d (%s)",
                 ctx->net ? ctx->net->peer : "-", id, (long long)resp->producer_id, resp->producer_epoch,
                 kafka_error_name(code));
    return txn_handler_fenced_error(code, ctx->api_version, 4);
}

/* Kafka accepts IDEMPOTENT_WRITE on the cluster or WRITE on any topic;
 * plugins answer for named resources, so "any topic" means any topic that
 * exists now. */
static bool may_write_idempotently(struct request_context *ctx)
{
    if (!handler_decides(ctx))
        return true;
    if (handler_authorize_resource(ctx, CAIRN_OP_IDEMPOTENT_WRITE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE,
                                   true))
        return true;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return false;
    bool allowed = false;
    for (int32_t i = 0; i < img->topic_count && !allowed; i++) {
        if (img->topics[i]->is_internal)
            continue;
        allowed = handler_authorize_resource(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, img->topics[i]->name, false);
    }
    metadata_image_release(img);
    return allowed;
}

enum handler_result handle_init_producer_id(struct request_context *ctx, void *request, void *response)
{
    struct init_producer_id_request *req = request;
    struct init_producer_id_response *resp = response;
    resp->producer_id = -1;
    resp->producer_epoch = -1;
    if (req->transactional_id.len >= 0) {
        resp->error_code = handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID,
                                                  req->transactional_id, true)
                               ? init_transactional(ctx, req, resp)
                               : KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    if (!may_write_idempotently(ctx)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    int64_t pid = ctx->api_version >= 3 ? req->producer_id : -1;
    int16_t epoch = ctx->api_version >= 3 ? req->producer_epoch : -1;
    if ((pid < 0) != (epoch < 0)) {
        resp->error_code = KAFKA_ERR_INVALID_REQUEST;
        return HANDLER_RESPOND;
    }
    resp->error_code = pid < 0 ? new_producer_id(ctx, resp) : bump_epoch(ctx, pid, epoch, resp);
    if (resp->error_code != KAFKA_ERR_NONE) {
        resp->producer_id = -1;
        resp->producer_epoch = -1;
    }
    logger_debug("init_producer_id", "%s: producer id %lld epoch %d (%s)", ctx->net ? ctx->net->peer : "-",
                 (long long)resp->producer_id, resp->producer_epoch, kafka_error_name(resp->error_code));
    return HANDLER_RESPOND;
}
