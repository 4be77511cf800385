/* cairn acl create | list | delete: CreateAcls, DescribeAcls, DeleteAcls,
 * with kafka-acls.sh's flag names. A create is the cross product of its
 * principals, resources and operations, as kafka-acls.sh makes it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cli.h"

static const char acl_usage[] =
    "usage: cairn acl create --allow-principal P|--deny-principal P --operation OP RESOURCE... [--host H]\n"
    "       cairn acl list   [RESOURCE...] [--principal P] [--operation OP] [--host H] [--format json]\n"
    "       cairn acl delete RESOURCE... [--allow-principal P|--deny-principal P] [--operation OP] [--host H]\n"
    "  RESOURCE: --topic NAME | --group NAME | --transactional-id NAME | --cluster\n"
    "  --resource-pattern-type literal|prefixed|match|any (default literal; create takes literal|prefixed;\n"
    "                          list without a resource lists every pattern)\n"
    "  --operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,\n"
    "               AlterConfigs, IdempotentWrite (repeatable; create defaults to All, list/delete to any)\n"
    "  --host: create defaults to *, list/delete match any host\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

/* Kafka's enum values (AclOperation, ResourceType, PatternType, AclPermissionType). */
enum { RT_ANY = 1, RT_TOPIC = 2, RT_GROUP = 3, RT_CLUSTER = 4, RT_TXN = 5 };
enum { PT_ANY = 1, PT_MATCH = 2, PT_LITERAL = 3, PT_PREFIXED = 4 };
enum { OP_ANY = 1, OP_ALL = 2 };
enum { PERM_ANY = 1, PERM_DENY = 2, PERM_ALLOW = 3 };

static const char *const op_names[] = {"Unknown", "Any", "All", "Read", "Write", "Create", "Delete", "Alter",
                                       "Describe", "ClusterAction", "DescribeConfigs", "AlterConfigs",
                                       "IdempotentWrite", "CreateTokens", "DescribeTokens"};
static const char *const rt_names[] = {"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
                                       "DELEGATION_TOKEN", "USER"};
static const char *const pt_names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
static const char *const perm_names[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

static const char *name_of(const char *const *names, size_t n, int8_t v)
{
    return v >= 0 && (size_t)v < n ? names[v] : "UNKNOWN";
}
#define NAME_OF(tbl, v) name_of((tbl), sizeof(tbl) / sizeof((tbl)[0]), (v))

#define ACL_MAX 16

struct acl_resource {
    int8_t type;
    const char *name;
};

struct acl_principal {
    const char *name;
    int8_t permission;
};

/* Everything the flags said; main thread, points into argv. */
struct acl_args {
    struct acl_resource res[ACL_MAX];
    int nres;
    struct acl_principal pr[ACL_MAX];
    int npr;
    int8_t ops[ACL_MAX];
    int nops;
    int8_t pattern; /* 0: not given */
    const char *host;
};

enum {
    OPT_ALLOW = 2000,
    OPT_DENY,
    OPT_PRINCIPAL,
    OPT_OPERATION,
    OPT_TOPIC,
    OPT_GROUP,
    OPT_CLUSTER,
    OPT_TXN,
    OPT_PATTERN,
    OPT_HOST,
};

static const struct option acl_long[] = {
    {"allow-principal", required_argument, NULL, OPT_ALLOW},
    {"deny-principal", required_argument, NULL, OPT_DENY},
    {"principal", required_argument, NULL, OPT_PRINCIPAL},
    {"operation", required_argument, NULL, OPT_OPERATION},
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"group", required_argument, NULL, OPT_GROUP},
    {"cluster", no_argument, NULL, OPT_CLUSTER},
    {"transactional-id", required_argument, NULL, OPT_TXN},
    {"resource-pattern-type", required_argument, NULL, OPT_PATTERN},
    {"host", required_argument, NULL, OPT_HOST},
    {NULL, 0, NULL, 0},
};

int cli_acl_operation_parse(const char *text, int8_t *out)
{
    for (size_t i = OP_ALL; i < sizeof(op_names) / sizeof(op_names[0]); i++) {
        char underscored[32]; /* kafka-acls.sh also takes DESCRIBE_CONFIGS */
        size_t k = 0;
        for (const char *p = op_names[i]; *p && k < sizeof(underscored) - 2; p++) {
            if (p != op_names[i] && *p >= 'A' && *p <= 'Z')
                underscored[k++] = '_';
            underscored[k++] = *p;
        }
        underscored[k] = '\0';
        if (!strcasecmp(text, op_names[i]) || !strcasecmp(text, underscored)) {
            *out = (int8_t)i;
            return 0;
        }
    }
    return -1;
}

