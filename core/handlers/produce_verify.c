/* Transaction verification for Produce: see produce_verify.h. */
#include "handlers/produce_verify.h"

#include <inttypes.h>
#include <string.h>

#include "coordinator/coordinator_partition.h"
#include "handlers/handler_util.h"
#include "handlers/txn_handler_util.h"
#include "handlers/txn_markers_local.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/client.h"
#include "protocol/record_batch.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"
#include "util/logger.h"

#define ADD_PARTITIONS_TO_TXN_KEY 24
#define VERIFY_VERSION 4 /* the first with verify_only */

typedef struct add_partitions_to_txn_request_add_partitions_to_txn_topic req_topic;

/* One remote verification in flight. In the request's arena: the request
 * outlives it, since only its completion answers the request. */
struct verify_call {
    struct request_context *ctx;
    struct produce_verdict *verdicts;
    produce_verify_resume_fn resume;
    struct add_partitions_to_txn_request body;
    struct add_partitions_to_txn_request_add_partitions_to_txn_transaction txn;
    int32_t last_topic; /* the request's topic entry txn's last topic is for */
};

int16_t produce_verify_error(int16_t code, int16_t api_version)
{
    switch (code) {
    case KAFKA_ERR_INVALID_TXN_STATE:
    case KAFKA_ERR_TRANSACTION_ABORTABLE:
        return api_version >= 11 ? KAFKA_ERR_TRANSACTION_ABORTABLE : KAFKA_ERR_INVALID_TXN_STATE;
    case KAFKA_ERR_PRODUCER_FENCED:
        return KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    case KAFKA_ERR_CONCURRENT_TRANSACTIONS:
    case KAFKA_ERR_NETWORK_EXCEPTION:
    case KAFKA_ERR_REQUEST_TIMED_OUT:
    case KAFKA_ERR_BROKER_NOT_AVAILABLE:
    case KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KAFKA_ERR_COORDINATOR_NOT_AVAILABLE:
    case KAFKA_ERR_NOT_COORDINATOR:
        return KAFKA_ERR_NOT_ENOUGH_REPLICAS;
    default:
        return code;
    }
}

/* The broker leading the id's __transaction_state partition, -1 if none. */
static int32_t coordinator_of(const struct metadata_image *img, const char *id)
{
    const struct metadata_topic *t = metadata_image_topic_by_name(img, TXN_LOG_TOPIC, strlen(TXN_LOG_TOPIC));
    if (!t || t->partition_count <= 0)
        return -1;
    const struct metadata_partition *p = metadata_topic_partition(
        t, coordinator_partition_for(id, strlen(id), t->partition_count));
    return p && p->present ? p->leader : -1;
}

/* The transactional batch a Produce partition carries, if any. */
static bool txn_batch(const struct produce_request_partition_produce_data *in, struct record_batch_header *h)
{
    return in->records.len > 0 && in->records.file_fd < 0 &&
           record_batch_parse_header((const uint8_t *)in->records.data, (size_t)in->records.len, h) == 0 &&
           record_batch_is_transactional(h) && !record_batch_is_control(h) && h->producer_id >= 0;
}

/* Takes the partition's guard; true when the coordinator must be asked. */
static bool start_partition(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                            const struct record_batch_header *h, struct produce_verdict *v)
{
    struct partition_log *log;
    if (!topic || handler_leader_log(ctx, topic, partition, &log) != KAFKA_ERR_NONE)
        return false; /* answered by the append path */
    v->code = partition_log_txn_verification_start(log, h->producer_id, &v->guard);
    partition_log_close(log);
    v->guarded = v->code == KAFKA_ERR_NONE;
    return v->guarded && v->guard != 0;
}

static int16_t verify_local(struct request_context *ctx, const char *id, const struct record_batch_header *h,
                            const char *topic, int32_t partition)
{
    struct txn_topic_partition part = {.topic = (char *)topic, .partition = partition};
    int16_t code = KAFKA_ERR_NONE;
    int16_t common = ctx->env->txn_coordinator
                         ? txn_coordinator_verify_partitions(ctx->env->txn_coordinator, id, h->producer_id,
                                                             h->producer_epoch, &part, 1, &code)
                         : KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    return produce_verify_error(common != KAFKA_ERR_NONE ? common : code, ctx->api_version);
}

/* Adds partition to the remote request's entry for the request's topic
 * entry t (one per entry, sized by that entry's partition count
 * partition_cap, so the arrays stay linear in the request). */
static int add_remote(struct request_context *ctx, struct verify_call *call, int32_t cap, int32_t topic_index,
                      struct kafka_str topic, int32_t partition_cap, int32_t partition)
{
    struct add_partitions_to_txn_request_add_partitions_to_txn_transaction *t = &call->txn;
    req_topic *last = t->topics_count > 0 ? &t->topics[t->topics_count - 1] : NULL;
    if (!last || call->last_topic != topic_index) {
        call->last_topic = topic_index;
        if (!t->topics) {
            t->topics = kafka_arena_alloc(&ctx->arena, (size_t)cap * sizeof *t->topics);
            if (!t->topics)
                return -1;
        }
        last = &t->topics[t->topics_count++];
        add_partitions_to_txn_request_add_partitions_to_txn_topic_init(last);
        last->name = topic;
        last->partitions = kafka_arena_alloc(&ctx->arena, (size_t)partition_cap * sizeof *last->partitions);
        if (!last->partitions)
            return -1;
    }
    last->partitions[last->partitions_count++] = partition;
    return 0;
}

