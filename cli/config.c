/* cairn config: describe and alter configs of a broker (its own, or the
 * cluster-wide default) or of a topic, as kafka-configs.sh --entity-type
 * brokers|topics. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define MAX_CHANGES 64
#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4

/* Flags; plain data on the main thread's stack. */
struct config_flags {
    const char *broker; /* "" for --broker-defaults, NULL when neither given */
    const char *topic;  /* --topic, instead of a broker */
    const char *set[MAX_CHANGES];
    int nset;
    const char *del[MAX_CHANGES];
    int ndel;
};

enum { OPT_BROKER = 3000, OPT_DEFAULTS, OPT_TOPIC, OPT_SET, OPT_DELETE };

static int on_flag(int opt, const char *arg, void *ctx)
{
    struct config_flags *f = ctx;
    long long id;
    switch (opt) {
    case OPT_BROKER:
        if (cli_parse_int(arg, 0, INT32_MAX, &id) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--broker wants a broker id, got '%s'", arg);
        f->broker = arg;
        return -1;
    case OPT_DEFAULTS:
        f->broker = "";
        return -1;
    case OPT_TOPIC:
        if (!arg[0])
            return cli_fail(CLI_EXIT_USAGE, "--topic wants a topic name");
        f->topic = arg;
        return -1;
    case OPT_SET:
        if (!strchr(arg, '=') || arg[0] == '=')
            return cli_fail(CLI_EXIT_USAGE, "--set wants key=value, got '%s'", arg);
        if (f->nset == MAX_CHANGES)
            return cli_fail(CLI_EXIT_USAGE, "too many --set (at most %d)", MAX_CHANGES);
        f->set[f->nset++] = arg;
        return -1;
    case OPT_DELETE:
        if (f->ndel == MAX_CHANGES)
            return cli_fail(CLI_EXIT_USAGE, "too many --delete (at most %d)", MAX_CHANGES);
        f->del[f->ndel++] = arg;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

static const struct option config_long[] = {
    {"broker", required_argument, NULL, OPT_BROKER}, {"broker-defaults", no_argument, NULL, OPT_DEFAULTS},
    {"topic", required_argument, NULL, OPT_TOPIC},   {"set", required_argument, NULL, OPT_SET},
    {"delete", required_argument, NULL, OPT_DELETE}, {NULL, 0, NULL, 0},
};

/* The resource a command names: a broker, the broker default ("") or a
 * topic. Plain data on the main thread's stack. */
struct config_resource {
    int8_t type;
    const char *name;
};

static struct config_resource resource_of(const struct config_flags *f)
{
    if (f->topic)
        return (struct config_resource){RESOURCE_TOPIC, f->topic};
    return (struct config_resource){RESOURCE_BROKER, f->broker};
}

/* Where a request for the resource goes: the broker itself (a broker
 * describes only its own configs), or the controller for the default and
 * for topics (any broker would do; the controller's image is the newest). */
static int32_t target_node(const struct cli_conn *c, const struct config_resource *res)
{
    if (res->type == RESOURCE_BROKER && res->name[0])
        return (int32_t)strtol(res->name, NULL, 10);
    return c->controller_id;
}

static const char *resource_label(const struct config_resource *res, char *buf, size_t len)
{
    if (res->type == RESOURCE_TOPIC)
        snprintf(buf, len, "topic %s", res->name);
    else if (res->name[0])
        snprintf(buf, len, "broker %s", res->name);
    else
        snprintf(buf, len, "the cluster-wide broker default");
    return buf;
}

/* ---- describe ---- */

static int build_describe(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct describe_configs_request *m = req;
    const struct config_resource *res = ctx;
    (void)version;
    m->resources = kafka_arena_alloc(a, sizeof(*m->resources));
    if (!m->resources)
        return -1;
    describe_configs_request_describe_configs_resource_init(&m->resources[0]);
    m->resources[0].resource_type = res->type;
    m->resources[0].resource_name = kafka_str_from_cstr(res->name);
    m->resources[0].configuration_keys_count = -1;
    m->resources_count = 1;
    return 0;
}

static int config_describe(struct cli_conn *c, const struct config_resource *resource, bool json)
{
    struct cli_reply r;
    int rc = cli_call(c, target_node(c, resource), KAFKA_API_KEY_DESCRIBE_CONFIGS, build_describe, (void *)resource,
                      &r);
    if (rc)
        return rc;
    const struct describe_configs_response *d = r.response;
    const struct describe_configs_response_describe_configs_result *res = d->results_count ? &d->results[0] : NULL;
    char label[300];
    if (!res || res->error_code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof what, "cannot describe the configs of %s", resource_label(resource, label, sizeof label));
        rc = cli_kafka_fail(res ? res->error_code : KAFKA_ERR_UNKNOWN_SERVER_ERROR,
                            res ? res->error_message : (struct kafka_str){NULL, -1}, what, NULL);
        cli_reply_free(&r);
        return rc;
    }
    static const char *const headers[] = {"KEY", "VALUE", "SOURCE", "READ_ONLY"};
    struct cli_table *t = json ? NULL : cli_table_new(4, headers);
    json_t *arr = json ? json_array() : NULL;
    for (int32_t i = 0; i < res->configs_count; i++) {
        const struct describe_configs_response_describe_configs_resource_result *e = &res->configs[i];
        /* v0 has no source, only is_default. */
        int8_t source = r.version >= 1 ? e->config_source : (e->is_default ? 5 : 4);
        const char *src = cli_config_source_name(source);
        const char *value = e->is_sensitive ? "(sensitive)" : cli_str(e->value);
        if (json)
            json_array_append_new(arr, json_pack("{s:s, s:s?, s:s, s:b, s:b}", "name", cli_str(e->name), "value",
                                                 e->value.len < 0 ? NULL : value, "source", src, "read_only",
                                                 e->read_only, "sensitive", e->is_sensitive));
        else
            cli_table_add(t, cli_str(e->name), value, src, e->read_only ? "true" : "false");
    }
    cli_reply_free(&r);
    if (json)
        return cli_json_print(json_pack("{s:s, s:o}", resource->type == RESOURCE_TOPIC ? "topic" : "broker",
                                        resource->name, "configs", arr));
    cli_table_print(t);
    return CLI_EXIT_OK;
}

/* ---- alter ---- */

static int build_alter(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct incremental_alter_configs_request *m = req;
    const struct config_flags *f = ctx;
    struct config_resource target = resource_of(f);
    (void)version;
    m->resources = kafka_arena_alloc(a, sizeof(*m->resources));
    struct incremental_alter_configs_request_alterable_config *changes = kafka_arena_alloc(
        a, sizeof(*changes) * (size_t)(f->nset + f->ndel));
    if (!m->resources || !changes)
        return -1;
    incremental_alter_configs_request_alter_configs_resource_init(&m->resources[0]);
    m->resources[0].resource_type = target.type;
    m->resources[0].resource_name = kafka_str_from_cstr(target.name);
    for (int i = 0; i < f->nset + f->ndel; i++) {
        struct incremental_alter_configs_request_alterable_config *ch = &changes[i];
        incremental_alter_configs_request_alterable_config_init(ch);
        if (i >= f->nset) {
            ch->config_operation = 1; /* DELETE */
            ch->name = kafka_str_from_cstr(f->del[i - f->nset]);
            ch->value = (struct kafka_str){NULL, -1};
            continue;
        }
        const char *kv = f->set[i], *eq = strchr(kv, '=');
        char *name = kafka_arena_alloc(a, (size_t)(eq - kv) + 1);
        if (!name)
            return -1;
        memcpy(name, kv, (size_t)(eq - kv));
        name[eq - kv] = '\0';
        ch->config_operation = 0; /* SET */
        ch->name = kafka_str_from_cstr(name);
        ch->value = kafka_str_from_cstr(eq + 1);
    }
    m->resources[0].configs = changes;
    m->resources[0].configs_count = f->nset + f->ndel;
    m->resources_count = 1;
    return 0;
}

static int config_alter(struct cli_conn *c, struct config_flags *f)
{
    struct cli_reply r;
    struct config_resource target = resource_of(f);
    int rc = cli_call(c, target_node(c, &target), KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS, build_alter, f, &r);
    if (rc)
        return rc;
    const struct incremental_alter_configs_response *m = r.response;
    char label[300];
    resource_label(&target, label, sizeof label);
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct incremental_alter_configs_response_alter_configs_resource_response *e = &m->responses[i];
        char what[400];
        snprintf(what, sizeof what, "cannot alter the configs of %s", label);
        if (e->error_code != KAFKA_ERR_NONE)
            rc = cli_kafka_fail(e->error_code, e->error_message, what,
                                "docs/configuration.md lists the keys that change at runtime");
        else
            printf("altered %d config(s) of %s\n", f->nset + f->ndel, label);
    }
    cli_reply_free(&r);
    return rc;
}

/* ---- dispatch ---- */

static const char config_usage[] =
    "usage: cairn config <subcommand> (--broker ID | --broker-defaults | --topic T) [flags]\n"
    "  describe                                 every config of the broker or topic with its value and source\n"
    "  alter [--set key=value]... [--delete key]...   change broker or topic configs at runtime\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

int cli_config_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(config_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    bool describe = !strcmp(sub, "describe");
    if (!describe && strcmp(sub, "alter") != 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'config %s'\n%s", sub, config_usage);
    struct config_flags f = {0};
    struct cli_settings s;
    char *pos[4];
    int npos = 0;
    int rc = cli_parse(argc - 1, argv + 1, config_usage, "", config_long, on_flag, &f, &s, pos, &npos, 4);
    if (rc >= 0)
        return rc;
    if (npos > 0)
        return cli_fail(CLI_EXIT_USAGE, "config %s takes no arguments, got '%s'\n%s", sub, pos[0], config_usage);
    if (!f.broker == !f.topic)
        return cli_fail(CLI_EXIT_USAGE, "config %s wants one of --broker ID, --broker-defaults or --topic T\n%s", sub,
                        config_usage);
    if (!describe && f.nset + f.ndel == 0)
        return cli_fail(CLI_EXIT_USAGE, "config alter wants --set key=value or --delete key\n%s", config_usage);
    if (describe && f.nset + f.ndel > 0)
        return cli_fail(CLI_EXIT_USAGE, "config describe takes no --set or --delete\n%s", config_usage);
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    struct config_resource resource = resource_of(&f);
    rc = describe ? config_describe(&c, &resource, s.json) : config_alter(&c, &f);
    cli_close(&c);
    return rc;
}
