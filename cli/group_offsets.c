/* cairn group reset-offsets and delete-offsets, as kafka-consumer-groups.sh
 * --reset-offsets and --delete-offsets do them: a reset is planned from the
 * committed offsets (OffsetFetch) and each partition's earliest, latest or
 * by-time offset (ListOffsets to its leader), printed, and committed with
 * a simple OffsetCommit (generation -1, no member) only with --execute,
 * and only while the group has no members. */
/* timegm: the build defines _GNU_SOURCE */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"

/* One partition of a reset or delete plan; main thread only. */
struct plan_part {
    char topic[256];
    int32_t partition;
    int32_t leader;                    /* -1: unknown */
    int64_t current;                   /* committed offset, -1: none */
    int64_t earliest, latest, at_time; /* from ListOffsets, -1: unknown */
    int64_t target;
    int16_t error;
};

struct plan {
    struct plan_part *v;
    int n, cap;
    bool no_committed; /* on_committed adds nothing, only fills current */
};

static struct plan_part *plan_find(struct plan *pl, const char *topic, size_t len, int32_t partition)
{
    for (int i = 0; i < pl->n; i++)
        if (pl->v[i].partition == partition && strlen(pl->v[i].topic) == len && !memcmp(pl->v[i].topic, topic, len))
            return &pl->v[i];
    return NULL;
}

static struct plan_part *plan_add(struct plan *pl, const char *topic, size_t len, int32_t partition)
{
    struct plan_part *p = plan_find(pl, topic, len, partition);
    if (p)
        return p;
    if (len >= sizeof(p->topic))
        return NULL;
    if (pl->n == pl->cap) {
        int cap = pl->cap ? pl->cap * 2 : 16;
        struct plan_part *grown = realloc(pl->v, sizeof(*grown) * (size_t)cap);
        if (!grown)
            return NULL;
        pl->v = grown;
        pl->cap = cap;
    }
    p = &pl->v[pl->n++];
    memset(p, 0, sizeof(*p));
    memcpy(p->topic, topic, len);
    p->partition = partition;
    p->leader = -1;
    p->current = p->earliest = p->latest = p->at_time = p->target = -1;
    return p;
}

static int part_cmp(const void *a, const void *b)
{
    const struct plan_part *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* ---- flags ---- */

enum reset_mode { RESET_EARLIEST = 1, RESET_LATEST, RESET_OFFSET, RESET_TIMESTAMP, RESET_SHIFT };

#define MAX_TOPIC_FLAGS 32

/* The flags of both subcommands; main thread only. */
struct offsets_flags {
    const char *topics[MAX_TOPIC_FLAGS]; /* "T" or "T:0,1,2" */
    int ntopics;
    bool all_topics, execute, dry_run;
    int modes; /* how many --to-* / --shift-by were given */
    enum reset_mode mode;
    long long value; /* offset, timestamp (ms) or shift */
};

enum {
    OPT_TOPIC = 2000,
    OPT_ALL_TOPICS,
    OPT_TO_EARLIEST,
    OPT_TO_LATEST,
    OPT_TO_OFFSET,
    OPT_TO_DATETIME,
    OPT_TO_TIMESTAMP,
    OPT_SHIFT_BY,
    OPT_EXECUTE,
    OPT_DRY_RUN,
};

static const char reset_usage[] =
    "usage: cairn group reset-offsets GROUP (--topic T[:P,P...] ... | --all-topics) MODE [--execute] [flags]\n"
    "  MODE is exactly one of:\n"
    "    --to-earliest             each partition's earliest offset\n"
    "    --to-latest               each partition's log end offset\n"
    "    --to-offset N             offset N (clamped to [earliest, latest])\n"
    "    --to-datetime ISO-8601    first offset at or after the time, e.g. 2026-01-31T12:00:00.000Z\n"
    "                              (no zone: local time); latest where none is that late\n"
    "    --to-timestamp MS         the same for milliseconds since the epoch\n"
    "    --shift-by N              committed offset + N (negative to go back), clamped to [earliest, latest]\n"
    "  --topic T[:P,P...]          a topic, or some of its partitions (repeatable)\n"
    "  --all-topics                every partition the group has committed offsets for\n"
    "  --dry-run                   print the plan only (the default)\n"
    "  --execute                   commit the plan (the group must have no members: Empty or unknown)\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

static const char delete_usage[] =
    "usage: cairn group delete-offsets GROUP --topic T[:P,P...] ... [flags]\n"
    "  --topic T[:P,P...]          delete the group's committed offsets of a topic, or of some of its\n"
    "                              partitions (repeatable); refused per partition with\n"
    "                              GROUP_SUBSCRIBED_TO_TOPIC while the group consumes the topic\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

static const struct option offsets_long[] = {
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"all-topics", no_argument, NULL, OPT_ALL_TOPICS},
    {"to-earliest", no_argument, NULL, OPT_TO_EARLIEST},
    {"to-latest", no_argument, NULL, OPT_TO_LATEST},
    {"to-offset", required_argument, NULL, OPT_TO_OFFSET},
    {"to-datetime", required_argument, NULL, OPT_TO_DATETIME},
    {"to-timestamp", required_argument, NULL, OPT_TO_TIMESTAMP},
    {"shift-by", required_argument, NULL, OPT_SHIFT_BY},
    {"execute", no_argument, NULL, OPT_EXECUTE},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {NULL, 0, NULL, 0},
};

