/* cairn-chaos: the workload and the checker of the chaos harness
 * (tools/chaos/chaos-run drives the cluster and the faults).
 *
 *   plan   prints the fault schedule a seed gives (the run script executes it)
 *   work   idempotent acks=all producers plus one consumer group, logging
 *          every acknowledged and every read record
 *   read   reads every partition from its start to its high watermark
 *   check  compares what was acknowledged with what was read
 *
 * Log lines (text, one record a line; keys are "<producer>-<seq>", a
 * producer being "<thread>.<incarnation>"):
 *   A <producer> <seq> <partition> <offset>   acknowledged by the cluster
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
    const char *out_dir;     /* acked.log and read.log go here */
    const char *group;
    int seconds;             /* how long the producers produce */
    int producers;           /* producer threads */
    int rate;                /* records per second, per producer */
    int drain_seconds;       /* after the producers stop: the group reads until caught up, or idle this long */
    int max_drain_seconds;   /* hard bound on the whole drain */
    int message_timeout_ms;  /* librdkafka message.timeout.ms */
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
};

/* Each returns a process exit code (0 ok, 1 failed, 2 usage). */
int chaos_work(const struct chaos_work_opts *o);
int chaos_read(const struct chaos_read_opts *o);
/* Fills r; 0 when nothing acknowledged was lost, duplicated, reordered or
 * invented, 1 when something was, 2 when a log cannot be read. Prints a
 * report to out, naming up to `examples` records of each kind. */
int chaos_check(const char *acked_path, const char *read_path, int examples, FILE *out,
                struct chaos_check_result *r);

/* Wall-clock milliseconds, for log lines. */
int64_t chaos_now_ms(void);
/* Timestamped line on stderr. */
void chaos_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
