/* The request pipeline with plugins: an authorizer that denies one topic,
 * the audit events it and the admin handlers emit, quota throttling, and
 * the /metrics endpoint; and a broker without plugins allowing everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "../common/test_file.h"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Result of one raw Produce v3 to partition 0. */
struct produce_answer {
    int16_t error;
    int64_t base_offset;
    int32_t throttle_ms;
};

/* Sends Produce v3 (acks=1, one record) on fd and parses the answer. */
static void produce_raw(int fd, const char *topic, struct produce_answer *out)
{
    static int32_t correlation = 1000;
    correlation++;
    struct raw_writer batch, w;
    raw_writer_init(&batch);
    const struct raw_record records[] = {{"k", "value"}};
    struct timeval now;
    gettimeofday(&now, NULL);
    raw_build_record_batch(&batch, (int64_t)now.tv_sec * 1000, records, 1);
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 3, correlation, "pipeline-test");
    raw_put_produce_body(&w, NULL, 1, topic, 0, batch.data, batch.len);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    raw_writer_free(&batch);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, &len), 0);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), correlation);
    assert_int_equal(raw_get_i32(&r), 1); /* topics */
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1); /* partitions */
    assert_int_equal(raw_get_i32(&r), 0); /* index */
    out->error = raw_get_i16(&r);
    out->base_offset = raw_get_i64(&r);
    raw_get_i64(&r); /* log append time */
    out->throttle_ms = raw_get_i32(&r);
    assert_false(r.overflow);
    free(frame);
}

/* ListOffsets v1 (latest) for partition 0 of topic: the partition's error. */
static int16_t list_offsets_error(struct test_broker *b, const char *topic)
{
    int fd = raw_connect(broker_port(b), 10000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 2, 1, 77, "pipeline-test");
    raw_put_i32(&w, -1);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, -1);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, &len), 0);
    close(fd);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 77);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* Fetch v4 from offset 0 of partition 0, no waiting: the partition's error. */
static int16_t fetch_error(struct test_broker *b, const char *topic)
{
    int fd = raw_connect(broker_port(b), 10000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 1, 4, 78, "pipeline-test");
    raw_put_i32(&w, -1);      /* replica id */
    raw_put_i32(&w, 0);       /* max wait */
    raw_put_i32(&w, 0);       /* min bytes */
    raw_put_i32(&w, 1 << 20); /* max bytes */
    raw_put_i8(&w, 0);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, 0);
    raw_put_i32(&w, 1 << 20);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 10000, 8 << 20, &frame, &len), 0);
    close(fd);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 78);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* DeleteTopics through librdkafka's admin API: the topic's result code. */
static rd_kafka_resp_err_t delete_topic(struct test_broker *b, const char *topic)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
    rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    assert_non_null(ev);
    const rd_kafka_DeleteTopics_result_t *res = rd_kafka_event_DeleteTopics_result(ev);
    assert_non_null(res);
    size_t n = 0;
    const rd_kafka_topic_result_t **results = rd_kafka_DeleteTopics_result_topics(res, &n);
    assert_int_equal(n, 1);
    rd_kafka_resp_err_t err = rd_kafka_topic_result_error(results[0]);
    rd_kafka_event_destroy(ev);
    rd_kafka_DeleteTopic_destroy(dt);
    rd_kafka_queue_destroy(q);
    rk_producer_destroy(rk);
    return err;
}

