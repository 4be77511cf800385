/* cairn-bench: throughput and latency of a Kafka-protocol broker, measured
 * with librdkafka the way kafka-producer-perf-test and
 * kafka-consumer-perf-test measure Kafka. */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void bench_usage(FILE *out)
{
    fprintf(out, "usage:\n"
                 "  cairn-bench produce --bootstrap H:P --topic T --records N\n"
                 "      [--record-size 1024] [--acks 1] [--linger-ms 5] [--partitions P]\n"
                 "      [--replication-factor 1] [--compression none] [--broker-pid PID]\n"
                 "      [--flush-timeout-ms 120000] [--txn-size N [--txn-id ID]]\n"
                 "      [--rate R [--timeline FILE]] [--stamp 1] [-X key=value]...\n"
                 "  cairn-bench consume --bootstrap H:P --topic T --records N\n"
                 "      [--group G] [--idle-timeout-ms 10000] [--broker-pid PID] [--check-offsets 1]\n"
                 "      [-X key=value]...\n"
                 "  cairn-bench mock-cluster [--brokers 1] [--topic T --partitions P]\n"
                 "  cairn-bench wait-topic --bootstrap H:P --topic T [--partitions P]\n"
                 "      [--idle-timeout-ms 10000]\n"
                 "  cairn-bench create-topics --bootstrap H:P --topic PREFIX --topics N\n"
                 "      [--partitions P] [--replication-factor R] [--batch 100]\n"
                 "  cairn-bench wait-partitions --bootstrap H:P --topic PREFIX --topics N\n"
                 "      [--partitions P] [--idle-timeout-ms 10000]\n"
                 "  cairn-bench end-offsets --bootstrap H:P --topic T [--every-ms MS]\n"
                 "\n"
                 "produce and consume print one JSON object on stdout. mock-cluster prints\n"
                 "the bootstrap address of an in-process librdkafka mock cluster and serves\n"
                 "until SIGTERM or SIGINT. wait-topic reports how long until the topic has\n"
                 "P partitions, each with a leader. produce --txn-size N sends the records\n"
                 "in transactions of N records each (transactional.id --txn-id, default\n"
                 "cairn-bench-<pid>) and reports the commit latency. produce --rate R sends\n"
                 "R records per second on a fixed schedule (open loop) and times each record\n"
                 "from the moment it was due, not from when it was sent; --timeline FILE\n"
                 "writes each record's due and acknowledgement times there (CSV, wall clock\n"
                 "in ms since the epoch). create-topics makes\n"
                 "topics PREFIX-00000.. in CreateTopics requests of --batch topics each;\n"
                 "wait-partitions reports how long until all N of them are in Metadata with\n"
                 "P partitions each, every one with a leader. end-offsets prints the sum of\n"
                 "the topic's partitions' high watermarks and the wall time (time_ms), once\n"
                 "or, with --every-ms, on that period until killed.\n");
}

