/* cairn-acl-bench: the cost of one authorization decision of the
 * acl-authorizer plugin, loaded with dlopen as cairnd loads it, with 0, N
 * ACLs (half PREFIXED). A minimal host hands the plugin the bindings
 * through acl_subscribe; the clock covers authorize() calls only.
 *
 * usage: cairn-acl-bench PLUGIN.so [ACL_COUNT ...]   (default 0 1000 100000)
 *
 * Single-threaded; every structure here belongs to main. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn/plugin.h"

#define DECISIONS 2000000
#define USERS 1000
#define QUERY_SET 4096

static struct cairn_acl_binding *bindings;
static size_t binding_count;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void host_log(void *ctx, int32_t level, const char *fmt, ...)
{
    (void)ctx;
    (void)level;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Every key at its declared default. */
static int host_config_string(void *ctx, const char *key, const char **out, char *err, size_t errlen)
{
    (void)ctx, (void)key, (void)err, (void)errlen;
    *out = "";
    return CAIRN_OK;
}

static int host_config_bool(void *ctx, const char *key, bool *out, char *err, size_t errlen)
{
    (void)ctx, (void)key, (void)err, (void)errlen;
    *out = false;
    return CAIRN_OK;
}

static struct cairn_metric *host_metric(void *ctx, const char *name, const char *help)
{
    (void)ctx, (void)name, (void)help;
    return NULL;
}

static void host_metric_update(struct cairn_metric *m, int64_t v)
{
    (void)m, (void)v;
}

