/* cairn quorum status: the KRaft metadata quorum (DescribeQuorum) as a
 * controller listener reports it, like kafka-metadata-quorum.sh. A
 * controller serves no Metadata, so this connects straight to the one
 * address given. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char quorum_usage[] =
    "usage: cairn quorum status --bootstrap-controller host:port [--format json]\n"
    "  shows the leader, its epoch, the high watermark and every voter and observer with\n"
    "  its log end offset and lag behind the leader; without --bootstrap-controller the\n"
    "  first -b/--brokers address is asked\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

enum { OPT_BOOTSTRAP_CONTROLLER = 4000 };

static const struct option quorum_long[] = {
    {"bootstrap-controller", required_argument, NULL, OPT_BOOTSTRAP_CONTROLLER},
    {NULL, 0, NULL, 0},
};

static int quorum_flag(int opt, const char *arg, void *ctx)
{
    if (opt != OPT_BOOTSTRAP_CONTROLLER)
        return CLI_EXIT_USAGE;
    *(const char **)ctx = arg;
    return -1;
}

static int build_describe_quorum(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    (void)version;
    (void)ctx;
    struct describe_quorum_request *m = req;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics));
    if (!m->topics)
        return -1;
    describe_quorum_request_topic_data_init(m->topics);
    m->topics->topic_name = kafka_str_from_cstr("__cluster_metadata");
    m->topics->partitions = kafka_arena_alloc(a, sizeof(*m->topics->partitions));
    if (!m->topics->partitions)
        return -1;
    describe_quorum_request_partition_data_init(m->topics->partitions);
    m->topics->partitions->partition_index = 0;
    m->topics->partitions_count = 1;
    m->topics_count = 1;
    return 0;
}

/* The leader's log end offset: lag of the others is measured from it. */
static int64_t leader_end(const struct describe_quorum_response_partition_data *p)
{
    for (int32_t i = 0; i < p->current_voters_count; i++)
        if (p->current_voters[i].replica_id == p->leader_id)
            return p->current_voters[i].log_end_offset;
    return p->high_watermark;
}

static void replicas_out(const struct describe_quorum_response_replica_state *r, int32_t n, int64_t end,
                         const char *role, json_t *arr, struct cli_table *t)
{
    for (int32_t i = 0; i < n; i++) {
        int64_t lag = r[i].log_end_offset >= 0 ? end - r[i].log_end_offset : -1;
        if (arr) {
            json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:I, s:I}", "id", (int)r[i].replica_id,
                                                 "log_end_offset", (json_int_t)r[i].log_end_offset, "lag",
                                                 (json_int_t)lag, "last_fetch_timestamp",
                                                 (json_int_t)r[i].last_fetch_timestamp, "last_caught_up_timestamp",
                                                 (json_int_t)r[i].last_caught_up_timestamp));
            continue;
        }
        char id[16], leo[24], lagtxt[24];
        snprintf(id, sizeof(id), "%d", (int)r[i].replica_id);
        snprintf(leo, sizeof(leo), "%" PRId64, r[i].log_end_offset);
        snprintf(lagtxt, sizeof(lagtxt), "%" PRId64, lag);
        cli_table_add(t, id, role, leo, lag < 0 ? "-" : lagtxt);
    }
}

static int quorum_status(struct cli_conn *c, bool json)
{
    struct cli_reply r;
    int rc = cli_call(c, c->any_node, KAFKA_API_KEY_DESCRIBE_QUORUM, build_describe_quorum, NULL, &r);
    if (rc)
        return rc;
    const struct describe_quorum_response *m = r.response;
    const struct describe_quorum_response_partition_data *p = NULL;
    if (m->error_code != KAFKA_ERR_NONE)
        rc = cli_kafka_fail(m->error_code, m->error_message, "cannot describe the quorum", NULL);
    else if (m->topics_count < 1 || m->topics[0].partitions_count < 1)
        rc = cli_fail(CLI_EXIT_KAFKA, "the controller described no metadata partition");
    else if ((p = &m->topics[0].partitions[0])->error_code != KAFKA_ERR_NONE)
        rc = cli_kafka_fail(p->error_code, p->error_message, "cannot describe the quorum", NULL);
    if (rc) {
        cli_reply_free(&r);
        return rc;
    }
    int64_t end = leader_end(p);
    if (json) {
        json_t *voters = json_array(), *observers = json_array();
        replicas_out(p->current_voters, p->current_voters_count, end, "voter", voters, NULL);
        replicas_out(p->observers, p->observers_count, end, "observer", observers, NULL);
        rc = cli_json_print(json_pack("{s:i, s:i, s:I, s:o, s:o}", "leader_id", (int)p->leader_id, "leader_epoch",
                                      (int)p->leader_epoch, "high_watermark", (json_int_t)p->high_watermark,
                                      "voters", voters, "observers", observers));
    } else {
        printf("LEADER          %d\nEPOCH           %d\nHIGH WATERMARK  %" PRId64 "\n\n", (int)p->leader_id,
               (int)p->leader_epoch, p->high_watermark);
        static const char *const headers[] = {"ID", "ROLE", "LOG-END", "LAG"};
        struct cli_table *t = cli_table_new(4, headers);
        replicas_out(p->current_voters, p->current_voters_count, end, "voter", NULL, t);
        replicas_out(p->observers, p->observers_count, end, "observer", NULL, t);
        cli_table_print(t);
    }
    cli_reply_free(&r);
    return rc;
}

int cli_quorum_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(quorum_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "status") != 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'quorum %s'\n%s", argv[1], quorum_usage);
    const char *controller = NULL;
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, quorum_usage, "", quorum_long, quorum_flag, &controller, &s, pos, &npos, 0);
    if (rc >= 0)
        return rc;
    char first[sizeof(s.brokers)];
    if (!controller) {
        snprintf(first, sizeof(first), "%s", s.brokers);
        first[strcspn(first, ",")] = '\0';
        controller = first;
    }
    struct cli_conn c;
    rc = cli_connect_direct(&c, &s, controller);
    if (rc)
        return rc;
    rc = quorum_status(&c, s.json);
    cli_close(&c);
    return rc;
}
