/* cairn-rebalance-bench: how long a consumer group takes to absorb one new
 * member, and how long each consumer and each partition stops consuming
 * meanwhile, for eager (range) and cooperative-sticky assignment. */
#ifndef CAIRN_REBALANCE_H
#define CAIRN_REBALANCE_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

#define REBALANCE_MAX_MEMBERS 256
#define REBALANCE_MAX_PARTITIONS 10000

/* Options, parsed once on the main thread and read-only afterwards. */
struct rebalance_options {
    const char *bootstrap; /* NULL: start cairnd */
    const char *cairnd;    /* broker binary started when no --bootstrap */
    const char *topic;
    const char *strategies[2]; /* "range", "cooperative-sticky" */
    int strategy_count;
    int partitions;
    int members;                                /* stable members before the join */
    int runs;                                   /* per strategy */
    int rate;                                   /* produced records per second, all partitions */
    long baseline_ms;                           /* steady consumption measured before the join */
    long settle_ms;                             /* consumption still watched after the group settles */
    long jitter_ms;                             /* the join comes at a random point of [0, jitter_ms) after the
                       * baseline, so the heartbeat phase does not bias the runs */
    long timeout_ms;                            /* per wait for a stable group */
    const char *overrides[BENCH_MAX_OVERRIDES]; /* -X key=value for every consumer */
    int override_count;
    const char *broker_overrides[BENCH_MAX_OVERRIDES]; /* --broker-override for the started cairnd */
    int broker_override_count;
};

/* One consumed record as a member saw it. */
struct rebalance_event {
    uint64_t at_us;
    int32_t partition;
};

/* One group member: a consumer thread with its own rd_kafka_t.
 * Thread-safety: `lock` guards assignment, events, assign_us and
 * rebalances; the consumer thread writes them (also from librdkafka's
 * rebalance callback, which runs inside its poll), the main thread reads
 * them. `stop` is set by the main thread. */
struct rebalance_member {
    int index;
    const struct rebalance_options *opts;
    const char *group;
    const char *strategy;
    rd_kafka_t *rk;
    pthread_t thread;
    bool thread_started;
    atomic_int stop;

    pthread_mutex_t lock;
    bool *owned; /* [partitions]: currently assigned */
    int owned_count;
    uint64_t assign_us; /* when the assignment last changed */
    int rebalances;     /* rebalance callbacks seen */
    char error[256];    /* first fatal error, "" if none */
    struct rebalance_event *events;
    size_t event_count, event_cap;
};

/* rebalance_member.c */
int rebalance_member_start(struct rebalance_member *m, int index, const struct rebalance_options *opts,
                           const char *group, const char *strategy, uint64_t *subscribed_us, char *err, size_t errlen);
/* Stops the thread, closes the consumer (leaving the group), frees. */
void rebalance_member_stop(struct rebalance_member *m);

/* rebalance_stats.c: pure functions over recorded timestamps. */

/* The longest stretch inside [from, to] without an event; an event before
 * `from` (the latest one) counts as the stretch's start, so a pause that
 * began just before the window is measured whole. times must be sorted. */
uint64_t rebalance_longest_gap(const uint64_t *times, size_t n, uint64_t from, uint64_t to);
/* Median and maximum of values (sorted in place); 0 for n == 0. */
double rebalance_median(double *values, size_t n);
double rebalance_max(const double *values, size_t n);
/* Whether the owned sets of the members cover every partition exactly once. */
bool rebalance_assignment_complete(bool *const *owned, size_t members, int partitions);

/* rebalance_broker.c: a cairnd started for the benchmark. */
struct rebalance_broker {
    pid_t pid;
    char dir[256];
    char bootstrap[64];
};
/* Extra "key=value" settings (may be none) follow the fixed ones. */
int rebalance_broker_start(struct rebalance_broker *b, const char *cairnd, const char *const *overrides,
                           int override_count, char *err, size_t errlen);
void rebalance_broker_stop(struct rebalance_broker *b);

#endif
