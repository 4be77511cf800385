/* cairn-tiered-faults: the records, producer and checking consumers of the
 * tiered storage fault run (tools/chaos/tiered-faults). Record i of a topic
 * sits at offset i (one idempotent producer a time, one partition): its key
 * is i in 16 decimal digits and its value TF_VALUE_BYTES bytes that depend
 * on i alone, so any gap, duplicate, reordering or changed byte shows. */
#ifndef CAIRN_TOOLS_TIERED_FAULTS_H
#define CAIRN_TOOLS_TIERED_FAULTS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define TF_KEY_BYTES 16
#define TF_VALUE_BYTES 1008 /* with the key, 1 KiB of payload a record */

/* Wall clock and monotonic clock, in ms and µs. */
int64_t tf_wall_ms(void);
int64_t tf_mono_us(void);

void tf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record i's key (TF_KEY_BYTES, no terminator) and value. */
void tf_key(int64_t i, char out[TF_KEY_BYTES]);
void tf_value(int64_t i, uint8_t out[TF_VALUE_BYTES]);

/* Sets one librdkafka property; false (logged) when refused. */
bool tf_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value);

/* The record checker: the next offset expected and what went wrong. */
struct tf_checker {
    int64_t next;
    int64_t gaps, duplicates, corrupt;
    int64_t first_bad; /* -1 while all is well */
};

/* Checks one message against record next; false once anything is wrong. */
bool tf_check_message(struct tf_checker *c, const rd_kafka_message_t *m);

/* A consumer of partition 0 of topic from `from`, outside any group. */
rd_kafka_t *tf_consumer_new(const char *bootstrap, const char *topic, int64_t from);

struct tf_steady_opts {
    const char *bootstrap;
    const char *topic;
    int rate;            /* records a second */
    int seconds;         /* of producing */
    const char *samples; /* prefix of the sample files */
};

/* The steady producer and its tail consumer (tiered_faults_steady.c). */
int tf_steady(const struct tf_steady_opts *o);

#endif
