/* cairn reassign: AlterPartitionReassignments and ListPartitionReassignments
 * (KIP-455), like kafka-reassign-partitions.sh without the JSON files:
 *   start  --topic T --partition N --replicas 2,3,4 [--partition ...] [--throttle B]
 *          [--disallow-replication-factor-change] [--wait [--wait-timeout MS]]
 *   cancel --topic T --partition N [--partition ...]
 *   list   [--topic T [--partition N ...]]
 *   verify --topic T --partition N [--partition ...] [--wait [--wait-timeout MS]]
 *   generate --topics A,B --broker-list 1,2,3 (reassign_generate.c)
 * start and cancel print each partition's result (a Kafka error exits 1);
 * list prints the reassignments under way with their adding and removing
 * replicas; verify whether the partitions still move, and once none does
 * removes the throttle start --throttle set (reassign_throttle.c); with
 * --wait, start and verify poll until no partition moves, showing
 * progress, then verify. With --wait --format json, stdout is one JSON
 * object a line (an event each: started, progress, done or timeout), so a
 * script can follow the move as it goes. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "reassign_generate.h"
#include "reassign_throttle.h"

static const char reassign_usage[] =
    "usage: cairn reassign start --topic T --partition N --replicas ID,ID,... [--partition N --replicas ...]\n"
    "                            [--throttle BYTES_PER_SEC] [--disallow-replication-factor-change]\n"
    "                            [--wait [--wait-timeout MS]] [--format json]\n"
    "       cairn reassign cancel --topic T --partition N [--partition N ...]\n"
    "       cairn reassign list [--topic T [--partition N ...]] [--format json]\n"
    "       cairn reassign verify --topic T --partition N [--partition N ...] [--wait [--wait-timeout MS]]\n"
    "                             [--format json]\n"
    "       cairn reassign generate --topics T,T,... --broker-list ID,ID,... [--format json]\n"
    "  start moves each partition to the replicas given (the first one preferred leader): the new\n"
    "  replicas copy the log, join the ISR, then the old ones are dropped and delete their copy.\n"
    "  cancel returns partitions under reassignment to their original replicas. list shows the\n"
    "  reassignments under way. --throttle sets leader.replication.throttled.rate and\n"
    "  follower.replication.throttled.rate on the brokers involved and the topic's *.throttled.replicas\n"
    "  for the moving partitions; verify tells whether they still move and, once none does, removes\n"
    "  those throttle configs. generate proposes a balanced assignment of the topics over the brokers\n"
    "  listed (the current one printed too, to roll back) and the reassign start commands applying it.\n"
    "  --disallow-replication-factor-change makes the controller refuse a plan changing a partition's\n"
    "  replica count (INVALID_REPLICATION_FACTOR; AlterPartitionReassignments v1, KIP-860). --wait\n"
    "  polls until none of the partitions moves, printing how many are done (a bar redrawn in place on\n"
    "  a terminal), then verifies; --wait-timeout MS gives up after MS with exit code 4. With --format\n"
    "  json, --wait prints one JSON object a line: {\"event\":\"started\"} (start), \"progress\" each time\n"
    "  the count changes, then \"done\" (the verify) or \"timeout\"\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

enum {
    OPT_TOPIC = 4200,
    OPT_PARTITION,
    OPT_REPLICAS,
    OPT_THROTTLE,
    OPT_TOPICS,
    OPT_BROKER_LIST,
    OPT_DISALLOW_RF_CHANGE,
    OPT_WAIT,
    OPT_WAIT_TIMEOUT,
};

static const struct option reassign_long[] = {
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"partition", required_argument, NULL, OPT_PARTITION},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"throttle", required_argument, NULL, OPT_THROTTLE},
    {"topics", required_argument, NULL, OPT_TOPICS},
    {"broker-list", required_argument, NULL, OPT_BROKER_LIST},
    {"disallow-replication-factor-change", no_argument, NULL, OPT_DISALLOW_RF_CHANGE},
    {"wait", no_argument, NULL, OPT_WAIT},
    {"wait-timeout", required_argument, NULL, OPT_WAIT_TIMEOUT},
    {NULL, 0, NULL, 0},
};

#define REASSIGN_MAX_PARTITIONS 256
#define REASSIGN_MAX_REPLICAS 64

struct reassign_args {
    bool start;
    const char *topic;
    int32_t partitions[REASSIGN_MAX_PARTITIONS];
    int32_t count;
    int32_t replicas[REASSIGN_MAX_PARTITIONS][REASSIGN_MAX_REPLICAS];
    int32_t replica_count[REASSIGN_MAX_PARTITIONS]; /* -1: not given */
    int64_t throttle;                               /* bytes/s; -1: not given */
    const char *topics, *broker_list;               /* generate */
    bool keep_replication_factor;                   /* AllowReplicationFactorChange false (KIP-860) */
    bool needs_v1;                                  /* set when the broker offered v0 only */
    bool wait;
    int64_t wait_timeout_ms; /* 0: no limit */
};

