/* cairn's settings: flag parsing and precedence, the profile file, broker
 * addresses, and the consumer protocol assignment decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "produce_idempotent.h"

static char g_dir[64];

static const char *write_profile(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-cli-unit-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    setenv("HOME", g_dir, 1); /* no ~/.config/cairn/profile */
    unsetenv("CAIRN_BROKERS");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_parse_int(void **state)
{
    (void)state;
    long long v = 0;
    assert_int_equal(cli_parse_int("42", 1, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(cli_parse_int("0", 1, 100, &v), -1);
    assert_int_equal(cli_parse_int("101", 1, 100, &v), -1);
    assert_int_equal(cli_parse_int("4x", 1, 100, &v), -1);
    assert_int_equal(cli_parse_int("", 1, 100, &v), -1);
    assert_int_equal(cli_parse_int("99999999999999999999", 1, 100, &v), -1);
}

static void test_split_host_port(void **state)
{
    (void)state;
    char host[64];
    int port = 0;
    assert_int_equal(cli_split_host_port("broker-1.example:9092", host, sizeof(host), &port), 0);
    assert_string_equal(host, "broker-1.example");
    assert_int_equal(port, 9092);
    assert_int_equal(cli_split_host_port("[::1]:19092", host, sizeof(host), &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 19092);
    assert_int_equal(cli_split_host_port("nohost", host, sizeof(host), &port), -1);
    assert_int_equal(cli_split_host_port(":9092", host, sizeof(host), &port), -1);
    assert_int_equal(cli_split_host_port("h:0", host, sizeof(host), &port), -1);
    assert_int_equal(cli_split_host_port("h:70000", host, sizeof(host), &port), -1);
}

static void test_profile(void **state)
{
    (void)state;
    struct cli_settings s = {0};
    const char *p = write_profile("ok", "# comment\n\n bootstrap.servers = a:1,b:2 \nclient.id=ops\n"
                                        "request.timeout.ms=2500\ngroup.id=other-tools\nsecurity.protocol=PLAINTEXT\n");
    assert_int_equal(cli_profile_load(p, &s), 0);
    assert_string_equal(s.brokers, "a:1,b:2");
    assert_string_equal(s.client_id, "ops");
    assert_int_equal(s.timeout_ms, 2500);

    assert_int_equal(cli_profile_load(write_profile("ssl", "security.protocol=SSL\nssl.ca.location=/ca.pem\n"
                                                           "ssl.certificate.location=/c.pem\nssl.key.location=/c.key\n"
                                                           "ssl.key.password=pw\n"
                                                           "ssl.endpoint.identification.algorithm=none\n"),
                                      &s),
                     0);
    assert_true(s.ssl);
    assert_string_equal(s.ssl_ca, "/ca.pem");
    assert_string_equal(s.ssl_cert, "/c.pem");
    assert_string_equal(s.ssl_key, "/c.key");
    assert_string_equal(s.ssl_key_password, "pw");
    assert_true(s.ssl_no_host_check);
    assert_int_equal(
        cli_profile_load(write_profile("sasl_ssl", "security.protocol=SASL_SSL\nsasl.mechanisms=scram-sha-512\n"
                                                   "sasl.username=u\nsasl.password=p\n"),
                         &s),
        0);
    assert_true(s.ssl);
    assert_true(s.sasl);
    assert_string_equal(s.sasl_mechanism, "SCRAM-SHA-512");
    assert_string_equal(s.sasl_username, "u");
    assert_string_equal(s.sasl_password, "p");
    assert_int_equal(cli_profile_load(write_profile("proto", "security.protocol=sasl_gssapi\n"), &s), CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load(write_profile("gssapi", "sasl.mechanism=GSSAPI\n"), &s), CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load(write_profile("ssl_other", "ssl.keystore.location=/k.p12\n"), &s),
                     CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load(write_profile("sasl", "sasl.kerberos.service.name=kafka\n"), &s), CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load(write_profile("noeq", "bootstrap.servers\n"), &s), CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load(write_profile("badms", "request.timeout.ms=soon\n"), &s), CLI_EXIT_USAGE);
    assert_int_equal(cli_profile_load("/nonexistent/profile", &s), CLI_EXIT_USAGE);
}

struct own_flags {
    int seen_p;
    char last[32];
};

static int on_own(int opt, const char *arg, void *ctx)
{
    struct own_flags *o = ctx;
    if (opt != 'p')
        return CLI_EXIT_USAGE;
    o->seen_p++;
    snprintf(o->last, sizeof(o->last), "%s", arg);
    return -1;
}

static const struct option own_long[] = {{"partitions", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};

/* Runs cli_parse over a NULL-terminated argument list. */
static int parse(struct cli_settings *s, struct own_flags *o, char **pos, int *npos, const char *const *args)
{
    char *argv[32];
    int argc = 0;
    for (; args[argc]; argc++)
        argv[argc] = (char *)args[argc];
    argv[argc] = NULL;
    return cli_parse(argc, argv, "usage: test\n", "p:", own_long, on_own, o, s, pos, npos, 2);
}

static void test_parse_flags_and_precedence(void **state)
{
    (void)state;
    struct cli_settings s;
    struct own_flags o = {0};
    char *pos[2];
    int npos;
    const char *prof = write_profile("prec", "bootstrap.servers=profile:1\nrequest.timeout.ms=700\n");

    /* Defaults. */
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"create", NULL}), -1);
    assert_string_equal(s.brokers, "127.0.0.1:9092");
    assert_int_equal(s.timeout_ms, 10000);
    assert_false(s.json);

    /* Profile, then environment, then flag; positionals and own flags anywhere. */
    assert_int_equal(
        parse(&s, &o, pos, &npos, (const char *const[]){"create", "t1", "--profile", prof, "-p", "3", "t2", NULL}), -1);
    assert_string_equal(s.brokers, "profile:1");
    assert_int_equal(s.timeout_ms, 700);
    assert_int_equal(npos, 2);
    assert_string_equal(pos[0], "t1");
    assert_string_equal(pos[1], "t2");
    assert_int_equal(o.seen_p, 1);
    assert_string_equal(o.last, "3");

    setenv("CAIRN_BROKERS", "env:2", 1);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--profile", prof, NULL}), -1);
    assert_string_equal(s.brokers, "env:2");
    assert_int_equal(parse(&s, &o, pos, &npos,
                           (const char *const[]){"list", "--profile", prof, "-b", "flag:3", "--timeout", "50",
                                                 "--format", "json", NULL}),
                     -1);
    assert_string_equal(s.brokers, "flag:3");
    assert_int_equal(s.timeout_ms, 50);
    assert_true(s.json);
    unsetenv("CAIRN_BROKERS");

    /* A group member's timings: librdkafka's defaults, then its keys. */
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", NULL}), -1);
    assert_int_equal(s.session_timeout_ms, 45000);
    assert_int_equal(s.heartbeat_interval_ms, 3000);
    assert_int_equal(s.max_poll_interval_ms, 300000);
    assert_int_equal(s.auto_commit_interval_ms, 5000);
    assert_int_equal(
        parse(&s, &o, pos, &npos,
              (const char *const[]){"list", "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=200", "-X",
                                    "max.poll.interval.ms=9000", "-X", "auto.commit.interval.ms=100", NULL}),
        -1);
    assert_int_equal(s.session_timeout_ms, 6000);
    assert_int_equal(s.heartbeat_interval_ms, 200);
    assert_int_equal(s.max_poll_interval_ms, 9000);
    assert_int_equal(s.auto_commit_interval_ms, 100);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "-X", "session.timeout.ms=soon", NULL}),
                     CLI_EXIT_USAGE);

    /* The producer's: idempotence unset (on unless acks say otherwise). */
    assert_int_equal(s.idempotence, -1);
    assert_int_equal(s.delivery_timeout_ms, 0);
    assert_int_equal(
        parse(&s, &o, pos, &npos,
              (const char *const[]){"list", "-X", "enable.idempotence=false", "-X", "delivery.timeout.ms=40000", NULL}),
        -1);
    assert_int_equal(s.idempotence, 0);
    assert_int_equal(s.delivery_timeout_ms, 40000);
    assert_int_equal(
        parse(&s, &o, pos, &npos,
              (const char *const[]){"list", "-X", "enable.idempotence=TRUE", "-X", "message.timeout.ms=5", NULL}),
        -1);
    assert_int_equal(s.idempotence, 1);
    assert_int_equal(s.delivery_timeout_ms, 5);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "-X", "enable.idempotence=yes", NULL}),
                     CLI_EXIT_USAGE);
    setenv("CAIRN_ENABLE_IDEMPOTENCE", "false", 1);
    setenv("CAIRN_DELIVERY_TIMEOUT_MS", "700", 1);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", NULL}), -1);
    assert_int_equal(s.idempotence, 0);
    assert_int_equal(s.delivery_timeout_ms, 700);
    unsetenv("CAIRN_ENABLE_IDEMPOTENCE");
    unsetenv("CAIRN_DELIVERY_TIMEOUT_MS");

    /* Usage errors and help. */
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--bogus", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "-x", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "-b", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--format", "xml", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--timeout", "0", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "a", "b", "c", NULL}), CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--profile", "/nonexistent", NULL}),
                     CLI_EXIT_USAGE);
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", "--help", NULL}), CLI_EXIT_OK);
}

