/* cairn-chaos: command line, and the seeded fault schedule (see chaos.h). */
#include "chaos.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t chaos_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void chaos_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int64_t now = chaos_now_ms();
    fprintf(stderr, "%lld.%03lld cairn-chaos: %s\n", (long long)(now / 1000), (long long)(now % 1000), line);
}

/* splitmix64: the schedule depends on the seed alone, on every machine. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rng_between(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* One fault at a time: "<at_ms> kill <node> <down_ms>" (kill -9, restart
 * after down_ms), "<at_ms> pause <node> <pause_ms>" (SIGSTOP, SIGCONT
 * after pause_ms, which exceeds session_ms so the controller fences the
 * node and the consumer group loses a member's session) or "<at_ms>
 * partition <node> <ms>" (the node cut off from the other nodes, not from
 * clients, for 3 s up to 5 s past session_ms). The last
 * tail_ms of the run stay quiet so the cluster settles before the drain. */
static int plan(uint64_t seed, int seconds, int nodes, const char *kinds, int session_ms, int tail_ms)
{
    int want_kill = strstr(kinds, "kill") != NULL, want_pause = strstr(kinds, "pause") != NULL;
    int want_partition = strstr(kinds, "partition") != NULL;
    if (nodes < 1 || seconds < 1 || (!want_kill && !want_pause && !want_partition)) {
        fprintf(stderr, "cairn-chaos plan: needs --nodes >= 1, --seconds >= 1 and --faults kill,pause,partition\n");
        return 2;
    }
    uint64_t s = seed;
    int64_t end = (int64_t)seconds * 1000 - tail_ms;
    int64_t at = rng_between(&s, 3000, 8000);
    for (;;) {
        int node = (int)rng_between(&s, 1, nodes);
        const char *kind;
        int64_t dur;
        if (want_partition) {
            /* Without partitions the draws below stay as they were, so a
             * seed's kill/pause schedule does not change. */
            const char *on[3];
            int n = 0;
            if (want_kill)
                on[n++] = "kill";
            if (want_pause)
                on[n++] = "pause";
            on[n++] = "partition";
            kind = on[rng_next(&s) % (uint64_t)n];
        } else {
            kind = want_kill && (!want_pause || rng_next(&s) % 2 == 0) ? "kill" : "pause";
        }
        if (strcmp(kind, "kill") == 0)
            dur = rng_between(&s, 1000, 6000);
        else if (strcmp(kind, "pause") == 0)
            dur = session_ms + rng_between(&s, 2000, 5000);
        else
            dur = rng_between(&s, 3000, session_ms + 5000);
        if (at + dur > end)
            break;
        printf("%" PRId64 " %s %d %" PRId64 "\n", at, kind, node, dur);
        at += dur + rng_between(&s, 3000, 10000);
    }
    return 0;
}

