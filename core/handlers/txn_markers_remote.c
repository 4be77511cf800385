/* Transaction markers for partitions led by other brokers: one
 * WriteTxnMarkers request per leader over the broker's outbound client,
 * answered per partition (Kafka's TransactionMarkerChannelManager). Runs on
 * the transaction coordinator's thread, which blocks until every leader has
 * answered or its request timed out; a partition that failed keeps its
 * error, and the coordinator tries the transaction's markers again later. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/txn_markers_local.h"
#include "metadata/metadata_image.h"
#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

#define WRITE_TXN_MARKERS_KEY 27

/* What the waiting thread and the client's callbacks share. Lives on the
 * waiter's stack: the waiter returns only after every callback ran (the
 * client calls done exactly once, at the latest at the request timeout). */
struct remote_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending;
};

/* One request to one leader; owned by the waiter, read by the callback. */
struct remote_request {
    struct remote_wait *wait;
    int32_t leader;
    struct txn_marker_partition *parts;
    size_t *index; /* index[k]: the part the k-th topic entry carries */
    size_t n;
    struct write_txn_markers_request body;
    struct write_txn_markers_request_writable_txn_marker marker;
    struct write_txn_markers_request_writable_txn_marker_topic *topics;
};

/* The endpoint other brokers reach leader on: the inter-broker listener's. */
static const struct metadata_endpoint *broker_endpoint(const struct txn_markers_local *local,
                                                       const struct metadata_broker *b)
{
    return metadata_broker_link_endpoint(b, local->listener, local->link_is_tls);
}

static void set_errors(struct remote_request *r, int16_t code)
{
    for (size_t k = 0; k < r->n; k++)
        r->parts[r->index[k]].error_code = code;
}

static void remote_done(struct net_client_result *result, void *ctx)
{
    struct remote_request *r = ctx;
    const struct write_txn_markers_response *resp = result->response;
    pthread_mutex_lock(&r->wait->mu);
    if (result->status != NET_CLIENT_OK || !resp) {
        logger_warn("txn", "WriteTxnMarkers to broker %" PRId32 " failed: %s %s", r->leader,
                    net_client_status_name(result->status), result->error);
        set_errors(r, result->status == NET_CLIENT_OK ? KAFKA_ERR_UNKNOWN_SERVER_ERROR
                                                      : net_client_status_kafka_error(result->status));
    } else {
        /* Until an answer names a partition, it is not written. */
        set_errors(r, KAFKA_ERR_UNKNOWN_SERVER_ERROR);
        for (int32_t m = 0; m < resp->markers_count; m++) {
            const struct write_txn_markers_response_writable_txn_marker_result *mr = &resp->markers[m];
            if (mr->producer_id != r->marker.producer_id)
                continue;
            /* The answer keeps the request's order: topic entry k is part index[k]. */
            for (int32_t t = 0; t < mr->topics_count && (size_t)t < r->n; t++) {
                struct txn_marker_partition *part = &r->parts[r->index[t]];
                const struct kafka_str *name = &mr->topics[t].name;
                if (mr->topics[t].partitions_count != 1 || name->len != (int32_t)strlen(part->topic) ||
                    memcmp(name->data, part->topic, (size_t)name->len) != 0 ||
                    mr->topics[t].partitions[0].partition_index != part->partition)
                    continue;
                part->error_code = mr->topics[t].partitions[0].error_code;
            }
        }
    }
    r->wait->pending--;
    pthread_cond_signal(&r->wait->cv);
    pthread_mutex_unlock(&r->wait->mu);
}

