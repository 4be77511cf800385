/* wait-topic: polls metadata until a topic has the expected number of
 * partitions, all with a leader. compare.sh uses it to time broker start-up. */
#include "bench.h"
#include "bench_report.h"

#include <time.h>
#include <unistd.h>

int bench_run_wait_topic(const struct bench_options *opts)
{
    char err[512];
    uint64_t start = bench_now_us();
    rd_kafka_conf_t *conf = bench_conf_new(opts, NULL, 0, err, sizeof(err));
    if (!conf) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    int want = opts->partitions > 0 ? opts->partitions : 1;
    uint64_t deadline = start + (uint64_t)opts->idle_timeout_ms * 1000u;
    int ready = 0;
    int count = 0;
    for (;;) {
        count = bench_topic_ready_partitions(rk, opts->topic, &ready);
        if (count >= want && ready == count)
            break;
        if (bench_now_us() > deadline)
            break;
        usleep(20 * 1000);
    }
    double seconds = (double)(bench_now_us() - start) / 1e6;
    json_t *report = json_pack("{s:s, s:s, s:i, s:i, s:f}", "command", "wait-topic", "topic", opts->topic, "partitions",
                               count, "with_leader", ready, "seconds", seconds);
    int rc = (count >= want && ready == count) ? 0 : 1;
    if (rc)
        json_object_set_new(report, "error", json_string("timed out"));
    bench_report_print(report);
    rd_kafka_destroy(rk);
    return rc;
}

/* The sum of the topic's partitions' high watermarks, or -1 (err filled). */
static int64_t end_offset_sum(rd_kafka_t *rk, const struct bench_options *opts, int *partitions, char *err,
                              size_t errlen)
{
    int count = bench_topic_partition_count(rk, opts->topic, err, errlen);
    if (count <= 0) {
        if (count == 0)
            snprintf(err, errlen, "topic %s not found", opts->topic);
        return -1;
    }
    int64_t sum = 0;
    for (int32_t p = 0; p < count; p++) {
        int64_t low = 0, high = 0;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, opts->topic, p, &low, &high,
                                                                 (int)opts->idle_timeout_ms);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            snprintf(err, errlen, "end offset of %s-%d: %s", opts->topic, (int)p, rd_kafka_err2str(e));
            return -1;
        }
        sum += high;
    }
    *partitions = count;
    return sum;
}

/* end-offsets: the sum of the topic's partitions' high watermarks, so a
 * script can tell how many records a producer it does not control (another
 * tenant's) got into the log between two samples. With --every-ms it
 * samples on that period until killed, one line per sample, and waits out a
 * topic that does not exist yet. */
int bench_run_end_offsets(const struct bench_options *opts)
{
    char err[512];
    rd_kafka_conf_t *conf = bench_conf_new(opts, NULL, 0, err, sizeof(err));
    if (!conf) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    for (;;) {
        int partitions = 0;
        int64_t sum = end_offset_sum(rk, opts, &partitions, err, sizeof(err));
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t time_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        if (sum >= 0)
            bench_report_print(json_pack("{s:s, s:s, s:i, s:I, s:I}", "command", "end-offsets", "topic", opts->topic,
                                         "partitions", partitions, "end_offset_sum", (json_int_t)sum, "time_ms",
                                         (json_int_t)time_ms));
        if (opts->every_ms == 0) {
            if (sum < 0)
                fprintf(stderr, "cairn-bench: %s\n", err);
            rd_kafka_destroy(rk);
            return sum >= 0 ? 0 : 1;
        }
        usleep((useconds_t)opts->every_ms * 1000u);
    }
}
