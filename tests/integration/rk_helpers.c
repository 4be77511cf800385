#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rk_apply_conf(rd_kafka_conf_t *conf, const char *bootstrap, const char *const *pairs)
{
    char errstr[512];
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
        fail_msg("bootstrap.servers: %s", errstr);
    for (int i = 0; pairs && pairs[i]; i += 2) {
        if (!pairs[i + 1])
            fail_msg("conf key %s has no value", pairs[i]);
        if (rd_kafka_conf_set(conf, pairs[i], pairs[i + 1], errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
            fail_msg("conf %s=%s: %s", pairs[i], pairs[i + 1], errstr);
    }
}

static void rk_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct rk_delivery_stats *stats = opaque;
    if (msg->err) {
        if (stats->failed == 0) {
            stats->first_error = msg->err;
            snprintf(stats->first_error_text, sizeof(stats->first_error_text), "%s", rd_kafka_err2str(msg->err));
        }
        stats->failed++;
    } else {
        stats->delivered++;
    }
    struct rk_delivery_slot *slot = msg->_private;
    if (slot) {
        slot->partition = msg->partition;
        slot->offset = msg->offset;
        slot->err = msg->err;
        slot->done = true;
    }
}

rd_kafka_t *rk_producer_new(const char *bootstrap, const char *const *conf_pairs)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rk_apply_conf(conf, bootstrap, conf_pairs);
    struct rk_delivery_stats *stats = calloc(1, sizeof(*stats));
    if (!stats)
        fail_msg("out of memory");
    rd_kafka_conf_set_opaque(conf, stats);
    rd_kafka_conf_set_dr_msg_cb(conf, rk_delivery_cb);
    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        free(stats);
        fail_msg("rd_kafka_new(producer): %s", errstr);
    }
    return rk;
}

struct rk_delivery_stats *rk_producer_stats(rd_kafka_t *rk)
{
    return rd_kafka_opaque(rk);
}

void rk_producer_destroy(rd_kafka_t *rk)
{
    struct rk_delivery_stats *stats = rd_kafka_opaque(rk);
    rd_kafka_destroy(rk);
    free(stats);
}

rd_kafka_t *rk_consumer_new(const char *bootstrap, const char *const *conf_pairs)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", errstr, sizeof(errstr));
    rk_apply_conf(conf, bootstrap, conf_pairs);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk)
        fail_msg("rd_kafka_new(consumer): %s", errstr);
    return rk;
}

void rk_expect_ok(rd_kafka_error_t *err, const char *what)
{
    if (err) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s", what, rd_kafka_error_string(err));
        rd_kafka_error_destroy(err);
        fail_msg("%s", msg);
    }
}

rd_kafka_resp_err_t rk_produce_blocking(rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                                        size_t key_len, const void *value, size_t value_len, int64_t timestamp,
                                        rd_kafka_headers_t *headers, void *msg_opaque)
{
    for (;;) {
        rd_kafka_headers_t *copy = headers ? rd_kafka_headers_copy(headers) : NULL;
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_KEY(key, key_len),
            RD_KAFKA_V_VALUE((void *)value, value_len), RD_KAFKA_V_TIMESTAMP(timestamp),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(copy), RD_KAFKA_V_OPAQUE(msg_opaque),
            RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
            return err;
        if (copy)
            rd_kafka_headers_destroy(copy);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return err;
        rd_kafka_poll(rk, 50);
    }
}

rd_kafka_resp_err_t rk_produce_one_delivered(rd_kafka_t *rk, const char *topic)
{
    struct rk_delivery_slot slot = {0};
    rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, 0, NULL, 0, "v", 1, 0, NULL, &slot);
    if (err)
        return err;
    rd_kafka_flush(rk, 10000);
    return slot.done ? slot.err : RD_KAFKA_RESP_ERR__TIMED_OUT;
}

static bool rk_admin_wait(rd_kafka_queue_t *queue, rd_kafka_event_t **out, int timeout_ms)
{
    *out = rd_kafka_queue_poll(queue, timeout_ms);
    return *out != NULL;
}