/* "2026-01-31T12:00:00[.sss][Z|+hh:mm|-hh:mm]" to milliseconds since the
 * epoch; no zone means local time, as kafka-consumer-groups.sh reads it.
 * Returns 0 or -1. */
static int parse_datetime(const char *text, long long *ms)
{
    int y, mo, d, h, mi, s, used = 0;
    if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6 || used != 19)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970)
        return -1;
    const char *rest = text + used;
    long long frac = 0;
    if (*rest == '.') {
        int digits = 0;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*rest - '0');
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            frac *= 10;
    }
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s};
    time_t t;
    if (!*rest) {
        tm.tm_isdst = -1;
        t = mktime(&tm);
    } else {
        long offset = 0;
        if (*rest == '+' || *rest == '-') {
            int oh, om, n = 0;
            if (sscanf(rest + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || rest[1 + n] != '\0' || n != 5 || oh > 23 || om > 59)
                return -1;
            offset = (oh * 3600L + om * 60L) * (*rest == '-' ? -1 : 1);
        } else if (strcmp(rest, "Z") != 0) {
            return -1;
        }
        t = timegm(&tm) - offset;
    }
    if (t == (time_t)-1)
        return -1;
    *ms = (long long)t * 1000 + frac;
    return 0;
}

static int set_mode(struct offsets_flags *f, enum reset_mode mode)
{
    f->mode = mode;
    f->modes++;
    return -1;
}