/* Builds the request for the parts in index[0..n), one topic entry each. */
static int build_request(struct remote_request *r, int64_t producer_id, int16_t producer_epoch,
                         int32_t coordinator_epoch, bool commit)
{
    r->topics = calloc(r->n, sizeof *r->topics);
    if (!r->topics)
        return -1;
    for (size_t k = 0; k < r->n; k++) {
        struct txn_marker_partition *part = &r->parts[r->index[k]];
        write_txn_markers_request_writable_txn_marker_topic_init(&r->topics[k]);
        r->topics[k].name = kafka_str_from_cstr(part->topic);
        r->topics[k].partition_indexes = &part->partition;
        r->topics[k].partition_indexes_count = 1;
    }
    write_txn_markers_request_writable_txn_marker_init(&r->marker);
    r->marker.producer_id = producer_id;
    r->marker.producer_epoch = producer_epoch;
    r->marker.transaction_result = commit;
    r->marker.coordinator_epoch = coordinator_epoch;
    r->marker.topics = r->topics;
    r->marker.topics_count = (int32_t)r->n;
    write_txn_markers_request_init(&r->body);
    r->body.markers = &r->marker;
    r->body.markers_count = 1;
    return 0;
}

void txn_markers_write_remote(const struct txn_markers_local *local, const struct metadata_image *img,
                              const int32_t *leaders, int64_t producer_id, int16_t producer_epoch,
                              int32_t coordinator_epoch, bool commit, struct txn_marker_partition *parts, size_t count)
{
    struct remote_request *reqs = calloc(count + 1, sizeof *reqs);
    size_t *index = calloc(count + 1, sizeof *index);
    bool *taken = calloc(count + 1, sizeof *taken);
    struct remote_wait wait = {.pending = 0};
    pthread_mutex_init(&wait.mu, NULL);
    pthread_cond_init(&wait.cv, NULL);
    size_t nreq = 0, used = 0;
    for (size_t i = 0; reqs && index && taken && i < count; i++) {
        if (taken[i] || leaders[i] < 0)
            continue;
        /* Every partition of this leader goes into one request. */
        struct remote_request *r = &reqs[nreq++];
        r->wait = &wait;
        r->leader = leaders[i];
        r->parts = parts;
        r->index = &index[used];
        for (size_t j = i; j < count; j++) {
            if (!taken[j] && leaders[j] == leaders[i]) {
                taken[j] = true;
                r->index[r->n++] = j;
            }
        }
        used += r->n;
        const struct metadata_broker *b = metadata_image_broker(img, r->leader);
        const struct metadata_endpoint *ep = b && !b->fenced ? broker_endpoint(local, b) : NULL;
        if (!ep || net_client_add_node(local->client, r->leader, ep->host, ep->port) != 0) {
            set_errors(r, KAFKA_ERR_BROKER_NOT_AVAILABLE);
            continue;
        }
        if (build_request(r, producer_id, producer_epoch, coordinator_epoch, commit) != 0) {
            set_errors(r, KAFKA_ERR_UNKNOWN_SERVER_ERROR);
            continue;
        }
        struct net_client_request req = {
            .node_id = r->leader,
            .api_key = WRITE_TXN_MARKERS_KEY,
            .pinned_version = -1,
            .body = &r->body,
            .timeout_ms = local->request_timeout_ms > 0 ? local->request_timeout_ms : 5000,
            .done = remote_done,
            .ctx = r,
        };
        char err[160];
        pthread_mutex_lock(&wait.mu);
        wait.pending++;
        pthread_mutex_unlock(&wait.mu);
        if (net_client_send(local->client, &req, err, sizeof err) != 0) {
            logger_warn("txn", "cannot send WriteTxnMarkers to broker %" PRId32 ": %s", r->leader, err);
            pthread_mutex_lock(&wait.mu);
            wait.pending--;
            set_errors(r, KAFKA_ERR_NETWORK_EXCEPTION);
            pthread_mutex_unlock(&wait.mu);
        }
    }
    if (!reqs || !index || !taken) {
        for (size_t i = 0; i < count; i++)
            if (leaders[i] >= 0)
                parts[i].error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    pthread_mutex_lock(&wait.mu);
    while (wait.pending > 0)
        pthread_cond_wait(&wait.cv, &wait.mu);
    pthread_mutex_unlock(&wait.mu);
    for (size_t k = 0; reqs && k < nreq; k++)
        free(reqs[k].topics);
    free(reqs);
    free(index);
    free(taken);
    pthread_cond_destroy(&wait.cv);
    pthread_mutex_destroy(&wait.mu);
}
