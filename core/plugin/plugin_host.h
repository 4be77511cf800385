/* The plugin host: loads the plugins named in the broker config, hands
 * each its host services table, and calls their capability tables on the
 * request path.
 *
 * Thread-safety: plugin_host_start and plugin_host_stop run on the main
 * thread (before the listeners start / after the network stopped). In
 * between the host is immutable and every hook below may be called from
 * any thread concurrently. Every hook accepts a NULL host (no plugins). */
#ifndef CAIRN_PLUGIN_PLUGIN_HOST_H
#define CAIRN_PLUGIN_PLUGIN_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cairn/plugin.h"

struct broker_config;
struct loaded_plugin;
struct plugin_acl_listener;

/* Hands every current ACL binding to one listener (a reset call). */
typedef void (*plugin_acl_snapshot_fn)(void *ctx, const struct cairn_acl_listener *listener);

/* Hands the current client quotas to one listener. */
typedef void (*plugin_quota_snapshot_fn)(void *ctx, const struct cairn_quota_listener *listener);

/* The counts are public so the request path can skip a hook with a single
 * branch when no plugin provides it. */
struct plugin_host {
    size_t authorizer_count;
    size_t quota_count;
    size_t audit_count;
    size_t authenticator_count;
    size_t policy_count;
    struct loaded_plugin **authorizers;
    struct loaded_plugin **quotas;
    struct loaded_plugin **audits;
    struct loaded_plugin **authenticators;
    struct loaded_plugin **policies;
    struct loaded_plugin **plugins; /* every loaded plugin, in init order */
    size_t plugin_count;
    struct plugin_pool *pool; /* submit_blocking threads */
    char cluster_id[64];
    int32_t node_id;
    /* ACL listeners of the plugins (acl_subscribe), and the source the
     * server attaches; acl_lock serializes subscriptions and deliveries. */
    pthread_mutex_t acl_lock;
    struct plugin_acl_listener *acl_listeners;
    size_t acl_listener_count;
    plugin_acl_snapshot_fn acl_snapshot;
    void *acl_snapshot_ctx;
    /* Quota listeners (quota_subscribe) and their source, likewise. */
    pthread_mutex_t quota_lock;
    struct cairn_quota_listener *quota_listeners;
    size_t quota_listener_count;
    plugin_quota_snapshot_fn quota_snapshot;
    void *quota_snapshot_ctx;
};

/* Loads and initialises every plugin in `plugins`, in order. On failure
 * returns -1 with one line in err naming the plugin and the cause; every
 * plugin initialised so far has been finalised and unloaded. With no
 * plugins configured *out is NULL and 0 is returned. */
int plugin_host_start(const struct broker_config *cfg, int32_t node_id, const char *cluster_id,
                      struct plugin_host **out, char *err, size_t errlen);

/* cairnd --check-config: for each plugin in `plugins`, the checks of
 * plugin_host_start that need no initialisation: the name, the file on
 * plugin.path, its descriptor and ABI, and plugin.<name>.* against its
 * declared keys (unknown keys, required keys, values of the declared
 * type). The plugin is dlopen'ed for its descriptor but never initialised,
 * so what init reads or contacts (files, endpoints) is not checked.
 * 0, or -1 with err as plugin_host_start words it. */
int plugin_host_check_config(const struct broker_config *cfg, char *err, size_t errlen);

/* Prints each configured plugin's description and config keys (Markdown),
 * reading descriptors without initialising anything. 0, or -1 with err. */
int plugin_host_print_docs(const struct broker_config *cfg, FILE *out, char *err, size_t errlen);

/* Drains blocking work, finalises plugins in reverse order, unloads them. */
void plugin_host_stop(struct plugin_host *host);

/* The default for plugin.path (colon-separated): the build tree's plugins
 * for a cairnd run from the build tree, else <prefix>/<libdir>/cairn/plugins
 * next to the running executable, then the configured install location. */
const char *plugin_host_default_path(void);

/* Asks every authorizer (all must allow; none loaded allows everything)
 * and writes CAIRN_AUTHZ_ALLOWED/DENIED per action into results. Emits an
 * AUTHORIZATION audit event per action as its log_if_* flags say. */
void plugin_host_authorize(struct plugin_host *host, const struct cairn_request_info *request,
                           const struct cairn_authz_action *const *actions, size_t count, uint8_t *results);