static int parse_long(const char *name, const char *text, long long min, long long max, long long *out, char *err,
                      size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < min || v > max) {
        snprintf(err, errlen, "%s: expected an integer in [%lld, %lld], got '%s'", name, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int bench_options_parse(int argc, char **argv, struct bench_options *opts, char *err, size_t errlen)
{
    memset(opts, 0, sizeof(*opts));
    opts->records = 1000000;
    opts->record_size = 1024;
    opts->acks = "1";
    opts->linger_ms = 5;
    opts->replication_factor = 1;
    opts->compression = "none";
    opts->idle_timeout_ms = 10000;
    opts->flush_timeout_ms = 120000;
    opts->brokers = 1;

    if (argc < 2) {
        snprintf(err, errlen, "missing command");
        return -1;
    }
    opts->command = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *name = argv[i];
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", name);
            return -1;
        }
        const char *value = argv[++i];
        long long n = 0;
        int rc = 0;
        if (!strcmp(name, "--bootstrap"))
            opts->bootstrap = value;
        else if (!strcmp(name, "--topic"))
            opts->topic = value;
        else if (!strcmp(name, "--records")) {
            rc = parse_long(name, value, 1, LLONG_MAX / 2, &n, err, errlen);
            opts->records = n;
        } else if (!strcmp(name, "--record-size")) {
            rc = parse_long(name, value, 0, 100 * 1024 * 1024, &n, err, errlen);
            opts->record_size = (long)n;
        } else if (!strcmp(name, "--acks"))
            opts->acks = value;
        else if (!strcmp(name, "--linger-ms")) {
            rc = parse_long(name, value, 0, 900000, &n, err, errlen);
            opts->linger_ms = (long)n;
        } else if (!strcmp(name, "--partitions")) {
            rc = parse_long(name, value, 1, 100000, &n, err, errlen);
            opts->partitions = (int)n;
        } else if (!strcmp(name, "--replication-factor")) {
            rc = parse_long(name, value, 1, 1000, &n, err, errlen);
            opts->replication_factor = (int)n;
        } else if (!strcmp(name, "--compression"))
            opts->compression = value;
        else if (!strcmp(name, "--broker-pid")) {
            rc = parse_long(name, value, 1, INT_MAX, &n, err, errlen);
            opts->broker_pid = (pid_t)n;
        } else if (!strcmp(name, "--group"))
            opts->group = value;
        else if (!strcmp(name, "--idle-timeout-ms")) {
            rc = parse_long(name, value, 1, 86400000, &n, err, errlen);
            opts->idle_timeout_ms = (long)n;
        } else if (!strcmp(name, "--flush-timeout-ms")) {
            rc = parse_long(name, value, 1, 86400000, &n, err, errlen);
            opts->flush_timeout_ms = (long)n;
        } else if (!strcmp(name, "--txn-size")) {
            rc = parse_long(name, value, 0, LLONG_MAX / 2, &n, err, errlen);
            opts->txn_size = n;
        } else if (!strcmp(name, "--check-offsets")) {
            rc = parse_long(name, value, 0, 1, &n, err, errlen);
            opts->check_offsets = (int)n;
        } else if (!strcmp(name, "--stamp")) {
            rc = parse_long(name, value, 0, 1, &n, err, errlen);
            opts->stamp = (int)n;
        } else if (!strcmp(name, "--rate")) {
            rc = parse_long(name, value, 0, 10000000, &n, err, errlen);
            opts->rate = n;
        } else if (!strcmp(name, "--txn-id"))
            opts->txn_id = value;
        else if (!strcmp(name, "--timeline"))
            opts->timeline = value;
        else if (!strcmp(name, "--brokers")) {
            rc = parse_long(name, value, 1, 64, &n, err, errlen);
            opts->brokers = (int)n;
        } else if (!strcmp(name, "--port")) {
            rc = parse_long(name, value, 0, 65535, &n, err, errlen);
            opts->port = (int)n;
        } else if (!strcmp(name, "--topics")) {
            rc = parse_long(name, value, 1, 1000000, &n, err, errlen);
            opts->topics = (int)n;
        } else if (!strcmp(name, "--batch")) {
            rc = parse_long(name, value, 1, 100000, &n, err, errlen);
            opts->batch = (int)n;
        } else if (!strcmp(name, "--every-ms")) {
            rc = parse_long(name, value, 1, 3600000, &n, err, errlen);
            opts->every_ms = (long)n;
        } else if (!strcmp(name, "-X")) {
            if (!strchr(value, '=')) {
                snprintf(err, errlen, "-X expects key=value, got '%s'", value);
                return -1;
            }
            if (opts->override_count >= BENCH_MAX_OVERRIDES) {
                snprintf(err, errlen, "too many -X options (max %d)", BENCH_MAX_OVERRIDES);
                return -1;
            }
            opts->overrides[opts->override_count++] = value;
        } else {
            snprintf(err, errlen, "unknown option %s", name);
            return -1;
        }
        if (rc != 0)
            return -1;
    }

    int needs_broker = !strcmp(opts->command, "produce") || !strcmp(opts->command, "consume") ||
                       !strcmp(opts->command, "wait-topic") || !strcmp(opts->command, "create-topics") ||
                       !strcmp(opts->command, "wait-partitions") || !strcmp(opts->command, "end-offsets");
    if (needs_broker && (!opts->bootstrap || !opts->topic)) {
        snprintf(err, errlen, "%s needs --bootstrap and --topic", opts->command);
        return -1;
    }
    if (opts->timeline && opts->rate == 0) {
        snprintf(err, errlen, "--timeline needs --rate");
        return -1;
    }
    if (opts->rate > 0 && opts->txn_size > 0) {
        snprintf(err, errlen, "--rate and --txn-size cannot be combined");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct bench_options opts;
    char err[512];

    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        bench_usage(stdout);
        return 0;
    }
    if (bench_options_parse(argc, argv, &opts, err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        bench_usage(stderr);
        return 2;
    }
    if (!strcmp(opts.command, "produce"))
        return bench_run_produce(&opts);
    if (!strcmp(opts.command, "consume"))
        return bench_run_consume(&opts);
    if (!strcmp(opts.command, "wait-topic"))
        return bench_run_wait_topic(&opts);
    if (!strcmp(opts.command, "create-topics"))
        return bench_run_create_topics(&opts);
    if (!strcmp(opts.command, "wait-partitions"))
        return bench_run_wait_partitions(&opts);
    if (!strcmp(opts.command, "end-offsets"))
        return bench_run_end_offsets(&opts);
    if (!strcmp(opts.command, "mock-cluster"))
        return bench_run_mock_cluster(&opts);
    fprintf(stderr, "cairn-bench: unknown command '%s'\n", opts.command);
    bench_usage(stderr);
    return 2;
}