static int on_flag(int opt, const char *arg, void *ctx)
{
    struct offsets_flags *f = ctx;
    switch (opt) {
    case OPT_TOPIC:
        if (f->ntopics == MAX_TOPIC_FLAGS)
            return cli_fail(CLI_EXIT_USAGE, "at most %d --topic flags", MAX_TOPIC_FLAGS);
        f->topics[f->ntopics++] = arg;
        return -1;
    case OPT_ALL_TOPICS:
        f->all_topics = true;
        return -1;
    case OPT_EXECUTE:
        f->execute = true;
        return -1;
    case OPT_DRY_RUN:
        f->dry_run = true;
        return -1;
    case OPT_TO_EARLIEST:
        return set_mode(f, RESET_EARLIEST);
    case OPT_TO_LATEST:
        return set_mode(f, RESET_LATEST);
    case OPT_TO_OFFSET:
        if (cli_parse_int(arg, 0, INT64_MAX, &f->value) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--to-offset wants an offset (0 or more), got '%s'", arg);
        return set_mode(f, RESET_OFFSET);
    case OPT_TO_TIMESTAMP:
        if (cli_parse_int(arg, 0, INT64_MAX, &f->value) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--to-timestamp wants milliseconds since the epoch, got '%s'", arg);
        return set_mode(f, RESET_TIMESTAMP);
    case OPT_TO_DATETIME:
        if (parse_datetime(arg, &f->value) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--to-datetime wants YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm|-hh:mm], got '%s'",
                            arg);
        return set_mode(f, RESET_TIMESTAMP);
    case OPT_SHIFT_BY:
        if (cli_parse_int(arg, INT64_MIN / 2, INT64_MAX / 2, &f->value) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--shift-by wants a whole number, got '%s'", arg);
        return set_mode(f, RESET_SHIFT);
    default:
        return CLI_EXIT_USAGE;
    }
}

/* ---- requests ---- */

static void on_committed(struct kafka_str topic, int32_t partition, int64_t offset, void *ctx)
{
    struct plan *pl = ctx;
    if (offset < 0 || topic.len <= 0)
        return;
    struct plan_part *p = pl->no_committed ? plan_find(pl, topic.data, (size_t)topic.len, partition)
                                           : plan_add(pl, topic.data, (size_t)topic.len, partition);
    if (p)
        p->current = offset;
}

/* Adds the partitions "0,2" of topic (each must exist in mt). Returns 0 or
 * an exit code. */
static int add_listed_partitions(struct plan *pl, const struct metadata_response_metadata_response_topic *mt,
                                 const char *topic, const char *flag, const char *list)
{
    char *copy = strdup(list);
    if (!copy)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    int rc = 0, count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save), count++) {
        long long v;
        bool found = false;
        if (cli_parse_int(tok, 0, INT32_MAX, &v) < 0) {
            rc = cli_fail(CLI_EXIT_USAGE, "--topic wants T or T:P,P..., got '%s'", flag);
            break;
        }
        for (int32_t p = 0; p < mt->partitions_count && !found; p++)
            found = mt->partitions[p].partition_index == v;
        if (!found) {
            char what[400];
            snprintf(what, sizeof(what), "topic '%.255s' has no partition %lld (it has %d)", topic, v,
                     (int)mt->partitions_count);
            rc = cli_kafka_fail(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1}, what, NULL);
        } else if (!plan_add(pl, topic, strlen(topic), (int32_t)v)) {
            rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        }
    }
    free(copy);
    if (rc == 0 && count == 0)
        rc = cli_fail(CLI_EXIT_USAGE, "--topic wants T or T:P,P..., got '%s'", flag);
    return rc;
}

/* Adds the partitions --topic names (all of a topic's when none are given)
 * and every partition's leader, from Metadata. Returns 0 or an exit code. */
static int plan_from_metadata(struct cli_conn *c, struct plan *pl, const struct offsets_flags *f)
{
    char buf[MAX_TOPIC_FLAGS][256]; /* the topic of each --topic */
    const char **names = calloc((size_t)(f->ntopics + pl->n + 1), sizeof(*names));
    if (!names)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    int nn = 0;
    for (int i = 0; i < f->ntopics; i++) {
        size_t len = strcspn(f->topics[i], ":");
        if (len == 0 || len >= sizeof(buf[0])) {
            free(names);
            return cli_fail(CLI_EXIT_USAGE, "--topic wants T or T:P,P..., got '%s'", f->topics[i]);
        }
        memcpy(buf[i], f->topics[i], len);
        buf[i][len] = '\0';
        names[nn++] = buf[i];
    }
    for (int i = 0; i < pl->n; i++) {
        bool seen = false;
        for (int j = 0; j < nn && !seen; j++)
            seen = !strcmp(names[j], pl->v[i].topic);
        if (!seen)
            names[nn++] = pl->v[i].topic;
    }
    struct cli_reply mr;
    int rc = nn ? cli_metadata(c, names, nn, &mr) : 0;
    free(names);
    if (rc || nn == 0)
        return rc;
    const struct metadata_response *m = mr.response;
    for (int i = 0; i < f->ntopics && rc == 0; i++) {
        const struct metadata_response_metadata_response_topic *mt = NULL;
        for (int32_t t = 0; t < m->topics_count && !mt; t++)
            if (!strcmp(cli_str(m->topics[t].name), buf[i]))
                mt = &m->topics[t];
        if (!mt || mt->error_code != KAFKA_ERR_NONE) {
            char what[400];
            snprintf(what, sizeof(what), "topic '%.255s' does not exist", buf[i]);
            rc = cli_kafka_fail(mt ? mt->error_code : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
                                (struct kafka_str){NULL, -1}, what, "see `cairn topic list`");
        } else if (strchr(f->topics[i], ':')) {
            rc = add_listed_partitions(pl, mt, buf[i], f->topics[i], strchr(f->topics[i], ':') + 1);
        } else {
            for (int32_t p = 0; p < mt->partitions_count && rc == 0; p++)
                if (!plan_add(pl, buf[i], strlen(buf[i]), mt->partitions[p].partition_index))
                    rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        }
    }
    for (int i = 0; i < pl->n; i++)
        pl->v[i].leader = cli_metadata_leader(m, pl->v[i].topic, pl->v[i].partition);
    cli_reply_free(&mr);
    return rc;
}

