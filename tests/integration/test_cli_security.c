/* The `cairn` command-line tool's security and limits commands run as a
 * real process against a real cairnd: ACLs, SCRAM users (checked by logging
 * in with librdkafka) and client quotas; the commands are the examples in
 * docs/cli.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"
#include "rk_helpers.h"

/* The rows of `cairn acl list ... --format json` for the given extra flags. */
static size_t acl_count(const char *bs, const char *const *flags)
{
    const char *args[20] = {"acl", "list", "-b", bs, "--format", "json"};
    int n = 6;
    for (int i = 0; flags && flags[i] && n < 19; i++)
        args[n++] = flags[i];
    args[n] = NULL;
    struct run r;
    run_env(&r, NULL, args);
    expect(&r, 0, NULL, NULL);
    json_t *v = parse_json(&r);
    size_t count = json_array_size(v);
    json_decref(v);
    return count;
}

static void test_acl_commands(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "User:alice", "--operation", "Read", "--operation",
        "Describe", "--topic", "orders");
    expect(&r, 0, "created ACL ALLOW User:alice Read on TOPIC:LITERAL:orders from host *", NULL);
    expect(&r, 0, "created ACL ALLOW User:alice Describe on TOPIC:LITERAL:orders from host *", NULL);
    RUN(&r, "acl", "create", "-b", bs, "--deny-principal", "User:mallory", "--operation", "Write", "--topic", "pay-",
        "--resource-pattern-type", "prefixed", "--host", "10.0.0.7");
    expect(&r, 0, "created ACL DENY User:mallory Write on TOPIC:PREFIXED:pay- from host 10.0.0.7", NULL);
    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "User:ops", "--operation", "ALTER_CONFIGS", "--cluster");
    expect(&r, 0, "created ACL ALLOW User:ops AlterConfigs on CLUSTER:LITERAL:kafka-cluster from host *", NULL);

    RUN(&r, "acl", "list", "-b", bs);
    expect(&r, 0, "PRINCIPAL", NULL);
    expect(&r, 0, "User:mallory", NULL);
    expect(&r, 0, "10.0.0.7", NULL);
    assert_int_equal(acl_count(bs, NULL), 4);
    assert_int_equal(acl_count(bs, (const char *const[]){"--topic", "orders", NULL}), 2);
    assert_int_equal(acl_count(bs, (const char *const[]){"--principal", "User:ops", NULL}), 1);
    /* match: the literal and prefixed ACLs that apply to a topic name */
    assert_int_equal(
        acl_count(bs, (const char *const[]){"--topic", "pay-eu", "--resource-pattern-type", "match", NULL}), 1);
    RUN(&r, "acl", "list", "-b", bs, "--topic", "pay-", "--resource-pattern-type", "prefixed", "--format", "json");
    json_t *v = parse_json(&r);
    assert_int_equal(json_array_size(v), 1);
    json_t *row = json_array_get(v, 0);
    assert_string_equal(json_string_value(json_object_get(row, "resource_type")), "TOPIC");
    assert_string_equal(json_string_value(json_object_get(row, "resource_name")), "pay-");
    assert_string_equal(json_string_value(json_object_get(row, "pattern_type")), "PREFIXED");
    assert_string_equal(json_string_value(json_object_get(row, "principal")), "User:mallory");
    assert_string_equal(json_string_value(json_object_get(row, "host")), "10.0.0.7");
    assert_string_equal(json_string_value(json_object_get(row, "operation")), "Write");
    assert_string_equal(json_string_value(json_object_get(row, "permission")), "DENY");
    json_decref(v);

    RUN(&r, "acl", "delete", "-b", bs, "--topic", "orders", "--allow-principal", "User:alice", "--operation", "Read");
    expect(&r, 0, "deleted ACL ALLOW User:alice Read on TOPIC:LITERAL:orders from host *", NULL);
    assert_int_equal(acl_count(bs, (const char *const[]){"--topic", "orders", NULL}), 1);
    RUN(&r, "acl", "delete", "-b", bs, "--topic", "orders", "--allow-principal", "User:alice", "--operation", "Read");
    expect(&r, 0, "no ACL matched", NULL);
    RUN(&r, "acl", "delete", "-b", bs, "--topic", "pay-", "--resource-pattern-type", "any", "--cluster");
    expect(&r, 0, "deleted ACL DENY User:mallory Write on TOPIC:PREFIXED:pay-", NULL);
    expect(&r, 0, "deleted ACL ALLOW User:ops AlterConfigs", NULL);
    assert_int_equal(acl_count(bs, NULL), 1);

    /* bad input: usage errors before any request, Kafka errors named */
    RUN(&r, "acl", "create", "-b", bs, "--topic", "orders");
    expect(&r, 2, NULL, "acl create wants --allow-principal or --deny-principal and a resource");
    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "alice", "--topic", "orders");
    expect(&r, 2, NULL, "a principal is TYPE:NAME (User:alice), got 'alice'");
    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "User:a", "--operation", "Fly", "--topic", "orders");
    expect(&r, 2, NULL, "unknown operation 'Fly'");
    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type",
        "match");
    expect(&r, 2, NULL, "acl create wants --resource-pattern-type literal or prefixed");
    RUN(&r, "acl", "list", "-b", bs, "--resource-pattern-type", "glob");
    expect(&r, 2, NULL, "--resource-pattern-type wants literal, prefixed, match or any, got 'glob'");
    RUN(&r, "acl", "delete", "-b", bs, "--allow-principal", "User:alice");
    expect(&r, 2, NULL, "acl delete wants a resource");
    RUN(&r, "acl", "create", "-b", bs, "--allow-principal", "User:a", "--topic", "");
    expect(&r, 1, NULL, "INVALID_REQUEST: cannot create ACL ALLOW User:a All on TOPIC:LITERAL: from host *");
    RUN(&r, "acl", "list", "-b", "127.0.0.1:1", "--timeout", "2000");
    expect(&r, 3, NULL, NULL);
    broker_mark_passed(b);
}

