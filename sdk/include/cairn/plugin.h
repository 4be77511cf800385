/* Cairn plugin ABI, version 1.
 *
 * A plugin is a shared object exporting one C symbol, cairn_plugin_entry,
 * that returns a static descriptor: the ABI version it was built against,
 * its name and version, the configuration keys it accepts, init/fini, and
 * one table per capability it provides. Define it with CAIRN_PLUGIN_DEFINE.
 * Build with -fvisibility=hidden so only the entry symbol is exported.
 *
 * Compatibility: the host loads a plugin whose abi_major equals its own and
 * whose abi_minor is any value; see cairn/types.h for the struct rules that
 * make that safe. Use CAIRN_HAS_FIELD on the host table before reading a
 * field added after the minor you built against.
 *
 * Threading contract
 *  - init and fini run on the broker's main thread, once each: init in the
 *    order of the `plugins` list, before the broker accepts connections;
 *    fini in reverse order after the last connection is closed and every
 *    table call has returned.
 *  - Table calls start after every plugin's init succeeded, come from any
 *    thread, and may overlap; each table's header says which may block.
 *  - Host functions may be called from any thread between init's start and
 *    fini's start, including from threads the plugin creates.
 *  - A plugin must never: call a host function from fini or after fini has
 *    started (stop your threads first); keep any host pointer (the host
 *    table, strings, request info) past the call it was given to, except the
 *    host table and its strings until fini; unwind C++ exceptions or
 *    longjmp across the boundary; call exit() or abort() on bad input;
 *    install signal handlers. */
#ifndef CAIRN_PLUGIN_H
#define CAIRN_PLUGIN_H

#include "cairn/audit.h"
#include "cairn/authn.h"
#include "cairn/authz.h"
#include "cairn/policy.h"
#include "cairn/quota.h"
#include "cairn/remote_storage.h"
#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CAIRN_PLUGIN_ENTRY_SYMBOL "cairn_plugin_entry"

enum cairn_capability {
    CAIRN_CAP_AUTHENTICATION = 1u << 0,
    CAIRN_CAP_AUTHORIZATION = 1u << 1,
    CAIRN_CAP_QUOTA = 1u << 2,
    CAIRN_CAP_AUDIT = 1u << 3,
    CAIRN_CAP_REMOTE_STORAGE = 1u << 4,
    CAIRN_CAP_POLICY = 1u << 5, /* ABI 1.3 */
};

enum cairn_config_type {
    CAIRN_CONFIG_STRING = 1,
    CAIRN_CONFIG_INT = 2,      /* decimal 64-bit integer */
    CAIRN_CONFIG_BOOL = 3,     /* true or false */
    CAIRN_CONFIG_SIZE = 4,     /* bytes: an integer, optionally with K, M, G, KiB, MiB or GiB */
    CAIRN_CONFIG_LIST = 5,     /* comma-separated strings */
    CAIRN_CONFIG_PASSWORD = 6, /* a string never logged or printed */
};

/* One key the plugin accepts, named without the plugin.<name>. prefix. The
 * host refuses to start when server.properties sets a plugin.<name>.* key
 * the plugin does not declare, or a value that does not parse as its type. */
struct cairn_config_key {
    uint32_t struct_size;
    const char *name;
    int32_t type;              /* enum cairn_config_type */
    const char *default_value; /* NULL: the key is required */
    const char *doc;           /* one line, shown by cairnd --print-plugin-docs */
};

enum cairn_log_level {
    CAIRN_LOG_ERROR = 1,
    CAIRN_LOG_WARN = 2,
    CAIRN_LOG_INFO = 3,
    CAIRN_LOG_DEBUG = 4,
};

/* A counter or gauge the broker exports with its own metrics, named
 * cairn_plugin_<plugin>_<name>. Owned by the host; valid until fini. */
struct cairn_metric;

/* Services the host offers a plugin. Pass `ctx` as the first argument of
 * every function. The table and its strings stay valid until fini. */
struct cairn_host {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    void *ctx;
    const char *plugin_name;
    int32_t node_id;
    const char *cluster_id;

    void (*log)(void *ctx, int32_t level, const char *fmt, ...) CAIRN_PRINTF_FORMAT(3, 4);

