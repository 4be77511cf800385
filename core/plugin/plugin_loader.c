/* Loading plugins: find the file, check the descriptor, bind the config,
 * init; and the reverse at stop. Main thread only. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_registry.h"
#include "plugin/plugin_internal.h"
#include "util/logger.h"

#ifndef CAIRN_DEFAULT_PLUGIN_PATH
#define CAIRN_DEFAULT_PLUGIN_PATH "/usr/local/lib/cairn/plugins"
#endif

/* Sizes of the ABI 1.0 structs: the smallest a plugin may hand over. They
 * stay fixed when later minors append fields. */
#define DESCRIPTOR_V1_0_SIZE (offsetof(struct cairn_plugin_descriptor, remote_storage) + sizeof(void *))
#define CONFIG_KEY_V1_0_SIZE (offsetof(struct cairn_config_key, doc) + sizeof(void *))
#define AUTHN_V1_0_SIZE (offsetof(struct cairn_authn_vtable, map_tls_principal) + sizeof(void *))
#define AUTHZ_V1_0_SIZE (offsetof(struct cairn_authz_vtable, authorize) + sizeof(void *))
#define QUOTA_V1_0_SIZE (offsetof(struct cairn_quota_vtable, record) + sizeof(void *))
#define AUDIT_V1_0_SIZE (offsetof(struct cairn_audit_vtable, on_event) + sizeof(void *))
#define REMOTE_V1_0_SIZE (offsetof(struct cairn_remote_storage_vtable, delete_segment) + sizeof(void *))
#define POLICY_V1_3_SIZE (offsetof(struct cairn_policy_vtable, check) + sizeof(void *))
/* A table claiming more than this is garbage, not a newer minor. */
#define TABLE_MAX_SIZE 65536u

#ifndef CAIRN_BUILD_TREE
#define CAIRN_BUILD_TREE ""
#endif
#ifndef CAIRN_INSTALL_LIBDIR
#define CAIRN_INSTALL_LIBDIR "lib"
#endif

static char default_path[PATH_MAX * 2 + 64];
static pthread_once_t default_path_once = PTHREAD_ONCE_INIT;

/* From the executable's own location (Linux /proc/self/exe): the build
 * tree's plugins/ when it runs inside the build tree, else
 * <exe dir>/../<libdir>/cairn/plugins (bin/cairnd of an install prefix);
 * then the configured install location. */
static void compute_default_path(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t tree_len = strlen(CAIRN_BUILD_TREE);
    if (n <= 0) {
        snprintf(default_path, sizeof default_path, "%s", CAIRN_DEFAULT_PLUGIN_PATH);
        return;
    }
    exe[n] = '\0';
    if (tree_len > 0 && strncmp(exe, CAIRN_BUILD_TREE, tree_len) == 0 && exe[tree_len] == '/') {
        snprintf(default_path, sizeof default_path, "%s/plugins:%s", CAIRN_BUILD_TREE, CAIRN_DEFAULT_PLUGIN_PATH);
        return;
    }
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(default_path, sizeof default_path, "%s/../%s/cairn/plugins:%s", exe, CAIRN_INSTALL_LIBDIR,
             CAIRN_DEFAULT_PLUGIN_PATH);
}

const char *plugin_host_default_path(void)
{
    pthread_once(&default_path_once, compute_default_path);
    return default_path;
}

static bool plugin_name_valid(const char *name)
{
    if (!name[0] || strlen(name) >= 64)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* <dir>/<name>.so in each plugin.path directory; err lists what was tried. */
static int find_plugin_file(struct loaded_plugin *p, const char *search_path, char *err, size_t errlen)
{
    char tried[2048] = "";
    size_t used = 0;
    const char *s = search_path;
    while (s && *s) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        if (len > 0) {
            int n = snprintf(p->path, sizeof p->path, "%.*s/%s.so", (int)len, s, p->name);
            if (n > 0 && (size_t)n < sizeof p->path) {
                if (access(p->path, F_OK) == 0)
                    return 0;
                if (used < sizeof tried) {
                    int w = snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", p->path);
                    if (w > 0)
                        used += (size_t)w;
                }
            }
        }
        s = colon ? colon + 1 : NULL;
    }
    snprintf(err, errlen, "plugin '%s': %s.so not found (searched: %s)", p->name, p->name,
             used ? tried : "no directories; set plugin.path");
    return -1;
}

