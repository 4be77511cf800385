/* prefix_authorizer: allows what prefix rules grant, denies everything else.
 *
 *   plugins=prefix_authorizer
 *   plugin.prefix_authorizer.allow=User:app-=topic:orders-,group:app-;User:admin=*
 *   plugin.prefix_authorizer.super.users=User:root,User:ops
 *
 * See README.md for the rule syntax. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairn/plugin.h>

#define MAX_GRANTS 64

/* One grant: principals starting with `principal` may do `ops` (a bit per
 * enum cairn_acl_operation) on resources of `resource_type` (ANY for all)
 * whose name starts with `name`. */
struct grant {
    char principal[128];
    int32_t resource_type;
    char name[128];
    uint32_t ops;
};

/* Immutable after init: authorize reads it from many io threads at once. */
struct prefix_authorizer {
    struct grant grants[MAX_GRANTS];
    int grant_count;
    char super_users[1024]; /* ",User:a,User:b," for a whole-entry search */
};

static const struct cairn_config_key key_allow = {sizeof key_allow, "allow", CAIRN_CONFIG_STRING, "",
                                                  "Rules: principal-prefix=grant[,grant];... (see README)."};
static const struct cairn_config_key key_super = {sizeof key_super, "super.users", CAIRN_CONFIG_LIST, "",
                                                  "Principals allowed everything, e.g. User:admin."};
static const struct cairn_config_key *const config_keys[] = {&key_allow, &key_super};

static const char *const op_names[] = {[CAIRN_OP_READ] = "read",
                                       [CAIRN_OP_WRITE] = "write",
                                       [CAIRN_OP_CREATE] = "create",
                                       [CAIRN_OP_DELETE] = "delete",
                                       [CAIRN_OP_ALTER] = "alter",
                                       [CAIRN_OP_DESCRIBE] = "describe",
                                       [CAIRN_OP_CLUSTER_ACTION] = "cluster_action",
                                       [CAIRN_OP_DESCRIBE_CONFIGS] = "describe_configs",
                                       [CAIRN_OP_ALTER_CONFIGS] = "alter_configs",
                                       [CAIRN_OP_IDEMPOTENT_WRITE] = "idempotent_write"};
static const char *const resource_names[] = {[CAIRN_RESOURCE_TOPIC] = "topic",
                                             [CAIRN_RESOURCE_GROUP] = "group",
                                             [CAIRN_RESOURCE_CLUSTER] = "cluster",
                                             [CAIRN_RESOURCE_TRANSACTIONAL_ID] = "transactional_id"};

static int lookup(const char *const *names, size_t count, const char *s, size_t n)
{
    for (size_t i = 0; i < count; i++)
        if (names[i] && strlen(names[i]) == n && strncmp(names[i], s, n) == 0)
            return (int)i;
    return -1;
}
#define LOOKUP(table, s, n) lookup(table, sizeof table / sizeof table[0], s, n)

/* grant = "*" | type ":" name-prefix [ "@" op ( "|" op )* ] */
static int parse_grant(struct grant *g, const char *s, size_t n, char *err, size_t errlen)
{
    g->ops = ~0u;
    if (n == 1 && s[0] == '*') {
        g->resource_type = CAIRN_RESOURCE_ANY;
        return CAIRN_OK;
    }
    const char *colon = memchr(s, ':', n), *at = memchr(s, '@', n);
    int type = colon ? LOOKUP(resource_names, s, (size_t)(colon - s)) : -1;
    size_t name_len = colon ? (size_t)((at ? at : s + n) - colon - 1) : 0;
    if (type < 0 || (at && at < colon) || name_len >= sizeof g->name) {
        snprintf(err, errlen, "allow: bad grant '%.*s' (want type:prefix[@op|op])", (int)n, s);
        return CAIRN_ERROR;
    }
    g->resource_type = type;
    memcpy(g->name, colon + 1, name_len);
    if (strcmp(g->name, "*") == 0)
        g->name[0] = '\0';
    if (!at)
        return CAIRN_OK;
    g->ops = 0;
    for (const char *p = at + 1, *end = s + n; p < end;) {
        size_t len = strcspn(p, "|,;");
        if (p + len > end)
            len = (size_t)(end - p);
        int op = LOOKUP(op_names, p, len);
        if (op < 0) {
            snprintf(err, errlen, "allow: unknown operation '%.*s'", (int)len, p);
            return CAIRN_ERROR;
        }
        g->ops |= 1u << op;
        p += len + 1;
    }
    if (g->ops == 0)
        return snprintf(err, errlen, "allow: no operation after '@' in '%.*s'", (int)n, s), CAIRN_ERROR;
    return CAIRN_OK;
}