/* Reports usage to every quota plugin; returns the largest throttle (ms). */
int32_t plugin_host_quota_record(struct plugin_host *host, const struct cairn_request_info *request, int32_t kind,
                                 double value, int64_t now_ms);

/* Hands an event to every audit plugin. timestamp_ms 0 is filled in. */
void plugin_host_audit(struct plugin_host *host, const struct cairn_audit_event *event);

/* Maps a verified TLS client certificate to a principal: the first
 * authentication plugin whose map_tls_principal answers CAIRN_OK wins.
 * CAIRN_NOT_FOUND when none maps it (the caller keeps Kafka's default),
 * CAIRN_ERROR when one refuses it (err says why). */
int plugin_host_map_tls_principal(struct plugin_host *host, const struct cairn_tls_peer *peer,
                                  struct cairn_principal_out *out, char *err, size_t errlen);

/* For the SASL and TLS code: one AUTHENTICATION event. */
void plugin_host_audit_authentication(struct plugin_host *host, const struct cairn_request_info *request,
                                      const char *mechanism, bool success, const char *error_message);

/* SASL through authentication plugins, for the SaslAuthenticate handler.
 * The plugin serving a mechanism (the first loaded that lists it), or NULL. */
struct loaded_plugin *plugin_host_sasl_plugin(struct plugin_host *host, const char *mechanism);
/* The authn table's sasl_start / sasl_step (out and principal are cleared
 * and sized first) / sasl_end, on that plugin's instance. */
int plugin_host_sasl_start(struct loaded_plugin *p, const char *mechanism, const struct cairn_request_info *connection,
                           void **session, char *err, size_t errlen);
int plugin_host_sasl_step(struct loaded_plugin *p, void *session, const uint8_t *in, size_t in_len,
                          struct cairn_bytes_out *out, struct cairn_principal_out *principal, char *err, size_t errlen);
void plugin_host_sasl_end(struct loaded_plugin *p, void *session);

/* An ADMIN event; details_json may be NULL. */
void plugin_host_audit_admin(struct plugin_host *host, const struct cairn_request_info *request,
                             const char *admin_operation, int32_t resource_type, const char *resource_name,
                             int16_t error_code, const char *details_json);

/* The remote storage table of the first loaded plugin that has one (the
 * remote log manager calls it from its own threads); false when none. */
bool plugin_host_remote_storage(struct plugin_host *host, const struct cairn_remote_storage_vtable **vtable,
                                void **instance, const char **name);

/* ---- topic policies (plugin_policy.c) ---- */

/* Asks every policy plugin about one change (change->count_topics and
 * host_private are the caller's). True when all allow; otherwise false with
 * the first refusal's message in message (never empty). */
bool plugin_host_policy_check(struct plugin_host *host, const struct cairn_request_info *request,
                              const struct cairn_policy_request *change, char *message, size_t message_len);

/* ---- the ACL host service (plugin_acl.c) ---- */

/* Attaches the source of ACL bindings (the server's metadata feed): every
 * listener subscribed so far gets its full first call now, later ones at
 * subscription. Call before the listeners start. */
void plugin_host_attach_acls(struct plugin_host *host, plugin_acl_snapshot_fn snapshot, void *ctx);
/* Detaches it; no listener is called afterwards. Call before stop. */
void plugin_host_detach_acls(struct plugin_host *host);
/* Hands one change to every listener. */
void plugin_host_publish_acls(struct plugin_host *host, const struct cairn_acl_binding *const *added,
                              size_t added_count, const struct cairn_acl_binding *const *removed, size_t removed_count);
/* True when some plugin subscribed (the feed can skip work otherwise). */
bool plugin_host_wants_acls(struct plugin_host *host);

/* ---- the quota host service (plugin_quota.c) ---- */

/* Attaches the source of client quotas (the server's metadata feed): each
 * listener subscribed so far gets the current set now, later ones at
 * subscription. Call before the listeners start. */
void plugin_host_attach_quotas(struct plugin_host *host, plugin_quota_snapshot_fn snapshot, void *ctx);
/* Detaches it; no listener is called afterwards. Call before stop. */
void plugin_host_detach_quotas(struct plugin_host *host);
/* Hands the whole new set to every listener. */
void plugin_host_publish_quotas(struct plugin_host *host, const struct cairn_client_quota *const *quotas, size_t count);
bool plugin_host_wants_quotas(struct plugin_host *host);

#endif
