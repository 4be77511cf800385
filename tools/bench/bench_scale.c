/* create-topics and wait-partitions: many topics at once, for the metadata
 * scale benchmark (tools/bench/metadata_scale.sh). create-topics sends
 * CreateTopics in batches and times them; wait-partitions polls an
 * all-topics Metadata until every topic of a prefix is there with each
 * partition led. */
#include "bench.h"
#include "bench_report.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCALE_REQUEST_TIMEOUT_MS 120000

static rd_kafka_t *scale_client(const struct bench_options *opts)
{
    char err[512];
    /* A 100k-partition Metadata answer is several MB: allow it, and give the
     * broker time to build it. */
    static const struct bench_conf_pair defaults[] = {{"receive.message.max.bytes", "1000000000"},
                                                      {"socket.timeout.ms", "120000"}};
    rd_kafka_conf_t *conf = bench_conf_new(opts, defaults, sizeof(defaults) / sizeof(defaults[0]), err, sizeof(err));
    if (!conf) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

static void topic_name(char *out, size_t len, const char *prefix, int i)
{
    snprintf(out, len, "%s-%05d", prefix, i);
}

/* One CreateTopics request for topics [first, first + n); returns how many
 * failed (TOPIC_ALREADY_EXISTS counts as done). */
static int create_batch(rd_kafka_t *rk, const struct bench_options *opts, int first, int n)
{
    char name[256], err[256];
    rd_kafka_NewTopic_t **topics = calloc((size_t)n, sizeof(*topics));
    if (!topics)
        return n;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        topic_name(name, sizeof(name), opts->topic, first + i);
        topics[i] = rd_kafka_NewTopic_new(name, opts->partitions > 0 ? opts->partitions : 1, opts->replication_factor,
                                          err, sizeof(err));
        if (!topics[i]) {
            fprintf(stderr, "cairn-bench: %s: %s\n", name, err);
            failed = n;
            goto out;
        }
    }
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(options, SCALE_REQUEST_TIMEOUT_MS, NULL, 0);
    rd_kafka_AdminOptions_set_request_timeout(options, SCALE_REQUEST_TIMEOUT_MS, NULL, 0);
    rd_kafka_CreateTopics(rk, topics, (size_t)n, options, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, SCALE_REQUEST_TIMEOUT_MS * 2);
    if (!ev || rd_kafka_event_error(ev)) {
        fprintf(stderr, "cairn-bench: CreateTopics: %s\n", ev ? rd_kafka_event_error_string(ev) : "no answer");
        failed = n;
    } else {
        size_t count = 0;
        const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
            rd_kafka_event_CreateTopics_result(ev), &count);
        for (size_t i = 0; i < count; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                if (failed++ < 3)
                    fprintf(stderr, "cairn-bench: %s: %s\n", rd_kafka_topic_result_name(res[i]), rd_kafka_err2str(e));
            }
        }
        if (count != (size_t)n)
            failed += n - (int)count;
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_queue_destroy(queue);
out:
    for (int i = 0; i < n; i++)
        if (topics[i])
            rd_kafka_NewTopic_destroy(topics[i]);
    free(topics);
    return failed;
}

int bench_run_create_topics(const struct bench_options *opts)
{
    rd_kafka_t *rk = scale_client(opts);
    if (!rk)
        return 1;
    int total = opts->topics > 0 ? opts->topics : 1;
    int batch = opts->batch > 0 ? opts->batch : 100;
    uint64_t start = bench_now_us();
    int failed = 0;
    double slowest = 0;
    for (int first = 0; first < total && !failed; first += batch) {
        int n = total - first < batch ? total - first : batch;
        uint64_t t0 = bench_now_us();
        failed += create_batch(rk, opts, first, n);
        double s = (double)(bench_now_us() - t0) / 1e6;
        if (s > slowest)
            slowest = s;
    }
    double seconds = (double)(bench_now_us() - start) / 1e6;
    int parts = opts->partitions > 0 ? opts->partitions : 1;
    json_t *report = json_pack("{s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:i}", "command", "create-topics", "topics", total,
                               "partitions_per_topic", parts, "replication_factor", opts->replication_factor, "batch",
                               batch, "seconds", seconds, "slowest_batch_seconds", slowest, "failed", failed);
    bench_report_print(report); /* frees it */
    rd_kafka_destroy(rk);
    return failed ? 1 : 0;
}

/* Topics named "<prefix>-NNNNN" in md, and of their partitions how many
 * exist and how many have a leader. */
static void count_prefix(const rd_kafka_metadata_t *md, const char *prefix, int *topics, long *partitions, long *led)
{
    size_t plen = strlen(prefix);
    *topics = 0;
    *partitions = 0;
    *led = 0;
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *t = &md->topics[i];
        if (strncmp(t->topic, prefix, plen) != 0 || t->topic[plen] != '-' || t->err)
            continue;
        (*topics)++;
        *partitions += t->partition_cnt;
        for (int p = 0; p < t->partition_cnt; p++)
            if (t->partitions[p].leader >= 0 && t->partitions[p].err == 0)
                (*led)++;
    }
}

int bench_run_wait_partitions(const struct bench_options *opts)
{
    uint64_t start = bench_now_us();
    rd_kafka_t *rk = scale_client(opts);
    if (!rk)
        return 1;
    int want_topics = opts->topics > 0 ? opts->topics : 1;
    long want = (long)want_topics * (opts->partitions > 0 ? opts->partitions : 1);
    uint64_t deadline = start + (uint64_t)opts->idle_timeout_ms * 1000u;
    int topics = 0;
    long partitions = 0, led = 0;
    double metadata_seconds = 0;
    for (;;) {
        const rd_kafka_metadata_t *md = NULL;
        uint64_t t0 = bench_now_us();
        if (rd_kafka_metadata(rk, 1, NULL, &md, SCALE_REQUEST_TIMEOUT_MS) == 0) {
            metadata_seconds = (double)(bench_now_us() - t0) / 1e6;
            count_prefix(md, opts->topic, &topics, &partitions, &led);
            rd_kafka_metadata_destroy(md);
            if (topics >= want_topics && partitions >= want && led == partitions)
                break;
        }
        if (bench_now_us() > deadline)
            break;
        usleep(50 * 1000);
    }
    double seconds = (double)(bench_now_us() - start) / 1e6;
    int ok = topics >= want_topics && partitions >= want && led == partitions;
    json_t *report = json_pack("{s:s, s:i, s:I, s:I, s:f, s:f}", "command", "wait-partitions", "topics", topics,
                               "partitions", (json_int_t)partitions, "with_leader", (json_int_t)led, "seconds", seconds,
                               "last_metadata_seconds", metadata_seconds);
    if (!ok)
        json_object_set_new(report, "error", json_string("timed out"));
    bench_report_print(report); /* frees it */
    rd_kafka_destroy(rk);
    return ok ? 0 : 1;
}
