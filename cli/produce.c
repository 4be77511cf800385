/* cairn produce: one record per line of standard input, sent in Produce
 * requests to each partition's leader.
 *
 * Lines accumulate in one record batch per partition (Kafka's default
 * partitioner: murmur2 of the key for keyed records, one sticky partition
 * per request for unkeyed ones, moving on round-robin) and go out when a
 * megabyte is pending, at the end of the input, or when standard input has
 * nothing more to read right now (so interactive use sees each line sent).
 * A partition whose leader moved (NOT_LEADER_OR_FOLLOWER, ...) or a broker
 * that stopped answering is retried against fresh Metadata until --timeout;
 * any other error stops with exit 1 naming it. The producer is idempotent
 * unless told otherwise (enable.idempotence, produce_idempotent.h): each
 * batch carries a producer id and sequence, so a retried request whose
 * answer was lost is not written twice. A leader that lost the producer's
 * sequences (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID) gets the
 * unacknowledged batches again under a bumped epoch (KIP-360). Without it
 * delivery is at least once. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "produce_idempotent.h"
#include "codec/record_codec.h"
#include "protocol/record_batch.h"

#define PRODUCE_FLUSH_BYTES (1 << 20) /* pending record bytes that send a request */
#define PRODUCE_MAX_LINE (64 << 20)   /* a longer line is refused */
#define PRODUCE_MAX_HEADERS 32
#define PRODUCE_MAX_BUMPS 3 /* epoch bumps per request before the error stops the run */

static const char produce_usage[] =
    "usage: cairn produce TOPIC [flags] < records\n"
    "  sends one record per line of standard input (the newline is not part of it)\n"
    "  -K, --key-separator SEP   split each line at the first SEP into key and value\n"
    "                            (a line without SEP has a null key)\n"
    "  -p, --partition N         every record to partition N (default: murmur2 of the key,\n"
    "                            as Kafka's default partitioner; unkeyed records sticky per request)\n"
    "  -H, --header KEY=VALUE    a header on every record (repeatable)\n"
    "      --acks all|1|0        acknowledgement the leader waits for (default all; 1 or 0\n"
    "                            turn the idempotent producer off unless it was asked for)\n"
    "  -z, --compression CODEC   none (default), gzip, snappy, lz4 or zstd\n"
    "  -v, --verbose             print each record's partition and offset\n"
    "      --format json         print each record's topic, partition and offset as a JSON line\n"
    "  -X enable.idempotence=false  at-least-once delivery: no producer id or sequences\n"
    "  -X delivery.timeout.ms=MS     how long a batch is retried (default: --timeout)\n"
    "common flags: -b/--brokers, --profile, -X key=value, --timeout MS, -h/--help (see cairn --help)\n";

enum { OPT_ACKS = 5000, OPT_FORMAT };

static const struct option produce_long[] = {
    {"key-separator", required_argument, NULL, 'K'}, {"partition", required_argument, NULL, 'p'},
    {"header", required_argument, NULL, 'H'},        {"acks", required_argument, NULL, OPT_ACKS},
    {"compression", required_argument, NULL, 'z'},   {"verbose", no_argument, NULL, 'v'},
    {"format", required_argument, NULL, OPT_FORMAT}, {NULL, 0, NULL, 0},
};

/* Flags; plain data on the main thread's stack. */
struct produce_args {
    const char *key_sep;
    size_t key_sep_len;
    long long partition; /* -1: the partitioner decides */
    struct record_batch_header_field headers[PRODUCE_MAX_HEADERS];
    int nheaders;
    int16_t acks;
    bool acks_set;
    int compression;
    bool verbose, json;
};