static int parse_rules(struct prefix_authorizer *a, const char *rules, char *err, size_t errlen)
{
    for (const char *rule = rules; *rule;) {
        size_t rule_len = strcspn(rule, ";");
        const char *eq = memchr(rule, '=', rule_len);
        if (!eq || (size_t)(eq - rule) >= sizeof a->grants[0].principal) {
            snprintf(err, errlen, "allow: rule '%.*s' needs principal-prefix=grants", (int)rule_len, rule);
            return CAIRN_ERROR;
        }
        for (const char *g = eq + 1, *end = rule + rule_len; g < end;) {
            size_t len = strcspn(g, ",;");
            if (a->grant_count == MAX_GRANTS)
                return snprintf(err, errlen, "allow: over %d grants", MAX_GRANTS), CAIRN_ERROR;
            struct grant *grant = &a->grants[a->grant_count++];
            memcpy(grant->principal, rule, (size_t)(eq - rule));
            if (parse_grant(grant, g, len, err, errlen) != CAIRN_OK)
                return CAIRN_ERROR;
            g += len + 1;
        }
        rule += rule_len + (rule[rule_len] == ';');
    }
    return CAIRN_OK;
}

static int prefix_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *allow, *super_users;
    if (host->config_string(host->ctx, "allow", &allow, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "super.users", &super_users, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    struct prefix_authorizer *a = calloc(1, sizeof *a);
    if (!a)
        return snprintf(err, errlen, "out of memory"), CAIRN_ERROR;
    if (strlen(super_users) + 3 > sizeof a->super_users) {
        snprintf(err, errlen, "super.users is too long");
    } else if (parse_rules(a, allow, err, errlen) == CAIRN_OK) {
        char *out = a->super_users;
        *out++ = ',';
        for (const char *p = super_users; *p; p++)
            if (*p != ' ')
                *out++ = *p; /* "User:a, User:b" */
        *out = ',';
        host->log(host->ctx, CAIRN_LOG_INFO, "%d grant(s) loaded", a->grant_count);
        *instance = a;
        return CAIRN_OK;
    }
    free(a);
    return CAIRN_ERROR;
}

static void prefix_fini(void *instance)
{
    free(instance);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int prefix_authorize(void *instance, const struct cairn_request_info *request,
                            const struct cairn_authz_action *const *actions, size_t count, uint8_t *results)
{
    const struct prefix_authorizer *a = instance;
    if (!request || !request->principal)
        return CAIRN_ERROR; /* denies all */
    char principal[600], needle[604];
    snprintf(principal, sizeof principal, "%s:%s", request->principal->type, request->principal->name);
    snprintf(needle, sizeof needle, ",%s,", principal);
    bool super = strstr(a->super_users, needle) != NULL;
    for (size_t i = 0; i < count; i++) {
        const struct cairn_authz_action *act = actions[i];
        results[i] = super ? CAIRN_AUTHZ_ALLOWED : CAIRN_AUTHZ_DENIED;
        for (int g = 0; g < a->grant_count && !results[i]; g++) {
            const struct grant *gr = &a->grants[g];
            bool op_ok = act->operation > 0 && act->operation < 32 && (gr->ops & (1u << act->operation));
            if (op_ok && starts_with(principal, gr->principal) &&
                (gr->resource_type == CAIRN_RESOURCE_ANY || gr->resource_type == act->resource_type) &&
                starts_with(act->resource_name ? act->resource_name : "", gr->name))
                results[i] = CAIRN_AUTHZ_ALLOWED;
        }
    }
    return CAIRN_OK;
}

static const struct cairn_authz_vtable authz_table = {.struct_size = sizeof authz_table, .authorize = prefix_authorize};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "prefix_authorizer",
    .version = "1.0.0",
    .description = "Allows principals what prefix rules grant; denies the rest.",
    .capabilities = CAIRN_CAP_AUTHORIZATION,
    .config_keys = config_keys,
    .config_key_count = sizeof config_keys / sizeof config_keys[0],
    .init = prefix_init,
    .fini = prefix_fini,
    .authorization = &authz_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