static const char *type_name(int32_t type)
{
    switch (type) {
    case CAIRN_CONFIG_STRING:
        return "a string";
    case CAIRN_CONFIG_INT:
        return "an integer";
    case CAIRN_CONFIG_BOOL:
        return "true or false";
    case CAIRN_CONFIG_SIZE:
        return "a size (bytes, optionally with K, M, G, KiB, MiB or GiB)";
    case CAIRN_CONFIG_LIST:
        return "a comma-separated list";
    case CAIRN_CONFIG_PASSWORD:
        return "a password";
    default:
        return "an unknown type";
    }
}

static int parse_value(struct plugin_config_value *v)
{
    switch (v->type) {
    case CAIRN_CONFIG_INT:
        return plugin_parse_int(v->text, &v->integer);
    case CAIRN_CONFIG_BOOL:
        return plugin_parse_bool(v->text, &v->boolean);
    case CAIRN_CONFIG_SIZE:
        return plugin_parse_size(v->text, &v->size);
    default:
        return 0;
    }
}

/* Binds plugin.<name>.* entries to the declared keys. */
/* The unknown-key line names the keys the plugin does declare, so a typo
 * is found without reading its source. */
static void unknown_key_error(const struct loaded_plugin *p, const char *key, char *err, size_t errlen)
{
    int n = snprintf(err, errlen, "plugin '%s': unknown config key %s; it declares ", p->name, key);
    for (size_t j = 0; j < p->config_count && n >= 0 && (size_t)n < errlen; j++)
        n += snprintf(err + n, errlen - (size_t)n, "%s%s", j ? ", " : "", p->config[j].name);
    if (p->config_count == 0 && n >= 0 && (size_t)n < errlen)
        n += snprintf(err + n, errlen - (size_t)n, "no keys");
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n,
                 " (each as plugin.%s.<key>; cairnd --print-plugin-docs lists them "
                 "with types and defaults)",
                 p->name);
}

static int bind_config(struct loaded_plugin *p, const struct broker_config *cfg, char *err, size_t errlen)
{
    const struct cairn_plugin_descriptor *d = p->desc;
    if (d->config_key_count > 0 && !d->config_keys) {
        snprintf(err, errlen, "plugin '%s': declares %zu config keys but no key table", p->name, d->config_key_count);
        return -1;
    }
    if (d->config_key_count > 1024) {
        snprintf(err, errlen, "plugin '%s': declares an implausible %zu config keys", p->name, d->config_key_count);
        return -1;
    }
    p->config = calloc(d->config_key_count + 1, sizeof *p->config);
    if (!p->config) {
        snprintf(err, errlen, "plugin '%s': out of memory", p->name);
        return -1;
    }
    for (size_t i = 0; i < d->config_key_count; i++) {
        const struct cairn_config_key *k = d->config_keys[i];
        if (!k || k->struct_size < CONFIG_KEY_V1_0_SIZE || !k->name || !k->name[0] || k->type < CAIRN_CONFIG_STRING ||
            k->type > CAIRN_CONFIG_PASSWORD) {
            snprintf(err, errlen, "plugin '%s': config key #%zu of its descriptor is malformed", p->name, i);
            return -1;
        }
        p->config[i].name = k->name;
        p->config[i].type = k->type;
        p->config_count = i + 1;
    }

    char prefix[80];
    snprintf(prefix, sizeof prefix, "plugin.%s.", p->name);
    size_t plen = strlen(prefix);
    struct config_kv *set = NULL;
    size_t set_count = 0;
    if (config_keys_with_prefix(cfg, prefix, &set, &set_count) != 0) {
        snprintf(err, errlen, "plugin '%s': out of memory", p->name);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < set_count && rc == 0; i++) {
        /* Broker keys that share the prefix (plugin.path) are not the plugin's. */
        if (config_broker_key_index(set[i].key) >= 0)
            continue;
        const char *short_name = set[i].key + plen;
        struct plugin_config_value *v = NULL;
        for (size_t j = 0; j < p->config_count; j++)
            if (strcmp(p->config[j].name, short_name) == 0)
                v = &p->config[j];
        if (!v) {
            unknown_key_error(p, set[i].key, err, errlen);
            rc = -1;
            break;
        }
        free(v->text);
        v->text = strdup(set[i].value ? set[i].value : "");
        if (!v->text) {
            snprintf(err, errlen, "plugin '%s': out of memory", p->name);
            rc = -1;
        }
    }
    free(set);
    if (rc != 0)
        return -1;

    for (size_t i = 0; i < p->config_count; i++) {
        struct plugin_config_value *v = &p->config[i];
        const struct cairn_config_key *k = d->config_keys[i];
        if (!v->text && k->default_value) {
            v->text = strdup(k->default_value);
            if (!v->text) {
                snprintf(err, errlen, "plugin '%s': out of memory", p->name);
                return -1;
            }
        }
        if (!v->text) {
            snprintf(err, errlen, "plugin '%s': required config key plugin.%s.%s is not set", p->name, p->name,
                     v->name);
            return -1;
        }
        if (parse_value(v) != 0) {
            bool secret = v->type == CAIRN_CONFIG_PASSWORD;
            snprintf(err, errlen, "plugin '%s': invalid value '%s' for plugin.%s.%s: expected %s", p->name,
                     secret ? "[hidden]" : v->text, p->name, v->name, type_name(v->type));
            return -1;
        }
    }
    return 0;
}

