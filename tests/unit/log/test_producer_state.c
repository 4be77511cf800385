/* Producer state table: duplicates, gaps, epochs, sequence wrap, expiry,
 * many producers, and snapshot write/read round trips. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/producer_state.h"
#include "log_test_util.h"
#include "../../common/test_file.h"
#include "protocol/generated/errors.h"

static struct record_batch_header hdr(int64_t pid, int16_t epoch, int32_t seq, int32_t records, int64_t ts)
{
    struct record_batch_header h;
    memset(&h, 0, sizeof h);
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.last_offset_delta = records - 1;
    h.record_count = records;
    h.max_timestamp = ts;
    return h;
}

/* Check then, when accepted and new, record at *next. Returns the error. */
static int16_t append(struct producer_state *ps, struct record_batch_header h, int64_t *next,
                      struct producer_check_result *res)
{
    char err[160];
    int16_t code = producer_state_check(ps, &h, res, err, sizeof err);
    if (code == KAFKA_ERR_NONE && !res->duplicate) {
        assert_int_equal(producer_state_update(ps, &h, *next, *next + h.last_offset_delta), 0);
        *next += h.last_offset_delta + 1;
    }
    return code;
}

static void test_in_order_and_duplicates(void **state)
{
    (void)state;
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 100;
    for (int i = 0; i < 7; i++)
        assert_int_equal(append(ps, hdr(7, 0, i * 3, 3, 1000), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(next, 121);
    const struct producer_entry *e = producer_state_get(ps, 7);
    assert_non_null(e);
    assert_int_equal(e->batch_count, PRODUCER_STATE_CACHED_BATCHES);
    /* The last five batches (seq 6..20) are recognised with their offsets. */
    for (int i = 2; i < 7; i++) {
        assert_int_equal(append(ps, hdr(7, 0, i * 3, 3, 1000), &next, &res), KAFKA_ERR_NONE);
        assert_true(res.duplicate);
        assert_int_equal(res.first_offset, 100 + i * 3);
        assert_int_equal(res.last_offset, 102 + i * 3);
    }
    assert_int_equal(next, 121);
    /* Older than the cache: no longer a duplicate, so out of order. */
    assert_int_equal(append(ps, hdr(7, 0, 0, 3, 1000), &next, &res), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* Same first sequence but a different size is not the same batch. */
    assert_int_equal(append(ps, hdr(7, 0, 18, 2, 1000), &next, &res), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    producer_state_free(ps);
}

static void test_gap_and_unknown(void **state)
{
    (void)state;
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    assert_int_equal(append(ps, hdr(1, 0, 5, 1, 0), &next, &res), KAFKA_ERR_UNKNOWN_PRODUCER_ID);
    assert_null(producer_state_get(ps, 1));
    assert_int_equal(append(ps, hdr(1, 0, 0, 2, 0), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(append(ps, hdr(1, 0, 3, 1, 0), &next, &res), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(append(ps, hdr(1, 0, 2, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_false(res.duplicate);
    assert_int_equal(next, 3);
    producer_state_free(ps);
}

static void test_epochs(void **state)
{
    (void)state;
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    assert_int_equal(append(ps, hdr(9, 3, 0, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(append(ps, hdr(9, 3, 1, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(append(ps, hdr(9, 2, 2, 1, 0), &next, &res), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    /* A stale epoch retrying an old batch is still fenced. */
    assert_int_equal(append(ps, hdr(9, 2, 0, 1, 0), &next, &res), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    /* A new epoch must start at 0. */
    assert_int_equal(append(ps, hdr(9, 4, 2, 1, 0), &next, &res), KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(append(ps, hdr(9, 4, 0, 1, 0), &next, &res), KAFKA_ERR_NONE);
    const struct producer_entry *e = producer_state_get(ps, 9);
    assert_int_equal(e->epoch, 4);
    assert_int_equal(e->batch_count, 1);
    assert_int_equal(append(ps, hdr(9, 3, 2, 1, 0), &next, &res), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    producer_state_free(ps);
}

static void test_sequence_wrap(void **state)
{
    (void)state;
    assert_int_equal(producer_seq_add(INT32_MAX, 1), 0);
    assert_int_equal(producer_seq_add(INT32_MAX - 1, 3), 1);
    assert_int_equal(producer_seq_add(10, 5), 15);
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    /* Seed a producer whose last sequence sits near the wrap point. */
    struct record_batch_header seed = hdr(3, 0, INT32_MAX - 4, 3, 0);
    assert_int_equal(producer_state_update(ps, &seed, 0, 2), 0);
    next = 3;
    /* A batch spanning the wrap: INT32_MAX-1, INT32_MAX, 0, 1. */
    assert_int_equal(append(ps, hdr(3, 0, INT32_MAX - 1, 4, 0), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(producer_state_get(ps, 3)->batches[1].last_seq, 1);
    assert_int_equal(append(ps, hdr(3, 0, 2, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(append(ps, hdr(3, 0, INT32_MAX - 1, 4, 0), &next, &res), KAFKA_ERR_NONE);
    assert_true(res.duplicate);
    assert_int_equal(res.first_offset, 3);
    /* Exactly at the edge: last INT32_MAX, next 0. */
    struct record_batch_header edge = hdr(4, 0, INT32_MAX, 1, 0);
    assert_int_equal(producer_state_update(ps, &edge, 50, 50), 0);
    assert_int_equal(append(ps, hdr(4, 0, 0, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_false(res.duplicate);
    producer_state_free(ps);
}

static void test_expiry_and_many_producers(void **state)
{
    (void)state;
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    for (int64_t pid = 0; pid < 500; pid++)
        assert_int_equal(append(ps, hdr(pid * 7919, 0, 0, 1, pid < 250 ? 1000 : 5000), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(producer_state_count(ps), 500);
    /* Nothing idle long enough yet. */
    assert_int_equal(producer_state_expire(ps, 2000, 1001), 0);
    assert_int_equal(producer_state_expire(ps, 2000, 1000), 250);
    assert_int_equal(producer_state_count(ps), 250);
    for (int64_t pid = 0; pid < 500; pid++) {
        const struct producer_entry *e = producer_state_get(ps, pid * 7919);
        if (pid < 250) {
            assert_null(e);
        } else {
            assert_non_null(e);
            assert_int_equal(e->batches[0].first_offset, pid);
        }
    }
    /* An expired producer is unknown again. */
    assert_int_equal(append(ps, hdr(0, 0, 1, 1, 0), &next, &res), KAFKA_ERR_UNKNOWN_PRODUCER_ID);
    producer_state_free(ps);
}

static void test_snapshot_round_trip(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/00000000000000000042.snapshot", dir);
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    for (int i = 0; i < 8; i++)
        assert_int_equal(append(ps, hdr(11, 2, i * 2, 2, 100 + i), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(append(ps, hdr(12, 0, INT32_MAX, 2, 7), &next, &res), KAFKA_ERR_UNKNOWN_PRODUCER_ID);
    struct record_batch_header wrap = hdr(12, 0, INT32_MAX, 2, 7);
    assert_int_equal(producer_state_update(ps, &wrap, 16, 17), 0);
    assert_int_equal(producer_state_write_snapshot(ps, path), 0);

    struct producer_state *loaded = producer_state_new();
    assert_int_equal(producer_state_read_snapshot(loaded, path), 0);
    assert_int_equal(producer_state_count(loaded), 2);
    const struct producer_entry *a = producer_state_get(ps, 11), *b = producer_state_get(loaded, 11);
    assert_int_equal(b->epoch, 2);
    assert_int_equal(b->batch_count, a->batch_count);
    assert_memory_equal(a->batches, b->batches, sizeof a->batches[0] * (size_t)a->batch_count);
    assert_int_equal(b->last_timestamp, 107);
    assert_int_equal(b->current_txn_first_offset, -1);
    const struct producer_entry *w = producer_state_get(loaded, 12);
    assert_int_equal(w->batches[0].first_seq, INT32_MAX);
    assert_int_equal(w->batches[0].last_seq, 0);
    /* Retries of every cached batch are still recognised after the load. */
    assert_int_equal(append(loaded, hdr(11, 2, 6, 2, 0), &next, &res), KAFKA_ERR_NONE);
    assert_true(res.duplicate);
    assert_int_equal(res.first_offset, 6);
    assert_int_equal(append(loaded, hdr(11, 2, 16, 1, 0), &next, &res), KAFKA_ERR_NONE);
    assert_false(res.duplicate);

    /* A flipped byte fails the CRC and leaves an empty state. */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 20, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 20, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    assert_int_equal(producer_state_read_snapshot(loaded, path), EINVAL);
    assert_int_equal(producer_state_count(loaded), 0);
    snprintf(path, sizeof path, "%s/missing.snapshot", dir);
    assert_int_equal(producer_state_read_snapshot(loaded, path), ENOENT);
    producer_state_free(loaded);
    producer_state_free(ps);
    test_remove_tree(dir);
    free(dir);
}

/* The unsynced writer (used at open after an unclean stop) writes the same
 * bytes; what a crash may leave instead (an empty file) is refused, not
 * loaded. */
static void test_unsynced_snapshot(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    char synced[512], unsynced[512];
    snprintf(synced, sizeof synced, "%s/00000000000000000010.snapshot", dir);
    snprintf(unsynced, sizeof unsynced, "%s/00000000000000000020.snapshot", dir);
    struct producer_state *ps = producer_state_new();
    struct producer_check_result res;
    int64_t next = 0;
    for (int i = 0; i < 3; i++)
        assert_int_equal(append(ps, hdr(21, 0, i, 1, 50 + i), &next, &res), KAFKA_ERR_NONE);
    assert_int_equal(producer_state_write_snapshot(ps, synced), 0);
    assert_int_equal(producer_state_write_snapshot_unsynced(ps, unsynced), 0);
    size_t a_len = 0, b_len = 0;
    char *a = test_read_file(synced, &a_len), *b = test_read_file(unsynced, &b_len);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a_len, b_len);
    assert_memory_equal(a, b, a_len);
    free(a);
    free(b);
    struct producer_state *loaded = producer_state_new();
    assert_int_equal(producer_state_read_snapshot(loaded, unsynced), 0);
    assert_int_equal(producer_state_count(loaded), 1);
    FILE *f = fopen(unsynced, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(producer_state_read_snapshot(loaded, unsynced), EINVAL);
    producer_state_free(loaded);
    producer_state_free(ps);
    test_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_and_duplicates),
        cmocka_unit_test(test_gap_and_unknown),
        cmocka_unit_test(test_epochs),
        cmocka_unit_test(test_sequence_wrap),
        cmocka_unit_test(test_expiry_and_many_producers),
        cmocka_unit_test(test_snapshot_round_trip),
        cmocka_unit_test(test_unsynced_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