static const char usage[] =
    "usage: cairn-chaos plan  --seed N --seconds S [--nodes 3] [--faults kill,pause,partition]\n"
    "                         [--session-ms 9000] [--tail-ms 15000]\n"
    "       cairn-chaos work  --bootstrap B --topic T --out DIR [--seconds 60] [--producers 2]\n"
    "                         [--rate 100] [--group G] [--drain-seconds 60] [--max-drain-seconds 180]\n"
    "                         [--message-timeout-ms 120000] [--txn-producers 0] [--txn-size 10]\n"
    "                         [--strict-txn] [--txn-debug]\n"
    "       cairn-chaos read  --bootstrap B --topic T --out FILE [--timeout-seconds 120]\n"
    "       cairn-chaos produce --bootstrap B --topic T --name N [--count 1] [--retries 0]\n"
    "                         [--message-timeout-ms 10000] [--out ACKED_LOG] [--times]\n"
    "                         [--client-prop key=value]...\n"
    "       cairn-chaos check --acked FILE --read FILE [--examples 10]\n";

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    static const struct option longs[] = {
        {"seed", required_argument, 0, 'S'},
        {"seconds", required_argument, 0, 's'},
        {"nodes", required_argument, 0, 'n'},
        {"faults", required_argument, 0, 'f'},
        {"session-ms", required_argument, 0, 'x'},
        {"tail-ms", required_argument, 0, 't'},
        {"bootstrap", required_argument, 0, 'b'},
        {"topic", required_argument, 0, 'T'},
        {"out", required_argument, 0, 'o'},
        {"producers", required_argument, 0, 'p'},
        {"rate", required_argument, 0, 'r'},
        {"group", required_argument, 0, 'g'},
        {"drain-seconds", required_argument, 0, 'd'},
        {"max-drain-seconds", required_argument, 0, 'D'},
        {"message-timeout-ms", required_argument, 0, 'm'},
        {"timeout-seconds", required_argument, 0, 'w'},
        {"acked", required_argument, 0, 'a'},
        {"read", required_argument, 0, 'R'},
        {"examples", required_argument, 0, 'e'},
        {"txn-producers", required_argument, 0, 'X'},
        {"txn-size", required_argument, 0, 'z'},
        {"name", required_argument, 0, 'N'},
        {"count", required_argument, 0, 'c'},
        {"retries", required_argument, 0, 'y'},
        {"times", no_argument, 0, 'M'},
        {"client-prop", required_argument, 0, 'P'},
        {"strict-txn", no_argument, 0, 'F'},
        {"txn-debug", no_argument, 0, 'G'},
        {0, 0, 0, 0},
    };
    uint64_t seed = 1;
    int seconds = 60, nodes = 3, session_ms = 9000, tail_ms = 15000, examples = 10, timeout_s = 120;
    const char *faults = "kill,pause", *acked = NULL, *read = NULL, *name = "probe";
    int count = 1, retries = 0, timeout_given = 0, print_times = 0;
    const char *client_props[CHAOS_MAX_CLIENT_PROPS] = {0};
    int client_prop_count = 0;
    struct chaos_work_opts w = {.group = "cairn-chaos",
                                .producers = 2,
                                .rate = 100,
                                .drain_seconds = 60,
                                .max_drain_seconds = 180,
                                .message_timeout_ms = 120000,
                                .txn_size = 10};
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'S':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 's':
            seconds = atoi(optarg);
            break;
        case 'n':
            nodes = atoi(optarg);
            break;
        case 'f':
            faults = optarg;
            break;
        case 'x':
            session_ms = atoi(optarg);
            break;
        case 't':
            tail_ms = atoi(optarg);
            break;
        case 'b':
            w.bootstrap = optarg;
            break;
        case 'T':
            w.topic = optarg;
            break;
        case 'o':
            w.out_dir = optarg;
            break;
        case 'p':
            w.producers = atoi(optarg);
            break;
        case 'r':
            w.rate = atoi(optarg);
            break;
        case 'g':
            w.group = optarg;
            break;
        case 'd':
            w.drain_seconds = atoi(optarg);
            break;
        case 'D':
            w.max_drain_seconds = atoi(optarg);
            break;
        case 'm':
            w.message_timeout_ms = atoi(optarg);
            timeout_given = 1;
            break;
        case 'X':
            w.txn_producers = atoi(optarg);
            break;
        case 'z':
            w.txn_size = atoi(optarg);
            break;
        case 'N':
            name = optarg;
            break;
        case 'c':
            count = atoi(optarg);
            break;
        case 'y':
            retries = atoi(optarg);
            break;
        case 'M':
            print_times = 1;
            break;
        case 'P':
            if (client_prop_count >= CHAOS_MAX_CLIENT_PROPS) {
                fprintf(stderr, "cairn-chaos: at most %d --client-prop\n", CHAOS_MAX_CLIENT_PROPS);
                return 2;
            }
            client_props[client_prop_count++] = optarg;
            break;
        case 'F':
            w.strict_txn = 1;
            break;
        case 'G':
            w.txn_debug = 1;
            break;
        case 'w':
            timeout_s = atoi(optarg);
            break;
        case 'a':
            acked = optarg;
            break;
        case 'R':
            read = optarg;
            break;
        case 'e':
            examples = atoi(optarg);
            break;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (strcmp(cmd, "plan") == 0)
        return plan(seed, seconds, nodes, faults, session_ms, tail_ms);
    if (strcmp(cmd, "work") == 0) {
        w.seconds = seconds;
        if (!w.bootstrap || !w.topic || !w.out_dir || w.producers < 0 || w.producers > 64 || w.rate < 1 ||
            w.txn_producers < 0 || w.txn_producers > 64 || w.producers + w.txn_producers < 1) {
            fputs(usage, stderr);
            return 2;
        }
        return chaos_work(&w);
    }
    if (strcmp(cmd, "read") == 0) {
        struct chaos_read_opts r = {
            .bootstrap = w.bootstrap, .topic = w.topic, .out_path = w.out_dir, .timeout_seconds = timeout_s};
        if (!r.bootstrap || !r.topic || !r.out_path) {
            fputs(usage, stderr);
            return 2;
        }
        return chaos_read(&r);
    }
    if (strcmp(cmd, "produce") == 0) {
        struct chaos_produce_opts p = {.bootstrap = w.bootstrap,
                                       .topic = w.topic,
                                       .name = name,
                                       .log_path = w.out_dir,
                                       .count = count,
                                       .retries = retries,
                                       .timeout_ms = timeout_given ? w.message_timeout_ms : 10000,
                                       .print_times = print_times,
                                       .client_prop_count = client_prop_count};
        memcpy(p.client_props, client_props, sizeof(p.client_props));
        if (!p.bootstrap || !p.topic || count < 1 || retries < 0 || strchr(name, ' ') || strchr(name, '-')) {
            fputs(usage, stderr);
            return 2;
        }
        return chaos_produce(&p);
    }
    if (strcmp(cmd, "check") == 0) {
        if (!acked || !read) {
            fputs(usage, stderr);
            return 2;
        }
        struct chaos_check_result res;
        return chaos_check(acked, read, examples, stdout, &res);
    }
    fprintf(stderr, "cairn-chaos: unknown command '%s'\n%s", cmd, usage);
    return 2;
}
