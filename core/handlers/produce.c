/* Produce: validate and append record batches to the partitions this broker
 * leads. With one in-sync replica the high watermark moves with the append,
 * so acks=all answers at once; with followers in the ISR an acks=all
 * produce waits in the purgatory until the high watermark passes its
 * batches (REQUEST_TIMED_OUT after the request's timeout,
 * NOT_LEADER_OR_FOLLOWER when leadership moves meanwhile,
 * NOT_ENOUGH_REPLICAS_AFTER_APPEND when it passes with the ISR below
 * min.insync.replicas). acks=0 sends no response at all. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "coordinator/purgatory.h"
#include "handlers/fetch_replica.h"
#include "handlers/produce_verify.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "replication/replication.h"
#include "util/clock.h"
#include "util/logger.h"

/* A partition of an acks=all produce waiting for its followers. */
struct produce_wait {
    struct partition_log *log; /* own reference */
    int64_t required;          /* the high watermark that covers the batch */
    int32_t leader_epoch;      /* at the append: another one means leadership moved */
    char topic[256];
    struct produce_response_partition_produce_response *out; /* in the request's arena */
    bool finished;
};

/* Owned by the handler until parked, then by the purgatory. */
#define PRODUCE_MAX_HELD 16

struct produce_op {
    struct delayed_op op; /* first: the purgatory hands us this pointer */
    struct request_context *ctx;
    struct purgatory *purgatory;
    atomic_bool cancelled;
    int32_t count, cap;
    struct produce_wait *waits;
    /* Followers this produce found absent and holds (fetch_replica.h). */
    int32_t held[PRODUCE_MAX_HELD];
    int32_t held_count;
};

static int32_t topic_min_insync(const struct metadata_topic *topic, int32_t broker_default)
{
    const char *v = metadata_topic_config(topic, "min.insync.replicas");
    if (!v)
        return broker_default;
    char *end;
    long n = strtol(v, &end, 10);
    return (*end || n < 1) ? broker_default : (int32_t)n;
}

static int64_t append_records(struct request_context *ctx, const struct metadata_topic *topic,
                              const struct metadata_partition *p, struct partition_log *log,
                              struct produce_request_partition_produce_data *in,
                              struct produce_response_partition_produce_response *out,
                              const struct produce_verdict *verdict);

/* acks=all: keeps the partition in op when its high watermark has yet to
 * pass the batch. */
static void add_wait(struct produce_op *op, const struct metadata_topic *topic, const struct metadata_partition *p,
                     struct partition_log *log, int64_t required,
                     struct produce_response_partition_produce_response *out)
{
    if (partition_log_high_watermark(log) >= required)
        return;
    if (op->count == op->cap) {
        out->error_code = KAFKA_ERR_REQUEST_TIMED_OUT; /* no room to wait: the client retries */
        return;
    }
    struct produce_wait *w = &op->waits[op->count++];
    partition_log_retain(log);
    w->log = log;
    w->required = required;
    w->leader_epoch = p->leader_epoch;
    snprintf(w->topic, sizeof w->topic, "%s", topic->name);
    w->out = out;
    w->finished = false;
}