/* Fills earliest (-2), latest (-1) or at_time (ms) of every partition
 * from its leader. Returns 0 or an exit code (a partition's error named). */
static int list_offsets(struct cli_conn *c, struct plan *pl, int64_t timestamp)
{
    struct cli_offset_query *q = calloc((size_t)(pl->n ? pl->n : 1), sizeof(*q));
    if (!q)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    for (int i = 0; i < pl->n; i++)
        q[i] = (struct cli_offset_query){
            .topic = pl->v[i].topic, .partition = pl->v[i].partition, .leader = pl->v[i].leader};
    int rc = cli_list_offsets(c, q, pl->n, timestamp);
    for (int i = 0; i < pl->n && rc == 0; i++) {
        struct plan_part *p = &pl->v[i];
        if (q[i].error != KAFKA_ERR_NONE) {
            char what[400];
            snprintf(what, sizeof(what), "cannot look up offsets of %s:%d", p->topic, (int)p->partition);
            rc = cli_kafka_fail(q[i].error, (struct kafka_str){NULL, -1}, what, "retry shortly");
            break;
        }
        *(timestamp == -2 ? &p->earliest : timestamp == -1 ? &p->latest : &p->at_time) = q[i].offset;
    }
    free(q);
    return rc;
}

/* Reads the group's state and committed offsets. state gets "Dead" for a
 * group the coordinator does not know. Returns 0 or an exit code. */
static int read_group(struct cli_conn *c, const char *group, int32_t coord, struct plan *pl, char *state,
                      size_t state_len, int *members)
{
    struct cli_reply dr, fr;
    int rc = cli_call(c, coord, KAFKA_API_KEY_DESCRIBE_GROUPS, cli_build_describe_groups, (void *)group, &dr);
    if (rc)
        return rc;
    const struct describe_groups_response *d = dr.response;
    const struct describe_groups_response_described_group *g = d->groups_count ? &d->groups[0] : NULL;
    if (g && g->error_code == KAFKA_ERR_GROUP_ID_NOT_FOUND) {
        snprintf(state, state_len, "Dead");
        *members = 0;
    } else if (!g || g->error_code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "cannot describe group '%s'", group);
        rc = cli_kafka_fail(g ? g->error_code : KAFKA_ERR_UNKNOWN_SERVER_ERROR, (struct kafka_str){NULL, -1}, what,
                            "retry shortly");
    } else {
        snprintf(state, state_len, "%s", cli_str(g->group_state));
        *members = g->members_count;
    }
    cli_reply_free(&dr);
    if (rc)
        return rc;
    rc = cli_call(c, coord, KAFKA_API_KEY_OFFSET_FETCH, cli_build_offset_fetch_all, (void *)group, &fr);
    if (rc)
        return rc;
    rc = cli_offset_fetch_each(&fr, group, on_committed, pl);
    cli_reply_free(&fr);
    return rc;
}

static int64_t clamp(int64_t v, const struct plan_part *p)
{
    return v < p->earliest ? p->earliest : v > p->latest ? p->latest : v;
}

/* New offsets for every partition. Returns 0 or an exit code. */
static int compute_targets(struct plan *pl, const struct offsets_flags *f)
{
    for (int i = 0; i < pl->n; i++) {
        struct plan_part *p = &pl->v[i];
        switch (f->mode) {
        case RESET_EARLIEST:
            p->target = p->earliest;
            break;
        case RESET_LATEST:
            p->target = p->latest;
            break;
        case RESET_OFFSET:
            p->target = clamp(f->value, p);
            break;
        case RESET_TIMESTAMP: /* no record that late: the log end, as Kafka's tool does */
            p->target = p->at_time >= 0 ? p->at_time : p->latest;
            break;
        case RESET_SHIFT:
            if (p->current < 0)
                return cli_fail(CLI_EXIT_USAGE,
                                "cannot shift %s:%d: the group has no committed offset there; use --to-offset, "
                                "--to-earliest or --to-latest",
                                p->topic, (int)p->partition);
            p->target = clamp(p->current + (int64_t)f->value, p);
            break;
        }
    }
    return 0;
}

