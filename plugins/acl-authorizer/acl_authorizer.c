/* The ACL authorizer plugin: Kafka's ACL authorization over the bindings
 * the broker keeps in its metadata log (CreateAcls / DeleteAcls), read
 * through the ACL host service of ABI 1.1. Decisions read an in-memory
 * index under a read lock; changes from the host take the write lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_index.h"
#include "cairn/plugin.h"

#define MAX_SUPER_USERS 64
#define PRINCIPAL_MAX 600

/* One instance. index is guarded by lock; the rest is immutable after init
 * (the metrics update themselves atomically). */
struct acl_authorizer {
    const struct cairn_host *host;
    pthread_rwlock_t lock;
    struct acl_index *index;
    bool allow_if_none;
    char *super_users[MAX_SUPER_USERS];
    int super_user_count;
    struct cairn_metric *denials;
    struct cairn_metric *bindings;
};

static const struct cairn_config_key key_super_users = {
    sizeof key_super_users, "super.users", CAIRN_CONFIG_STRING, "",
    "Principals allowed everything, separated by ';' as in Kafka (User:admin;User:ops)."};
static const struct cairn_config_key key_allow_if_none = {sizeof key_allow_if_none, "allow.everyone.if.no.acl.found",
                                                          CAIRN_CONFIG_BOOL, "false",
                                                          "Allow an operation on a resource no ACL names at all."};
static const struct cairn_config_key *const keys[] = {&key_super_users, &key_allow_if_none};

static void on_acls(void *arg, bool reset, const struct cairn_acl_binding *const *added, size_t added_count,
                    const struct cairn_acl_binding *const *removed, size_t removed_count)
{
    struct acl_authorizer *a = arg;
    size_t failed = 0;
    pthread_rwlock_wrlock(&a->lock);
    if (reset)
        acl_index_clear(a->index);
    for (size_t i = 0; i < removed_count; i++)
        acl_index_remove(a->index, removed[i]);
    for (size_t i = 0; i < added_count; i++)
        if (acl_index_add(a->index, added[i]) != 0)
            failed++;
    size_t count = acl_index_count(a->index);
    pthread_rwlock_unlock(&a->lock);
    a->host->metric_set(a->bindings, (int64_t)count);
    if (failed > 0)
        a->host->log(a->host->ctx, CAIRN_LOG_ERROR, "%zu ACL binding(s) could not be indexed and are ignored", failed);
}

/* "type:name" into out (PRINCIPAL_MAX bytes), truncated; snprintf costs a
 * fifth of a decision. */
static void join_principal(char *out, const char *type, const char *name)
{
    size_t t = strnlen(type, 63), n = strnlen(name, PRINCIPAL_MAX - 65);
    memcpy(out, type, t);
    out[t] = ':';
    memcpy(out + t + 1, name, n);
    out[t + 1 + n] = '\0';
}

static bool is_super_user(const struct acl_authorizer *a, const char *principal)
{
    for (int i = 0; i < a->super_user_count; i++)
        if (strcmp(a->super_users[i], principal) == 0)
            return true;
    return false;
}

static int authorize(void *instance, const struct cairn_request_info *request,
                     const struct cairn_authz_action *const *actions, size_t action_count, uint8_t *results)
{
    struct acl_authorizer *a = instance;
    char principal[PRINCIPAL_MAX] = "User:ANONYMOUS";
    const char *host = "";
    if (request && request->principal && request->principal->type && request->principal->name)
        join_principal(principal, request->principal->type, request->principal->name);
    if (request && request->client_host)
        host = request->client_host;
    if (is_super_user(a, principal)) {
        memset(results, CAIRN_AUTHZ_ALLOWED, action_count);
        return CAIRN_OK;
    }
    int64_t denied = 0;
    pthread_rwlock_rdlock(&a->lock);
    for (size_t i = 0; i < action_count; i++) {
        const struct cairn_authz_action *act = actions[i];
        bool ok = act && act->resource_name &&
                  acl_index_allows(a->index, principal, host, act->operation, act->resource_type, act->resource_name,
                                   a->allow_if_none);
        results[i] = ok ? CAIRN_AUTHZ_ALLOWED : CAIRN_AUTHZ_DENIED;
        denied += ok ? 0 : 1;
    }
    pthread_rwlock_unlock(&a->lock);
    if (denied > 0)
        a->host->metric_add(a->denials, denied);
    return CAIRN_OK;
}

