/* remote.storage.enable=true on a topic of a broker without
 * remote.log.storage.system.enable is refused, as Kafka refuses it (KIP-405):
 * INVALID_CONFIG naming the broker key, from CreateTopics, AlterConfigs and
 * IncrementalAlterConfigs alike; nothing is created or changed. The same
 * requests with remote.storage.enable=false go through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define BROKER_KEY "remote.log.storage.system.enable"

/* Runs AlterConfigs (replacing the topic's configs) with one key; returns
 * the resource's error and its message in errstr. */
static rd_kafka_resp_err_t alter_one(rd_kafka_t *rk, const char *topic, const char *name, const char *value,
                                     char *errstr, size_t errlen)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_ConfigResource_set_config(cr, name, value);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, NULL, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    if (!ev)
        fail_msg("AlterConfigs %s: no answer in 20 s", topic);
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    snprintf(errstr, errlen, "%s", err ? rd_kafka_event_error_string(ev) : "");
    if (!err) {
        size_t count = 0;
        const rd_kafka_ConfigResource_t **res = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &count);
        assert_int_equal(count, 1);
        err = rd_kafka_ConfigResource_error(res[0]);
        const char *msg = rd_kafka_ConfigResource_error_string(res[0]);
        snprintf(errstr, errlen, "%s", msg ? msg : "");
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_ConfigResource_destroy(cr);
    return err;
}

/* One IncrementalAlterConfigs v0 SET on a topic, sent raw (the librdkafka
 * of the tests predates the call); returns the error, msg the message. */
static int16_t incremental_set(const struct test_broker *b, const char *topic, const char *name, const char *value,
                               char *msg, size_t msglen)
{
    int fd = raw_connect(broker_port(b), 5000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 44, 0, 7, "cairn-it");
    raw_put_i32(&w, 1); /* resources */
    raw_put_i8(&w, 2);  /* topic */
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1); /* configs */
    raw_put_string(&w, name);
    raw_put_i8(&w, 0); /* SET */
    raw_put_string(&w, value);
    raw_put_i8(&w, 0); /* validate_only */
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no IncrementalAlterConfigs answer (rc %d)", rc);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), 7); /* correlation id */
    raw_get_i32(&r);                      /* throttle */
    assert_int_equal(raw_get_i32(&r), 1); /* one resource */
    int16_t error = raw_get_i16(&r);
    int16_t mlen = raw_get_i16(&r);
    msg[0] = '\0';
    if (mlen > 0 && (size_t)mlen <= r.len - r.pos)
        snprintf(msg, msglen, "%.*s", (int)mlen, (const char *)r.data + r.pos);
    free(frame);
    return error;
}

static void test_remote_storage_needs_broker_key(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL); /* remote.log.storage.system.enable defaults to false */
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), NULL);
    char err[512];

    assert_int_equal(rk_create_topic_result(rk, "tiered-refused", 1, 1,
                                            (const char *const[]){"remote.storage.enable", "true", NULL}, false, err,
                                            sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("CreateTopics message does not name " BROKER_KEY ": %s", err);
    /* Nothing was created: the name is still free. */
    assert_int_equal(rk_create_topic_result(rk, "tiered-refused", 1, 1,
                                            (const char *const[]){"remote.storage.enable", "false", NULL}, false, err,
                                            sizeof err),
                     RD_KAFKA_RESP_ERR_NO_ERROR);

    assert_int_equal(alter_one(rk, "tiered-refused", "remote.storage.enable", "true", err, sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("AlterConfigs message does not name " BROKER_KEY ": %s", err);
    assert_int_equal(incremental_set(b, "tiered-refused", "remote.storage.enable", "TRUE", err, sizeof err),
                     RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    if (!strstr(err, BROKER_KEY))
        fail_msg("IncrementalAlterConfigs message does not name " BROKER_KEY ": %s", err);
    /* Other changes still go through. */
    assert_int_equal(alter_one(rk, "tiered-refused", "retention.ms", "3600000", err, sizeof err),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(incremental_set(b, "tiered-refused", "remote.storage.enable", "false", err, sizeof err), 0);
    rk_producer_destroy(rk);
    broker_mark_passed(b);
}

static int setup(void **state)
{
    struct test_broker *b = calloc(1, sizeof *b);
    assert_non_null(b);
    *state = b;
    return 0;
}

static int teardown(void **state)
{
    struct test_broker *b = *state;
    broker_cleanup(b);
    free(b);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_remote_storage_needs_broker_key, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
