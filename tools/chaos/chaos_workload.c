/* The chaos workload: idempotent acks=all producers writing unique,
 * sequence-numbered records while one consumer group reads them, each side
 * logging what it saw (formats in chaos.h); and the final full read.
 *
 * Threads: one per producer (owns its rd_kafka_t and serves its delivery
 * reports, so only that thread writes its "A" lines), one consumer (owns
 * its rd_kafka_t), and the main thread, which only starts and stops them.
 * The two log files are shared and written under their own mutex. */
#include "chaos.h"
#include "chaos_work.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct producer {
    struct work *w;
    int index, incarnation;
    char name[32];
    atomic_int fatal;
    pthread_t thread;
};

void chaos_log_line(struct shared_log *l, const char *line)
{
    pthread_mutex_lock(&l->lock);
    if (l->f)
        fputs(line, l->f);
    pthread_mutex_unlock(&l->lock);
}

static void log_flush(struct shared_log *l)
{
    pthread_mutex_lock(&l->lock);
    fflush(l->f);
    pthread_mutex_unlock(&l->lock);
}

int chaos_conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
    char err[256];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        chaos_log("config %s=%s: %s", k, v, err);
        return -1;
    }
    return 0;
}

int chaos_value_for(const char *key, char *buf, size_t len)
{
    return snprintf(buf, len, "chaos-value:%s", key);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct producer *p = opaque;
    long long seq = (long long)(intptr_t)m->_private;
    if (m->err) {
        long long n = atomic_fetch_add(&p->w->failed_count, 1);
        if (n < 20)
            chaos_log("producer %s seq %lld not acknowledged: %s", p->name, seq, rd_kafka_err2str(m->err));
        return;
    }
    char line[128];
    snprintf(line, sizeof line, "A %s %lld %d %lld\n", p->name, seq, (int)m->partition, (long long)m->offset);
    chaos_log_line(&p->w->acked, line);
    atomic_fetch_add(&p->w->acked_count, 1);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct producer *p = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[256];
        rd_kafka_resp_err_t e = rd_kafka_fatal_error(rk, why, sizeof why);
        chaos_log("producer %s: fatal error %s: %s (a new producer takes over)", p->name, rd_kafka_err2name(e), why);
        atomic_store(&p->fatal, 1);
    }
    (void)reason;
}

static rd_kafka_t *new_producer(struct producer *p)
{
    const struct chaos_work_opts *o = p->w->o;
    char err[256], timeout[32];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    snprintf(timeout, sizeof timeout, "%d", o->message_timeout_ms);
    if (chaos_conf_set(conf, "bootstrap.servers", o->bootstrap) || chaos_conf_set(conf, "enable.idempotence", "true") ||
        chaos_conf_set(conf, "acks", "all") || chaos_conf_set(conf, "linger.ms", "5") ||
        chaos_conf_set(conf, "message.timeout.ms", timeout) || chaos_conf_set(conf, "client.id", p->name)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk)
        chaos_log("producer %s: %s", p->name, err);
    return rk;
}

/* One incarnation after another: a producer that meets a fatal error (as an
 * idempotent producer does when the broker's sequence state and its own
 * disagree) is replaced by a new one under a new name, so keys stay unique. */
static void *producer_main(void *arg)
{
    struct producer *p = arg;
    struct work *w = p->w;
    const int64_t interval_us = 1000000 / w->o->rate;
    while (!atomic_load(&w->stop_producers)) {
        snprintf(p->name, sizeof p->name, "%d.%d", p->index, p->incarnation);
        atomic_store(&p->fatal, 0);
        rd_kafka_t *rk = new_producer(p);
        if (!rk)
            return NULL;
        long long seq = 0;
        int64_t start_us = chaos_now_ms() * 1000;
        while (!atomic_load(&w->stop_producers) && !atomic_load(&p->fatal)) {
            char key[48], value[80];
            int klen = snprintf(key, sizeof key, "%s-%lld", p->name, seq);
            int vlen = chaos_value_for(key, value, sizeof value);
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(w->o->topic), RD_KAFKA_V_KEY(key, (size_t)klen),
                RD_KAFKA_V_VALUE(value, (size_t)vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_OPAQUE((void *)(intptr_t)seq), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 100);
                continue;
            }
            if (e) {
                chaos_log("producer %s: produce: %s", p->name, rd_kafka_err2str(e));
                break;
            }
            seq++;
            /* poll returns early when it served a callback: wait out the rest. */
            int64_t due_ms = (start_us + seq * interval_us) / 1000, now;
            rd_kafka_poll(rk, 0);
            while ((now = chaos_now_ms()) < due_ms && !atomic_load(&w->stop_producers))
                rd_kafka_poll(rk, (int)(due_ms - now));
        }
        /* What was handed over gets until message.timeout.ms to be acknowledged. */
        int flush_ms = atomic_load(&p->fatal) ? 1000 : w->o->message_timeout_ms + 5000;
        if (rd_kafka_flush(rk, flush_ms) != RD_KAFKA_RESP_ERR_NO_ERROR)
            chaos_log("producer %s: %d records still unacknowledged after the flush", p->name, rd_kafka_outq_len(rk));
        char line[64];
        snprintf(line, sizeof line, "S %s %lld\n", p->name, seq);
        chaos_log_line(&w->acked, line);
        rd_kafka_destroy(rk);
        p->incarnation++;
    }
    return NULL;
}