static void produce_partition(struct request_context *ctx, const struct metadata_topic *topic, int16_t acks,
                              struct produce_request_partition_produce_data *in,
                              struct produce_response_partition_produce_response *out, struct produce_op *op,
                              const struct produce_verdict *verdict)
{
    out->index = in->index;
    out->base_offset = -1;
    out->log_append_time_ms = -1;
    out->log_start_offset = -1;
    if (!topic) {
        out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    if (topic->is_internal) {
        /* Group offsets and transaction state are written by their
         * coordinators only; records from a client would be replayed as
         * coordinator state. */
        out->error_code = KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
        char msg[96];
        snprintf(msg, sizeof msg, "Cannot append to internal topic %s", topic->name);
        out->error_message = kafka_arena_strdup(&ctx->arena, msg);
        return;
    }
    struct partition_log *log;
    out->error_code = handler_leader_log(ctx, topic, in->index, &log);
    if (out->error_code != KAFKA_ERR_NONE)
        return;
    const struct metadata_partition *p = metadata_topic_partition(topic, in->index);
    if (in->records.len <= 0 || in->records.file_fd >= 0) {
        out->error_code = KAFKA_ERR_CORRUPT_MESSAGE;
    } else if (verdict && verdict->code != KAFKA_ERR_NONE) {
        out->error_code = verdict->code; /* not verified: nothing appended */
        logger_debug("produce", "transactional batch for %s-%d from %s not verified: %s", topic->name, in->index,
                     ctx->net->peer, kafka_error_name(verdict->code));
    } else if (acks == -1 && p->isr_count < topic_min_insync(topic, ctx->env->min_insync_replicas)) {
        out->error_code = KAFKA_ERR_NOT_ENOUGH_REPLICAS;
    } else {
        int64_t required = append_records(ctx, topic, p, log, in, out, verdict);
        if (acks == -1 && required >= 0 && op)
            add_wait(op, topic, p, log, required, out);
    }
    partition_log_close(log);
}

/* Kafka names each keyless record of a compacted topic (Produce v8+,
 * KIP-467), so a client fails those records with INVALID_RECORD and may
 * retry the others of the batch. Returns false when there is nothing to
 * name (the append failed for another reason). */
static bool add_record_errors(struct request_context *ctx, const struct metadata_topic *topic,
                              struct partition_log *log, const struct produce_request_partition_produce_data *in,
                              struct produce_response_partition_produce_response *out)
{
    const uint8_t *records = (const uint8_t *)in->records.data;
    size_t len = (size_t)in->records.len;
    int32_t count = partition_log_keyless_records(log, records, len, NULL, 0);
    if (count <= 0)
        return false;
    int32_t *indexes = kafka_arena_alloc(&ctx->arena, (size_t)count * sizeof *indexes);
    if (!indexes || partition_log_keyless_records(log, records, len, indexes, count) != count)
        return false;
    HANDLER_NEW_ARRAY(ctx, out->record_errors, count, produce_response_batch_index_and_error_message_init);
    if (!out->record_errors)
        return false;
    char msg[320];
    snprintf(msg, sizeof msg, "Compacted topic cannot accept message without key in topic partition %s-%d.",
             topic->name, in->index);
    struct kafka_str per_record = kafka_arena_strdup(&ctx->arena, msg);
    for (int32_t i = 0; i < count; i++) {
        out->record_errors[i].batch_index = indexes[i];
        out->record_errors[i].batch_index_error_message = per_record;
    }
    out->record_errors_count = count;
    snprintf(msg, sizeof msg,
             "%d record(s) rejected; the first at batch index %d: "
             "Compacted topic cannot accept message without key in topic partition %s-%d.",
             count, indexes[0], topic->name, in->index);
    out->error_message = kafka_arena_strdup(&ctx->arena, msg);
    logger_debug("produce", "append to %s-%d from %s failed: %d keyless record(s) in a compacted topic", topic->name,
                 in->index, ctx->net->peer, count);
    return true;
}

/* Returns the offset past the batch once it is in the log, else -1. */
static int64_t append_records(struct request_context *ctx, const struct metadata_topic *topic,
                              const struct metadata_partition *p, struct partition_log *log,
                              struct produce_request_partition_produce_data *in,
                              struct produce_response_partition_produce_response *out,
                              const struct produce_verdict *verdict)
{
    /* The records point into the request frame, which this request owns
     * until it completes: offsets are assigned in place. */
    struct log_append_result res;
    res.error_message[0] = '\0';
    uint8_t *records = (uint8_t *)in->records.data;
    size_t len = (size_t)in->records.len;
    out->error_code = verdict && verdict->guarded
                          ? partition_log_append_verified(log, records, len, p->leader_epoch, verdict->guard, &res)
                          : partition_log_append(log, records, len, p->leader_epoch, &res);
    if (out->error_code == KAFKA_ERR_PRODUCER_FENCED) {
        /* Produce answers fencing with the epoch error every client version knows. */
        out->error_code = KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    }
    if (out->error_code == KAFKA_ERR_INVALID_RECORD && ctx->api_version >= 8 &&
        add_record_errors(ctx, topic, log, in, out))
        return -1;
    if (res.record_index >= 0 && ctx->api_version >= 8) {
        /* One record at fault (a timestamp out of its window): named as
         * Kafka's RecordValidationException names it. */
        HANDLER_NEW_ARRAY(ctx, out->record_errors, 1, produce_response_batch_index_and_error_message_init);
        if (out->record_errors) {
            out->record_errors[0].batch_index = res.record_index;
            out->record_errors[0].batch_index_error_message = kafka_arena_strdup(&ctx->arena, res.error_message);
            out->record_errors_count = 1;
        }
    }
    if (out->error_code != KAFKA_ERR_NONE) {
        if (res.error_message[0])
            out->error_message = kafka_arena_strdup(&ctx->arena, res.error_message);
        logger_debug("produce", "append to %s-%d from %s failed: %s (%s)", topic->name, in->index, ctx->net->peer,
                     kafka_error_name(out->error_code), res.error_message);
        return -1;
    }
    out->base_offset = res.base_offset;
    out->log_append_time_ms = res.log_append_time;
    out->log_start_offset = res.log_start_offset;
    if (res.duplicate) {
        /* A retry of a batch already in the log: Kafka answers NONE with
         * the batch's original base offset and writes nothing. */
        logger_debug("produce", "duplicate batch for %s-%d from %s: already at offset %lld", topic->name, in->index,
                     ctx->net->peer, (long long)res.base_offset);
        return res.last_offset + 1;
    }
    purgatory_notify(ctx->env->fetch_purgatory, (uintptr_t)log);
    return res.last_offset + 1;
}

static void produce_op_free(struct delayed_op *op)
{
    struct produce_op *po = (struct produce_op *)op;
    for (int32_t i = 0; i < po->held_count; i++)
        fetch_replica_absent_release(po->held[i]);
    for (int32_t i = 0; i < po->count; i++)
        partition_log_close(po->waits[i].log);
    free(po->waits);
    free(po);
}

/* Answers once every waiting partition's high watermark covers its batch,
 * its leadership moved, or time is up. */
static bool produce_try_complete(struct delayed_op *op, bool expired)
{
    struct produce_op *po = (struct produce_op *)op;
    struct request_context *ctx = po->ctx;
    if (atomic_load(&po->cancelled)) {
        request_context_abandon(ctx, true);
        return true;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    bool all = true;
    for (int32_t i = 0; i < po->count; i++) {
        struct produce_wait *w = &po->waits[i];
        if (w->finished)
            continue;
        const struct metadata_topic *topic = img ? metadata_image_topic_by_name(img, w->topic, strlen(w->topic)) : NULL;
        const struct metadata_partition *p = topic ? metadata_topic_partition(topic, w->out->index) : NULL;
        if (partition_log_high_watermark(w->log) >= w->required) {
            /* Kafka's checkEnoughReplicasReachOffset: the batch is in the
             * ISR, but an ISR shrunk below the minimum since the append
             * (the shrink is what let the high watermark pass) does not
             * meet what acks=all promised. */
            if (p && p->present && p->isr_count < topic_min_insync(topic, ctx->env->min_insync_replicas))
                w->out->error_code = KAFKA_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
            w->finished = true;
        } else if (!p || !p->present || p->leader != ctx->env->node_id || p->leader_epoch != w->leader_epoch) {
            w->out->error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
            w->finished = true;
        } else if (expired) {
            w->out->error_code = KAFKA_ERR_REQUEST_TIMED_OUT;
            w->finished = true;
        } else {
            all = false;
        }
    }
    if (img)
        metadata_image_release(img);
    if (!all)
        return false;
    request_context_respond(ctx);
    return true;
}

static void produce_cancel(void *arg)
{
    struct produce_op *po = arg;
    atomic_store(&po->cancelled, true);
    purgatory_expire_now(po->purgatory, &po->op);
}

/* Holds follower id for po (once), so its fetches park briefly until po
 * is answered: it may wake before it has applied the partition. */
static void hold_absent(struct produce_op *po, int32_t id)
{
    for (int32_t i = 0; i < po->held_count; i++)
        if (po->held[i] == id)
            return;
    if (po->held_count == PRODUCE_MAX_HELD)
        return;
    po->held[po->held_count++] = id;
    fetch_replica_absent_hold(id);
}

/* Parks po until the followers catch up; answers at once when no
 * partition waits. */
static enum handler_result park(struct request_context *ctx, struct produce_op *po, int32_t timeout_ms)
{
    if (po->count == 0) { /* every batch already covered: answer as acks=1 does */
        produce_op_free(&po->op);
        return HANDLER_RESPOND;
    }
    po->ctx = ctx;
    po->purgatory = ctx->env->fetch_purgatory;
    po->op.try_complete = produce_try_complete;
    po->op.free_fn = produce_op_free;
    po->op.deadline_mono_ms = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    bool watch_failed = false;
    for (int32_t i = 0; i < po->count && !watch_failed; i++)
        watch_failed = delayed_op_watch(&po->op, (uintptr_t)po->waits[i].log) != 0;
    if (watch_failed) {
        produce_try_complete(&po->op, true);
        delayed_op_release_keys(&po->op);
        produce_op_free(&po->op);
        return HANDLER_DEFERRED; /* already answered */
    }
    net_request_set_cancel(ctx->net, produce_cancel, po);
    /* A follower that has yet to fetch a partition (new to it) adds it to
     * its next fetch: answer the one it has parked here now. */
    for (int32_t i = 0; i < po->count; i++) {
        int32_t absent[16];
        int32_t n = replication_absent_followers(ctx->env->replication, po->waits[i].topic, po->waits[i].out->index,
                                                 absent, 16);
        for (int32_t k = 0; k < n; k++) {
            hold_absent(po, absent[k]);
            fetch_wake_replica(po->purgatory, absent[k]);
        }
    }
    /* Appended: the connection's next Produce need not wait for this one's
     * followers (its answer still comes after this one's). */
    net_request_pipeline_next(ctx->net);
    purgatory_add(po->purgatory, &po->op);
    return HANDLER_DEFERRED;
}

/* A transactional produce also needs WRITE on its transactional id;
 * without it every partition fails. */
static bool txn_write_allowed(struct request_context *ctx, const struct produce_request *req)
{
    return ctx->api_version < 3 || req->transactional_id.len < 0 ||
           handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TRANSACTIONAL_ID, req->transactional_id, true);
}

/* Appends the request's batches (verdicts: what verification decided per
 * partition, NULL when nothing was verified) and answers or parks. */
static enum handler_result produce_append(struct request_context *ctx, struct produce_verdict *verdicts)
{
    struct produce_request *req = ctx->request;
    struct produce_response *resp = ctx->response;
    bool valid_acks = req->acks == 0 || req->acks == 1 || req->acks == -1;
    bool txn_allowed = txn_write_allowed(ctx, req);

    struct produce_op *op = NULL;
    if (req->acks == -1) {
        int32_t total = 0;
        for (int32_t t = 0; t < req->topic_data_count; t++)
            total += req->topic_data[t].partition_data_count;
        op = calloc(1, sizeof *op);
        if (op)
            op->waits = calloc((size_t)(total > 0 ? total : 1), sizeof *op->waits);
        if (!op || !op->waits) {
            free(op);
            return HANDLER_CLOSE;
        }
        op->cap = total;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img) {
        if (op)
            produce_op_free(&op->op);
        return HANDLER_CLOSE;
    }
    HANDLER_NEW_ARRAY(ctx, resp->responses, req->topic_data_count, produce_response_topic_produce_response_init);
    if (!resp->responses) {
        metadata_image_release(img);
        if (op)
            produce_op_free(&op->op);
        return HANDLER_CLOSE;
    }
    resp->responses_count = req->topic_data_count;
    int32_t k = 0; /* the partition's index in the whole request */
    for (int32_t t = 0; t < req->topic_data_count; t++) {
        struct produce_request_topic_produce_data *tin = &req->topic_data[t];
        struct produce_response_topic_produce_response *tout = &resp->responses[t];
        tout->name = tin->name;
        HANDLER_NEW_ARRAY(ctx, tout->partition_responses, tin->partition_data_count,
                          produce_response_partition_produce_response_init);
        if (!tout->partition_responses) {
            metadata_image_release(img);
            if (op)
                produce_op_free(&op->op);
            return HANDLER_CLOSE;
        }
        tout->partition_responses_count = tin->partition_data_count;
        const struct metadata_topic *topic = tin->name.len > 0 ? metadata_image_topic_by_name(img, tin->name.data,
                                                                                              (size_t)tin->name.len)
                                                               : NULL;
        bool allowed = txn_allowed &&
                       handler_authorize_name(ctx, CAIRN_OP_WRITE, CAIRN_RESOURCE_TOPIC, tin->name, true);
        for (int32_t i = 0; i < tin->partition_data_count; i++, k++) {
            struct produce_response_partition_produce_response *pout = &tout->partition_responses[i];
            if (!valid_acks || !allowed) {
                pout->index = tin->partition_data[i].index;
                pout->error_code = !txn_allowed ? KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                                   : allowed    ? KAFKA_ERR_INVALID_REQUIRED_ACKS
                                                : KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
                pout->base_offset = -1;
                continue;
            }
            produce_partition(ctx, topic, req->acks, &tin->partition_data[i], pout, op, verdicts ? &verdicts[k] : NULL);
        }
    }
    metadata_image_release(img);
    if (op)
        return park(ctx, op, req->timeout_ms);
    return req->acks == 0 ? HANDLER_NO_RESPONSE : HANDLER_RESPOND;
}

enum handler_result handle_produce(struct request_context *ctx, void *request, void *response)
{
    (void)response;
    struct produce_request *req = request;
    bool txn_allowed = txn_write_allowed(ctx, req);
    struct produce_verdict *verdicts = NULL;
    if (txn_allowed && (req->acks == 0 || req->acks == 1 || req->acks == -1)) {
        enum handler_result r = produce_verify(ctx, req, &verdicts, produce_append);
        if (r != HANDLER_RESPOND)
            return r;
    }
    return produce_append(ctx, verdicts);
}
