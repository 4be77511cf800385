/* cairn-rebalance-bench: a group of N consumers on a P-partition topic
 * under a steady trickle of records; one more member joins, and the tool
 * measures how long until every member holds its new assignment in a
 * Stable group, and how long each consumer and each partition consumed
 * nothing meanwhile. Repeated per assignment strategy; JSON on stdout. */
#include "rebalance.h"
#include "rebalance_run.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: cairn-rebalance-bench [--bootstrap H:P | --cairnd PATH]\n"
                 "    [--topic rebalance-bench] [--partitions 100] [--members 20] [--runs 5]\n"
                 "    [--strategy range|cooperative-sticky|both] [--rate 2000]\n"
                 "    [--baseline-ms 2000] [--settle-ms 2000] [--jitter-ms 3000] [--timeout-ms 60000]\n"
                 "    [-X key=value]... [--broker-override key=value]...\n"
                 "\n"
                 "Without --bootstrap it starts PATH (default build/core/server/cairnd) on a free\n"
                 "loopback port with group.initial.rebalance.delay.ms=0 in a temp dir.\n"
                 "-X sets a librdkafka property on every consumer; --broker-override a cairnd\n"
                 "setting of the started broker. Prints one JSON object.\n");
}

static int parse_int(const char *name, const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < min || v > max) {
        fprintf(stderr, "cairn-rebalance-bench: %s: expected an integer in [%ld, %ld], got '%s'\n", name, min, max,
                text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, struct rebalance_options *o)
{
    memset(o, 0, sizeof *o);
    o->cairnd = "build/core/server/cairnd";
    o->topic = "rebalance-bench";
    o->partitions = 100;
    o->members = 20;
    o->runs = 5;
    o->rate = 2000;
    o->baseline_ms = 2000;
    o->settle_ms = 2000;
    o->jitter_ms = 3000; /* librdkafka's heartbeat.interval.ms */
    o->timeout_ms = 60000;
    o->strategies[0] = "range";
    o->strategies[1] = "cooperative-sticky";
    o->strategy_count = 2;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "cairn-rebalance-bench: %s needs a value\n", name);
            return -1;
        }
        const char *v = argv[++i];
        long n = 0;
        if (!strcmp(name, "--bootstrap"))
            o->bootstrap = v;
        else if (!strcmp(name, "--cairnd"))
            o->cairnd = v;
        else if (!strcmp(name, "--topic"))
            o->topic = v;
        else if (!strcmp(name, "--strategy")) {
            if (!strcmp(v, "both")) {
                o->strategy_count = 2;
            } else if (!strcmp(v, "range") || !strcmp(v, "cooperative-sticky") || !strcmp(v, "roundrobin")) {
                o->strategies[0] = v;
                o->strategy_count = 1;
            } else {
                fprintf(stderr, "cairn-rebalance-bench: unknown strategy '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(name, "--partitions")) {
            if (parse_int(name, v, 1, REBALANCE_MAX_PARTITIONS, &n))
                return -1;
            o->partitions = (int)n;
        } else if (!strcmp(name, "--members")) {
            if (parse_int(name, v, 1, REBALANCE_MAX_MEMBERS - 1, &n))
                return -1;
            o->members = (int)n;
        } else if (!strcmp(name, "--runs")) {
            if (parse_int(name, v, 1, 1000, &n))
                return -1;
            o->runs = (int)n;
        } else if (!strcmp(name, "--rate")) {
            if (parse_int(name, v, 1, 1000000, &n))
                return -1;
            o->rate = (int)n;
        } else if (!strcmp(name, "--baseline-ms")) {
            if (parse_int(name, v, 100, 600000, &n))
                return -1;
            o->baseline_ms = n;
        } else if (!strcmp(name, "--settle-ms")) {
            if (parse_int(name, v, 100, 600000, &n))
                return -1;
            o->settle_ms = n;
        } else if (!strcmp(name, "--jitter-ms")) {
            if (parse_int(name, v, 0, 600000, &n))
                return -1;
            o->jitter_ms = n;
        } else if (!strcmp(name, "--timeout-ms")) {
            if (parse_int(name, v, 1000, 3600000, &n))
                return -1;
            o->timeout_ms = n;
        } else if (!strcmp(name, "-X")) {
            if (!strchr(v, '=') || o->override_count >= BENCH_MAX_OVERRIDES) {
                fprintf(stderr, "cairn-rebalance-bench: bad or too many -X '%s'\n", v);
                return -1;
            }
            o->overrides[o->override_count++] = v;
        } else if (!strcmp(name, "--broker-override")) {
            if (!strchr(v, '=') || o->broker_override_count >= BENCH_MAX_OVERRIDES) {
                fprintf(stderr, "cairn-rebalance-bench: bad or too many --broker-override '%s'\n", v);
                return -1;
            }
            o->broker_overrides[o->broker_override_count++] = v;
        } else {
            fprintf(stderr, "cairn-rebalance-bench: unknown option %s\n", name);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct rebalance_options opts;
    if (parse_options(argc, argv, &opts) != 0) {
        usage(stderr);
        return 2;
    }
    char err[512];
    struct rebalance_broker broker = {0};
    if (!opts.bootstrap) {
        if (access(opts.cairnd, X_OK) != 0) {
            fprintf(stderr, "cairn-rebalance-bench: %s is not executable (pass --cairnd or --bootstrap)\n",
                    opts.cairnd);
            return 2;
        }
        if (rebalance_broker_start(&broker, opts.cairnd, opts.broker_overrides, opts.broker_override_count, err,
                                   sizeof err) != 0) {
            fprintf(stderr, "cairn-rebalance-bench: %s\n", err);
            rebalance_broker_stop(&broker);
            return 1;
        }
        opts.bootstrap = broker.bootstrap;
        fprintf(stderr, "cairn-rebalance-bench: started %s on %s (data in %s)\n", opts.cairnd, broker.bootstrap,
                broker.dir);
    }
    int rc = rebalance_run_all(&opts, broker.pid > 0);
    rebalance_broker_stop(&broker);
    return rc;
}