static int host_acl_subscribe(void *ctx, const struct cairn_acl_listener *l)
{
    (void)ctx;
    const struct cairn_acl_binding **ptrs = malloc((binding_count + 1) * sizeof(*ptrs));
    if (!ptrs)
        return CAIRN_ERROR;
    for (size_t i = 0; i < binding_count; i++)
        ptrs[i] = &bindings[i];
    l->on_acls(l->arg, true, ptrs, binding_count, NULL, 0);
    free(ptrs);
    return CAIRN_OK;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Tenant prefixes of varied length, so prefixes of many lengths exist. */
static void prefix_of(size_t i, char *out, size_t outlen)
{
    int pad = (int)(i % 16);
    snprintf(out, outlen, "tenant%zu.%.*s", i, pad, "xxxxxxxxxxxxxxxx");
}

/* count ACLs: half LITERAL topics "topic-<i>", half PREFIXED "tenant<i>.x*". */
static void make_bindings(size_t count)
{
    free(bindings);
    bindings = calloc(count + 1, sizeof(*bindings));
    binding_count = count;
    static const int32_t ops[] = {CAIRN_OP_READ, CAIRN_OP_WRITE, CAIRN_OP_DESCRIBE, CAIRN_OP_ALL};
    for (size_t i = 0; i < count; i++) {
        struct cairn_acl_binding *b = &bindings[i];
        char name[64], principal[32];
        size_t k = i / 2;
        if (i % 2)
            prefix_of(k, name, sizeof name);
        else
            snprintf(name, sizeof name, "topic-%zu", k);
        snprintf(principal, sizeof principal, "User:u%zu", k % USERS);
        b->struct_size = sizeof(*b);
        memcpy(b->id, &i, sizeof i);
        b->resource_type = CAIRN_RESOURCE_TOPIC;
        b->resource_name = strdup(name);
        b->pattern_type = i % 2 ? CAIRN_PATTERN_PREFIXED : CAIRN_PATTERN_LITERAL;
        b->principal = strdup(principal);
        b->host = "*";
        b->operation = ops[k % 4];
        b->permission_type = k % 10 == 9 ? CAIRN_PERMISSION_DENY : CAIRN_PERMISSION_ALLOW;
    }
}

struct query {
    struct cairn_principal principal;
    char user[32];
    char name[96];
    struct cairn_authz_action action;
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PLUGIN.so [ACL_COUNT ...]\n", argv[0]);
        return 2;
    }
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    cairn_plugin_entry_fn entry = so ? (cairn_plugin_entry_fn)dlsym(so, CAIRN_PLUGIN_ENTRY_SYMBOL) : NULL;
    if (!entry) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    const struct cairn_plugin_descriptor *d = entry();
    struct cairn_host host = {
        .struct_size = sizeof host,
        .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
        .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
        .plugin_name = d->name,
        .cluster_id = "bench",
        .log = host_log,
        .config_string = host_config_string,
        .config_bool = host_config_bool,
        .counter = host_metric,
        .gauge = host_metric,
        .metric_add = host_metric_update,
        .metric_set = host_metric_update,
        .acl_subscribe = host_acl_subscribe,
    };
    static const size_t defaults[] = {0, 1000, 100000};
    int runs = argc > 2 ? argc - 2 : 3;
    struct query *queries = calloc(QUERY_SET, sizeof(*queries));
    const struct cairn_authz_action **actions = calloc(QUERY_SET, sizeof(*actions));
    printf("acls\tdecisions\tns_per_decision\tallowed\n");
    for (int r = 0; r < runs; r++) {
        size_t count = argc > 2 ? strtoull(argv[r + 2], NULL, 10) : defaults[r];
        make_bindings(count);
        void *instance = NULL;
        char err[256] = "";
        if (d->init(&host, &instance, err, sizeof err) != CAIRN_OK) {
            fprintf(stderr, "init: %s\n", err);
            return 1;
        }
        /* Queries: a third under a tenant prefix, a third literal, a third on unnamed topics. */
        size_t k_max = count / 2 > 0 ? count / 2 : 1;
        for (size_t q = 0; q < QUERY_SET; q++) {
            struct query *x = &queries[q];
            size_t k = (size_t)(next_rand() % k_max);
            char prefix[64];
            switch (q % 3) {
            case 0:
                prefix_of(k, prefix, sizeof prefix);
                snprintf(x->name, sizeof x->name, "%sorders-events", prefix);
                break;
            case 1:
                snprintf(x->name, sizeof x->name, "topic-%zu", k);
                break;
            default:
                snprintf(x->name, sizeof x->name, "unnamed-topic-%zu", k);
            }
            snprintf(x->user, sizeof x->user, "u%zu", next_rand() % 4 == 0 ? (size_t)(next_rand() % USERS) : k % USERS);
            x->principal = (struct cairn_principal){sizeof x->principal, "User", x->user};
            x->action = (struct cairn_authz_action){sizeof x->action,
                                                    q % 2 ? CAIRN_OP_DESCRIBE : CAIRN_OP_READ,
                                                    CAIRN_RESOURCE_TOPIC,
                                                    x->name,
                                                    CAIRN_PATTERN_LITERAL,
                                                    1,
                                                    true,
                                                    true};
            actions[q] = &x->action;
        }
        struct cairn_request_info info = {.struct_size = sizeof info, .client_host = "10.1.2.3", .client_id = ""};
        uint8_t result;
        uint64_t allowed = 0;
        /* Warm-up pass, then the measured one. */
        for (int pass = 0; pass < 2; pass++) {
            int64_t start = now_ns();
            allowed = 0;
            for (size_t i = 0; i < DECISIONS; i++) {
                struct query *x = &queries[i % QUERY_SET];
                info.principal = &x->principal;
                d->authorization->authorize(instance, &info, &actions[i % QUERY_SET], 1, &result);
                allowed += result;
            }
            int64_t elapsed = now_ns() - start;
            if (pass == 1)
                printf("%zu\t%d\t%.1f\t%" PRIu64 "\n", count, DECISIONS, (double)elapsed / DECISIONS, allowed);
        }
        d->fini(instance);
        for (size_t i = 0; i < binding_count; i++) {
            free((char *)bindings[i].resource_name);
            free((char *)bindings[i].principal);
        }
    }
    free(bindings);
    free(queries);
    free(actions);
    dlclose(so);
    return 0;
}
