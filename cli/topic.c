/* cairn topic: create, list, describe, delete, add-partitions, alter-config. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

#define MAX_ITEMS 64

/* Flags of the writing subcommands; plain data on the main thread's stack. */
struct topic_flags {
    long long partitions, replicas, add;
    const char *set[MAX_ITEMS]; /* "key=value" (create's -c, alter-config's --set) */
    int nset;
    const char *del[MAX_ITEMS];
    int ndel;
    bool internal;
    int16_t error; /* filled by builders' readers */
};

enum { OPT_SET = 2000, OPT_DELETE, OPT_INTERNAL };

static int on_flag(int opt, const char *arg, void *ctx)
{
    struct topic_flags *f = ctx;
    switch (opt) {
    case 'p':
        if (cli_parse_int(arg, 1, 1000000, &f->partitions) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--partitions wants a positive number, got '%s'", arg);
        return -1;
    case 'r':
        if (cli_parse_int(arg, 1, 32767, &f->replicas) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--replicas wants a positive number, got '%s'", arg);
        return -1;
    case 'n':
        if (cli_parse_int(arg, 1, 1000000, &f->add) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--num wants a positive number, got '%s'", arg);
        return -1;
    case 'c':
    case OPT_SET:
        if (!strchr(arg, '=') || arg[0] == '=')
            return cli_fail(CLI_EXIT_USAGE, "config wants key=value, got '%s'", arg);
        if (f->nset == MAX_ITEMS)
            return cli_fail(CLI_EXIT_USAGE, "too many configs (at most %d)", MAX_ITEMS);
        f->set[f->nset++] = arg;
        return -1;
    case OPT_DELETE:
        if (f->ndel == MAX_ITEMS)
            return cli_fail(CLI_EXIT_USAGE, "too many configs (at most %d)", MAX_ITEMS);
        f->del[f->ndel++] = arg;
        return -1;
    case OPT_INTERNAL:
        f->internal = true;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

static const struct option topic_long[] = {
    {"partitions", required_argument, NULL, 'p'},  {"replicas", required_argument, NULL, 'r'},
    {"config", required_argument, NULL, 'c'},      {"num", required_argument, NULL, 'n'},
    {"set", required_argument, NULL, OPT_SET},     {"delete", required_argument, NULL, OPT_DELETE},
    {"internal", no_argument, NULL, OPT_INTERNAL}, {NULL, 0, NULL, 0},
};

/* Splits "key=value" into arena strings. */
static int split_kv(const char *kv, struct kafka_arena *a, struct kafka_str *k, struct kafka_str *v)
{
    const char *eq = strchr(kv, '=');
    char *key = kafka_arena_alloc(a, (size_t)(eq - kv) + 1);
    if (!key)
        return -1;
    memcpy(key, kv, (size_t)(eq - kv));
    *k = kafka_str_from_cstr(key);
    *v = kafka_str_from_cstr(eq + 1);
    return 0;
}

struct named {
    const char *const *names;
    int n;
    const struct topic_flags *f;
    const int32_t *counts; /* add-partitions: new totals */
};

/* ---- create ---- */

static int build_create(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct create_topics_request *m = req;
    const struct named *nm = ctx;
    (void)version;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)nm->n);
    if (!m->topics)
        return -1;
    for (int i = 0; i < nm->n; i++) {
        struct create_topics_request_creatable_topic *t = &m->topics[i];
        create_topics_request_creatable_topic_init(t);
        t->name = kafka_str_from_cstr(nm->names[i]);
        t->num_partitions = nm->f->partitions ? (int32_t)nm->f->partitions : (version >= 4 ? -1 : 1);
        t->replication_factor = nm->f->replicas ? (int16_t)nm->f->replicas : (version >= 4 ? -1 : 1);
        t->configs = kafka_arena_alloc(a, sizeof(*t->configs) * (size_t)(nm->f->nset + 1));
        if (!t->configs)
            return -1;
        for (int c = 0; c < nm->f->nset; c++) {
            create_topics_request_creatable_topic_config_init(&t->configs[c]);
            if (split_kv(nm->f->set[c], a, &t->configs[c].name, &t->configs[c].value) < 0)
                return -1;
        }
        t->configs_count = nm->f->nset;
    }
    m->topics_count = nm->n;
    return 0;
}

static bool create_moved(const void *response)
{
    const struct create_topics_response *m = response;
    for (int32_t i = 0; i < m->topics_count; i++)
        if (m->topics[i].error_code == KAFKA_ERR_NOT_CONTROLLER)
            return true;
    return false;
}

static int topic_create(struct cli_conn *c, struct named *nm)
{
    struct cli_reply r;
    int rc = cli_call_controller(c, KAFKA_API_KEY_CREATE_TOPICS, build_create, nm, create_moved, &r);
    if (rc)
        return rc;
    const struct create_topics_response *m = r.response;
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct create_topics_response_creatable_topic_result *t = &m->topics[i];
        char what[400], hint[400];
        snprintf(what, sizeof(what), "cannot create topic '%s'", cli_str(t->name));
        if (t->error_code == KAFKA_ERR_TOPIC_ALREADY_EXISTS) {
            snprintf(what, sizeof(what), "topic '%s' already exists", cli_str(t->name));
            snprintf(hint, sizeof(hint), "use `cairn topic describe %s`", cli_str(t->name));
            rc = cli_kafka_fail(t->error_code, t->error_message, what, hint);
        } else if (t->error_code == KAFKA_ERR_INVALID_CONFIG) {
            rc = cli_kafka_fail(t->error_code, t->error_message, what, "check the -c key=value settings");
        } else if (t->error_code != KAFKA_ERR_NONE) {
            rc = cli_kafka_fail(t->error_code, t->error_message, what, "see the broker's message above");
        } else {
            printf("created topic '%s'", cli_str(t->name));
            if (r.version >= 5)
                printf(" (%d partitions, replication factor %d)", (int)t->num_partitions, (int)t->replication_factor);
            printf("\n");
        }
    }
    cli_reply_free(&r);
    return rc;
}

/* ---- list ---- */

static int by_name(const void *a, const void *b)
{
    const struct metadata_response_metadata_response_topic *x = *(const void *const *)a, *y = *(const void *const *)b;
    int32_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = n > 0 ? memcmp(x->name.data, y->name.data, (size_t)n) : 0;
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

static int topic_list(struct cli_conn *c, const struct topic_flags *f, bool json)
{
    struct cli_reply r;
    int rc = cli_metadata(c, NULL, -1, &r);
    if (rc)
        return rc;
    const struct metadata_response *m = r.response;
    static const char *const headers[] = {"NAME", "PARTITIONS", "REPLICAS"};
    struct cli_table *t = json ? NULL : cli_table_new(3, headers);
    json_t *arr = json ? json_array() : NULL;
    /* Sorted by name, as the broker lists topics in no particular order. */
    const struct metadata_response_metadata_response_topic **sorted = calloc((size_t)m->topics_count + 1,
                                                                             sizeof(*sorted));
    if (!sorted) {
        cli_reply_free(&r);
        json_decref(arr);
        cli_table_free(t);
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    }
    for (int32_t i = 0; i < m->topics_count; i++)
        sorted[i] = &m->topics[i];
    qsort(sorted, (size_t)m->topics_count, sizeof(*sorted), by_name);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct metadata_response_metadata_response_topic *tp = sorted[i];
        if ((tp->is_internal && !f->internal) || tp->error_code != KAFKA_ERR_NONE)
            continue;
        int32_t rf = tp->partitions_count ? tp->partitions[0].replica_nodes_count : 0;
        if (json) {
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:b}", "name", cli_str(tp->name), "partitions",
                                                 (int)tp->partitions_count, "replicas", (int)rf, "internal",
                                                 tp->is_internal));
        } else {
            char np[16], nr[16];
            snprintf(np, sizeof(np), "%d", (int)tp->partitions_count);
            snprintf(nr, sizeof(nr), "%d", (int)rf);
            cli_table_add(t, cli_str(tp->name), np, nr);
        }
    }
    free(sorted);
    cli_reply_free(&r);
    if (json)
        return cli_json_print(arr);
    cli_table_print(t);
    return CLI_EXIT_OK;
}

