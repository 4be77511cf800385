/* AddPartitionsToTxn v0-4: registers partitions with a transaction before
 * the producer writes to them. v4 (broker to broker) batches several
 * transactions and can only verify (verify_only) that partitions are in
 * one; it is answered per transaction. */
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "handlers/txn_handler_util.h"
#include "txn/txn_coordinator.h"

typedef struct add_partitions_to_txn_request_add_partitions_to_txn_topic req_topic;
typedef struct add_partitions_to_txn_response_add_partitions_to_txn_topic_result resp_topic;
typedef struct add_partitions_to_txn_response_add_partitions_to_txn_partition_result resp_partition;

/* Fills the per-partition results of one transaction. Returns -1 when out
 * of memory (the connection is closed). */
static int add_one(struct request_context *ctx, struct kafka_str id_str, int64_t producer_id, int16_t epoch,
                   bool verify_only, const req_topic *topics, int32_t topic_count, resp_topic **out, int32_t *out_count)
{
    topic_count = topic_count > 0 ? topic_count : 0;
    HANDLER_NEW_ARRAY(ctx, *out, topic_count, add_partitions_to_txn_response_add_partitions_to_txn_topic_result_init);
    if (!*out)
        return -1;
    *out_count = topic_count;
    size_t total = 0;
    for (int32_t t = 0; t < topic_count; t++)
        total += (size_t)(topics[t].partitions_count > 0 ? topics[t].partitions_count : 0);
    /* The request is already in memory, so total is bounded by its size. */
    struct txn_topic_partition *parts = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *parts);
    int16_t *codes = kafka_arena_alloc(&ctx->arena, (total + 1) * sizeof *codes);
    if (!parts || !codes)
        return -1;
    const char *id = txn_handler_cstr(ctx, id_str);
    int16_t common = KAFKA_ERR_NONE;
    if (!id || !id[0])
        common = KAFKA_ERR_INVALID_REQUEST;
    else if (!handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, id_str, true))
        common = KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    else if (!ctx->env->txn_coordinator)
        common = KAFKA_ERR_NOT_COORDINATOR;
    bool unknown = false;
    size_t n = 0;
    for (int32_t t = 0; t < topic_count; t++) {
        const req_topic *rt = &topics[t];
        resp_topic *r = &(*out)[t];
        r->name = rt->name;
        int32_t pc = rt->partitions_count > 0 ? rt->partitions_count : 0;
        HANDLER_NEW_ARRAY(ctx, r->results_by_partition, pc,
                          add_partitions_to_txn_response_add_partitions_to_txn_partition_result_init);
        if (!r->results_by_partition)
            return -1;
        r->results_by_partition_count = pc;
        const char *topic = txn_handler_cstr(ctx, rt->name);
        /* WRITE on each topic; a denied topic fails like an unknown one. */
        bool writable = common != KAFKA_ERR_NONE ||
                        handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, rt->name, true);
        for (int32_t i = 0; i < pc; i++) {
            r->results_by_partition[i].partition_index = rt->partitions[i];
            parts[n].topic = (char *)(topic ? topic : "");
            parts[n].partition = rt->partitions[i];
            codes[n] = !writable                           ? KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED
                       : topic && common == KAFKA_ERR_NONE ? txn_handler_partition_exists(ctx, topic, rt->partitions[i])
                                                           : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            unknown |= codes[n] != KAFKA_ERR_NONE;
            n++;
        }
    }
    if (common == KAFKA_ERR_NONE && unknown) {
        /* Kafka's answer: the unknown ones fail, the rest were not tried. */
        for (size_t i = 0; i < n; i++)
            if (codes[i] == KAFKA_ERR_NONE)
                codes[i] = KAFKA_ERR_OPERATION_NOT_ATTEMPTED;
    } else if (common == KAFKA_ERR_NONE && verify_only) {
        common = txn_coordinator_verify_partitions(ctx->env->txn_coordinator, id, producer_id, epoch, parts, n, codes);
    } else if (common == KAFKA_ERR_NONE) {
        common = txn_coordinator_add_partitions(ctx->env->txn_coordinator, id, producer_id, epoch, parts, n);
    }
    if (common != KAFKA_ERR_NONE)
        for (size_t i = 0; i < n; i++)
            codes[i] = txn_handler_fenced_error(common, ctx->api_version, 2);
    n = 0;
    for (int32_t t = 0; t < topic_count; t++)
        for (int32_t i = 0; i < (*out)[t].results_by_partition_count; i++)
            (*out)[t].results_by_partition[i].partition_error_code = codes[n++];
    return 0;
}

enum handler_result handle_add_partitions_to_txn(struct request_context *ctx, void *request, void *response)
{
    struct add_partitions_to_txn_request *req = request;
    struct add_partitions_to_txn_response *resp = response;
    if (ctx->api_version < 4) {
        if (add_one(ctx, req->v3_and_below_transactional_id, req->v3_and_below_producer_id,
                    req->v3_and_below_producer_epoch, false, req->v3_and_below_topics, req->v3_and_below_topics_count,
                    &resp->results_by_topic_v3_and_below, &resp->results_by_topic_v3_and_below_count) != 0)
            return HANDLER_CLOSE;
        return HANDLER_RESPOND;
    }
    /* v4+ comes from other brokers: CLUSTER_ACTION on the cluster. v5 differs
     * only in letting the answer carry TRANSACTION_ABORTABLE. */
    if (!handler_authorize_one(ctx, CAIRN_OP_CLUSTER_ACTION, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    int32_t count = req->transactions_count > 0 ? req->transactions_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->results_by_transaction, count,
                      add_partitions_to_txn_response_add_partitions_to_txn_result_init);
    if (!resp->results_by_transaction)
        return HANDLER_CLOSE;
    resp->results_by_transaction_count = count;
    for (int32_t i = 0; i < count; i++) {
        const struct add_partitions_to_txn_request_add_partitions_to_txn_transaction *t = &req->transactions[i];
        struct add_partitions_to_txn_response_add_partitions_to_txn_result *r = &resp->results_by_transaction[i];
        r->transactional_id = t->transactional_id;
        if (add_one(ctx, t->transactional_id, t->producer_id, t->producer_epoch, t->verify_only, t->topics,
                    t->topics_count, &r->topic_results, &r->topic_results_count) != 0)
            return HANDLER_CLOSE;
    }
    return HANDLER_RESPOND;
}