static bool table_ok(const void *table, size_t min_size)
{
    uint32_t size;
    memcpy(&size, table, sizeof size);
    return size >= min_size && size <= TABLE_MAX_SIZE;
}

/* Capability bits must match the tables exactly; each table must be at
 * least its 1.0 size and carry its mandatory functions. */
static int check_capabilities(struct loaded_plugin *p, char *err, size_t errlen)
{
    const struct cairn_plugin_descriptor *d = p->desc;
    /* A descriptor built for 1.0-1.2 ends before the policy table. */
    const struct cairn_policy_vtable *policy = CAIRN_HAS_FIELD(d, struct cairn_plugin_descriptor, policy) ? d->policy
                                                                                                          : NULL;
    const struct {
        uint32_t bit;
        const char *what;
        const void *table;
        size_t min_size;
    } caps[] = {
        {CAIRN_CAP_AUTHENTICATION, "authentication", d->authentication, AUTHN_V1_0_SIZE},
        {CAIRN_CAP_AUTHORIZATION, "authorization", d->authorization, AUTHZ_V1_0_SIZE},
        {CAIRN_CAP_QUOTA, "quota", d->quota, QUOTA_V1_0_SIZE},
        {CAIRN_CAP_AUDIT, "audit", d->audit, AUDIT_V1_0_SIZE},
        {CAIRN_CAP_REMOTE_STORAGE, "remote storage", d->remote_storage, REMOTE_V1_0_SIZE},
        {CAIRN_CAP_POLICY, "policy", policy, POLICY_V1_3_SIZE},
    };
    uint32_t known = 0;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        known |= caps[i].bit;
        bool claimed = (d->capabilities & caps[i].bit) != 0;
        if (claimed != (caps[i].table != NULL)) {
            snprintf(err, errlen, "plugin '%s': capability %s is %s but its table is %s", p->name, caps[i].what,
                     claimed ? "claimed" : "not claimed", caps[i].table ? "present" : "missing");
            return -1;
        }
        if (caps[i].table && !table_ok(caps[i].table, caps[i].min_size)) {
            snprintf(err, errlen, "plugin '%s': the %s table has an invalid struct_size", p->name, caps[i].what);
            return -1;
        }
    }
    const char *missing = NULL;
    if (d->authorization && !d->authorization->authorize)
        missing = "authorization.authorize";
    if (d->quota && !d->quota->record)
        missing = "quota.record";
    if (d->audit && !d->audit->on_event)
        missing = "audit.on_event";
    if (d->authentication && d->authentication->sasl_mechanisms &&
        (!d->authentication->sasl_start || !d->authentication->sasl_step))
        missing = "authentication.sasl_start/sasl_step";
    if (d->remote_storage && (!d->remote_storage->copy_segment || !d->remote_storage->fetch_segment ||
                              !d->remote_storage->fetch_index || !d->remote_storage->delete_segment))
        missing = "a remote storage function";
    if (policy && !policy->check)
        missing = "policy.check";
    if (missing) {
        snprintf(err, errlen, "plugin '%s': %s is NULL", p->name, missing);
        return -1;
    }
    if (d->capabilities & ~known)
        logger_warn("plugin", "plugin '%s' claims capabilities 0x%x this broker does not know; ignoring them", p->name,
                    d->capabilities & ~known);
    return 0;
}