/* ---- describe ---- */

static int build_describe_configs(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct describe_configs_request *m = req;
    (void)version;
    m->resources = kafka_arena_alloc(a, sizeof(*m->resources));
    if (!m->resources)
        return -1;
    describe_configs_request_describe_configs_resource_init(&m->resources[0]);
    m->resources[0].resource_type = 2; /* topic */
    m->resources[0].resource_name = kafka_str_from_cstr(ctx);
    m->resources[0].configuration_keys_count = -1; /* all */
    m->resources_count = 1;
    return 0;
}

/* v0 carries is_default instead of a source. */
static int8_t config_source(const struct describe_configs_response_describe_configs_resource_result *e, int16_t version)
{
    if (version >= 1)
        return e->config_source;
    return e->is_default ? 5 : 1;
}

static int topic_describe(struct cli_conn *c, const char *name, bool json)
{
    struct cli_reply mr, cr;
    int rc = cli_metadata(c, &name, 1, &mr);
    if (rc)
        return rc;
    const struct metadata_response *m = mr.response;
    const struct metadata_response_metadata_response_topic *tp = m->topics_count == 1 ? &m->topics[0] : NULL;
    if (!tp || tp->error_code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "topic '%s' does not exist", name);
        rc = cli_kafka_fail(tp ? tp->error_code : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1},
                            what, "see `cairn topic list`");
        cli_reply_free(&mr);
        return rc;
    }
    rc = cli_call(c, c->controller_id, KAFKA_API_KEY_DESCRIBE_CONFIGS, build_describe_configs, (void *)name, &cr);
    if (rc) {
        cli_reply_free(&mr);
        return rc;
    }
    const struct describe_configs_response *d = cr.response;
    const struct describe_configs_response_describe_configs_result *res = d->results_count ? &d->results[0] : NULL;
    if (res && res->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(res->error_code, res->error_message, "cannot describe the topic's configs", NULL);
        res = NULL;
    }
    json_t *jparts = json_array(), *jconfigs = json_array();
    static const char *const ph[] = {"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"};
    static const char *const ch[] = {"KEY", "VALUE", "SOURCE"};
    struct cli_table *pt = json ? NULL : cli_table_new(5, ph);
    struct cli_table *ct = json ? NULL : cli_table_new(3, ch);
    for (int32_t i = 0; i < tp->partitions_count; i++) {
        const struct metadata_response_metadata_response_partition *p = &tp->partitions[i];
        char reps[256], isr[256], pi[16], ld[16], ep[16];
        cli_int_list(p->replica_nodes, p->replica_nodes_count, reps, sizeof(reps));
        cli_int_list(p->isr_nodes, p->isr_nodes_count, isr, sizeof(isr));
        json_t *jr = json_array(), *ji = json_array();
        for (int32_t k = 0; k < p->replica_nodes_count; k++)
            json_array_append_new(jr, json_integer(p->replica_nodes[k]));
        for (int32_t k = 0; k < p->isr_nodes_count; k++)
            json_array_append_new(ji, json_integer(p->isr_nodes[k]));
        json_array_append_new(jparts, json_pack("{s:i, s:i, s:i, s:o, s:o}", "partition", (int)p->partition_index,
                                                "leader", (int)p->leader_id, "leader_epoch", (int)p->leader_epoch,
                                                "replicas", jr, "isr", ji));
        snprintf(pi, sizeof(pi), "%d", (int)p->partition_index);
        snprintf(ld, sizeof(ld), "%d", (int)p->leader_id);
        snprintf(ep, sizeof(ep), "%d", (int)p->leader_epoch);
        cli_table_add(pt, pi, ld, ep, reps, isr);
    }
    for (int32_t i = 0; res && i < res->configs_count; i++) {
        const struct describe_configs_response_describe_configs_resource_result *e = &res->configs[i];
        const char *src = cli_config_source_name(config_source(e, cr.version));
        const char *val = e->is_sensitive ? "(sensitive)" : cli_str(e->value);
        json_array_append_new(jconfigs,
                              json_pack("{s:s, s:s?, s:s, s:b}", "name", cli_str(e->name), "value",
                                        e->value.len < 0 ? NULL : val, "source", src, "read_only", e->read_only));
        cli_table_add(ct, cli_str(e->name), val, src);
    }
    int32_t rf = tp->partitions_count ? tp->partitions[0].replica_nodes_count : 0;
    if (json) {
        cli_table_print(pt);
        cli_table_print(ct);
        cli_json_print(json_pack("{s:s, s:b, s:i, s:i, s:o, s:o}", "name", name, "internal", tp->is_internal,
                                 "partition_count", (int)tp->partitions_count, "replication_factor", (int)rf,
                                 "partitions", jparts, "configs", jconfigs));
    } else {
        json_decref(jparts);
        json_decref(jconfigs);
        printf("NAME        %s\nINTERNAL    %s\nPARTITIONS  %d\nREPLICAS    %d\n\nCONFIGS\n", name,
               tp->is_internal ? "true" : "false", (int)tp->partitions_count, (int)rf);
        cli_table_print(ct);
        printf("\nPARTITIONS\n");
        cli_table_print(pt);
    }
    cli_reply_free(&cr);
    cli_reply_free(&mr);
    return rc;
}

