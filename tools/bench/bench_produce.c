/* produce: sends N records of a fixed size as fast as the client allows and
 * times each one from rd_kafka_producev() to its delivery report. With
 * --txn-size the records go in transactions of that many records, and each
 * rd_kafka_commit_transaction() is timed too. With --rate R record i is
 * due i / R seconds after the start and timed from that moment (open loop).
 * With CAIRN_BENCH_SLOW_MS=M in the environment every record that took M ms
 * or more is named on stderr (partition, offset, when it was due). */
#include "bench.h"
#include "bench_histogram.h"
#include "bench_report.h"
#include "bench_schedule.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Producer counters. Written by the delivery report callback, which runs
 * on the main thread inside rd_kafka_poll()/rd_kafka_flush(); read by the
 * main thread. No locking needed. */
struct produce_state {
    struct bench_histogram latency;
    uint64_t delivered;
    uint64_t failed;
    uint64_t delivered_bytes;
    uint64_t last_report_us;
    double latency_sum_us;
    char first_error[256];
    struct bench_histogram commit_latency; /* --txn-size: per commit_transaction() */
    uint64_t transactions;
    double commit_sum_us;
    struct bench_histogram send_lag; /* --rate: handed to librdkafka minus due time */
    uint64_t last_send_us;           /* --rate: when the last record was handed over */
    struct timeline_point *timeline; /* --timeline: each delivered record's due and ack times */
    size_t timeline_count;
    size_t timeline_cap;
    uint64_t slow_us; /* CAIRN_BENCH_SLOW_MS: records this slow go to stderr */
    uint64_t first_due_us;
};

struct timeline_point {
    uint64_t due_us; /* monotonic */
    uint64_t ack_us; /* monotonic; the delivery report */
    int err;         /* the record's delivery error, 0 if none */
};

/* --timeline: keeps one point per delivery report; a failed allocation
 * only shortens the timeline (the file then says how many were dropped). */
static void timeline_add(struct produce_state *st, uint64_t due_us, uint64_t ack_us, int err)
{
    if (st->timeline_count == st->timeline_cap) {
        size_t cap = st->timeline_cap ? st->timeline_cap * 2 : 16384;
        struct timeline_point *grown = realloc(st->timeline, cap * sizeof(*grown));
        if (!grown)
            return;
        st->timeline = grown;
        st->timeline_cap = cap;
    }
    st->timeline[st->timeline_count++] = (struct timeline_point){due_us, ack_us, err};
}

/* Writes the timeline as CSV: due and acknowledgement times in ms since
 * the epoch (the monotonic clock shifted by its offset at the end of the
 * run), the latency in ms and the delivery error. Returns 0 or -1. */
static int timeline_write(const char *path, const struct produce_state *st, uint64_t delivered_reports)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    double offset_ms = ((double)real.tv_sec * 1e3 + (double)real.tv_nsec / 1e6) - (double)bench_now_us() / 1e3;
    fprintf(f, "# records %zu of %llu delivery reports\n", st->timeline_count, (unsigned long long)delivered_reports);
    fprintf(f, "due_ms,ack_ms,latency_ms,error\n");
    for (size_t i = 0; i < st->timeline_count; i++) {
        const struct timeline_point *p = &st->timeline[i];
        fprintf(f, "%.3f,%.3f,%.3f,%d\n", (double)p->due_us / 1e3 + offset_ms, (double)p->ack_us / 1e3 + offset_ms,
                p->ack_us > p->due_us ? (double)(p->ack_us - p->due_us) / 1e3 : 0.0, p->err);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct produce_state *st = opaque;
    uint64_t now = bench_now_us();
    st->last_report_us = now;
    if (st->timeline_cap > 0)
        timeline_add(st, (uint64_t)(uintptr_t)msg->_private, now, (int)msg->err);
    if (msg->err) {
        if (st->failed++ == 0)
            snprintf(st->first_error, sizeof(st->first_error), "%s", rd_kafka_err2str(msg->err));
        return;
    }
    uint64_t sent = (uint64_t)(uintptr_t)msg->_private;
    uint64_t latency = now > sent ? now - sent : 0;
    if (st->slow_us > 0 && latency >= st->slow_us)
        fprintf(stderr, "slow record: partition %d offset %lld due %.3f s after the first, %.3f ms\n",
                (int)msg->partition, (long long)msg->offset, (double)(sent - st->first_due_us) / 1e6,
                (double)latency / 1e3);
    bench_histogram_record(&st->latency, latency);
    st->latency_sum_us += (double)latency;
    st->delivered++;
    st->delivered_bytes += msg->len;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)opaque;
    fprintf(stderr, "cairn-bench: client error: %s: %s\n", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* Payload that is neither constant nor random-looking, so compressed runs
 * are not trivially small nor incompressible. */
static void fill_payload(unsigned char *buf, size_t len)
{
    static const char words[] = "cairn broker record payload offset partition segment ";
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (x & 3) ? (unsigned char)words[i % (sizeof(words) - 1)] : (unsigned char)(x >> 24);
    }
}