static void free_instance(struct acl_authorizer *a)
{
    for (int i = 0; i < a->super_user_count; i++)
        free(a->super_users[i]);
    acl_index_free(a->index);
    pthread_rwlock_destroy(&a->lock);
    free(a);
}

/* Kafka's super.users: principals separated by ';'. */
static int parse_super_users(struct acl_authorizer *a, const char *list, char *err, size_t errlen)
{
    const char *p = list;
    while (*p) {
        while (*p == ';' || *p == ' ')
            p++;
        size_t len = strcspn(p, ";");
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == 0)
            break;
        if (a->super_user_count == MAX_SUPER_USERS) {
            snprintf(err, errlen, "super.users: more than %d principals", MAX_SUPER_USERS);
            return CAIRN_ERROR;
        }
        char *u = strndup(p, len);
        if (!u || !strchr(u, ':')) {
            snprintf(err, errlen, "super.users: '%.*s' is not a principal (type:name)", (int)len, p);
            free(u);
            return CAIRN_ERROR;
        }
        a->super_users[a->super_user_count++] = u;
        p += strcspn(p, ";");
    }
    return CAIRN_OK;
}

static int acl_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    if (!CAIRN_HAS_FIELD(host, struct cairn_host, acl_subscribe) || !host->acl_subscribe) {
        snprintf(err, errlen, "this broker has no ACL host service (plugin ABI 1.1 or later needed)");
        return CAIRN_ERROR;
    }
    struct acl_authorizer *a = calloc(1, sizeof(*a));
    if (!a || pthread_rwlock_init(&a->lock, NULL) != 0) {
        free(a);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    a->host = host;
    a->index = acl_index_new();
    const char *supers = "";
    if (!a->index || host->config_string(host->ctx, "super.users", &supers, err, errlen) != CAIRN_OK ||
        host->config_bool(host->ctx, "allow.everyone.if.no.acl.found", &a->allow_if_none, err, errlen) != CAIRN_OK ||
        parse_super_users(a, supers, err, errlen) != CAIRN_OK) {
        if (!a->index)
            snprintf(err, errlen, "out of memory");
        free_instance(a);
        return CAIRN_ERROR;
    }
    a->denials = host->counter(host->ctx, "denials_total", "Authorization decisions that denied.");
    a->bindings = host->gauge(host->ctx, "acl_bindings", "ACL bindings the authorizer holds.");
    struct cairn_acl_listener listener = {sizeof listener, a, on_acls};
    if (host->acl_subscribe(host->ctx, &listener) != CAIRN_OK) {
        snprintf(err, errlen, "cannot subscribe to the ACL bindings");
        free_instance(a);
        return CAIRN_ERROR;
    }
    *instance = a;
    return CAIRN_OK;
}

static void acl_fini(void *instance)
{
    free_instance(instance);
}

static const struct cairn_authz_vtable authz = {sizeof authz, authorize};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "acl-authorizer",
    .version = "1.0.0",
    .description = "Kafka's ACL authorizer over the bindings of CreateAcls/DeleteAcls.",
    .capabilities = CAIRN_CAP_AUTHORIZATION,
    .config_keys = keys,
    .config_key_count = sizeof keys / sizeof keys[0],
    .init = acl_init,
    .fini = acl_fini,
    .authorization = &authz,
};

CAIRN_PLUGIN_DEFINE(descriptor)
