/* A plugin built against the frozen v1.0 headers only (tests/abi/v1.0):
 * an authorizer denying every action on the topic plugin.abi_v1_0.deny.topic
 * (and CREATE on the cluster),
 * a quota asking for plugin.abi_v1_0.throttle.ms on every Produce, and an
 * audit sink appending one line per event to plugin.abi_v1_0.audit.file.
 * integration_test_abi_v1_0 loads it into the current cairnd. */
/* The same source is built against the frozen v1.2 headers as abi_v1_2. */
#ifndef ABI_PLUGIN_NAME
#define ABI_PLUGIN_NAME "abi_v1_0"
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/plugin.h"

/* Immutable after init except `audit`, whose writes hold audit_lock. */
struct abi_v1_0 {
    char deny_topic[256];
    int64_t throttle_ms;
    FILE *audit;
    pthread_mutex_t audit_lock;
};

static const struct cairn_config_key key_deny = {sizeof key_deny, "deny.topic", CAIRN_CONFIG_STRING, "",
                                                 "Topic every action is denied on."};
static const struct cairn_config_key key_throttle = {sizeof key_throttle, "throttle.ms", CAIRN_CONFIG_INT, "0",
                                                     "Throttle answered for every Produce."};
static const struct cairn_config_key key_audit = {sizeof key_audit, "audit.file", CAIRN_CONFIG_STRING, NULL,
                                                  "File receiving one line per audit event."};
static const struct cairn_config_key *const keys[] = {&key_deny, &key_throttle, &key_audit};

static int abi_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    if (host->abi_major != CAIRN_PLUGIN_ABI_MAJOR || !CAIRN_HAS_FIELD(host, struct cairn_host, submit_blocking)) {
        snprintf(err, errlen, "host table lacks v1.0 fields");
        return CAIRN_ERROR;
    }
    const char *deny, *audit;
    struct abi_v1_0 *a = calloc(1, sizeof *a);
    if (!a)
        return snprintf(err, errlen, "out of memory"), CAIRN_ERROR;
    if (host->config_string(host->ctx, "deny.topic", &deny, err, errlen) != CAIRN_OK ||
        host->config_int(host->ctx, "throttle.ms", &a->throttle_ms, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "audit.file", &audit, err, errlen) != CAIRN_OK) {
        free(a);
        return CAIRN_ERROR;
    }
    snprintf(a->deny_topic, sizeof a->deny_topic, "%s", deny);
    if (!(a->audit = fopen(audit, "a"))) {
        snprintf(err, errlen, "cannot open %s", audit);
        free(a);
        return CAIRN_ERROR;
    }
    pthread_mutex_init(&a->audit_lock, NULL);
    host->log(host->ctx, CAIRN_LOG_INFO, "built for ABI %d.%d, loaded by host ABI %d.%d", CAIRN_PLUGIN_ABI_MAJOR,
              CAIRN_PLUGIN_ABI_MINOR, host->abi_major, host->abi_minor);
    *instance = a;
    return CAIRN_OK;
}

static void abi_fini(void *instance)
{
    struct abi_v1_0 *a = instance;
    fclose(a->audit);
    pthread_mutex_destroy(&a->audit_lock);
    free(a);
}

static int abi_authorize(void *instance, const struct cairn_request_info *request,
                         const struct cairn_authz_action *const *actions, size_t count, uint8_t *results)
{
    struct abi_v1_0 *a = instance;
    (void)request;
    for (size_t i = 0; i < count; i++) {
        const struct cairn_authz_action *act = actions[i];
        /* CREATE on the cluster is denied so topic creation falls back to
         * the topic-level check. */
        bool denied = act->resource_type == CAIRN_RESOURCE_TOPIC
                          ? strcmp(act->resource_name, a->deny_topic) == 0
                          : act->resource_type == CAIRN_RESOURCE_CLUSTER && act->operation == CAIRN_OP_CREATE;
        results[i] = denied ? CAIRN_AUTHZ_DENIED : CAIRN_AUTHZ_ALLOWED;
    }
    return CAIRN_OK;
}

static int32_t abi_record(void *instance, const struct cairn_request_info *request, int32_t kind, double value,
                          int64_t now_ms)
{
    struct abi_v1_0 *a = instance;
    (void)request;
    (void)value;
    (void)now_ms;
    return kind == CAIRN_QUOTA_PRODUCE ? (int32_t)a->throttle_ms : 0;
}

static void abi_on_event(void *instance, const struct cairn_audit_event *ev)
{
    struct abi_v1_0 *a = instance;
    const struct cairn_request_info *rq = ev->request;
    pthread_mutex_lock(&a->audit_lock);
    fprintf(a->audit,
            "type=%d principal=%s:%s client_id=%s api_key=%d op=%d resource=%d:%s success=%d admin=%s error=%d\n",
            ev->type, rq ? rq->principal->type : "-", rq ? rq->principal->name : "-",
            rq && rq->client_id ? rq->client_id : "-", rq ? rq->api_key : -1, ev->operation, ev->resource_type,
            ev->resource_name ? ev->resource_name : "-", ev->success, ev->admin_operation ? ev->admin_operation : "-",
            ev->error_code);
    fflush(a->audit);
    pthread_mutex_unlock(&a->audit_lock);
}

static const struct cairn_authz_vtable authz = {sizeof authz, abi_authorize};
static const struct cairn_quota_vtable quota = {sizeof quota, abi_record};
static const struct cairn_audit_vtable audit = {sizeof audit, abi_on_event};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = ABI_PLUGIN_NAME,
    .version = "1.0.0",
    .description = "Built against the frozen ABI v1.0 headers.",
    .capabilities = CAIRN_CAP_AUTHORIZATION | CAIRN_CAP_QUOTA | CAIRN_CAP_AUDIT,
    .config_keys = keys,
    .config_key_count = sizeof keys / sizeof keys[0],
    .init = abi_init,
    .fini = abi_fini,
    .authorization = &authz,
    .quota = &quota,
    .audit = &audit,
};

CAIRN_PLUGIN_DEFINE(descriptor)
