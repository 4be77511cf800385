/* A broker whose log dir fills up: producers get KAFKA_STORAGE_ERROR, the
 * process keeps running and answering, nothing acknowledged is lost, no
 * part of a failed batch becomes visible, and after the operator frees
 * space and restarts the broker, the partition serves and accepts writes
 * again (after a clean stop and after kill -9).
 *
 * The log dir is a small tmpfs mounted by the test (needs root; the test
 * is skipped otherwise). It is always unmounted by the group teardown,
 * with an atexit fallback for paths that leave cmocka early. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define DF_TOPIC "diskfull"
#define DF_SIDE_TOPIC "diskfull_side"
#define DF_SIDE_RECORDS 50
#define DF_VALUE_BYTES 1000
#define DF_MAX_MESSAGES 60000L /* ~60 MB: well past a 24 MiB tmpfs */
#define DF_ROUND 500           /* messages produced before waiting for reports */
#define DF_AFTER_RESTART 200
#define DF_REFILL_LIMIT 50000L /* records tried after a restart on the full disk */
/* Every record the test produces, with slack for the short rounds. */
#define DF_ACKED_CAPACITY (DF_MAX_MESSAGES + DF_REFILL_LIMIT + DF_AFTER_RESTART + 1000)

/* The mount the whole group shares; touched only by the main thread. */
static char df_mount_dir[256];
static bool df_mounted;
static bool df_mount_denied;
/* Global so the group teardown can stop it before unmounting. */
static struct test_broker df_broker;

static void df_unmount(void)
{
    if (df_mounted) {
        if (umount(df_mount_dir) != 0)
            (void)umount2(df_mount_dir, MNT_DETACH);
        df_mounted = false;
    }
    if (df_mount_dir[0]) {
        (void)rmdir(df_mount_dir);
        df_mount_dir[0] = '\0';
    }
}

