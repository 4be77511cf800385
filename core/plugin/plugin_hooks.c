/* Calls into the capability tables on the request path. */
#include <stdio.h>
#include <string.h>

#include "plugin/plugin_internal.h"
#include "util/clock.h"

static void emit_authorization(struct plugin_host *host, const struct cairn_request_info *request,
                               const struct cairn_authz_action *action, bool allowed)
{
    struct cairn_audit_event ev;
    memset(&ev, 0, sizeof ev);
    ev.struct_size = sizeof ev;
    ev.type = CAIRN_AUDIT_AUTHORIZATION;
    ev.request = request;
    ev.success = allowed;
    ev.operation = action->operation;
    ev.resource_type = action->resource_type;
    ev.resource_name = action->resource_name;
    ev.pattern_type = action->pattern_type;
    plugin_host_audit(host, &ev);
}

void plugin_host_authorize(struct plugin_host *host, const struct cairn_request_info *request,
                           const struct cairn_authz_action *const *actions, size_t count, uint8_t *results)
{
    for (size_t i = 0; i < count; i++)
        results[i] = CAIRN_AUTHZ_ALLOWED;
    /* With no authorizer every action is allowed, as Kafka without one;
     * those decisions are still audited below (an audit-only plugin sees
     * every decision, as Kafka's audit products record them). */
    if (!host || count == 0 || (host->authorizer_count == 0 && host->audit_count == 0))
        return;
    uint8_t one[64];
    uint8_t *scratch = count <= sizeof one ? one : NULL;
    for (size_t a = 0; a < host->authorizer_count; a++) {
        struct loaded_plugin *p = host->authorizers[a];
        if (!scratch) {
            /* Large requests: ask one action at a time. */
            for (size_t i = 0; i < count; i++) {
                uint8_t r = CAIRN_AUTHZ_DENIED;
                if (p->desc->authorization->authorize(p->instance, request, &actions[i], 1, &r) != CAIRN_OK ||
                    r != CAIRN_AUTHZ_ALLOWED)
                    results[i] = CAIRN_AUTHZ_DENIED;
            }
            continue;
        }
        memset(scratch, CAIRN_AUTHZ_DENIED, count);
        int rc = p->desc->authorization->authorize(p->instance, request, actions, count, scratch);
        for (size_t i = 0; i < count; i++)
            if (rc != CAIRN_OK || scratch[i] != CAIRN_AUTHZ_ALLOWED)
                results[i] = CAIRN_AUTHZ_DENIED;
    }
    if (host->audit_count == 0)
        return;
    for (size_t i = 0; i < count; i++) {
        bool allowed = results[i] == CAIRN_AUTHZ_ALLOWED;
        if ((allowed && actions[i]->log_if_allowed) || (!allowed && actions[i]->log_if_denied))
            emit_authorization(host, request, actions[i], allowed);
    }
}

int32_t plugin_host_quota_record(struct plugin_host *host, const struct cairn_request_info *request, int32_t kind,
                                 double value, int64_t now_ms)
{
    int32_t worst = 0;
    if (!host)
        return 0;
    for (size_t i = 0; i < host->quota_count; i++) {
        struct loaded_plugin *p = host->quotas[i];
        int32_t t = p->desc->quota->record(p->instance, request, kind, value, now_ms);
        if (t > worst)
            worst = t;
    }
    return worst;
}

void plugin_host_audit(struct plugin_host *host, const struct cairn_audit_event *event)
{
    if (!host || host->audit_count == 0)
        return;
    struct cairn_audit_event ev = *event;
    /* The SDK promises a request: an event raised outside one gets a
     * placeholder (api_key -1) rather than NULL. */
    static const struct cairn_principal anonymous = {sizeof anonymous, "User", "ANONYMOUS"};
    static const struct cairn_request_info outside = {.struct_size = sizeof outside,
                                                      .principal = &anonymous,
                                                      .client_host = "",
                                                      .client_id = "",
                                                      .listener_name = "",
                                                      .security_protocol = "",
                                                      .api_key = -1,
                                                      .api_version = -1,
                                                      .correlation_id = -1};
    if (!ev.request)
        ev.request = &outside;
    if (ev.timestamp_ms == 0)
        ev.timestamp_ms = clock_wall_ms();
    for (size_t i = 0; i < host->audit_count; i++) {
        struct loaded_plugin *p = host->audits[i];
        p->desc->audit->on_event(p->instance, &ev);
    }
}