/* "2,3,4" into out; returns the count or -1. */
static int32_t parse_ids(const char *arg, int32_t *out)
{
    int32_t n = 0;
    const char *p = arg;
    while (*p) {
        char id[16];
        size_t len = strcspn(p, ",");
        long long v;
        if (len == 0 || len >= sizeof id || n == REASSIGN_MAX_REPLICAS)
            return -1;
        memcpy(id, p, len);
        id[len] = '\0';
        if (cli_parse_int(id, 0, INT32_MAX, &v) != 0)
            return -1;
        out[n++] = (int32_t)v;
        p += len + (p[len] == ',');
    }
    return n > 0 ? n : -1;
}

static int reassign_flag(int opt, const char *arg, void *ctx)
{
    struct reassign_args *a = ctx;
    long long v;
    switch (opt) {
    case OPT_TOPIC:
        a->topic = arg;
        return -1;
    case OPT_PARTITION:
        if (cli_parse_int(arg, 0, INT32_MAX, &v) != 0)
            return cli_fail(CLI_EXIT_USAGE, "--partition wants a partition number, got '%s'", arg);
        if (a->count == REASSIGN_MAX_PARTITIONS)
            return cli_fail(CLI_EXIT_USAGE, "at most %d partitions at once", REASSIGN_MAX_PARTITIONS);
        a->partitions[a->count] = (int32_t)v;
        a->replica_count[a->count++] = -1;
        return -1;
    case OPT_REPLICAS:
        if (a->count == 0 || a->replica_count[a->count - 1] >= 0)
            return cli_fail(CLI_EXIT_USAGE, "--replicas follows the --partition it is for");
        a->replica_count[a->count - 1] = parse_ids(arg, a->replicas[a->count - 1]);
        if (a->replica_count[a->count - 1] < 0)
            return cli_fail(CLI_EXIT_USAGE, "--replicas wants broker ids like 2,3,4, got '%s'", arg);
        return -1;
    case OPT_TOPICS:
        a->topics = arg;
        return -1;
    case OPT_BROKER_LIST:
        a->broker_list = arg;
        return -1;
    case OPT_DISALLOW_RF_CHANGE:
        a->keep_replication_factor = true;
        return -1;
    case OPT_WAIT:
        a->wait = true;
        return -1;
    case OPT_WAIT_TIMEOUT:
        if (cli_parse_int(arg, 1, INT64_MAX / 2, &v) != 0)
            return cli_fail(CLI_EXIT_USAGE, "--wait-timeout wants milliseconds, got '%s'", arg);
        a->wait_timeout_ms = v;
        return -1;
    case OPT_THROTTLE:
        if (cli_parse_int(arg, 1, INT64_MAX, &v) != 0)
            return cli_fail(CLI_EXIT_USAGE, "--throttle wants bytes per second, got '%s'", arg);
        a->throttle = v;
        return -1;
    default:
        return CLI_EXIT_USAGE;
    }
}

