/* The audit plugin: writes authentication, authorization and admin events
 * as JSON Lines. io threads format and queue events; one writer thread of
 * the plugin's own does the disk work. */
#include "audit_internal.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_WRITER_BATCH 256

/* One loaded instance. config and host are read-only after init; queue
 * has its own lock; sink belongs to the writer thread while it runs;
 * host_usable is guarded by report_lock. */
struct audit_plugin {
    const struct cairn_host *host;
    struct audit_config config;
    struct audit_queue queue;
    struct audit_sink sink;
    pthread_t writer;
    struct cairn_metric *dropped_events;
    pthread_mutex_t report_lock;
    bool host_usable;
};

/* Logs through the host while that is allowed (before fini), to stderr
 * afterwards: the writer may still hit errors while fini drains it. */
static void audit_report(struct audit_plugin *plugin, const char *fmt, ...) CAIRN_PRINTF_FORMAT(2, 3);
static void audit_report(struct audit_plugin *plugin, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&plugin->report_lock);
    if (plugin->host_usable)
        plugin->host->log(plugin->host->ctx, CAIRN_LOG_ERROR, "%s", message);
    else
        fprintf(stderr, "audit: %s\n", message);
    pthread_mutex_unlock(&plugin->report_lock);
}

static void *audit_writer_main(void *arg)
{
    struct audit_plugin *plugin = arg;
    struct audit_line batch[AUDIT_WRITER_BATCH];
    char err[512];
    size_t n;
    while ((n = audit_queue_pop(&plugin->queue, batch, AUDIT_WRITER_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            if (audit_sink_write(&plugin->sink, batch[i].text, batch[i].len, err, sizeof(err)) != CAIRN_OK)
                audit_report(plugin, "writing %s: %s", plugin->config.file_path, err);
            free(batch[i].text);
        }
        if (audit_sink_flush(&plugin->sink, err, sizeof(err)) != CAIRN_OK)
            audit_report(plugin, "writing %s: %s", plugin->config.file_path, err);
    }
    return NULL;
}

static void audit_count_drop(struct audit_plugin *plugin)
{
    if (plugin->dropped_events)
        plugin->host->metric_add(plugin->dropped_events, 1);
}

static void audit_on_event(void *instance, const struct cairn_audit_event *event)
{
    struct audit_plugin *plugin = instance;
    if (!event || !CAIRN_HAS_FIELD(event, struct cairn_audit_event, request))
        return;
    const char *resource_name = NULL;
    if (event->type != CAIRN_AUDIT_AUTHENTICATION && CAIRN_HAS_FIELD(event, struct cairn_audit_event, resource_name))
        resource_name = event->resource_name;
    if (!audit_filter_accepts(&plugin->config.filter, event->type, resource_name))
        return;

    struct audit_line line;
    int64_t fallback_ms = event->timestamp_ms > 0 ? 0 : plugin->host->wall_clock_ms(plugin->host->ctx);
    line.text = audit_event_format(event, fallback_ms, &line.len);
    if (!line.text) {
        /* An event type newer than this plugin is not for it; anything
         * else failing here is memory. */
        if (event->type >= CAIRN_AUDIT_AUTHENTICATION && event->type <= CAIRN_AUDIT_ADMIN)
            audit_count_drop(plugin);
        return;
    }
    if (audit_queue_push(&plugin->queue, line, !plugin->config.drop_when_full) != AUDIT_PUSH_OK) {
        free(line.text);
        audit_count_drop(plugin);
    }
}

static int audit_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct audit_plugin *plugin = calloc(1, sizeof(*plugin));
    if (!plugin) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    plugin->host = host;
    if (audit_config_load(host, &plugin->config, err, errlen) != CAIRN_OK) {
        free(plugin);
        return CAIRN_ERROR;
    }
    char why[400];
    if (audit_sink_open(&plugin->sink, &plugin->config, why, sizeof(why)) != CAIRN_OK) {
        snprintf(err, errlen, "config %s: %s", plugin->config.sink == AUDIT_SINK_FILE ? "file.path" : "sink", why);
        audit_config_free(&plugin->config);
        free(plugin);
        return CAIRN_ERROR;
    }
    if (audit_queue_init(&plugin->queue, (size_t)plugin->config.queue_capacity) != CAIRN_OK) {
        snprintf(err, errlen, "out of memory for a queue of %lld events", (long long)plugin->config.queue_capacity);
        char ignored[64];
        audit_sink_close(&plugin->sink, ignored, sizeof(ignored));
        audit_config_free(&plugin->config);
        free(plugin);
        return CAIRN_ERROR;
    }
    plugin->dropped_events = host->counter(host->ctx, "dropped_events", "Audit events lost because the queue was full");
    pthread_mutex_init(&plugin->report_lock, NULL);
    plugin->host_usable = true;
    /* The writer takes no signals: the broker's threads handle them, and a
     * closed pipe sink then fails with EPIPE instead of raising SIGPIPE. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int rc = pthread_create(&plugin->writer, NULL, audit_writer_main, plugin);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the writer thread: %s", strerror(rc));
        char ignored[64];
        audit_queue_destroy(&plugin->queue);
        audit_sink_close(&plugin->sink, ignored, sizeof(ignored));
        audit_config_free(&plugin->config);
        pthread_mutex_destroy(&plugin->report_lock);
        free(plugin);
        return CAIRN_ERROR;
    }
    host->log(host->ctx, CAIRN_LOG_INFO, "audit events go to %s",
              plugin->config.sink == AUDIT_SINK_STDOUT ? "stdout" : plugin->config.file_path);
    *instance = plugin;
    return CAIRN_OK;
}

static void audit_fini(void *instance)
{
    struct audit_plugin *plugin = instance;
    if (!plugin)
        return;
    pthread_mutex_lock(&plugin->report_lock);
    plugin->host_usable = false;
    pthread_mutex_unlock(&plugin->report_lock);
    /* The writer drains every queued line before it sees the close. */
    audit_queue_close(&plugin->queue);
    pthread_join(plugin->writer, NULL);
    char err[512];
    if (audit_sink_close(&plugin->sink, err, sizeof(err)) != CAIRN_OK)
        fprintf(stderr, "audit: closing %s: %s\n", plugin->config.file_path, err);
    audit_queue_destroy(&plugin->queue);
    audit_config_free(&plugin->config);
    pthread_mutex_destroy(&plugin->report_lock);
    free(plugin);
}

