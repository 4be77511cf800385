/* ElectLeaders (API 43): a controller operation like CreateTopics, served
 * by whichever broker receives it; a node that is not the active
 * controller answers NOT_CONTROLLER (Metadata names the controller). */
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_elect_leaders.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

typedef struct elect_leaders_response_replica_election_result topic_result;
typedef struct elect_leaders_response_partition_result partition_result;

static struct kafka_str message(struct request_context *ctx, int16_t code)
{
    if (code == KAFKA_ERR_NONE)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, kafka_error_name(code));
}

/* The results of an election over every partition, in report order. */
struct reported {
    struct request_context *ctx;
    struct reported_one {
        struct kafka_str topic;
        int32_t partition;
        int16_t error_code;
    } * all;
    int32_t count, cap;
    bool failed;
};

static void report(void *arg, const char *topic, int32_t partition, int16_t error_code)
{
    struct reported *r = arg;
    if (r->failed)
        return;
    if (r->count == r->cap) {
        int32_t cap = r->cap ? r->cap * 2 : 64;
        struct reported_one *grown = realloc(r->all, (size_t)cap * sizeof(*grown));
        if (!grown) {
            r->failed = true;
            return;
        }
        r->all = grown;
        r->cap = cap;
    }
    struct kafka_str name = r->count > 0 && r->all[r->count - 1].topic.len == (int32_t)strlen(topic) &&
                                    memcmp(r->all[r->count - 1].topic.data, topic, strlen(topic)) == 0
                                ? r->all[r->count - 1].topic
                                : kafka_arena_strdup(&r->ctx->arena, topic);
    if (!name.data) {
        r->failed = true;
        return;
    }
    r->all[r->count++] = (struct reported_one){name, partition, error_code};
}

/* Groups the reported partitions by topic (reported topic by topic). */
static bool answer_reported(struct request_context *ctx, const struct reported *r, struct elect_leaders_response *resp)
{
    int32_t topics = 0;
    for (int32_t i = 0; i < r->count; i++)
        topics += i == 0 || r->all[i].topic.data != r->all[i - 1].topic.data;
    HANDLER_NEW_ARRAY(ctx, resp->replica_election_results, topics, elect_leaders_response_replica_election_result_init);
    if (!resp->replica_election_results)
        return false;
    resp->replica_election_results_count = topics;
    int32_t t = -1;
    for (int32_t i = 0; i < r->count; i++) {
        if (i == 0 || r->all[i].topic.data != r->all[i - 1].topic.data) {
            int32_t n = 1;
            while (i + n < r->count && r->all[i + n].topic.data == r->all[i].topic.data)
                n++;
            topic_result *tr = &resp->replica_election_results[++t];
            tr->topic = r->all[i].topic;
            HANDLER_NEW_ARRAY(ctx, tr->partition_result, n, elect_leaders_response_partition_result_init);
            if (!tr->partition_result)
                return false;
        }
        topic_result *tr = &resp->replica_election_results[t];
        partition_result *pr = &tr->partition_result[tr->partition_result_count++];
        pr->partition_id = r->all[i].partition;
        pr->error_code = r->all[i].error_code;
        pr->error_message = message(ctx, pr->error_code);
    }
    return true;
}

/* Every partition named by the request answers one error (authorization,
 * or a request-level error at version 0, which has no top-level code). */
