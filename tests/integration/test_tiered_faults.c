/* Tiered storage faults against a real cairnd with the storage-local
 * plugin: a corrupt or missing remote object answers the retriable
 * KAFKA_STORAGE_ERROR and counts in a metric, never serving wrong bytes, and
 * is served again once repaired; a store outage keeps produce working, keeps
 * every local segment whose copy has not landed, and copies everything once
 * the store is back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"
#include "tiered_common.h"

/* The remote segment file based at `base` (a path into out). */
static void remote_segment_file(const struct tiered_state *st, int64_t base, char *out, size_t outlen)
{
    char remote[1200], prefix[32];
    assert_true(remote_partition_dir(st, remote, sizeof remote));
    snprintf(prefix, sizeof prefix, "%020lld-", (long long)base);
    DIR *d = opendir(remote);
    assert_non_null(d);
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && l > 4 && strcmp(e->d_name + l - 4, ".log") == 0) {
            snprintf(out, outlen, "%s/%s", remote, e->d_name);
            found = true;
        }
    }
    closedir(d);
    assert_true(found);
}

/* Flips one byte in the middle of a file (twice: back as it was). */
static void flip_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long mid = ftell(f) / 2;
    assert_int_equal(fseek(f, mid, SEEK_SET), 0);
    int c = fgetc(f);
    assert_true(c != EOF);
    assert_int_equal(fseek(f, mid, SEEK_SET), 0);
    assert_int_equal(fputc(c ^ 0x5a, f), c ^ 0x5a);
    assert_int_equal(fclose(f), 0);
}

/* The first offset of the remote segment holding offset `at`. */
static int64_t remote_base_holding(const struct tiered_state *st, int64_t at)
{
    char remote[1200];
    assert_true(remote_partition_dir(st, remote, sizeof remote));
    DIR *d = opendir(remote);
    assert_non_null(d);
    struct dirent *e;
    long long best = -1;
    while ((e = readdir(d)) != NULL) {
        long long base = strtoll(e->d_name, NULL, 10);
        if (e->d_name[0] != '.' && base > 0 && base <= at && base > best)
            best = base;
    }
    closedir(d);
    assert_true(best > 0);
    return best;
}

static bool accept_any(const rd_kafka_message_t *msg, void *ctx)
{
    (void)msg;
    (void)ctx;
    return true;
}

static bool count_any(const rd_kafka_message_t *msg, void *ctx)
{
    (void)msg;
    (*(long *)ctx)++;
    return true;
}

/* The partition's topic id, from its remote folder's name. */
static void remote_topic_id(const struct tiered_state *st, uint8_t id[16])
{
    char dir[1200];
    assert_true(remote_partition_dir(st, dir, sizeof dir));
    const char *hex = strrchr(dir, '/') + 1;
    assert_int_equal(strlen(hex), 32);
    for (int i = 0; i < 16; i++) {
        unsigned byte = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        id[i] = (uint8_t)byte;
    }
}

/* Fetch v17 from offset 0 (below the local start), retried while the
 * broker is still downloading (an empty answer): the answer's error, and
 * fails the test if any record comes back. */
static int16_t raw_fetch_error_from_zero(const struct tiered_state *st, const uint8_t id[16])
{
    struct raw_session s = {.fd = raw_connect(broker_port(&st->broker), 5000), .correlation = 1};
    assert_true(s.fd >= 0);
    struct raw_fetch_answer a;
    long long deadline = harness_now_ms() + 30000;
    do {
        raw_fetch_v17(&s, id, 0, false, &a);
        assert_int_equal(a.data_records, 0); /* never the bad object's bytes */
    } while (a.error == 0 && harness_now_ms() < deadline);
    close(s.fd);
    return a.error;
}

#define CORRUPT_FETCHES "cairn_remote_errors_total{op=\"fetch\",kind=\"corrupt\"}"
#define MISSING_FETCHES "cairn_remote_errors_total{op=\"fetch\",kind=\"missing\"}"

/* A corrupt remote object and a missing one: a retriable
 * KAFKA_STORAGE_ERROR (56) and a metric, each of its own kind, never wrong
 * bytes; other partitions keep serving; the repaired object is served
 * again. */