#define AUDIT_KEY(var, key_name, key_type, default_text, doc_text)                                                     \
    static const struct cairn_config_key var = {                                                                       \
        .struct_size = sizeof(struct cairn_config_key),                                                                \
        .name = key_name,                                                                                              \
        .type = key_type,                                                                                              \
        .default_value = default_text,                                                                                 \
        .doc = doc_text,                                                                                               \
    }

AUDIT_KEY(audit_key_sink, "sink", CAIRN_CONFIG_STRING, "file", "Where events go: file or stdout.");
AUDIT_KEY(audit_key_file_path, "file.path", CAIRN_CONFIG_STRING, "audit.log",
          "Audit log file, relative to the broker's working directory unless absolute.");
AUDIT_KEY(audit_key_max_bytes, "file.max.bytes", CAIRN_CONFIG_SIZE, "100MiB",
          "Size at which the audit log is rotated to <file.path>.1.");
AUDIT_KEY(audit_key_max_files, "file.max.files", CAIRN_CONFIG_INT, "10",
          "Rotated files kept (<file.path>.1 ... .N); 0 keeps none.");
AUDIT_KEY(audit_key_queue_capacity, "queue.capacity", CAIRN_CONFIG_INT, "10000",
          "Events buffered between request threads and the writer thread.");
AUDIT_KEY(audit_key_queue_policy, "queue.full.policy", CAIRN_CONFIG_STRING, "block",
          "When the queue is full: block the request thread, or drop the event and count it.");
AUDIT_KEY(audit_key_include_types, "include.types", CAIRN_CONFIG_LIST, "",
          "Event types written (authentication, authorization, admin); empty means all.");
AUDIT_KEY(audit_key_exclude_types, "exclude.types", CAIRN_CONFIG_LIST, "", "Event types never written.");
AUDIT_KEY(audit_key_include_resources, "include.resources", CAIRN_CONFIG_LIST, "",
          "Resource name prefixes written; empty means all.");
AUDIT_KEY(audit_key_exclude_resources, "exclude.resources", CAIRN_CONFIG_LIST, "",
          "Resource name prefixes never written.");

static const struct cairn_config_key *const audit_config_keys[] = {
    &audit_key_sink,
    &audit_key_file_path,
    &audit_key_max_bytes,
    &audit_key_max_files,
    &audit_key_queue_capacity,
    &audit_key_queue_policy,
    &audit_key_include_types,
    &audit_key_exclude_types,
    &audit_key_include_resources,
    &audit_key_exclude_resources,
};

static const struct cairn_audit_vtable audit_vtable = {
    .struct_size = sizeof(struct cairn_audit_vtable),
    .on_event = audit_on_event,
};

static const struct cairn_plugin_descriptor audit_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "audit",
    .version = "1.0.0",
    .description = "Writes authentication, authorization and admin events as JSON Lines",
    .capabilities = CAIRN_CAP_AUDIT,
    .config_keys = audit_config_keys,
    .config_key_count = sizeof(audit_config_keys) / sizeof(audit_config_keys[0]),
    .init = audit_init,
    .fini = audit_fini,
    .audit = &audit_vtable,
};

CAIRN_PLUGIN_DEFINE(audit_descriptor)
