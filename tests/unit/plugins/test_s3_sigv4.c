/* storage-s3's SigV4 signer against AWS's published vectors: the SigV4
 * test suite (get-vanilla, post-vanilla, get-vanilla-query-order-key-case,
 * credentials AKIDEXAMPLE, 20150830T123600Z), the IAM ListUsers example of
 * the signing documentation, and the S3 API Reference's header-based auth
 * examples (GET Object with a Range, PUT Object, GET Bucket lifecycle and
 * list, credentials AKIAIOSFODNN7EXAMPLE, 20130524T000000Z). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "s3_sigv4.h"

#define SUITE_KEY_ID "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_DATE "20150830T123600Z"
#define S3_KEY_ID "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_DATE "20130524T000000Z"

static const struct sigv4_header suite_headers[] = {
    {"Host", "example.amazonaws.com"},
    {"X-Amz-Date", SUITE_DATE},
};
static const struct sigv4_scope suite_scope = {SUITE_KEY_ID, SUITE_SECRET, "us-east-1", "service", SUITE_DATE};
static const struct sigv4_scope s3_scope = {S3_KEY_ID, S3_SECRET, "us-east-1", "s3", S3_DATE};

static void expect_signature(const struct sigv4_request *req, const struct sigv4_scope *scope, const char *want)
{
    char canonical[8192], to_sign[512], signature[SIGV4_HEX_SHA256_LEN + 1];
    assert_int_equal(sigv4_canonical_request(req, canonical, sizeof(canonical)), 0);
    assert_int_equal(sigv4_string_to_sign(scope, canonical, to_sign, sizeof(to_sign)), 0);
    assert_int_equal(sigv4_signature(scope, to_sign, signature), 0);
    assert_string_equal(signature, want);
}

static void test_get_vanilla(void **state)
{
    (void)state;
    struct sigv4_request req = {"GET", "/", "", suite_headers, 2, SIGV4_EMPTY_SHA256};
    char canonical[1024], to_sign[512], auth[512];
    assert_int_equal(sigv4_canonical_request(&req, canonical, sizeof(canonical)), 0);
    assert_string_equal(canonical, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                                   "host;x-amz-date\n" SIGV4_EMPTY_SHA256);
    assert_int_equal(sigv4_string_to_sign(&suite_scope, canonical, to_sign, sizeof(to_sign)), 0);
    assert_string_equal(to_sign, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                                 "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
    assert_int_equal(sigv4_authorization(&req, &suite_scope, auth, sizeof(auth)), 0);
    assert_string_equal(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                              "SignedHeaders=host;x-amz-date, "
                              "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

static void test_post_vanilla(void **state)
{
    (void)state;
    struct sigv4_request req = {"POST", "/", NULL, suite_headers, 2, SIGV4_EMPTY_SHA256};
    expect_signature(&req, &suite_scope, "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

static void test_get_vanilla_query_order_key_case(void **state)
{
    (void)state;
    struct sigv4_request req = {"GET", "/", "Param2=value2&Param1=value1", suite_headers, 2, SIGV4_EMPTY_SHA256};
    char canonical[1024];
    assert_int_equal(sigv4_canonical_request(&req, canonical, sizeof(canonical)), 0);
    assert_non_null(strstr(canonical, "\nParam1=value1&Param2=value2\n"));
    expect_signature(&req, &suite_scope, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

/* The signing documentation's worked example (IAM ListUsers). */
static void test_iam_list_users(void **state)
{
    (void)state;
    const struct sigv4_header headers[] = {
        {"content-type", "application/x-www-form-urlencoded; charset=utf-8"},
        {"host", "iam.amazonaws.com"},
        {"x-amz-date", SUITE_DATE},
    };
    struct sigv4_scope scope = suite_scope;
    scope.service = "iam";
    struct sigv4_request req = {"GET", "/", "Action=ListUsers&Version=2010-05-08", headers, 3, SIGV4_EMPTY_SHA256};
    char canonical[1024], to_sign[512];
    assert_int_equal(sigv4_canonical_request(&req, canonical, sizeof(canonical)), 0);
    assert_string_equal(canonical, "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
                                   "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
                                   "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                                   "content-type;host;x-amz-date\n" SIGV4_EMPTY_SHA256);
    assert_int_equal(sigv4_string_to_sign(&scope, canonical, to_sign, sizeof(to_sign)), 0);
    assert_string_equal(to_sign, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/iam/aws4_request\n"
                                 "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
    expect_signature(&req, &scope, "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

/* S3 API Reference, "Example: GET Object": the first ten bytes of test.txt. */
static void test_s3_get_object_range(void **state)
{
    (void)state;
    const struct sigv4_header headers[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"Range", "bytes=0-9"},
        {"x-amz-content-sha256", SIGV4_EMPTY_SHA256},
        {"x-amz-date", S3_DATE},
    };
    struct sigv4_request req = {"GET", "/test.txt", "", headers, 4, SIGV4_EMPTY_SHA256};
    char canonical[1024], auth[512];
    assert_int_equal(sigv4_canonical_request(&req, canonical, sizeof(canonical)), 0);
    assert_string_equal(canonical, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                                   "x-amz-content-sha256:" SIGV4_EMPTY_SHA256 "\nx-amz-date:20130524T000000Z\n\n"
                                   "host;range;x-amz-content-sha256;x-amz-date\n" SIGV4_EMPTY_SHA256);
    assert_int_equal(sigv4_authorization(&req, &s3_scope, auth, sizeof(auth)), 0);
    assert_string_equal(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

/* "Example: PUT Object": a '$' in the key, a signed payload hash. */
static void test_s3_put_object(void **state)
{
    (void)state;
    const char *body = "Welcome to Amazon S3.";
    char payload[SIGV4_HEX_SHA256_LEN + 1], path[64];
    sigv4_sha256_hex(body, strlen(body), payload);
    assert_string_equal(payload, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    assert_int_equal(sigv4_uri_encode("/test$file.text", true, path, sizeof(path)), 0);
    assert_string_equal(path, "/test%24file.text");
    const struct sigv4_header headers[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", S3_DATE},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256", payload},
    };
    struct sigv4_request req = {"PUT", path, NULL, headers, 5, payload};
    char signed_headers[256];
    assert_int_equal(sigv4_signed_headers(&req, signed_headers, sizeof(signed_headers)), 0);
    assert_string_equal(signed_headers, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
    expect_signature(&req, &s3_scope, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

/* "Example: GET Bucket Lifecycle" (a bare sub-resource is signed as
 * "lifecycle=") and "Example: Get Bucket (List Objects)". */
static void test_s3_bucket_queries(void **state)
{
    (void)state;
    const struct sigv4_header headers[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-content-sha256", SIGV4_EMPTY_SHA256},
        {"x-amz-date", S3_DATE},
    };
    struct sigv4_request lifecycle = {"GET", "/", "lifecycle", headers, 3, SIGV4_EMPTY_SHA256};
    expect_signature(&lifecycle, &s3_scope, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
    struct sigv4_request list = {"GET", "/", "prefix=J&max-keys=2", headers, 3, SIGV4_EMPTY_SHA256};
    expect_signature(&list, &s3_scope, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_canonical_details(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(sigv4_uri_encode("a b/c~d_e.f-g+h=i", false, out, sizeof(out)), 0);
    assert_string_equal(out, "a%20b%2Fc~d_e.f-g%2Bh%3Di");
    assert_int_equal(sigv4_uri_encode("\xc3\xa9", true, out, sizeof(out)), 0);
    assert_string_equal(out, "%C3%A9");
    assert_int_equal(sigv4_uri_encode("abcdef", true, out, 4), -1);
    /* Values are trimmed and inner runs of spaces folded. */
    const struct sigv4_header headers[] = {{"X-Custom", "  a   b  c "}, {"Host", "h"}};
    struct sigv4_request req = {"GET", "/", "uploads", headers, 2, SIGV4_EMPTY_SHA256};
    char canonical[512];
    assert_int_equal(sigv4_canonical_request(&req, canonical, sizeof(canonical)), 0);
    assert_string_equal(canonical, "GET\n/\nuploads=\nhost:h\nx-custom:a b c\n\nhost;x-custom\n" SIGV4_EMPTY_SHA256);
    /* Sorted by key first: key "a" before key "a-b", whatever the values. */
    struct sigv4_request sorted = {"GET", "/", "a-b=c&a=z", headers, 2, SIGV4_EMPTY_SHA256};
    assert_int_equal(sigv4_canonical_request(&sorted, canonical, sizeof(canonical)), 0);
    assert_non_null(strstr(canonical, "\na=z&a-b=c\n"));
    assert_int_equal(sigv4_canonical_request(&req, canonical, 16), -1);
    char md5[25];
    sigv4_md5_base64("", 0, md5);
    assert_string_equal(md5, "1B2M2Y8AsgTpgAmY7PhCfg==");
    char date[17];
    sigv4_amz_date(1440938160, date);
    assert_string_equal(date, SUITE_DATE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_vanilla),         cmocka_unit_test(test_post_vanilla),
        cmocka_unit_test(test_get_vanilla_query_order_key_case),
        cmocka_unit_test(test_iam_list_users),      cmocka_unit_test(test_s3_get_object_range),
        cmocka_unit_test(test_s3_put_object),       cmocka_unit_test(test_s3_bucket_queries),
        cmocka_unit_test(test_canonical_details),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
