/* The quota plugin: Kafka's client quotas (producer_byte_rate,
 * consumer_byte_rate, request_percentage) per user, client-id or both,
 * with <default> entities and Kafka's precedence. */
#include "quota_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kafka's request quota counts io-thread time as a percentage of one
 * thread: 1 s of work per second is 100. */
#define QUOTA_PERCENT_PER_NS (100.0 / 1e9)

/* One loaded instance. entries (the configured ones merged with those set
 * at run time) is guarded by entries_lock and swapped whole when the quota
 * host service hands over a new set; the sensor table locks itself; the
 * rest is immutable after init. */
struct quota_plugin {
    const struct cairn_host *host;
    pthread_rwlock_t entries_lock;
    struct quota_entries entries;
    struct quota_entries configured;
    struct quota_sensor_table sensors;
    struct cairn_metric *throttled_responses;
};

static int quota_type_of_kind(int32_t kind, double value, enum quota_type *type, double *amount)
{
    switch (kind) {
    case CAIRN_QUOTA_PRODUCE:
        *type = QUOTA_PRODUCER_BYTE_RATE;
        *amount = value;
        return CAIRN_OK;
    case CAIRN_QUOTA_FETCH:
        *type = QUOTA_CONSUMER_BYTE_RATE;
        *amount = value;
        return CAIRN_OK;
    case CAIRN_QUOTA_REQUEST:
        *type = QUOTA_REQUEST_PERCENTAGE;
        *amount = value * QUOTA_PERCENT_PER_NS;
        return CAIRN_OK;
    case CAIRN_QUOTA_CONTROLLER_MUTATION:
        *type = QUOTA_CONTROLLER_MUTATION_RATE;
        *amount = value;
        return CAIRN_OK;
    default:
        return CAIRN_NOT_FOUND; /* a kind newer than this plugin */
    }
}

static int32_t quota_record(void *instance, const struct cairn_request_info *request, int32_t kind, double value,
                            int64_t now_ms)
{
    struct quota_plugin *plugin = instance;
    enum quota_type type;
    double amount;
    if (!request || !isfinite(value) || value < 0 || quota_type_of_kind(kind, value, &type, &amount) != CAIRN_OK)
        return 0;
    const char *user = "ANONYMOUS";
    if (CAIRN_HAS_FIELD(request, struct cairn_request_info, principal) && request->principal &&
        request->principal->name)
        user = request->principal->name;
    const char *client_id = "";
    if (CAIRN_HAS_FIELD(request, struct cairn_request_info, client_id) && request->client_id)
        client_id = request->client_id;

    pthread_rwlock_rdlock(&plugin->entries_lock);
    struct quota_match match;
    bool limited = quota_entries_match(&plugin->entries, user, client_id, type, &match);
    pthread_rwlock_unlock(&plugin->entries_lock);
    if (!limited)
        return 0;
    int32_t throttle = quota_sensor_record(&plugin->sensors, type, &match, amount, now_ms,
                                           type == QUOTA_CONTROLLER_MUTATION_RATE);
    if (throttle > 0 && plugin->throttled_responses)
        plugin->host->metric_add(plugin->throttled_responses, 1);
    return throttle;
}

/* The quota host service's delivery: the whole set, merged over the
 * configured entries and swapped in. Usage buckets are kept, so a new limit
 * applies to the rate already measured. */
static void quota_on_quotas(void *arg, const struct cairn_client_quota *const *quotas, size_t count)
{
    struct quota_plugin *plugin = arg;
    struct quota_entries merged;
    if (quota_entries_merge(&plugin->configured, quotas, count, &merged) != CAIRN_OK) {
        plugin->host->log(plugin->host->ctx, CAIRN_LOG_ERROR, "out of memory applying %zu client quotas", count);
        return;
    }
    pthread_rwlock_wrlock(&plugin->entries_lock);
    struct quota_entries old = plugin->entries;
    plugin->entries = merged;
    pthread_rwlock_unlock(&plugin->entries_lock);
    quota_entries_free(&old);
    plugin->host->log(plugin->host->ctx, CAIRN_LOG_INFO, "%zu client quotas set at run time, %zu entries in force",
                      count, merged.count);
}

