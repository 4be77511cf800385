/* cairn group: list, and describe with members, assignments and lag
 * (reset-offsets and delete-offsets are in group_offsets.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* One partition the group committed to or has assigned; main thread only. */
struct group_row {
    char topic[256];
    int32_t partition;
    int64_t committed; /* -1: none */
    int64_t log_end;   /* -1: unknown */
    int32_t leader;
    const char *member; /* points into the DescribeGroups reply */
};

struct group_rows {
    struct group_row *v;
    int n, cap;
};

static struct group_row *row_find_or_add(struct group_rows *rs, struct kafka_str topic, int32_t partition)
{
    for (int i = 0; i < rs->n; i++)
        if (rs->v[i].partition == partition && (int32_t)strlen(rs->v[i].topic) == topic.len &&
            !memcmp(rs->v[i].topic, topic.data, (size_t)topic.len))
            return &rs->v[i];
    if (rs->n == rs->cap) {
        int cap = rs->cap ? rs->cap * 2 : 16;
        struct group_row *grown = realloc(rs->v, sizeof(*grown) * (size_t)cap);
        if (!grown)
            return NULL;
        rs->v = grown;
        rs->cap = cap;
    }
    struct group_row *r = &rs->v[rs->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->topic, sizeof(r->topic), "%s", cli_str(topic));
    r->partition = partition;
    r->committed = -1;
    r->log_end = -1;
    r->leader = -1;
    return r;
}

static int row_cmp(const void *a, const void *b)
{
    const struct group_row *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

int cli_assignment_each(struct kafka_bytes b, cli_assignment_fn fn, void *ctx)
{
    if (b.len <= 0)
        return 0;
    struct kafka_reader r;
    kafka_reader_init(&r, b.data, (size_t)b.len);
    (void)kafka_read_int16(&r); /* every version starts with the same topic list */
    int32_t nt = kafka_read_array_len(&r, 6);
    for (int32_t t = 0; t < nt && !r.failed; t++) {
        struct kafka_str topic = kafka_read_string(&r);
        int32_t np = kafka_read_array_len(&r, 4);
        for (int32_t p = 0; p < np && !r.failed; p++) {
            int32_t part = kafka_read_int32(&r);
            if (!r.failed)
                fn(topic, part, ctx);
        }
    }
    return r.failed || nt < 0 ? -1 : 0;
}

/* Collects one member's assignment into the rows, its JSON and its text. */
struct member_assignment {
    struct group_rows *rs;
    const char *member;
    json_t *json; /* {"topic": [partitions]} */
    char text[1024];
    size_t used;
    char last_topic[256];
};

static void on_assigned(struct kafka_str topic, int32_t partition, void *ctx)
{
    struct member_assignment *ma = ctx;
    const char *name = cli_str(topic);
    bool same = !strcmp(name, ma->last_topic);
    if (ma->used < sizeof(ma->text))
        ma->used += (size_t)snprintf(ma->text + ma->used, sizeof(ma->text) - ma->used, "%s%s%s%d",
                                     same ? "" : (ma->used ? " " : ""), same ? "" : name, same ? "," : ":",
                                     (int)partition);
    snprintf(ma->last_topic, sizeof(ma->last_topic), "%s", name);
    json_t *parts = json_object_get(ma->json, name);
    if (!parts) {
        parts = json_array();
        json_object_set_new(ma->json, name, parts);
    }
    json_array_append_new(parts, json_integer(partition));
    struct group_row *row = row_find_or_add(ma->rs, topic, partition);
    if (row)
        row->member = ma->member;
}

int cli_build_describe_groups(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct describe_groups_request *m = req;
    (void)version;
    m->groups = kafka_arena_alloc(a, sizeof(*m->groups));
    if (!m->groups)
        return -1;
    m->groups[0] = kafka_str_from_cstr(ctx);
    m->groups_count = 1;
    return 0;
}

int cli_build_offset_fetch_all(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct offset_fetch_request *m = req;
    if (version < 2)
        return -1; /* "all topics" needs v2 */
    if (version >= 8) {
        m->groups = kafka_arena_alloc(a, sizeof(*m->groups));
        if (!m->groups)
            return -1;
        offset_fetch_request_offset_fetch_request_group_init(&m->groups[0]);
        m->groups[0].group_id = kafka_str_from_cstr(ctx);
        m->groups[0].topics_count = -1;
        m->groups_count = 1;
    } else {
        m->group_id = kafka_str_from_cstr(ctx);
        m->topics_count = -1;
    }
    return 0;
}

/* Reads the leader of every row from Metadata, then each leader's log end
 * offsets. Rows whose leader is unknown keep log_end -1. */
static int fill_log_ends(struct cli_conn *c, struct group_rows *rs)
{
    if (!rs->n)
        return 0;
    const char **names = calloc((size_t)rs->n, sizeof(*names));
    if (!names)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    int nn = 0;
    for (int i = 0; i < rs->n; i++)
        if (i == 0 || strcmp(rs->v[i].topic, rs->v[i - 1].topic)) /* rows are sorted */
            names[nn++] = rs->v[i].topic;
    struct cli_reply mr;
    int rc = cli_metadata(c, names, nn, &mr);
    free(names);
    if (rc)
        return rc;
    const struct metadata_response *m = mr.response;
    for (int i = 0; i < rs->n; i++)
        rs->v[i].leader = cli_metadata_leader(m, rs->v[i].topic, rs->v[i].partition);
    cli_reply_free(&mr);
    struct cli_offset_query *q = calloc((size_t)rs->n, sizeof(*q));
    if (!q)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    for (int i = 0; i < rs->n; i++)
        q[i] = (struct cli_offset_query){
            .topic = rs->v[i].topic, .partition = rs->v[i].partition, .leader = rs->v[i].leader};
    rc = cli_list_offsets(c, q, rs->n, -1);
    for (int i = 0; i < rs->n && rc == 0; i++)
        rs->v[i].log_end = q[i].offset;
    free(q);
    return rc;
}

int cli_offset_fetch_each(const struct cli_reply *r, const char *group, cli_committed_fn fn, void *ctx)
{
    const struct offset_fetch_response *m = r->response;
    int16_t code = m->error_code;
    if (r->version >= 8)
        code = m->groups_count ? m->groups[0].error_code : KAFKA_ERR_NONE;
    if (code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "cannot read committed offsets of group '%s'", group);
        return cli_kafka_fail(code, (struct kafka_str){NULL, -1}, what, NULL);
    }
    if (r->version >= 8) {
        for (int32_t g = 0; g < m->groups_count; g++)
            for (int32_t t = 0; t < m->groups[g].topics_count; t++)
                for (int32_t p = 0; p < m->groups[g].topics[t].partitions_count; p++) {
                    const struct offset_fetch_response_offset_fetch_response_partitions
                        *pp = &m->groups[g].topics[t].partitions[p];
                    fn(m->groups[g].topics[t].name, pp->partition_index, pp->committed_offset, ctx);
                }
        return 0;
    }
    for (int32_t t = 0; t < m->topics_count; t++)
        for (int32_t p = 0; p < m->topics[t].partitions_count; p++) {
            const struct offset_fetch_response_offset_fetch_response_partition *pp = &m->topics[t].partitions[p];
            fn(m->topics[t].name, pp->partition_index, pp->committed_offset, ctx);
        }
    return 0;
}

