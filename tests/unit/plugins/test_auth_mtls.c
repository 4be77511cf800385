/* The auth-mtls plugin, loaded with dlopen into a test host: Kafka's
 * ssl.principal.mapping.rules on subject DNs, the SAN sources, and rules
 * refused at init. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_host.h"

#include <stdio.h>
#include <string.h>

static struct test_host mtls_host;

static int group_setup(void **state)
{
    (void)state;
    test_host_load(&mtls_host, "auth-mtls");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    test_host_unload(&mtls_host);
    return 0;
}

static void start(const char *rules, const char *source)
{
    test_host_fini(&mtls_host);
    test_host_clear_config(&mtls_host);
    if (rules)
        test_host_set(&mtls_host, "ssl.principal.mapping.rules", rules);
    if (source)
        test_host_set(&mtls_host, "principal.source", source);
    char err[512];
    if (test_host_init(&mtls_host, err, sizeof err) != CAIRN_OK)
        fail_msg("init with rules '%s' failed: %s", rules ? rules : "(default)", err);
}

/* Maps a peer with this subject and SANs; returns the status, the
 * principal "type:name" or the error in out. */
static int map(const char *subject, const char *uri, const char *dns, char *out, size_t outlen)
{
    const char *uris[] = {uri}, *dnss[] = {dns};
    struct cairn_tls_peer peer = {.struct_size = sizeof peer,
                                  .subject_dn = subject,
                                  .issuer_dn = "CN=Test CA",
                                  .san_uris = uris,
                                  .san_uri_count = uri ? 1 : 0,
                                  .san_dns = dnss,
                                  .san_dns_count = dns ? 1 : 0};
    struct cairn_principal_out principal = {.struct_size = sizeof principal};
    char err[256] = "";
    int rc = mtls_host.descriptor->authentication->map_tls_principal(mtls_host.instance, &peer, &principal, err,
                                                                     sizeof err);
    if (rc == CAIRN_OK)
        snprintf(out, outlen, "%s:%s", principal.type, principal.name);
    else
        snprintf(out, outlen, "%s", err);
    return rc;
}

static void expect_principal(const char *subject, const char *want)
{
    char got[700];
    if (map(subject, NULL, NULL, got, sizeof got) != CAIRN_OK || strcmp(got, want) != 0)
        fail_msg("%s mapped to '%s', expected '%s'", subject, got, want);
}

static void test_default_keeps_the_dn(void **state)
{
    (void)state;
    start(NULL, NULL);
    expect_principal("CN=alice,OU=Streams,O=Example,C=US", "User:CN=alice,OU=Streams,O=Example,C=US");
}

/* Kafka's documented examples (KIP-371). */
static void test_kafka_rules(void **state)
{
    (void)state;
    start("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
          "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
          "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n"
          "DEFAULT",
          NULL);
    expect_principal("CN=kafka-broker,OU=ServiceUsers,O=Org,C=US", "User:kafka-broker");
    expect_principal("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US", "User:duke@javasoft");
    expect_principal("OU=Streams,cn=Bob.Smith,O=Example", "User:bob.smith");
    expect_principal("O=Only,C=US", "User:O=Only,C=US");
    start("RULE:^CN=([^,]*),.*$/$1/U", NULL);
    expect_principal("CN=alice,O=x", "User:ALICE");
    /* Escaped slashes, and no rule matching refuses the client. */
    start("RULE:^CN=a\\/b,(.*)$/x\\/$1/", NULL);
    expect_principal("CN=a/b,O=y", "User:x/O=y");
    char out[512];
    assert_int_equal(map("CN=other", NULL, NULL, out, sizeof out), CAIRN_ERROR);
    assert_non_null(strstr(out, "no ssl.principal.mapping.rules rule maps the subject 'CN=other'"));
    assert_int_equal(test_host_metric(&mtls_host, "refused"), 1);
}

static void test_san_sources(void **state)
{
    (void)state;
    /* A '/' in a pattern is written '\/', as in Kafka. */
    start("RULE:^spiffe:\\/\\/example.org\\/ns\\/([^\\/]*)\\/sa\\/(.*)$/$2.$1/,DEFAULT", "san.uri");
    char out[512];
    assert_int_equal(map("CN=x", "spiffe://example.org/ns/prod/sa/alice", NULL, out, sizeof out), CAIRN_OK);
    assert_string_equal(out, "User:alice.prod");
    assert_int_equal(map("CN=x", NULL, "alice.example", out, sizeof out), CAIRN_ERROR);
    assert_non_null(strstr(out, "has no URI SAN"));
    start(NULL, "san.dns");
    assert_int_equal(map("CN=x", NULL, "alice.example", out, sizeof out), CAIRN_OK);
    assert_string_equal(out, "User:alice.example");
}

static void test_bad_rules_fail_init(void **state)
{
    (void)state;
    const char *bad[] = {"RULE:^CN=(.*)$/$1", "RULE:^CN=(.*$/$1/", "RULE:x/y/Q", "SOMETHING", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_host_fini(&mtls_host);
        test_host_clear_config(&mtls_host);
        test_host_set(&mtls_host, "ssl.principal.mapping.rules", bad[i]);
        char err[512] = "";
        if (test_host_init(&mtls_host, err, sizeof err) == CAIRN_OK)
            fail_msg("rules '%s' were accepted", bad[i]);
        assert_non_null(strstr(err, "ssl.principal.mapping.rules"));
    }
    test_host_clear_config(&mtls_host);
    test_host_set(&mtls_host, "principal.source", "issuer");
    char err[512] = "";
    assert_int_not_equal(test_host_init(&mtls_host, err, sizeof err), CAIRN_OK);
    assert_non_null(strstr(err, "principal.source 'issuer'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_keeps_the_dn),
        cmocka_unit_test(test_kafka_rules),
        cmocka_unit_test(test_san_sources),
        cmocka_unit_test(test_bad_rules_fail_init),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
