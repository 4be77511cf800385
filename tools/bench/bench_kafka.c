/* Client configuration and topic set-up shared by produce and consume. */
#include "bench.h"

#include <string.h>
#include <unistd.h>

#define METADATA_TIMEOUT_MS 10000
#define TOPIC_READY_TIMEOUT_US (30 * 1000000ull)

int bench_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, char *err, size_t errlen)
{
    char rk_err[256];
    if (rd_kafka_conf_set(conf, key, value, rk_err, sizeof(rk_err)) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "%s=%s: %s", key, value, rk_err);
        return -1;
    }
    return 0;
}

rd_kafka_conf_t *bench_conf_new(const struct bench_options *opts, const struct bench_conf_pair *defaults,
                                size_t default_count, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (bench_conf_set(conf, "bootstrap.servers", opts->bootstrap, err, errlen) != 0)
        goto fail;
    if (bench_conf_set(conf, "client.id", "cairn-bench", err, errlen) != 0)
        goto fail;
    for (size_t i = 0; i < default_count; i++)
        if (bench_conf_set(conf, defaults[i].key, defaults[i].value, err, errlen) != 0)
            goto fail;
    for (int i = 0; i < opts->override_count; i++) {
        char key[256];
        const char *eq = strchr(opts->overrides[i], '=');
        size_t keylen = (size_t)(eq - opts->overrides[i]);
        if (keylen == 0 || keylen >= sizeof(key)) {
            snprintf(err, errlen, "-X %s: bad key", opts->overrides[i]);
            goto fail;
        }
        memcpy(key, opts->overrides[i], keylen);
        key[keylen] = '\0';
        if (bench_conf_set(conf, key, eq + 1, err, errlen) != 0)
            goto fail;
    }
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

/* Number of partitions with a leader, or -1 when the topic is absent. */
static int topic_state(const rd_kafka_metadata_t *md, const char *topic, int *with_leader)
{
    for (int i = 0; i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *t = &md->topics[i];
        if (strcmp(t->topic, topic) != 0)
            continue;
        if (t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
            return -1;
        int ready = 0;
        for (int p = 0; p < t->partition_cnt; p++)
            if (t->partitions[p].leader >= 0 && t->partitions[p].err == 0)
                ready++;
        *with_leader = ready;
        return t->partition_cnt;
    }
    return -1;
}

int bench_topic_partition_count(rd_kafka_t *rk, const char *topic, char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = NULL;
    /* all_topics=1 lists topics without asking the broker to create one. */
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, METADATA_TIMEOUT_MS);
    if (e) {
        snprintf(err, errlen, "metadata: %s", rd_kafka_err2str(e));
        return -1;
    }
    int ready = 0;
    int count = topic_state(md, topic, &ready);
    rd_kafka_metadata_destroy(md);
    return count < 0 ? 0 : count;
}

static int controller_is_known(rd_kafka_t *rk)
{
    int32_t controller = rd_kafka_controllerid(rk, 3000);
    const rd_kafka_metadata_t *md = NULL;
    if (controller < 0 || rd_kafka_metadata(rk, 0, NULL, &md, METADATA_TIMEOUT_MS) != 0)
        return 0;
    int known = 0;
    for (int i = 0; i < md->broker_cnt; i++)
        if (md->brokers[i].id == controller)
            known = 1;
    rd_kafka_metadata_destroy(md);
    return known;
}

int bench_topic_ready_partitions(rd_kafka_t *rk, const char *topic, int *ready)
{
    const rd_kafka_metadata_t *md = NULL;
    *ready = 0;
    if (rd_kafka_metadata(rk, 1, NULL, &md, METADATA_TIMEOUT_MS) != 0)
        return -1;
    int count = topic_state(md, topic, ready);
    rd_kafka_metadata_destroy(md);
    return count;
}

/* Returns 0 when created or already there, 1 when the broker does not
 * support CreateTopics or gave no answer in time, -1 on other errors. */
static int create_topic(rd_kafka_t *rk, const struct bench_options *opts, char *err, size_t errlen)
{
    char rk_err[256];
    /* CreateTopics goes to the controller. librdkafka's mock cluster names
     * a controller id that is none of its brokers (and has no CreateTopics),
     * where the admin request would wait out its whole timeout. */
    if (!controller_is_known(rk))
        return 1;
    int partitions = opts->partitions > 0 ? opts->partitions : 1;
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(opts->topic, partitions, opts->replication_factor, rk_err,
                                                    sizeof(rk_err));
    if (!nt) {
        snprintf(err, errlen, "topic %s: %s", opts->topic, rk_err);
        return -1;
    }
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(options, METADATA_TIMEOUT_MS, NULL, 0);
    /* Brokers that lack CreateTopics (librdkafka's mock cluster) never name
     * a controller, so without this the request would wait forever. */
    rd_kafka_AdminOptions_set_request_timeout(options, METADATA_TIMEOUT_MS, NULL, 0);
    rd_kafka_CreateTopics(rk, &nt, 1, options, queue);

    int rc = -1;
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, METADATA_TIMEOUT_MS * 2);
    if (!ev) {
        rc = 1;
    } else if (rd_kafka_event_error(ev)) {
        rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
        if (e == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE || e == RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION ||
            e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
            rc = 1;
        } else {
            snprintf(err, errlen, "CreateTopics %s: %s", opts->topic, rd_kafka_event_error_string(ev));
        }
    } else {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t cnt = 0;
        const rd_kafka_topic_result_t **results = rd_kafka_CreateTopics_result_topics(res, &cnt);
        rc = 0;
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t e = rd_kafka_topic_result_error(results[i]);
            if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                snprintf(err, errlen, "CreateTopics %s: %s", opts->topic,
                         rd_kafka_topic_result_error_string(results[i]));
                rc = -1;
            }
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_queue_destroy(queue);
    rd_kafka_NewTopic_destroy(nt);
    return rc;
}

/* Asks for the one topic's metadata, which brokers with
 * auto.create.topics.enable answer by creating it. */
static void request_auto_create(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    if (rkt && rd_kafka_metadata(rk, 0, rkt, &md, METADATA_TIMEOUT_MS) == 0)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
}

int bench_topic_ensure(rd_kafka_t *rk, const struct bench_options *opts, int *partition_count, char *err, size_t errlen)
{
    int existing = bench_topic_partition_count(rk, opts->topic, err, errlen);
    if (existing < 0)
        return -1;
    if (existing == 0) {
        int rc = create_topic(rk, opts, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            fprintf(stderr, "cairn-bench: CreateTopics not available, relying on auto-creation\n");
            request_auto_create(rk, opts->topic);
        }
    }

    uint64_t deadline = bench_now_us() + TOPIC_READY_TIMEOUT_US;
    for (;;) {
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, METADATA_TIMEOUT_MS);
        if (e == 0) {
            int ready = 0;
            int count = topic_state(md, opts->topic, &ready);
            rd_kafka_metadata_destroy(md);
            if (count > 0 && ready == count) {
                *partition_count = count;
                return 0;
            }
        }
        if (bench_now_us() > deadline) {
            snprintf(err, errlen, "topic %s has no leader for every partition after 30 s", opts->topic);
            return -1;
        }
        usleep(100 * 1000);
    }
}
