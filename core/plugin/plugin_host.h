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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cairn/plugin.h"

struct broker_config;
struct loaded_plugin;

/* The counts are public so the request path can skip a hook with a single
 * branch when no plugin provides it. */
struct plugin_host {
    size_t authorizer_count;
    size_t quota_count;
    size_t audit_count;
    size_t authenticator_count;
    struct loaded_plugin **authorizers;
    struct loaded_plugin **quotas;
    struct loaded_plugin **audits;
    struct loaded_plugin **authenticators;
    struct loaded_plugin **plugins; /* every loaded plugin, in init order */
    size_t plugin_count;
    struct plugin_pool *pool; /* submit_blocking threads */
    char cluster_id[64];
    int32_t node_id;
};

/* Loads and initialises every plugin in `plugins`, in order. On failure
 * returns -1 with one line in err naming the plugin and the cause; every
 * plugin initialised so far has been finalised and unloaded. With no
 * plugins configured *out is NULL and 0 is returned. */
int plugin_host_start(const struct broker_config *cfg, int32_t node_id, const char *cluster_id,
                      struct plugin_host **out, char *err, size_t errlen);

/* Prints each configured plugin's description and config keys (Markdown),
 * reading descriptors without initialising anything. 0, or -1 with err. */
int plugin_host_print_docs(const struct broker_config *cfg, FILE *out, char *err, size_t errlen);

/* Drains blocking work, finalises plugins in reverse order, unloads them. */
void plugin_host_stop(struct plugin_host *host);

/* The compiled-in default for plugin.path (colon-separated). */
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

/* An ADMIN event; details_json may be NULL. */
void plugin_host_audit_admin(struct plugin_host *host, const struct cairn_request_info *request,
                             const char *admin_operation, int32_t resource_type, const char *resource_name,
                             int16_t error_code, const char *details_json);

#endif
