/* The pure parts of the admin commands: ACL operation names as
 * kafka-acls.sh spells them, SCRAM's SaltedPassword (PBKDF2) checked
 * against PBKDF2-HMAC outputs from other implementations, and produce's
 * murmur2 and consume's format strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "cli.h"

static void test_operation_names(void **state)
{
    (void)state;
    int8_t op = 0;
    assert_int_equal(cli_acl_operation_parse("Read", &op), 0);
    assert_int_equal(op, 3);
    assert_int_equal(cli_acl_operation_parse("all", &op), 0);
    assert_int_equal(op, 2);
    assert_int_equal(cli_acl_operation_parse("AlterConfigs", &op), 0);
    assert_int_equal(op, 11);
    assert_int_equal(cli_acl_operation_parse("DESCRIBE_CONFIGS", &op), 0);
    assert_int_equal(op, 10);
    assert_int_equal(cli_acl_operation_parse("idempotent_write", &op), 0);
    assert_int_equal(op, 12);
    /* filters' wildcard and nonsense are not operations one can grant */
    assert_int_equal(cli_acl_operation_parse("Any", &op), -1);
    assert_int_equal(cli_acl_operation_parse("Unknown", &op), -1);
    assert_int_equal(cli_acl_operation_parse("Fly", &op), -1);
    assert_int_equal(cli_acl_operation_parse("", &op), -1);
}

static void hex(const uint8_t *b, int n, char *out)
{
    for (int i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_salted_password(void **state)
{
    (void)state;
    uint8_t out[64];
    char text[129];
    /* PBKDF2-HMAC-SHA256("passwd", "salt", 1), RFC 7914 section 11, first 32 bytes */
    assert_int_equal(cli_scram_salted_password(1, "passwd", (const uint8_t *)"salt", 4, 1, out), 32);
    hex(out, 32, text);
    assert_string_equal(text, "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
    /* PBKDF2-HMAC-SHA512("pencil", "NaCl", 4096), 64 bytes, as Python's hashlib.pbkdf2_hmac gives it */
    assert_int_equal(cli_scram_salted_password(2, "pencil", (const uint8_t *)"NaCl", 4, 4096, out), 64);
    hex(out, 64, text);
    assert_string_equal(text, "3160839726bdf455bf7547ac071dffcb0ca70047613b1650b55e47c263067970"
                              "393ea81677a2896190024e87531f0b09da994075c8b01cd03509b63c77547a48");
}

/* Kafka's Utils.murmur2 on the inputs of Kafka's own UtilsTest. */
static void test_murmur2(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int32_t want;
    } cases[] = {
        {"21", -973932308},
        {"foobar", -790332482},
        {"a-little-bit-long-string", -985981536},
        {"a-little-bit-longer-string", -1486304829},
        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
        {"abc", 479470107},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal((int32_t)cli_murmur2(cases[i].in, strlen(cases[i].in)), cases[i].want);
}

static void test_format_check(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(cli_format_check("%t %p %o %T %k %K %v %S %h %%\\n\\t\\r\\\\\\0", err, sizeof(err)), 0);
    assert_int_equal(cli_format_check("plain", err, sizeof(err)), 0);
    assert_int_equal(cli_format_check("%q", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unknown escape '%q'"));
    assert_int_equal(cli_format_check("end %", err, sizeof(err)), -1);
    assert_int_equal(cli_format_check("\\x", err, sizeof(err)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operation_names),
        cmocka_unit_test(test_salted_password),
        cmocka_unit_test(test_murmur2),
        cmocka_unit_test(test_format_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
