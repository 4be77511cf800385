/* Leader epoch cache: assign (including Kafka's removal of non-monotonic
 * entries), every endOffsetFor case, truncation from the end and from the
 * start, epoch of an offset, and the leader-epoch-checkpoint text format
 * (round trip, malformed files, the file on disk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>

#include "log/leader_epoch_cache.h"
#include "log_test_util.h"

/* Fills c with the pairs (epoch, start) given as a flat list. */
static void build(struct leader_epoch_cache *c, const int64_t *pairs, size_t n)
{
    leader_epoch_cache_init(c);
    for (size_t i = 0; i < n; i++) {
        bool changed = false;
        assert_int_equal(leader_epoch_cache_assign(c, (int32_t)pairs[2 * i], pairs[2 * i + 1], &changed), 0);
        assert_true(changed);
    }
}

static void expect_entries(const struct leader_epoch_cache *c, const int64_t *pairs, size_t n)
{
    assert_int_equal(c->count, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(c->entries[i].epoch, pairs[2 * i]);
        assert_int_equal(c->entries[i].start_offset, pairs[2 * i + 1]);
    }
}

static void test_assign(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    assert_int_equal(leader_epoch_cache_latest_epoch(&c), 6);

    /* The latest epoch again, at a later offset: nothing to record. */
    bool changed = true;
    assert_int_equal(leader_epoch_cache_assign(&c, 6, 35, &changed), 0);
    assert_false(changed);
    expect_entries(&c, three, 3);

    /* The latest epoch at an earlier offset: it starts there instead. */
    assert_int_equal(leader_epoch_cache_assign(&c, 6, 25, &changed), 0);
    assert_true(changed);
    static const int64_t moved[] = {2, 10, 4, 20, 6, 25};
    expect_entries(&c, moved, 3);

    /* An older epoch after newer ones: Kafka drops every entry with an
     * epoch >= it or a start offset >= its start. */
    assert_int_equal(leader_epoch_cache_assign(&c, 3, 22, &changed), 0);
    assert_true(changed);
    static const int64_t older[] = {2, 10, 3, 22};
    expect_entries(&c, older, 2);
    assert_int_equal(leader_epoch_cache_assign(&c, 7, 15, &changed), 0);
    static const int64_t lower_start[] = {2, 10, 7, 15};
    expect_entries(&c, lower_start, 2);

    /* Negative values are refused and change nothing. */
    assert_int_equal(leader_epoch_cache_assign(&c, -1, 40, &changed), EINVAL);
    assert_false(changed);
    assert_int_equal(leader_epoch_cache_assign(&c, 8, -1, NULL), EINVAL);
    expect_entries(&c, lower_start, 2);

    leader_epoch_cache_clear(&c);
    assert_int_equal(leader_epoch_cache_latest_epoch(&c), LEADER_EPOCH_UNDEFINED);
    leader_epoch_cache_free(&c);
}

static void expect_end(const struct leader_epoch_cache *c, int32_t requested, int64_t leo, int32_t epoch,
                       int64_t offset)
{
    int32_t got_epoch = 99;
    int64_t got_offset = 99;
    leader_epoch_cache_end_offset_for(c, requested, leo, &got_epoch, &got_offset);
    if (got_epoch != epoch || got_offset != offset)
        fail_msg("endOffsetFor(%d): (%d, %lld), expected (%d, %lld)", requested, got_epoch, (long long)got_offset,
                 epoch, (long long)offset);
}

