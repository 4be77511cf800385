/* kill -9 of a broker under continuous acks=all production with
 * log.flush.interval.messages=1: after a restart every record whose
 * delivery report said success is present exactly once, in production
 * order, at the offset the report gave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CR_PARTITIONS 3
#define CR_MAX_MESSAGES 600000L
#define CR_KILL_AFTER_DELIVERED 20000L /* successes before the kill */
#define CR_STOP_AFTER_RESTART 10000L   /* successes after the restart */
#define CR_TOPIC "crash"

static void cr_value(long seq, char *out, size_t outlen, size_t *len)
{
    int n = snprintf(out, outlen, "crash|%ld|", seq);
    size_t total = 64 + (size_t)(seq % 64);
    for (size_t i = (size_t)n; i < total && i < outlen; i++)
        out[i] = (char)('A' + (seq + (long)i) % 26);
    *len = total < outlen ? total : outlen;
}

static long cr_parse_seq(const rd_kafka_message_t *m)
{
    char text[32];
    size_t n = m->len < sizeof(text) - 1 ? m->len : sizeof(text) - 1;
    memcpy(text, m->payload, n);
    text[n] = '\0';
    long seq;
    if (sscanf(text, "crash|%ld|", &seq) != 1)
        return -1;
    return seq;
}

/* What a consumer saw of one partition, in offset order. */
struct cr_consumed {
    int64_t *offsets[CR_PARTITIONS];
    long *seqs[CR_PARTITIONS];
    long count[CR_PARTITIONS];
    long cap[CR_PARTITIONS];
};

static bool cr_collect(const rd_kafka_message_t *m, void *ctx)
{
    struct cr_consumed *c = ctx;
    int p = m->partition;
    if (c->count[p] == c->cap[p]) {
        long cap = c->cap[p] ? c->cap[p] * 2 : 4096;
        c->offsets[p] = realloc(c->offsets[p], (size_t)cap * sizeof(int64_t));
        c->seqs[p] = realloc(c->seqs[p], (size_t)cap * sizeof(long));
        if (!c->offsets[p] || !c->seqs[p])
            fail_msg("out of memory");
        c->cap[p] = cap;
    }
    c->offsets[p][c->count[p]] = m->offset;
    c->seqs[p][c->count[p]] = cr_parse_seq(m);
    c->count[p]++;
    return true;
}