static void on_committed(struct kafka_str topic, int32_t partition, int64_t offset, void *ctx)
{
    struct group_row *row = row_find_or_add(ctx, topic, partition);
    if (row)
        row->committed = offset;
}

static void print_group(const char *group, const struct describe_groups_response_described_group *g, json_t *jmembers,
                        struct cli_table *mt, struct group_rows *rs, bool json)
{
    static const char *const oh[] = {"TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER"};
    json_t *joff = json_array();
    struct cli_table *ot = json ? NULL : cli_table_new(6, oh);
    int64_t total = 0;
    for (int i = 0; i < rs->n; i++) {
        const struct group_row *row = &rs->v[i];
        int64_t lag = row->committed >= 0 && row->log_end >= 0 ? row->log_end - row->committed : -1;
        if (lag > 0)
            total += lag;
        json_array_append_new(joff, json_pack("{s:s, s:i, s:I, s:I, s:I, s:s?}", "topic", row->topic, "partition",
                                              (int)row->partition, "committed", (json_int_t)row->committed, "log_end",
                                              (json_int_t)row->log_end, "lag", (json_int_t)lag, "member", row->member));
        char p[16], co[24], le[24], lg[24];
        snprintf(p, sizeof(p), "%d", (int)row->partition);
        snprintf(co, sizeof(co), row->committed >= 0 ? "%lld" : "-", (long long)row->committed);
        snprintf(le, sizeof(le), row->log_end >= 0 ? "%lld" : "-", (long long)row->log_end);
        snprintf(lg, sizeof(lg), lag >= 0 ? "%lld" : "-", (long long)lag);
        cli_table_add(ot, row->topic, p, co, le, lg, row->member ? row->member : "-");
    }
    if (json) {
        cli_json_print(json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "group", group, "state",
                                 cli_str(g->group_state), "protocol_type", cli_str(g->protocol_type), "protocol",
                                 cli_str(g->protocol_data), "total_lag", (json_int_t)total, "members", jmembers,
                                 "offsets", joff));
        return;
    }
    json_decref(jmembers);
    json_decref(joff);
    printf("GROUP       %s\nSTATE       %s\nPROTOCOL    %s %s\nTOTAL LAG   %lld\n\nMEMBERS\n", group,
           cli_str(g->group_state), cli_str(g->protocol_type), cli_str(g->protocol_data), (long long)total);
    cli_table_print(mt);
    printf("\nOFFSETS\n");
    cli_table_print(ot);
}