static int acl_flag(int opt, const char *arg, void *ctx)
{
    struct acl_args *a = ctx;
    bool full = a->nres >= ACL_MAX || a->npr >= ACL_MAX || a->nops >= ACL_MAX;
    if (full)
        return cli_fail(CLI_EXIT_USAGE, "at most %d resources, principals and operations each", ACL_MAX);
    switch (opt) {
    case OPT_ALLOW:
    case OPT_DENY:
    case OPT_PRINCIPAL:
        if (!strchr(arg, ':'))
            return cli_fail(CLI_EXIT_USAGE, "a principal is TYPE:NAME (User:alice), got '%s'", arg);
        a->pr[a->npr++] = (struct acl_principal){arg, opt == OPT_ALLOW ? PERM_ALLOW
                                                      : opt == OPT_DENY ? PERM_DENY
                                                                        : PERM_ANY};
        return -1;
    case OPT_OPERATION:
        if (cli_acl_operation_parse(arg, &a->ops[a->nops]) < 0)
            return cli_fail(CLI_EXIT_USAGE, "unknown operation '%s'\n%s", arg, acl_usage);
        a->nops++;
        return -1;
    case OPT_TOPIC:
    case OPT_GROUP:
    case OPT_TXN:
        a->res[a->nres++] = (struct acl_resource){opt == OPT_TOPIC ? RT_TOPIC : opt == OPT_GROUP ? RT_GROUP : RT_TXN,
                                                  arg};
        return -1;
    case OPT_CLUSTER:
        a->res[a->nres++] = (struct acl_resource){RT_CLUSTER, "kafka-cluster"};
        return -1;
    case OPT_PATTERN:
        for (int8_t p = PT_ANY; p <= PT_PREFIXED; p++)
            if (!strcasecmp(arg, pt_names[p])) {
                a->pattern = p;
                return -1;
            }
        return cli_fail(CLI_EXIT_USAGE, "--resource-pattern-type wants literal, prefixed, match or any, got '%s'",
                        arg);
    case OPT_HOST:
        a->host = arg;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

static void acl_describe(char *buf, size_t len, int8_t perm, struct kafka_str principal, int8_t op, int8_t rt,
                         int8_t pt, struct kafka_str name, struct kafka_str host)
{
    snprintf(buf, len, "%s %s %s on %s:%s:%s from host %s", NAME_OF(perm_names, perm), cli_str(principal),
             NAME_OF(op_names, op), NAME_OF(rt_names, rt), NAME_OF(pt_names, pt), cli_str(name), cli_str(host));
}

/* ---- create ---- */

static int build_create(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct acl_args *a = ctx;
    struct create_acls_request *m = req;
    int n = a->npr * a->nres * a->nops;
    m->creations = kafka_arena_alloc(arena, sizeof(*m->creations) * (size_t)n);
    if (!m->creations)
        return -1;
    int k = 0;
    for (int p = 0; p < a->npr; p++)
        for (int r = 0; r < a->nres; r++)
            for (int o = 0; o < a->nops; o++) {
                struct create_acls_request_acl_creation *c = &m->creations[k++];
                create_acls_request_acl_creation_init(c);
                c->resource_type = a->res[r].type;
                c->resource_name = kafka_str_from_cstr(a->res[r].name);
                c->resource_pattern_type = a->pattern;
                c->principal = kafka_str_from_cstr(a->pr[p].name);
                c->host = kafka_str_from_cstr(a->host);
                c->operation = a->ops[o];
                c->permission_type = a->pr[p].permission;
            }
    m->creations_count = n;
    return 0;
}

/* Checks a create's flags and fills its defaults; -1 to go on. */
static int create_check(struct acl_args *a)
{
    if (a->npr == 0 || a->nres == 0)
        return cli_fail(CLI_EXIT_USAGE, "acl create wants --allow-principal or --deny-principal and a resource\n%s",
                        acl_usage);
    for (int p = 0; p < a->npr; p++)
        if (a->pr[p].permission == PERM_ANY)
            return cli_fail(CLI_EXIT_USAGE, "acl create takes --allow-principal or --deny-principal, not --principal");
    if (!a->pattern)
        a->pattern = PT_LITERAL;
    if (a->pattern != PT_LITERAL && a->pattern != PT_PREFIXED)
        return cli_fail(CLI_EXIT_USAGE, "acl create wants --resource-pattern-type literal or prefixed");
    if (a->nops == 0)
        a->ops[a->nops++] = OP_ALL;
    if (!a->host)
        a->host = "*";
    return -1;
}

static int acl_create(struct cli_conn *c, const struct acl_args *a)
{
    struct cli_reply r;
    int rc = cli_call(c, c->any_node, KAFKA_API_KEY_CREATE_ACLS, build_create, (void *)a, &r);
    if (rc)
        return rc;
    const struct create_acls_response *m = r.response;
    int k = 0;
    for (int p = 0; p < a->npr; p++)
        for (int i = 0; i < a->nres; i++)
            for (int o = 0; o < a->nops; o++, k++) {
                char what[1400];
                acl_describe(what, sizeof(what), a->pr[p].permission, kafka_str_from_cstr(a->pr[p].name), a->ops[o],
                             a->res[i].type, a->pattern, kafka_str_from_cstr(a->res[i].name),
                             kafka_str_from_cstr(a->host));
                if (k >= m->results_count)
                    rc = cli_fail(CLI_EXIT_KAFKA, "the broker gave no result for ACL %s", what);
                else if (m->results[k].error_code != KAFKA_ERR_NONE) {
                    char msg[1500];
                    snprintf(msg, sizeof(msg), "cannot create ACL %s", what);
                    rc = cli_kafka_fail(m->results[k].error_code, m->results[k].error_message, msg, NULL);
                } else
                    printf("created ACL %s\n", what);
            }
    cli_reply_free(&r);
    return rc;
}

/* ---- list and delete share one filter per resource (or one for all) ---- */

struct acl_filter {
    int8_t rt, pt, op, perm;
    const char *name, *principal, *host;
};

/* The filters the flags make: resources x principals x operations, with
 * "any" for what was not given. Returns the count. */
static int make_filters(const struct acl_args *a, struct acl_filter *out, int max)
{
    int n = 0;
    int nres = a->nres ? a->nres : 1, npr = a->npr ? a->npr : 1, nops = a->nops ? a->nops : 1;
    for (int r = 0; r < nres; r++)
        for (int p = 0; p < npr; p++)
            for (int o = 0; o < nops && n < max; o++) {
                struct acl_filter *f = &out[n++];
                f->rt = a->nres ? a->res[r].type : RT_ANY;
                f->name = a->nres ? a->res[r].name : NULL;
                f->pt = a->pattern ? a->pattern : a->nres ? PT_LITERAL : PT_ANY;
                f->principal = a->npr ? a->pr[p].name : NULL;
                f->perm = a->npr ? a->pr[p].permission : PERM_ANY;
                f->op = a->nops ? a->ops[o] : OP_ANY;
                f->host = a->host;
            }
    return n;
}

static struct kafka_str str_or_null(const char *s)
{
    return s ? kafka_str_from_cstr(s) : (struct kafka_str){NULL, -1};
}

struct acl_row {
    int8_t rt, pt, op, perm;
    struct kafka_str name, principal, host;
};

static json_t *row_json(const struct acl_row *w)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "resource_type", NAME_OF(rt_names, w->rt), "resource_name",
                     cli_str(w->name), "pattern_type", NAME_OF(pt_names, w->pt), "principal", cli_str(w->principal),
                     "host", cli_str(w->host), "operation", NAME_OF(op_names, w->op), "permission",
                     NAME_OF(perm_names, w->perm));
}

