#ifndef CAIRN_BENCH_H
#define CAIRN_BENCH_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_MAX_OVERRIDES 64

/* Command-line options of every sub-command. Filled once by
 * bench_options_parse() on the main thread and read-only afterwards. */
struct bench_options {
    const char *command; /* produce, consume, mock-cluster, wait-topic, create-topics, wait-partitions, end-offsets */
    const char *bootstrap;
    const char *topic;
    long long records;
    long record_size;
    const char *acks;
    long linger_ms;
    int partitions; /* 0: let the partitioner pick (produce) */
    int replication_factor;
    const char *compression;
    pid_t broker_pid;                           /* 0: broker CPU not measured */
    const char *group;                          /* consume: group.id used for assign() */
    int check_offsets;                          /* consume: fail on a gap or a repeat in a partition */
    long idle_timeout_ms;                       /* consume: give up after this long without data;
                              * wait-topic: overall limit */
    long flush_timeout_ms;                      /* produce: give up waiting for delivery reports */
    long long txn_size;                         /* produce: records per transaction, 0 = none */
    const char *txn_id;                         /* produce: transactional.id (with txn_size) */
    long long rate;                             /* produce: records/s on a fixed schedule, 0 = unbounded */
    int brokers;                                /* mock-cluster */
    int port;                                   /* mock-cluster: 0 = any */
    int topics;                                 /* create-topics, wait-partitions: topic count */
    int batch;                                  /* create-topics: topics per CreateTopics */
    long every_ms;                              /* end-offsets: sample period, 0 = once */
    const char *timeline;                       /* produce --rate: per-record due and ack times to this file */
    int stamp;                                  /* produce: a BENCH_STAMP_HEADER on each record */
    const char *overrides[BENCH_MAX_OVERRIDES]; /* "key=value" for librdkafka */
    int override_count;
};

int bench_options_parse(int argc, char **argv, struct bench_options *opts, char *err, size_t errlen);
void bench_usage(FILE *out);

/* One librdkafka property the benchmark sets itself. */
struct bench_conf_pair {
    const char *key;
    const char *value;
};

/* Builds a librdkafka configuration: bootstrap.servers, then `defaults`,
 * then the -X overrides, so the user has the last word. Returns NULL with
 * err filled on a rejected key. */
rd_kafka_conf_t *bench_conf_new(const struct bench_options *opts, const struct bench_conf_pair *defaults,
                                size_t default_count, char *err, size_t errlen);
int bench_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *err, size_t errlen);

/* Makes sure the topic exists: CreateTopics through the admin API when it
 * is missing, falling back to broker auto-creation where CreateTopics is not
 * supported. Waits until every partition has a leader. Fills *partition_count
 * with the topic's real partition count. Returns 0 or -1 (err filled). */
int bench_topic_ensure(rd_kafka_t *rk, const struct bench_options *opts, int *partition_count, char *err,
                       size_t errlen);

/* Partition count of a topic per the cluster's metadata, 0 if missing,
 * -1 on error (err filled). */
int bench_topic_partition_count(rd_kafka_t *rk, const char *topic, char *err, size_t errlen);

/* Partition count of a topic (-1 if absent or on error) and, in *ready,
 * how many of them have a leader. */
int bench_topic_ready_partitions(rd_kafka_t *rk, const char *topic, int *ready);

int bench_run_produce(const struct bench_options *opts);
int bench_run_consume(const struct bench_options *opts);
int bench_run_mock_cluster(const struct bench_options *opts);
int bench_run_wait_topic(const struct bench_options *opts);
int bench_run_create_topics(const struct bench_options *opts);
int bench_run_wait_partitions(const struct bench_options *opts);
int bench_run_end_offsets(const struct bench_options *opts);

/* produce --stamp 1 puts on each record the time it was due (--rate) or
 * handed to librdkafka, 8 bytes big-endian of bench_now_us(); consume
 * times records from it. CLOCK_MONOTONIC is one clock for every process of
 * a machine, so the two agree to the microsecond there. */
#define BENCH_STAMP_HEADER "cairn-bench-us"

/* Monotonic clock in microseconds. */
uint64_t bench_now_us(void);

#endif