static int build_alter(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    struct reassign_args *a = ctx;
    struct alter_partition_reassignments_request *m = req;
    if (a->keep_replication_factor && version < 1) {
        a->needs_v1 = true; /* v0 cannot carry the flag: refuse rather than drop it */
        return -1;
    }
    m->allow_replication_factor_change = !a->keep_replication_factor;
    m->timeout_ms = 30000;
    m->topics = kafka_arena_alloc(arena, sizeof(*m->topics));
    if (!m->topics)
        return -1;
    alter_partition_reassignments_request_reassignable_topic_init(m->topics);
    m->topics_count = 1;
    m->topics->name = kafka_str_from_cstr(a->topic);
    m->topics->partitions = kafka_arena_alloc(arena, (size_t)a->count * sizeof(*m->topics->partitions));
    if (!m->topics->partitions)
        return -1;
    m->topics->partitions_count = a->count;
    for (int32_t i = 0; i < a->count; i++) {
        struct alter_partition_reassignments_request_reassignable_partition *p = &m->topics->partitions[i];
        alter_partition_reassignments_request_reassignable_partition_init(p);
        p->partition_index = a->partitions[i];
        p->replicas = a->start ? (int32_t *)a->replicas[i] : NULL; /* null: cancel */
        p->replicas_count = a->start ? a->replica_count[i] : -1;
    }
    return 0;
}

static bool alter_moved(const void *response)
{
    return ((const struct alter_partition_reassignments_response *)response)->error_code == KAFKA_ERR_NOT_CONTROLLER;
}

/* One JSON object on a line of its own, flushed at once: with --wait
 * --format json each step of the wait is such an event. */
static void print_event(json_t *event)
{
    char *text = json_dumps(event, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text) {
        puts(text);
        free(text);
    }
    fflush(stdout);
    json_decref(event);
}

static int reassign_alter(struct cli_conn *c, struct reassign_args *a, bool json)
{
    struct cli_reply r;
    int rc = cli_call_controller(c, KAFKA_API_KEY_ALTER_PARTITION_REASSIGNMENTS, build_alter, a, alter_moved, &r);
    if (rc && a->needs_v1)
        return cli_fail(CLI_EXIT_USAGE,
                        "--disallow-replication-factor-change needs AlterPartitionReassignments v1 (KIP-860), and "
                        "the controller speaks v0 only; leave the flag out");
    if (rc)
        return rc;
    const struct alter_partition_reassignments_response *m = r.response;
    if (m->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(m->error_code, m->error_message,
                            a->start ? "cannot reassign partitions" : "cannot cancel reassignments", NULL);
        cli_reply_free(&r);
        return rc;
    }
    json_t *arr = json ? json_array() : NULL;
    static const char *const headers[] = {"TOPIC", "PARTITION", "RESULT", "MESSAGE"};
    struct cli_table *t = json ? NULL : cli_table_new(4, headers);
    for (int32_t i = 0; i < m->responses_count; i++) {
        const struct alter_partition_reassignments_response_reassignable_topic_response *tr = &m->responses[i];
        for (int32_t j = 0; j < tr->partitions_count; j++) {
            const struct alter_partition_reassignments_response_reassignable_partition_response *p = &tr->partitions[j];
            const char *result = p->error_code == KAFKA_ERR_NONE ? (a->start ? "STARTED" : "CANCELLED")
                                                                 : kafka_error_name(p->error_code);
            if (p->error_code != KAFKA_ERR_NONE)
                rc = CLI_EXIT_KAFKA;
            if (arr) {
                json_array_append_new(arr, json_pack("{s:s, s:i, s:s, s:s}", "topic", cli_str(tr->name), "partition",
                                                     (int)p->partition_index, "result", result, "message",
                                                     cli_str(p->error_message)));
            } else {
                char part[16];
                snprintf(part, sizeof(part), "%d", (int)p->partition_index);
                cli_table_add(t, cli_str(tr->name), part, result, cli_str(p->error_message));
            }
        }
    }
    if (arr && a->wait)
        print_event(json_pack("{s:s, s:o}", "event", "started", "partitions", arr));
    else if (arr)
        cli_json_print(arr);
    else
        cli_table_print(t);
    cli_reply_free(&r);
    return rc;
}

static int build_list(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct reassign_args *a = ctx;
    struct list_partition_reassignments_request *m = req;
    m->timeout_ms = 30000;
    if (!a->topic) {
        m->topics = NULL;
        m->topics_count = -1; /* every partition */
        return 0;
    }
    m->topics = kafka_arena_alloc(arena, sizeof(*m->topics));
    if (!m->topics)
        return -1;
    list_partition_reassignments_request_list_partition_reassignments_topics_init(m->topics);
    m->topics_count = 1;
    m->topics->name = kafka_str_from_cstr(a->topic);
    m->topics->partition_indexes = (int32_t *)a->partitions;
    m->topics->partition_indexes_count = a->count;
    return 0;
}

