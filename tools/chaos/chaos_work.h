/* What the workload's threads share (chaos_workload.c, chaos_txn.c). The
 * main thread owns struct work; producer and consumer threads only write
 * the logs (under each log's mutex) and the atomic counters. */
#ifndef CAIRN_CHAOS_WORK_H
#define CAIRN_CHAOS_WORK_H

#include "chaos.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>

struct shared_log {
    pthread_mutex_t lock;
    FILE *f;
};

struct work {
    const struct chaos_work_opts *o;
    struct shared_log acked, read;
    struct shared_log *txn_debug; /* librdkafka debug of transactional producers, or NULL */
    atomic_int stop_producers, stop_consumer;
    atomic_llong acked_count, failed_count, read_count, last_read_ms;
    atomic_llong committed_txns, aborted_txns, unknown_txns;
};

void chaos_log_line(struct shared_log *l, const char *line);
int chaos_conf_set(rd_kafka_conf_t *conf, const char *k, const char *v);
/* The value a record of this key carries; a reader compares it. */
int chaos_value_for(const char *key, char *buf, size_t len);

/* Transactional producers (chaos_txn.c): starts o->txn_producers threads
 * into *out (freed by chaos_txn_join), each committing and aborting
 * transactions until w->stop_producers. */
int chaos_txn_start(struct work *w, void **out);
void chaos_txn_join(void *threads);

#endif