typedef struct add_partitions_to_txn_response_add_partitions_to_txn_topic_result resp_topic;

static bool same_name(const resp_topic *tr, const struct kafka_str *name)
{
    return tr->name.len == name->len && memcmp(tr->name.data, name->data, (size_t)name->len) == 0;
}

/* The code for (name, partition) in the answer r. The coordinator answers
 * in request order, so the cursors (topic *rt, partition *rp) find each in
 * one step and the whole answer is read in linear time; an answer in
 * another order is searched, the last match winning. */
static int16_t answer_code(const struct add_partitions_to_txn_response_add_partitions_to_txn_result *r,
                           const struct kafka_str *name, int32_t partition, int32_t *rt, int32_t *rp, int16_t code)
{
    for (int step = 0; step < 2; step++, (*rt)++, *rp = 0) {
        if (*rt >= r->topic_results_count || !same_name(&r->topic_results[*rt], name))
            continue;
        const resp_topic *tr = &r->topic_results[*rt];
        if (*rp < tr->results_by_partition_count && tr->results_by_partition[*rp].partition_index == partition)
            return tr->results_by_partition[(*rp)++].partition_error_code;
    }
    *rt = *rp = 0;
    for (int32_t t = 0; t < r->topic_results_count; t++) {
        const resp_topic *tr = &r->topic_results[t];
        for (int32_t p = 0; same_name(tr, name) && p < tr->results_by_partition_count; p++)
            if (tr->results_by_partition[p].partition_index == partition)
                code = tr->results_by_partition[p].partition_error_code;
    }
    return code;
}

/* The verdict of each remote partition in the answer. */
static void apply_answer(struct verify_call *call, const struct add_partitions_to_txn_response *resp)
{
    const struct produce_request *req = call->ctx->request;
    const struct add_partitions_to_txn_response_add_partitions_to_txn_result *r =
        resp->error_code == KAFKA_ERR_NONE && resp->results_by_transaction_count == 1 ? &resp->results_by_transaction[0]
                                                                                      : NULL;
    int32_t k = 0, rt = 0, rp = 0;
    for (int32_t t = 0; t < req->topic_data_count; t++) {
        const struct kafka_str *name = &req->topic_data[t].name;
        for (int32_t i = 0; i < req->topic_data[t].partition_data_count; i++) {
            struct produce_verdict *v = &call->verdicts[k++];
            if (!v->remote)
                continue;
            int16_t code = resp->error_code != KAFKA_ERR_NONE ? resp->error_code : KAFKA_ERR_NETWORK_EXCEPTION;
            if (r)
                code = answer_code(r, name, req->topic_data[t].partition_data[i].index, &rt, &rp, code);
            v->code = produce_verify_error(code, call->ctx->api_version);
            v->remote = false;
        }
    }
}

static void finish(struct request_context *ctx, struct produce_verdict *verdicts, produce_verify_resume_fn resume)
{
    switch (resume(ctx, verdicts)) {
    case HANDLER_RESPOND:
        request_context_respond(ctx);
        break;
    case HANDLER_NO_RESPONSE:
        request_context_abandon(ctx, false);
        break;
    case HANDLER_CLOSE:
        request_context_abandon(ctx, true);
        break;
    case HANDLER_DEFERRED:
        break; /* parked: the purgatory answers */
    }
}

static void fail_remote(struct produce_verdict *verdicts, int32_t count, int16_t code)
{
    for (int32_t k = 0; k < count; k++)
        if (verdicts[k].remote) {
            verdicts[k].code = code;
            verdicts[k].remote = false;
        }
}

static void remote_done(struct net_client_result *result, void *arg)
{
    struct verify_call *call = arg;
    const struct produce_request *req = call->ctx->request;
    if (result->status == NET_CLIENT_OK && result->response) {
        apply_answer(call, result->response);
    } else {
        logger_warn("produce", "transaction verification with broker %" PRId32 " failed: %s %s", result->node_id,
                    net_client_status_name(result->status), result->error);
        int32_t total = 0;
        for (int32_t t = 0; t < req->topic_data_count; t++)
            total += req->topic_data[t].partition_data_count;
        fail_remote(call->verdicts, total, KAFKA_ERR_NOT_ENOUGH_REPLICAS);
    }
    finish(call->ctx, call->verdicts, call->resume);
}

