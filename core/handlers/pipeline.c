/* Request metrics, quotas and throttling around every handler. */
#include "handlers/pipeline.h"
#include "handlers/handler_util.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "cairn/quota.h"
#include "metrics/metrics.h"
#include "net/server.h"
#include "plugin/plugin_host.h"
#include "util/clock.h"

#define PIPELINE_MAX_API_KEY 128

/* Registered once; read-only afterwards, values are atomics. */
static struct metrics_metric *requests_by_api[PIPELINE_MAX_API_KEY];
static struct metrics_metric *requests_other;
static struct metrics_metric *bytes_in;
static struct metrics_metric *bytes_out;
static struct metrics_metric *throttled;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void register_metrics(void)
{
    int n;
    const struct api_handler_entry *t = handlers_table(&n);
    for (int i = 0; i < n; i++) {
        const struct kafka_api_desc *d = kafka_api_lookup(t[i].api_key);
        if (!d || t[i].api_key < 0 || t[i].api_key >= PIPELINE_MAX_API_KEY)
            continue;
        char labels[96];
        snprintf(labels, sizeof labels, "api=\"%s\"", d->name);
        requests_by_api[t[i].api_key] = metrics_register(METRICS_COUNTER, "cairn_requests_total", labels,
                                                         "Requests received, by API.");
    }
    requests_other = metrics_register(METRICS_COUNTER, "cairn_requests_total", "api=\"other\"",
                                      "Requests received, by API.");
    bytes_in = metrics_register(METRICS_COUNTER, "cairn_network_bytes_in_total", NULL, "Request bytes received.");
    bytes_out = metrics_register(METRICS_COUNTER, "cairn_network_bytes_out_total", NULL, "Response bytes sent.");
    throttled = metrics_register(METRICS_COUNTER, "cairn_quota_throttled_requests_total", NULL,
                                 "Responses delayed by a quota plugin.");
}

void pipeline_count_request(struct request_context *ctx)
{
    pthread_once(&metrics_once, register_metrics);
    struct metrics_metric *m = ctx->api_key >= 0 && ctx->api_key < PIPELINE_MAX_API_KEY ? requests_by_api[ctx->api_key]
                                                                                        : NULL;
    metrics_add(m ? m : requests_other, 1);
    metrics_add(bytes_in, (int64_t)ctx->net->frame_len + 4);
}

void pipeline_count_response(size_t bytes)
{
    metrics_add(bytes_out, (int64_t)bytes);
}

bool pipeline_quota_active(const struct request_context *ctx)
{
    return ctx->env->plugins && ctx->env->plugins->quota_count > 0;
}

int32_t pipeline_quota_record(struct request_context *ctx, size_t response_bytes)
{
    struct plugin_host *host = ctx->env->plugins;
    const struct cairn_request_info *info = handler_request_info(ctx);
    int64_t now = clock_wall_ms();
    int32_t throttle = 0, t;
    if (ctx->api_key == 0) {
        t = plugin_host_quota_record(host, info, CAIRN_QUOTA_PRODUCE, (double)ctx->net->frame_len + 4, now);
        if (t > throttle)
            throttle = t;
    } else if (ctx->api_key == 1) {
        t = plugin_host_quota_record(host, info, CAIRN_QUOTA_FETCH, (double)response_bytes, now);
        if (t > throttle)
            throttle = t;
    }
    t = plugin_host_quota_record(host, info, CAIRN_QUOTA_REQUEST, (double)ctx->io_ns, now);
    if (t > throttle)
        throttle = t;
    if (ctx->mutation_throttle_ms > throttle)
        throttle = ctx->mutation_throttle_ms;
    if (throttle > 0)
        metrics_add(throttled, 1);
    return throttle;
}

/* Where each served API's response carries throttle_time_ms, and from
 * which version. APIs added later append a row. */
struct throttle_field {
    int16_t api_key;
    int16_t min_version;
    size_t offset;
};

static const struct throttle_field throttle_fields[] = {
    {0, 1, offsetof(struct produce_response, throttle_time_ms)},
    {1, 1, offsetof(struct fetch_response, throttle_time_ms)},
    {2, 2, offsetof(struct list_offsets_response, throttle_time_ms)},
    {3, 3, offsetof(struct metadata_response, throttle_time_ms)},
    {10, 1, offsetof(struct find_coordinator_response, throttle_time_ms)},
    {18, 1, offsetof(struct api_versions_response, throttle_time_ms)},
    {19, 2, offsetof(struct create_topics_response, throttle_time_ms)},
    {20, 1, offsetof(struct delete_topics_response, throttle_time_ms)},
    {23, 2, offsetof(struct offset_for_leader_epoch_response, throttle_time_ms)},
    {32, 0, offsetof(struct describe_configs_response, throttle_time_ms)},
    {37, 0, offsetof(struct create_partitions_response, throttle_time_ms)},
    {43, 0, offsetof(struct elect_leaders_response, throttle_time_ms)},
    {45, 0, offsetof(struct alter_partition_reassignments_response, throttle_time_ms)},
    {46, 0, offsetof(struct list_partition_reassignments_response, throttle_time_ms)},
    {48, 0, offsetof(struct describe_client_quotas_response, throttle_time_ms)},
    {49, 0, offsetof(struct alter_client_quotas_response, throttle_time_ms)},
    {60, 0, offsetof(struct describe_cluster_response, throttle_time_ms)},
};

bool pipeline_set_throttle(struct request_context *ctx, int32_t throttle_ms)
{
    if (!ctx->response)
        return false;
    for (size_t i = 0; i < sizeof throttle_fields / sizeof throttle_fields[0]; i++) {
        const struct throttle_field *f = &throttle_fields[i];
        if (f->api_key != ctx->api_key)
            continue;
        if (ctx->api_version < f->min_version)
            return false;
        int32_t *field = (int32_t *)((char *)ctx->response + f->offset);
        if (*field < throttle_ms)
            *field = throttle_ms;
        return true;
    }
    return false;
}