static json_t *json_ids(const int32_t *v, int32_t n)
{
    json_t *arr = json_array();
    for (int32_t i = 0; i < n; i++)
        json_array_append_new(arr, json_integer(v[i]));
    return arr;
}

/* ListPartitionReassignments for a's partitions (all when none named);
 * 0 with the answer in *r (the caller frees it), else the exit code. */
static int list_reassignments(struct cli_conn *c, struct reassign_args *a, struct cli_reply *r)
{
    int rc = cli_call(c, c->controller_id, KAFKA_API_KEY_LIST_PARTITION_REASSIGNMENTS, build_list, a, r);
    if (rc)
        return rc;
    const struct list_partition_reassignments_response *m = r->response;
    if (m->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(m->error_code, m->error_message, "cannot list reassignments", NULL);
        cli_reply_free(r);
    }
    return rc;
}

static int reassign_list(struct cli_conn *c, struct reassign_args *a, bool json)
{
    struct cli_reply r;
    int rc = list_reassignments(c, a, &r);
    if (rc)
        return rc;
    const struct list_partition_reassignments_response *m = r.response;
    json_t *arr = json ? json_array() : NULL;
    static const char *const headers[] = {"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"};
    struct cli_table *t = json ? NULL : cli_table_new(5, headers);
    for (int32_t i = 0; i < m->topics_count; i++) {
        const struct list_partition_reassignments_response_ongoing_topic_reassignment *tr = &m->topics[i];
        for (int32_t j = 0; j < tr->partitions_count; j++) {
            const struct list_partition_reassignments_response_ongoing_partition_reassignment *p = &tr->partitions[j];
            if (arr) {
                json_array_append_new(arr, json_pack("{s:s, s:i, s:o, s:o, s:o}", "topic", cli_str(tr->name),
                                                     "partition", (int)p->partition_index, "replicas",
                                                     json_ids(p->replicas, p->replicas_count), "adding",
                                                     json_ids(p->adding_replicas, p->adding_replicas_count), "removing",
                                                     json_ids(p->removing_replicas, p->removing_replicas_count)));
            } else {
                char part[16], rep[256], add[256], rem[256];
                snprintf(part, sizeof(part), "%d", (int)p->partition_index);
                cli_table_add(t, cli_str(tr->name), part, cli_int_list(p->replicas, p->replicas_count, rep, sizeof rep),
                              cli_int_list(p->adding_replicas, p->adding_replicas_count, add, sizeof add),
                              cli_int_list(p->removing_replicas, p->removing_replicas_count, rem, sizeof rem));
            }
        }
    }
    if (arr)
        cli_json_print(arr);
    else
        cli_table_print(t);
    cli_reply_free(&r);
    return rc;
}

/* Whether partition is in the ListPartitionReassignments answer. */
static bool listed(const struct list_partition_reassignments_response *m, int32_t partition)
{
    for (int32_t i = 0; i < m->topics_count; i++)
        for (int32_t j = 0; j < m->topics[i].partitions_count; j++)
            if (m->topics[i].partitions[j].partition_index == partition)
                return true;
    return false;
}

/* Each of a's partitions with its status, IN_PROGRESS while the answer m
 * lists it, else COMPLETE; *moving counts the former. */
static json_t *partition_statuses(const struct reassign_args *a, const struct list_partition_reassignments_response *m,
                                  int32_t *moving)
{
    json_t *arr = json_array();
    *moving = 0;
    for (int32_t i = 0; i < a->count; i++) {
        bool busy = listed(m, a->partitions[i]);
        *moving += busy;
        json_array_append_new(arr, json_pack("{s:s, s:i, s:s}", "topic", a->topic, "partition", (int)a->partitions[i],
                                             "status", busy ? "IN_PROGRESS" : "COMPLETE"));
    }
    return arr;
}

/* A progress, done or timeout event of --wait --format json, with the
 * partitions' statuses (a reference taken) and the time since the wait
 * began (-1: left out). */
static json_t *wait_event(const char *name, const struct reassign_args *a, int32_t moving, json_t *partitions,
                          int64_t elapsed_ms)
{
    json_t *event = json_pack("{s:s, s:i, s:i, s:O}", "event", name, "reassigned", (int)(a->count - moving), "total",
                              (int)a->count, "partitions", partitions);
    if (event && elapsed_ms >= 0)
        json_object_set_new(event, "elapsed_ms", json_integer(elapsed_ms));
    return event;
}

