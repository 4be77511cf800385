/* The measuring loop of cairn-rebalance-bench. */
#ifndef CAIRN_REBALANCE_RUN_H
#define CAIRN_REBALANCE_RUN_H

#include <stdbool.h>

#include "rebalance.h"

/* Creates the topic, produces the trickle and runs every strategy
 * opts->runs times; prints the JSON report. Returns the exit code. */
int rebalance_run_all(const struct rebalance_options *opts, bool started_broker);

struct rebalance_producer;

/* rebalance_producer.c: the trickle, and the group state as the broker
 * reports it. Thread-safety: owned by the main thread; its thread only
 * produces through rk (librdkafka handles are thread-safe). */
struct rebalance_producer {
    const struct rebalance_options *opts;
    rd_kafka_t *rk;
    pthread_t thread;
    bool thread_started;
    atomic_int stop;
    atomic_llong produced;
    atomic_llong failed;
    /* When delivery reports arrived (only the producer thread appends;
     * ack_lock guards it against the main thread's reads). */
    pthread_mutex_t ack_lock;
    uint64_t *acks;
    size_t ack_count, ack_cap;
};

int rebalance_producer_start(struct rebalance_producer *p, const struct rebalance_options *opts, char *err,
                             size_t errlen);
void rebalance_producer_stop(struct rebalance_producer *p);
/* The longest stretch without a delivery report in [from, to], in ms. */
double rebalance_producer_longest_gap_ms(struct rebalance_producer *p, uint64_t from, uint64_t to);
/* DescribeGroups through the producer's handle: the group's state, and
 * its member count in *members; RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN on
 * any error. */
rd_kafka_consumer_group_state_t rebalance_describe_group(rd_kafka_t *rk, const char *group, int *members);

#endif
