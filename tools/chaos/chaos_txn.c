/* Transactional producers of the chaos workload, and the one-by-one
 * producer of the replication scenarios.
 *
 * A transactional producer (transactional.id "chaos-txn-<thread>", kept
 * across incarnations so a new one fences the old) writes txn_size records
 * per transaction and commits two transactions out of three, aborting the
 * third after sending its records (so that they are in the logs). Only
 * when commit_transaction returns success are the records logged as "A"
 * (acknowledged: they must be read); only when
 * abort_transaction returns success are they logged as "X" (they must never
 * be read by a read_committed consumer). A transaction whose end failed
 * fatally has an unknown outcome and is logged as neither; it is counted,
 * and reported with librdkafka's fatal error (it names the partition and
 * what the broker answered), the producer id and epoch last seen and the
 * last debug lines of that producer (with --txn-debug, librdkafka's
 * "eos,protocol,msg" debug of every transactional producer goes to
 * <out>/txn-debug.log as well). With --strict-txn a fatal end fails the
 * workload (exit 1).
 *
 * Threads: each producer thread owns its rd_kafka_t and its open
 * transaction's record positions (filled by delivery reports, which
 * librdkafka serves on that thread inside poll, flush and commit). */
#include "chaos_work.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TXN_MAX 64
#define DEBUG_RING 16

/* librdkafka's debug lines of one producer, newest last (its log callback
 * runs on librdkafka's threads, hence the lock). */
struct debug_ring {
    pthread_mutex_t lock;
    char pid[64]; /* the last "PID{Id:..,Epoch:..}" seen */
    char lines[DEBUG_RING][320];
    int next, count;
};

struct txn_producer {
    struct work *w;
    int index, incarnation;
    char name[32];
    pthread_t thread;
    int64_t first_seq; /* the open transaction's first seq */
    int n;             /* its records so far */
    int32_t part[TXN_MAX];
    int64_t off[TXN_MAX];
    struct debug_ring debug;
};

struct txn_threads {
    int count;
    struct txn_producer p[];
};

static void on_txn_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct txn_producer *p = opaque;
    int64_t i = (int64_t)(intptr_t)m->_private - p->first_seq;
    if (i < 0 || i >= p->n)
        return;
    p->part[i] = m->err ? -1 : m->partition;
    p->off[i] = m->err ? -1 : m->offset;
}

static void on_txn_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    struct txn_producer *p = rd_kafka_opaque(rk);
    if (level <= 6) /* what librdkafka prints without a log callback (not the debug) */
        fprintf(stderr, "%%%d|%s|%s| %s\n", level, fac, rd_kafka_name(rk), buf);
    struct debug_ring *d = &p->debug;
    pthread_mutex_lock(&d->lock);
    const char *pid = strstr(buf, "PID{Id:");
    const char *end = pid ? strchr(pid, '}') : NULL;
    if (end && (size_t)(end - pid + 1) < sizeof d->pid) {
        memcpy(d->pid, pid, (size_t)(end - pid + 1));
        d->pid[end - pid + 1] = 0;
    }
    /* Only what explains a failure: sequences, errors, the producer id. */
    if (strstr(buf, "seq") || strstr(buf, "Err") || strstr(buf, "rror") || strstr(buf, "atal") || pid) {
        snprintf(d->lines[d->next], sizeof d->lines[0], "%s %s", fac, buf);
        d->next = (d->next + 1) % DEBUG_RING;
        if (d->count < DEBUG_RING)
            d->count++;
    }
    pthread_mutex_unlock(&d->lock);
    if (p->w->txn_debug) {
        char line[1200];
        int64_t now = chaos_now_ms();
        snprintf(line, sizeof line, "%lld.%03lld %s %s %s\n", (long long)(now / 1000), (long long)(now % 1000), p->name,
                 fac, buf);
        chaos_log_line(p->w->txn_debug, line);
    }
}

