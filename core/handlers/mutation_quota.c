/* KIP-599's controller mutation quota for CreateTopics, CreatePartitions
 * and DeleteTopics: the quota plugins are asked, per topic and before the
 * controller acts, about the partitions it would create or delete. */
#include "handlers/handler_util.h"
#include "util/clock.h"

int16_t handler_mutation_quota(struct request_context *ctx, int32_t partitions, int16_t strict_from,
                               struct kafka_str *message)
{
    if (!ctx->env->plugins || ctx->env->plugins->quota_count == 0 || partitions <= 0)
        return KAFKA_ERR_NONE;
    int32_t throttle = plugin_host_quota_record(ctx->env->plugins, handler_request_info(ctx),
                                                CAIRN_QUOTA_CONTROLLER_MUTATION, (double)partitions, clock_wall_ms());
    if (throttle <= 0)
        return KAFKA_ERR_NONE;
    if (throttle > ctx->mutation_throttle_ms)
        ctx->mutation_throttle_ms = throttle;
    /* Before the version with the error Kafka only throttles (permissive). */
    if (ctx->api_version < strict_from)
        return KAFKA_ERR_NONE;
    *message = kafka_str_from_cstr("The throttling quota has been exceeded.");
    return KAFKA_ERR_THROTTLING_QUOTA_EXCEEDED;
}