static void test_end_offset_for(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    /* UNDEFINED_EPOCH asked: undefined. */
    expect_end(&c, -1, 40, -1, -1);
    /* The latest epoch: it ends at the log end. */
    expect_end(&c, 6, 40, 6, 40);
    /* Newer than anything known: undefined. */
    expect_end(&c, 7, 40, -1, -1);
    expect_end(&c, INT32_MAX, 40, -1, -1);
    /* Below the earliest epoch: the requested epoch with the earliest
     * start offset. */
    expect_end(&c, 1, 40, 1, 10);
    expect_end(&c, 0, 40, 0, 10);
    /* A known, older epoch: it ends where the next one starts. */
    expect_end(&c, 2, 40, 2, 20);
    expect_end(&c, 4, 40, 4, 30);
    /* An unknown epoch between known ones: the largest epoch below it and
     * the start of the first one above. */
    expect_end(&c, 3, 40, 2, 20);
    expect_end(&c, 5, 40, 4, 30);
    leader_epoch_cache_free(&c);

    /* Empty: undefined for every epoch. */
    leader_epoch_cache_init(&c);
    expect_end(&c, 0, 40, -1, -1);
    expect_end(&c, 3, 40, -1, -1);
    /* A single epoch asked for: the log end, whatever it is. */
    static const int64_t one[] = {0, 0};
    build(&c, one, 1);
    expect_end(&c, 0, 17, 0, 17);
    expect_end(&c, 0, 0, 0, 0);
    expect_end(&c, 1, 17, -1, -1);
    leader_epoch_cache_free(&c);
}

static void test_epoch_for_offset(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    assert_int_equal(leader_epoch_cache_epoch_for_offset(&c, 9), LEADER_EPOCH_UNDEFINED);
    assert_int_equal(leader_epoch_cache_epoch_for_offset(&c, 10), 2);
    assert_int_equal(leader_epoch_cache_epoch_for_offset(&c, 19), 2);
    assert_int_equal(leader_epoch_cache_epoch_for_offset(&c, 20), 4);
    assert_int_equal(leader_epoch_cache_epoch_for_offset(&c, 1000), 6);
    leader_epoch_cache_free(&c);
}

static void test_truncate_from_end(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    /* Past every start, or negative (Kafka ignores it): unchanged. */
    assert_false(leader_epoch_cache_truncate_from_end(&c, 31));
    assert_false(leader_epoch_cache_truncate_from_end(&c, -1));
    expect_entries(&c, three, 3);
    /* An end inside epoch 6's range but past its start keeps it... */
    assert_false(leader_epoch_cache_truncate_from_end(&c, 31));
    /* ...an end at or before its start drops it. */
    assert_true(leader_epoch_cache_truncate_from_end(&c, 30));
    expect_entries(&c, three, 2);
    assert_true(leader_epoch_cache_truncate_from_end(&c, 11));
    expect_entries(&c, three, 1);
    assert_true(leader_epoch_cache_truncate_from_end(&c, 0));
    assert_int_equal(c.count, 0);
    assert_false(leader_epoch_cache_truncate_from_end(&c, 0));
    leader_epoch_cache_free(&c);
}

static void test_truncate_from_start(void **state)
{
    (void)state;
    struct leader_epoch_cache c;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    /* Below the first entry: nothing to clear. */
    assert_false(leader_epoch_cache_truncate_from_start(&c, 5));
    /* Exactly at the first entry's start: kept as it is. */
    assert_false(leader_epoch_cache_truncate_from_start(&c, 10));
    expect_entries(&c, three, 3);
    /* Inside epoch 2: it now starts at the new log start. */
    assert_true(leader_epoch_cache_truncate_from_start(&c, 15));
    static const int64_t clamped[] = {2, 15, 4, 20, 6, 30};
    expect_entries(&c, clamped, 3);
    /* At epoch 4's start: epoch 2 is gone, epoch 4 keeps its start. */
    assert_true(leader_epoch_cache_truncate_from_start(&c, 20));
    static const int64_t dropped[] = {4, 20, 6, 30};
    expect_entries(&c, dropped, 2);
    /* Past the last start: only the last epoch is left, from there. */
    assert_true(leader_epoch_cache_truncate_from_start(&c, 45));
    static const int64_t last[] = {6, 45};
    expect_entries(&c, last, 1);
    leader_epoch_cache_free(&c);
}

static void expect_parse_error(const char *text)
{
    struct leader_epoch_cache c;
    leader_epoch_cache_init(&c);
    char err[128] = "";
    if (leader_epoch_checkpoint_parse(text, strlen(text), &c, err, sizeof err) != EINVAL)
        fail_msg("accepted a malformed checkpoint: \"%s\"", text);
    assert_int_equal(c.count, 0);
    assert_true(err[0] != '\0');
    leader_epoch_cache_free(&c);
}

