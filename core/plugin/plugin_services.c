/* The host services table (struct cairn_host) handed to each plugin. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metrics/metrics.h"
#include "plugin/plugin_internal.h"
#include "util/clock.h"
#include "util/logger.h"

int plugin_parse_int(const char *text, int64_t *out)
{
    if (!text || !*text)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || isspace((unsigned char)text[0]))
        return -1;
    *out = v;
    return 0;
}

int plugin_parse_bool(const char *text, bool *out)
{
    if (!text)
        return -1;
    if (strcasecmp(text, "true") == 0)
        *out = true;
    else if (strcasecmp(text, "false") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

int plugin_parse_size(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)text[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return -1;
    static const struct {
        const char *suffix;
        uint64_t factor;
    } units[] = {{"", 1},          {"K", 1000ULL},          {"M", 1000ULL * 1000},         {"G", 1000ULL * 1000 * 1000},
                 {"KiB", 1024ULL}, {"MiB", 1024ULL * 1024}, {"GiB", 1024ULL * 1024 * 1024}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        if (v > UINT64_MAX / units[i].factor)
            return -1;
        *out = (uint64_t)v * units[i].factor;
        return 0;
    }
    return -1;
}

static void host_log(void *ctx, int32_t level, const char *fmt, ...)
{
    struct loaded_plugin *p = ctx;
    enum logger_level lv = level == CAIRN_LOG_ERROR  ? LOGGER_ERROR
                           : level == CAIRN_LOG_WARN ? LOGGER_WARN
                           : level == CAIRN_LOG_INFO ? LOGGER_INFO
                                                     : LOGGER_DEBUG;
    if (lv < logger_get_level())
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt ? fmt : "", ap);
    va_end(ap);
    char component[80];
    snprintf(component, sizeof component, "plugin:%s", p->name);
    logger_write(lv, component, "%s", line);
}

static const struct plugin_config_value *find_key(struct loaded_plugin *p, const char *key)
{
    for (size_t i = 0; key && i < p->config_count; i++)
        if (strcmp(p->config[i].name, key) == 0)
            return &p->config[i];
    return NULL;
}

/* Common checks of the config_* services: declared, of the asked type, set. */
static int config_lookup(void *ctx, const char *key, int32_t type, const struct plugin_config_value **out, char *err,
                         size_t errlen)
{
    struct loaded_plugin *p = ctx;
    const struct plugin_config_value *v = find_key(p, key);
    if (!v || !v->text) {
        if (err && errlen)
            snprintf(err, errlen, "plugin.%s.%s is %s", p->name, key ? key : "(null)",
                     v ? "not set and has no default" : "not a declared key");
        return CAIRN_NOT_FOUND;
    }
    bool compatible = v->type == type || (type == CAIRN_CONFIG_STRING &&
                                          (v->type == CAIRN_CONFIG_LIST || v->type == CAIRN_CONFIG_PASSWORD));
    if (!compatible) {
        if (err && errlen)
            snprintf(err, errlen, "plugin.%s.%s is declared with another type", p->name, key);
        return CAIRN_INVALID;
    }
    *out = v;
    return CAIRN_OK;
}

static int host_config_string(void *ctx, const char *key, const char **out, char *err, size_t errlen)
{
    const struct plugin_config_value *v;
    int rc = config_lookup(ctx, key, CAIRN_CONFIG_STRING, &v, err, errlen);
    if (rc == CAIRN_OK)
        *out = v->text;
    return rc;
}

static int host_config_int(void *ctx, const char *key, int64_t *out, char *err, size_t errlen)
{
    const struct plugin_config_value *v;
    int rc = config_lookup(ctx, key, CAIRN_CONFIG_INT, &v, err, errlen);
    if (rc == CAIRN_OK)
        *out = v->integer;
    return rc;
}

static int host_config_bool(void *ctx, const char *key, bool *out, char *err, size_t errlen)
{
    const struct plugin_config_value *v;
    int rc = config_lookup(ctx, key, CAIRN_CONFIG_BOOL, &v, err, errlen);
    if (rc == CAIRN_OK)
        *out = v->boolean;
    return rc;
}

static int host_config_size(void *ctx, const char *key, uint64_t *out, char *err, size_t errlen)
{
    const struct plugin_config_value *v;
    int rc = config_lookup(ctx, key, CAIRN_CONFIG_SIZE, &v, err, errlen);
    if (rc == CAIRN_OK)
        *out = v->size;
    return rc;
}

static int64_t host_monotonic_ns(void *ctx)
{
    (void)ctx;
    return clock_mono_ns();
}

static int64_t host_wall_clock_ms(void *ctx)
{
    (void)ctx;
    return clock_wall_ms();
}

static struct cairn_metric *register_metric(void *ctx, enum metrics_kind kind, const char *name, const char *help)
{
    struct loaded_plugin *p = ctx;
    char full[256];
    if (!name || snprintf(full, sizeof full, "%s%s", p->metric_prefix, name) >= (int)sizeof full)
        return NULL;
    struct metrics_metric *m = metrics_register(kind, full, NULL, help);
    if (!m)
        p->host.log(p, CAIRN_LOG_WARN, "cannot register metric '%s'", full);
    /* struct cairn_metric is opaque to plugins: it is a metrics_metric. */
    return (struct cairn_metric *)m;
}

static struct cairn_metric *host_counter(void *ctx, const char *name, const char *help)
{
    return register_metric(ctx, METRICS_COUNTER, name, help);
}

static struct cairn_metric *host_gauge(void *ctx, const char *name, const char *help)
{
    return register_metric(ctx, METRICS_GAUGE, name, help);
}

static void host_metric_add(struct cairn_metric *metric, int64_t delta)
{
    metrics_add((struct metrics_metric *)metric, delta);
}

static void host_metric_set(struct cairn_metric *metric, int64_t value)
{
    struct metrics_metric *m = (struct metrics_metric *)metric;
    if (m && metrics_kind_of(m) == METRICS_GAUGE)
        metrics_set(m, value);
}

static int host_submit_blocking(void *ctx, void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
    struct loaded_plugin *p = ctx;
    return plugin_pool_submit(p->owner->pool, work, done, arg);
}

void plugin_services_fill(struct loaded_plugin *p)
{
    struct cairn_host *h = &p->host;
    memset(h, 0, sizeof *h);
    h->struct_size = sizeof *h;
    h->abi_major = CAIRN_PLUGIN_ABI_MAJOR;
    h->abi_minor = CAIRN_PLUGIN_ABI_MINOR;
    h->ctx = p;
    h->plugin_name = p->name;
    h->node_id = p->owner->node_id;
    h->cluster_id = p->owner->cluster_id;
    h->log = host_log;
    h->config_string = host_config_string;
    h->config_int = host_config_int;
    h->config_bool = host_config_bool;
    h->config_size = host_config_size;
    h->monotonic_ns = host_monotonic_ns;
    h->wall_clock_ms = host_wall_clock_ms;
    h->counter = host_counter;
    h->gauge = host_gauge;
    h->metric_add = host_metric_add;
    h->metric_set = host_metric_set;
    h->submit_blocking = host_submit_blocking;
    h->acl_subscribe = plugin_acl_subscribe;
    h->quota_subscribe = plugin_quota_subscribe;
    /* Prometheus names allow no '-': plugin names map it to '_'. */
    snprintf(p->metric_prefix, sizeof p->metric_prefix, "cairn_plugin_%s_", p->name);
    for (char *c = p->metric_prefix; *c; c++)
        if (*c == '-')
            *c = '_';
}
