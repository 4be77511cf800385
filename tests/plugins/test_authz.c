/* Test plugin: an authorizer that denies every operation on the topics in
 * plugin.test_authz.deny.topics, the groups in deny.groups, the
 * transactional ids in deny.transactional.ids and, with deny.cluster=true,
 * on the cluster (with deny.client.id set, only for requests from that
 * client id); an audit sink that appends one line per
 * event to plugin.test_authz.audit.file, and a quota that asks for
 * plugin.test_authz.throttle.ms on every Produce. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/plugin.h"

#define MAX_DENIED 16

/* Names of one resource type every operation is denied on. */
struct deny_list {
    char names[MAX_DENIED][250];
    int count;
};

/* Read-only after init; authorize runs on many threads at once. */
struct test_authz {
    const struct cairn_host *host;
    struct deny_list topics;
    struct deny_list groups;
    struct deny_list transactional_ids;
    int64_t deny_cluster;
    char deny_client_id[256]; /* "": the deny lists apply to every client */
    FILE *audit;
    pthread_mutex_t audit_lock;
    int64_t throttle_ms;
    struct cairn_metric *decisions;
    struct cairn_metric *denials;
    struct cairn_metric *blocking_runs;
};

static const struct cairn_config_key key_deny = {sizeof key_deny, "deny.topics", CAIRN_CONFIG_LIST, "",
                                                 "Topics every operation is denied on."};
static const struct cairn_config_key key_audit = {sizeof key_audit, "audit.file", CAIRN_CONFIG_STRING, "",
                                                  "File receiving one line per audit event; empty: none."};
static const struct cairn_config_key key_throttle = {sizeof key_throttle, "throttle.ms", CAIRN_CONFIG_INT, "0",
                                                     "Throttle asked for on every Produce."};
static const struct cairn_config_key key_buffer = {sizeof key_buffer, "buffer.size", CAIRN_CONFIG_SIZE, "64KiB",
                                                   "Exercises the size parser."};
static const struct cairn_config_key key_deny_groups = {sizeof key_deny_groups, "deny.groups", CAIRN_CONFIG_LIST, "",
                                                        "Groups every operation is denied on."};
static const struct cairn_config_key key_deny_txn_ids = {sizeof key_deny_txn_ids, "deny.transactional.ids",
                                                         CAIRN_CONFIG_LIST, "",
                                                         "Transactional ids every operation is denied on."};
static const struct cairn_config_key key_deny_cluster = {sizeof key_deny_cluster, "deny.cluster", CAIRN_CONFIG_INT, "0",
                                                         "1: every operation on the cluster is denied."};
/* Lets one broker hold state made by an allowed client that a denied
 * client then asks about, so each denial is checked against valid input. */
static const struct cairn_config_key key_deny_client_id = {
    sizeof key_deny_client_id, "deny.client.id", CAIRN_CONFIG_STRING, "",
    "When set, the deny lists apply only to requests with this client id."};
static const struct cairn_config_key *const keys[] = {&key_deny,         &key_audit,         &key_throttle,
                                                      &key_buffer,       &key_deny_groups,   &key_deny_txn_ids,
                                                      &key_deny_cluster, &key_deny_client_id};

static void deny_list_parse(struct deny_list *l, const char *csv)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", csv);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && l->count < MAX_DENIED; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (*tok)
            snprintf(l->names[l->count++], sizeof l->names[0], "%s", tok);
    }
}

static bool deny_list_has(const struct deny_list *l, const char *name)
{
    for (int d = 0; d < l->count; d++)
        if (name && strcmp(name, l->names[d]) == 0)
            return true;
    return false;
}

/* Runs on a host blocking-work thread: proves submit_blocking works. */
static void count_blocking_run(void *arg)
{
    struct test_authz *t = arg;
    t->host->metric_set(t->blocking_runs, 1);
}

static int authz_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct test_authz *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    t->host = host;
    pthread_mutex_init(&t->audit_lock, NULL);
    const char *deny = "", *audit = "", *deny_groups = "", *deny_txn_ids = "", *deny_client_id = "";
    uint64_t buffer = 0;
    if (host->config_string(host->ctx, "deny.topics", &deny, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "deny.groups", &deny_groups, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "deny.transactional.ids", &deny_txn_ids, err, errlen) != CAIRN_OK ||
        host->config_int(host->ctx, "deny.cluster", &t->deny_cluster, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "deny.client.id", &deny_client_id, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "audit.file", &audit, err, errlen) != CAIRN_OK ||
        host->config_int(host->ctx, "throttle.ms", &t->throttle_ms, err, errlen) != CAIRN_OK ||
        host->config_size(host->ctx, "buffer.size", &buffer, err, errlen) != CAIRN_OK) {
        free(t);
        return CAIRN_ERROR;
    }
    deny_list_parse(&t->topics, deny);
    deny_list_parse(&t->groups, deny_groups);
    deny_list_parse(&t->transactional_ids, deny_txn_ids);
    snprintf(t->deny_client_id, sizeof t->deny_client_id, "%s", deny_client_id);
    if (audit[0] && !(t->audit = fopen(audit, "a"))) {
        snprintf(err, errlen, "cannot open audit.file %s", audit);
        free(t);
        return CAIRN_ERROR;
    }
    t->decisions = host->counter(host->ctx, "decisions_total", "Authorization decisions made.");
    t->denials = host->counter(host->ctx, "denials_total", "Authorization decisions that denied.");
    t->blocking_runs = host->gauge(host->ctx, "blocking_runs", "Blocking jobs that ran.");
    if (host->submit_blocking(host->ctx, count_blocking_run, NULL, t) != CAIRN_OK) {
        snprintf(err, errlen, "submit_blocking refused work during init");
        if (t->audit)
            fclose(t->audit);
        free(t);
        return CAIRN_ERROR;
    }
    host->log(host->ctx, CAIRN_LOG_INFO, "denying %d topic(s); buffer.size=%llu", t->topics.count,
              (unsigned long long)buffer);
    *instance = t;
    return CAIRN_OK;
}

