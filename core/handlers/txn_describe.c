/* DescribeTransactions v0 and ListTransactions v0-1: read-only views of
 * the coordinator's transactional ids, for admin tools. */
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "handlers/txn_handler_util.h"
#include "txn/txn_coordinator.h"

typedef struct describe_transactions_response_transaction_state describe_state;

/* Copies one view into the response; runs under the coordinator's lock. */
struct describe_fill {
    struct request_context *ctx;
    describe_state *out;
    bool failed;
};

static void fill_description(void *arg, const struct txn_view *v)
{
    struct describe_fill *f = arg;
    struct request_context *ctx = f->ctx;
    describe_state *s = f->out;
    s->transaction_state = kafka_arena_strdup(&ctx->arena, txn_state_name(v->state));
    s->transaction_timeout_ms = v->timeout_ms;
    s->transaction_start_time_ms = v->start_ms;
    s->producer_id = v->producer_id;
    s->producer_epoch = v->producer_epoch;
    /* Partitions grouped by topic, in first-seen order. */
    size_t n = v->partition_count;
    HANDLER_NEW_ARRAY(ctx, s->topics, (int32_t)n, describe_transactions_response_topic_data_init);
    int32_t *ids = kafka_arena_alloc(&ctx->arena, (n + 1) * sizeof *ids);
    bool *placed = kafka_arena_alloc(&ctx->arena, n + 1);
    if (!s->topics || !ids || !placed) {
        f->failed = true;
        return;
    }
    memset(placed, 0, n + 1);
    int32_t topics = 0;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (placed[i])
            continue;
        struct describe_transactions_response_topic_data *t = &s->topics[topics++];
        t->topic = kafka_arena_strdup(&ctx->arena, v->partitions[i].topic);
        t->partitions = ids + used;
        for (size_t j = i; j < n; j++) {
            if (placed[j] || strcmp(v->partitions[j].topic, v->partitions[i].topic) != 0)
                continue;
            placed[j] = true;
            ids[used++] = v->partitions[j].partition;
            t->partitions_count++;
        }
    }
    s->topics_count = topics;
}

/* Kafka leaves out the partitions of topics the principal may not
 * DESCRIBE. An implicit filter, so not audited; checked here rather than in
 * fill_description so that plugins are not called under the coordinator's
 * lock. */
static void drop_undescribable_topics(struct request_context *ctx, describe_state *s)
{
    int32_t kept = 0;
    for (int32_t t = 0; t < s->topics_count; t++) {
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, s->topics[t].topic, false))
            continue;
        s->topics[kept++] = s->topics[t];
    }
    s->topics_count = kept;
}

enum handler_result handle_describe_transactions(struct request_context *ctx, void *request, void *response)
{
    struct describe_transactions_request *req = request;
    struct describe_transactions_response *resp = response;
    int32_t count = req->transactional_ids_count > 0 ? req->transactional_ids_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->transaction_states, count, describe_transactions_response_transaction_state_init);
    if (!resp->transaction_states)
        return HANDLER_CLOSE;
    resp->transaction_states_count = count;
    for (int32_t i = 0; i < count; i++) {
        describe_state *s = &resp->transaction_states[i];
        s->transactional_id = req->transactional_ids[i];
        s->transaction_state = kafka_arena_strdup(&ctx->arena, "");
        const char *id = txn_handler_cstr(ctx, req->transactional_ids[i]);
        struct describe_fill fill = {ctx, s, false};
        if (!id || !id[0])
            s->error_code = KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND;
        else if (!handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TRANSACTIONAL_ID, id, true))
            s->error_code = KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
        else if (!ctx->env->txn_coordinator)
            s->error_code = KAFKA_ERR_NOT_COORDINATOR;
        else
            s->error_code = txn_coordinator_describe(ctx->env->txn_coordinator, id, fill_description, &fill);
        if (fill.failed)
            return HANDLER_CLOSE;
        if (s->error_code == KAFKA_ERR_NONE)
            drop_undescribable_topics(ctx, s);
    }
    return HANDLER_RESPOND;
}