/* enable.idempotence against --acks, as Kafka 3's producer; sequences
 * advance per partition by each batch's records and wrap after INT32_MAX. */
static void test_produce_idempotence(void **state)
{
    (void)state;
    bool on = false;
    assert_int_equal(produce_idem_resolve(-1, false, -1, &on), 0);
    assert_true(on);
    assert_int_equal(produce_idem_resolve(-1, true, -1, &on), 0);
    assert_true(on);
    assert_int_equal(produce_idem_resolve(-1, true, 1, &on), 0);
    assert_false(on);
    assert_int_equal(produce_idem_resolve(0, false, -1, &on), 0);
    assert_false(on);
    assert_int_equal(produce_idem_resolve(1, true, 0, &on), CLI_EXIT_USAGE);
    assert_int_equal(produce_idem_resolve(1, true, 1, &on), CLI_EXIT_USAGE);

    int32_t seq[2] = {0, INT32_MAX - 1};
    struct produce_idem id = {.enabled = true, .producer_id = 7, .epoch = 0, .partitions = 2, .next_seq = seq};
    struct record_batch_builder b;
    record_batch_builder_init(&b, 0);
    b.count = 3;
    produce_idem_stamp(&id, 0, &b);
    assert_int_equal(b.producer_id, 7);
    assert_int_equal(b.producer_epoch, 0);
    assert_int_equal(b.base_sequence, 0);
    produce_idem_stamp(&id, 0, &b);
    assert_int_equal(b.base_sequence, 3);
    assert_int_equal(seq[0], 6);
    produce_idem_stamp(&id, 1, &b);
    assert_int_equal(b.base_sequence, INT32_MAX - 1);
    assert_int_equal(seq[1], 1); /* INT32_MAX - 1, INT32_MAX, then 0 */
    assert_true(produce_idem_already_written(&id, KAFKA_ERR_DUPLICATE_SEQUENCE_NUMBER));
    assert_false(produce_idem_already_written(&id, KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER));
    assert_non_null(produce_idem_hint(KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER));
    assert_non_null(produce_idem_hint(KAFKA_ERR_UNKNOWN_PRODUCER_ID));
    assert_null(produce_idem_hint(KAFKA_ERR_NONE));
}