static void test_kill9_under_load_keeps_acknowledged_records(void **state)
{
    struct test_broker *b = *state;
    rk_create_topic(broker_bootstrap(b), CR_TOPIC, CR_PARTITIONS, NULL);

    /* No retries and one request in flight: an acknowledged record was
     * written exactly once, and log order equals production order. */
    const char *conf[] = {"acks",
                          "all",
                          "message.send.max.retries",
                          "0",
                          "max.in.flight.requests.per.connection",
                          "1",
                          "linger.ms",
                          "2",
                          "message.timeout.ms",
                          "15000",
                          "reconnect.backoff.ms",
                          "50",
                          "reconnect.backoff.max.ms",
                          "500",
                          "enable.idempotence",
                          "false",
                          NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    struct rk_delivery_slot *slots = calloc(CR_MAX_MESSAGES, sizeof(*slots));
    assert_non_null(slots);
    struct rk_delivery_stats *stats = rk_producer_stats(rk);

    long seq = 0;
    long delivered_at_kill = -1;
    long long deadline = harness_now_ms() + 90000;
    while (seq < CR_MAX_MESSAGES && harness_now_ms() < deadline) {
        char value[160];
        size_t len;
        cr_value(seq, value, sizeof(value), &len);
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, CR_TOPIC, (int32_t)(seq % CR_PARTITIONS), NULL, 0, value, len,
                                                      0, NULL, &slots[seq]);
        if (err)
            fail_msg("enqueue seq %ld: %s", seq, rd_kafka_err2str(err));
        seq++;
        if ((seq & 255) == 0)
            rd_kafka_poll(rk, 0);
        if (delivered_at_kill < 0 && stats->delivered >= CR_KILL_AFTER_DELIVERED) {
            delivered_at_kill = stats->delivered;
            fprintf(stderr, "[crash] kill -9 after %ld delivered, %ld enqueued\n", delivered_at_kill, seq);
            broker_kill9(b);
            broker_restart(b);
        }
        if (delivered_at_kill >= 0 && stats->delivered >= delivered_at_kill + CR_STOP_AFTER_RESTART)
            break;
    }
    rd_kafka_flush(rk, 30000);
    long produced = seq;
    long delivered = stats->delivered, failed = stats->failed;
    fprintf(stderr, "[crash] enqueued %ld, delivered %ld, failed %ld (first error: %s)\n", produced, delivered, failed,
            failed ? stats->first_error_text : "none");
    rk_producer_destroy(rk);
    if (delivered_at_kill < 0)
        fail_msg("only %ld records delivered before the deadline; the kill never happened", delivered);
    if (delivered < delivered_at_kill + CR_STOP_AFTER_RESTART)
        fail_msg("producer made no progress after the restart: %ld delivered in total", delivered);

    long want[CR_PARTITIONS] = {0};
    for (long s = 0; s < produced; s++)
        if (slots[s].done && slots[s].err == RD_KAFKA_RESP_ERR_NO_ERROR)
            want[s % CR_PARTITIONS]++;

    /* A second restart proves recovery does not depend on the process
     * that accepted the records. */
    broker_stop(b);
    broker_restart(b);
    struct cr_consumed consumed;
    memset(&consumed, 0, sizeof(consumed));
    long got = rk_consume_each(broker_bootstrap(b), CR_TOPIC, CR_PARTITIONS, want, 60000, cr_collect, &consumed);
    assert_true(got >= 0);

    /* Per partition: contiguous offsets, each record at most once, in
     * production order; remember where every sequence number was seen. */
    int64_t *seen_at = malloc((size_t)produced * sizeof(int64_t));
    assert_non_null(seen_at);
    for (long s = 0; s < produced; s++)
        seen_at[s] = -1;
    for (int p = 0; p < CR_PARTITIONS; p++) {
        long last_seq = -1;
        for (long i = 0; i < consumed.count[p]; i++) {
            long s = consumed.seqs[p][i];
            int64_t offset = consumed.offsets[p][i];
            if (offset != i)
                fail_msg("partition %d: record #%ld has offset %" PRId64, p, i, offset);
            if (s < 0 || s >= produced || s % CR_PARTITIONS != p)
                fail_msg("partition %d offset %" PRId64 ": foreign record (seq %ld)", p, offset, s);
            if (seen_at[s] >= 0)
                fail_msg("seq %ld appears twice (offsets %" PRId64 " and %" PRId64 ")", s, seen_at[s], offset);
            if (s <= last_seq)
                fail_msg("partition %d: seq %ld after seq %ld (out of order)", p, s, last_seq);
            seen_at[s] = offset;
            last_seq = s;
        }
    }
    long acknowledged = 0, unacknowledged_present = 0;
    for (long s = 0; s < produced; s++) {
        bool acked = slots[s].done && slots[s].err == RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!acked) {
            unacknowledged_present += seen_at[s] >= 0;
            continue;
        }
        acknowledged++;
        if (seen_at[s] < 0)
            fail_msg("acknowledged seq %ld (partition %d offset %" PRId64 ") is missing", s, slots[s].partition,
                     slots[s].offset);
        if (seen_at[s] != slots[s].offset)
            fail_msg("seq %ld acknowledged at offset %" PRId64 " but read at %" PRId64, s, slots[s].offset, seen_at[s]);
    }
    fprintf(stderr, "[crash] %ld acknowledged records all present; %ld unacknowledged ones also written\n",
            acknowledged, unacknowledged_present);
    assert_int_equal(acknowledged, delivered);

    for (int p = 0; p < CR_PARTITIONS; p++) {
        free(consumed.offsets[p]);
        free(consumed.seqs[p]);
    }
    free(seen_at);
    free(slots);
    broker_mark_passed(b);
}

static int cr_setup(void **state)
{
    static struct test_broker broker;
    /* Several recovery threads: every other restarting test uses one. */
    const char *overrides[] = {"log.flush.interval.messages=1", "num.recovery.threads.per.data.dir=4", NULL};
    *state = &broker;
    broker_start(&broker, overrides);
    return 0;
}

static int cr_teardown(void **state)
{
    broker_cleanup(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill9_under_load_keeps_acknowledged_records, cr_setup, cr_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
