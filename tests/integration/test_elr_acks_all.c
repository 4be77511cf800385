/* The errors an acks=all producer gets with Eligible Leader Replicas on,
 * between three cairnd processes (process.roles=broker,controller on one
 * quorum). Topic "ea" has two replicas {A, B} and min.insync.replicas=2.
 * B is paused (SIGSTOP) until the leader A drops it from the ISR:
 *  - a produce sent to A while B is still an ISR member is appended and
 *    waits; the ISR shrinks to {A} under it, and KIP-966's rule holds the
 *    high watermark at the minimum, so it answers REQUEST_TIMED_OUT at its
 *    timeout (Kafka's DelayedProduce the same: maybeIncrementLeaderHW does
 *    nothing while isUnderMinIsr, and checkEnoughReplicasReachOffset names
 *    NOT_ENOUGH_REPLICAS_AFTER_APPEND only once the high watermark passed
 *    the batch). Raw Produce, to see the broker's own code;
 *  - with the ISR {A}, a librdkafka acks=all producer without retries gets
 *    NOT_ENOUGH_REPLICAS at once, refused before the append: an acks=1
 *    record then takes the offset after the parked one;
 *  - B resumed and back in the ISR, acks=all is acknowledged again and the
 *    high watermark passes everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/create_topics_request.h"
#include "protocol/generated/errors.h"

#define CLUSTER_ID "RWxyQWNrc0FsbEJlbG93IQ"
#define ACKED 50

/* The partition as node sees it once it has a leader and isr_count
 * in-sync replicas (the first being first, unless it is -1). */
static struct partition_view wait_isr(struct cluster *c, int node, int isr_count, int32_t first)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        struct view v;
        if (metadata(c, node, "ea", &v) && v.partitions > 0 && v.p[0].leader > 0 && v.p[0].isr_count == isr_count &&
            (first < 0 || v.p[0].isr[0] == first))
            return v.p[0];
        if (harness_now_ms() > deadline)
            fail_msg("ea-0 at node %d never had %d in-sync replica(s)", node, isr_count);
        usleep(100 * 1000);
    }
}

/* One Produce v7 of a one-record batch to ea-0 at node (timeout 10 s in
 * the request); returns the partition's error code, *base_offset its
 * offset. */
static int16_t raw_produce(struct cluster *c, int32_t node, int16_t acks, int64_t *base_offset)
{
    static int32_t correlation = 700;
    correlation++;
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record rec = {"k", "v"};
    raw_build_record_batch(&batch, 1700000000000LL, &rec, 1);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, correlation, "elr-acks-all");
    raw_put_produce_body(&w, NULL, acks, "ea", 0, batch.data, batch.len);
    raw_writer_free(&batch);
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = raw_exchange(broker_port(&c->nodes[node - 1]), &w, correlation, false, 60000, &frame, &r);
    if (rc != 0)
        fail_msg("Produce acks=%d to node %d: no answer (rc %d)", acks, (int)node, rc);
    int32_t topics = raw_get_i32(&r);
    raw_skip_string(&r);
    int32_t partitions = raw_get_i32(&r);
    raw_get_i32(&r); /* partition index */
    int16_t error = raw_get_i16(&r);
    *base_offset = raw_get_i64(&r);
    assert_false(r.overflow);
    assert_int_equal(topics, 1);
    assert_int_equal(partitions, 1);
    free(frame);
    return error;
}

/* One record through a librdkafka producer with acks=all and no retries:
 * the delivery report carries the broker's first answer. */
static rd_kafka_resp_err_t rk_acks_all_once(struct cluster *c, int32_t node)
{
    const char *conf[] = {"enable.idempotence", "false", "acks", "all", "retries", "0", "request.timeout.ms", "5000",
                          "message.timeout.ms", "9000",  NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c->nodes[node - 1]), conf);
    rd_kafka_resp_err_t err = rk_produce_one_delivered(rk, "ea");
    rk_producer_destroy(rk);
    return err;
}

static int64_t high_watermark(struct cluster *c, int32_t node)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&c->nodes[node - 1]), NULL);
    int64_t low = -1, high = -1;
    assert_int_equal(rd_kafka_query_watermark_offsets(rk, "ea", 0, &low, &high, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
    return high;
}

static void test_acks_all_errors_below_min_isr(void **state)
{
    (void)state;
    struct cluster c;
    const char *extra[] = {"replica.lag.time.max.ms=2000", "eligible.leader.replicas.enable=true", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, extra);
    create_topic_min_isr(&c, "ea", 2, "2");
    struct partition_view p = wait_isr(&c, 1, 2, -1);
    int32_t a = p.leader, b = p.isr[0] == a ? p.isr[1] : p.isr[0];
    produce_acked(broker_bootstrap(&c.nodes[a - 1]), "ea", 1, ACKED);

    /* B stops fetching while still in the ISR: this produce is appended
     * (at offset ACKED) and waits; the ISR shrinks below the minimum under
     * it, which holds the high watermark, so the wait ends at the timeout. */
    assert_int_equal(kill(c.nodes[b - 1].pid, SIGSTOP), 0);
    int64_t offset = -1;
    int16_t code = raw_produce(&c, a, -1, &offset);
    if (code != KAFKA_ERR_REQUEST_TIMED_OUT)
        fail_msg("acks=all appended at the minimum, ISR shrunk under it: error %d, expected REQUEST_TIMED_OUT",
                 (int)code);
    wait_isr(&c, a, 1, a); /* the leader's own image: what its produce check reads */
    assert_int_equal(high_watermark(&c, a), ACKED);

    /* The ISR {A} below the minimum: refused before the append. */
    rd_kafka_resp_err_t err = rk_acks_all_once(&c, a);
    if (err != RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS)
        fail_msg("acks=all with ISR {%d} below min.insync.replicas=2: %s, expected NOT_ENOUGH_REPLICAS", (int)a,
                 rd_kafka_err2name(err));
    assert_int_equal(raw_produce(&c, a, 1, &offset), KAFKA_ERR_NONE);
    assert_int_equal(offset, ACKED + 1); /* after the parked record, nothing between */
    assert_int_equal(high_watermark(&c, a), ACKED);

    assert_int_equal(kill(c.nodes[b - 1].pid, SIGCONT), 0);
    wait_isr(&c, a, 2, -1);
    long long deadline = harness_now_ms() + 60000;
    while ((err = rk_acks_all_once(&c, a)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (harness_now_ms() > deadline)
            fail_msg("acks=all with the ISR back at two: %s", rd_kafka_err2name(err));
        usleep(200 * 1000);
    }
    assert_true(high_watermark(&c, a) >= ACKED + 3);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acks_all_errors_below_min_isr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