static const char *const row_headers[] = {"RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION",
                                          "PERMISSION"};

static void row_add(struct cli_table *t, const struct acl_row *w)
{
    cli_table_add(t, NAME_OF(rt_names, w->rt), cli_str(w->name), NAME_OF(pt_names, w->pt), cli_str(w->principal),
                  cli_str(w->host), NAME_OF(op_names, w->op), NAME_OF(perm_names, w->perm));
}

/* DescribeAcls requests and DeleteAcls filters carry the same fields
 * in different generated structs. */
#define FILL_FILTER(dst, f)                                                                                            \
    do {                                                                                                               \
        (dst)->resource_type_filter = (f)->rt;                                                                         \
        (dst)->resource_name_filter = str_or_null((f)->name);                                                          \
        (dst)->pattern_type_filter = (f)->pt;                                                                          \
        (dst)->principal_filter = str_or_null((f)->principal);                                                         \
        (dst)->host_filter = str_or_null((f)->host);                                                                   \
        (dst)->operation = (f)->op;                                                                                    \
        (dst)->permission_type = (f)->perm;                                                                            \
    } while (0)

static int build_describe(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    (void)arena;
    const struct acl_filter *f = ctx;
    struct describe_acls_request *m = req;
    FILL_FILTER(m, f);
    return 0;
}

