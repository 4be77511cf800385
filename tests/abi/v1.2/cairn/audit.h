/* Cairn plugin ABI: audit events. */
#ifndef CAIRN_AUDIT_H
#define CAIRN_AUDIT_H

#include "cairn/authz.h"
#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_audit_event_type {
    CAIRN_AUDIT_AUTHENTICATION = 1, /* a SASL or TLS authentication finished */
    CAIRN_AUDIT_AUTHORIZATION = 2,  /* one authorization decision */
    CAIRN_AUDIT_ADMIN = 3,          /* a change to the cluster: topics, partitions, configs, ACLs */
};

/* Fields apply per type as marked; others are zero/NULL. */
struct cairn_audit_event {
    uint32_t struct_size;
    int32_t type;         /* enum cairn_audit_event_type */
    int64_t timestamp_ms; /* wall clock */
    /* Never NULL: the connection and request the event is about (an event
     * raised outside a request has api_key -1). Valid during the call only. */
    const struct cairn_request_info *request;

    /* AUTHENTICATION */
    const char *mechanism; /* SASL mechanism, or "SSL" for a TLS peer */
    bool success;          /* also AUTHORIZATION: allowed */
    const char *error_message;

    /* AUTHORIZATION */
    int32_t operation;     /* enum cairn_acl_operation */
    int32_t resource_type; /* enum cairn_resource_type */
    const char *resource_name;
    int32_t pattern_type; /* enum cairn_pattern_type */

    /* ADMIN: the operation by its Kafka API name ("CreateTopics",
     * "DeleteTopics", "CreatePartitions", "AlterConfigs",
     * "IncrementalAlterConfigs", ...), the resource it touched (resource_type
     * and resource_name above), its Kafka error code (0 on success) and a
     * JSON object with the details (partitions, replication factor, config
     * changes), or NULL. */
    const char *admin_operation;
    int16_t error_code;
    const char *details_json;
};

/* Thread-safety: on_event is called concurrently from io threads, on the
 * request path: copy what you need and return; write on a thread of your
 * own. Order: events of one connection arrive in request order (one request
 * per connection is processed at a time); events of different connections
 * interleave. cairn_host.submit_blocking does not keep order (its jobs run
 * on several threads), so to write events in the order they happened, push
 * each copy onto a queue of your own under a mutex inside on_event and let
 * one writer thread, started in init and joined in fini, drain it (the
 * shipped audit plugin does this; bound the queue and count what you drop
 * rather than block). */
struct cairn_audit_vtable {
    uint32_t struct_size;
    void (*on_event)(void *instance, const struct cairn_audit_event *event);
};

#ifdef __cplusplus
}
#endif

#endif