/* Whether librdkafka authenticates on the SASL_PLAINTEXT listener with
 * these credentials (a Metadata request only succeeds after SASL). */
static bool scram_login_ok(const char *bootstrap, const char *mech, const char *user, const char *password)
{
    const char *conf[] = {"security.protocol",
                          "SASL_PLAINTEXT",
                          "sasl.mechanisms",
                          mech,
                          "sasl.username",
                          user,
                          "sasl.password",
                          password,
                          NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, NULL, &md, 5000);
    if (md)
        rd_kafka_metadata_destroy(md);
    rk_producer_destroy(rk);
    return err == RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void test_user_commands(void **state)
{
    struct test_broker *b = *state;
    int sasl_port = harness_free_port();
    assert_true(sasl_port > 0);
    char listeners[200], sasl_bs[64];
    snprintf(listeners, sizeof(listeners), "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             sasl_port);
    snprintf(sasl_bs, sizeof(sasl_bs), "127.0.0.1:%d", sasl_port);
    broker_start(b, (const char *const[]){listeners, "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512", NULL});
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "user", "create", "alice", "-b", bs, "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", "--password",
        "alice-secret");
    expect(&r, 0, "created SCRAM-SHA-512 credential of user 'alice' (8192 iterations)", NULL);
    g_stdin = "bob-secret\n";
    RUN(&r, "user", "create", "bob", "-b", bs);
    expect(&r, 0, "created SCRAM-SHA-256 credential of user 'bob' (4096 iterations)", NULL);

    RUN(&r, "user", "list", "-b", bs);
    expect(&r, 0, "ITERATIONS", NULL);
    expect(&r, 0, "SCRAM-SHA-512", NULL);
    RUN(&r, "user", "list", "alice", "-b", bs, "--format", "json");
    json_t *v = parse_json(&r);
    assert_int_equal(json_array_size(v), 1);
    json_t *u = json_array_get(v, 0);
    assert_string_equal(json_string_value(json_object_get(u, "user")), "alice");
    json_t *cred = json_array_get(json_object_get(u, "credentials"), 0);
    assert_string_equal(json_string_value(json_object_get(cred, "mechanism")), "SCRAM-SHA-512");
    assert_int_equal(json_integer_value(json_object_get(cred, "iterations")), 8192);
    json_decref(v);

    /* the salted passwords the tool computed are what a real client logs in with */
    assert_true(scram_login_ok(sasl_bs, "SCRAM-SHA-512", "alice", "alice-secret"));
    assert_true(scram_login_ok(sasl_bs, "SCRAM-SHA-256", "bob", "bob-secret"));
    assert_false(scram_login_ok(sasl_bs, "SCRAM-SHA-512", "alice", "wrong"));
    assert_false(scram_login_ok(sasl_bs, "SCRAM-SHA-256", "alice", "alice-secret"));

    RUN(&r, "user", "delete", "alice", "-b", bs, "--mechanism", "SCRAM-SHA-512");
    expect(&r, 0, "deleted SCRAM-SHA-512 credential of user 'alice'", NULL);
    assert_false(scram_login_ok(sasl_bs, "SCRAM-SHA-512", "alice", "alice-secret"));
    RUN(&r, "user", "list", "alice", "-b", bs);
    expect(&r, 1, NULL, "RESOURCE_NOT_FOUND: cannot describe user 'alice'");
    RUN(&r, "user", "delete", "alice", "-b", bs, "--mechanism", "SCRAM-SHA-512");
    expect(&r, 1, NULL, "RESOURCE_NOT_FOUND: cannot delete SCRAM-SHA-512 credential of user 'alice'");

    RUN(&r, "user", "create", "carol", "-b", bs, "--mechanism", "MD5", "--password", "x");
    expect(&r, 2, NULL, "--mechanism wants SCRAM-SHA-256 or SCRAM-SHA-512, got 'MD5'");
    RUN(&r, "user", "create", "carol", "-b", bs, "--iterations", "100", "--password", "x");
    expect(&r, 2, NULL, "--iterations wants 4096..16384, got '100'");
    RUN(&r, "user", "create", "-b", bs, "--password", "x");
    expect(&r, 2, NULL, "user create wants a user name");
    g_stdin = "";
    RUN(&r, "user", "create", "carol", "-b", bs);
    expect(&r, 2, NULL, "no password: give --password or a line on standard input");
    broker_mark_passed(b);
}

/* cairn over SASL_PLAINTEXT and SASL_SSL (the profile keys of docs/cli.md): SCRAM users
 * made with `cairn user create` on the PLAINTEXT listener then create and
 * list topics through the SASL listener, from -X flags, the environment
 * and a profile; a wrong password and a mechanism the broker does not
 * enable fail with the broker's error. */
static void test_sasl_commands(void **state)
{
    struct test_broker *b = *state;
    char certs[600], cmd[1400], keystore[700], ca[700];
    snprintf(certs, sizeof(certs), "%s/certs", g_home);
    assert_int_equal(mkdir(certs, 0700), 0);
    snprintf(cmd, sizeof(cmd), "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, certs);
    assert_int_equal(system(cmd), 0);
    snprintf(keystore, sizeof(keystore), "ssl.keystore.location=%s/server.pem", certs);
    snprintf(ca, sizeof(ca), "ssl.ca.location=%s/ca.pem", certs);
    int sasl_port = harness_free_port(), ssl_port = harness_free_port();
    assert_true(sasl_port > 0 && ssl_port > 0);
    char listeners[300], sasl_bs[64], ssl_bs[64];
    snprintf(listeners, sizeof(listeners),
             "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", sasl_port,
             ssl_port);
    snprintf(sasl_bs, sizeof(sasl_bs), "127.0.0.1:%d", sasl_port);
    snprintf(ssl_bs, sizeof(ssl_bs), "127.0.0.1:%d", ssl_port);
    broker_start(
        b, (const char *const[]){listeners, keystore, "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512", NULL});
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "user", "create", "alice", "-b", bs, "--password", "alice-secret");
    expect(&r, 0, "created SCRAM-SHA-256 credential of user 'alice'", NULL);
    RUN(&r, "user", "create", "bob", "-b", bs, "--mechanism", "SCRAM-SHA-512", "--password", "bob-secret");
    expect(&r, 0, "created SCRAM-SHA-512 credential of user 'bob'", NULL);

    /* -X flags; create then list also opens a second connection (to the
     * broker's real id after bootstrap), authenticated on its own */
    RUN(&r, "topic", "create", "sasl-orders", "-b", sasl_bs, "-p", "2", "-X", "security.protocol=sasl_plaintext", "-X",
        "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret");
    expect(&r, 0, "created topic 'sasl-orders'", NULL);
    RUN(&r, "topic", "list", "-b", sasl_bs, "-X", "security.protocol=SASL_PLAINTEXT", "-X",
        "sasl.mechanisms=scram-sha-256", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret");
    expect(&r, 0, "sasl-orders", NULL);

    /* the environment (CAIRN_SASL_PASSWORD) and a profile */
    RUN_ENV(&r, "CAIRN_SASL_PASSWORD=bob-secret", "topic", "describe", "sasl-orders", "-b", sasl_bs, "-X",
            "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=bob");
    expect(&r, 0, "sasl-orders", NULL);
    char profile[600];
    snprintf(profile, sizeof(profile), "%s/sasl.profile", g_home);
    FILE *f = fopen(profile, "w");
    assert_non_null(f);
    fprintf(f,
            "bootstrap.servers=%s\nsecurity.protocol=sasl_plaintext\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.username=bob\nsasl.password=bob-secret\n",
            sasl_bs);
    fclose(f);
    RUN(&r, "topic", "list", "--profile", profile, "--format", "json");
    expect(&r, 0, "sasl-orders", NULL);

    /* SASL_SSL: the same over TLS, the CA from ssl.ca.location */
    RUN(&r, "topic", "list", "-b", ssl_bs, "-X", "security.protocol=sasl_ssl", "-X", ca, "-X",
        "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=bob", "-X", "sasl.password=bob-secret");
    expect(&r, 0, "sasl-orders", NULL);
    RUN(&r, "topic", "list", "-b", ssl_bs, "-X", "security.protocol=sasl_ssl", "-X", ca, "-X",
        "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=bob", "-X", "sasl.password=alice-secret");
    expect(&r, 1, NULL, "SASL_AUTHENTICATION_FAILED: SASL SCRAM-SHA-512 authentication of user 'bob' failed");

    /* failures: the broker's message, exit code 1; nothing created */
    RUN(&r, "topic", "create", "sasl-nope", "-b", sasl_bs, "-X", "security.protocol=sasl_plaintext", "-X",
        "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=wrong");
    expect(&r, 1, NULL,
           "SASL_AUTHENTICATION_FAILED: SASL SCRAM-SHA-256 authentication of user 'alice' failed (Authentication "
           "failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256)");
    RUN(&r, "topic", "list", "--profile", profile, "-X", "sasl.mechanism=SCRAM-SHA-256");
    expect(&r, 1, NULL, "SASL_AUTHENTICATION_FAILED");
    RUN(&r, "topic", "list", "--profile", profile, "-X", "sasl.mechanism=PLAIN");
    expect(&r, 1, NULL,
           "UNSUPPORTED_SASL_MECHANISM: the broker does not enable SASL mechanism PLAIN (it enables: "
           "SCRAM-SHA-256,SCRAM-SHA-512)");
    RUN(&r, "topic", "list", "-b", sasl_bs, "-X", "security.protocol=sasl_plaintext");
    expect(&r, 2, NULL, "security.protocol=sasl_plaintext needs sasl.mechanism");
    RUN(&r, "topic", "list", "-b", sasl_bs, "-X", "sasl.mechanism=GSSAPI");
    expect(&r, 2, NULL, "sasl.mechanism=GSSAPI is not supported by cairn (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)");
    RUN(&r, "topic", "list", "-b", bs);
    expect(&r, 0, "sasl-orders", NULL);
    assert_null(strstr(r.out, "sasl-nope"));
    broker_mark_passed(b);
}

/* PLAIN through the auth-sasl plugin against a sasldb made with
 * saslpasswd2: topic create and list over SASL_PLAINTEXT, and Kafka's
 * PLAIN failure message for a wrong password. */
static void test_sasl_plain(void **state)
{
#ifndef CAIRN_PLUGIN_DIR
    (void)state;
    skip();
#else
    struct test_broker *b = *state;
    char db[600], cmd[900], db_key[700], plugin_path[600], listeners[200], sasl_bs[64];
    snprintf(db, sizeof(db), "%s/sasldb", g_home);
    snprintf(cmd, sizeof(cmd),
             "printf %%s 'gina-secret' | /usr/sbin/saslpasswd2 -p -c -f '%s' -u cairn -a cairn gina 2>&1", db);
    if (system(cmd) != 0)
        fail_msg("saslpasswd2 failed (is sasl2-bin installed?): %s", cmd);
    int sasl_port = harness_free_port();
    assert_true(sasl_port > 0);
    snprintf(listeners, sizeof(listeners), "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             sasl_port);
    snprintf(sasl_bs, sizeof(sasl_bs), "127.0.0.1:%d", sasl_port);
    snprintf(db_key, sizeof(db_key), "plugin.auth-sasl.sasldb_path=%s", db);
    snprintf(plugin_path, sizeof(plugin_path), "plugin.path=%s", CAIRN_PLUGIN_DIR);
    broker_start(b, (const char *const[]){listeners, plugin_path, "plugins=auth-sasl", db_key,
                                          "plugin.auth-sasl.realm=cairn", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
                                          NULL});
    struct run r;
    RUN(&r, "topic", "create", "plain-orders", "-b", sasl_bs, "-X", "security.protocol=sasl_plaintext", "-X",
        "sasl.mechanism=PLAIN", "-X", "sasl.username=gina", "-X", "sasl.password=gina-secret");
    expect(&r, 0, "created topic 'plain-orders'", NULL);
    RUN(&r, "topic", "list", "-b", sasl_bs, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN",
        "-X", "sasl.username=gina", "-X", "sasl.password=gina-secret");
    expect(&r, 0, "plain-orders", NULL);
    RUN(&r, "topic", "list", "-b", sasl_bs, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=PLAIN",
        "-X", "sasl.username=gina", "-X", "sasl.password=wrong");
    expect(&r, 1, NULL,
           "SASL_AUTHENTICATION_FAILED: SASL PLAIN authentication of user 'gina' failed (Authentication failed: "
           "Invalid username or password)");
    broker_mark_passed(b);
#endif
}

/* cairn quota set | describe over AlterClientQuotas / DescribeClientQuotas:
 * the commands of docs/operations.md and docs/cli.md. */
static void test_quota_commands(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "quota", "set", "--user", "alice", "--client-id-default", "--add", "producer_byte_rate=1048576", "--add",
        "request_percentage=50", "-b", bs);
    expect(&r, 0, "updated quotas of user=alice,client-id=<default>", NULL);
    RUN(&r, "quota", "set", "--client-id", "reporting", "--add", "consumer_byte_rate=2097152", "-b", bs);
    expect(&r, 0, "updated quotas of client-id=reporting", NULL);
    RUN(&r, "quota", "set", "--ip-default", "--add", "connection_creation_rate=20", "-b", bs);
    expect(&r, 0, "updated quotas of ip=<default>", NULL);
    RUN(&r, "quota", "set", "--user", "bob", "--add", "producer_byte_rate=1000", "--validate-only", "-b", bs);
    expect(&r, 0, "validated quotas of user=bob", NULL);

    RUN(&r, "quota", "describe", "-b", bs);
    expect(&r, 0, "user=alice,client-id=<default>  request_percentage", NULL);
    expect(&r, 0, "client-id=reporting", NULL);
    assert_null(strstr(r.out, "user=bob"));
    RUN(&r, "quota", "describe", "--user", "alice", "--format", "json", "-b", bs);
    json_t *v = parse_json(&r);
    assert_int_equal(json_array_size(v), 1);
    json_t *q = json_object_get(json_array_get(v, 0), "quotas");
    assert_true(json_real_value(json_object_get(q, "producer_byte_rate")) == 1048576);
    assert_true(json_is_null(json_object_get(json_object_get(json_array_get(v, 0), "entity"), "client-id")));
    json_decref(v);

    RUN(&r, "quota", "set", "--user", "alice", "--client-id-default", "--delete", "request_percentage", "-b", bs);
    expect(&r, 0, "updated quotas of user=alice,client-id=<default>", NULL);
    RUN(&r, "quota", "describe", "--user", "alice", "--client-id-default", "--strict", "-b", bs);
    assert_null(strstr(r.out, "request_percentage"));
    expect(&r, 0, "producer_byte_rate", NULL);

    RUN(&r, "quota", "set", "--user", "bob", "--add", "bogus_rate=1", "-b", bs);
    expect(&r, 1, NULL, "INVALID_REQUEST: cannot set quotas of user=bob (Invalid configuration key bogus_rate)");
    RUN(&r, "quota", "set", "--ip", "10.0.0.1", "--add", "producer_byte_rate=1", "-b", bs);
    expect(&r, 1, NULL, "Invalid configuration key producer_byte_rate");
    RUN(&r, "quota", "set", "--user", "bob", "-b", bs);
    expect(&r, 2, NULL, "quota set wants --add or --delete");
    RUN(&r, "quota", "set", "--add", "producer_byte_rate=5", "-b", bs);
    expect(&r, 2, NULL, "quota set wants an entity");
    RUN(&r, "quota", "set", "--user", "bob", "--add", "producer_byte_rate", "-b", bs);
    expect(&r, 2, NULL, "--add wants KEY=NUMBER, got 'producer_byte_rate'");
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_acl_commands, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_user_commands, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_sasl_commands, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_sasl_plain, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_quota_commands, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
