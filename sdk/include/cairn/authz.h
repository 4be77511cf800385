/* Cairn plugin ABI: authorization, Kafka's Authorizer model. Operation,
 * resource and pattern values are Kafka's wire values (the ones CreateAcls
 * and DescribeAcls carry). */
#ifndef CAIRN_AUTHZ_H
#define CAIRN_AUTHZ_H

#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_acl_operation {
    CAIRN_OP_UNKNOWN = 0,
    CAIRN_OP_ANY = 1,
    CAIRN_OP_ALL = 2,
    CAIRN_OP_READ = 3,
    CAIRN_OP_WRITE = 4,
    CAIRN_OP_CREATE = 5,
    CAIRN_OP_DELETE = 6,
    CAIRN_OP_ALTER = 7,
    CAIRN_OP_DESCRIBE = 8,
    CAIRN_OP_CLUSTER_ACTION = 9,
    CAIRN_OP_DESCRIBE_CONFIGS = 10,
    CAIRN_OP_ALTER_CONFIGS = 11,
    CAIRN_OP_IDEMPOTENT_WRITE = 12,
    CAIRN_OP_CREATE_TOKENS = 13,
    CAIRN_OP_DESCRIBE_TOKENS = 14,
};

enum cairn_resource_type {
    CAIRN_RESOURCE_UNKNOWN = 0,
    CAIRN_RESOURCE_ANY = 1,
    CAIRN_RESOURCE_TOPIC = 2,
    CAIRN_RESOURCE_GROUP = 3,
    CAIRN_RESOURCE_CLUSTER = 4,
    CAIRN_RESOURCE_TRANSACTIONAL_ID = 5,
    CAIRN_RESOURCE_DELEGATION_TOKEN = 6,
    CAIRN_RESOURCE_USER = 7,
};

enum cairn_pattern_type {
    CAIRN_PATTERN_UNKNOWN = 0,
    CAIRN_PATTERN_ANY = 1,
    CAIRN_PATTERN_MATCH = 2,
    CAIRN_PATTERN_LITERAL = 3,
    CAIRN_PATTERN_PREFIXED = 4,
};

enum cairn_authz_result {
    CAIRN_AUTHZ_DENIED = 0,
    CAIRN_AUTHZ_ALLOWED = 1,
};

/* One thing a request wants to do. The cluster resource is named
 * "kafka-cluster". */
struct cairn_authz_action {
    uint32_t struct_size;
    int32_t operation;     /* enum cairn_acl_operation */
    int32_t resource_type; /* enum cairn_resource_type */
    const char *resource_name;
    int32_t pattern_type;             /* LITERAL for a request's own resources */
    int32_t resource_reference_count; /* how many times the request names it */
    /* Whether the outcome is worth an audit event (false for implicit
     * checks such as "may this principal see this topic in Metadata"). */
    bool log_if_allowed;
    bool log_if_denied;
};

/* Thread-safety: authorize is called concurrently from the broker's io
 * threads, for many connections at once; it must not block on I/O (answer
 * from memory; refresh state on a thread of your own or through
 * cairn_host.submit_blocking). */
struct cairn_authz_vtable {
    uint32_t struct_size;
    /* One decision per action, written to results[i] as enum
     * cairn_authz_result. Return CAIRN_OK, or CAIRN_ERROR to deny all. */
    int (*authorize)(void *instance, const struct cairn_request_info *request,
                     const struct cairn_authz_action *const *actions, size_t action_count, uint8_t *results);
};

#ifdef __cplusplus
}
#endif

#endif