struct commit_ctx {
    const char *group;
    const struct plan *pl;
};

static int build_offset_commit(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct offset_commit_request *m = req;
    const struct commit_ctx *cc = ctx;
    (void)version;
    m->group_id = kafka_str_from_cstr(cc->group);
    m->generation_id_or_member_epoch = -1; /* a simple commit: no member, as Kafka's tool commits */
    m->member_id = kafka_str_from_cstr("");
    m->retention_time_ms = -1;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)cc->pl->n);
    if (!m->topics)
        return -1;
    for (int i = 0; i < cc->pl->n; i++) {
        const struct plan_part *p = &cc->pl->v[i];
        struct offset_commit_request_offset_commit_request_topic *t = &m->topics[m->topics_count++];
        offset_commit_request_offset_commit_request_topic_init(t);
        t->name = kafka_str_from_cstr(p->topic);
        t->partitions = kafka_arena_alloc(a, sizeof(*t->partitions));
        if (!t->partitions)
            return -1;
        offset_commit_request_offset_commit_request_partition_init(&t->partitions[0]);
        t->partitions[0].partition_index = p->partition;
        t->partitions[0].committed_offset = p->target;
        t->partitions[0].committed_leader_epoch = -1;
        t->partitions[0].commit_timestamp = -1;
        t->partitions[0].committed_metadata = kafka_str_from_cstr("");
        t->partitions_count = 1;
    }
    return 0;
}

static int commit_plan(struct cli_conn *c, int32_t coord, const char *group, struct plan *pl)
{
    struct commit_ctx cc = {group, pl};
    struct cli_reply r;
    int rc = cli_call(c, coord, KAFKA_API_KEY_OFFSET_COMMIT, build_offset_commit, &cc, &r);
    if (rc)
        return rc;
    const struct offset_commit_response *m = r.response;
    for (int32_t t = 0; t < m->topics_count; t++)
        for (int32_t p = 0; p < m->topics[t].partitions_count; p++) {
            struct kafka_str name = m->topics[t].name;
            struct plan_part *part = plan_find(pl, name.data ? name.data : "", name.len > 0 ? (size_t)name.len : 0,
                                               m->topics[t].partitions[p].partition_index);
            if (part)
                part->error = m->topics[t].partitions[p].error_code;
        }
    cli_reply_free(&r);
    return 0;
}

static const char *offset_text(int64_t v, char *buf, size_t len)
{
    snprintf(buf, len, v >= 0 ? "%lld" : "-", (long long)v);
    return buf;
}

/* Prints the plan (and, after --execute, each partition's result). Returns
 * the exit code: 1 when a commit failed. */