/* AlterConfigs retention.ms=12345 on a topic through the admin API. */
static rd_kafka_resp_err_t alter_retention(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *topic)
{
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    assert_int_equal(rd_kafka_ConfigResource_set_config(res, "retention.ms", "12345"), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_AlterConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    assert_non_null(ev);
    const rd_kafka_AlterConfigs_result_t *ares = rd_kafka_event_AlterConfigs_result(ev);
    assert_non_null(ares);
    size_t n = 0;
    const rd_kafka_ConfigResource_t **out = rd_kafka_AlterConfigs_result_resources(ares, &n);
    assert_int_equal(n, 1);
    rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(out[0]);
    rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    return err;
}

/* CreatePartitions (to 2), AlterConfigs and DescribeConfigs of a topic
 * through the admin API: the result codes. */
static void alter_and_describe(struct test_broker *b, const char *topic, rd_kafka_resp_err_t *create_err,
                               rd_kafka_resp_err_t *alter_err, rd_kafka_resp_err_t *describe_err)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    char errstr[256];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, 2, errstr, sizeof errstr);
    assert_non_null(np);
    rd_kafka_CreatePartitions(rk, &np, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
    assert_non_null(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t **results = rd_kafka_CreatePartitions_result_topics(
        rd_kafka_event_CreatePartitions_result(ev), &n);
    assert_int_equal(n, 1);
    *create_err = rd_kafka_topic_result_error(results[0]);
    rd_kafka_event_destroy(ev);
    rd_kafka_NewPartitions_destroy(np);
    *alter_err = alter_retention(rk, q, topic);

    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    ev = rd_kafka_queue_poll(q, 15000);
    assert_non_null(ev);
    const rd_kafka_DescribeConfigs_result_t *dres = rd_kafka_event_DescribeConfigs_result(ev);
    assert_non_null(dres);
    const rd_kafka_ConfigResource_t **configs = rd_kafka_DescribeConfigs_result_resources(dres, &n);
    assert_int_equal(n, 1);
    *describe_err = rd_kafka_ConfigResource_error(configs[0]);
    rd_kafka_event_destroy(ev);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_queue_destroy(q);
    rk_producer_destroy(rk);
}

static struct produce_answer produce_once(struct test_broker *b, const char *topic)
{
    struct produce_answer a;
    int fd = raw_connect(broker_port(b), 10000);
    assert_true(fd >= 0);
    produce_raw(fd, topic, &a);
    close(fd);
    return a;
}

/* librdkafka produces one message and reports its error. producev itself
 * returns a topic's error when the Metadata answer for the topic it just
 * created lands before it picks a partition; otherwise the error comes with
 * the delivery report. Either way it is the client's error for the topic. */
static rd_kafka_resp_err_t rk_produce_one(struct test_broker *b, const char *topic)
{
    const char *conf[] = {"message.timeout.ms", "10000", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    rd_kafka_resp_err_t queued = rk_produce_blocking(rk, topic, 0, "k", 1, "v", 1, 0, NULL, NULL);
    if (queued != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rk_producer_destroy(rk);
        return queued;
    }
    rd_kafka_flush(rk, 15000);
    struct rk_delivery_stats stats = *rk_producer_stats(rk);
    rk_producer_destroy(rk);
    return stats.failed ? stats.first_error
                        : (stats.delivered == 1 ? RD_KAFKA_RESP_ERR_NO_ERROR : RD_KAFKA_RESP_ERR__FAIL);
}

/* The file's text; "" when it cannot be read, so a search in it just fails. */
static char *read_file(const char *path)
{
    char *text = test_read_file(path, NULL);
    return text ? text : strdup("");
}

static void test_authorizer_audit_and_metrics(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    char audit_path[] = "/tmp/cairn-audit-XXXXXX";
    int afd = mkstemp(audit_path);
    assert_true(afd >= 0);
    close(afd);
    int metrics_port = free_port();
    char audit_kv[300], metrics_kv[100];
    snprintf(audit_kv, sizeof audit_kv, "plugin.test_authz.audit.file=%s", audit_path);
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", metrics_port);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR,
                        "plugins=test_authz",
                        "plugin.test_authz.deny.topics=secret,hidden",
                        audit_kv,
                        metrics_kv,
                        NULL};
    broker_start(&b, ov);

    /* CREATE on the cluster is allowed, so both topics can be made. */
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&b), NULL);
    char errstr[512];
    /* Its metadata is denied too, so do not wait to see it. */
    assert_int_equal(rk_create_topic_result(admin, "secret", 1, 1, NULL, false, errstr, sizeof errstr),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(admin);
    rk_create_topic(broker_bootstrap(&b), "public", 1, NULL);

    struct produce_answer denied = produce_once(&b, "secret");
    assert_int_equal(denied.error, 29); /* TOPIC_AUTHORIZATION_FAILED */
    assert_int_equal(denied.base_offset, -1);
    struct produce_answer allowed = produce_once(&b, "public");
    assert_int_equal(allowed.error, 0);
    assert_true(allowed.base_offset >= 0);
    assert_int_equal(allowed.throttle_ms, 0);

    assert_int_equal(rk_produce_one(&b, "secret"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(rk_produce_one(&b, "public"), RD_KAFKA_RESP_ERR_NO_ERROR);

    assert_int_equal(list_offsets_error(&b, "secret"), 29);
    assert_int_equal(list_offsets_error(&b, "public"), 0);
    assert_int_equal(fetch_error(&b, "secret"), 29);
    assert_int_equal(fetch_error(&b, "public"), 0);
    rd_kafka_resp_err_t create_err, alter_err, describe_err;
    alter_and_describe(&b, "secret", &create_err, &alter_err, &describe_err);
    assert_int_equal(create_err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(alter_err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(describe_err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    alter_and_describe(&b, "public", &create_err, &alter_err, &describe_err);
    assert_int_equal(create_err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(alter_err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(describe_err, RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(delete_topic(&b, "secret"), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(delete_topic(&b, "public"), RD_KAFKA_RESP_ERR_NO_ERROR);

    char *audit = read_file(audit_path);
    if (!strstr(audit, "AUTHORIZATION op=- res=secret allowed=0 principal=User:ANONYMOUS"))
        fprintf(stderr, "audit file:\n%s\n", audit);
    assert_non_null(strstr(audit, "AUTHORIZATION op=- res=secret allowed=0 principal=User:ANONYMOUS"));
    assert_non_null(strstr(audit, "AUTHORIZATION op=- res=public allowed=1"));
    assert_non_null(strstr(audit, "ADMIN op=CreateTopics res=public allowed=1"));
    assert_non_null(strstr(audit, "\"partitions\":1"));
    assert_non_null(strstr(audit, "ADMIN op=DeleteTopics res=public allowed=1"));
    assert_non_null(strstr(audit, "ADMIN op=CreatePartitions res=public allowed=1 principal=User:ANONYMOUS error=0 "
                                  "details={\"assignments\":0,\"count\":2,\"validate_only\":false}"));
    assert_null(strstr(audit, "ADMIN op=DeleteTopics res=secret"));
    assert_non_null(strstr(audit, "ADMIN op=AlterConfigs res=public allowed=1 principal=User:ANONYMOUS error=0 "
                                  "details={\"changes\":[{\"name\":\"retention.ms\",\"op\":\"SET\",\"value\":"
                                  "\"12345\"}],\"validate_only\":false}"));
    assert_non_null(strstr(audit, "AUTHORIZATION op=- res=secret allowed=0"));
    assert_null(strstr(audit, "ADMIN op=AlterConfigs res=secret"));
    free(audit);

    /* The plugin's log line lands in the broker log under its name. */
    char *log = read_file(b.log_path);
    assert_non_null(strstr(log, "[plugin:test_authz] denying 2 topic(s); buffer.size=65536"));
    free(log);

    char *page = raw_http_get(metrics_port, "/metrics");
    assert_non_null(page);
    assert_non_null(strstr(page, "200 OK"));
    assert_non_null(strstr(page, "# TYPE cairn_requests_total counter"));
    assert_true(raw_metric_value(page, "cairn_requests_total{api=\"Produce\"}") >= 3);
    assert_true(raw_metric_value(page, "cairn_requests_total{api=\"CreateTopics\"}") >= 2);
    assert_true(raw_metric_value(page, "cairn_network_bytes_in_total") > 0);
    assert_true(raw_metric_value(page, "cairn_plugin_test_authz_denials_total") >= 2);
    free(page);
    char *missing = raw_http_get(metrics_port, "/nothing");
    assert_non_null(missing);
    assert_non_null(strstr(missing, "404"));
    free(missing);

    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
    unlink(audit_path);
}

/* Denied topics are left out of an all-topics Metadata answer. */
static void test_metadata_hides_denied_topics(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", "plugin.test_authz.deny.topics=hidden",
                        NULL};
    broker_start(&b, ov);
    rk_create_topic(broker_bootstrap(&b), "visible", 1, NULL);
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&b), NULL);
    char errstr[512];
    rd_kafka_resp_err_t created = rk_create_topic_result(rk, "hidden", 1, 1, NULL, false, errstr, sizeof errstr);
    assert_int_equal(created, RD_KAFKA_RESP_ERR_NO_ERROR);
    const struct rd_kafka_metadata *md = NULL;
    assert_int_equal(rd_kafka_metadata(rk, 1, NULL, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    bool saw_visible = false, saw_hidden = false;
    for (int i = 0; i < md->topic_cnt; i++) {
        if (strcmp(md->topics[i].topic, "visible") == 0)
            saw_visible = true;
        if (strcmp(md->topics[i].topic, "hidden") == 0)
            saw_hidden = true;
    }
    rd_kafka_metadata_destroy(md);
    rk_producer_destroy(rk);
    assert_true(saw_visible);
    assert_false(saw_hidden);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* A quota plugin's throttle lands in throttle_time_ms and mutes the
 * connection for that long. */
static void test_quota_throttles(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz", "plugin.test_authz.throttle.ms=700",
                        NULL};
    broker_start(&b, ov);
    rk_create_topic(broker_bootstrap(&b), "throttled", 1, NULL);
    int fd = raw_connect(broker_port(&b), 10000);
    assert_true(fd >= 0);
    struct produce_answer a;
    produce_raw(fd, "throttled", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.throttle_ms, 700);
    /* The next request on this connection waits out the throttle. */
    long long start = harness_now_ms();
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(fd, 0, 7, &v), 0);
    long long waited = harness_now_ms() - start;
    close(fd);
    if (waited < 500)
        fprintf(stderr, "answered after %lld ms\n", waited);
    assert_true(waited >= 500);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_no_plugins_allows_everything(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, NULL);
    rk_create_topic(broker_bootstrap(&b), "secret", 1, NULL);
    struct produce_answer a = produce_once(&b, "secret");
    assert_int_equal(a.error, 0);
    assert_int_equal(a.throttle_ms, 0);
    assert_int_equal(rk_produce_one(&b, "secret"), RD_KAFKA_RESP_ERR_NO_ERROR);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authorizer_audit_and_metrics),
        cmocka_unit_test(test_metadata_hides_denied_topics),
        cmocka_unit_test(test_quota_throttles),
        cmocka_unit_test(test_no_plugins_allows_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