static bool answer_all(struct request_context *ctx, const struct elect_leaders_request *req,
                       struct elect_leaders_response *resp, int16_t code)
{
    int32_t n = req->topic_partitions_count > 0 ? req->topic_partitions_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->replica_election_results, n, elect_leaders_response_replica_election_result_init);
    if (!resp->replica_election_results)
        return false;
    resp->replica_election_results_count = n;
    for (int32_t i = 0; i < n; i++) {
        const struct elect_leaders_request_topic_partitions *in = &req->topic_partitions[i];
        topic_result *tr = &resp->replica_election_results[i];
        int32_t pn = in->partitions_count > 0 ? in->partitions_count : 0;
        tr->topic = in->topic;
        HANDLER_NEW_ARRAY(ctx, tr->partition_result, pn, elect_leaders_response_partition_result_init);
        if (!tr->partition_result)
            return false;
        tr->partition_result_count = pn;
        for (int32_t j = 0; j < pn; j++) {
            tr->partition_result[j].partition_id = in->partitions[j];
            tr->partition_result[j].error_code = code;
            tr->partition_result[j].error_message = message(ctx, code);
        }
    }
    return true;
}

enum handler_result handle_elect_leaders(struct request_context *ctx, void *request, void *response)
{
    struct elect_leaders_request *req = request;
    struct elect_leaders_response *resp = response;
    /* Version 0 has no election type: always PREFERRED. */
    int8_t type = ctx->api_version >= 1 ? req->election_type : METADATA_ELECTION_PREFERRED;
    if (!handler_authorize_one(ctx, CAIRN_OP_ALTER, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        if (ctx->api_version >= 1)
            resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return answer_all(ctx, req, resp, KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED) ? HANDLER_RESPOND : HANDLER_CLOSE;
    }
    char err[256] = "";
    int16_t rc;
    if (req->topic_partitions_count < 0) { /* null: every partition */
        struct reported r = {.ctx = ctx};
        rc = metadata_elect_leaders(ctx->env->metadata, type, NULL, 0, report, &r, err, sizeof err);
        bool ok = r.failed || rc != KAFKA_ERR_NONE || answer_reported(ctx, &r, resp);
        free(r.all);
        if (!ok)
            return HANDLER_CLOSE;
        if (r.failed && rc == KAFKA_ERR_NONE)
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    } else {
        int32_t n = 0;
        for (int32_t i = 0; i < req->topic_partitions_count; i++)
            n += req->topic_partitions[i].partitions_count > 0 ? req->topic_partitions[i].partitions_count : 0;
        struct metadata_election_target *targets = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*targets));
        if (!targets)
            return HANDLER_CLOSE;
        int32_t k = 0;
        for (int32_t i = 0; i < req->topic_partitions_count; i++) {
            const struct elect_leaders_request_topic_partitions *in = &req->topic_partitions[i];
            for (int32_t j = 0; j < in->partitions_count; j++)
                targets[k++] = (struct metadata_election_target){
                    .topic = in->topic.data,
                    .topic_len = in->topic.len > 0 ? (size_t)in->topic.len : 0,
                    .partition_index = in->partitions[j],
                };
        }
        rc = metadata_elect_leaders(ctx->env->metadata, type, targets, n, NULL, NULL, err, sizeof err);
        if (rc == KAFKA_ERR_NONE) {
            if (!answer_all(ctx, req, resp, KAFKA_ERR_NONE))
                return HANDLER_CLOSE;
            k = 0;
            for (int32_t i = 0; i < resp->replica_election_results_count; i++) {
                topic_result *tr = &resp->replica_election_results[i];
                for (int32_t j = 0; j < tr->partition_result_count; j++) {
                    tr->partition_result[j].error_code = targets[k++].error_code;
                    tr->partition_result[j].error_message = message(ctx, tr->partition_result[j].error_code);
                }
            }
        }
    }
    if (rc != KAFKA_ERR_NONE) {
        if (rc != KAFKA_ERR_NOT_CONTROLLER)
            logger_info("admin", "ElectLeaders for %s: %s (error %d)", ctx->net->peer, err, (int)rc);
        /* Version 0 carries the request's error on each partition only
         * (its encoder refuses a top-level code it cannot carry). */
        if (ctx->api_version >= 1)
            resp->error_code = rc;
        if (!answer_all(ctx, req, resp, rc))
            return HANDLER_CLOSE;
    }
    return HANDLER_RESPOND;
}