/* ---- delete ---- */

static int build_delete(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct delete_topics_request *m = req;
    const struct named *nm = ctx;
    m->timeout_ms = 30000;
    if (version >= 6) {
        m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)nm->n);
        if (!m->topics)
            return -1;
        for (int i = 0; i < nm->n; i++) {
            delete_topics_request_delete_topic_state_init(&m->topics[i]);
            m->topics[i].name = kafka_str_from_cstr(nm->names[i]);
        }
        m->topics_count = nm->n;
    } else {
        m->topic_names = kafka_arena_alloc(a, sizeof(*m->topic_names) * (size_t)nm->n);
        if (!m->topic_names)
            return -1;
        for (int i = 0; i < nm->n; i++)
            m->topic_names[i] = kafka_str_from_cstr(nm->names[i]);
        m->topic_names_count = nm->n;
    }
    return 0;
}

static bool delete_moved(const void *response)
{
    const struct delete_topics_response *m = response;
    for (int32_t i = 0; i < m->responses_count; i++)
        if (m->responses[i].error_code == KAFKA_ERR_NOT_CONTROLLER)
            return true;
    return false;
}

static int topic_delete(struct cli_conn *c, struct named *nm)
{
    struct cli_reply r;
    int rc = cli_call_controller(c, KAFKA_API_KEY_DELETE_TOPICS, build_delete, nm, delete_moved, &r);
    if (rc)
        return rc;
    const struct delete_topics_response *m = r.response;
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct delete_topics_response_deletable_topic_result *t = &m->responses[i];
        char what[400];
        snprintf(what, sizeof(what), "cannot delete topic '%s'", cli_str(t->name));
        if (t->error_code != KAFKA_ERR_NONE)
            rc = cli_kafka_fail(t->error_code, t->error_message, what,
                                t->error_code == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION ? "see `cairn topic list`"
                                                                                      : NULL);
        else
            printf("deleted topic '%s'\n", cli_str(t->name));
    }
    cli_reply_free(&r);
    return rc;
}

