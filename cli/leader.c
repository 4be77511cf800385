/* cairn leader elect: ElectLeaders, like kafka-leader-election.sh. The
 * request goes to the controller Metadata names; each partition's result
 * is printed, and an error other than ELECTION_NOT_NEEDED exits 1. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char leader_usage[] =
    "usage: cairn leader elect --type preferred|unclean (--all | --topic T [--partition N]) [--format json]\n"
    "  moves partition leadership: preferred gives each partition to its first replica when it is\n"
    "  in sync; unclean gives a partition without a leader to any live replica, possibly losing\n"
    "  acknowledged records. --all elects for every partition, --topic for every partition of T\n"
    "  (or only partition N)\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

enum { OPT_TYPE = 4100, OPT_TOPIC, OPT_PARTITION, OPT_ALL };

static const struct option leader_long[] = {
    {"type", required_argument, NULL, OPT_TYPE},
    {"topic", required_argument, NULL, OPT_TOPIC},
    {"partition", required_argument, NULL, OPT_PARTITION},
    {"all", no_argument, NULL, OPT_ALL},
    {NULL, 0, NULL, 0},
};

struct elect_args {
    int type; /* -1 until given; 0 preferred, 1 unclean */
    const char *topic;
    long long partition; /* -1: every partition of topic */
    bool all;
    int32_t *partitions; /* the request's partitions of topic */
    int32_t partition_count;
};

static int leader_flag(int opt, const char *arg, void *ctx)
{
    struct elect_args *a = ctx;
    switch (opt) {
    case OPT_TYPE:
        if (!strcmp(arg, "preferred"))
            a->type = 0;
        else if (!strcmp(arg, "unclean"))
            a->type = 1;
        else
            return cli_fail(CLI_EXIT_USAGE, "--type wants preferred or unclean, got '%s'", arg);
        return -1;
    case OPT_TOPIC:
        a->topic = arg;
        return -1;
    case OPT_PARTITION:
        if (cli_parse_int(arg, 0, INT32_MAX, &a->partition) != 0)
            return cli_fail(CLI_EXIT_USAGE, "--partition wants a partition number, got '%s'", arg);
        return -1;
    case OPT_ALL:
        a->all = true;
        return -1;
    default:
        return CLI_EXIT_USAGE;
    }
}

static int build_elect_leaders(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct elect_args *a = ctx;
    struct elect_leaders_request *m = req;
    m->election_type = (int8_t)a->type;
    m->timeout_ms = 30000;
    if (a->all) {
        m->topic_partitions = NULL;
        m->topic_partitions_count = -1;
        return 0;
    }
    m->topic_partitions = kafka_arena_alloc(arena, sizeof(*m->topic_partitions));
    if (!m->topic_partitions)
        return -1;
    elect_leaders_request_topic_partitions_init(m->topic_partitions);
    m->topic_partitions->topic = kafka_str_from_cstr(a->topic);
    m->topic_partitions->partitions = a->partitions;
    m->topic_partitions->partitions_count = a->partition_count;
    m->topic_partitions_count = 1;
    return 0;
}

/* The partitions of a->topic, from Metadata. Returns 0 or an exit code. */
static int topic_partitions(struct cli_conn *c, struct elect_args *a)
{
    struct cli_reply r;
    int rc = cli_metadata(c, &a->topic, 1, &r);
    if (rc)
        return rc;
    const struct metadata_response *m = r.response;
    const struct metadata_response_metadata_response_topic *t = m->topics_count == 1 ? &m->topics[0] : NULL;
    if (!t || t->error_code != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "topic '%s' does not exist", a->topic);
        rc = cli_kafka_fail(t ? t->error_code : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1},
                            what, "see `cairn topic list`");
    } else {
        a->partitions = calloc((size_t)(t->partitions_count > 0 ? t->partitions_count : 1), sizeof(*a->partitions));
        if (!a->partitions)
            rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        for (int32_t i = 0; a->partitions && i < t->partitions_count; i++)
            a->partitions[a->partition_count++] = t->partitions[i].partition_index;
    }
    cli_reply_free(&r);
    return rc;
}

static bool elect_moved(const void *response)
{
    const struct elect_leaders_response *m = response;
    if (m->error_code == KAFKA_ERR_NOT_CONTROLLER)
        return true;
    for (int32_t i = 0; i < m->replica_election_results_count; i++)
        for (int32_t j = 0; j < m->replica_election_results[i].partition_result_count; j++)
            if (m->replica_election_results[i].partition_result[j].error_code == KAFKA_ERR_NOT_CONTROLLER)
                return true;
    return false;
}

static int leader_elect(struct cli_conn *c, struct elect_args *a, bool json)
{
    int rc = 0;
    int32_t one;
    if (!a->all && a->partition < 0) {
        rc = topic_partitions(c, a);
        if (rc)
            return rc;
    } else if (!a->all) {
        one = (int32_t)a->partition;
        a->partitions = &one;
        a->partition_count = 1;
    }
    struct cli_reply r;
    rc = cli_call_controller(c, KAFKA_API_KEY_ELECT_LEADERS, build_elect_leaders, a, elect_moved, &r);
    if (a->partitions != &one)
        free(a->partitions);
    a->partitions = NULL;
    if (rc)
        return rc;
    const struct elect_leaders_response *m = r.response;
    if (m->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(m->error_code, (struct kafka_str){NULL, -1}, "cannot elect leaders", NULL);
        cli_reply_free(&r);
        return rc;
    }
    json_t *arr = json ? json_array() : NULL;
    static const char *const headers[] = {"TOPIC", "PARTITION", "RESULT"};
    struct cli_table *t = json ? NULL : cli_table_new(3, headers);
    for (int32_t i = 0; i < m->replica_election_results_count; i++) {
        const struct elect_leaders_response_replica_election_result *tr = &m->replica_election_results[i];
        for (int32_t j = 0; j < tr->partition_result_count; j++) {
            const struct elect_leaders_response_partition_result *p = &tr->partition_result[j];
            const char *result = p->error_code == KAFKA_ERR_NONE ? "ELECTED" : kafka_error_name(p->error_code);
            /* A partition already led by the wanted replica is no failure. */
            if (p->error_code != KAFKA_ERR_NONE && p->error_code != KAFKA_ERR_ELECTION_NOT_NEEDED)
                rc = CLI_EXIT_KAFKA;
            if (arr) {
                json_array_append_new(arr, json_pack("{s:s, s:i, s:s}", "topic", cli_str(tr->topic), "partition",
                                                     (int)p->partition_id, "result", result));
            } else {
                char part[16];
                snprintf(part, sizeof(part), "%d", (int)p->partition_id);
                cli_table_add(t, cli_str(tr->topic), part, result);
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

int cli_leader_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(leader_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "elect") != 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'leader %s'\n%s", argv[1], leader_usage);
    struct elect_args a = {.type = -1, .partition = -1};
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, leader_usage, "", leader_long, leader_flag, &a, &s, pos, &npos, 0);
    if (rc >= 0)
        return rc;
    if (a.type < 0)
        return cli_fail(CLI_EXIT_USAGE, "leader elect wants --type preferred or --type unclean");
    if (a.all == (a.topic != NULL))
        return cli_fail(CLI_EXIT_USAGE, "leader elect wants either --all or --topic");
    if (a.partition >= 0 && !a.topic)
        return cli_fail(CLI_EXIT_USAGE, "--partition goes with --topic");
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = leader_elect(&c, &a, s.json);
    cli_close(&c);
    return rc;
}