static int quota_read_int(const struct cairn_host *host, const char *key, int64_t min, int64_t max, int64_t *out,
                          char *err, size_t errlen)
{
    char why[256] = "";
    if (host->config_int(host->ctx, key, out, why, sizeof(why)) != CAIRN_OK) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_INVALID;
    }
    if (*out < min || *out > max) {
        snprintf(err, errlen, "config %s: %lld is outside [%lld, %lld]", key, (long long)*out, (long long)min,
                 (long long)max);
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static int quota_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    int64_t samples, window_seconds;
    if (quota_read_int(host, "quota.window.num", 2, 1000, &samples, err, errlen) != CAIRN_OK ||
        quota_read_int(host, "quota.window.size.seconds", 1, 3600, &window_seconds, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    const char *text = NULL;
    char why[256] = "";
    if (host->config_string(host->ctx, "entries", &text, why, sizeof(why)) != CAIRN_OK || !text) {
        snprintf(err, errlen, "config entries: %s", why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    const char *algorithm_text = NULL;
    enum quota_throttle_algorithm algorithm;
    if (host->config_string(host->ctx, "throttle.algorithm", &algorithm_text, why, sizeof(why)) != CAIRN_OK ||
        !algorithm_text) {
        snprintf(err, errlen, "config throttle.algorithm: %s", why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    if (quota_throttle_algorithm_parse(algorithm_text, &algorithm) != CAIRN_OK) {
        snprintf(err, errlen, "config throttle.algorithm: '%s' is not token-bucket or sampled-rate", algorithm_text);
        return CAIRN_ERROR;
    }

    struct quota_plugin *plugin = calloc(1, sizeof(*plugin));
    if (!plugin) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    plugin->host = host;
    if (quota_entries_parse(text, &plugin->configured, err, errlen) != CAIRN_OK) {
        free(plugin);
        return CAIRN_ERROR;
    }
    struct quota_window_config window = {.samples = (int32_t)samples, .window_ms = window_seconds * 1000};
    if (quota_entries_merge(&plugin->configured, NULL, 0, &plugin->entries) != CAIRN_OK ||
        quota_sensor_table_init(&plugin->sensors, &window, algorithm) != CAIRN_OK) {
        snprintf(err, errlen, "out of memory");
        quota_entries_free(&plugin->entries);
        quota_entries_free(&plugin->configured);
        free(plugin);
        return CAIRN_ERROR;
    }
    pthread_rwlock_init(&plugin->entries_lock, NULL);
    plugin->throttled_responses = host->counter(host->ctx, "throttled_responses",
                                                "Requests answered with a non-zero throttle time");
    host->log(host->ctx, CAIRN_LOG_INFO, "%zu quota entries, %lld windows of %lld s, throttle by %s",
              plugin->configured.count, (long long)samples, (long long)window_seconds, algorithm_text);
    /* A 1.0 or 1.1 broker has no quota service: the configured entries alone apply. */
    if (CAIRN_HAS_FIELD(host, struct cairn_host, quota_subscribe) && host->quota_subscribe) {
        struct cairn_quota_listener listener = {
            .struct_size = sizeof(listener), .arg = plugin, .on_quotas = quota_on_quotas};
        if (host->quota_subscribe(host->ctx, &listener) != CAIRN_OK)
            host->log(host->ctx, CAIRN_LOG_WARN, "cannot subscribe to client quotas; only configured entries apply");
    }
    *instance = plugin;
    return CAIRN_OK;
}

static void quota_fini(void *instance)
{
    struct quota_plugin *plugin = instance;
    if (!plugin)
        return;
    quota_sensor_table_free(&plugin->sensors);
    quota_entries_free(&plugin->entries);
    quota_entries_free(&plugin->configured);
    pthread_rwlock_destroy(&plugin->entries_lock);
    free(plugin);
}

static const struct cairn_config_key quota_key_entries = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "entries",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "",
    .doc = "Quotas, ';'-separated: <entity>:<quota>=<value>,... e.g. "
           "user=alice,client-id=app1:producer_byte_rate=1048576;client-id=<default>:consumer_byte_rate=2097152",
};
static const struct cairn_config_key quota_key_window_num = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "quota.window.num",
    .type = CAIRN_CONFIG_INT,
    .default_value = "11",
    .doc = "Number of samples a client's rate is measured over.",
};
static const struct cairn_config_key quota_key_window_size = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "quota.window.size.seconds",
    .type = CAIRN_CONFIG_INT,
    .default_value = "1",
    .doc = "Length of each sample in seconds.",
};

static const struct cairn_config_key quota_key_throttle_algorithm = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "throttle.algorithm",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "token-bucket",
    .doc = "How usage becomes a throttle time. token-bucket: each client's bucket holds one "
           "quota.window.size.seconds of quota, so no window admits much more than the quota. sampled-rate: "
           "Kafka's rate over quota.window.num samples, which lets up to quota.window.num - 1 windows' worth through "
           "at once after idle and each time the sample holding a burst expires. controller_mutation_rate always "
           "uses sampled-rate.",
};

static const struct cairn_config_key *const quota_config_keys[] = {
    &quota_key_entries,
    &quota_key_window_num,
    &quota_key_window_size,
    &quota_key_throttle_algorithm,
};

static const struct cairn_quota_vtable quota_vtable = {
    .struct_size = sizeof(struct cairn_quota_vtable),
    .record = quota_record,
};

static const struct cairn_plugin_descriptor quota_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "quota",
    .version = "1.0.0",
    .description = "Kafka client quotas: byte rates and request percentage per user and client-id",
    .capabilities = CAIRN_CAP_QUOTA,
    .config_keys = quota_config_keys,
    .config_key_count = sizeof(quota_config_keys) / sizeof(quota_config_keys[0]),
    .init = quota_init,
    .fini = quota_fini,
    .quota = &quota_vtable,
};

CAIRN_PLUGIN_DEFINE(quota_descriptor)