/* ---- add-partitions ---- */

static int build_create_partitions(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct create_partitions_request *m = req;
    const struct named *nm = ctx;
    (void)version;
    m->timeout_ms = 30000;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)nm->n);
    if (!m->topics)
        return -1;
    for (int i = 0; i < nm->n; i++) {
        create_partitions_request_create_partitions_topic_init(&m->topics[i]);
        m->topics[i].name = kafka_str_from_cstr(nm->names[i]);
        m->topics[i].count = nm->counts[i];
        m->topics[i].assignments_count = -1;
    }
    m->topics_count = nm->n;
    return 0;
}

static bool create_partitions_moved(const void *response)
{
    const struct create_partitions_response *m = response;
    for (int32_t i = 0; i < m->results_count; i++)
        if (m->results[i].error_code == KAFKA_ERR_NOT_CONTROLLER)
            return true;
    return false;
}

static int topic_add_partitions(struct cli_conn *c, struct named *nm)
{
    struct cli_reply mr, r;
    int rc = cli_metadata(c, nm->names, nm->n, &mr);
    if (rc)
        return rc;
    int32_t counts[MAX_ITEMS];
    const struct metadata_response *m = mr.response;
    for (int i = 0; i < nm->n && rc == 0; i++) {
        const struct metadata_response_metadata_response_topic *tp = i < m->topics_count ? &m->topics[i] : NULL;
        if (!tp || tp->error_code != KAFKA_ERR_NONE) {
            char what[400];
            snprintf(what, sizeof(what), "topic '%s' does not exist", nm->names[i]);
            rc = cli_kafka_fail(tp ? tp->error_code : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
                                (struct kafka_str){NULL, -1}, what, "see `cairn topic list`");
        } else {
            counts[i] = tp->partitions_count + (int32_t)nm->f->add;
        }
    }
    cli_reply_free(&mr);
    if (rc)
        return rc;
    nm->counts = counts;
    rc = cli_call_controller(c, KAFKA_API_KEY_CREATE_PARTITIONS, build_create_partitions, nm, create_partitions_moved,
                             &r);
    if (rc)
        return rc;
    const struct create_partitions_response *cp = r.response;
    for (int32_t i = 0; i < cp->results_count; i++) {
        const struct create_partitions_response_create_partitions_topic_result *t = &cp->results[i];
        char what[400];
        snprintf(what, sizeof(what), "cannot add partitions to '%s'", cli_str(t->name));
        if (t->error_code != KAFKA_ERR_NONE)
            rc = cli_kafka_fail(t->error_code, t->error_message, what, NULL);
        else
            printf("topic '%s' now has %d partitions\n", cli_str(t->name), (int)counts[i < nm->n ? i : 0]);
    }
    cli_reply_free(&r);
    return rc;
}

