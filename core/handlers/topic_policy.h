/* The topic policy plugins (ABI 1.3) on the admin request path. */
#ifndef CAIRN_HANDLERS_TOPIC_POLICY_H
#define CAIRN_HANDLERS_TOPIC_POLICY_H

#include "handlers/handlers.h"
#include "metadata/metadata_store.h"

/* One topic change as the handlers know it; strings borrowed. */
struct topic_policy_change {
    int32_t kind; /* enum cairn_policy_kind */
    const char *topic;
    bool validate_only;
    int32_t partitions;
    int32_t current_partitions;
    int16_t replication_factor;
    const struct metadata_replica_assignment *assignments;
    int32_t assignment_count;
    const struct metadata_config_kv *configs;
    int32_t config_count;
};

/* KAFKA_ERR_NONE when every policy plugin allows the change (or none is
 * loaded); POLICY_VIOLATION with the plugin's message in message otherwise,
 * UNKNOWN_SERVER_ERROR when out of memory. */
int16_t topic_policy_check(struct request_context *ctx, const struct topic_policy_change *change, char *message,
                           size_t message_len);

#endif