static int produce_flag(int opt, const char *arg, void *ctx)
{
    struct produce_args *a = ctx;
    switch (opt) {
    case 'K':
        if (!*arg)
            return cli_fail(CLI_EXIT_USAGE, "--key-separator wants a non-empty separator");
        a->key_sep = arg;
        a->key_sep_len = strlen(arg);
        return -1;
    case 'p':
        if (cli_parse_int(arg, 0, INT32_MAX, &a->partition) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--partition wants a partition number, got '%s'", arg);
        return -1;
    case 'H': {
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg)
            return cli_fail(CLI_EXIT_USAGE, "--header wants KEY=VALUE, got '%s'", arg);
        if (a->nheaders == PRODUCE_MAX_HEADERS)
            return cli_fail(CLI_EXIT_USAGE, "at most %d headers", PRODUCE_MAX_HEADERS);
        struct record_batch_header_field *h = &a->headers[a->nheaders++];
        h->key = (const uint8_t *)arg;
        h->key_len = (int32_t)(eq - arg);
        h->value = (const uint8_t *)eq + 1;
        h->value_len = (int32_t)strlen(eq + 1);
        return -1;
    }
    case OPT_ACKS:
        if (!strcmp(arg, "all") || !strcmp(arg, "-1"))
            a->acks = -1;
        else if (!strcmp(arg, "1") || !strcmp(arg, "0"))
            a->acks = (int16_t)(arg[0] - '0');
        else
            return cli_fail(CLI_EXIT_USAGE, "--acks wants all, 1 or 0, got '%s'", arg);
        a->acks_set = true;
        return -1;
    case 'z': {
        static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
        for (int i = 0; i < 5; i++)
            if (!strcmp(arg, names[i])) {
                a->compression = i; /* record_batch_compression numbering */
                return -1;
            }
        return cli_fail(CLI_EXIT_USAGE, "--compression wants none, gzip, snappy, lz4 or zstd, got '%s'", arg);
    }
    case 'v':
        a->verbose = true;
        return -1;
    case OPT_FORMAT:
        if (!strcmp(arg, "json"))
            a->json = true;
        else if (strcmp(arg, "text") != 0)
            return cli_fail(CLI_EXIT_USAGE, "--format wants text or json, got '%s'", arg);
        return -1;
    }
    return CLI_EXIT_USAGE;
}

/* Where one pending line went, so output follows the input's order. */
struct pending_record {
    int32_t partition;
    int32_t index; /* within its partition's batch */
};

/* One partition's batch of a request being sent. */
struct partition_batch {
    uint8_t *buf;
    size_t len;
    int64_t base_offset;
    int16_t error; /* last answer's error, NONE once written */
    bool pending;  /* still to be written */
};

/* The producer's state; main thread only. */
struct producer {
    struct cli_conn *c;
    struct cli_topic_info t;
    const struct produce_args *a;
    int32_t nbuilders;
    struct record_batch_builder *builders; /* per partition */
    struct pending_record *recs;
    size_t nrecs, cap;
    size_t pending_bytes;
    int32_t sticky; /* partition of unkeyed records in this request */
    int64_t delivery_timeout_ms;
    struct produce_idem idem;
    char net_err[256];
};

/* ---- one Produce request per leader ---- */

struct produce_ctx {
    const struct producer *p;
    struct partition_batch *pb;
    int32_t leader;
};

static int build_produce(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct produce_request *m = req;
    const struct produce_ctx *pc = ctx;
    const struct producer *p = pc->p;
    (void)version;
    m->transactional_id = (struct kafka_str){NULL, -1};
    m->acks = p->a->acks;
    m->timeout_ms = (int32_t)p->c->timeout_ms;
    int32_t n = 0;
    for (int32_t i = 0; i < p->nbuilders; i++)
        n += pc->pb[i].pending && p->t.leader[i] == pc->leader;
    m->topic_data = kafka_arena_alloc(ar, sizeof(*m->topic_data));
    struct produce_request_partition_produce_data *pd = kafka_arena_alloc(ar, sizeof(*pd) * (size_t)(n ? n : 1));
    if (!m->topic_data || !pd)
        return -1;
    produce_request_topic_produce_data_init(&m->topic_data[0]);
    m->topic_data[0].name = kafka_str_from_cstr(p->t.name);
    n = 0;
    for (int32_t i = 0; i < p->nbuilders; i++) {
        if (!pc->pb[i].pending || p->t.leader[i] != pc->leader)
            continue;
        produce_request_partition_produce_data_init(&pd[n]);
        pd[n].index = i;
        pd[n].records = kafka_records_from_memory(pc->pb[i].buf, (int32_t)pc->pb[i].len);
        n++;
    }
    m->topic_data[0].partition_data = pd;
    m->topic_data[0].partition_data_count = n;
    m->topic_data_count = 1;
    return 0;
}

