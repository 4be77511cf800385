/* cairn quota set | describe: client quotas over AlterClientQuotas and
 * DescribeClientQuotas, the entity named as kafka-configs.sh does (a user,
 * a client id, both, or an ip; each may be the default). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char quota_usage[] =
    "usage: cairn quota set ENTITY [--add KEY=VALUE]... [--delete KEY]... [--validate-only]\n"
    "       cairn quota describe [ENTITY] [--strict] [--format json]\n"
    "  ENTITY        --user NAME | --user-default, --client-id NAME | --client-id-default,\n"
    "                or --ip ADDR | --ip-default (user and client-id may be combined)\n"
    "  --add         set a quota: producer_byte_rate, consumer_byte_rate, request_percentage,\n"
    "                controller_mutation_rate (users, client ids), connection_creation_rate (ips)\n"
    "  --delete      remove a quota\n"
    "  --strict      describe only entities with exactly the parts given\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

enum { ENTITY_TYPES = 3, OPS_MAX = 16 };
static const char *const entity_types[ENTITY_TYPES] = {"user", "client-id", "ip"};

/* Flags; main thread. part[t]: 0 not given, 1 named (name[t]), 2 default. */
struct quota_args {
    int part[ENTITY_TYPES];
    const char *name[ENTITY_TYPES];
    const char *key[OPS_MAX];
    double value[OPS_MAX];
    bool remove[OPS_MAX];
    int ops;
    bool validate_only;
    bool strict;
};

enum {
    OPT_USER = 3100,
    OPT_USER_DEFAULT,
    OPT_CLIENT,
    OPT_CLIENT_DEFAULT,
    OPT_IP,
    OPT_IP_DEFAULT,
    OPT_ADD,
    OPT_DELETE,
    OPT_VALIDATE,
    OPT_STRICT
};

static const struct option quota_long[] = {
    {"user", required_argument, NULL, OPT_USER},
    {"user-default", no_argument, NULL, OPT_USER_DEFAULT},
    {"client-id", required_argument, NULL, OPT_CLIENT},
    {"client-id-default", no_argument, NULL, OPT_CLIENT_DEFAULT},
    {"ip", required_argument, NULL, OPT_IP},
    {"ip-default", no_argument, NULL, OPT_IP_DEFAULT},
    {"add", required_argument, NULL, OPT_ADD},
    {"delete", required_argument, NULL, OPT_DELETE},
    {"validate-only", no_argument, NULL, OPT_VALIDATE},
    {"strict", no_argument, NULL, OPT_STRICT},
    {NULL, 0, NULL, 0},
};

static int add_op(struct quota_args *q, const char *arg, bool remove)
{
    if (q->ops == OPS_MAX)
        return cli_fail(CLI_EXIT_USAGE, "at most %d quotas per command", OPS_MAX);
    char *copy = strdup(arg);
    if (!copy)
        return cli_fail(CLI_EXIT_USAGE, "out of memory");
    double value = 0;
    if (!remove) {
        char *eq = strchr(copy, '=');
        char *end = NULL;
        if (eq)
            value = strtod(eq + 1, &end);
        if (!eq || eq == copy || end == eq + 1 || *end != '\0') {
            free(copy);
            return cli_fail(CLI_EXIT_USAGE, "--add wants KEY=NUMBER, got '%s'", arg);
        }
        *eq = '\0';
    }
    q->key[q->ops] = copy;
    q->value[q->ops] = value;
    q->remove[q->ops++] = remove;
    return -1;
}

static int quota_flag(int opt, const char *arg, void *ctx)
{
    struct quota_args *q = ctx;
    if (opt >= OPT_USER && opt <= OPT_IP_DEFAULT) {
        int t = (opt - OPT_USER) / 2;
        if (q->part[t])
            return cli_fail(CLI_EXIT_USAGE, "the %s part is given twice", entity_types[t]);
        bool named = (opt - OPT_USER) % 2 == 0;
        q->part[t] = named ? 1 : 2;
        q->name[t] = named ? arg : NULL;
        return -1;
    }
    switch (opt) {
    case OPT_ADD:
    case OPT_DELETE:
        return add_op(q, arg, opt == OPT_DELETE);
    case OPT_VALIDATE:
        q->validate_only = true;
        return -1;
    case OPT_STRICT:
        q->strict = true;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

static int build_alter(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct quota_args *q = ctx;
    struct alter_client_quotas_request *m = req;
    struct alter_client_quotas_request_entry_data *e = kafka_arena_alloc(arena, sizeof(*e));
    struct alter_client_quotas_request_entity_data *parts = kafka_arena_alloc(arena, ENTITY_TYPES * sizeof(*parts));
    struct alter_client_quotas_request_op_data *ops = kafka_arena_alloc(arena, OPS_MAX * sizeof(*ops));
    if (!e || !parts || !ops)
        return -1;
    alter_client_quotas_request_entry_data_init(e);
    int32_t n = 0;
    for (int t = 0; t < ENTITY_TYPES; t++) {
        if (!q->part[t])
            continue;
        alter_client_quotas_request_entity_data_init(&parts[n]);
        parts[n].entity_type = kafka_str_from_cstr(entity_types[t]);
        parts[n++].entity_name = q->name[t] ? kafka_str_from_cstr(q->name[t]) : (struct kafka_str){NULL, -1};
    }
    for (int i = 0; i < q->ops; i++) {
        alter_client_quotas_request_op_data_init(&ops[i]);
        ops[i] = (struct alter_client_quotas_request_op_data){
            .key = kafka_str_from_cstr(q->key[i]), .value = q->value[i], .remove = q->remove[i]};
    }
    e->entity = parts;
    e->entity_count = n;
    e->ops = ops;
    e->ops_count = q->ops;
    m->entries = e;
    m->entries_count = 1;
    m->validate_only = q->validate_only;
    return 0;
}

/* "user=alice,client-id=<default>" for messages and tables. */
static const char *entity_text(const struct quota_args *q, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int t = 0; t < ENTITY_TYPES && at < len; t++)
        if (q->part[t])
            at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", at ? "," : "", entity_types[t],
                                   q->name[t] ? q->name[t] : "<default>");
    return buf;
}

