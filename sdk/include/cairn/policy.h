/* Cairn plugin ABI 1.3: topic policies. A step beyond Kafka's
 * create.topic.policy.class.name and alter.config.policy.class.name: one
 * table sees topic creations, partition additions and topic config changes
 * together with the principal asking, and may refuse each one. A refusal
 * reaches the client as POLICY_VIOLATION (error code 44) with the plugin's
 * message as the error message.
 *
 * Where it runs: at the controller, in the request handler that applies
 * the change, after authorization and before the metadata is written. A
 * request a broker forwards (Envelope) is checked there with the original
 * principal, so list the plugin on every node that can be the active
 * controller. validate_only requests are checked like the others
 * (validate_only is set). */
#ifndef CAIRN_POLICY_H
#define CAIRN_POLICY_H

#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_policy_kind {
    CAIRN_POLICY_CREATE_TOPIC = 1,      /* CreateTopics, once per topic */
    CAIRN_POLICY_CREATE_PARTITIONS = 2, /* CreatePartitions, once per topic */
    CAIRN_POLICY_ALTER_CONFIGS = 3,     /* AlterConfigs / IncrementalAlterConfigs on a topic */
};

/* One topic config entry. value NULL: the key is removed (back to its default). */
struct cairn_policy_config {
    uint32_t struct_size;
    const char *name;
    const char *value;
};

/* The replicas of one partition, as a request assigns them. */
struct cairn_policy_assignment {
    uint32_t struct_size;
    int32_t partition_index;
    const int32_t *broker_ids;
    int32_t broker_count;
};

/* One change to judge. Pointers are valid during the call only. */
struct cairn_policy_request {
    uint32_t struct_size;
    int32_t kind; /* enum cairn_policy_kind */
    const char *topic;
    bool validate_only;
    /* CREATE_TOPIC: partitions the topic is created with (the broker's
     * num.partitions filled in for -1, the assignment count when assigned);
     * CREATE_PARTITIONS: the new total; ALTER_CONFIGS: the current count. */
    int32_t partitions;
    /* The topic's partitions today; 0 for CREATE_TOPIC. */
    int32_t current_partitions;
    /* CREATE_TOPIC: the replication factor asked for (the broker default
     * filled in for -1, else the first assignment's replica count); other
     * kinds: the topic's current one. */
    int16_t replication_factor;
    /* Explicit replica assignments of the request (CREATE_TOPIC: every
     * partition; CREATE_PARTITIONS: the new ones); count 0 when none. */
    const struct cairn_policy_assignment *const *assignments;
    size_t assignment_count;
    /* CREATE_TOPIC: the configs given in the request; ALTER_CONFIGS: each
     * key the request changes with its resulting value; none otherwise. */
    const struct cairn_policy_config *const *configs;
    size_t config_count;
    /* Counts the existing topics whose names start with prefix ("" for
     * all) and their partitions, in the deciding node's current metadata.
     * Callable during check only. Returns CAIRN_OK. */
    int (*count_topics)(const struct cairn_policy_request *self, const char *prefix, int64_t *topics,
                        int64_t *partitions);
    void *host_private; /* for count_topics; do not touch */
};

/* Thread-safety: check is called concurrently from request threads and may
 * block only briefly (it holds up the admin request, never the data path). */
struct cairn_policy_vtable {
    uint32_t struct_size;
    /* CAIRN_OK allows the change. Any other status refuses it: write one
     * line into message (sent to the client as the error message). Every
     * loaded policy must allow a change; the first refusal wins. */
    int (*check)(void *instance, const struct cairn_request_info *request, const struct cairn_policy_request *change,
                 char *message, size_t message_len);
};

#ifdef __cplusplus
}
#endif

#endif