static int check_descriptor(struct loaded_plugin *p, char *err, size_t errlen)
{
    const struct cairn_plugin_descriptor *d = p->desc;
    if (!d) {
        snprintf(err, errlen, "plugin '%s': %s returned no descriptor", p->name, CAIRN_PLUGIN_ENTRY_SYMBOL);
        return -1;
    }
    if (d->struct_size < DESCRIPTOR_V1_0_SIZE || d->struct_size > TABLE_MAX_SIZE) {
        snprintf(err, errlen, "plugin '%s': descriptor struct_size %u is invalid (ABI 1.0 needs at least %zu)", p->name,
                 d->struct_size, (size_t)DESCRIPTOR_V1_0_SIZE);
        return -1;
    }
    if (d->abi_major != CAIRN_PLUGIN_ABI_MAJOR) {
        snprintf(err, errlen,
                 "plugin '%s': ABI mismatch: built for plugin ABI %u.%u, this broker provides %d.%d (major versions "
                 "must match)",
                 p->name, d->abi_major, d->abi_minor, CAIRN_PLUGIN_ABI_MAJOR, CAIRN_PLUGIN_ABI_MINOR);
        return -1;
    }
    if (!d->name || strcmp(d->name, p->name) != 0) {
        snprintf(err, errlen, "plugin '%s': %s names itself '%s'; the file name and the descriptor name must agree",
                 p->name, p->path, d->name ? d->name : "(null)");
        return -1;
    }
    if (!d->init || !d->fini) {
        snprintf(err, errlen, "plugin '%s': init or fini is NULL", p->name);
        return -1;
    }
    return check_capabilities(p, err, errlen);
}

static void unload(struct loaded_plugin *p)
{
    if (!p)
        return;
    if (p->initialised)
        p->desc->fini(p->instance);
    for (size_t i = 0; i < p->config_count; i++)
        free(p->config[i].text);
    free(p->config);
    /* ASan needs the code mapped to symbolise leaks found at exit. */
#ifndef CAIRN_KEEP_PLUGINS_MAPPED
    if (p->handle)
        dlclose(p->handle);
#endif
    free(p);
}

/* The plugin's file, descriptor and config bound to its declared keys;
 * nothing of the plugin runs but its entry function. */
static int load_descriptor(const struct broker_config *cfg, const char *name, const char *search_path,
                           struct loaded_plugin **out, char *err, size_t errlen)
{
    struct loaded_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "plugin '%s': out of memory", name);
        return -1;
    }
    *out = p;
    snprintf(p->name, sizeof p->name, "%s", name);
    if (find_plugin_file(p, search_path, err, errlen) != 0)
        return -1;
    p->handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        const char *why = dlerror();
        snprintf(err, errlen, "plugin '%s': cannot load %s: %s", p->name, p->path, why ? why : "unknown error");
        return -1;
    }
    dlerror();
    void *sym = dlsym(p->handle, CAIRN_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        snprintf(err, errlen,
                 "plugin '%s': %s does not export %s (not a Cairn plugin, or built without "
                 "CAIRN_PLUGIN_DEFINE)",
                 p->name, p->path, CAIRN_PLUGIN_ENTRY_SYMBOL);
        return -1;
    }
    cairn_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    p->desc = entry();
    if (check_descriptor(p, err, errlen) != 0)
        return -1;
    return bind_config(p, cfg, err, errlen);
}