/* ---- alter-config ---- */

static int build_alter(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct incremental_alter_configs_request *m = req;
    const struct named *nm = ctx;
    const struct topic_flags *f = nm->f;
    (void)version;
    m->resources = kafka_arena_alloc(a, sizeof(*m->resources));
    if (!m->resources)
        return -1;
    struct incremental_alter_configs_request_alter_configs_resource *res = &m->resources[0];
    incremental_alter_configs_request_alter_configs_resource_init(res);
    res->resource_type = 2;
    res->resource_name = kafka_str_from_cstr(nm->names[0]);
    res->configs = kafka_arena_alloc(a, sizeof(*res->configs) * (size_t)(f->nset + f->ndel));
    if (!res->configs)
        return -1;
    int n = 0;
    for (int i = 0; i < f->nset; i++, n++) {
        incremental_alter_configs_request_alterable_config_init(&res->configs[n]);
        res->configs[n].config_operation = 0; /* SET */
        if (split_kv(f->set[i], a, &res->configs[n].name, &res->configs[n].value) < 0)
            return -1;
    }
    for (int i = 0; i < f->ndel; i++, n++) {
        incremental_alter_configs_request_alterable_config_init(&res->configs[n]);
        res->configs[n].config_operation = 1; /* DELETE */
        res->configs[n].name = kafka_str_from_cstr(f->del[i]);
        res->configs[n].value = (struct kafka_str){NULL, -1};
    }
    res->configs_count = n;
    m->resources_count = 1;
    return 0;
}