/* Errors after which the same batch may succeed: the leader moved or is
 * catching up (Kafka's retriable ones for Produce). */
static bool produce_retriable(int16_t code)
{
    switch (code) {
    case KAFKA_ERR_NOT_LEADER_OR_FOLLOWER:
    case KAFKA_ERR_LEADER_NOT_AVAILABLE:
    case KAFKA_ERR_REQUEST_TIMED_OUT:
    case KAFKA_ERR_NETWORK_EXCEPTION:
    case KAFKA_ERR_NOT_ENOUGH_REPLICAS:
    case KAFKA_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KAFKA_ERR_KAFKA_STORAGE_ERROR:
    case KAFKA_ERR_FENCED_LEADER_EPOCH:
    case KAFKA_ERR_UNKNOWN_LEADER_EPOCH:
    case KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION: /* a broker still loading its logs */
        return true;
    default:
        return false;
    }
}

/* Sends the pending batches led by leader; marks each written or its error.
 * Returns 0 (errors, retriable or not, are in pb), or an exit code. */
static int send_to_leader(struct producer *p, struct partition_batch *pb, int32_t leader)
{
    struct produce_ctx pc = {p, pb, leader};
    struct cli_reply r;
    p->c->no_response = p->a->acks == 0;
    p->c->net_err = p->net_err;
    p->c->net_err_len = sizeof(p->net_err);
    int rc = cli_call(p->c, leader, KAFKA_API_KEY_PRODUCE, build_produce, &pc, &r);
    p->c->no_response = false;
    p->c->net_err = NULL;
    if (rc == CLI_EXIT_UNREACHABLE) {
        /* The leader stopped answering: asked again after new Metadata. */
        for (int32_t i = 0; i < p->nbuilders; i++)
            if (pb[i].pending && p->t.leader[i] == leader)
                pb[i].error = KAFKA_ERR_NETWORK_EXCEPTION;
        return 0;
    }
    if (rc)
        return rc;
    const struct produce_response *m = r.response;
    if (!m) { /* acks=0: no answer, no offsets */
        for (int32_t i = 0; i < p->nbuilders; i++)
            if (pb[i].pending && p->t.leader[i] == leader) {
                pb[i].pending = false;
                pb[i].error = KAFKA_ERR_NONE;
                pb[i].base_offset = -1;
            }
        return 0;
    }
    for (int32_t ti = 0; ti < m->responses_count; ti++)
        for (int32_t pi = 0; pi < m->responses[ti].partition_responses_count; pi++) {
            const struct produce_response_partition_produce_response *pr = &m->responses[ti].partition_responses[pi];
            if (pr->index < 0 || pr->index >= p->nbuilders || !pb[pr->index].pending)
                continue;
            struct partition_batch *b = &pb[pr->index];
            b->error = pr->error_code;
            if (pr->error_code == KAFKA_ERR_NONE || produce_idem_already_written(&p->idem, pr->error_code)) {
                b->pending = false;
                b->error = KAFKA_ERR_NONE;
                b->base_offset = pr->error_code == KAFKA_ERR_NONE ? pr->base_offset : -1;
            } else if (!produce_retriable(pr->error_code) && !produce_idem_recoverable(&p->idem, pr->error_code)) {
                char what[400];
                snprintf(what, sizeof(what), "cannot produce to partition %d of '%s'", (int)pr->index, p->t.name);
                rc = cli_kafka_fail(pr->error_code, r.version >= 8 ? pr->error_message : (struct kafka_str){NULL, -1},
                                    what,
                                    pr->error_code == KAFKA_ERR_MESSAGE_TOO_LARGE
                                        ? "a line is larger than the topic's max.message.bytes"
                                        : produce_idem_hint(pr->error_code));
            }
        }
    cli_reply_free(&r);
    return rc;
}