rd_kafka_event_t *rk_admin_result(rd_kafka_queue_t *q, rd_kafka_event_type_t type, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    rd_kafka_event_t *ev;
    while ((ev = rd_kafka_queue_poll(q, (int)(deadline - harness_now_ms() > 0 ? deadline - harness_now_ms() : 0)))) {
        if (rd_kafka_event_type(ev) == type)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    fail_msg("no admin result of type %d within %d ms", (int)type, timeout_ms);
    return NULL;
}

rd_kafka_resp_err_t rk_create_topic_result(rd_kafka_t *rk, const char *topic, int partitions, int replication_factor,
                                           const char *const *configs, bool validate_only, char *errstr, size_t errlen)
{
    errstr[0] = '\0';
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, replication_factor, errstr, errlen);
    if (!nt)
        fail_msg("NewTopic_new(%s): %s", topic, errstr);
    for (int i = 0; configs && configs[i]; i += 2)
        rd_kafka_NewTopic_set_config(nt, configs[i], configs[i + 1]);
    rd_kafka_AdminOptions_t *options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(options, 10000, errstr, errlen);
    rd_kafka_AdminOptions_set_operation_timeout(options, 10000, errstr, errlen);
    if (validate_only)
        rd_kafka_AdminOptions_set_validate_only(options, 1, errstr, errlen);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, options, queue);
    rd_kafka_event_t *ev;
    rd_kafka_resp_err_t result;
    if (!rk_admin_wait(queue, &ev, 20000)) {
        snprintf(errstr, errlen, "CreateTopics: no result within 20 s");
        result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev)) {
        result = rd_kafka_event_error(ev);
        snprintf(errstr, errlen, "%s", rd_kafka_event_error_string(ev));
    } else {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **topics = rd_kafka_CreateTopics_result_topics(res, &n);
        if (n != 1) {
            snprintf(errstr, errlen, "CreateTopics: %zu topic results for one topic", n);
            result = RD_KAFKA_RESP_ERR__BAD_MSG;
        } else {
            result = rd_kafka_topic_result_error(topics[0]);
            const char *msg = rd_kafka_topic_result_error_string(topics[0]);
            snprintf(errstr, errlen, "%s", msg ? msg : "");
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_AdminOptions_destroy(options);
    rd_kafka_NewTopic_destroy(nt);
    return result;
}

bool rk_wait_topic(rd_kafka_t *rk, const char *topic, int partitions, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            bool ready = false;
            for (int t = 0; t < md->topic_cnt; t++) {
                const struct rd_kafka_metadata_topic *mt = &md->topics[t];
                if (strcmp(mt->topic, topic) != 0 || mt->err || mt->partition_cnt != partitions)
                    continue;
                ready = true;
                for (int p = 0; p < mt->partition_cnt; p++)
                    if (mt->partitions[p].err || mt->partitions[p].leader < 0)
                        ready = false;
            }
            rd_kafka_metadata_destroy(md);
            if (ready)
                return true;
        }
        rd_kafka_poll(rk, 100);
    }
    return false;
}

void rk_create_topic(const char *bootstrap, const char *topic, int partitions, const char *const *configs)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, NULL);
    char errstr[512];
    rd_kafka_resp_err_t err = rk_create_topic_result(rk, topic, partitions, 1, configs, false, errstr, sizeof(errstr));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rk_producer_destroy(rk);
        fail_msg("CreateTopics %s: %s (%s)", topic, rd_kafka_err2name(err), errstr);
    }
    bool ready = rk_wait_topic(rk, topic, partitions, 10000);
    rk_producer_destroy(rk);
    if (!ready)
        fail_msg("topic %s with %d partitions not in metadata within 10 s", topic, partitions);
}