/* A transaction of unknown outcome: what librdkafka knows, for the report. */
static void report_fatal(struct txn_producer *p, rd_kafka_t *rk, const char *first, const char *last)
{
    char fatal[512] = "";
    rd_kafka_resp_err_t code = rd_kafka_fatal_error(rk, fatal, sizeof fatal);
    struct debug_ring *d = &p->debug;
    pthread_mutex_lock(&d->lock);
    chaos_log("FATAL transactional producer %s (%s): first %s; last: %s; librdkafka fatal error %s: %s", p->name,
              d->pid[0] ? d->pid : "producer id unknown", first, last, rd_kafka_err2name(code), fatal[0] ? fatal : "-");
    for (int i = 0; i < d->count; i++)
        chaos_log("  %s debug: %s", p->name, d->lines[(d->next - d->count + i + DEBUG_RING) % DEBUG_RING]);
    pthread_mutex_unlock(&d->lock);
}

static rd_kafka_t *new_txn_producer(struct txn_producer *p)
{
    const struct chaos_work_opts *o = p->w->o;
    char err[256], timeout[32], txn_timeout[32], txn_id[48];
    snprintf(timeout, sizeof timeout, "%d", o->message_timeout_ms);
    /* librdkafka wants message.timeout.ms <= transaction.timeout.ms. */
    snprintf(txn_timeout, sizeof txn_timeout, "%d", o->message_timeout_ms > 60000 ? o->message_timeout_ms : 60000);
    snprintf(txn_id, sizeof txn_id, "chaos-txn-%d", p->index);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (chaos_conf_set(conf, "bootstrap.servers", o->bootstrap) || chaos_conf_set(conf, "transactional.id", txn_id) ||
        chaos_conf_set(conf, "acks", "all") || chaos_conf_set(conf, "linger.ms", "5") ||
        chaos_conf_set(conf, "message.timeout.ms", timeout) ||
        chaos_conf_set(conf, "transaction.timeout.ms", txn_timeout) || chaos_conf_set(conf, "client.id", p->name) ||
        chaos_conf_set(conf, "debug", "eos,protocol,msg")) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_txn_delivery);
    rd_kafka_conf_set_log_cb(conf, on_txn_log);
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk)
        chaos_log("transactional producer %s: %s", p->name, err);
    return rk;
}

static void log_txn(struct txn_producer *p, int committed)
{
    for (int i = 0; i < p->n; i++) {
        char line[128];
        if (committed && p->part[i] >= 0)
            snprintf(line, sizeof line, "A %s %lld %d %lld\n", p->name, (long long)(p->first_seq + i), (int)p->part[i],
                     (long long)p->off[i]);
        else if (!committed)
            snprintf(line, sizeof line, "X %s %lld\n", p->name, (long long)(p->first_seq + i));
        else
            continue;
        chaos_log_line(&p->w->acked, line);
    }
    if (committed)
        atomic_fetch_add(&p->w->acked_count, p->n);
    atomic_fetch_add(committed ? &p->w->committed_txns : &p->w->aborted_txns, 1);
}

/* Ends the open transaction as asked; an abortable error turns a commit
 * into an abort, a retriable one is retried. Returns 1 committed, 0
 * aborted, -1 unknown (the producer must be replaced; reported). */