/* kafka-reassign-partitions --verify: each partition IN_PROGRESS or
 * COMPLETE; once all are complete the throttle configs are removed. */
static int reassign_verify(struct cli_conn *c, struct reassign_args *a, bool json)
{
    struct cli_reply r;
    int rc = list_reassignments(c, a, &r);
    if (rc)
        return rc;
    int32_t moving;
    json_t *arr = partition_statuses(a, r.response, &moving);
    cli_reply_free(&r);
    if (json && a->wait) {
        /* The last event: the statuses and whether the throttle went. */
        rc = moving == 0 ? reassign_throttle_clear(c, a->topic) : 0;
        json_t *done = wait_event("done", a, moving, arr, -1);
        json_decref(arr);
        json_object_set_new(done, "throttle_removed", json_boolean(moving == 0 && rc == 0));
        print_event(done);
        return rc;
    }
    if (json) {
        cli_json_print(arr);
    } else {
        static const char *const headers[] = {"TOPIC", "PARTITION", "STATUS"};
        struct cli_table *t = cli_table_new(3, headers);
        size_t i;
        json_t *p;
        json_array_foreach(arr, i, p)
        {
            char part[16];
            snprintf(part, sizeof part, "%lld", (long long)json_integer_value(json_object_get(p, "partition")));
            cli_table_add(t, a->topic, part, json_string_value(json_object_get(p, "status")));
        }
        json_decref(arr);
        cli_table_print(t);
    }
    if (moving == 0) {
        rc = reassign_throttle_clear(c, a->topic);
        if (rc == 0)
            fprintf(json ? stderr : stdout, "throttle removed\n");
    }
    return rc;
}

#define WAIT_POLL_MS 500
#define WAIT_BAR_WIDTH 30

/* On a terminal one bar line redrawn in place; otherwise a plain line,
 * which the caller prints only when the count moves. */
static void show_progress(FILE *out, bool tty, int32_t done, int32_t total, int64_t elapsed_ms)
{
    if (tty) {
        char bar[WAIT_BAR_WIDTH + 1];
        int filled = total > 0 ? (int)((int64_t)done * WAIT_BAR_WIDTH / total) : WAIT_BAR_WIDTH;
        memset(bar, '#', (size_t)filled);
        memset(bar + filled, '-', (size_t)(WAIT_BAR_WIDTH - filled));
        bar[WAIT_BAR_WIDTH] = '\0';
        fprintf(out, "\r[%s] %d/%d partitions reassigned, %lld s ", bar, (int)done, (int)total,
                (long long)(elapsed_ms / 1000));
    } else {
        fprintf(out, "%d/%d partitions reassigned\n", (int)done, (int)total);
    }
    fflush(out);
}

/* Polls ListPartitionReassignments until none of a's partitions is
 * listed (0), the wait times out (CLI_EXIT_TIMEOUT) or a call fails. With
 * json, a progress event each time the count changes (a timeout event
 * last, if it comes to that); otherwise the bar or plain lines. */
static int reassign_wait(struct cli_conn *c, struct reassign_args *a, bool json)
{
    bool tty = !json && isatty(fileno(stdout));
    int64_t started = cli_now_ms();
    int32_t last_done = -1;
    for (;;) {
        struct cli_reply r;
        int rc = list_reassignments(c, a, &r);
        if (rc) {
            if (tty && last_done >= 0)
                fputc('\n', stdout);
            return rc;
        }
        int32_t moving;
        json_t *partitions = partition_statuses(a, r.response, &moving);
        cli_reply_free(&r);
        int32_t done = a->count - moving;
        int64_t elapsed = cli_now_ms() - started;
        bool timed_out = moving > 0 && a->wait_timeout_ms > 0 && elapsed >= a->wait_timeout_ms;
        if (json && done != last_done)
            print_event(wait_event("progress", a, moving, partitions, elapsed));
        if (json && timed_out)
            print_event(wait_event("timeout", a, moving, partitions, elapsed));
        if (!json && (tty || done != last_done))
            show_progress(stdout, tty, done, a->count, elapsed);
        json_decref(partitions);
        last_done = done;
        if (moving == 0 || timed_out) {
            if (tty)
                fputc('\n', stdout);
            if (moving == 0)
                return 0;
            return cli_fail(CLI_EXIT_TIMEOUT,
                            "%d of %d partitions still moving after %lld ms; wait again with reassign verify "
                            "--wait, or stop them with reassign cancel",
                            (int)moving, (int)a->count, (long long)elapsed);
        }
        int64_t nap = WAIT_POLL_MS;
        if (a->wait_timeout_ms > 0 && a->wait_timeout_ms - elapsed < nap)
            nap = a->wait_timeout_ms - elapsed;
        cli_sleep_ms(nap);
    }
}