static void test_checkpoint_text(void **state)
{
    (void)state;
    struct leader_epoch_cache c, back;
    static const int64_t three[] = {2, 10, 4, 20, 6, 30};
    build(&c, three, 3);
    char *text;
    size_t len;
    assert_int_equal(leader_epoch_checkpoint_format(&c, &text, &len), 0);
    assert_string_equal(text, "0\n3\n2 10\n4 20\n6 30\n");
    assert_int_equal(len, strlen(text));
    leader_epoch_cache_init(&back);
    char err[128];
    assert_int_equal(leader_epoch_checkpoint_parse(text, len, &back, err, sizeof err), 0);
    expect_entries(&back, three, 3);
    free(text);

    /* An empty cache is "0\n0\n". */
    leader_epoch_cache_clear(&c);
    assert_int_equal(leader_epoch_checkpoint_format(&c, &text, &len), 0);
    assert_string_equal(text, "0\n0\n");
    assert_int_equal(leader_epoch_checkpoint_parse(text, len, &back, err, sizeof err), 0);
    assert_int_equal(back.count, 0);
    free(text);

    /* Kafka's reader also takes CRLF lines, blanks between the numbers and
     * a missing final newline. */
    const char *loose = "0\r\n2\r\n1 5\r\n3\t\t9  ";
    assert_int_equal(leader_epoch_checkpoint_parse(loose, strlen(loose), &back, err, sizeof err), 0);
    static const int64_t two[] = {1, 5, 3, 9};
    expect_entries(&back, two, 2);
    leader_epoch_cache_free(&back);
    leader_epoch_cache_free(&c);

    expect_parse_error("");
    expect_parse_error("1\n0\n");
    expect_parse_error("0\n");
    expect_parse_error("0\n2\n1 5\n");
    expect_parse_error("0\n1\n1 5\n3 9\n");
    expect_parse_error("0\n1\n1 5\n\n");
    expect_parse_error("0\n1\n1\n");
    expect_parse_error("0\n1\n1 5 7\n");
    expect_parse_error("0\n1\n x 5\n");
    expect_parse_error("0\n1\n 1 5\n");
    expect_parse_error("0\n1\n-1 5\n");
    expect_parse_error("0\n1\n1 -5\n");
    expect_parse_error("0\n1\n2147483648 5\n");
    expect_parse_error("0\n1\n1 99999999999999999999\n");
    expect_parse_error("0\n2\n3 9\n1 5\n");
    expect_parse_error("0\n2\n1 5\n1 9\n");
    expect_parse_error("0\n2\n1 9\n2 9\n");
    expect_parse_error("0\n-1\n");
    /* A count the text cannot hold is refused before any allocation. */
    expect_parse_error("0\n999999999999\n1 5\n");
}

static void test_checkpoint_file(void **state)
{
    (void)state;
    char *dir = test_make_dir();
    assert_non_null(dir);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, LEADER_EPOCH_CHECKPOINT_FILE);
    struct leader_epoch_cache c, back;
    leader_epoch_cache_init(&back);
    char err[128];
    assert_int_equal(leader_epoch_checkpoint_read(path, &back, err, sizeof err), ENOENT);

    static const int64_t two[] = {0, 0, 3, 42};
    build(&c, two, 2);
    assert_int_equal(leader_epoch_checkpoint_write(path, &c, true), 0);
    assert_int_equal(leader_epoch_checkpoint_read(path, &back, err, sizeof err), 0);
    expect_entries(&back, two, 2);
    /* No temporary file is left beside it. */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);

    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("0\n5\n1 2\n", fp);
    fclose(fp);
    assert_int_equal(leader_epoch_checkpoint_read(path, &back, err, sizeof err), EINVAL);
    assert_int_equal(back.count, 0);

    leader_epoch_cache_free(&back);
    leader_epoch_cache_free(&c);
    test_remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign),
        cmocka_unit_test(test_end_offset_for),
        cmocka_unit_test(test_epoch_for_offset),
        cmocka_unit_test(test_truncate_from_end),
        cmocka_unit_test(test_truncate_from_start),
        cmocka_unit_test(test_checkpoint_text),
        cmocka_unit_test(test_checkpoint_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
