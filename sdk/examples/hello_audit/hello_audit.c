/* hello_audit: the smallest useful audit plugin. Appends one line per
 * audit event to the file named by plugin.hello_audit.file.
 *
 *   plugins=hello_audit
 *   plugin.hello_audit.file=/var/log/cairn/audit.log */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cairn/plugin.h>

struct hello_audit {
    FILE *out;
    pthread_mutex_t lock; /* on_event runs on many io threads at once */
};

static const struct cairn_config_key file_key = {
    .struct_size = sizeof file_key,
    .name = "file",
    .type = CAIRN_CONFIG_STRING,
    .default_value = NULL, /* required */
    .doc = "File the audit lines are appended to.",
};
static const struct cairn_config_key *const config_keys[] = {&file_key};

static int hello_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *path;
    if (host->config_string(host->ctx, "file", &path, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    struct hello_audit *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    h->out = fopen(path, "a");
    if (!h->out) {
        snprintf(err, errlen, "cannot open %s for appending", path);
        free(h);
        return CAIRN_ERROR;
    }
    pthread_mutex_init(&h->lock, NULL);
    host->log(host->ctx, CAIRN_LOG_INFO, "writing audit events to %s", path);
    *instance = h;
    return CAIRN_OK;
}

static void hello_fini(void *instance)
{
    struct hello_audit *h = instance;
    fclose(h->out);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static const char *type_name(int32_t type)
{
    switch (type) {
    case CAIRN_AUDIT_AUTHENTICATION:
        return "AUTHENTICATION";
    case CAIRN_AUDIT_AUTHORIZATION:
        return "AUTHORIZATION";
    case CAIRN_AUDIT_ADMIN:
        return "ADMIN";
    default:
        return "UNKNOWN";
    }
}

static void hello_on_event(void *instance, const struct cairn_audit_event *ev)
{
    struct hello_audit *h = instance;
    const struct cairn_principal *who = ev->request ? ev->request->principal : NULL;
    /* A short write under a lock is fine for an example; a real sink would
     * queue the line and write on a thread of its own. */
    pthread_mutex_lock(&h->lock);
    fprintf(h->out, "%lld %s principal=%s:%s operation=%s resource=%s success=%s error=%d details=%s\n",
            (long long)ev->timestamp_ms, type_name(ev->type), who ? who->type : "-", who ? who->name : "-",
            ev->admin_operation ? ev->admin_operation : "-", ev->resource_name ? ev->resource_name : "-",
            ev->success ? "true" : "false", ev->error_code, ev->details_json ? ev->details_json : "{}");
    fflush(h->out);
    pthread_mutex_unlock(&h->lock);
}

static const struct cairn_audit_vtable audit_table = {
    .struct_size = sizeof audit_table,
    .on_event = hello_on_event,
};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "hello_audit",
    .version = "1.0.0",
    .description = "Appends one line per audit event to a file.",
    .capabilities = CAIRN_CAP_AUDIT,
    .config_keys = config_keys,
    .config_key_count = sizeof config_keys / sizeof config_keys[0],
    .init = hello_init,
    .fini = hello_fini,
    .audit = &audit_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