static int group_describe(struct cli_conn *c, const char *group, bool json)
{
    int32_t coord;
    int rc = cli_coordinator(c, group, &coord);
    if (rc)
        return rc;
    struct cli_reply dr, fr;
    rc = cli_call(c, coord, KAFKA_API_KEY_DESCRIBE_GROUPS, cli_build_describe_groups, (void *)group, &dr);
    if (rc)
        return rc;
    const struct describe_groups_response *d = dr.response;
    const struct describe_groups_response_described_group *g = d->groups_count ? &d->groups[0] : NULL;
    if (!g || g->error_code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "cannot describe group '%s'", group);
        rc = cli_kafka_fail(g ? g->error_code : KAFKA_ERR_GROUP_ID_NOT_FOUND, (struct kafka_str){NULL, -1}, what,
                            "see `cairn group list`");
        cli_reply_free(&dr);
        return rc;
    }
    if (!strcmp(cli_str(g->group_state), "Dead")) {
        char what[400];
        snprintf(what, sizeof(what), "group '%s' does not exist", group);
        rc = cli_kafka_fail(KAFKA_ERR_GROUP_ID_NOT_FOUND, (struct kafka_str){NULL, -1}, what, "see `cairn group list`");
        cli_reply_free(&dr);
        return rc;
    }
    struct group_rows rs = {0};
    json_t *jmembers = json_array();
    static const char *const mh[] = {"MEMBER", "CLIENT-ID", "HOST", "ASSIGNMENT"};
    struct cli_table *mt = json ? NULL : cli_table_new(4, mh);
    bool consumer = !strcmp(cli_str(g->protocol_type), "consumer");
    /* Member ids outlive cli_str's ring: rows point at them until printed. */
    char **owned = calloc((size_t)g->members_count + 1, sizeof(char *));
    for (int32_t i = 0; owned && i < g->members_count; i++) {
        const struct describe_groups_response_described_group_member *mem = &g->members[i];
        owned[i] = strdup(cli_str(mem->member_id));
        struct member_assignment ma = {.rs = &rs, .member = owned[i], .json = json_object()};
        if (consumer && cli_assignment_each(mem->member_assignment, on_assigned, &ma) < 0)
            snprintf(ma.text, sizeof(ma.text), "(undecodable, %d bytes)", (int)mem->member_assignment.len);
        else if (!consumer)
            snprintf(ma.text, sizeof(ma.text), "(%d bytes)", (int)mem->member_assignment.len);
        json_array_append_new(jmembers, json_pack("{s:s?, s:s, s:s, s:o}", "member_id", owned[i], "client_id",
                                                  cli_str(mem->client_id), "host", cli_str(mem->client_host),
                                                  "assignment", ma.json));
        cli_table_add(mt, owned[i] ? owned[i] : "", cli_str(mem->client_id), cli_str(mem->client_host), ma.text);
    }
    rc = owned ? cli_call(c, coord, KAFKA_API_KEY_OFFSET_FETCH, cli_build_offset_fetch_all, (void *)group, &fr)
               : cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    if (rc == 0) {
        rc = cli_offset_fetch_each(&fr, group, on_committed, &rs);
        cli_reply_free(&fr);
    }
    if (rs.n)
        qsort(rs.v, (size_t)rs.n, sizeof(rs.v[0]), row_cmp);
    if (rc == 0)
        rc = fill_log_ends(c, &rs);
    if (rc == 0) {
        print_group(group, g, jmembers, mt, &rs, json);
    } else {
        json_decref(jmembers);
        cli_table_free(mt);
    }
    for (int32_t i = 0; owned && i < g->members_count; i++)
        free(owned[i]);
    free(owned);
    free(rs.v);
    cli_reply_free(&dr);
    return rc;
}

static int build_list_groups(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    (void)req;
    (void)version;
    (void)a;
    (void)ctx;
    return 0;
}

