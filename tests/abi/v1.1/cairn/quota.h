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

#ifdef __cplusplus
}
#endif

#endif