static rd_kafka_t *create_producer(const struct bench_options *opts, struct produce_state *st, char *err, size_t errlen)
{
    char linger[32], txn_id[64];
    snprintf(linger, sizeof(linger), "%ld", opts->linger_ms);
    snprintf(txn_id, sizeof(txn_id), "%s", opts->txn_id ? opts->txn_id : "");
    if (!opts->txn_id)
        snprintf(txn_id, sizeof(txn_id), "cairn-bench-%d", (int)getpid());
    const struct bench_conf_pair defaults[] = {
        {"acks", opts->acks},
        {"linger.ms", linger},
        {"compression.type", opts->compression},
        {"transactional.id", txn_id}, /* last: only with --txn-size */
    };
    size_t default_count = sizeof(defaults) / sizeof(defaults[0]) - (opts->txn_size > 0 ? 0 : 1);
    rd_kafka_conf_t *conf = bench_conf_new(opts, defaults, default_count, err, errlen);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, st);
    char rk_err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, rk_err, sizeof(rk_err));
    if (!rk) {
        snprintf(err, errlen, "producer: %.400s", rk_err);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

/* Fills err from a transactional call's error and releases it; returns -1
 * on error. */
static int txn_check(rd_kafka_error_t *e, const char *what, char *err, size_t errlen)
{
    if (!e)
        return 0;
    snprintf(err, errlen, "%s: %s", what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return -1;
}

/* Commits the open transaction and times the call (it flushes the
 * transaction's records first, then EndTxn). */
static int txn_commit(rd_kafka_t *rk, const struct bench_options *opts, struct produce_state *st, char *err,
                      size_t errlen)
{
    uint64_t start = bench_now_us();
    if (txn_check(rd_kafka_commit_transaction(rk, (int)opts->flush_timeout_ms), "commit_transaction", err, errlen) != 0)
        return -1;
    uint64_t took = bench_now_us() - start;
    bench_histogram_record(&st->commit_latency, took);
    st->commit_sum_us += (double)took;
    st->transactions++;
    return 0;
}

/* One record, with its send time in a header when --stamp asks. */
static rd_kafka_resp_err_t produce_one(rd_kafka_t *rk, const struct bench_options *opts, int32_t partition,
                                       const unsigned char *payload, uint64_t sent_us)
{
    rd_kafka_vu_t vus[5] = {
        {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = opts->topic},
        {.vtype = RD_KAFKA_VTYPE_PARTITION, .u.i32 = partition},
        {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {(void *)payload, (size_t)opts->record_size}},
        {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = (void *)(uintptr_t)sent_us},
    };
    size_t count = 4;
    unsigned char stamp[8]; /* copied by librdkafka */
    if (opts->stamp) {
        for (int i = 0; i < 8; i++)
            stamp[i] = (unsigned char)(sent_us >> (56 - 8 * i));
        vus[count++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_HEADER,
                                       .u.header = {BENCH_STAMP_HEADER, stamp, (ssize_t)sizeof(stamp)}};
    }
    rd_kafka_error_t *error = rd_kafka_produceva(rk, vus, count);
    if (!error)
        return RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    return code;
}

/* Sends all records; returns how many were handed to librdkafka. */
static uint64_t send_all(rd_kafka_t *rk, const struct bench_options *opts, struct produce_state *st,
                         const unsigned char *payload, char *err, size_t errlen)
{
    uint64_t sent = 0;
    for (long long i = 0; i < opts->records; i++) {
        if (opts->txn_size > 0 && i % opts->txn_size == 0 &&
            txn_check(rd_kafka_begin_transaction(rk), "begin_transaction", err, errlen) != 0)
            return sent;
        int32_t partition = opts->partitions > 0 ? (int32_t)(i % opts->partitions) : RD_KAFKA_PARTITION_UA;
        for (;;) {
            uint64_t now = bench_now_us();
            /* No copy flag: every record points at the same payload, which
             * outlives the producer. */
            rd_kafka_resp_err_t e = produce_one(rk, opts, partition, payload, now);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                snprintf(err, errlen, "produce: %s", rd_kafka_err2str(e));
                return sent;
            }
            rd_kafka_poll(rk, 1);
        }
        sent++;
        if (opts->txn_size > 0 && ((long long)sent % opts->txn_size == 0 || (long long)sent == opts->records) &&
            txn_commit(rk, opts, st, err, errlen) != 0)
            return sent;
        if ((sent & 1023) == 0)
            rd_kafka_poll(rk, 0);
    }
    return sent;
}

/* Reads every pending wake-up byte of the non-blocking pipe. */
static void drain_wakeups(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

/* Sleeps until due_us while serving delivery reports the moment they
 * arrive: librdkafka writes a byte to wake_fd when its main queue goes from
 * empty to not empty, so a report is timed within microseconds, not at the
 * next millisecond poll. */
static void wait_until(rd_kafka_t *rk, int wake_fd, uint64_t due_us)
{
    for (;;) {
        /* Drain before serving: a report queued after this poll writes a
         * new byte, so the ppoll below cannot sleep through it. */
        drain_wakeups(wake_fd);
        rd_kafka_poll(rk, 0);
        uint64_t now = bench_now_us();
        if (now >= due_us)
            return;
        uint64_t wait = due_us - now;
        struct timespec ts = {(time_t)(wait / 1000000u), (long)(wait % 1000000u) * 1000};
        struct pollfd pfd = {.fd = wake_fd, .events = POLLIN};
        if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
            return;
    }
}

/* --rate: sends record i when it is due (start + i / rate), stamped with
 * its due time, so a record the client could only send late (a stall, a
 * full queue) counts its wait in its latency. Returns how many were
 * handed to librdkafka. */
static uint64_t send_at_rate(rd_kafka_t *rk, const struct bench_options *opts, struct produce_state *st,
                             const unsigned char *payload, uint64_t start, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return 0;
    }
    rd_kafka_queue_t *main_queue = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(main_queue, fds[1], "1", 1);

    uint64_t sent = 0;
    st->first_due_us = start;
    for (long long i = 0; i < opts->records; i++) {
        uint64_t due = bench_schedule_due_us(start, (uint64_t)i, (uint64_t)opts->rate);
        wait_until(rk, fds[0], due);
        int32_t partition = opts->partitions > 0 ? (int32_t)(i % opts->partitions) : RD_KAFKA_PARTITION_UA;
        rd_kafka_resp_err_t e;
        while ((e = produce_one(rk, opts, partition, payload, due)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(rk, 1);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            snprintf(err, errlen, "produce: %s", rd_kafka_err2str(e));
            break;
        }
        st->last_send_us = bench_now_us();
        bench_histogram_record(&st->send_lag, st->last_send_us > due ? st->last_send_us - due : 0);
        sent++;
    }
    /* librdkafka must not write to the pipe once it is closed. */
    rd_kafka_queue_io_event_enable(main_queue, -1, NULL, 0);
    rd_kafka_queue_destroy(main_queue);
    close(fds[0]);
    close(fds[1]);
    return sent;
}

/* The schedule's outcome: target and achieved rate, and how late records
 * were handed to librdkafka (a client that cannot keep up shows here). */
static json_t *rate_json(const struct bench_options *opts, const struct produce_state *st, uint64_t sent,
                         uint64_t start)
{
    return json_pack("{s:I, s:f, s:{s:f, s:f, s:f}}", "target", (json_int_t)opts->rate, "achieved",
                     bench_schedule_achieved_rate(sent, start, st->last_send_us, (uint64_t)opts->rate), "send_lag_ms",
                     "p50", (double)bench_histogram_quantile(&st->send_lag, 0.50) / 1000.0, "p99",
                     (double)bench_histogram_quantile(&st->send_lag, 0.99) / 1000.0, "max",
                     (double)st->send_lag.max_us / 1000.0);
}

int bench_run_produce(const struct bench_options *opts)
{
    char err[512] = "";
    struct produce_state *st = calloc(1, sizeof(*st));
    unsigned char *payload = malloc(opts->record_size > 0 ? (size_t)opts->record_size : 1);
    if (!st || !payload) {
        fprintf(stderr, "cairn-bench: out of memory\n");
        free(st);
        free(payload);
        return 1;
    }
    bench_histogram_init(&st->latency);
    bench_histogram_init(&st->commit_latency);
    bench_histogram_init(&st->send_lag);
    const char *slow = getenv("CAIRN_BENCH_SLOW_MS");
    st->slow_us = slow ? (uint64_t)(strtod(slow, NULL) * 1000.0) : 0;
    st->first_due_us = bench_now_us();
    fill_payload(payload, (size_t)opts->record_size);

    rd_kafka_t *rk = create_producer(opts, st, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        free(st);
        free(payload);
        return 1;
    }
    int partition_count = 0;
    if (bench_topic_ensure(rk, opts, &partition_count, err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_destroy(rk);
        free(st);
        free(payload);
        return 1;
    }
    if (opts->partitions > partition_count) {
        fprintf(stderr, "cairn-bench: topic %s has %d partitions, fewer than --partitions %d\n", opts->topic,
                partition_count, opts->partitions);
        rd_kafka_destroy(rk);
        free(st);
        free(payload);
        return 1;
    }
    if (opts->txn_size > 0 && txn_check(rd_kafka_init_transactions(rk, (int)opts->flush_timeout_ms),
                                        "init_transactions", err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_destroy(rk);
        free(st);
        free(payload);
        return 1;
    }

    if (opts->timeline) {
        st->timeline_cap = (size_t)(opts->records < 1000000 ? opts->records : 1000000);
        st->timeline = malloc(st->timeline_cap * sizeof(*st->timeline));
        if (!st->timeline)
            st->timeline_cap = 0;
    }
    struct bench_cpu_window cpu;
    bench_cpu_window_start(&cpu, opts->broker_pid);
    uint64_t start = bench_now_us();
    uint64_t sent = opts->rate > 0 ? send_at_rate(rk, opts, st, payload, start, err, sizeof(err))
                                   : send_all(rk, opts, st, payload, err, sizeof(err));
    rd_kafka_resp_err_t flush_err = rd_kafka_flush(rk, (int)opts->flush_timeout_ms);
    /* A transactional run ends with its last commit, after the last report. */
    uint64_t end = opts->txn_size == 0 && st->last_report_us > start ? st->last_report_us : bench_now_us();
    bench_cpu_window_stop(&cpu);

    double seconds = (double)(end - start) / 1e6;
    json_t *report = json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:I, s:s}", "command", "produce", "bootstrap",
                               opts->bootstrap, "topic", opts->topic, "record_size", (int)opts->record_size,
                               "linger_ms", (int)opts->linger_ms, "acks", opts->acks, "partitions",
                               (json_int_t)partition_count, "compression", opts->compression);
    bench_report_add_overrides(report, opts);
    bench_report_add_totals(report, st->delivered, st->delivered_bytes, seconds, &cpu);
    json_object_set_new(report, "failed", json_integer((json_int_t)st->failed));
    json_object_set_new(report, "latency_ms",
                        json_pack("{s:f, s:f, s:f, s:f, s:f}", "avg",
                                  st->delivered ? st->latency_sum_us / (double)st->delivered / 1000.0 : 0.0, "p50",
                                  (double)bench_histogram_quantile(&st->latency, 0.50) / 1000.0, "p99",
                                  (double)bench_histogram_quantile(&st->latency, 0.99) / 1000.0, "p999",
                                  (double)bench_histogram_quantile(&st->latency, 0.999) / 1000.0, "max",
                                  (double)st->latency.max_us / 1000.0));
    if (opts->rate > 0)
        json_object_set_new(report, "rate", rate_json(opts, st, sent, start));
    if (opts->txn_size > 0) {
        json_object_set_new(report, "txn_size", json_integer((json_int_t)opts->txn_size));
        json_object_set_new(report, "transactions", json_integer((json_int_t)st->transactions));
        json_object_set_new(report, "commit_ms",
                            json_pack("{s:f, s:f, s:f, s:f}", "avg",
                                      st->transactions ? st->commit_sum_us / (double)st->transactions / 1000.0 : 0.0,
                                      "p50", (double)bench_histogram_quantile(&st->commit_latency, 0.50) / 1000.0,
                                      "p99", (double)bench_histogram_quantile(&st->commit_latency, 0.99) / 1000.0,
                                      "max", (double)st->commit_latency.max_us / 1000.0));
    }
    int rc = 0;
    if (err[0]) {
        json_object_set_new(report, "error", json_string(err));
        rc = 1;
    } else if (flush_err || st->delivered != sent) {
        snprintf(err, sizeof(err), "%llu of %llu records not delivered%s%s", (unsigned long long)(sent - st->delivered),
                 (unsigned long long)sent, st->first_error[0] ? ": " : "", st->first_error);
        json_object_set_new(report, "error", json_string(err));
        rc = 1;
    }
    if (opts->timeline && timeline_write(opts->timeline, st, st->delivered + st->failed) != 0) {
        fprintf(stderr, "cairn-bench: cannot write the timeline to %s: %s\n", opts->timeline, strerror(errno));
        rc = 1;
    }
    bench_report_print(report);
    rd_kafka_destroy(rk);
    free(st->timeline);
    free(st);
    free(payload);
    return rc;
}