static void test_tiered_bad_remote_object(void **state)
{
    struct tiered_state *st = *state;
    start_stamped_round(st);
    char first[1300], second[1300], moved[1400];
    remote_segment_file(st, 0, first, sizeof first);
    /* Far from segment 0, whose reads also read the next one ahead. */
    int64_t second_base = remote_base_holding(st, 1500);
    remote_segment_file(st, second_base, second, sizeof second);
    int64_t corrupt_before = metric_value(st, CORRUPT_FETCHES);
    int64_t missing_before = metric_value(st, MISSING_FETCHES);
    assert_true(corrupt_before >= 0);
    assert_true(missing_before >= 0);

    flip_byte(first);
    int16_t error = 0;
    assert_int_equal(list_offset_raw(st, st->ts_base, &error), -1);
    assert_int_equal(error, 56); /* KAFKA_STORAGE_ERROR */
    /* A consumer from 0 gets nothing (it times out: -1) rather than the
     * flipped bytes: it cannot pass the bad segment, so no record at all. */
    long delivered = 0, want = 1;
    assert_int_equal(rk_consume_each(broker_bootstrap(&st->broker), TOPIC, 1, &want, 6000, count_any, &delivered), -1);
    assert_int_equal(delivered, 0);
    uint8_t id[16];
    remote_topic_id(st, id);
    assert_int_equal(raw_fetch_error_from_zero(st, id), 56); /* KAFKA_STORAGE_ERROR, retriable */
    assert_true(metric_value(st, CORRUPT_FETCHES) > corrupt_before);
    assert_int_equal(metric_value(st, MISSING_FETCHES), missing_before); /* every object is still there */

    /* Missing: the object is gone from the store. */
    snprintf(moved, sizeof moved, "%s.away", second);
    assert_int_equal(rename(second, moved), 0);
    error = 0;
    assert_int_equal(list_offset_raw(st, st->ts_base + 10 * second_base, &error), -1);
    assert_int_equal(error, 56);
    assert_true(metric_value(st, MISSING_FETCHES) > missing_before);

    /* The broker keeps serving other partitions. */
    rk_create_topic(broker_bootstrap(&st->broker), "plain", 1, NULL);
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&st->broker), NULL);
    for (int i = 0; i < 20; i++)
        assert_int_equal(rk_produce_blocking(p, "plain", 0, "k", 1, "v", 1, 0, NULL, NULL), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(p);
    long plain_want = 20;
    assert_int_equal(rk_consume_each(broker_bootstrap(&st->broker), "plain", 1, &plain_want, 30000, accept_any, NULL),
                     20);

    /* Repaired: served again once the failed download's retry delay ends. */
    flip_byte(first);
    assert_int_equal(rename(moved, second), 0);
    long long deadline = harness_now_ms() + 30000;
    int64_t got = -1;
    while (harness_now_ms() < deadline) {
        got = list_offset_raw(st, st->ts_base + 10 * second_base, &error);
        if (error == 0 && got == second_base)
            break;
        usleep(200 * 1000);
    }
    assert_int_equal(got, second_base);
    assert_int_equal(list_offset_v9(st, st->ts_base), 0);
    consume_all_from_zero(st);
    broker_mark_passed(&st->broker);
}

/* Failed copies of every kind. */
static int64_t copy_errors_total(const struct tiered_state *st)
{
    int64_t v = remote_errors_total(st, "copy");
    assert_true(v >= 0);
    return v;
}

/* The store goes away (its directory replaced by a plain file, so every
 * write and read fails even for root): produce keeps working, copies fail
 * and are retried, no local segment is deleted without its copy, a read
 * needing remote data answers the retriable KAFKA_STORAGE_ERROR; once the
 * store is back the copies land, local retention trims, and a consumer from
 * 0 reads every record. */