int cli_reassign_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(reassign_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    bool start = !strcmp(argv[1], "start"), cancel = !strcmp(argv[1], "cancel"), list = !strcmp(argv[1], "list");
    bool verify = !strcmp(argv[1], "verify"), generate = !strcmp(argv[1], "generate");
    if (!start && !cancel && !list && !verify && !generate)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'reassign %s'\n%s", argv[1], reassign_usage);
    struct reassign_args *a = calloc(1, sizeof(*a));
    if (!a)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    a->start = start;
    a->throttle = -1;
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, reassign_usage, "", reassign_long, reassign_flag, a, &s, pos, &npos, 0);
    if (rc < 0 && generate && (!a->topics || !a->broker_list || a->topic || a->count > 0))
        rc = cli_fail(CLI_EXIT_USAGE, "reassign generate wants --topics and --broker-list (and no --topic)");
    if (rc < 0 && generate)
        rc = reassign_generate(NULL, a->topics, a->broker_list, false); /* usage errors before connecting */
    if (rc < 0 && (a->topics || a->broker_list) && !generate)
        rc = cli_fail(CLI_EXIT_USAGE, "--topics and --broker-list go with reassign generate only");
    if (rc < 0 && !list && !generate && (!a->topic || a->count == 0))
        rc = cli_fail(CLI_EXIT_USAGE, "reassign %s wants --topic and at least one --partition", argv[1]);
    if (rc < 0 && list && a->count > 0 && !a->topic)
        rc = cli_fail(CLI_EXIT_USAGE, "--partition goes with --topic");
    if (rc < 0 && !start && a->throttle >= 0)
        rc = cli_fail(CLI_EXIT_USAGE, "--throttle goes with reassign start only");
    if (rc < 0 && !start && a->keep_replication_factor)
        rc = cli_fail(CLI_EXIT_USAGE, "--disallow-replication-factor-change goes with reassign start only");
    if (rc < 0 && !start && !verify && a->wait)
        rc = cli_fail(CLI_EXIT_USAGE, "--wait goes with reassign start and verify only");
    if (rc < 0 && a->wait_timeout_ms > 0 && !a->wait)
        rc = cli_fail(CLI_EXIT_USAGE, "--wait-timeout goes with --wait");
    for (int32_t i = 0; rc < 0 && i < a->count; i++) {
        if (start && a->replica_count[i] < 0)
            rc = cli_fail(CLI_EXIT_USAGE, "partition %d has no --replicas", (int)a->partitions[i]);
        else if (!start && a->replica_count[i] >= 0)
            rc = cli_fail(CLI_EXIT_USAGE, "--replicas goes with reassign start only");
    }
    if (rc < 0) {
        struct cli_conn c;
        rc = cli_connect(&c, &s);
        if (!rc) {
            if (start && a->throttle > 0)
                rc = reassign_throttle_set(&c, a->topic, a->partitions, &a->replicas[0][0], REASSIGN_MAX_REPLICAS,
                                           a->replica_count, a->count, a->throttle);
            if (!rc && (start || cancel))
                rc = reassign_alter(&c, a, s.json);
            if (!rc && a->wait)
                rc = reassign_wait(&c, a, s.json);
            if (!rc)
                rc = list                ? reassign_list(&c, a, s.json)
                     : generate          ? reassign_generate(&c, a->topics, a->broker_list, s.json)
                     : verify || a->wait ? reassign_verify(&c, a, s.json)
                                         : CLI_EXIT_OK;
            cli_close(&c);
        }
    }
    free(a);
    return rc;
}
