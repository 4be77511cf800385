/* Cairn plugin ABI: client quotas. The host reports what each request used;
 * the plugin answers how long the client must wait. The host puts that in
 * the response's throttle_time_ms and stops reading from the connection for
 * that long (KIP-219), so well-behaved and misbehaving clients alike slow
 * down. */
#ifndef CAIRN_QUOTA_H
#define CAIRN_QUOTA_H

#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_quota_kind {
    CAIRN_QUOTA_PRODUCE = 1, /* value: bytes of the Produce request */
    CAIRN_QUOTA_FETCH = 2,   /* value: bytes of the Fetch response */
    CAIRN_QUOTA_REQUEST = 3, /* value: io-thread time the request took, in ns */
    /* ABI 1.2 (KIP-599): value: partitions one topic of a CreateTopics,
     * CreatePartitions or DeleteTopics request is about to create or delete.
     * Asked before the change, once per topic: a non-zero answer refuses
     * that topic with THROTTLING_QUOTA_EXCEEDED (versions that have it) and
     * throttles the response. */
    CAIRN_QUOTA_CONTROLLER_MUTATION = 4,
};

/* Thread-safety: record is called concurrently from io threads after each
 * request; it must not block. */
struct cairn_quota_vtable {
    uint32_t struct_size;
    /* Adds value to the usage of the request's principal and client id and
     * returns the throttle time in ms (0 when within quota). Called once per
     * applicable kind per request: Produce gets PRODUCE and REQUEST, Fetch
     * gets FETCH and REQUEST, every other API REQUEST only. The host throttles
     * by the largest answer. */
    int32_t (*record)(void *instance, const struct cairn_request_info *request, int32_t kind, double value,
                      int64_t now_ms);
};

/* ABI 1.2: client quotas set at run time (AlterClientQuotas), as the
 * metadata log stores them (Kafka's ClientQuotaRecord). An entity has up to
 * three parts; each is absent, names one user / client id / address, or is
 * the <default> of its type. */
enum cairn_quota_entity_part {
    CAIRN_QUOTA_PART_ABSENT = 0,
    CAIRN_QUOTA_PART_NAMED = 1,
    CAIRN_QUOTA_PART_DEFAULT = 2,
};

/* One value of one entity. Strings are borrowed for the duration of the call. */
struct cairn_client_quota {
    uint32_t struct_size;
    int32_t user_part; /* enum cairn_quota_entity_part */
    const char *user;  /* NAMED: the principal's name, without "User:" */
    int32_t client_id_part;
    const char *client_id;
    int32_t ip_part;
    const char *ip; /* NAMED: an IPv4 or IPv6 address */
    /* Kafka's quota names: producer_byte_rate, consumer_byte_rate,
     * request_percentage, controller_mutation_rate (user / client-id
     * entities), connection_creation_rate (ip entities). */
    const char *key;
    double value;
};

/* Receives the quotas (cairn_host.quota_subscribe). on_quotas hands the
 * whole current set every time: first at subscription, then after each
 * metadata change that alters it (an empty set included). Calls never
 * overlap; they come from the thread applying the metadata change, which
 * waits for the call, so keep it short (swap a table, no I/O) and call no
 * host function but log. */
struct cairn_quota_listener {
    uint32_t struct_size;
    void *arg;
    void (*on_quotas)(void *arg, const struct cairn_client_quota *const *quotas, size_t count);
};

#ifdef __cplusplus
}
#endif

#endif
