/* cairn-tiered-faults steady: records at a fixed rate (idempotent,
 * acks=all) and a tail consumer in the same process, so the two share one
 * clock. Each record's latency is measured from its scheduled send time
 * (a stalled sender still counts its wait): produce latency to the
 * acknowledgement, end-to-end latency to the tail consumer's receipt.
 * Samples go to PREFIX-produce.txt and PREFIX-e2e.txt as
 * "<scheduled wall ms> <latency µs>" lines, for the caller to cut into the
 * periods before, during and after a fault. The tail consumer checks every
 * record as the verifying consumer does. */
#include "tiered_faults.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct steady {
    const struct tf_steady_opts *o;
    int64_t total;
    int64_t start_us, start_wall_ms;
    _Atomic int64_t *sent_us; /* scheduled send time of record i; 0: not sent */
    _Atomic int64_t produced; /* records handed to the producer */
    _Atomic bool producing_done;
    int64_t acked, failed; /* producer thread only */
    FILE *produce_out, *e2e_out;
    struct tf_checker tail; /* consumer thread only */
    int64_t tail_errors;
};

static int64_t wall_of(const struct steady *s, int64_t mono_us)
{
    return s->start_wall_ms + (mono_us - s->start_us) / 1000;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct steady *s = opaque;
    int64_t i = (int64_t)(intptr_t)m->_private;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (s->failed++ < 5)
            tf_log("steady record %" PRId64 " not acknowledged: %s", i, rd_kafka_err2str(m->err));
        return;
    }
    s->acked++;
    int64_t sent = atomic_load(&s->sent_us[i]);
    fprintf(s->produce_out, "%" PRId64 " %" PRId64 "\n", wall_of(s, sent), tf_mono_us() - sent);
}

static void *tail_main(void *arg)
{
    struct steady *s = arg;
    rd_kafka_t *rk = tf_consumer_new(s->o->bootstrap, s->o->topic, 0);
    if (!rk) {
        s->tail.first_bad = 0;
        return NULL;
    }
    int64_t idle_since = tf_mono_us();
    for (;;) {
        bool done = atomic_load(&s->producing_done);
        if (done && s->tail.next >= atomic_load(&s->produced))
            break;
        if (done && tf_mono_us() - idle_since > 120 * 1000000LL) {
            tf_log("tail consumer: nothing for 120 s after the last send, at %" PRId64, s->tail.next);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err) {
            if (s->tail_errors++ < 10)
                tf_log("tail consumer error: %s", rd_kafka_message_errstr(m));
        } else if (m->offset >= 0 && m->offset < s->total && tf_check_message(&s->tail, m)) {
            int64_t sent = atomic_load(&s->sent_us[m->offset]);
            fprintf(s->e2e_out, "%" PRId64 " %" PRId64 "\n", wall_of(s, sent), tf_mono_us() - sent);
            idle_since = tf_mono_us();
        } else if (s->tail.first_bad < 0 && s->tail.duplicates == 0) {
            s->tail.first_bad = m->offset; /* beyond what was sent */
        }
        rd_kafka_message_destroy(m);
        if (s->tail.first_bad >= 0 || s->tail.duplicates > 0)
            break;
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return NULL;
}

static FILE *open_samples(const char *prefix, const char *kind)
{
    char path[1024];
    snprintf(path, sizeof path, "%s-%s.txt", prefix, kind);
    FILE *f = fopen(path, "w");
    if (!f)
        tf_log("cannot write %s", path);
    return f;
}

int tf_steady(const struct tf_steady_opts *o)
{
    struct steady s = {.o = o, .total = (int64_t)o->rate * o->seconds, .tail = {.first_bad = -1}};
    s.sent_us = calloc((size_t)s.total, sizeof *s.sent_us);
    s.produce_out = open_samples(o->samples, "produce");
    s.e2e_out = open_samples(o->samples, "e2e");
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!s.sent_us || !s.produce_out || !s.e2e_out || !tf_conf_set(conf, "bootstrap.servers", o->bootstrap) ||
        !tf_conf_set(conf, "enable.idempotence", "true") || !tf_conf_set(conf, "acks", "all") ||
        !tf_conf_set(conf, "linger.ms", "1") || !tf_conf_set(conf, "message.timeout.ms", "300000")) {
        rd_kafka_conf_destroy(conf);
        return 2;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, &s);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        tf_log("producer: %s", err);
        return 2;
    }
    s.start_us = tf_mono_us();
    s.start_wall_ms = tf_wall_ms();
    pthread_t tail;
    if (pthread_create(&tail, NULL, tail_main, &s) != 0) {
        rd_kafka_destroy(rk);
        return 2;
    }
    char key[TF_KEY_BYTES];
    uint8_t value[TF_VALUE_BYTES];
    for (int64_t i = 0; i < s.total && s.failed == 0; i++) {
        int64_t due = s.start_us + i * 1000000 / o->rate;
        int64_t now;
        while ((now = tf_mono_us()) < due)
            rd_kafka_poll(rk, (int)((due - now + 999) / 1000));
        tf_key(i, key);
        tf_value(i, value);
        atomic_store(&s.sent_us[i], due);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(key, sizeof key),
            RD_KAFKA_V_VALUE(value, sizeof value), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_OPAQUE((void *)(intptr_t)i), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            tf_log("steady produce %" PRId64 ": %s", i, rd_kafka_err2str(e));
            s.failed++;
            break;
        }
        atomic_store(&s.produced, i + 1);
    }
    rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 300000);
    atomic_store(&s.producing_done, true);
    pthread_join(tail, NULL);
    rd_kafka_destroy(rk);
    fclose(s.produce_out);
    fclose(s.e2e_out);
    int64_t produced = atomic_load(&s.produced);
    bool ok = fe == RD_KAFKA_RESP_ERR_NO_ERROR && s.failed == 0 && s.acked == s.total && s.tail.next == s.total &&
              s.tail.gaps == 0 && s.tail.duplicates == 0 && s.tail.corrupt == 0 && s.tail.first_bad < 0;
    printf("steady topic=%s records=%" PRId64 " produced=%" PRId64 " acked=%" PRId64 " failed=%" PRId64
           " tail_read=%" PRId64 " gaps=%" PRId64 " duplicates=%" PRId64 " corrupt=%" PRId64 " tail_errors=%" PRId64
           " ok=%s\n",
           o->topic, s.total, produced, s.acked, s.failed, s.tail.next, s.tail.gaps, s.tail.duplicates, s.tail.corrupt,
           s.tail_errors, ok ? "yes" : "no");
    free(s.sent_us);
    return ok ? 0 : 1;
}