static void record_read(struct shared_log *l, const rd_kafka_message_t *m)
{
    char key[48] = "?", want[80], line[192];
    if (m->key && m->key_len > 0 && m->key_len < sizeof key) {
        memcpy(key, m->key, m->key_len);
        key[m->key_len] = '\0';
        if (strchr(key, ' ') || strchr(key, '\n'))
            strcpy(key, "?");
    }
    int wlen = chaos_value_for(key, want, sizeof want);
    int ok = m->payload && m->len == (size_t)wlen && memcmp(m->payload, want, (size_t)wlen) == 0;
    snprintf(line, sizeof line, "R %d %lld %s %s\n", (int)m->partition, (long long)m->offset, key, ok ? "ok" : "bad");
    chaos_log_line(l, line);
}

static void *consumer_main(void *arg)
{
    struct work *w = arg;
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (chaos_conf_set(conf, "bootstrap.servers", w->o->bootstrap) || chaos_conf_set(conf, "group.id", w->o->group) ||
        chaos_conf_set(conf, "auto.offset.reset", "earliest") || chaos_conf_set(conf, "enable.auto.commit", "true") ||
        chaos_conf_set(conf, "auto.commit.interval.ms", "1000") ||
        chaos_conf_set(conf, "session.timeout.ms", "10000") || chaos_conf_set(conf, "heartbeat.interval.ms", "2000") ||
        chaos_conf_set(conf, "client.id", "chaos-consumer") ||
        chaos_conf_set(conf, "isolation.level", "read_committed")) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        chaos_log("consumer: %s", err);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, w->o->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e)
        chaos_log("consumer: subscribe: %s", rd_kafka_err2str(e));
    int errors = 0;
    while (!e && !atomic_load(&w->stop_consumer)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && errors++ < 50)
                chaos_log("consumer: %s", rd_kafka_message_errstr(m));
        } else {
            record_read(&w->read, m);
            atomic_fetch_add(&w->read_count, 1);
            atomic_store(&w->last_read_ms, chaos_now_ms());
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return NULL;
}

static FILE *open_in(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        chaos_log("cannot write %s", path);
    return f;
}