static void test_home_profile(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/.config", g_dir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/.config/cairn", g_dir);
    mkdir(path, 0700);
    write_profile(".config/cairn/profile", "bootstrap.servers=home:4\n");
    struct cli_settings s;
    struct own_flags o = {0};
    char *pos[2];
    int npos;
    assert_int_equal(parse(&s, &o, pos, &npos, (const char *const[]){"list", NULL}), -1);
    assert_string_equal(s.brokers, "home:4");
    snprintf(path, sizeof(path), "%s/.config/cairn/profile", g_dir);
    unlink(path);
}

struct seen {
    char text[256];
    size_t used;
};

static void collect(struct kafka_str topic, int32_t partition, void *ctx)
{
    struct seen *s = ctx;
    s->used += (size_t)snprintf(s->text + s->used, sizeof(s->text) - s->used, "%.*s/%d ", (int)topic.len, topic.data,
                                (int)partition);
}

static void test_assignment_decode(void **state)
{
    (void)state;
    /* version 1; [ "ab": [0, 2], "c": [7] ]; user data null */
    const uint8_t bytes[] = {0, 1, 0, 0, 0, 2,   0, 2, 'a', 'b', 0, 0, 0, 2, 0,    0,    0,    0,   0,
                             0, 0, 2, 0, 1, 'c', 0, 0, 0,   1,   0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff};
    struct seen s = {0};
    assert_int_equal(cli_assignment_each((struct kafka_bytes){bytes, (int32_t)sizeof(bytes)}, collect, &s), 0);
    assert_string_equal(s.text, "ab/0 ab/2 c/7 ");

    struct seen empty = {0};
    assert_int_equal(cli_assignment_each((struct kafka_bytes){NULL, -1}, collect, &empty), 0);
    assert_int_equal(empty.used, 0);

    /* Cut inside the second topic: the first topic is reported, then -1. */
    struct seen cut = {0};
    assert_int_equal(cli_assignment_each((struct kafka_bytes){bytes, 26}, collect, &cut), -1);
    assert_string_equal(cut.text, "ab/0 ab/2 ");
    /* A topic count larger than the bytes can hold. */
    const uint8_t huge[] = {0, 0, 0x7f, 0xff, 0xff, 0xff};
    assert_int_equal(cli_assignment_each((struct kafka_bytes){huge, (int32_t)sizeof(huge)}, collect, &cut), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_int),         cmocka_unit_test(test_split_host_port),
        cmocka_unit_test(test_profile),           cmocka_unit_test(test_parse_flags_and_precedence),
        cmocka_unit_test(test_home_profile),      cmocka_unit_test(test_produce_idempotence),
        cmocka_unit_test(test_assignment_decode),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