    /* Configuration: only this plugin's keys, named without the prefix. A
     * key not set in server.properties takes its declared default. Each
     * returns CAIRN_OK, CAIRN_NOT_FOUND (undeclared key, or unset with no
     * default) or CAIRN_INVALID (does not parse; err says why). Strings are
     * valid until fini. */
    int (*config_string)(void *ctx, const char *key, const char **out, char *err, size_t errlen);
    int (*config_int)(void *ctx, const char *key, int64_t *out, char *err, size_t errlen);
    int (*config_bool)(void *ctx, const char *key, bool *out, char *err, size_t errlen);
    int (*config_size)(void *ctx, const char *key, uint64_t *out, char *err, size_t errlen);

    int64_t (*monotonic_ns)(void *ctx);
    int64_t (*wall_clock_ms)(void *ctx);

    /* Metrics: register during init (NULL on a bad name or out of memory);
     * update from any thread. */
    struct cairn_metric *(*counter)(void *ctx, const char *name, const char *help);
    struct cairn_metric *(*gauge)(void *ctx, const char *name, const char *help);
    void (*metric_add)(struct cairn_metric *metric, int64_t delta);
    void (*metric_set)(struct cairn_metric *metric, int64_t value); /* gauges only */

    /* Runs work(arg) on one of the host's blocking-work threads, then
     * done(arg) (may be NULL) on the same thread. For calls that would
     * stall an io thread. Jobs run on several threads and keep no order
     * between them: for ordered work (an audit log) use a queue and one
     * thread of your own (see audit.h). Returns CAIRN_OK, or
     * CAIRN_RETRIABLE when the host is shutting down (neither function
     * will run). */
    int (*submit_blocking)(void *ctx, void (*work)(void *arg), void (*done)(void *arg), void *arg);

    /* ---- ABI 1.1 (check with CAIRN_HAS_FIELD(host, struct cairn_host, acl_subscribe)) ---- */

    /* Subscribes to the cluster's ACL bindings (see struct
     * cairn_acl_listener); the host copies *listener. Call it from init:
     * the first, full call then arrives before the broker accepts
     * connections. Calls stop before fini. Returns CAIRN_OK, or
     * CAIRN_INVALID for a NULL or too small listener. */
    int (*acl_subscribe)(void *ctx, const struct cairn_acl_listener *listener);

    /* ---- ABI 1.2 (check with CAIRN_HAS_FIELD(host, struct cairn_host, quota_subscribe)) ---- */

    /* Subscribes to the client quotas set at run time (see struct
     * cairn_quota_listener); the host copies *listener. Call it from init:
     * the first call then arrives before the broker accepts connections.
     * Calls stop before fini. Returns CAIRN_OK, or CAIRN_INVALID for a NULL
     * or too small listener. */
    int (*quota_subscribe)(void *ctx, const struct cairn_quota_listener *listener);
};

struct cairn_plugin_descriptor {
    uint32_t struct_size;
    uint16_t abi_major; /* CAIRN_PLUGIN_ABI_MAJOR the plugin was built with */
    uint16_t abi_minor;
    const char *name; /* [a-z0-9_-]+, the name used in plugins= and plugin.<name>.* */
    const char *version;
    const char *description;
    uint32_t capabilities; /* enum cairn_capability bits; each set bit has its table below */

    const struct cairn_config_key *const *config_keys;
    size_t config_key_count;

    /* Reads config, starts threads. On failure returns CAIRN_ERROR with a
     * one-line reason in err; the broker then stops start-up (fini is not
     * called). *instance is passed to fini and every table call. */
    int (*init)(const struct cairn_host *host, void **instance, char *err, size_t errlen);
    /* Stops threads, flushes, frees. Must not call host functions. */
    void (*fini)(void *instance);

    const struct cairn_authn_vtable *authentication;
    const struct cairn_authz_vtable *authorization;
    const struct cairn_quota_vtable *quota;
    const struct cairn_audit_vtable *audit;
    const struct cairn_remote_storage_vtable *remote_storage;

    /* ---- ABI 1.3: topic policies (see policy.h); a descriptor built for
     * an earlier minor ends before this field, and the host reads it only
     * when struct_size covers it. ---- */
    const struct cairn_policy_vtable *policy;
};

typedef const struct cairn_plugin_descriptor *(*cairn_plugin_entry_fn)(void);

/* Exports the entry symbol returning &descriptor. */
#define CAIRN_PLUGIN_DEFINE(descriptor)                                                                                \
    CAIRN_PLUGIN_EXPORT const struct cairn_plugin_descriptor *cairn_plugin_entry(void);                                \
    const struct cairn_plugin_descriptor *cairn_plugin_entry(void)                                                     \
    {                                                                                                                  \
        return &(descriptor);                                                                                          \
    }

#ifdef __cplusplus
}
#endif

#endif
