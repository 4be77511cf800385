/* Test host for plugin unit tests; see test_host.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_host.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct test_host *test_host_of(void *ctx)
{
    return ctx;
}

static void test_host_log(void *ctx, int32_t level, const char *fmt, ...)
{
    struct test_host *th = test_host_of(ctx);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&th->log_lock);
    snprintf(th->last_log, sizeof(th->last_log), "%s", line);
    th->log_count++;
    pthread_mutex_unlock(&th->log_lock);
    if (level <= CAIRN_LOG_WARN)
        fprintf(stderr, "[plugin %s] %s\n", th->host.plugin_name, line);
}

const struct cairn_config_key *test_host_declared(const struct test_host *th, const char *key)
{
    for (size_t i = 0; i < th->descriptor->config_key_count; i++) {
        if (strcmp(th->descriptor->config_keys[i]->name, key) == 0)
            return th->descriptor->config_keys[i];
    }
    return NULL;
}

/* The value the real host would hand out: the set value or the default. */
static int test_host_value(struct test_host *th, const char *key, int32_t want_type, const char **out, char *err,
                           size_t errlen)
{
    const struct cairn_config_key *declared = test_host_declared(th, key);
    if (!declared) {
        snprintf(err, errlen, "%s is not declared by the plugin", key);
        return CAIRN_NOT_FOUND;
    }
    bool string_like = declared->type == CAIRN_CONFIG_STRING || declared->type == CAIRN_CONFIG_LIST ||
                       declared->type == CAIRN_CONFIG_PASSWORD;
    if (want_type == CAIRN_CONFIG_STRING ? !string_like : declared->type != want_type) {
        snprintf(err, errlen, "%s is declared with type %d", key, (int)declared->type);
        return CAIRN_INVALID;
    }
    *out = declared->default_value;
    for (int i = 0; i < th->config_count; i++) {
        if (strcmp(th->config_keys[i], key) == 0)
            *out = th->config_values[i];
    }
    if (!*out) {
        snprintf(err, errlen, "%s is required", key);
        return CAIRN_NOT_FOUND;
    }
    return CAIRN_OK;
}

static int test_host_config_string(void *ctx, const char *key, const char **out, char *err, size_t errlen)
{
    return test_host_value(test_host_of(ctx), key, CAIRN_CONFIG_STRING, out, err, errlen);
}

static int test_host_config_int(void *ctx, const char *key, int64_t *out, char *err, size_t errlen)
{
    const char *text;
    int rc = test_host_value(test_host_of(ctx), key, CAIRN_CONFIG_INT, &text, err, errlen);
    if (rc != CAIRN_OK)
        return rc;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end) {
        snprintf(err, errlen, "'%s' is not an integer", text);
        return CAIRN_INVALID;
    }
    *out = v;
    return CAIRN_OK;
}

static int test_host_config_bool(void *ctx, const char *key, bool *out, char *err, size_t errlen)
{
    const char *text;
    int rc = test_host_value(test_host_of(ctx), key, CAIRN_CONFIG_BOOL, &text, err, errlen);
    if (rc != CAIRN_OK)
        return rc;
    if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0) {
        snprintf(err, errlen, "'%s' is neither true nor false", text);
        return CAIRN_INVALID;
    }
    *out = strcmp(text, "true") == 0;
    return CAIRN_OK;
}

static int test_host_config_size(void *ctx, const char *key, uint64_t *out, char *err, size_t errlen)
{
    const char *text;
    int rc = test_host_value(test_host_of(ctx), key, CAIRN_CONFIG_SIZE, &text, err, errlen);
    if (rc != CAIRN_OK)
        return rc;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    static const struct {
        const char *suffix;
        uint64_t factor;
    } units[] = {{"", 1},
                 {"K", 1000},
                 {"M", 1000000},
                 {"G", 1000000000},
                 {"KiB", 1024},
                 {"MiB", 1024 * 1024},
                 {"GiB", 1024ull * 1024 * 1024}};
    if (errno || end == text || text[0] == '-') {
        snprintf(err, errlen, "'%s' is not a size", text);
        return CAIRN_INVALID;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            *out = v * units[i].factor;
            return CAIRN_OK;
        }
    }
    snprintf(err, errlen, "'%s' has an unknown unit", text);
    return CAIRN_INVALID;
}

