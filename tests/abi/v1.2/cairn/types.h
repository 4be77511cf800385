/* Cairn plugin ABI: shared types.
 *
 * Rules every ABI struct follows, so a plugin built against 1.N loads into
 * every 1.x host:
 *  - it starts with `uint32_t struct_size`, set by whoever fills it in to
 *    sizeof the struct it was compiled with;
 *  - it only ever grows at the end; a reader checks struct_size (see
 *    CAIRN_HAS_FIELD) before touching a field added in a later minor;
 *  - enum values are never renumbered; new values may appear, and code must
 *    treat an unknown value as "not for me".
 * Arrays of structs cross the boundary as arrays of pointers, so the element
 * size may grow too. Strings are NUL-terminated UTF-8, borrowed for the
 * duration of the call unless a comment says otherwise. */
#ifndef CAIRN_TYPES_H
#define CAIRN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAIRN_PLUGIN_ABI_MAJOR 1
#define CAIRN_PLUGIN_ABI_MINOR 2

#if defined(__GNUC__) || defined(__clang__)
#define CAIRN_PLUGIN_EXPORT __attribute__((visibility("default")))
#define CAIRN_PRINTF_FORMAT(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define CAIRN_PLUGIN_EXPORT
#define CAIRN_PRINTF_FORMAT(fmt_index, first_arg)
#endif

/* True when the struct at ptr (which starts with struct_size) is large
 * enough to hold `field`. */
#define CAIRN_HAS_FIELD(ptr, type, field)                                                                              \
    ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Status returned by plugin and host functions. */
enum cairn_status {
    CAIRN_OK = 0,
    CAIRN_ERROR = -1,     /* failed; the err buffer says why */
    CAIRN_NOT_FOUND = -2, /* the named thing does not exist */
    CAIRN_RETRIABLE = -3, /* transient failure; the caller may retry later */
    CAIRN_INVALID = -4,   /* the input is malformed or out of range */
};

/* Who a connection acts as, in Kafka's "type:name" form (User:alice).
 * ANONYMOUS is User:ANONYMOUS. */
struct cairn_principal {
    uint32_t struct_size;
    const char *type; /* "User" unless a plugin maps another type */
    const char *name;
};

/* Filled in by an authentication plugin; the host owns the buffers. */
struct cairn_principal_out {
    uint32_t struct_size;
    char type[64];
    char name[512];
    /* KIP-368: after this many ms the client must re-authenticate;
     * 0 = no limit. */
    int64_t session_lifetime_ms;
};

/* The connection and request an event or decision is about. Pointers stay
 * valid for the duration of the call only. */
struct cairn_request_info {
    uint32_t struct_size;
    uint64_t connection_id; /* unique per broker process */
    const struct cairn_principal *principal;
    const char *client_host; /* peer address, e.g. "127.0.0.1" */
    uint16_t client_port;
    const char *client_id; /* "" when the client sent none */
    const char *listener_name;
    const char *security_protocol; /* PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL */
    int16_t api_key;               /* -1 outside a request (e.g. at connect) */
    int16_t api_version;
    int32_t correlation_id;
};

#ifdef __cplusplus
}
#endif

#endif
