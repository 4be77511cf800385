/* Topic config changes the config tests share (see topic_configs.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "raw_kafka.h"
#include "rk_helpers.h"
#include "topic_configs.h"

rd_kafka_resp_err_t alter_topic_configs(rd_kafka_t *rk, const char *topic, const struct alter_kv *kvs, int n,
                                        bool validate_only, char *errstr, size_t errlen)
{
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    for (int i = 0; i < n; i++)
        rd_kafka_ConfigResource_set_config(cr, kvs[i].name, kvs[i].value);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
    char e[256];
    if (validate_only)
        rd_kafka_AdminOptions_set_validate_only(opts, 1, e, sizeof e);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, opts, queue);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(queue, 20000);
    if (!ev)
        fail_msg("AlterConfigs %s: no answer in 20 s", topic);
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    snprintf(errstr, errlen, "%s", err ? rd_kafka_event_error_string(ev) : "");
    if (!err) {
        size_t count = 0;
        const rd_kafka_ConfigResource_t **res = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &count);
        if (count != 1)
            fail_msg("AlterConfigs %s: %zu resources in the answer", topic, count);
        err = rd_kafka_ConfigResource_error(res[0]);
        const char *msg = rd_kafka_ConfigResource_error_string(res[0]);
        snprintf(errstr, errlen, "%s", msg ? msg : "");
    }
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(queue);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_ConfigResource_destroy(cr);
    return err;
}

int16_t incremental_alter(int port, const char *topic, const char *name, int8_t op, const char *value, char *msg,
                          size_t msglen)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 44, 0, 7, "cairn-it");
    raw_put_i32(&w, 1); /* resources */
    raw_put_i8(&w, 2);  /* topic */
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1); /* configs */
    raw_put_string(&w, name);
    raw_put_i8(&w, op);
    raw_put_string(&w, value);
    raw_put_i8(&w, 0); /* validate_only */
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = raw_exchange(port, &w, 7, false, 10000, &frame, &r);
    if (rc != 0)
        fail_msg("no IncrementalAlterConfigs answer (rc %d)", rc);
    raw_get_i32(&r);                      /* throttle */
    assert_int_equal(raw_get_i32(&r), 1); /* one resource */
    int16_t error = raw_get_i16(&r);
    int16_t mlen = raw_get_i16(&r);
    msg[0] = '\0';
    if (mlen > 0 && (size_t)mlen <= r.len - r.pos) {
        snprintf(msg, msglen, "%.*s", (int)mlen, (const char *)r.data + r.pos);
        raw_skip(&r, (size_t)mlen);
    }
    assert_int_equal(raw_get_i8(&r), 2);
    raw_skip_string(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

rd_kafka_resp_err_t rk_set_topic_config(rd_kafka_t *rk, const char *topic, const char *key, const char *value)
{
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    assert_int_equal(rd_kafka_ConfigResource_set_config(res, key, value), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, 30000);
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    size_t n = 0;
    const rd_kafka_ConfigResource_t **out = rd_kafka_AlterConfigs_result_resources(
        rd_kafka_event_AlterConfigs_result(ev), &n);
    if (!err)
        err = n == 1 ? rd_kafka_ConfigResource_error(out[0]) : RD_KAFKA_RESP_ERR__BAD_MSG;
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(res);
    return err;
}
