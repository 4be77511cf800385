/* cairn consume: a topic's records to standard output, read with Fetch
 * from each partition's leader.
 *
 * Start positions come from ListOffsets (earliest, latest, -N from the end,
 * a timestamp), a given offset, or a group's committed offsets
 * (OffsetFetch). Batches are decoded here, compressed ones inflated;
 * control batches are skipped, and under read_committed so are the batches
 * of aborted transactions (the answer's aborted list, as Kafka's consumer
 * does). With --group the tool is a member of the group
 * (consume_member.c): it reads the partitions assigned to it and commits
 * their positions under its generation (consume_group.c). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "consume.h"
#include "codec/record_codec.h"
#include "protocol/record_batch.h"

#define CONSUME_PARTITION_BYTES (1 << 20) /* max.partition.fetch.bytes */
#define CONSUME_FETCH_BYTES (50 << 20)    /* fetch.max.bytes */

static const char consume_usage[] =
    "usage: cairn consume TOPIC [flags] > records\n"
    "  prints the topic's records, by default each value on a line\n"
    "  -p, --partition N         only partition N (default: every partition)\n"
    "  -o, --offset WHERE        start at earliest (default), latest, an offset N, or -N (N before the end)\n"
    "      --timestamp MS        start at the first record with a timestamp at or after MS (epoch ms)\n"
    "  -c, --count N             exit after N records\n"
    "  -e, --exit-at-end         exit when every partition is read to its end\n"
    "      --format FMT          json (an object per line), text (the default, '%v\\n') or a format\n"
    "                            string: %t topic, %p partition, %o offset, %T timestamp, %k key,\n"
    "                            %K key length, %v value, %S value length, %h headers (k=v,k=v), %%,\n"
    "                            \\n \\t \\r \\\\ \\0\n"
    "      --isolation LEVEL     read_uncommitted (default) or read_committed\n"
    "  -g, --group GROUP         read as a member of GROUP: the partitions the group assigns, from\n"
    "                            its committed offsets (--offset/--timestamp where none), positions\n"
    "                            committed every auto.commit.interval.ms and at exit\n"
    "      --group-instance-id ID  a static member of the group (KIP-345, group.instance.id): a restart\n"
    "                            within session.timeout.ms keeps its partitions without a rebalance;\n"
    "                            no LeaveGroup at exit\n"
    "common flags: -b/--brokers, --profile, -X key=value, --timeout MS, -h/--help (see cairn --help)\n";

enum { OPT_TIMESTAMP = 5100, OPT_FORMAT, OPT_ISOLATION, OPT_GROUP_INSTANCE_ID };

static const struct option consume_long[] = {
    {"partition", required_argument, NULL, 'p'},
    {"offset", required_argument, NULL, 'o'},
    {"timestamp", required_argument, NULL, OPT_TIMESTAMP},
    {"count", required_argument, NULL, 'c'},
    {"exit-at-end", no_argument, NULL, 'e'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"isolation", required_argument, NULL, OPT_ISOLATION},
    {"group", required_argument, NULL, 'g'},
    {"group-instance-id", required_argument, NULL, OPT_GROUP_INSTANCE_ID},
    {NULL, 0, NULL, 0},
};