static int df_group_setup(void **state)
{
    (void)state;
    snprintf(df_mount_dir, sizeof df_mount_dir, "/tmp/cairn-diskfull-XXXXXX");
    if (!mkdtemp(df_mount_dir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    atexit(df_unmount);
    if (mount("tmpfs", df_mount_dir, "tmpfs", 0, "size=24m") != 0) {
        if (errno == EPERM) {
            df_mount_denied = true;
            return 0;
        }
        fprintf(stderr, "mount tmpfs on %s: %s\n", df_mount_dir, strerror(errno));
        return -1;
    }
    df_mounted = true;
    return 0;
}

static int df_group_teardown(void **state)
{
    (void)state;
    if (df_broker.starts > 0)
        broker_cleanup(&df_broker);
    df_unmount();
    return 0;
}

static void df_value(long seq, char *out, size_t *len)
{
    int n = snprintf(out, DF_VALUE_BYTES, "df|%ld|", seq);
    /* Varied bytes so nothing compresses the disk out of being full. */
    uint32_t x = (uint32_t)seq * 2654435761u + 1;
    for (size_t i = (size_t)n; i < DF_VALUE_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out[i] = (char)('!' + x % 90);
    }
    *len = DF_VALUE_BYTES;
}

/* What the producer was told, in production order. */
struct df_acked {
    long *seqs;
    int64_t *offsets;
    long count;
};

/* Checks a consumed record against the next acknowledged one. */
struct df_verify {
    const struct df_acked *acked;
    long next;
};

static bool df_verify_record(const rd_kafka_message_t *m, void *ctx)
{
    struct df_verify *v = ctx;
    if (v->next >= v->acked->count) {
        fprintf(stderr, "record at offset %" PRId64 " was never acknowledged\n", m->offset);
        return false;
    }
    char want[DF_VALUE_BYTES];
    size_t want_len;
    df_value(v->acked->seqs[v->next], want, &want_len);
    if (m->offset != v->acked->offsets[v->next] || m->len != want_len || memcmp(m->payload, want, want_len) != 0) {
        fprintf(stderr, "record %ld: offset %" PRId64 " (want %" PRId64 "), %zu bytes, wanted seq %ld\n", v->next,
                m->offset, v->acked->offsets[v->next], m->len, v->acked->seqs[v->next]);
        return false;
    }
    v->next++;
    return true;
}

static void df_expect_exactly_acked(struct test_broker *b, const struct df_acked *acked)
{
    struct df_verify v = {.acked = acked, .next = 0};
    long want = acked->count;
    long got = rk_consume_each(broker_bootstrap(b), DF_TOPIC, 1, &want, 30000, df_verify_record, &v);
    if (got != acked->count || v.next != acked->count) {
        broker_print_log_tail(b, 30);
        fail_msg("read back %ld records (%ld matched), %ld were acknowledged", got, v.next, acked->count);
    }
}

/* Produces seq [first, first+n) and waits for every report; appends the
 * successes to acked. Returns how many failed; *first_err gets the first
 * failure's code. */
static long df_produce_round(rd_kafka_t *rk, long first, long n, struct df_acked *acked, rd_kafka_resp_err_t *first_err,
                             long *other_errors)
{
    struct rk_delivery_slot *slots = calloc((size_t)n, sizeof *slots);
    assert_non_null(slots);
    char value[DF_VALUE_BYTES];
    for (long i = 0; i < n; i++) {
        size_t len;
        df_value(first + i, value, &len);
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, DF_TOPIC, 0, NULL, 0, value, len, 0, NULL, &slots[i]);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
            fail_msg("enqueue: %s", rd_kafka_err2str(err));
    }
    if (rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("delivery reports did not arrive within 60 s");
    long failed = 0;
    for (long i = 0; i < n; i++) {
        assert_true(slots[i].done);
        if (slots[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            acked->seqs[acked->count] = first + i;
            acked->offsets[acked->count] = slots[i].offset;
            acked->count++;
            continue;
        }
        if (failed++ == 0)
            *first_err = slots[i].err;
        if (slots[i].err != RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR) {
            if (*other_errors == 0)
                fprintf(stderr, "record %ld failed with %s\n", first + i, rd_kafka_err2str(slots[i].err));
            (*other_errors)++;
        }
    }
    free(slots);
    return failed;
}

static rd_kafka_t *df_producer(struct test_broker *b)
{
    const char *conf[] = {"acks",
                          "all",
                          "retries",
                          "2",
                          "retry.backoff.ms",
                          "100",
                          "message.timeout.ms",
                          "15000",
                          "linger.ms",
                          "5",
                          "enable.idempotence",
                          "false",
                          NULL};
    return rk_producer_new(broker_bootstrap(b), conf);
}

static void df_produce_side_topic(struct test_broker *b)
{
    rd_kafka_t *rk = df_producer(b);
    for (int i = 0; i < DF_SIDE_RECORDS; i++) {
        char value[32];
        int n = snprintf(value, sizeof value, "side-%d", i);
        assert_int_equal(rk_produce_blocking(rk, DF_SIDE_TOPIC, 0, NULL, 0, value, (size_t)n, 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(rk)->delivered, DF_SIDE_RECORDS);
    rk_producer_destroy(rk);
}

static void test_disk_full_keeps_acknowledged_records(void **state)
{
    (void)state;
    if (df_mount_denied) {
        fprintf(stderr, "skipped: mounting a tmpfs needs root (mount: EPERM)\n");
        skip();
    }

    char data_dir[400], log_dirs[420];
    snprintf(data_dir, sizeof data_dir, "%s/data", df_mount_dir);
    assert_int_equal(mkdir(data_dir, 0755), 0);
    snprintf(log_dirs, sizeof log_dirs, "log.dirs=%s", data_dir);
    const char *overrides[] = {log_dirs, "log.segment.bytes=1048576", NULL};
    broker_start(&df_broker, overrides);
    rk_create_topic(broker_bootstrap(&df_broker), DF_TOPIC, 1, NULL);
    rk_create_topic(broker_bootstrap(&df_broker), DF_SIDE_TOPIC, 1, NULL);
    df_produce_side_topic(&df_broker);

    struct df_acked acked = {
        .seqs = calloc(DF_ACKED_CAPACITY, sizeof(long)),
        .offsets = calloc(DF_ACKED_CAPACITY, sizeof(int64_t)),
    };
    assert_non_null(acked.seqs);
    assert_non_null(acked.offsets);

    /* Fill the disk until reports fail. */
    rd_kafka_t *rk = df_producer(&df_broker);
    rd_kafka_resp_err_t first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    long failed = 0, other_errors = 0, next_seq = 0;
    while (failed == 0 && next_seq < DF_MAX_MESSAGES) {
        failed = df_produce_round(rk, next_seq, DF_ROUND, &acked, &first_err, &other_errors);
        next_seq += DF_ROUND;
    }
    if (failed == 0)
        fail_msg("%ld records fit on a 24 MiB disk", next_seq);
    /* Writes after the failure fail too, and fast, with the same error. */
    long failed_again = df_produce_round(rk, next_seq, 20, &acked, &first_err, &other_errors);
    next_seq += 20;
    rk_producer_destroy(rk);
    fprintf(stderr, "disk full after %ld acknowledged records; %ld + %ld failed\n", acked.count, failed, failed_again);
    assert_int_equal(failed_again, 20);
    if (other_errors != 0 || first_err != RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR)
        fail_msg("%ld failures were not KAFKA_STORAGE_ERROR (first: %s)", other_errors, rd_kafka_err2str(first_err));
    assert_true(acked.count > 1000);

    /* The broker is alive, says why in its log, and still serves. */
    assert_true(broker_alive(&df_broker));
    if (!broker_log_contains(&df_broker, "partition is offline") ||
        !broker_log_contains(&df_broker, strerror(ENOSPC))) {
        broker_print_log_tail(&df_broker, 30);
        fail_msg("the broker log does not say the partition went offline for lack of space");
    }
    rd_kafka_t *meta_rk = df_producer(&df_broker);
    const struct rd_kafka_metadata *md = NULL;
    assert_int_equal(rd_kafka_metadata(meta_rk, 1, NULL, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    bool listed = false;
    for (int i = 0; i < md->topic_cnt; i++)
        listed |= strcmp(md->topics[i].topic, DF_TOPIC) == 0;
    assert_true(listed);
    assert_int_equal(md->broker_cnt, 1);
    rd_kafka_metadata_destroy(md);
    rk_producer_destroy(meta_rk);
    /* A partition that did not fail still serves reads. */
    long side_want = DF_SIDE_RECORDS;
    struct rk_record_set side = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&df_broker), DF_SIDE_TOPIC, 1, &side_want, 20000, &side),
                     DF_SIDE_RECORDS);
    rk_record_set_free(&side);

    /* A restart on the still-full disk: the log loads and serves reads;
     * writes take what little space the undone write left, then fail the
     * same way. */
    broker_kill9(&df_broker);
    broker_restart(&df_broker);
    df_expect_exactly_acked(&df_broker, &acked);
    rk = df_producer(&df_broker);
    first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    failed = 0;
    long full_again_at = next_seq + DF_REFILL_LIMIT;
    while (failed == 0 && next_seq < full_again_at) {
        failed = df_produce_round(rk, next_seq, 20, &acked, &first_err, &other_errors);
        next_seq += 20;
    }
    rk_producer_destroy(rk);
    if (failed == 0)
        fail_msg("%ld more records fit on the full disk", DF_REFILL_LIMIT);
    assert_int_equal(other_errors, 0);
    assert_int_equal(first_err, RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR);
    assert_true(broker_alive(&df_broker));

    /* The operator adds space and restarts: everything acknowledged, and
     * nothing else, is there; the partition takes writes again. */
    if (mount("tmpfs", df_mount_dir, "tmpfs", MS_REMOUNT, "size=128m") != 0)
        fail_msg("remount %s: %s", df_mount_dir, strerror(errno));
    broker_stop(&df_broker);
    broker_restart(&df_broker);
    df_expect_exactly_acked(&df_broker, &acked);
    /* The failed write was undone at once: recovery found nothing to cut. */
    if (broker_log_contains(&df_broker, "invalid bytes")) {
        broker_print_log_tail(&df_broker, 30);
        fail_msg("the failed write left bytes in the segment");
    }

    rk = df_producer(&df_broker);
    first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
    long before = acked.count;
    assert_int_equal(df_produce_round(rk, next_seq, DF_AFTER_RESTART / 2, &acked, &first_err, &other_errors), 0);
    next_seq += DF_AFTER_RESTART / 2;
    rk_producer_destroy(rk);
    assert_int_equal(acked.count, before + DF_AFTER_RESTART / 2);
    df_expect_exactly_acked(&df_broker, &acked);

    /* And after a hard kill, too. */
    broker_kill9(&df_broker);
    broker_restart(&df_broker);
    df_expect_exactly_acked(&df_broker, &acked);
    rk = df_producer(&df_broker);
    assert_int_equal(df_produce_round(rk, next_seq, DF_AFTER_RESTART / 2, &acked, &first_err, &other_errors), 0);
    rk_producer_destroy(rk);
    df_expect_exactly_acked(&df_broker, &acked);

    broker_stop(&df_broker);
    free(acked.seqs);
    free(acked.offsets);
    broker_mark_passed(&df_broker);
    broker_cleanup(&df_broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disk_full_keeps_acknowledged_records),
    };
    return cmocka_run_group_tests(tests, df_group_setup, df_group_teardown);
}