static void test_tiered_store_outage(void **state)
{
    struct tiered_state *st = *state;
    start_stamped_round(st);
    int64_t local_start = list_offset_v9(st, -4);
    int64_t copy_errors = copy_errors_total(st);
    assert_true(copy_errors >= 0);
    uint8_t id[16];
    remote_topic_id(st, id);

    char away[800];
    snprintf(away, sizeof away, "%s.away", st->remote_dir);
    assert_int_equal(rename(st->remote_dir, away), 0);
    FILE *blocker = fopen(st->remote_dir, "w");
    assert_non_null(blocker);
    assert_int_equal(fclose(blocker), 0);

    produce_round(st, RECORDS_PER_ROUND); /* asserts every record acknowledged */
    long long deadline = harness_now_ms() + 60000;
    while (copy_errors_total(st) < copy_errors + 3 && harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_true(copy_errors_total(st) >= copy_errors + 3); /* retried, pass after pass */
    /* What waits for a copy shows as copy lag, in segments and bytes. */
    assert_true(metric_value(st, "cairn_remote_copy_lag_segments") > 0);
    assert_true(metric_value(st, "cairn_remote_copy_lag_bytes") > 0);
    /* No local segment goes before its copy landed: the local start never
     * passes the end of the confirmed copies (a copy finished just before
     * the outage may still trim), and every segment rolled during the
     * outage is still on disk. */
    int64_t tiered_end = list_offset_v9(st, -5);
    local_start = list_offset_v9(st, -4);
    assert_true(local_start <= tiered_end + 1);
    char local[800];
    snprintf(local, sizeof local, "%s/" TOPIC "-0", st->broker.data_dir);
    assert_true(count_files(local, ".log") >= 10);
    usleep(1000 * 1000); /* a few more failed passes change nothing */
    assert_int_equal(list_offset_v9(st, -5), tiered_end);
    assert_int_equal(list_offset_v9(st, -4), local_start);
    /* Remote data is unreachable: a retriable error, not a wrong answer. */
    int16_t error = 0;
    assert_int_equal(list_offset_raw(st, st->ts_base, &error), -1);
    assert_int_equal(error, 56);
    assert_int_equal(raw_fetch_error_from_zero(st, id), 56);

    /* The store is back: copies land, the local tail shrinks, and the same
     * lookup and a full read succeed. */
    assert_int_equal(unlink(st->remote_dir), 0);
    assert_int_equal(rename(away, st->remote_dir), 0);
    wait_tiered(st, 2, 20);
    assert_true(list_offset_v9(st, -4) > local_start);
    deadline = harness_now_ms() + 30000;
    int64_t got = -1;
    while (harness_now_ms() < deadline) {
        got = list_offset_raw(st, st->ts_base, &error);
        if (error == 0)
            break;
        usleep(200 * 1000);
    }
    assert_int_equal(got, 0);
    consume_all_from_zero(st);
    broker_mark_passed(&st->broker);
}

/* ListOffsets v10 for one timestamp of partition 0 with TimeoutMs: the
 * offset, the partition's error in *error and the answer's delay. */
static int64_t list_offset_v10(const struct tiered_state *st, int64_t spec, int32_t timeout_ms, int16_t *error,
                               long long *took_ms)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 2, 10, 9010, "tiered-test");
    raw_put_i32(&w, -1); /* replica id */
    raw_put_i8(&w, 0);   /* isolation */
    raw_put_uvarint(&w, 2);
    raw_put_compact_string(&w, TOPIC);
    raw_put_uvarint(&w, 2);
    raw_put_i32(&w, 0);  /* partition */
    raw_put_i32(&w, -1); /* current leader epoch */
    raw_put_i64(&w, spec);
    raw_put_uvarint(&w, 0); /* partition tags */
    raw_put_uvarint(&w, 0); /* topic tags */
    raw_put_i32(&w, timeout_ms);
    raw_put_uvarint(&w, 0); /* request tags */
    uint8_t *frame = NULL;
    struct raw_reader r;
    long long started = harness_now_ms();
    assert_int_equal(raw_exchange(broker_port(&st->broker), &w, 9010, true, 60000, &frame, &r), 0);
    *took_ms = harness_now_ms() - started;
    (void)raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64];
    assert_true(raw_get_compact_string(&r, name, sizeof name));
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    *error = raw_get_i16(&r);
    (void)raw_get_i64(&r); /* timestamp */
    int64_t offset = raw_get_i64(&r);
    free(frame);
    return offset;
}

/* A store that does not answer (the segment's object replaced by a FIFO
 * nobody writes: the plugin's open blocks): ListOffsets by timestamp on a
 * remote segment waits for the reader thread's download only up to v10's
 * TimeoutMs and answers REQUEST_TIMED_OUT (7) then, so the request thread
 * never downloads itself; once the store answers (with a bad object, then
 * the real one back) the lookup gives the right offset again. */
static void test_tiered_timestamp_timeout_slow_store(void **state)
{
    struct tiered_state *st = *state;
    start_stamped_round(st);
    int64_t base = remote_base_holding(st, 1500);
    char object[1300], moved[1400];
    remote_segment_file(st, base, object, sizeof object);
    snprintf(moved, sizeof moved, "%s.away", object);
    assert_int_equal(rename(object, moved), 0);
    assert_int_equal(mkfifo(object, 0644), 0);

    int16_t error = 0;
    long long took = 0;
    for (int round = 0; round < 2; round++) { /* the second finds the download still stuck */
        assert_int_equal(list_offset_v10(st, st->ts_base + 10 * (base + 3), 2000, &error, &took), -1);
        assert_int_equal(error, 7); /* REQUEST_TIMED_OUT */
        fprintf(stderr, "timed out after %lld ms (TimeoutMs 2000)\n", took);
        assert_true(took >= 1500);
        assert_true(took < 20000); /* not held by the stuck download */
    }

    /* The store answers: an empty object (fails its check), then the real
     * one back; the lookup is served once the retry delay passed. */
    long long deadline = harness_now_ms() + 30000;
    int writer = -1;
    while ((writer = open(object, O_WRONLY | O_NONBLOCK)) < 0 && errno == ENXIO && harness_now_ms() < deadline)
        usleep(50 * 1000);
    assert_true(writer >= 0);
    assert_int_equal(close(writer), 0);
    assert_int_equal(unlink(object), 0);
    assert_int_equal(rename(moved, object), 0);
    deadline = harness_now_ms() + 30000;
    int64_t got = -1;
    while (harness_now_ms() < deadline) {
        got = list_offset_v10(st, st->ts_base + 10 * (base + 3), 30000, &error, &took);
        if (error == 0 && got == base + 3)
            break;
        usleep(200 * 1000);
    }
    assert_int_equal(got, base + 3);
    broker_mark_passed(&st->broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tiered_bad_remote_object, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_store_outage, tiered_setup, tiered_teardown),
        cmocka_unit_test_setup_teardown(test_tiered_timestamp_timeout_slow_store, tiered_setup, tiered_teardown),
    };
    /* CAIRN_TEST_FILTER=<glob> runs only the matching tests (by hand). */
    if (getenv("CAIRN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CAIRN_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