static int quota_set(struct cli_conn *c, const struct quota_args *q)
{
    struct cli_reply r;
    int rc = cli_call(c, c->any_node, KAFKA_API_KEY_ALTER_CLIENT_QUOTAS, build_alter, (void *)q, &r);
    if (rc)
        return rc;
    const struct alter_client_quotas_response *m = r.response;
    char entity[512];
    entity_text(q, entity, sizeof entity);
    if (m->entries_count < 1) {
        rc = cli_fail(CLI_EXIT_KAFKA, "the broker gave no result for %s", entity);
    } else if (m->entries[0].error_code != KAFKA_ERR_NONE) {
        char what[600];
        snprintf(what, sizeof(what), "cannot set quotas of %s", entity);
        rc = cli_kafka_fail(m->entries[0].error_code, m->entries[0].error_message, what, NULL);
    } else {
        printf("%s quotas of %s\n", q->validate_only ? "validated" : "updated", entity);
    }
    cli_reply_free(&r);
    return rc;
}

static int build_describe(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct quota_args *q = ctx;
    struct describe_client_quotas_request *m = req;
    m->components = kafka_arena_alloc(arena, ENTITY_TYPES * sizeof(*m->components));
    if (!m->components)
        return -1;
    int32_t n = 0;
    for (int t = 0; t < ENTITY_TYPES; t++) {
        if (!q->part[t])
            continue;
        describe_client_quotas_request_component_data_init(&m->components[n]);
        m->components[n].entity_type = kafka_str_from_cstr(entity_types[t]);
        m->components[n].match_type = q->name[t] ? 0 : 1; /* EXACT or DEFAULT */
        m->components[n++].match = q->name[t] ? kafka_str_from_cstr(q->name[t]) : (struct kafka_str){NULL, -1};
    }
    m->components_count = n;
    m->strict = q->strict;
    return 0;
}

static int quota_describe(struct cli_conn *c, const struct quota_args *q, bool json)
{
    struct cli_reply r;
    int rc = cli_call(c, c->any_node, KAFKA_API_KEY_DESCRIBE_CLIENT_QUOTAS, build_describe, (void *)q, &r);
    if (rc)
        return rc;
    const struct describe_client_quotas_response *m = r.response;
    if (m->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(m->error_code, m->error_message, "cannot describe quotas", NULL);
        cli_reply_free(&r);
        return rc;
    }
    static const char *const headers[] = {"ENTITY", "QUOTA", "VALUE"};
    json_t *arr = json ? json_array() : NULL;
    struct cli_table *t = json ? NULL : cli_table_new(3, headers);
    for (int32_t i = 0; i < m->entries_count; i++) {
        const struct describe_client_quotas_response_entry_data *e = &m->entries[i];
        char entity[512] = "";
        size_t at = 0;
        json_t *ent = json ? json_object() : NULL;
        for (int32_t k = 0; k < e->entity_count && at < sizeof entity; k++) {
            const char *type = cli_str(e->entity[k].entity_type);
            const char *name = e->entity[k].entity_name.len < 0 ? "<default>" : cli_str(e->entity[k].entity_name);
            at += (size_t)snprintf(entity + at, sizeof entity - at, "%s%s=%s", at ? "," : "", type, name);
            if (json)
                json_object_set_new(ent, type, e->entity[k].entity_name.len < 0 ? json_null() : json_string(name));
        }
        json_t *values = json ? json_object() : NULL;
        for (int32_t k = 0; k < e->values_count; k++) {
            char value[64];
            snprintf(value, sizeof value, "%.15g", e->values[k].value);
            if (json)
                json_object_set_new(values, cli_str(e->values[k].key), json_real(e->values[k].value));
            else
                cli_table_add(t, entity, cli_str(e->values[k].key), value);
        }
        if (json)
            json_array_append_new(arr, json_pack("{s:o, s:o}", "entity", ent, "quotas", values));
    }
    cli_reply_free(&r);
    if (json)
        cli_json_print(arr);
    else
        cli_table_print(t);
    return rc;
}

int cli_quota_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(quota_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    bool set = !strcmp(sub, "set");
    if (!set && strcmp(sub, "describe"))
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'quota %s'\n%s", sub, quota_usage);
    struct quota_args q;
    memset(&q, 0, sizeof q);
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, quota_usage, "", quota_long, quota_flag, &q, &s, pos, &npos, 0);
    if (rc < 0 && set && !q.part[0] && !q.part[1] && !q.part[2])
        rc = cli_fail(CLI_EXIT_USAGE, "quota set wants an entity (--user, --client-id or --ip)\n%s", quota_usage);
    if (rc < 0 && set && q.ops == 0)
        rc = cli_fail(CLI_EXIT_USAGE, "quota set wants --add or --delete\n%s", quota_usage);
    if (rc < 0) {
        struct cli_conn c;
        rc = cli_connect(&c, &s);
        if (rc == 0) {
            rc = set ? quota_set(&c, &q) : quota_describe(&c, &q, s.json);
            cli_close(&c);
        }
    }
    for (int i = 0; i < q.ops; i++)
        free((char *)q.key[i]);
    return rc;
}