static int64_t test_host_monotonic_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t test_host_wall_clock_ms(void *ctx)
{
    struct test_host *th = test_host_of(ctx);
    long long fixed = atomic_load(&th->fixed_wall_ms);
    if (fixed != 0)
        return fixed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct cairn_metric *test_host_metric_new(void *ctx, const char *name, bool gauge)
{
    struct test_host *th = test_host_of(ctx);
    int index = atomic_fetch_add(&th->metric_count, 1);
    if (index >= TEST_HOST_MAX_METRICS || strlen(name) >= sizeof(th->metrics[0].name))
        return NULL;
    struct cairn_metric *metric = &th->metrics[index];
    snprintf(metric->name, sizeof(metric->name), "%s", name);
    metric->is_gauge = gauge;
    atomic_store(&metric->value, 0);
    return metric;
}

static struct cairn_metric *test_host_counter(void *ctx, const char *name, const char *help)
{
    (void)help;
    return test_host_metric_new(ctx, name, false);
}

static struct cairn_metric *test_host_gauge(void *ctx, const char *name, const char *help)
{
    (void)help;
    return test_host_metric_new(ctx, name, true);
}

static void test_host_metric_add(struct cairn_metric *metric, int64_t delta)
{
    atomic_fetch_add(&metric->value, delta);
}

static void test_host_metric_set(struct cairn_metric *metric, int64_t value)
{
    atomic_store(&metric->value, value);
}

static int test_host_submit_blocking(void *ctx, void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
    (void)ctx;
    work(arg);
    if (done)
        done(arg);
    return CAIRN_OK;
}

static int test_host_quota_subscribe(void *ctx, const struct cairn_quota_listener *listener)
{
    struct test_host *th = ctx;
    if (!listener || listener->struct_size < sizeof(*listener) || !listener->on_quotas)
        return CAIRN_INVALID;
    th->quota_listener = *listener;
    return CAIRN_OK;
}

void test_host_load(struct test_host *th, const char *name)
{
    memset(th, 0, sizeof(*th));
    pthread_mutex_init(&th->log_lock, NULL);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.so", CAIRN_PLUGIN_DIR, name);
    th->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!th->library)
        fail_msg("dlopen %s: %s", path, dlerror());
    cairn_plugin_entry_fn entry;
    /* POSIX's sanctioned way to turn a dlsym result into a function pointer. */
    *(void **)&entry = dlsym(th->library, CAIRN_PLUGIN_ENTRY_SYMBOL);
    if (!entry)
        fail_msg("%s has no %s", path, CAIRN_PLUGIN_ENTRY_SYMBOL);
    th->descriptor = entry();
    assert_non_null(th->descriptor);
    assert_int_equal(th->descriptor->abi_major, CAIRN_PLUGIN_ABI_MAJOR);
    assert_true(th->descriptor->struct_size >= sizeof(struct cairn_plugin_descriptor));
    assert_string_equal(th->descriptor->name, name);
    for (size_t i = 0; i < th->descriptor->config_key_count; i++) {
        const struct cairn_config_key *key = th->descriptor->config_keys[i];
        assert_int_equal(key->struct_size, sizeof(struct cairn_config_key));
        assert_non_null(key->doc);
        assert_null(strstr(key->name, "plugin."));
    }

    th->host.struct_size = sizeof(th->host);
    th->host.abi_major = CAIRN_PLUGIN_ABI_MAJOR;
    th->host.abi_minor = CAIRN_PLUGIN_ABI_MINOR;
    th->host.ctx = th;
    th->host.plugin_name = th->descriptor->name;
    th->host.node_id = 1;
    th->host.cluster_id = "test-cluster";
    th->host.log = test_host_log;
    th->host.config_string = test_host_config_string;
    th->host.config_int = test_host_config_int;
    th->host.config_bool = test_host_config_bool;
    th->host.config_size = test_host_config_size;
    th->host.monotonic_ns = test_host_monotonic_ns;
    th->host.wall_clock_ms = test_host_wall_clock_ms;
    th->host.counter = test_host_counter;
    th->host.gauge = test_host_gauge;
    th->host.metric_add = test_host_metric_add;
    th->host.metric_set = test_host_metric_set;
    th->host.submit_blocking = test_host_submit_blocking;
    th->host.quota_subscribe = test_host_quota_subscribe;
}

void test_host_set(struct test_host *th, const char *key, const char *value)
{
    if (!test_host_declared(th, key))
        fail_msg("the plugin does not declare %s", key);
    for (int i = 0; i < th->config_count; i++) {
        if (strcmp(th->config_keys[i], key) == 0) {
            free(th->config_values[i]);
            th->config_values[i] = strdup(value);
            return;
        }
    }
    assert_true(th->config_count < TEST_HOST_MAX_CONFIG);
    th->config_keys[th->config_count] = strdup(key);
    th->config_values[th->config_count] = strdup(value);
    th->config_count++;
}

void test_host_clear_config(struct test_host *th)
{
    for (int i = 0; i < th->config_count; i++) {
        free(th->config_keys[i]);
        free(th->config_values[i]);
    }
    th->config_count = 0;
}

int test_host_init(struct test_host *th, char *err, size_t errlen)
{
    assert_null(th->instance);
    atomic_store(&th->metric_count, 0);
    err[0] = '\0';
    void *instance = NULL;
    int rc = th->descriptor->init(&th->host, &instance, err, errlen);
    if (rc == CAIRN_OK)
        th->instance = instance;
    return rc;
}

void test_host_fini(struct test_host *th)
{
    if (th->instance)
        th->descriptor->fini(th->instance);
    th->instance = NULL;
}

int64_t test_host_metric(struct test_host *th, const char *name)
{
    int count = atomic_load(&th->metric_count);
    for (int i = 0; i < count && i < TEST_HOST_MAX_METRICS; i++) {
        if (strcmp(th->metrics[i].name, name) == 0)
            return atomic_load(&th->metrics[i].value);
    }
    fail_msg("no metric named %s", name);
    return -1;
}

void test_host_unload(struct test_host *th)
{
    test_host_fini(th);
    test_host_clear_config(th);
    if (th->library)
        dlclose(th->library);
    th->library = NULL;
    pthread_mutex_destroy(&th->log_lock);
}
