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

enum cairn_acl_permission {
    CAIRN_PERMISSION_UNKNOWN = 0,
    CAIRN_PERMISSION_ANY = 1,
    CAIRN_PERMISSION_DENY = 2,
    CAIRN_PERMISSION_ALLOW = 3,
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

/* ABI 1.1: the cluster's ACL bindings, as CreateAcls stored them in the
 * metadata log (Kafka's AccessControlEntryRecord). Strings are borrowed for
 * the duration of the call. */
struct cairn_acl_binding {
    uint32_t struct_size;
    uint8_t id[16];        /* unique per binding; what a removal names */
    int32_t resource_type; /* enum cairn_resource_type */
    const char *resource_name;
    int32_t pattern_type;    /* CAIRN_PATTERN_LITERAL or CAIRN_PATTERN_PREFIXED */
    const char *principal;   /* "User:alice", "User:*" */
    const char *host;        /* an address, or "*" */
    int32_t operation;       /* enum cairn_acl_operation */
    int32_t permission_type; /* enum cairn_acl_permission: DENY or ALLOW */
};

/* Receives the bindings (cairn_host.acl_subscribe). on_acls is called
 * first with reset = true and every current binding in added, then once per
 * metadata change that adds or removes bindings. Calls never overlap; they
 * come from the thread applying the metadata change, which waits for the
 * call, so keep it short (update an index, no I/O) and call no host
 * function but log. Treat changes as idempotent by id: a binding may be
 * added that is already held, or removed that is not. */
struct cairn_acl_listener {
    uint32_t struct_size;
    void *arg;
    void (*on_acls)(void *arg, bool reset, const struct cairn_acl_binding *const *added, size_t added_count,
                    const struct cairn_acl_binding *const *removed, size_t removed_count);
};

#ifdef __cplusplus
}
#endif

#endif
