/* cairn-chaos: the workload and the checker of the chaos harness
 * (tools/chaos/chaos-run drives the cluster and the faults).
 *
 *   plan   prints the fault schedule a seed gives (the run script executes it)
 *   work   idempotent acks=all producers, transactional producers that
 *          commit and abort, and one read_committed consumer group, logging
 *          every acknowledged, committed, aborted and read record
 *   produce  a few records, one by one, logging each outcome (the
 *          replication scenarios use it to see NOT_ENOUGH_REPLICAS)
 *   read   reads every partition from its start to its high watermark
 *   check  compares what was acknowledged with what was read
 *
 * Log lines (text, one record a line; keys are "<producer>-<seq>", a
 * producer being "<thread>.<incarnation>", "t<thread>.<incarnation>" when
 * transactional):
 *   A <producer> <seq> <partition> <offset>   acknowledged by the cluster (for a
 *                                             transactional producer: its transaction committed)
 *   X <producer> <seq>                        its transaction was aborted: never visible
 *   S <producer> <count>                      seqs 0..count-1 were handed to produce()
 *   R <partition> <offset> <key> <ok|bad>     read; bad: the value does not match the key
 */
#ifndef CAIRN_CHAOS_H
#define CAIRN_CHAOS_H

#include <stdint.h>
#include <stdio.h>

struct chaos_work_opts {
    const char *bootstrap;
    const char *topic;
    const char *out_dir; /* acked.log and read.log go here */
    const char *group;
    int seconds;            /* how long the producers produce */
    int producers;          /* producer threads */
    int rate;               /* records per second, per producer */
    int drain_seconds;      /* after the producers stop: the group reads until caught up, or idle this long */
    int max_drain_seconds;  /* hard bound on the whole drain */
    int message_timeout_ms; /* librdkafka message.timeout.ms */
    int txn_producers;      /* transactional producer threads (same rate each) */
    int txn_size;           /* records per transaction; every third transaction aborts */
    int strict_txn;         /* a transaction of unknown outcome (fatal end) fails the workload */
    int txn_debug;          /* librdkafka "eos,protocol,msg" debug to <out_dir>/txn-debug.log */
};

#define CHAOS_MAX_CLIENT_PROPS 8

struct chaos_produce_opts {
    const char *bootstrap;
    const char *topic;
    const char *name;     /* the producer part of the keys */
    const char *log_path; /* A and S lines appended here, or NULL */
    int count;
    int retries;     /* 0: no retries and no idempotence, so each error shows */
    int timeout_ms;  /* message.timeout.ms */
    int print_times; /* print "ok <seq> <wall ms>" as each is acknowledged */
    /* "key=value" librdkafka settings applied last (--client-prop), e.g.
     * reconnect.backoff.max.ms or debug */
    const char *client_props[CHAOS_MAX_CLIENT_PROPS];
    int client_prop_count;
};

struct chaos_read_opts {
    const char *bootstrap;
    const char *topic;
    const char *out_path;
    int timeout_seconds;
};

struct chaos_check_result {
    int64_t acked, sent, read_unique, redelivered;
    int64_t lost, duplicates, out_of_order, phantoms, bad_values, rewritten_offsets, moved;
    int64_t aborted, aborted_read;
};

/* Each returns a process exit code (0 ok, 1 failed, 2 usage). */
int chaos_work(const struct chaos_work_opts *o);
int chaos_read(const struct chaos_read_opts *o);
/* Prints "produced ok N failed M" and, per failure, "error <NAME>"; with
 * print_times, "ok <seq> <wall-clock ms>" per acknowledgement. */
int chaos_produce(const struct chaos_produce_opts *o);
/* Fills r; 0 when nothing acknowledged was lost, duplicated, reordered or
 * invented, 1 when something was, 2 when a log cannot be read. Prints a
 * report to out, naming up to `examples` records of each kind. */
int chaos_check(const char *acked_path, const char *read_path, int examples, FILE *out, struct chaos_check_result *r);

/* Wall-clock milliseconds, for log lines. */
int64_t chaos_now_ms(void);
/* Timestamped line on stderr. */
void chaos_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