static void authz_fini(void *instance)
{
    struct test_authz *t = instance;
    if (t->audit)
        fclose(t->audit);
    pthread_mutex_destroy(&t->audit_lock);
    free(t);
}

static int authz_authorize(void *instance, const struct cairn_request_info *request,
                           const struct cairn_authz_action *const *actions, size_t count, uint8_t *results)
{
    struct test_authz *t = instance;
    bool exempt = t->deny_client_id[0] &&
                  !(request && request->client_id && strcmp(request->client_id, t->deny_client_id) == 0);
    for (size_t i = 0; i < count; i++) {
        results[i] = CAIRN_AUTHZ_ALLOWED;
        if (exempt)
            continue;
        /* The metrics count topic decisions only, as before the other lists. */
        switch (actions[i]->resource_type) {
        case CAIRN_RESOURCE_GROUP:
            if (deny_list_has(&t->groups, actions[i]->resource_name))
                results[i] = CAIRN_AUTHZ_DENIED;
            continue;
        case CAIRN_RESOURCE_TRANSACTIONAL_ID:
            if (deny_list_has(&t->transactional_ids, actions[i]->resource_name))
                results[i] = CAIRN_AUTHZ_DENIED;
            continue;
        case CAIRN_RESOURCE_CLUSTER:
            if (t->deny_cluster)
                results[i] = CAIRN_AUTHZ_DENIED;
            continue;
        case CAIRN_RESOURCE_TOPIC:
            break;
        default:
            continue;
        }
        if (deny_list_has(&t->topics, actions[i]->resource_name))
            results[i] = CAIRN_AUTHZ_DENIED;
        t->host->metric_add(t->decisions, 1);
        if (results[i] == CAIRN_AUTHZ_DENIED)
            t->host->metric_add(t->denials, 1);
    }
    return CAIRN_OK;
}

static void audit_on_event(void *instance, const struct cairn_audit_event *ev)
{
    struct test_authz *t = instance;
    if (!t->audit)
        return;
    const char *type = ev->type == CAIRN_AUDIT_ADMIN           ? "ADMIN"
                       : ev->type == CAIRN_AUDIT_AUTHORIZATION ? "AUTHORIZATION"
                                                               : "AUTHENTICATION";
    pthread_mutex_lock(&t->audit_lock);
    fprintf(t->audit, "%s op=%s res=%s allowed=%d principal=%s:%s error=%d details=%s\n", type,
            ev->admin_operation ? ev->admin_operation : "-", ev->resource_name ? ev->resource_name : "-",
            ev->success ? 1 : 0, ev->request && ev->request->principal ? ev->request->principal->type : "-",
            ev->request && ev->request->principal ? ev->request->principal->name : "-", ev->error_code,
            ev->details_json ? ev->details_json : "-");
    fflush(t->audit);
    pthread_mutex_unlock(&t->audit_lock);
}

static int32_t quota_record(void *instance, const struct cairn_request_info *request, int32_t kind, double value,
                            int64_t now_ms)
{
    struct test_authz *t = instance;
    (void)request, (void)value, (void)now_ms;
    return kind == CAIRN_QUOTA_PRODUCE ? (int32_t)t->throttle_ms : 0;
}

static const struct cairn_authz_vtable authz_table = {sizeof authz_table, authz_authorize};
static const struct cairn_audit_vtable audit_table = {sizeof audit_table, audit_on_event};
static const struct cairn_quota_vtable quota_table = {sizeof quota_table, quota_record};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "test_authz",
    .version = "1.0",
    .description = "Denies configured topics; audits to a file; fixed produce throttle.",
    .capabilities = CAIRN_CAP_AUTHORIZATION | CAIRN_CAP_AUDIT | CAIRN_CAP_QUOTA,
    .config_keys = keys,
    .config_key_count = sizeof keys / sizeof keys[0],
    .init = authz_init,
    .fini = authz_fini,
    .authorization = &authz_table,
    .quota = &quota_table,
    .audit = &audit_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
