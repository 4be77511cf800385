/* AddOffsetsToTxn v0-3 and EndTxn v0-3. AddOffsetsToTxn adds the group's
 * __consumer_offsets partition to the transaction, so that the offsets the
 * producer then commits (TxnOffsetCommit) complete with it. EndTxn answers
 * once PrepareCommit/PrepareAbort is durable; markers follow. */
#include "handlers/handler_util.h"
#include "handlers/txn_handler_util.h"
#include "group/group_log.h"
#include "net/server.h"
#include "txn/txn_coordinator.h"
#include "util/logger.h"

enum handler_result handle_add_offsets_to_txn(struct request_context *ctx, void *request, void *response)
{
    struct add_offsets_to_txn_request *req = request;
    struct add_offsets_to_txn_response *resp = response;
    const char *id = txn_handler_cstr(ctx, req->transactional_id);
    const char *group = txn_handler_cstr(ctx, req->group_id);
    if (!id || !id[0] || !group) {
        resp->error_code = KAFKA_ERR_INVALID_REQUEST;
        return HANDLER_RESPOND;
    }
    /* Kafka's order: WRITE on the transactional id, then READ on the group. */
    if (!handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, true)) {
        resp->error_code = KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    if (!handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        resp->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    if (!ctx->env->txn_coordinator) {
        resp->error_code = KAFKA_ERR_NOT_COORDINATOR;
        return HANDLER_RESPOND;
    }
    struct txn_topic_partition part = {(char *)GROUP_LOG_TOPIC, txn_handler_offsets_partition(ctx, group)};
    int16_t code = txn_coordinator_add_partitions(ctx->env->txn_coordinator, id, req->producer_id, req->producer_epoch,
                                                  &part, 1);
    resp->error_code = txn_handler_fenced_error(code, ctx->api_version, 2);
    return HANDLER_RESPOND;
}

enum handler_result handle_end_txn(struct request_context *ctx, void *request, void *response)
{
    struct end_txn_request *req = request;
    struct end_txn_response *resp = response;
    const char *id = txn_handler_cstr(ctx, req->transactional_id);
    int16_t code;
    if (!id || !id[0])
        code = KAFKA_ERR_INVALID_REQUEST;
    else if (!handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, true))
        code = KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    else if (!ctx->env->txn_coordinator)
        code = KAFKA_ERR_NOT_COORDINATOR;
    else
        code = txn_coordinator_end(ctx->env->txn_coordinator, id, req->producer_id, req->producer_epoch,
                                   req->committed);
    resp->error_code = txn_handler_fenced_error(code, ctx->api_version, 2);
    logger_debug("txn", "%s: EndTxn %s %s for producer %lld epoch %d: %s", ctx->net ? ctx->net->peer : "-",
                 req->committed ? "commit" : "abort", id ? id : "?", (long long)req->producer_id,
                 (int)req->producer_epoch, kafka_error_name(resp->error_code));
    return HANDLER_RESPOND;
}