/* Prints where each record of the request went, in input order. */
static void print_delivered(const struct producer *p, const struct partition_batch *pb)
{
    for (size_t i = 0; i < p->nrecs; i++) {
        const struct pending_record *pr = &p->recs[i];
        int64_t base = pb[pr->partition].base_offset;
        long long offset = base < 0 ? -1 : (long long)(base + pr->index);
        if (p->a->json)
            printf("{\"topic\":\"%s\",\"partition\":%d,\"offset\":%lld}\n", p->t.name, (int)pr->partition, offset);
        else
            printf("partition %d offset %lld\n", (int)pr->partition, offset);
    }
    fflush(stdout);
}

/* Finishes the pending batches into pb (compressed when asked). */
static int seal_batches(struct producer *p, struct partition_batch *pb)
{
    for (int32_t i = 0; i < p->nbuilders; i++) {
        if (p->builders[i].count == 0)
            continue;
        produce_idem_stamp(&p->idem, i, &p->builders[i]);
        if (record_batch_builder_finish(&p->builders[i], &pb[i].buf, &pb[i].len) < 0)
            return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory building a record batch");
        pb[i].pending = true;
        record_batch_builder_init(&p->builders[i], 0);
        if (p->a->compression != RECORD_BATCH_COMPRESSION_NONE) {
            uint8_t *z;
            size_t zlen;
            char err[160];
            if (record_codec_deflate_batch(pb[i].buf, pb[i].len, p->a->compression, &z, &zlen, err, sizeof(err)) < 0)
                return cli_fail(CLI_EXIT_UNREACHABLE, "cannot compress a record batch: %s", err);
            free(pb[i].buf);
            pb[i].buf = z;
            pb[i].len = zlen;
        }
    }
    return 0;
}

/* Sends everything pending, retrying moved leaders until --timeout. */
static int flush(struct producer *p)
{
    if (p->nrecs == 0)
        return 0;
    struct partition_batch *pb = calloc((size_t)p->nbuilders, sizeof(*pb));
    if (!pb)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    int rc = seal_batches(p, pb);
    int64_t deadline = cli_now_ms() + p->delivery_timeout_ms, backoff = 100;
    int bumps = 0;
    int32_t *leaders = calloc((size_t)p->nbuilders, sizeof(*leaders));
    if (!leaders)
        rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    while (rc == 0) {
        /* One request to each leader of a pending partition. */
        int32_t nleaders = 0;
        for (int32_t i = 0; i < p->nbuilders; i++) {
            int32_t j = 0;
            while (j < nleaders && leaders[j] != p->t.leader[i])
                j++;
            if (pb[i].pending && j == nleaders)
                leaders[nleaders++] = p->t.leader[i];
        }
        for (int32_t j = 0; j < nleaders && rc == 0; j++)
            rc = send_to_leader(p, pb, leaders[j]);
        int32_t left = -1, lost = -1;
        for (int32_t i = 0; i < p->nbuilders; i++)
            if (pb[i].pending) {
                left = i;
                lost = produce_idem_recoverable(&p->idem, pb[i].error) ? i : lost;
            }
        bool lost_state = lost >= 0;
        if (rc || left < 0)
            break;
        if (lost_state && bumps < PRODUCE_MAX_BUMPS) {
            /* The leader lost this producer's sequences (records deleted,
             * the producer expired, a truncation): as Kafka's producer
             * (KIP-360), a new epoch restarts every sequence at 0 and the
             * batches not acknowledged go out again under it. */
            bumps++;
            rc = produce_idem_bump(&p->idem, p->c, deadline);
            for (int32_t i = 0; rc == 0 && i < p->nbuilders; i++)
                if (pb[i].pending) {
                    produce_idem_restamp(&p->idem, i, pb[i].buf, pb[i].len);
                    pb[i].error = KAFKA_ERR_NONE;
                }
            if (rc)
                break;
            continue;
        }
        if (lost_state) {
            char what[400];
            snprintf(what, sizeof(what), "cannot produce to partition %d of '%s'", (int)lost, p->t.name);
            rc = cli_kafka_fail(pb[lost].error, (struct kafka_str){NULL, -1}, what, produce_idem_hint(pb[lost].error));
            break;
        }
        if (cli_now_ms() + backoff > deadline) {
            char what[800];
            snprintf(what, sizeof(what), "cannot produce to partition %d of '%s' within %lld ms%s%s", (int)left,
                     p->t.name, (long long)p->delivery_timeout_ms, p->net_err[0] ? ": " : "", p->net_err);
            rc = pb[left].error == KAFKA_ERR_NETWORK_EXCEPTION && p->net_err[0]
                     ? cli_fail(CLI_EXIT_UNREACHABLE, "%s; check the broker is up or raise --timeout", what)
                     : cli_kafka_fail(pb[left].error, (struct kafka_str){NULL, -1}, what,
                                      "check the partition's leader, or raise --timeout");
            break;
        }
        cli_sleep_ms(backoff);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        for (int32_t i = 0; i < p->nbuilders; i++)
            pb[i].error = pb[i].pending ? KAFKA_ERR_NONE : pb[i].error;
        /* New leaders; partitions only grow, so pb's indexes stay valid. A
         * broker still down leaves the old ones, tried again until then. */
        p->c->net_err = p->net_err;
        p->c->net_err_len = sizeof(p->net_err);
        rc = cli_topic_lookup(p->c, p->t.name, CLI_LOOKUP_REFRESH, &p->t);
        p->c->net_err = NULL;
        if (rc == CLI_EXIT_UNREACHABLE)
            rc = 0;
    }
    if (rc == 0 && (p->a->verbose || p->a->json))
        print_delivered(p, pb);
    for (int32_t i = 0; i < p->nbuilders; i++)
        free(pb[i].buf);
    free(pb);
    free(leaders);
    p->nrecs = 0;
    p->pending_bytes = 0;
    p->sticky = (p->sticky + 1) % p->nbuilders;
    return rc;
}