static int consume_flag(int opt, const char *arg, void *ctx)
{
    struct consume_args *a = ctx;
    switch (opt) {
    case 'p':
        if (cli_parse_int(arg, 0, INT32_MAX, &a->partition) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--partition wants a partition number, got '%s'", arg);
        return -1;
    case 'o':
        if (!strcmp(arg, "earliest") || !strcmp(arg, "beginning"))
            a->start = START_EARLIEST;
        else if (!strcmp(arg, "latest") || !strcmp(arg, "end"))
            a->start = START_LATEST;
        else if (arg[0] == '-' && cli_parse_int(arg + 1, 1, INT64_MAX, &a->start_value) == 0)
            a->start = START_FROM_END;
        else if (cli_parse_int(arg, 0, INT64_MAX, &a->start_value) == 0)
            a->start = START_AT;
        else
            return cli_fail(CLI_EXIT_USAGE, "--offset wants earliest, latest, an offset or -N, got '%s'", arg);
        return -1;
    case OPT_TIMESTAMP:
        if (cli_parse_int(arg, 0, INT64_MAX, &a->start_value) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--timestamp wants milliseconds since the epoch, got '%s'", arg);
        a->start = START_TIMESTAMP;
        return -1;
    case 'c':
        if (cli_parse_int(arg, 1, INT64_MAX, &a->count) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--count wants a positive number, got '%s'", arg);
        return -1;
    case 'e':
        a->exit_at_end = true;
        return -1;
    case OPT_FORMAT: {
        a->json = !strcmp(arg, "json");
        a->format = a->json || !strcmp(arg, "text") ? NULL : arg;
        char err[400];
        if (a->format && cli_format_check(a->format, err, sizeof(err)) < 0)
            return cli_fail(CLI_EXIT_USAGE, "%s", err);
        return -1;
    }
    case OPT_ISOLATION:
        if (!strcmp(arg, "read_uncommitted"))
            a->isolation = 0;
        else if (!strcmp(arg, "read_committed"))
            a->isolation = 1;
        else
            return cli_fail(CLI_EXIT_USAGE, "--isolation wants read_uncommitted or read_committed, got '%s'", arg);
        return -1;
    case 'g':
        if (!*arg)
            return cli_fail(CLI_EXIT_USAGE, "--group wants a group id");
        a->group = arg;
        return -1;
    case OPT_GROUP_INSTANCE_ID:
        if (!*arg || strlen(arg) > 249)
            return cli_fail(CLI_EXIT_USAGE, "--group-instance-id wants an id of 1 to 249 characters");
        a->group_instance_id = arg;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

volatile sig_atomic_t cli_consume_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    cli_consume_stop = 1;
}

/* ---- start positions ---- */

int cli_consume_start_positions(struct consumer *k)
{
    const struct consume_args *a = k->a;
    int32_t *ids = calloc((size_t)k->nparts, sizeof(*ids));
    int64_t *at = calloc((size_t)k->nparts, sizeof(*at)), *earliest = calloc((size_t)k->nparts, sizeof(*earliest));
    int rc = !ids || !at || !earliest ? cli_fail(CLI_EXIT_UNREACHABLE, "out of memory") : 0;
    int n = 0;
    for (int i = 0; rc == 0 && i < k->nparts; i++)
        if (k->parts[i].position < 0) /* not set from the group */
            ids[n++] = k->parts[i].id;
    int64_t ts = a->start == START_TIMESTAMP                              ? a->start_value
                 : a->start == START_LATEST || a->start == START_FROM_END ? -1
                                                                          : -2;
    if (rc == 0 && n)
        rc = cli_topic_list_offsets(k->c, &k->t, ids, n, ts, a->isolation, at);
    if (rc == 0 && n && a->start == START_FROM_END)
        rc = cli_topic_list_offsets(k->c, &k->t, ids, n, -2, a->isolation, earliest);
    /* No record at or after the timestamp: from the end. */
    bool want_latest = false;
    for (int j = 0; rc == 0 && j < n; j++)
        want_latest |= a->start == START_TIMESTAMP && at[j] < 0;
    int64_t *latest = want_latest ? earliest : NULL;
    if (latest)
        rc = cli_topic_list_offsets(k->c, &k->t, ids, n, -1, a->isolation, latest);
    for (int i = 0, j = 0; rc == 0 && i < k->nparts; i++) {
        struct part *p = &k->parts[i];
        if (p->position >= 0)
            continue;
        int64_t off = at[j];
        if (a->start == START_FROM_END)
            off = off - a->start_value > earliest[j] ? off - a->start_value : earliest[j];
        else if (off < 0 && latest)
            off = latest[j];
        p->position = off;
        j++;
    }
    free(ids);
    free(at);
    free(earliest);
    return rc;
}

struct part *cli_consume_part(struct consumer *k, int32_t id)
{
    for (int i = 0; i < k->nparts; i++)
        if (k->parts[i].id == id)
            return &k->parts[i];
    return NULL;
}

/* ---- fetching ---- */

struct fetch_ctx {
    const struct consumer *k;
    int32_t leader;
    int32_t max_wait_ms;
};

/* Partitions still to read: all, or with -e those not at their end. */
static bool part_wanted(const struct consumer *k, const struct part *p)
{
    return !(k->a->exit_at_end && p->at_end);
}

static int build_fetch(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct fetch_request *m = req;
    const struct fetch_ctx *fc = ctx;
    const struct consumer *k = fc->k;
    (void)version;
    m->replica_id = -1;
    m->max_wait_ms = fc->max_wait_ms;
    m->min_bytes = 1;
    m->max_bytes = CONSUME_FETCH_BYTES;
    m->isolation_level = k->a->isolation;
    m->session_id = 0;
    m->session_epoch = -1; /* a full fetch, no session */
    m->topics = kafka_arena_alloc(ar, sizeof(*m->topics));
    struct fetch_request_fetch_partition *ps = kafka_arena_alloc(ar, sizeof(*ps) * (size_t)k->nparts);
    if (!m->topics || !ps)
        return -1;
    fetch_request_fetch_topic_init(&m->topics[0]);
    m->topics[0].topic = kafka_str_from_cstr(k->t.name);
    m->topics[0].topic_id = k->t.id;
    int32_t n = 0;
    for (int i = 0; i < k->nparts; i++) {
        const struct part *p = &k->parts[i];
        if (!part_wanted(k, p) || k->t.leader[p->id] != fc->leader)
            continue;
        fetch_request_fetch_partition_init(&ps[n]);
        ps[n].partition = p->id;
        ps[n].fetch_offset = p->position;
        ps[n].partition_max_bytes = p->max_bytes;
        n++;
    }
    m->topics[0].partitions = ps;
    m->topics[0].partitions_count = n;
    m->topics_count = 1;
    return 0;
}

/* Errors after which fresh Metadata (a new leader) lets the read go on. */
static bool fetch_retriable(int16_t code)
{
    switch (code) {
    case KAFKA_ERR_NOT_LEADER_OR_FOLLOWER:
    case KAFKA_ERR_LEADER_NOT_AVAILABLE:
    case KAFKA_ERR_REPLICA_NOT_AVAILABLE:
    case KAFKA_ERR_FENCED_LEADER_EPOCH:
    case KAFKA_ERR_UNKNOWN_LEADER_EPOCH:
    case KAFKA_ERR_KAFKA_STORAGE_ERROR:
    case KAFKA_ERR_UNKNOWN_TOPIC_ID:
    case KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION: /* a broker still loading its logs */
    case KAFKA_ERR_NETWORK_EXCEPTION:
    case KAFKA_ERR_REQUEST_TIMED_OUT:
        return true;
    default:
        return false;
    }
}

/* Aborted transactions of one answer, ordered by first offset, and the
 * producers whose transaction is aborted at the current batch. */
struct aborted_state {
    const struct fetch_response_aborted_transaction *list;
    int32_t n, next;
    int64_t active[64];
    int nactive;
};

static int by_first_offset(const void *x, const void *y)
{
    const struct fetch_response_aborted_transaction *a = x, *b = y;
    return (a->first_offset > b->first_offset) - (a->first_offset < b->first_offset);
}

static bool aborted_has(const struct aborted_state *s, int64_t pid)
{
    for (int i = 0; i < s->nactive; i++)
        if (s->active[i] == pid)
            return true;
    return false;
}

/* The control record's type (0 abort, 1 commit), from its key. */
static int control_type(const uint8_t *batch, size_t len)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    if (record_batch_records_begin(&it, batch, len) < 0 || record_batch_records_next(&it, &rec) != 1 || rec.key_len < 4)
        return -1;
    return (int)((uint16_t)rec.key[2] << 8 | rec.key[3]);
}

enum { TAKE_MORE = 0, TAKE_COUNT_REACHED = 1 };

/* Prints the records of one batch from p->position on. Returns TAKE_MORE,
 * TAKE_COUNT_REACHED, or an exit code (negated). */
static int take_batch(struct consumer *k, struct part *p, const uint8_t *batch, size_t len, int64_t last)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    struct record_batch_header h;
    record_batch_parse_header(batch, len, &h);
    if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE) {
        char err[160];
        size_t out_len;
        if (record_codec_inflate_batch_into(batch, len, 256u << 20, &k->inflated, &k->inflated_cap, &out_len, err,
                                            sizeof(err)) < 0)
            return -cli_fail(CLI_EXIT_KAFKA,
                             "CORRUPT_MESSAGE: cannot decompress the batch at offset %lld of "
                             "partition %d: %s",
                             (long long)h.base_offset, (int)p->id, err);
        batch = k->inflated;
        len = out_len;
    }
    if (record_batch_records_begin(&it, batch, len) < 0)
        return -cli_fail(CLI_EXIT_KAFKA, "CORRUPT_MESSAGE: batch at offset %lld of partition %d: %s",
                         (long long)h.base_offset, (int)p->id, it.err);
    int got;
    while ((got = record_batch_records_next(&it, &rec)) == 1) {
        if (rec.offset < p->position)
            continue;
        if (k->a->json)
            cli_record_print_json(stdout, k->t.name, p->id, &rec);
        else
            cli_record_print_format(stdout, k->a->format ? k->a->format : "%v\\n", k->t.name, p->id, &rec);
        p->position = rec.offset + 1;
        if (++k->printed == k->a->count)
            return TAKE_COUNT_REACHED;
    }
    if (got < 0)
        return -cli_fail(CLI_EXIT_KAFKA, "CORRUPT_MESSAGE: batch at offset %lld of partition %d: %s",
                         (long long)h.base_offset, (int)p->id, it.err);
    p->position = last + 1; /* compaction may have left gaps */
    return TAKE_MORE;
}

/* Walks one partition's records of an answer. Returns as take_batch. */
static int take_records(struct consumer *k, struct part *p, const struct fetch_response_partition_data *pd)
{
    struct aborted_state ab = {.list = pd->aborted_transactions, .n = pd->aborted_transactions_count};
    struct fetch_response_aborted_transaction *sorted = NULL;
    if (k->a->isolation == 1 && ab.n > 0) {
        sorted = malloc(sizeof(*sorted) * (size_t)ab.n);
        if (!sorted)
            return -cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        memcpy(sorted, ab.list, sizeof(*sorted) * (size_t)ab.n);
        qsort(sorted, (size_t)ab.n, sizeof(*sorted), by_first_offset);
        ab.list = sorted;
    }
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t len;
    int rc = TAKE_MORE, more;
    int64_t before = p->position;
    record_batch_iter_init(&it, pd->records.data, pd->records.len > 0 ? (size_t)pd->records.len : 0);
    while (rc == TAKE_MORE && (more = record_batch_iter_next(&it, &batch, &len)) == 1) {
        struct record_batch_header h;
        if (record_batch_parse_header(batch, len, &h) < 0 || h.magic != RECORD_BATCH_MAGIC) {
            rc = -cli_fail(CLI_EXIT_KAFKA,
                           "UNSUPPORTED_FOR_MESSAGE_FORMAT: partition %d holds a batch of magic %d "
                           "at offset %lld (cairn reads magic 2)",
                           (int)p->id, len > RECORD_BATCH_OFFSET_MAGIC ? (int)batch[RECORD_BATCH_OFFSET_MAGIC] : -1,
                           (long long)h.base_offset);
            break;
        }
        int64_t last = record_batch_last_offset(&h);
        if (last < p->position)
            continue;
        while (ab.next < ab.n && ab.list[ab.next].first_offset <= last) {
            if (ab.nactive < (int)(sizeof(ab.active) / sizeof(ab.active[0])))
                ab.active[ab.nactive++] = ab.list[ab.next].producer_id;
            ab.next++;
        }
        bool aborted = record_batch_is_transactional(&h) && aborted_has(&ab, h.producer_id);
        if (record_batch_is_control(&h)) {
            if (aborted && control_type(batch, len) == 0)
                for (int i = 0; i < ab.nactive; i++)
                    if (ab.active[i] == h.producer_id)
                        ab.active[i--] = ab.active[--ab.nactive];
            p->position = last + 1;
        } else if (aborted && k->a->isolation == 1) {
            p->position = last + 1;
        } else {
            rc = take_batch(k, p, batch, len, last);
        }
    }
    /* A first batch larger than the partition's share: ask for more. */
    if (rc == TAKE_MORE && p->position == before && pd->records.len > 0 && p->max_bytes < (64 << 20))
        p->max_bytes *= 2;
    free(sorted);
    return rc;
}

/* One Fetch to leader. Returns TAKE_MORE (refresh set when the leader
 * moved), TAKE_COUNT_REACHED, or an exit code (negated). */
static int fetch_from(struct consumer *k, int32_t leader, int32_t max_wait_ms, bool *refresh, char *net_err,
                      size_t net_err_len)
{
    struct fetch_ctx fc = {k, leader, max_wait_ms};
    struct cli_reply r;
    k->c->net_err = net_err;
    k->c->net_err_len = net_err_len;
    int rc = cli_call(k->c, leader, KAFKA_API_KEY_FETCH, build_fetch, &fc, &r);
    k->c->net_err = NULL;
    if (rc == CLI_EXIT_UNREACHABLE) {
        *refresh = true;
        return TAKE_MORE;
    }
    if (rc)
        return -rc;
    const struct fetch_response *m = r.response;
    rc = TAKE_MORE;
    if (r.version >= 7 && m->error_code != KAFKA_ERR_NONE) {
        rc = -cli_kafka_fail(m->error_code, (struct kafka_str){NULL, -1}, "the fetch failed", NULL);
        cli_reply_free(&r);
        return rc;
    }
    for (int32_t t = 0; t < m->responses_count && rc == TAKE_MORE; t++)
        for (int32_t i = 0; i < m->responses[t].partitions_count && rc == TAKE_MORE; i++) {
            const struct fetch_response_partition_data *pd = &m->responses[t].partitions[i];
            struct part *p = cli_consume_part(k, pd->partition_index);
            if (!p)
                continue;
            if (pd->error_code == KAFKA_ERR_NONE) {
                p->end = k->a->isolation == 1 && pd->last_stable_offset >= 0 ? pd->last_stable_offset
                                                                             : pd->high_watermark;
                rc = take_records(k, p, pd);
                p->at_end = p->position >= p->end;
            } else if (fetch_retriable(pd->error_code)) {
                *refresh = true;
                snprintf(net_err, net_err_len, "%s", kafka_error_name(pd->error_code));
            } else {
                char what[400], hint[200] = "";
                snprintf(what, sizeof(what), "cannot read partition %d of '%s' at offset %lld", (int)p->id, k->t.name,
                         (long long)p->position);
                if (pd->error_code == KAFKA_ERR_OFFSET_OUT_OF_RANGE)
                    snprintf(hint, sizeof(hint), "use --offset earliest or latest");
                rc = -cli_kafka_fail(pd->error_code, (struct kafka_str){NULL, -1}, what, hint);
            }
        }
    cli_reply_free(&r);
    return rc;
}

static int flush_stdout(void)
{
    if (fflush(stdout) == 0)
        return 0;
    if (errno == EPIPE) /* the reader went away (| head): done */
        return -1;
    return cli_fail(CLI_EXIT_USAGE, "cannot write standard output: %s", strerror(errno));
}

/* Rounds of one Fetch per leader until the count, the end (-e), a signal,
 * or an error. */
static int consume_loop(struct consumer *k)
{
    int32_t *leaders = calloc((size_t)k->parts_cap, sizeof(*leaders));
    if (!leaders)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    int rc = 0;
    int64_t stuck_since = -1, backoff = 100;
    char net_err[256] = "";
    while (rc == 0 && !cli_consume_stop) {
        int32_t nleaders = 0;
        for (int i = 0; i < k->nparts; i++) {
            int32_t l = k->t.leader[k->parts[i].id];
            int32_t j = 0;
            while (j < nleaders && leaders[j] != l)
                j++;
            if (part_wanted(k, &k->parts[i]) && j == nleaders)
                leaders[nleaders++] = l;
        }
        if (nleaders == 0 && (k->a->exit_at_end || !k->a->group))
            break;           /* -e: every partition at its end */
        if (nleaders == 0) { /* a member without partitions waits for a rebalance */
            cli_sleep_ms(200);
            rc = cli_consume_member_poll(k);
            continue;
        }
        /* -e needs no waiting; several leaders are asked in turn. */
        int32_t wait = k->a->exit_at_end ? 0 : nleaders > 1 ? 100 : 500;
        bool refresh = false;
        int took = TAKE_MORE;
        for (int32_t j = 0; j < nleaders && took == TAKE_MORE; j++)
            took = fetch_from(k, leaders[j], wait, &refresh, net_err, sizeof(net_err));
        int out = flush_stdout();
        if (out) {
            rc = out < 0 ? 0 : out;
            break;
        }
        if (took < 0) {
            rc = -took;
            break;
        }
        if (took == TAKE_COUNT_REACHED)
            break;
        if (refresh) {
            int64_t now = cli_now_ms();
            if (stuck_since < 0)
                stuck_since = now;
            /* A group member waits for the cluster to come back, as
             * Kafka's consumers do; a plain read gives up at --timeout. */
            if (!k->a->group && now - stuck_since > k->c->timeout_ms) {
                rc = cli_fail(CLI_EXIT_UNREACHABLE, "cannot read '%s' within --timeout %lld ms: %s", k->t.name,
                              (long long)k->c->timeout_ms, net_err);
                break;
            }
            cli_sleep_ms(backoff);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
            /* A broker still down leaves the old leaders, asked again. */
            k->c->net_err = net_err;
            k->c->net_err_len = sizeof(net_err);
            rc = cli_topic_lookup(k->c, k->t.name, CLI_LOOKUP_REFRESH, &k->t);
            k->c->net_err = NULL;
            if (rc == CLI_EXIT_UNREACHABLE)
                rc = 0;
        } else {
            stuck_since = -1;
            backoff = 100;
        }
        if (rc == 0 && k->a->group)
            rc = cli_consume_member_poll(k);
    }
    free(leaders);
    return rc;
}

static int consume_run(struct cli_conn *c, const char *topic, const struct consume_args *a)
{
    struct consumer k = {.c = c, .a = a};
    int rc = cli_topic_lookup(c, topic, CLI_LOOKUP_EXISTING, &k.t);
    if (rc)
        return rc;
    rc = cli_topic_has_partition(&k.t, a->partition);
    if (rc) {
        cli_topic_info_free(&k.t);
        return rc;
    }
    k.nparts = a->partition >= 0 ? 1 : k.t.partitions;
    k.parts_cap = k.nparts;
    k.parts = calloc((size_t)k.nparts, sizeof(*k.parts));
    if (!k.parts) {
        cli_topic_info_free(&k.t);
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    }
    for (int i = 0; i < k.nparts; i++)
        k.parts[i] = (struct part){.id = a->partition >= 0 ? (int32_t)a->partition : i,
                                   .position = a->start == START_AT ? a->start_value : -1,
                                   .end = -1,
                                   .committed = -1,
                                   .max_bytes = CONSUME_PARTITION_BYTES};
    k.last_commit_ms = cli_now_ms();
    if (a->group) {
        k.nparts = 0; /* the group's assignment says which */
        rc = cli_consume_member_join(&k);
    } else {
        rc = cli_consume_start_positions(&k);
    }
    if (rc == 0)
        rc = consume_loop(&k);
    /* Ctrl-C, the count or the end: commit and leave, so the others
     * take the partitions over at once. */
    if (a->group) {
        int left = cli_consume_member_leave(&k);
        rc = rc ? rc : left;
    }
    free(k.parts);
    free(k.inflated);
    cli_topic_info_free(&k.t);
    return rc;
}

int cli_consume_main(int argc, char **argv)
{
    struct consume_args a = {.partition = -1, .count = -1};
    struct cli_settings s;
    char *pos[1];
    int npos = 0;
    int rc = cli_parse(argc, argv, consume_usage, "p:o:c:eg:", consume_long, consume_flag, &a, &s, pos, &npos, 1);
    if (rc >= 0)
        return rc;
    if (npos != 1)
        return cli_fail(CLI_EXIT_USAGE, "consume wants one topic name\n%s", consume_usage);
    if (a.group && a.partition >= 0)
        return cli_fail(CLI_EXIT_USAGE, "--group and --partition cannot be used together (the group assigns the "
                                        "partitions)");
    if (a.group_instance_id && !a.group)
        return cli_fail(CLI_EXIT_USAGE, "--group-instance-id goes with --group");
    /* group.instance.id from -X, the environment or the profile (shared
     * with librdkafka apps: ignored by a read without --group). */
    if (!a.group_instance_id && s.group_instance_id[0] && a.group)
        a.group_instance_id = s.group_instance_id;
    a.debug_group = s.debug_cgrp;
    a.session_timeout_ms = s.session_timeout_ms;
    a.heartbeat_interval_ms = s.heartbeat_interval_ms;
    a.rebalance_timeout_ms = s.max_poll_interval_ms;
    a.commit_interval_ms = s.auto_commit_interval_ms;
    /* Ctrl-C ends the read cleanly (the group's positions committed). */
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    static char outbuf[1 << 20];
    setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = consume_run(&c, pos[0], &a);
    cli_close(&c);
    return rc;
}
