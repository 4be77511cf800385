/* consume: reads N records from the start of every partition of a topic
 * and reports the rate, measured from assignment to the last record, and
 * apart: the time to the first record and the rate from it to the last.
 * Records that carry the producer's stamp (produce --stamp 1) give the
 * end-to-end latency in microseconds from the producer's send; records
 * without one but stamped by the broker (LogAppendTime) give it in
 * milliseconds from the append. Only records sent after the first read
 * count (the ones before measure the consumer's own start). --check-offsets
 * 1 fails on a gap or a repeat. */
#include "bench.h"
#include "bench_histogram.h"
#include "bench_report.h"

#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The producer's stamp, or 0 when the record has none. */
static uint64_t stamp_of(rd_kafka_message_t *msg)
{
    rd_kafka_headers_t *headers = NULL;
    const void *value = NULL;
    size_t size = 0;
    if (rd_kafka_message_headers(msg, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(headers, BENCH_STAMP_HEADER, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        size != 8 || !value)
        return 0;
    uint64_t us = 0;
    for (int i = 0; i < 8; i++)
        us = us << 8 | ((const unsigned char *)value)[i];
    return us;
}

/* Offsets of a partition must follow each other: one past the previous
 * record (none yet: any start, the log may have been truncated). */
static int check_offset(int64_t *next, const rd_kafka_message_t *msg, char *err, size_t errlen)
{
    int64_t want = next[msg->partition];
    next[msg->partition] = msg->offset + 1;
    if (want < 0 || msg->offset == want)
        return 0;
    snprintf(err, errlen, "partition %d: offset %lld after %lld (%s)", (int)msg->partition, (long long)msg->offset,
             (long long)want - 1, msg->offset > want ? "gap" : "repeat");
    return -1;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)opaque;
    fprintf(stderr, "cairn-bench: client error: %s: %s\n", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static rd_kafka_t *create_consumer(const struct bench_options *opts, char *err, size_t errlen)
{
    char group[64];
    snprintf(group, sizeof(group), "cairn-bench-%d", (int)getpid());
    /* Offsets are never committed: every run reads from the beginning. */
    const struct bench_conf_pair defaults[] = {
        {"group.id", opts->group ? opts->group : group},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "false"},
    };
    rd_kafka_conf_t *conf = bench_conf_new(opts, defaults, sizeof(defaults) / sizeof(defaults[0]), err, errlen);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_error_cb(conf, on_error);
    char rk_err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, rk_err, sizeof(rk_err));
    if (!rk) {
        snprintf(err, errlen, "consumer: %.400s", rk_err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

static int assign_all(rd_kafka_t *rk, const char *topic, int partitions, char *err, size_t errlen)
{
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++)
        rd_kafka_topic_partition_list_add(list, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) {
        snprintf(err, errlen, "assign: %s", rd_kafka_err2str(e));
        return -1;
    }
    return 0;
}

int bench_run_consume(const struct bench_options *opts)
{
    char err[512] = "";
    rd_kafka_t *rk = create_consumer(opts, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        return 1;
    }
    int partitions = bench_topic_partition_count(rk, opts->topic, err, sizeof(err));
    if (partitions == 0)
        snprintf(err, sizeof(err), "topic %s does not exist", opts->topic);
    if (partitions <= 0 || assign_all(rk, opts->topic, partitions, err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_destroy(rk);
        return 1;
    }

    struct bench_cpu_window cpu;
    bench_cpu_window_start(&cpu, opts->broker_pid);
    uint64_t start = bench_now_us();
    uint64_t last = start, first = 0;
    int64_t first_wall_ms = 0;
    uint64_t records = 0, bytes = 0, errors = 0, first_len = 0, stamped = 0, producer_stamped = 0;
    struct bench_histogram *latency = malloc(sizeof(*latency));
    int64_t *next = malloc(sizeof(*next) * (size_t)partitions);
    if (!latency || !next) {
        fprintf(stderr, "cairn-bench: out of memory\n");
        free(latency);
        free(next);
        rd_kafka_destroy(rk);
        return 1;
    }
    bench_histogram_init(latency);
    for (int p = 0; p < partitions; p++)
        next[p] = -1;
    char order[256] = "";
    while (records < (uint64_t)opts->records) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 100);
        uint64_t now = bench_now_us();
        if (!msg) {
            if (now - last > (uint64_t)opts->idle_timeout_ms * 1000u)
                break;
            continue;
        }
        if (msg->err) {
            if (errors++ == 0)
                snprintf(err, sizeof(err), "fetch: %s", rd_kafka_message_errstr(msg));
        } else {
            if (records == 0) {
                first = now;
                first_len = msg->len;
                first_wall_ms = wall_ms();
            }
            records++;
            bytes += msg->len;
            last = now;
            rd_kafka_timestamp_type_t tstype;
            int64_t ts = rd_kafka_message_timestamp(msg, &tstype);
            uint64_t sent_us = stamp_of(msg);
            /* Records sent before the first read measure the consumer's
             * own start (assignment, first fetch), not delivery. */
            if (sent_us > 0) {
                if (sent_us >= first) {
                    bench_histogram_record(latency, now > sent_us ? now - sent_us : 0);
                    producer_stamped++;
                }
            } else if (tstype == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME && ts >= first_wall_ms) {
                int64_t age = wall_ms() - ts;
                bench_histogram_record(latency, age > 0 ? (uint64_t)age * 1000u : 0);
                stamped++;
            }
            if (opts->check_offsets && msg->partition >= 0 && msg->partition < partitions && !order[0])
                check_offset(next, msg, order, sizeof(order));
        }
        rd_kafka_message_destroy(msg);
    }
    bench_cpu_window_stop(&cpu);

    json_t *report = json_pack("{s:s, s:s, s:s, s:i}", "command", "consume", "bootstrap", opts->bootstrap, "topic",
                               opts->topic, "partitions", partitions);
    bench_report_add_overrides(report, opts);
    bench_report_add_totals(report, records, bytes, (double)(last - start) / 1e6, &cpu);
    json_object_set_new(report, "fetch_errors", json_integer((json_int_t)errors));
    /* The client's start (ListOffsets, which librdkafka may send only on
     * its broker thread's next wake-up, up to 0.5 s later) apart from the
     * read itself: the time to the first record, and the rate after it. */
    if (records > 1 && last > first) {
        double after = (double)(last - first) / 1e6;
        json_object_set_new(report, "first_record_ms", json_real((double)(first - start) / 1e3));
        json_object_set_new(report, "mb_per_sec_after_first",
                            json_real((double)(bytes - first_len) / (1024.0 * 1024.0) / after));
        json_object_set_new(report, "msgs_per_sec_after_first", json_real((double)(records - 1) / after));
    }
    /* CreateTime is the producer's wall clock at millisecond resolution
     * and includes its queueing: the stamp header or the broker's append
     * time instead. A run mixing both reports the stamps' origin. */
    if (stamped + producer_stamped > 0)
        json_object_set_new(report, "latency_ms",
                            json_pack("{s:s, s:I, s:f, s:f, s:f}", "from",
                                      producer_stamped > 0 ? "producer_stamp" : "log_append_time", "records",
                                      (json_int_t)(stamped + producer_stamped), "p50",
                                      (double)bench_histogram_quantile(latency, 0.50) / 1000.0, "p99",
                                      (double)bench_histogram_quantile(latency, 0.99) / 1000.0, "max",
                                      (double)latency->max_us / 1000.0));
    free(latency);
    free(next);
    int rc = 0;
    if (order[0]) {
        json_object_set_new(report, "error", json_string(order));
        fprintf(stderr, "cairn-bench: offsets out of order: %s\n", order);
        rc = 1;
    } else if (records < (uint64_t)opts->records) {
        char msg[700];
        snprintf(msg, sizeof(msg), "read %llu of %lld records before %ld ms without data%s%s",
                 (unsigned long long)records, opts->records, opts->idle_timeout_ms, err[0] ? "; first error: " : "",
                 err);
        json_object_set_new(report, "error", json_string(msg));
        rc = 1;
    }
    bench_report_print(report);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}