/* ---- lines to records ---- */

static int add_record(struct producer *p, const uint8_t *line, size_t len)
{
    const struct produce_args *a = p->a;
    const uint8_t *key = NULL, *value = line;
    size_t key_len = 0, value_len = len;
    if (a->key_sep) {
        const uint8_t *sep = memmem(line, len, a->key_sep, a->key_sep_len);
        if (sep) {
            key = line;
            key_len = (size_t)(sep - line);
            value = sep + a->key_sep_len;
            value_len = len - key_len - a->key_sep_len;
        }
    }
    int32_t part = a->partition >= 0 ? (int32_t)a->partition
                   : key             ? (int32_t)((cli_murmur2(key, key_len) & 0x7fffffff) % (uint32_t)p->nbuilders)
                                     : p->sticky;
    if (p->nrecs == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 1024;
        struct pending_record *grown = realloc(p->recs, cap * sizeof(*grown));
        if (!grown)
            return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
        p->recs = grown;
        p->cap = cap;
    }
    struct record_batch_builder *b = &p->builders[part];
    int64_t now = cli_now_ms();
    if (b->count == 0)
        record_batch_builder_init(b, now);
    p->recs[p->nrecs++] = (struct pending_record){part, b->count};
    if (record_batch_builder_add(b, now, key, key ? (int32_t)key_len : -1, value, (int32_t)value_len, a->headers,
                                 a->nheaders) < 0)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory building a record batch");
    p->pending_bytes += len + 32;
    return p->pending_bytes >= PRODUCE_FLUSH_BYTES ? flush(p) : 0;
}

/* Standard input in large reads, split at newlines. */
struct line_reader {
    uint8_t *buf;
    size_t cap, start, end;
    bool eof;
};