/* Sends call to the coordinator; false when it cannot be sent. */
static bool send_remote(struct request_context *ctx, const struct metadata_image *img, int32_t coordinator,
                        struct verify_call *call)
{
    const struct txn_markers_local *links = ctx->env->txn_links;
    const struct metadata_broker *b = metadata_image_broker(img, coordinator);
    const struct metadata_endpoint *ep = b && !b->fenced
                                             ? metadata_broker_link_endpoint(b, links->listener, links->link_is_tls)
                                             : NULL;
    if (!ep || net_client_add_node(links->client, coordinator, ep->host, ep->port) != 0)
        return false;
    add_partitions_to_txn_request_init(&call->body);
    call->body.transactions = &call->txn;
    call->body.transactions_count = 1;
    struct net_client_request nreq = {
        .node_id = coordinator,
        .api_key = ADD_PARTITIONS_TO_TXN_KEY,
        .pinned_version = VERIFY_VERSION,
        .body = &call->body,
        .timeout_ms = links->request_timeout_ms > 0 ? links->request_timeout_ms : 5000,
        .done = remote_done,
        .ctx = call,
    };
    char err[160];
    if (net_client_send(links->client, &nreq, err, sizeof err) != 0) {
        logger_warn("produce", "cannot send transaction verification to broker %" PRId32 ": %s", coordinator, err);
        return false;
    }
    return true;
}

enum handler_result produce_verify(struct request_context *ctx, const struct produce_request *req,
                                   struct produce_verdict **verdicts, produce_verify_resume_fn resume)
{
    *verdicts = NULL;
    if (!ctx->env->txn_verification || ctx->api_version < 3 || req->transactional_id.len < 0)
        return HANDLER_RESPOND;
    int32_t total = 0;
    for (int32_t t = 0; t < req->topic_data_count; t++)
        total += req->topic_data[t].partition_data_count;
    struct produce_verdict *v = kafka_arena_alloc(&ctx->arena, (size_t)(total > 0 ? total : 1) * sizeof *v);
    struct verify_call *call = kafka_arena_alloc(&ctx->arena, sizeof *call);
    if (!v || !call)
        return HANDLER_CLOSE;
    memset(v, 0, (size_t)(total > 0 ? total : 1) * sizeof *v);
    memset(call, 0, sizeof *call);
    add_partitions_to_txn_request_add_partitions_to_txn_transaction_init(&call->txn);
    call->last_topic = -1;
    *verdicts = v;
    const char *id = txn_handler_cstr(ctx, req->transactional_id);
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    int32_t coordinator = id ? coordinator_of(img, id) : -1;
    bool remote = coordinator >= 0 && coordinator != ctx->env->node_id && ctx->env->txn_links &&
                  ctx->env->txn_links->client;
    int32_t k = 0, asked = 0;
    for (int32_t t = 0; t < req->topic_data_count; t++) {
        const struct produce_request_topic_produce_data *tin = &req->topic_data[t];
        const struct metadata_topic *topic = tin->name.len > 0 ? metadata_image_topic_by_name(img, tin->name.data,
                                                                                              (size_t)tin->name.len)
                                                               : NULL;
        const char *name = txn_handler_cstr(ctx, tin->name);
        /* Unauthorized partitions fail before any verification. */
        bool allowed = handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, tin->name, true);
        for (int32_t i = 0; i < tin->partition_data_count; i++, k++) {
            struct record_batch_header h;
            if (!allowed || !txn_batch(&tin->partition_data[i], &h) ||
                !start_partition(ctx, topic, tin->partition_data[i].index, &h, &v[k]))
                continue;
            if (!id || !name ||
                (asked > 0 &&
                 (h.producer_id != call->txn.producer_id || h.producer_epoch != call->txn.producer_epoch))) {
                /* One transaction per request: a second producer is not in it. */
                v[k].code = produce_verify_error(KAFKA_ERR_INVALID_TXN_STATE, ctx->api_version);
            } else if (!remote) {
                v[k].code = coordinator == ctx->env->node_id
                                ? verify_local(ctx, id, &h, name, tin->partition_data[i].index)
                                : produce_verify_error(KAFKA_ERR_COORDINATOR_NOT_AVAILABLE, ctx->api_version);
            } else if (add_remote(ctx, call, req->topic_data_count, t, tin->name, tin->partition_data_count,
                                  tin->partition_data[i].index) != 0) {
                metadata_image_release(img);
                return HANDLER_CLOSE;
            } else {
                v[k].remote = true;
                call->txn.producer_id = h.producer_id;
                call->txn.producer_epoch = h.producer_epoch;
                asked++;
            }
        }
    }
    if (asked == 0) {
        metadata_image_release(img);
        return HANDLER_RESPOND;
    }
    call->ctx = ctx;
    call->verdicts = v;
    call->resume = resume;
    call->txn.transactional_id = req->transactional_id;
    call->txn.verify_only = true;
    bool sent = send_remote(ctx, img, coordinator, call);
    metadata_image_release(img);
    if (!sent) {
        fail_remote(v, total, KAFKA_ERR_NOT_ENOUGH_REPLICAS);
        return HANDLER_RESPOND;
    }
    return HANDLER_DEFERRED;
}