static int end_txn(struct txn_producer *p, rd_kafka_t *rk, int commit)
{
    char first[512] = "";
    /* A deliberate abort sends the records first: they reach the logs, so
     * the abort markers must hide them, and no AddPartitionsToTxn is in
     * flight when EndTxn goes out (librdkafka sends EndTxn then, and when
     * the previous commit's markers are still being written the
     * coordinator answers INVALID_TXN_STATE, fatal: librdkafka issue 4849). */
    if (!commit)
        rd_kafka_flush(rk, 30000);
    for (int attempt = 0; attempt < 10; attempt++) {
        rd_kafka_error_t *e = commit ? rd_kafka_commit_transaction(rk, 60000) : rd_kafka_abort_transaction(rk, 60000);
        if (!e)
            return commit;
        int retriable = rd_kafka_error_is_retriable(e), abortable = rd_kafka_error_txn_requires_abort(e);
        if (attempt < 3)
            chaos_log("transactional producer %s: %s: %s", p->name, commit ? "commit" : "abort",
                      rd_kafka_error_string(e));
        /* The first error is the cause; what follows is librdkafka refusing. */
        if (!first[0])
            snprintf(first, sizeof first, "%s: %s (%s)", commit ? "commit" : "abort", rd_kafka_error_string(e),
                     rd_kafka_error_name(e));
        int give_up = !(abortable && commit) && !retriable;
        if (give_up)
            report_fatal(p, rk, first, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        if (abortable && commit) {
            commit = 0;
            continue;
        }
        if (give_up)
            return -1;
        sleep(1);
    }
    report_fatal(p, rk, first, "still failing after 10 attempts");
    return -1;
}

static void *txn_main(void *arg)
{
    struct txn_producer *p = arg;
    struct work *w = p->w;
    const int64_t interval_us = 1000000 / w->o->rate;
    int size = w->o->txn_size < 1 ? 10 : w->o->txn_size > TXN_MAX ? TXN_MAX : w->o->txn_size;
    while (!atomic_load(&w->stop_producers)) {
        snprintf(p->name, sizeof p->name, "t%d.%d", p->index, p->incarnation);
        rd_kafka_t *rk = new_txn_producer(p);
        if (!rk)
            return NULL;
        long long seq = 0, txns = 0;
        int usable = 1;
        rd_kafka_error_t *e = rd_kafka_init_transactions(rk, 60000);
        if (e) {
            chaos_log("transactional producer %s: init: %s", p->name, rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            usable = 0;
        }
        int64_t start_us = chaos_now_ms() * 1000;
        while (usable && !atomic_load(&w->stop_producers)) {
            if ((e = rd_kafka_begin_transaction(rk))) {
                chaos_log("transactional producer %s: begin: %s", p->name, rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
                break;
            }
            p->first_seq = seq;
            p->n = 0;
            int produce_failed = 0;
            while (p->n < size && !produce_failed) {
                char key[48], value[80];
                int klen = snprintf(key, sizeof key, "%s-%lld", p->name, seq);
                int vlen = chaos_value_for(key, value, sizeof value);
                p->part[p->n] = -1;
                p->n++;
                rd_kafka_resp_err_t pe = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(w->o->topic), RD_KAFKA_V_KEY(key, (size_t)klen),
                    RD_KAFKA_V_VALUE(value, (size_t)vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_OPAQUE((void *)(intptr_t)seq), RD_KAFKA_V_END);
                if (pe == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                    p->n--;
                    rd_kafka_poll(rk, 100);
                    continue;
                }
                seq++;
                if (pe) {
                    chaos_log("transactional producer %s: produce: %s", p->name, rd_kafka_err2str(pe));
                    produce_failed = 1;
                    break;
                }
                int64_t due_ms = (start_us + seq * interval_us) / 1000, now;
                rd_kafka_poll(rk, 0);
                while ((now = chaos_now_ms()) < due_ms && !atomic_load(&w->stop_producers))
                    rd_kafka_poll(rk, (int)(due_ms - now));
            }
            /* Every third transaction aborts; so does one whose produce failed. */
            int outcome = end_txn(p, rk, !produce_failed && txns % 3 != 2);
            txns++;
            if (outcome < 0) {
                atomic_fetch_add(&w->unknown_txns, 1);
                break;
            }
            log_txn(p, outcome);
        }
        char line[64];
        snprintf(line, sizeof line, "S %s %lld\n", p->name, seq);
        chaos_log_line(&w->acked, line);
        rd_kafka_destroy(rk);
        p->incarnation++;
        if (!usable)
            sleep(1);
    }
    return NULL;
}

int chaos_txn_start(struct work *w, void **out)
{
    int k = w->o->txn_producers;
    struct txn_threads *t = calloc(1, sizeof *t + (size_t)k * sizeof t->p[0]);
    if (!t)
        return -1;
    t->count = k;
    for (int i = 0; i < k; i++) {
        t->p[i].w = w;
        t->p[i].index = i;
        pthread_mutex_init(&t->p[i].debug.lock, NULL);
        pthread_create(&t->p[i].thread, NULL, txn_main, &t->p[i]);
    }
    *out = t;
    return 0;
}

void chaos_txn_join(void *threads)
{
    struct txn_threads *t = threads;
    for (int i = 0; i < t->count; i++)
        pthread_join(t->p[i].thread, NULL);
    free(t);
}