static bool input_waiting(void)
{
    struct pollfd pfd = {.fd = 0, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* 1: a line in line and len (valid until the next call); 0: end of
 * input; or an exit code, negated. */
static int next_line(struct producer *p, struct line_reader *r, const uint8_t **line, size_t *len)
{
    for (;;) {
        uint8_t *nl = r->end > r->start ? memchr(r->buf + r->start, '\n', r->end - r->start) : NULL;
        if (nl || (r->eof && r->end > r->start)) {
            size_t stop = nl ? (size_t)(nl - r->buf) : r->end;
            *line = r->buf + r->start;
            *len = stop - r->start;
            r->start = nl ? stop + 1 : stop;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->end == r->cap) {
            if (r->cap >= PRODUCE_MAX_LINE)
                return -cli_fail(CLI_EXIT_USAGE, "a line of standard input is longer than %d bytes", PRODUCE_MAX_LINE);
            uint8_t *grown = realloc(r->buf, r->cap * 2);
            if (!grown)
                return -cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
            r->buf = grown;
            r->cap *= 2;
        }
        /* Before waiting for more input, send what the user typed. */
        if (p->nrecs && !input_waiting()) {
            int rc = flush(p);
            if (rc)
                return -rc;
        }
        ssize_t n = read(0, r->buf + r->end, r->cap - r->end);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -cli_fail(CLI_EXIT_USAGE, "cannot read standard input: %s", strerror(errno));
        if (n == 0)
            r->eof = true;
        r->end += (size_t)n;
    }
}

static int produce_run(struct cli_conn *c, const char *topic, const struct produce_args *a,
                       const struct cli_settings *s, bool idempotent)
{
    struct producer p = {.c = c, .a = a};
    p.delivery_timeout_ms = s->delivery_timeout_ms > 0 ? s->delivery_timeout_ms : c->timeout_ms;
    int rc = cli_topic_lookup(c, topic, CLI_LOOKUP_CREATE, &p.t);
    if (rc)
        return rc;
    rc = cli_topic_has_partition(&p.t, a->partition);
    if (rc) {
        cli_topic_info_free(&p.t);
        return rc;
    }
    p.nbuilders = p.t.partitions;
    rc = produce_idem_init(&p.idem, c, idempotent, p.nbuilders, cli_now_ms() + p.delivery_timeout_ms);
    if (rc) {
        cli_topic_info_free(&p.t);
        return rc;
    }
    p.sticky = (int32_t)((uint64_t)cli_now_ms() % (uint64_t)p.nbuilders);
    p.builders = calloc((size_t)p.nbuilders, sizeof(*p.builders));
    struct line_reader r = {.cap = 1 << 20};
    r.buf = malloc(r.cap);
    if (!p.builders || !r.buf)
        rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    for (int32_t i = 0; rc == 0 && i < p.nbuilders; i++)
        record_batch_builder_init(&p.builders[i], 0);
    while (rc == 0) {
        const uint8_t *line = NULL;
        size_t len = 0;
        int got = next_line(&p, &r, &line, &len);
        if (got < 0)
            rc = -got;
        if (got <= 0)
            break;
        rc = add_record(&p, line, len);
    }
    if (rc == 0)
        rc = flush(&p);
    for (int32_t i = 0; p.builders && i < p.nbuilders; i++)
        record_batch_builder_free(&p.builders[i]);
    free(p.builders);
    free(p.recs);
    free(r.buf);
    produce_idem_free(&p.idem);
    cli_topic_info_free(&p.t);
    return rc;
}

int cli_produce_main(int argc, char **argv)
{
    struct produce_args a = {.partition = -1, .acks = -1};
    struct cli_settings s;
    char *pos[1];
    int npos = 0;
    int rc = cli_parse(argc, argv, produce_usage, "K:p:H:z:v", produce_long, produce_flag, &a, &s, pos, &npos, 1);
    if (rc >= 0)
        return rc;
    if (npos != 1)
        return cli_fail(CLI_EXIT_USAGE, "produce wants one topic name\n%s", produce_usage);
    bool idempotent;
    rc = produce_idem_resolve(s.idempotence, a.acks_set, a.acks, &idempotent);
    if (rc)
        return rc;
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = produce_run(&c, pos[0], &a, &s, idempotent);
    cli_close(&c);
    return rc;
}