int plugin_host_map_tls_principal(struct plugin_host *host, const struct cairn_tls_peer *peer,
                                  struct cairn_principal_out *out, char *err, size_t errlen)
{
    for (size_t i = 0; host && i < host->authenticator_count; i++) {
        struct loaded_plugin *p = host->authenticators[i];
        if (!p->desc->authentication->map_tls_principal)
            continue;
        memset(out, 0, sizeof *out);
        out->struct_size = sizeof *out;
        err[0] = '\0';
        int rc = p->desc->authentication->map_tls_principal(p->instance, peer, out, err, errlen);
        if (rc == CAIRN_NOT_FOUND)
            continue;
        if (rc != CAIRN_OK || !out->name[0] || !memchr(out->name, '\0', sizeof out->name) ||
            !memchr(out->type, '\0', sizeof out->type)) {
            if (!err[0] || rc == CAIRN_OK)
                snprintf(err, errlen, "plugin %s gave no usable principal", p->name);
            return CAIRN_ERROR;
        }
        if (!out->type[0])
            snprintf(out->type, sizeof out->type, "User");
        return CAIRN_OK;
    }
    return CAIRN_NOT_FOUND;
}

void plugin_host_audit_authentication(struct plugin_host *host, const struct cairn_request_info *request,
                                      const char *mechanism, bool success, const char *error_message)
{
    if (!host || host->audit_count == 0)
        return;
    struct cairn_audit_event ev;
    memset(&ev, 0, sizeof ev);
    ev.struct_size = sizeof ev;
    ev.type = CAIRN_AUDIT_AUTHENTICATION;
    ev.request = request;
    ev.mechanism = mechanism;
    ev.success = success;
    ev.error_message = error_message;
    plugin_host_audit(host, &ev);
}

void plugin_host_audit_admin(struct plugin_host *host, const struct cairn_request_info *request,
                             const char *admin_operation, int32_t resource_type, const char *resource_name,
                             int16_t error_code, const char *details_json)
{
    if (!host || host->audit_count == 0)
        return;
    struct cairn_audit_event ev;
    memset(&ev, 0, sizeof ev);
    ev.struct_size = sizeof ev;
    ev.type = CAIRN_AUDIT_ADMIN;
    ev.request = request;
    ev.success = error_code == 0;
    ev.admin_operation = admin_operation;
    ev.resource_type = resource_type;
    ev.resource_name = resource_name;
    ev.pattern_type = CAIRN_PATTERN_LITERAL;
    ev.error_code = error_code;
    ev.details_json = details_json;
    plugin_host_audit(host, &ev);
}

struct loaded_plugin *plugin_host_sasl_plugin(struct plugin_host *host, const char *mechanism)
{
    for (size_t i = 0; host && mechanism && i < host->authenticator_count; i++) {
        const struct cairn_authn_vtable *t = host->authenticators[i]->desc->authentication;
        for (const char *const *m = t->sasl_mechanisms; m && *m; m++)
            if (strcmp(*m, mechanism) == 0)
                return host->authenticators[i];
    }
    return NULL;
}

int plugin_host_sasl_start(struct loaded_plugin *p, const char *mechanism, const struct cairn_request_info *connection,
                           void **session, char *err, size_t errlen)
{
    *session = NULL;
    return p->desc->authentication->sasl_start(p->instance, mechanism, connection, session, err, errlen);
}

int plugin_host_sasl_step(struct loaded_plugin *p, void *session, const uint8_t *in, size_t in_len,
                          struct cairn_bytes_out *out, struct cairn_principal_out *principal, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    memset(principal, 0, sizeof *principal);
    principal->struct_size = sizeof *principal;
    return p->desc->authentication->sasl_step(p->instance, session, in, in_len, out, principal, err, errlen);
}

void plugin_host_sasl_end(struct loaded_plugin *p, void *session)
{
    if (p->desc->authentication->sasl_end)
        p->desc->authentication->sasl_end(p->instance, session);
}

bool plugin_host_remote_storage(struct plugin_host *host, const struct cairn_remote_storage_vtable **vtable,
                                void **instance, const char **name)
{
    for (size_t i = 0; host && i < host->plugin_count; i++) {
        struct loaded_plugin *p = host->plugins[i];
        if (p->desc->remote_storage) {
            *vtable = p->desc->remote_storage;
            *instance = p->instance;
            *name = p->name;
            return true;
        }
    }
    return false;
}