static int load_one(struct plugin_host *host, const struct broker_config *cfg, const char *name,
                    const char *search_path, struct loaded_plugin **out, char *err, size_t errlen)
{
    if (load_descriptor(cfg, name, search_path, out, err, errlen) != 0)
        return -1;
    struct loaded_plugin *p = *out;
    p->owner = host;
    plugin_services_fill(p);
    char init_err[1024] = "";
    if (p->desc->init(&p->host, &p->instance, init_err, sizeof init_err) != CAIRN_OK) {
        init_err[sizeof init_err - 1] = '\0';
        for (char *c = init_err; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        snprintf(err, errlen, "plugin '%s': init failed: %s", p->name, init_err[0] ? init_err : "(no reason given)");
        return -1;
    }
    p->initialised = true;
    logger_info("plugin", "loaded %s %s from %s (ABI %u.%u)", p->name, p->desc->version ? p->desc->version : "?",
                p->path, p->desc->abi_major, p->desc->abi_minor);
    return 0;
}

static int add_to(struct loaded_plugin ***list, size_t *count, struct loaded_plugin *p, size_t cap)
{
    if (!*list)
        *list = calloc(cap, sizeof **list);
    if (!*list)
        return -1;
    (*list)[(*count)++] = p;
    return 0;
}

static int index_capabilities(struct plugin_host *host, size_t cap)
{
    for (size_t i = 0; i < host->plugin_count; i++) {
        struct loaded_plugin *p = host->plugins[i];
        if (p->desc->authorization && add_to(&host->authorizers, &host->authorizer_count, p, cap) != 0)
            return -1;
        if (p->desc->quota && add_to(&host->quotas, &host->quota_count, p, cap) != 0)
            return -1;
        if (p->desc->audit && add_to(&host->audits, &host->audit_count, p, cap) != 0)
            return -1;
        if (p->desc->authentication && add_to(&host->authenticators, &host->authenticator_count, p, cap) != 0)
            return -1;
        if (CAIRN_HAS_FIELD(p->desc, struct cairn_plugin_descriptor, policy) && p->desc->policy &&
            add_to(&host->policies, &host->policy_count, p, cap) != 0)
            return -1;
    }
    return 0;
}

/* plugin.<name>.* keys for a plugin that is not loaded are likely typos. */
static void warn_orphan_keys(const struct broker_config *cfg, const char *const *names, size_t count)
{
    struct config_kv *set = NULL;
    size_t set_count = 0;
    if (config_keys_with_prefix(cfg, "plugin.", &set, &set_count) != 0)
        return;
    for (size_t i = 0; i < set_count; i++) {
        if (config_broker_key_index(set[i].key) >= 0)
            continue;
        const char *name = set[i].key + strlen("plugin.");
        const char *dot = strchr(name, '.');
        size_t len = dot ? (size_t)(dot - name) : strlen(name);
        bool listed = false;
        for (size_t j = 0; j < count && !listed; j++)
            listed = strlen(names[j]) == len && !strncmp(names[j], name, len);
        if (!listed)
            logger_warn("plugin", "%s is set but no plugin '%.*s' is listed in plugins=; ignored", set[i].key, (int)len,
                        name);
    }
    free(set);
}

static int check_names(const char *const *names, size_t count, char *err, size_t errlen)
{
    for (size_t i = 0; i < count; i++) {
        if (!plugin_name_valid(names[i])) {
            snprintf(err, errlen, "plugin '%s': invalid name in plugins= (use [a-z0-9_-], at most 63 characters)",
                     names[i]);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) {
                snprintf(err, errlen, "plugin '%s': listed twice in plugins=", names[i]);
                return -1;
            }
    }
    return 0;
}

static const char *search_path_of(const struct broker_config *cfg)
{
    const char *search_path = config_get_string(cfg, "plugin.path");
    return search_path && search_path[0] ? search_path : plugin_host_default_path();
}

int plugin_host_check_config(const struct broker_config *cfg, char *err, size_t errlen)
{
    size_t count = 0;
    const char *const *names = config_get_list(cfg, "plugins", &count);
    if (check_names(names, count, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < count; i++) {
        struct loaded_plugin *p = NULL;
        int rc = load_descriptor(cfg, names[i], search_path_of(cfg), &p, err, errlen);
        unload(p); /* never initialised: fini is not called */
        if (rc != 0)
            return -1;
    }
    return 0;
}

int plugin_host_start(const struct broker_config *cfg, int32_t node_id, const char *cluster_id,
                      struct plugin_host **out, char *err, size_t errlen)
{
    *out = NULL;
    size_t count = 0;
    const char *const *names = config_get_list(cfg, "plugins", &count);
    warn_orphan_keys(cfg, names, count);
    if (count == 0)
        return 0;
    if (check_names(names, count, err, errlen) != 0)
        return -1;
    struct plugin_host *host = calloc(1, sizeof *host);
    if (!host || !(host->plugins = calloc(count, sizeof *host->plugins))) {
        free(host);
        snprintf(err, errlen, "plugins: out of memory");
        return -1;
    }
    pthread_mutex_init(&host->acl_lock, NULL);
    pthread_mutex_init(&host->quota_lock, NULL);
    host->node_id = node_id;
    snprintf(host->cluster_id, sizeof host->cluster_id, "%s", cluster_id ? cluster_id : "");
    int threads = config_get_int(cfg, "plugin.blocking.threads");
    if (plugin_pool_start(threads > 0 ? threads : 1, &host->pool) != 0) {
        snprintf(err, errlen, "plugins: cannot start the blocking-work threads");
        plugin_host_stop(host);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        struct loaded_plugin *p = NULL;
        if (load_one(host, cfg, names[i], search_path_of(cfg), &p, err, errlen) != 0) {
            unload(p);
            plugin_host_stop(host);
            return -1;
        }
        host->plugins[host->plugin_count++] = p;
    }
    if (index_capabilities(host, count) != 0) {
        snprintf(err, errlen, "plugins: out of memory");
        plugin_host_stop(host);
        return -1;
    }
    *out = host;
    return 0;
}

void plugin_host_stop(struct plugin_host *host)
{
    if (!host)
        return;
    /* Queued blocking work may still call into plugins: finish it first. */
    plugin_pool_stop(host->pool);
    for (size_t i = host->plugin_count; i > 0; i--) {
        struct loaded_plugin *p = host->plugins[i - 1];
        logger_info("plugin", "stopping %s", p->name);
        unload(p);
    }
    plugin_pool_free(host->pool);
    free(host->plugins);
    free(host->authorizers);
    free(host->policies);
    free(host->quotas);
    free(host->audits);
    free(host->authenticators);
    free(host->acl_listeners);
    pthread_mutex_destroy(&host->acl_lock);
    free(host->quota_listeners);
    pthread_mutex_destroy(&host->quota_lock);
    free(host);
}

static const char *config_type_label(int32_t type)
{
    switch (type) {
    case CAIRN_CONFIG_STRING:
        return "string";
    case CAIRN_CONFIG_INT:
        return "int";
    case CAIRN_CONFIG_BOOL:
        return "bool";
    case CAIRN_CONFIG_SIZE:
        return "size";
    case CAIRN_CONFIG_LIST:
        return "list";
    case CAIRN_CONFIG_PASSWORD:
        return "password";
    default:
        return "?";
    }
}

int plugin_host_print_docs(const struct broker_config *cfg, FILE *out, char *err, size_t errlen)
{
    size_t count = 0;
    const char *const *names = config_get_list(cfg, "plugins", &count);
    if (count == 0) {
        fprintf(out, "No plugins configured: set plugins=<name>,... (and plugin.path).\n");
        return 0;
    }
    const char *search_path = config_get_string(cfg, "plugin.path");
    if (!search_path || !search_path[0])
        search_path = plugin_host_default_path();
    for (size_t i = 0; i < count; i++) {
        if (!plugin_name_valid(names[i])) {
            snprintf(err, errlen, "plugin '%s': invalid name in plugins=", names[i]);
            return -1;
        }
        /* Descriptor only: the plugin is not initialised. */
        struct loaded_plugin p;
        memset(&p, 0, sizeof p);
        snprintf(p.name, sizeof p.name, "%s", names[i]);
        if (find_plugin_file(&p, search_path, err, errlen) != 0)
            return -1;
        p.handle = dlopen(p.path, RTLD_NOW | RTLD_LOCAL);
        if (!p.handle) {
            const char *why = dlerror();
            snprintf(err, errlen, "plugin '%s': cannot load %s: %s", p.name, p.path, why ? why : "unknown error");
            return -1;
        }
        void *sym = dlsym(p.handle, CAIRN_PLUGIN_ENTRY_SYMBOL);
        int rc = -1;
        if (!sym) {
            snprintf(err, errlen, "plugin '%s': %s does not export %s", p.name, p.path, CAIRN_PLUGIN_ENTRY_SYMBOL);
        } else {
            cairn_plugin_entry_fn entry;
            memcpy(&entry, &sym, sizeof entry);
            p.desc = entry();
            rc = check_descriptor(&p, err, errlen);
        }
        if (rc == 0) {
            const struct cairn_plugin_descriptor *d = p.desc;
            fprintf(out, "## %s %s\n\n%s\n\nFile: %s (ABI %u.%u)\n\n", d->name, d->version ? d->version : "",
                    d->description ? d->description : "", p.path, d->abi_major, d->abi_minor);
            if (d->config_key_count > 0 && d->config_keys) {
                fprintf(out, "| key | type | default | description |\n|---|---|---|---|\n");
                for (size_t k = 0; k < d->config_key_count; k++) {
                    const struct cairn_config_key *key = d->config_keys[k];
                    if (!key || key->struct_size < CONFIG_KEY_V1_0_SIZE || !key->name)
                        continue;
                    fprintf(out, "| `plugin.%s.%s` | %s | %s | %s |\n", d->name, key->name,
                            config_type_label(key->type),
                            key->default_value ? (key->default_value[0] ? key->default_value : "\"\"") : "(required)",
                            key->doc ? key->doc : "");
                }
                fprintf(out, "\n");
            } else {
                fprintf(out, "No configuration keys.\n\n");
            }
        }
        dlclose(p.handle);
        if (rc != 0)
            return -1;
    }
    return 0;
}