static int print_plan(const char *group, const char *state, const struct plan *pl, bool executed, bool json)
{
    static const char *const h[] = {"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "RESULT"};
    struct cli_table *t = json ? NULL : cli_table_new(executed ? 6 : 5, h);
    json_t *arr = json_array();
    int failed = 0;
    for (int i = 0; i < pl->n; i++) {
        const struct plan_part *p = &pl->v[i];
        const char *result = p->error ? kafka_error_name(p->error) : "COMMITTED";
        failed += p->error != KAFKA_ERR_NONE;
        json_t *o = json_pack("{s:s, s:i, s:I, s:I}", "topic", p->topic, "partition", (int)p->partition, "current",
                              (json_int_t)p->current, "new", (json_int_t)p->target);
        if (executed)
            json_object_set_new(o, "result", json_string(result));
        json_array_append_new(arr, o);
        char part[16], cur[24], tgt[24];
        snprintf(part, sizeof(part), "%d", (int)p->partition);
        cli_table_add(t, group, p->topic, part, offset_text(p->current, cur, sizeof(cur)),
                      offset_text(p->target, tgt, sizeof(tgt)), result);
    }
    if (json) {
        cli_json_print(
            json_pack("{s:s, s:s, s:b, s:o}", "group", group, "state", state, "executed", executed, "offsets", arr));
    } else {
        json_decref(arr);
        cli_table_print(t);
    }
    if (!executed)
        fprintf(stderr, "cairn: dry run: nothing was committed; add --execute to commit these offsets\n");
    if (failed)
        return cli_fail(CLI_EXIT_KAFKA, "%d of %d offset(s) of group '%s' were not committed (RESULT names why)",
                        failed, pl->n, group);
    return CLI_EXIT_OK;
}

static int reset_offsets(struct cli_conn *c, const char *group, const struct offsets_flags *f, bool json)
{
    int32_t coord;
    int rc = cli_coordinator(c, group, &coord);
    if (rc)
        return rc;
    struct plan pl = {.no_committed = !f->all_topics};
    char state[64];
    int members = 0;
    if (!f->all_topics) /* the named partitions first; committed offsets only fill them in */
        rc = plan_from_metadata(c, &pl, f);
    if (rc == 0)
        rc = read_group(c, group, coord, &pl, state, sizeof(state), &members);
    /* As kafka-consumer-groups.sh: only a group without members. */
    if (rc == 0 && strcmp(state, "Empty") != 0 && strcmp(state, "Dead") != 0) {
        char what[400];
        snprintf(what, sizeof(what), "group '%s' is %s with %d member(s): offsets can be reset only while it is Empty",
                 group, state, members);
        rc = cli_kafka_fail(KAFKA_ERR_NON_EMPTY_GROUP, (struct kafka_str){NULL, -1}, what, "stop its consumers first");
    }
    if (rc == 0 && f->all_topics) {
        if (pl.n == 0) {
            char what[400];
            snprintf(what, sizeof(what), "group '%s' has no committed offsets", group);
            rc = cli_kafka_fail(KAFKA_ERR_GROUP_ID_NOT_FOUND, (struct kafka_str){NULL, -1}, what,
                                "name the partitions with --topic");
        } else {
            rc = plan_from_metadata(c, &pl, f);
        }
    }
    if (rc == 0)
        rc = list_offsets(c, &pl, -2);
    if (rc == 0)
        rc = list_offsets(c, &pl, -1);
    if (rc == 0 && f->mode == RESET_TIMESTAMP)
        rc = list_offsets(c, &pl, f->value);
    if (rc == 0)
        rc = compute_targets(&pl, f);
    if (rc == 0) {
        qsort(pl.v, (size_t)pl.n, sizeof(pl.v[0]), part_cmp);
        if (f->execute)
            rc = commit_plan(c, coord, group, &pl);
        if (rc == 0)
            rc = print_plan(group, state, &pl, f->execute, json);
    }
    free(pl.v);
    return rc;
}

/* ---- delete-offsets ---- */

static int build_offset_delete(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct offset_delete_request *m = req;
    const struct commit_ctx *cc = ctx;
    (void)version;
    m->group_id = kafka_str_from_cstr(cc->group);
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)cc->pl->n);
    if (!m->topics)
        return -1;
    for (int i = 0; i < cc->pl->n; i++) {
        struct offset_delete_request_offset_delete_request_topic *t = &m->topics[m->topics_count++];
        offset_delete_request_offset_delete_request_topic_init(t);
        t->name = kafka_str_from_cstr(cc->pl->v[i].topic);
        t->partitions = kafka_arena_alloc(a, sizeof(*t->partitions));
        if (!t->partitions)
            return -1;
        offset_delete_request_offset_delete_request_partition_init(&t->partitions[0]);
        t->partitions[0].partition_index = cc->pl->v[i].partition;
        t->partitions_count = 1;
    }
    return 0;
}

