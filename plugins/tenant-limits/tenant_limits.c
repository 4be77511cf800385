/* tenant-limits: a topic policy (ABI 1.3) with per-tenant caps. A tenant is
 * a principal, or the principals under a prefix, owning a topic prefix; its
 * topic creations, partition additions and retention changes must stay
 * inside its prefix and under its caps. Principals no entry names are not
 * limited (operators; ACLs keep the rest out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/plugin.h"
#include "tenant_rules.h"

/* Read-only after init; check runs on many threads at once. */
struct tenant_limits {
    const struct cairn_host *host;
    struct tenant_rules rules;
    struct cairn_metric *refused;
};

static int tenant_limits_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *text = NULL;
    char why[256] = "";
    if (host->config_string(host->ctx, "entries", &text, why, sizeof why) != CAIRN_OK || !text) {
        snprintf(err, errlen, "config entries: %s", why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    struct tenant_limits *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    t->host = host;
    if (tenant_rules_parse(text, &t->rules, err, errlen) != CAIRN_OK) {
        free(t);
        return CAIRN_ERROR;
    }
    t->refused = host->counter(host->ctx, "refused_total",
                               "Topic changes refused for exceeding a tenant's caps or prefix");
    host->log(host->ctx, CAIRN_LOG_INFO, "%zu tenants", t->rules.count);
    *instance = t;
    return CAIRN_OK;
}

static void tenant_limits_fini(void *instance)
{
    struct tenant_limits *t = instance;
    if (!t)
        return;
    tenant_rules_free(&t->rules);
    free(t);
}

static int tenant_limits_check(void *instance, const struct cairn_request_info *request,
                               const struct cairn_policy_request *change, char *message, size_t message_len)
{
    struct tenant_limits *t = instance;
    if (!request || !request->principal || !change)
        return CAIRN_OK;
    char principal[600];
    snprintf(principal, sizeof principal, "%s:%s", request->principal->type ? request->principal->type : "User",
             request->principal->name ? request->principal->name : "");
    const struct tenant_rule *rule = tenant_rules_match(&t->rules, principal);
    if (!rule)
        return CAIRN_OK;
    int rc = tenant_rule_check(rule, principal, change, message, message_len);
    if (rc != CAIRN_OK && t->refused)
        t->host->metric_add(t->refused, 1);
    return rc;
}

static const struct cairn_config_key key_entries = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "entries",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "",
    .doc = "Tenants, ';'-separated: principal=<principal>[*],prefix=<topic prefix>:<cap>=<n>,... with caps "
           "max.partitions.per.topic, max.partitions, max.replication.factor, max.retention.ms, max.retention.bytes; "
           "e.g. principal=User:team-a-*,prefix=team-a.:max.partitions=20,max.retention.ms=604800000",
};

static const struct cairn_config_key *const config_keys[] = {&key_entries};

static const struct cairn_policy_vtable policy_table = {
    .struct_size = sizeof(struct cairn_policy_vtable),
    .check = tenant_limits_check,
};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "tenant-limits",
    .version = "1.0.0",
    .description = "Per-tenant caps on topic partitions, replication factor and retention (a topic policy)",
    .capabilities = CAIRN_CAP_POLICY,
    .config_keys = config_keys,
    .config_key_count = sizeof config_keys / sizeof config_keys[0],
    .init = tenant_limits_init,
    .fini = tenant_limits_fini,
    .policy = &policy_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
