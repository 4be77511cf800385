/* The pure parts of the admin commands: ACL operation names as
 * kafka-acls.sh spells them, and SCRAM's SaltedPassword (PBKDF2) checked
 * against PBKDF2-HMAC outputs from other implementations. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operation_names),
        cmocka_unit_test(test_salted_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