int chaos_work(const struct chaos_work_opts *o)
{
    struct work w = {.o = o};
    pthread_mutex_init(&w.acked.lock, NULL);
    pthread_mutex_init(&w.read.lock, NULL);
    w.acked.f = open_in(o->out_dir, "acked.log");
    w.read.f = open_in(o->out_dir, "read.log");
    if (!w.acked.f || !w.read.f)
        return 1;
    atomic_store(&w.last_read_ms, chaos_now_ms());
    pthread_t consumer;
    pthread_create(&consumer, NULL, consumer_main, &w);
    struct producer *ps = calloc((size_t)o->producers, sizeof *ps);
    if (!ps)
        return 1;
    for (int i = 0; i < o->producers; i++) {
        ps[i].w = &w;
        ps[i].index = i;
        pthread_create(&ps[i].thread, NULL, producer_main, &ps[i]);
    }
    struct shared_log txn_debug = {.f = NULL};
    pthread_mutex_init(&txn_debug.lock, NULL);
    if (o->txn_producers > 0 && o->txn_debug) {
        if (!(txn_debug.f = open_in(o->out_dir, "txn-debug.log")))
            return 1;
        w.txn_debug = &txn_debug;
    }
    void *txn = NULL;
    if (o->txn_producers > 0 && chaos_txn_start(&w, &txn) < 0)
        return 1;
    int64_t end = chaos_now_ms() + (int64_t)o->seconds * 1000;
    while (chaos_now_ms() < end) {
        sleep(1);
        log_flush(&w.acked);
        log_flush(&w.read);
    }
    atomic_store(&w.stop_producers, 1);
    chaos_log("producers stop: %lld acknowledged, %lld failed so far; flushing", (long long)atomic_load(&w.acked_count),
              (long long)atomic_load(&w.failed_count));
    for (int i = 0; i < o->producers; i++)
        pthread_join(ps[i].thread, NULL);
    free(ps);
    if (txn)
        chaos_txn_join(txn);
    if (txn_debug.f) {
        pthread_mutex_lock(&txn_debug.lock);
        fclose(txn_debug.f);
        txn_debug.f = NULL;
        pthread_mutex_unlock(&txn_debug.lock);
    }
    /* The group reads on until it has read as many records as were
     * acknowledged and then 3 s more (a late duplicate shows too), or has
     * been idle for drain_seconds; never past max_drain_seconds. */
    int64_t drain_end = chaos_now_ms() + (int64_t)o->max_drain_seconds * 1000;
    for (;;) {
        int64_t now = chaos_now_ms(), idle = now - atomic_load(&w.last_read_ms);
        int caught_up = atomic_load(&w.read_count) >= atomic_load(&w.acked_count);
        if (now >= drain_end || idle >= o->drain_seconds * 1000LL || (caught_up && idle >= 3000))
            break;
        sleep(1);
    }
    atomic_store(&w.stop_consumer, 1);
    /* Leaving the group needs its coordinator; when none answers, the
     * close would wait for ever. The consumer writes nothing once its loop
     * has seen the stop, so the logs can be closed without it. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    if (pthread_timedjoin_np(consumer, NULL, &until) != 0)
        chaos_log("the consumer did not leave its group within 30 s (no coordinator answers); leaving it");
    pthread_mutex_lock(&w.read.lock);
    fclose(w.read.f);
    w.read.f = NULL;
    pthread_mutex_unlock(&w.read.lock);
    fclose(w.acked.f);
    chaos_log("workload done: %lld acknowledged, %lld not acknowledged, %lld read by the group; transactions: "
              "%lld committed, %lld aborted, %lld of unknown outcome",
              (long long)atomic_load(&w.acked_count), (long long)atomic_load(&w.failed_count),
              (long long)atomic_load(&w.read_count), (long long)atomic_load(&w.committed_txns),
              (long long)atomic_load(&w.aborted_txns), (long long)atomic_load(&w.unknown_txns));
    if (o->strict_txn && atomic_load(&w.unknown_txns) > 0) {
        chaos_log("--strict-txn: %lld transactions ended fatally (see the FATAL lines)",
                  (long long)atomic_load(&w.unknown_txns));
        return 1;
    }
    return 0;
}

/* Every partition from its first offset to the high watermark seen at the
 * start, with no group: what the cluster holds once the faults are over. */
int chaos_read(const struct chaos_read_opts *o)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (chaos_conf_set(conf, "bootstrap.servers", o->bootstrap) ||
        chaos_conf_set(conf, "group.id", "cairn-chaos-read") || chaos_conf_set(conf, "enable.auto.commit", "false") ||
        chaos_conf_set(conf, "enable.partition.eof", "true") ||
        chaos_conf_set(conf, "isolation.level", "read_committed")) {
        rd_kafka_conf_destroy(conf);
        return 2;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        chaos_log("read: %s", err);
        return 1;
    }
    FILE *out = fopen(o->out_path, "w");
    if (!out) {
        chaos_log("read: cannot write %s", o->out_path);
        rd_kafka_destroy(rk);
        return 1;
    }
    int64_t deadline = chaos_now_ms() + (int64_t)o->timeout_seconds * 1000;
    int rc = 1, nparts = 0;
    int64_t *high = NULL, *pos = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, o->topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    while (chaos_now_ms() < deadline) {
        if (rd_kafka_metadata(rk, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
            md->topics[0].err == 0 && md->topics[0].partition_cnt > 0)
            break;
        if (md)
            rd_kafka_metadata_destroy(md);
        md = NULL;
        sleep(1);
    }
    if (!md) {
        chaos_log("read: no metadata for %s", o->topic);
        goto out;
    }
    nparts = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    high = calloc((size_t)nparts, sizeof *high);
    pos = calloc((size_t)nparts, sizeof *pos);
    if (!high || !pos)
        goto out;
    for (int p = 0; p < nparts; p++) {
        int64_t lo;
        rd_kafka_resp_err_t e;
        while ((e = rd_kafka_query_watermark_offsets(rk, o->topic, p, &lo, &high[p], 5000)) &&
               chaos_now_ms() < deadline)
            sleep(1);
        if (e) {
            chaos_log("read: partition %d has no high watermark: %s", p, rd_kafka_err2str(e));
            goto out;
        }
        pos[p] = lo;
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++)
        rd_kafka_topic_partition_list_add(parts, o->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    int done = 0;
    for (int p = 0; p < nparts; p++)
        done += pos[p] >= high[p];
    struct shared_log l = {.f = out};
    pthread_mutex_init(&l.lock, NULL);
    while (done < nparts && chaos_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        int p = m->partition;
        if (p >= 0 && p < nparts && (m->err == 0 || m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)) {
            if (m->err == 0)
                record_read(&l, m);
            int was = pos[p] >= high[p];
            pos[p] = m->offset + (m->err == 0);
            done += !was && pos[p] >= high[p];
        } else if (m->err) {
            chaos_log("read: %s", rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
    }
    rc = done == nparts ? 0 : 1;
    for (int p = 0; p < nparts; p++)
        if (pos[p] < high[p])
            chaos_log("read: partition %d stopped at %lld of %lld", p, (long long)pos[p], (long long)high[p]);
out:
    free(high);
    free(pos);
    fclose(out);
    rd_kafka_topic_destroy(t);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}
