#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/properties.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct properties parse_ok(const char *text)
{
    struct properties props;
    char err[256] = "";
    int rc = properties_parse(text, strlen(text), &props, err, sizeof err);
    if (rc != 0)
        fail_msg("parse failed: %s", err);
    return props;
}

static void test_separators(void **state)
{
    (void)state;
    struct properties p = parse_ok("a=1\nb: 2\nc 3\nd = 4\ne\t:\t5\nf=\ng\n  h=  leading spaces dropped\n");
    assert_string_equal(properties_get(&p, "a"), "1");
    assert_string_equal(properties_get(&p, "b"), "2");
    assert_string_equal(properties_get(&p, "c"), "3");
    assert_string_equal(properties_get(&p, "d"), "4");
    assert_string_equal(properties_get(&p, "e"), "5");
    assert_string_equal(properties_get(&p, "f"), "");
    assert_string_equal(properties_get(&p, "g"), "");
    assert_string_equal(properties_get(&p, "h"), "leading spaces dropped");
    assert_int_equal(p.count, 8);
    properties_free(&p);
}

static void test_value_keeps_separators_after_first(void **state)
{
    (void)state;
    struct properties p = parse_ok("url=http://x:1/a=b\nk = = v\n");
    assert_string_equal(properties_get(&p, "url"), "http://x:1/a=b");
    assert_string_equal(properties_get(&p, "k"), "= v");
    properties_free(&p);
}

static void test_comments_and_blank_lines(void **state)
{
    (void)state;
    struct properties p = parse_ok("# comment=1\n! bang: 2\n   # indented comment\n\n \t \nreal=yes # not a comment\n");
    assert_int_equal(p.count, 1);
    assert_string_equal(properties_get(&p, "real"), "yes # not a comment");
    properties_free(&p);
}

static void test_line_continuation(void **state)
{
    (void)state;
    struct properties p = parse_ok("list=a,\\\n    b,\\\n\tc\nnext=1\nkeep=ends with two\\\\\nafter=2\n");
    assert_string_equal(properties_get(&p, "list"), "a,b,c");
    assert_string_equal(properties_get(&p, "next"), "1");
    assert_string_equal(properties_get(&p, "keep"), "ends with two\\");
    assert_string_equal(properties_get(&p, "after"), "2");
    properties_free(&p);
}

static void test_comment_is_not_continued(void **state)
{
    (void)state;
    struct properties p = parse_ok("# comment \\\nx=1\n");
    assert_string_equal(properties_get(&p, "x"), "1");
    properties_free(&p);
}

static void test_crlf_and_cr_line_endings(void **state)
{
    (void)state;
    struct properties p = parse_ok("a=1\r\nb=2\rc=3\r\nd=4,\\\r\n  5");
    assert_string_equal(properties_get(&p, "a"), "1");
    assert_string_equal(properties_get(&p, "b"), "2");
    assert_string_equal(properties_get(&p, "c"), "3");
    assert_string_equal(properties_get(&p, "d"), "4,5");
    properties_free(&p);
}

static void test_escapes(void **state)
{
    (void)state;
    struct properties p = parse_ok(
        "tab=a\\tb\nnl=a\\nb\nback=a\\\\b\nuni=\\u0041\\u00e9\\u20ac\nkey\\ with\\=eq\\:colon=v\nother=\\q\n"
        "pair=\\ud83d\\ude00\nlone=\\ud83d\n");
    assert_string_equal(properties_get(&p, "tab"), "a\tb");
    assert_string_equal(properties_get(&p, "nl"), "a\nb");
    assert_string_equal(properties_get(&p, "back"), "a\\b");
    assert_string_equal(properties_get(&p, "uni"), "A\xc3\xa9\xe2\x82\xac");
    assert_string_equal(properties_get(&p, "key with=eq:colon"), "v");
    assert_string_equal(properties_get(&p, "other"), "q");
    assert_string_equal(properties_get(&p, "pair"), "\xf0\x9f\x98\x80");
    assert_string_equal(properties_get(&p, "lone"), "\xef\xbf\xbd");
    properties_free(&p);
}

static void test_malformed_unicode_escape_names_line(void **state)
{
    (void)state;
    struct properties p;
    char err[256] = "";
    const char *text = "ok=1\nbad=\\u12g4\n";
    assert_int_equal(properties_parse(text, strlen(text), &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_int_equal(p.count, 0);
    text = "bad=\\u00";
    assert_int_equal(properties_parse(text, strlen(text), &p, err, sizeof err), -1);
    text = "nul=\\u0000";
    assert_int_equal(properties_parse(text, strlen(text), &p, err, sizeof err), -1);
}

static void test_nul_byte_rejected(void **state)
{
    (void)state;
    struct properties p;
    char err[256] = "";
    const char text[] = {'a', '=', '\0', 'b'};
    assert_int_equal(properties_parse(text, sizeof text, &p, err, sizeof err), -1);
}

static void test_later_duplicate_wins_keeps_position(void **state)
{
    (void)state;
    struct properties p = parse_ok("a=1\nb=2\na=3\n");
    assert_int_equal(p.count, 2);
    assert_string_equal(p.entries[0].key, "a");
    assert_string_equal(p.entries[0].value, "3");
    assert_int_equal(p.entries[0].line, 3);
    properties_free(&p);
}

static void test_backslash_at_end_of_file(void **state)
{
    (void)state;
    struct properties p = parse_ok("a=b\\");
    assert_string_equal(properties_get(&p, "a"), "b");
    properties_free(&p);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/cairn-props-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "num.partitions = 3\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct properties p;
    char err[256];
    assert_int_equal(properties_load_file(path, &p, err, sizeof err), 0);
    assert_string_equal(properties_get(&p, "num.partitions"), "3");
    properties_free(&p);
    unlink(path);
    assert_int_equal(properties_load_file(path, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
}

/* Arbitrary bytes must give either a result or an error, never a crash
 * (run under -DCAIRN_SANITIZE=ON to catch memory errors). */
static void test_random_input_is_handled(void **state)
{
    (void)state;
    static const char alphabet[] = "ab=: \t\\\n\r#!u0F9\x80";
    uint32_t seed = 12345;
    char text[256], err[256];
    int parsed = 0, rejected = 0;
    for (int round = 0; round < 5000; round++) {
        size_t len = (size_t)(round % (int)sizeof text);
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            text[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        struct properties p;
        if (properties_parse(text, len, &p, err, sizeof err) == 0) {
            parsed++;
            for (size_t i = 0; i < p.count; i++)
                assert_non_null(p.entries[i].value);
            properties_free(&p);
        } else {
            rejected++;
        }
    }
    assert_true(parsed > 0);
    assert_true(rejected > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_value_keeps_separators_after_first),
        cmocka_unit_test(test_comments_and_blank_lines),
        cmocka_unit_test(test_line_continuation),
        cmocka_unit_test(test_comment_is_not_continued),
        cmocka_unit_test(test_crlf_and_cr_line_endings),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_malformed_unicode_escape_names_line),
        cmocka_unit_test(test_nul_byte_rejected),
        cmocka_unit_test(test_later_duplicate_wins_keeps_position),
        cmocka_unit_test(test_backslash_at_end_of_file),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_random_input_is_handled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