/* Filters and the growing result of a ListTransactions. */
struct list_fill {
    struct request_context *ctx;
    const struct list_transactions_request *req;
    bool states_wanted[TXN_STATE_PREPARE_EPOCH_FENCE + 1];
    bool any_state_filter;
    int64_t duration_ms;
    int64_t now;
    struct list_transactions_response_transaction_state *items;
    int32_t count, cap;
    bool failed;
};

static void collect(void *arg, const struct txn_view *v)
{
    struct list_fill *f = arg;
    if (f->failed || v->state == TXN_STATE_DEAD)
        return;
    if (f->any_state_filter && ((int)v->state > TXN_STATE_PREPARE_EPOCH_FENCE || !f->states_wanted[v->state]))
        return;
    if (f->req->producer_id_filters_count > 0) {
        bool match = false;
        for (int32_t i = 0; i < f->req->producer_id_filters_count && !match; i++)
            match = f->req->producer_id_filters[i] == v->producer_id;
        if (!match)
            return;
    }
    if (f->duration_ms >= 0 && f->now - v->start_ms <= f->duration_ms)
        return;
    if (f->count == f->cap) {
        int32_t cap = f->cap ? f->cap * 2 : 16;
        struct list_transactions_response_transaction_state *grown;
        HANDLER_NEW_ARRAY(f->ctx, grown, cap, list_transactions_response_transaction_state_init);
        if (!grown) {
            f->failed = true;
            return;
        }
        if (f->count > 0)
            memcpy(grown, f->items, (size_t)f->count * sizeof *grown);
        f->items = grown;
        f->cap = cap;
    }
    struct list_transactions_response_transaction_state *s = &f->items[f->count++];
    s->transactional_id = kafka_arena_strdup(&f->ctx->arena, v->transactional_id);
    s->producer_id = v->producer_id;
    s->transaction_state = kafka_arena_strdup(&f->ctx->arena, txn_state_name(v->state));
}

enum handler_result handle_list_transactions(struct request_context *ctx, void *request, void *response)
{
    struct list_transactions_request *req = request;
    struct list_transactions_response *resp = response;
    struct list_fill fill;
    memset(&fill, 0, sizeof fill);
    fill.ctx = ctx;
    fill.req = req;
    fill.duration_ms = ctx->api_version >= 1 ? req->duration_filter : -1;
    int32_t filters = req->state_filters_count > 0 ? req->state_filters_count : 0;
    resp->unknown_state_filters = kafka_arena_alloc(&ctx->arena, (size_t)(filters + 1) * sizeof(struct kafka_str));
    if (!resp->unknown_state_filters)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < filters; i++) {
        struct kafka_str name = req->state_filters[i];
        int state = name.len >= 0 ? txn_state_from_name(name.data, (size_t)name.len) : -1;
        fill.any_state_filter = true;
        if (state < 0)
            resp->unknown_state_filters[resp->unknown_state_filters_count++] = name;
        else
            fill.states_wanted[state] = true;
    }
    if (!ctx->env->txn_coordinator)
        return HANDLER_RESPOND; /* no coordinator here: nothing to list */
    fill.now = txn_coordinator_now_ms(ctx->env->txn_coordinator);
    resp->error_code = txn_coordinator_list(ctx->env->txn_coordinator, collect, &fill);
    if (fill.failed)
        return HANDLER_CLOSE;
    /* Only ids the principal may DESCRIBE; checked here rather than in
     * collect so that plugins are not called under the coordinator's lock. */
    int32_t kept = 0;
    for (int32_t i = 0; i < fill.count; i++) {
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TRANSACTIONAL_ID,
                                    fill.items[i].transactional_id, false))
            continue;
        fill.items[kept++] = fill.items[i];
    }
    resp->transaction_states = fill.items;
    resp->transaction_states_count = kept;
    return HANDLER_RESPOND;
}
