/* Private structures of the plugin module. */
#ifndef CAIRN_PLUGIN_PLUGIN_INTERNAL_H
#define CAIRN_PLUGIN_PLUGIN_INTERNAL_H

#include "plugin/plugin_host.h"

/* One declared config key with its effective value, parsed at load time so
 * the config_* services only look up. */
struct plugin_config_value {
    const char *name; /* the plugin's declared name (plugin memory, valid until unload) */
    int32_t type;     /* enum cairn_config_type */
    char *text;       /* set value or default; NULL when unset with no default */
    int64_t integer;  /* INT */
    uint64_t size;    /* SIZE */
    bool boolean;     /* BOOL */
};

/* One loaded plugin. Written during load and init on the main thread,
 * read-only afterwards until fini. */
struct loaded_plugin {
    char name[64];
    char path[4096];
    void *handle;                               /* dlopen handle */
    const struct cairn_plugin_descriptor *desc; /* lives in the plugin's memory */
    void *instance;
    bool initialised;
    struct cairn_host host; /* the table handed to init */
    struct plugin_host *owner;
    struct plugin_config_value *config;
    size_t config_count;
    char metric_prefix[96]; /* cairn_plugin_<name>_ */
};

/* plugin_services.c */
void plugin_services_fill(struct loaded_plugin *p);
/* Parses value as a size: digits, optionally K/M/G (x1000) or KiB/MiB/GiB (x1024). */
int plugin_parse_size(const char *text, uint64_t *out);
int plugin_parse_int(const char *text, int64_t *out);
int plugin_parse_bool(const char *text, bool *out);

/* plugin_acl.c: the acl_subscribe service. */
struct plugin_acl_listener {
    struct loaded_plugin *plugin;
    struct cairn_acl_listener listener; /* copied, sized to the host's struct */
};
int plugin_acl_subscribe(void *ctx, const struct cairn_acl_listener *listener);
/* plugin_quota.c: the quota_subscribe service. */
int plugin_quota_subscribe(void *ctx, const struct cairn_quota_listener *listener);

/* plugin_pool.c: the submit_blocking threads. */
struct plugin_pool;
int plugin_pool_start(int threads, struct plugin_pool **out);
int plugin_pool_submit(struct plugin_pool *pool, void (*work)(void *), void (*done)(void *), void *arg);
/* Refuses new work (CAIRN_RETRIABLE from then on), runs what is queued and
 * joins the threads; the pool stays allocated for late submitters. */
void plugin_pool_stop(struct plugin_pool *pool);
void plugin_pool_free(struct plugin_pool *pool);

#endif