long rk_consume_each(const char *bootstrap, const char *topic, int partitions, const long *want, int timeout_ms,
                     rk_message_fn fn, void *ctx)
{
    const char *conf[] = {"fetch.wait.max.ms", "100", "check.crcs", "true", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    long *seen = calloc((size_t)partitions, sizeof(long));
    bool *at_end = calloc((size_t)partitions, sizeof(bool));
    if (!seen || !at_end)
        fail_msg("out of memory");
    for (int p = 0; p < partitions; p++)
        if (rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, queue) != 0)
            fail_msg("consume_start %s[%d]: %s", topic, p, rd_kafka_err2str(rd_kafka_last_error()));
    long total = 0;
    bool failed = false;
    int ended = 0;
    long long deadline = harness_now_ms() + timeout_ms;
    rd_kafka_message_t *batch[1000];
    while (ended < partitions && !failed) {
        if (harness_now_ms() >= deadline) {
            fprintf(stderr, "[consume] %s: timeout after %d ms;", topic, timeout_ms);
            for (int p = 0; p < partitions; p++)
                fprintf(stderr, " p%d=%ld%s", p, seen[p], at_end[p] ? "(end)" : "");
            fprintf(stderr, "\n");
            failed = true;
            break;
        }
        ssize_t n = rd_kafka_consume_batch_queue(queue, 200, batch, 1000);
        for (ssize_t i = 0; i < n; i++) {
            rd_kafka_message_t *m = batch[i];
            int p = m->partition;
            if (failed || p < 0 || p >= partitions) {
                /* drop: either already failing or not ours */
            } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (!at_end[p] && (!want || seen[p] >= want[p])) {
                    at_end[p] = true;
                    ended++;
                }
            } else if (m->err) {
                /* Transient client-side errors are retried by librdkafka. */
                fprintf(stderr, "[consume] %s[%d]: %s\n", topic, p, rd_kafka_message_errstr(m));
            } else {
                seen[p]++;
                total++;
                if (!fn(m, ctx))
                    failed = true;
            }
            rd_kafka_message_destroy(m);
        }
    }
    for (int p = 0; p < partitions; p++)
        rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(queue);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(seen);
    free(at_end);
    return failed ? -1 : total;
}

static char *rk_dup_bytes(const void *p, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy)
        fail_msg("out of memory");
    if (n)
        memcpy(copy, p, n);
    copy[n] = '\0';
    return copy;
}

static bool rk_collect(const rd_kafka_message_t *m, void *ctx)
{
    struct rk_record_set *set = ctx;
    if (set->count == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 1024;
        struct rk_record *grown = realloc(set->records, cap * sizeof(*grown));
        if (!grown)
            fail_msg("out of memory");
        set->records = grown;
        set->cap = cap;
    }
    struct rk_record *r = &set->records[set->count++];
    memset(r, 0, sizeof(*r));
    r->partition = m->partition;
    r->offset = m->offset;
    r->timestamp = rd_kafka_message_timestamp(m, &r->timestamp_type);
    r->key = m->key ? rk_dup_bytes(m->key, m->key_len) : NULL;
    r->key_len = m->key_len;
    r->value = m->payload ? rk_dup_bytes(m->payload, m->len) : NULL;
    r->value_len = m->len;
    rd_kafka_headers_t *headers = NULL;
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *value;
        size_t size;
        for (size_t i = 0;
             i < 4 && rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
            r->header_names[i] = strdup(name);
            r->header_values[i] = value ? rk_dup_bytes(value, size) : NULL;
            r->header_lens[i] = size;
            r->header_count++;
        }
    }
    return true;
}

long rk_consume_all(const char *bootstrap, const char *topic, int partitions, const long *want, int timeout_ms,
                    struct rk_record_set *set)
{
    return rk_consume_each(bootstrap, topic, partitions, want, timeout_ms, rk_collect, set);
}

void rk_record_set_free(struct rk_record_set *set)
{
    for (size_t i = 0; i < set->count; i++) {
        struct rk_record *r = &set->records[i];
        free(r->key);
        free(r->value);
        for (int h = 0; h < r->header_count; h++) {
            free(r->header_names[h]);
            free(r->header_values[h]);
        }
    }
    free(set->records);
    memset(set, 0, sizeof(*set));
}

rd_kafka_resp_err_t rk_delete_records(rd_kafka_t *rk, const char *topic, int64_t before, int64_t *low)
{
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, topic, 0)->offset = before;
    rd_kafka_DeleteRecords_t *del = rd_kafka_DeleteRecords_new(offsets);
    rd_kafka_topic_partition_list_destroy(offsets);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteRecords(rk, &del, 1, NULL, q);
    rd_kafka_DeleteRecords_destroy(del);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    if (!ev || rd_kafka_event_type(ev) != RD_KAFKA_EVENT_DELETERECORDS_RESULT)
        fail_msg("no DeleteRecords result");
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    if (!err) {
        const rd_kafka_topic_partition_list_t *res = rd_kafka_DeleteRecords_result_offsets(
            rd_kafka_event_DeleteRecords_result(ev));
        assert_int_equal(res->cnt, 1);
        err = res->elems[0].err;
        *low = res->elems[0].offset;
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    return err;
}