static int topic_alter_config(struct cli_conn *c, struct named *nm)
{
    struct cli_reply r;
    int rc = cli_call_controller(c, KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS, build_alter, nm, cli_alter_configs_moved,
                                 &r);
    if (rc)
        return rc;
    const struct incremental_alter_configs_response *m = r.response;
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct incremental_alter_configs_response_alter_configs_resource_response *e = &m->responses[i];
        char what[400];
        snprintf(what, sizeof(what), "cannot alter configs of topic '%s'", nm->names[0]);
        if (e->error_code != KAFKA_ERR_NONE)
            rc = cli_kafka_fail(e->error_code, e->error_message, what,
                                e->error_code == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION
                                    ? "see `cairn topic list`"
                                    : "check the --set key=value and --delete key names");
        else
            printf("altered %d config(s) of topic '%s'\n", nm->f->nset + nm->f->ndel, nm->names[0]);
    }
    cli_reply_free(&r);
    return rc;
}

/* ---- dispatch ---- */

static const char topic_usage[] =
    "usage: cairn topic <subcommand> [flags]\n"
    "  create NAME... [-p/--partitions N] [-r/--replicas N] [-c/--config key=value]...\n"
    "  list [--internal] [--format json]\n"
    "  describe NAME [--format json]\n"
    "  delete NAME...\n"
    "  add-partitions NAME... -n/--num N      add N partitions to each topic\n"
    "  alter-config NAME [--set key=value]... [--delete key]...\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

int cli_topic_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(topic_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    static const char *const subs[] = {"create", "list", "describe", "delete", "add-partitions", "alter-config"};
    int which = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(sub, subs[i]))
            which = i;
    if (which < 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'topic %s'\n%s", sub, topic_usage);

    struct topic_flags f = {0};
    struct cli_settings s;
    char *pos[MAX_ITEMS];
    int npos = 0;
    int rc = cli_parse(argc - 1, argv + 1, topic_usage, "p:r:c:n:", topic_long, on_flag, &f, &s, pos, &npos, MAX_ITEMS);
    if (rc >= 0)
        return rc;
    int want_min = which == 1 ? 0 : 1, want_max = (which == 1) ? 0 : (which == 2 || which == 5) ? 1 : MAX_ITEMS;
    if (npos < want_min || npos > want_max)
        return cli_fail(CLI_EXIT_USAGE, "topic %s wants %s\n%s", sub,
                        want_max == 0   ? "no topic name"
                        : want_max == 1 ? "one topic name"
                                        : "topic names",
                        topic_usage);
    if (which == 4 && !f.add)
        return cli_fail(CLI_EXIT_USAGE, "topic add-partitions wants -n/--num N\n%s", topic_usage);
    if (which == 5 && f.nset + f.ndel == 0)
        return cli_fail(CLI_EXIT_USAGE, "topic alter-config wants --set key=value or --delete key\n%s", topic_usage);

    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    struct named nm = {(const char *const *)pos, npos, &f, NULL};
    switch (which) {
    case 0:
        rc = topic_create(&c, &nm);
        break;
    case 1:
        rc = topic_list(&c, &f, s.json);
        break;
    case 2:
        rc = topic_describe(&c, pos[0], s.json);
        break;
    case 3:
        rc = topic_delete(&c, &nm);
        break;
    case 4:
        rc = topic_add_partitions(&c, &nm);
        break;
    default:
        rc = topic_alter_config(&c, &nm);
        break;
    }
    cli_close(&c);
    return rc;
}
