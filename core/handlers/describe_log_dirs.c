/* DescribeLogDirs: what each log dir (log.dirs) of this broker holds and,
 * from v4, the size and free space of its file system. Partitions are
 * listed in (topic, partition) order; a topic without a requested
 * partition in a dir is left out, as Kafka does. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "handlers/handler_util.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "util/logger.h"

typedef struct describe_log_dirs_response_describe_log_dirs_result log_dir_result;
typedef struct describe_log_dirs_response_describe_log_dirs_topic log_dir_topic;
typedef struct describe_log_dirs_response_describe_log_dirs_partition log_dir_partition;

/* One requested (topic, partition); names point into the request. Lives in
 * the request arena, used by the handler's thread only. */
struct wanted_partition {
    struct kafka_str topic;
    int32_t partition;
};

static int compare_names(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int wanted_compare(const void *x, const void *y)
{
    const struct wanted_partition *a = x, *b = y;
    int c = compare_names(a->topic.data, (size_t)a->topic.len, b->topic.data, (size_t)b->topic.len);
    return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

static int part_compare(const void *x, const void *y)
{
    const struct log_manager_partition *a = x, *b = y;
    if (a->dir_index != b->dir_index)
        return a->dir_index < b->dir_index ? -1 : 1;
    int c = strcmp(a->topic, b->topic);
    return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

/* The requested partitions, sorted for lookups; *count -1 means all
 * (a null topics array). Returns false when out of memory. */
static bool wanted_partitions(struct request_context *ctx, const struct describe_log_dirs_request *req,
                              struct wanted_partition **out, int64_t *count)
{
    *out = NULL;
    *count = -1;
    if (req->topics_count < 0)
        return true;
    int64_t total = 0;
    for (int32_t t = 0; t < req->topics_count; t++)
        total += req->topics[t].partitions_count > 0 ? req->topics[t].partitions_count : 0;
    *count = 0;
    if (total == 0)
        return true;
    /* Each entry stands for an int32 the decoder already holds: bounded by the request size. */
    struct wanted_partition *w = kafka_arena_alloc(&ctx->arena, (size_t)total * sizeof *w);
    if (!w)
        return false;
    int64_t n = 0;
    for (int32_t t = 0; t < req->topics_count; t++)
        for (int32_t i = 0; i < req->topics[t].partitions_count; i++)
            if (req->topics[t].topic.len >= 0)
                w[n++] = (struct wanted_partition){req->topics[t].topic, req->topics[t].partitions[i]};
    qsort(w, (size_t)n, sizeof *w, wanted_compare);
    *out = w;
    *count = n;
    return true;
}

static bool is_wanted(const struct log_manager_partition *part, const struct wanted_partition *wanted, int64_t count)
{
    if (count < 0)
        return true;
    struct wanted_partition key = {kafka_str_from_cstr(part->topic), part->partition};
    return count > 0 && bsearch(&key, wanted, (size_t)count, sizeof *wanted, wanted_compare) != NULL;
}

/* Fills one dir's topics from parts[0..n) (this dir's, sorted). Returns
 * false when out of memory. */
static bool describe_dir_topics(struct request_context *ctx, const struct log_manager_partition *parts, size_t n,
                                const struct wanted_partition *wanted, int64_t wanted_count, log_dir_result *out)
{
    size_t matching = 0;
    for (size_t i = 0; i < n; i++)
        if (!partition_log_is_offline(parts[i].log) && is_wanted(&parts[i], wanted, wanted_count))
            matching++;
    if (matching > INT32_MAX)
        matching = INT32_MAX;
    log_dir_topic *topics;
    log_dir_partition *partitions;
    HANDLER_NEW_ARRAY(ctx, topics, (int32_t)matching, describe_log_dirs_response_describe_log_dirs_topic_init);
    HANDLER_NEW_ARRAY(ctx, partitions, (int32_t)matching, describe_log_dirs_response_describe_log_dirs_partition_init);
    if (!topics || !partitions)
        return false;
    int32_t topic_count = 0;
    size_t used = 0;
    const char *current = NULL;
    for (size_t i = 0; i < n && used < matching; i++) {
        const struct log_manager_partition *part = &parts[i];
        if (partition_log_is_offline(part->log) || !is_wanted(part, wanted, wanted_count))
            continue;
        if (!current || strcmp(current, part->topic) != 0) {
            log_dir_topic *t = &topics[topic_count++];
            t->name = kafka_arena_strdup(&ctx->arena, part->topic);
            if (!t->name.data)
                return false;
            t->partitions = &partitions[used];
            current = part->topic;
        }
        log_dir_partition *p = &partitions[used++];
        p->partition_index = part->partition;
        p->partition_size = partition_log_size_bytes(part->log);
        p->offset_lag = 0; /* the leader's own log */
        p->is_future_key = false;
        topics[topic_count - 1].partitions_count++;
    }
    out->topics = topics;
    out->topics_count = topic_count;
    return true;
}

/* The dir as Kafka names it: its absolute path. */
static struct kafka_str dir_name(struct request_context *ctx, const char *dir)
{
    char *resolved = realpath(dir, NULL);
    struct kafka_str name = kafka_arena_strdup(&ctx->arena, resolved ? resolved : dir);
    free(resolved);
    return name;
}

enum handler_result handle_describe_log_dirs(struct request_context *ctx, void *request, void *response)
{
    struct describe_log_dirs_request *req = request;
    struct describe_log_dirs_response *resp = response;
    if (!handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE, true)) {
        /* Before v3 the response has no error field: Kafka answers no dirs. */
        if (ctx->api_version >= 3)
            resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    struct wanted_partition *wanted;
    int64_t wanted_count;
    if (!wanted_partitions(ctx, req, &wanted, &wanted_count))
        return HANDLER_CLOSE;
    struct log_manager *logs = ctx->env->logs;
    struct log_manager_partition *parts = NULL;
    size_t part_count = 0;
    if (log_manager_list(logs, &parts, &part_count) != 0)
        return HANDLER_CLOSE;
    qsort(parts, part_count, sizeof *parts, part_compare);

    size_t dir_count = log_manager_dir_count(logs);
    if (dir_count > INT32_MAX)
        dir_count = INT32_MAX;
    enum handler_result result = HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->results, (int32_t)dir_count, describe_log_dirs_response_describe_log_dirs_result_init);
    if (!resp->results) {
        result = HANDLER_CLOSE;
        goto out;
    }
    size_t first = 0;
    for (size_t d = 0; d < dir_count; d++) {
        log_dir_result *out = &resp->results[resp->results_count++];
        const char *dir = log_manager_dir_path(logs, d);
        out->log_dir = dir_name(ctx, dir);
        size_t end = first;
        while (end < part_count && parts[end].dir_index == d)
            end++;
        struct statvfs fs;
        if (!out->log_dir.data) {
            result = HANDLER_CLOSE;
            goto out;
        }
        if (statvfs(dir, &fs) != 0) {
            /* An unreadable dir is offline as far as clients can tell. */
            logger_warn("admin", "DescribeLogDirs: cannot stat %s: %s", dir, strerror(errno));
            out->error_code = KAFKA_ERR_KAFKA_STORAGE_ERROR;
        } else {
            if (ctx->api_version >= 4) {
                out->total_bytes = (int64_t)fs.f_blocks * (int64_t)fs.f_frsize;
                out->usable_bytes = (int64_t)fs.f_bavail * (int64_t)fs.f_frsize;
            }
            if (!describe_dir_topics(ctx, parts + first, end - first, wanted, wanted_count, out)) {
                result = HANDLER_CLOSE;
                goto out;
            }
        }
        first = end;
    }
out:
    log_manager_list_free(parts, part_count);
    return result;
}
