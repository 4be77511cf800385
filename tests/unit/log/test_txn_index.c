/* The aborted-transaction list and .txnindex files: Kafka's 34-byte entry
 * layout, torn and malformed files, truncation and the collect query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log/txn_index.h"
#include "log_test_util.h"

static void test_entry_layout(void **state)
{
    (void)state;
    struct txn_index_entry e = {0x0102030405060708LL, 16, 300, 301};
    uint8_t buf[TXN_INDEX_ENTRY_SIZE];
    txn_index_encode(buf, &e);
    static const uint8_t want[TXN_INDEX_ENTRY_SIZE] = {
        0, 0,                    /* version */
        1, 2, 3, 4, 5, 6, 7, 8,  /* producer id */
        0, 0, 0, 0, 0, 0, 0, 16, /* first offset */
        0, 0, 0, 0, 0, 0, 1, 44, /* last offset 300 */
        0, 0, 0, 0, 0, 0, 1, 45, /* last stable offset 301 */
    };
    assert_memory_equal(buf, want, sizeof want);
    struct txn_index_entry back;
    assert_int_equal(txn_index_decode(buf, &back), 0);
    assert_memory_equal(&back, &e, sizeof e);
    buf[1] = 1;
    assert_int_equal(txn_index_decode(buf, &back), -1);
}

static void test_files(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/00000000000000000000.txnindex", dir);
    struct txn_index idx = {0};
    assert_int_equal(txn_index_load_file(&idx, path), 0); /* missing: empty */
    assert_int_equal(idx.count, 0);
    struct txn_index_entry a = {1, 0, 5, 6}, b = {2, 3, 9, 10};
    assert_int_equal(txn_index_append_file(path, &a), 0);
    assert_int_equal(txn_index_append_file(path, &b), 0);
    assert_int_equal(test_file_size(path), 2 * TXN_INDEX_ENTRY_SIZE);
    assert_int_equal(txn_index_load_file(&idx, path), 0);
    assert_int_equal(idx.count, 2);
    assert_int_equal(idx.entries[1].producer_id, 2);
    txn_index_free(&idx);

    /* A torn tail is ignored. */
    FILE *fp = fopen(path, "ab");
    fwrite("\0\0\1\2\3", 1, 5, fp);
    fclose(fp);
    assert_int_equal(txn_index_load_file(&idx, path), 0);
    assert_int_equal(idx.count, 2);
    txn_index_free(&idx);

    /* Rewrite keeps only what is given; zero entries removes the file. */
    assert_int_equal(txn_index_write_file(path, &a, 1), 0);
    assert_int_equal(test_file_size(path), TXN_INDEX_ENTRY_SIZE);
    assert_int_equal(txn_index_write_file(path, NULL, 0), 0);
    assert_int_equal(test_file_size(path), -1);

    /* Garbage (bad version, offsets going backwards) stops the read. */
    struct txn_index_entry bad_order = {3, 0, 2, 3};
    assert_int_equal(txn_index_append_file(path, &b), 0);
    assert_int_equal(txn_index_append_file(path, &bad_order), 0);
    assert_int_equal(txn_index_load_file(&idx, path), 0);
    assert_int_equal(idx.count, 1);
    txn_index_free(&idx);
    test_remove_tree(dir);
    free(dir);
}

struct seen {
    int64_t pids[8];
    size_t n;
};

static void record(void *arg, const struct txn_index_entry *e)
{
    struct seen *s = arg;
    if (s->n < 8)
        s->pids[s->n] = e->producer_id;
    s->n++;
}

static void test_collect_and_truncate(void **state)
{
    (void)state;
    struct txn_index idx = {0};
    /* pid 1: [0, 10] while pid 2 was open from 4 (LSO 4); pid 2: [4, 12];
     * pid 3: [20, 25]. */
    struct txn_index_entry es[] = {{1, 0, 10, 4}, {2, 4, 12, 13}, {3, 20, 25, 26}};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(txn_index_add(&idx, &es[i]), 0);
    struct seen s = {0};
    assert_int_equal(txn_index_collect(&idx, 0, 5, record, &s), 2);
    assert_int_equal(s.pids[0], 1);
    assert_int_equal(s.pids[1], 2);
    s.n = 0;
    assert_int_equal(txn_index_collect(&idx, 11, 30, record, &s), 2);
    assert_int_equal(s.pids[0], 2);
    assert_int_equal(s.pids[1], 3);
    s.n = 0;
    assert_int_equal(txn_index_collect(&idx, 13, 20, record, &s), 0);
    txn_index_truncate(&idx, 12);
    assert_int_equal(idx.count, 1);
    txn_index_add(&idx, &es[1]);
    txn_index_drop_before(&idx, 11);
    assert_int_equal(idx.count, 1);
    assert_int_equal(idx.entries[0].producer_id, 2);
    txn_index_free(&idx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_layout),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_collect_and_truncate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