static int acl_list(struct cli_conn *c, const struct acl_args *a, bool json)
{
    struct acl_filter filters[ACL_MAX];
    int nf = make_filters(a, filters, ACL_MAX);
    json_t *arr = json ? json_array() : NULL;
    struct cli_table *t = json ? NULL : cli_table_new(7, row_headers);
    int rc = 0;
    for (int i = 0; i < nf && rc == 0; i++) {
        struct cli_reply r;
        rc = cli_call(c, c->any_node, KAFKA_API_KEY_DESCRIBE_ACLS, build_describe, &filters[i], &r);
        if (rc)
            break;
        const struct describe_acls_response *m = r.response;
        if (m->error_code != KAFKA_ERR_NONE) {
            rc = cli_kafka_fail(m->error_code, m->error_message, "cannot list ACLs", NULL);
        } else {
            for (int32_t j = 0; j < m->resources_count; j++) {
                const struct describe_acls_response_describe_acls_resource *res = &m->resources[j];
                for (int32_t k = 0; k < res->acls_count; k++) {
                    const struct describe_acls_response_acl_description *d = &res->acls[k];
                    struct acl_row w = {res->resource_type, res->pattern_type, d->operation, d->permission_type,
                                        res->resource_name,  d->principal,      d->host};
                    if (json)
                        json_array_append_new(arr, row_json(&w));
                    else
                        row_add(t, &w);
                }
            }
        }
        cli_reply_free(&r);
    }
    if (rc) {
        json_decref(arr);
        if (t)
            cli_table_free(t);
        return rc;
    }
    if (json)
        return cli_json_print(arr);
    cli_table_print(t);
    return CLI_EXIT_OK;
}

static int build_delete(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct acl_args *a = ctx;
    struct delete_acls_request *m = req;
    struct acl_filter filters[ACL_MAX];
    int nf = make_filters(a, filters, ACL_MAX);
    m->filters = kafka_arena_alloc(arena, sizeof(*m->filters) * (size_t)nf);
    if (!m->filters)
        return -1;
    for (int i = 0; i < nf; i++) {
        struct delete_acls_request_delete_acls_filter *d = &m->filters[i];
        const struct acl_filter *f = &filters[i];
        delete_acls_request_delete_acls_filter_init(d);
        FILL_FILTER(d, f);
    }
    m->filters_count = nf;
    return 0;
}

static int acl_delete(struct cli_conn *c, const struct acl_args *a, bool json)
{
    struct cli_reply r;
    int rc = cli_call(c, c->any_node, KAFKA_API_KEY_DELETE_ACLS, build_delete, (void *)a, &r);
    if (rc)
        return rc;
    const struct delete_acls_response *m = r.response;
    json_t *arr = json ? json_array() : NULL;
    int deleted = 0;
    for (int32_t i = 0; i < m->filter_results_count; i++) {
        const struct delete_acls_response_delete_acls_filter_result *fr = &m->filter_results[i];
        if (fr->error_code != KAFKA_ERR_NONE) {
            rc = cli_kafka_fail(fr->error_code, fr->error_message, "cannot delete ACLs", NULL);
            continue;
        }
        for (int32_t k = 0; k < fr->matching_acls_count; k++) {
            const struct delete_acls_response_delete_acls_matching_acl *x = &fr->matching_acls[k];
            char what[1400];
            acl_describe(what, sizeof(what), x->permission_type, x->principal, x->operation, x->resource_type,
                         x->pattern_type, x->resource_name, x->host);
            if (x->error_code != KAFKA_ERR_NONE) {
                char msg[1500];
                snprintf(msg, sizeof(msg), "cannot delete ACL %s", what);
                rc = cli_kafka_fail(x->error_code, x->error_message, msg, NULL);
                continue;
            }
            deleted++;
            struct acl_row w = {x->resource_type, x->pattern_type, x->operation, x->permission_type,
                                x->resource_name, x->principal,    x->host};
            if (json)
                json_array_append_new(arr, row_json(&w));
            else
                printf("deleted ACL %s\n", what);
        }
    }
    cli_reply_free(&r);
    if (json) {
        cli_json_print(arr);
        return rc;
    }
    if (deleted == 0 && rc == 0)
        printf("no ACL matched\n");
    return rc;
}

int cli_acl_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(acl_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "create") && strcmp(sub, "list") && strcmp(sub, "delete"))
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'acl %s'\n%s", sub, acl_usage);
    struct acl_args a = {0};
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, acl_usage, "", acl_long, acl_flag, &a, &s, pos, &npos, 0);
    if (rc >= 0)
        return rc;
    if ((long)a.nres * (a.npr ? a.npr : 1) * (a.nops ? a.nops : 1) > ACL_MAX)
        return cli_fail(CLI_EXIT_USAGE, "at most %d ACLs (principals x resources x operations) at once", ACL_MAX);
    if (!strcmp(sub, "create") && (rc = create_check(&a)) >= 0)
        return rc;
    if (!strcmp(sub, "delete") && a.nres == 0)
        return cli_fail(CLI_EXIT_USAGE, "acl delete wants a resource (--topic, --group, --transactional-id or "
                                        "--cluster)\n%s",
                        acl_usage);
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    if (!strcmp(sub, "create"))
        rc = acl_create(&c, &a);
    else if (!strcmp(sub, "list"))
        rc = acl_list(&c, &a, s.json);
    else
        rc = acl_delete(&c, &a, s.json);
    cli_close(&c);
    return rc;
}