/* ListGroups goes to every broker: each lists the groups it coordinates. */
static int group_list(struct cli_conn *c, bool json)
{
    static const char *const headers[] = {"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"};
    struct cli_table *t = json ? NULL : cli_table_new(4, headers);
    json_t *arr = json_array();
    int rc = 0;
    for (int32_t b = 0; b < c->meta->brokers_count && rc == 0; b++) {
        int32_t node = c->meta->brokers[b].node_id;
        struct cli_reply r;
        rc = cli_call(c, node, KAFKA_API_KEY_LIST_GROUPS, build_list_groups, NULL, &r);
        if (rc)
            break;
        const struct list_groups_response *m = r.response;
        if (m->error_code != KAFKA_ERR_NONE) {
            rc = cli_kafka_fail(m->error_code, (struct kafka_str){NULL, -1}, "cannot list groups",
                                "retry shortly, or check the broker log");
        }
        for (int32_t i = 0; rc == 0 && i < m->groups_count; i++) {
            const struct list_groups_response_listed_group *g = &m->groups[i];
            char node_txt[16];
            snprintf(node_txt, sizeof(node_txt), "%d", (int)node);
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:i}", "group", cli_str(g->group_id), "state",
                                                 cli_str(g->group_state), "protocol_type", cli_str(g->protocol_type),
                                                 "coordinator", (int)node));
            cli_table_add(t, cli_str(g->group_id), g->group_state.len < 0 ? "-" : cli_str(g->group_state),
                          cli_str(g->protocol_type), node_txt);
        }
        cli_reply_free(&r);
    }
    if (rc) {
        json_decref(arr);
        cli_table_free(t);
        return rc;
    }
    if (json)
        return cli_json_print(arr);
    json_decref(arr);
    cli_table_print(t);
    return CLI_EXIT_OK;
}

static int build_delete_groups(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct delete_groups_request *m = req;
    (void)version;
    m->groups_names = kafka_arena_alloc(a, sizeof(*m->groups_names));
    if (!m->groups_names)
        return -1;
    m->groups_names[0] = kafka_str_from_cstr(ctx);
    m->groups_names_count = 1;
    return 0;
}

/* DeleteGroups, one group at a time to its own coordinator; every group is
 * tried. Kafka's broker refuses a group with members (NON_EMPTY_GROUP). */
static int group_delete(struct cli_conn *c, char **groups, int n)
{
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < n; i++) {
        int32_t coord;
        int one = cli_coordinator(c, groups[i], &coord);
        struct cli_reply r;
        if (one == 0)
            one = cli_call(c, coord, KAFKA_API_KEY_DELETE_GROUPS, build_delete_groups, groups[i], &r);
        if (one == CLI_EXIT_UNREACHABLE)
            return one;
        if (one == 0) {
            const struct delete_groups_response *m = r.response;
            int16_t code = m->results_count ? m->results[0].error_code : KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            if (code == KAFKA_ERR_NONE) {
                printf("deleted group '%s'\n", groups[i]);
            } else {
                char what[400];
                snprintf(what, sizeof(what), "cannot delete group '%s'", groups[i]);
                one = cli_kafka_fail(code, (struct kafka_str){NULL, -1}, what,
                                     code == KAFKA_ERR_NON_EMPTY_GROUP      ? "stop its consumers first"
                                     : code == KAFKA_ERR_GROUP_ID_NOT_FOUND ? "see `cairn group list`"
                                                                            : NULL);
            }
            cli_reply_free(&r);
        }
        if (one)
            rc = one;
    }
    return rc;
}

static const char group_usage[] =
    "usage: cairn group <subcommand> [flags]\n"
    "  list [--format json]             groups on every broker, with state and protocol type\n"
    "  describe GROUP [--format json]   members, their assignments, committed offsets, log end and lag\n"
    "  delete GROUP...                  delete groups that have no members, with their committed offsets\n"
    "  reset-offsets GROUP ...          plan (and with --execute commit) new committed offsets; see --help\n"
    "  delete-offsets GROUP --topic T   delete committed offsets; see --help\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

int cli_group_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(group_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "reset-offsets"))
        return cli_group_reset_offsets(argc - 1, argv + 1);
    if (!strcmp(argv[1], "delete-offsets"))
        return cli_group_delete_offsets(argc - 1, argv + 1);
    bool list = !strcmp(argv[1], "list"), describe = !strcmp(argv[1], "describe"), del = !strcmp(argv[1], "delete");
    if (!list && !describe && !del)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'group %s'\n%s", argv[1], group_usage);
    struct cli_settings s;
    char *pos[64];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, group_usage, "", NULL, NULL, NULL, &s, pos, &npos,
                       describe ? 1
                       : del    ? 64
                                : 0);
    if (rc >= 0)
        return rc;
    if (describe && npos != 1)
        return cli_fail(CLI_EXIT_USAGE, "group describe wants one group id\n%s", group_usage);
    if (del && npos < 1)
        return cli_fail(CLI_EXIT_USAGE, "group delete wants one or more group ids\n%s", group_usage);
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = list ? group_list(&c, s.json) : del ? group_delete(&c, pos, npos) : group_describe(&c, pos[0], s.json);
    cli_close(&c);
    return rc;
}