static int delete_offsets(struct cli_conn *c, const char *group, const struct offsets_flags *f, bool json)
{
    int32_t coord;
    int rc = cli_coordinator(c, group, &coord);
    if (rc)
        return rc;
    struct plan pl = {0};
    rc = plan_from_metadata(c, &pl, f);
    struct cli_reply r = {0};
    struct commit_ctx cc = {group, &pl};
    if (rc == 0) {
        qsort(pl.v, (size_t)pl.n, sizeof(pl.v[0]), part_cmp);
        rc = cli_call(c, coord, KAFKA_API_KEY_OFFSET_DELETE, build_offset_delete, &cc, &r);
    }
    if (rc == 0) {
        const struct offset_delete_response *m = r.response;
        if (m->error_code != KAFKA_ERR_NONE) {
            char what[400];
            snprintf(what, sizeof(what), "cannot delete offsets of group '%s'", group);
            rc = cli_kafka_fail(m->error_code, (struct kafka_str){NULL, -1}, what,
                                m->error_code == KAFKA_ERR_GROUP_ID_NOT_FOUND ? "see `cairn group list`" : NULL);
        }
        for (int32_t t = 0; rc == 0 && t < m->topics_count; t++)
            for (int32_t p = 0; p < m->topics[t].partitions_count; p++) {
                struct kafka_str name = m->topics[t].name;
                struct plan_part *part = plan_find(&pl, name.data ? name.data : "", name.len > 0 ? (size_t)name.len : 0,
                                                   m->topics[t].partitions[p].partition_index);
                if (part)
                    part->error = m->topics[t].partitions[p].error_code;
            }
        cli_reply_free(&r);
    }
    if (rc == 0) {
        static const char *const h[] = {"TOPIC", "PARTITION", "RESULT"};
        struct cli_table *t = json ? NULL : cli_table_new(3, h);
        json_t *arr = json_array();
        int failed = 0;
        for (int i = 0; i < pl.n; i++) {
            const char *result = pl.v[i].error ? kafka_error_name(pl.v[i].error) : "DELETED";
            failed += pl.v[i].error != KAFKA_ERR_NONE;
            char part[16];
            snprintf(part, sizeof(part), "%d", (int)pl.v[i].partition);
            cli_table_add(t, pl.v[i].topic, part, result);
            json_array_append_new(arr, json_pack("{s:s, s:i, s:s}", "topic", pl.v[i].topic, "partition",
                                                 (int)pl.v[i].partition, "result", result));
        }
        if (json) {
            cli_json_print(arr);
        } else {
            json_decref(arr);
            cli_table_print(t);
        }
        if (failed)
            rc = cli_fail(CLI_EXIT_KAFKA, "%d of %d offset(s) of group '%s' were not deleted (RESULT names why)",
                          failed, pl.n, group);
    }
    free(pl.v);
    return rc;
}

/* argv[0] is the subcommand. */
static int offsets_main(int argc, char **argv, bool reset)
{
    const char *usage = reset ? reset_usage : delete_usage;
    struct offsets_flags f = {0};
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc, argv, usage, "", offsets_long, on_flag, &f, &s, pos, &npos, 1);
    if (rc >= 0)
        return rc;
    const char *name = reset ? "reset-offsets" : "delete-offsets";
    if (npos != 1)
        return cli_fail(CLI_EXIT_USAGE, "group %s wants one group id\n%s", name, usage);
    if (!reset && (f.all_topics || f.modes || f.execute || f.dry_run))
        return cli_fail(CLI_EXIT_USAGE, "group delete-offsets takes only --topic\n%s", usage);
    if (!reset && f.ntopics == 0)
        return cli_fail(CLI_EXIT_USAGE, "group delete-offsets wants --topic T[:P,P...]\n%s", usage);
    if (reset && (f.ntopics > 0) == f.all_topics)
        return cli_fail(CLI_EXIT_USAGE, "group reset-offsets wants either --topic or --all-topics\n%s", usage);
    if (reset && f.modes != 1)
        return cli_fail(CLI_EXIT_USAGE,
                        "group reset-offsets wants exactly one of --to-earliest, --to-latest, --to-offset, "
                        "--to-datetime, --to-timestamp, --shift-by (got %d)\n%s",
                        f.modes, usage);
    if (f.execute && f.dry_run)
        return cli_fail(CLI_EXIT_USAGE, "--execute and --dry-run exclude each other");
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = reset ? reset_offsets(&c, pos[0], &f, s.json) : delete_offsets(&c, pos[0], &f, s.json);
    cli_close(&c);
    return rc;
}

int cli_group_reset_offsets(int argc, char **argv)
{
    return offsets_main(argc, argv, true);
}

int cli_group_delete_offsets(int argc, char **argv)
{
    return offsets_main(argc, argv, false);
}
