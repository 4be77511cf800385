/* The `cairn` command-line tool run as a real process against a real
 * cairnd: every subcommand's output and exit code, JSON output parsed back,
 * consumer group lag from a librdkafka group, bad input, and the profile
 * file and environment. The commands here and in test_cli_security.c (ACLs,
 * SCRAM users, quotas) are the examples in docs/cli.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "cli_runner.h"
#include "rk_helpers.h"

/* The configs entry named key in `cairn topic describe --format json`. */
static json_t *config_entry(json_t *desc, const char *key)
{
    json_t *configs = json_object_get(desc, "configs"), *e;
    size_t i;
    json_array_foreach(configs, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), key))
            return e;
    }
    fail_msg("no config %s", key);
    return NULL;
}

static const char *source_of(json_t *desc, const char *key)
{
    return json_string_value(json_object_get(config_entry(desc, key), "source"));
}

static void test_topic_lifecycle(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "topic", "create", "orders", "-b", bs, "--partitions", "3", "-c", "retention.ms=3600000");
    expect(&r, 0, "created topic 'orders'", NULL);
    RUN(&r, "topic", "create", "orders", "-b", bs);
    expect(&r, 1, NULL, "TOPIC_ALREADY_EXISTS: topic 'orders' already exists");
    expect(&r, 1, NULL, "use `cairn topic describe orders`");

    RUN(&r, "topic", "create", "audit", "-b", bs);
    expect(&r, 0, "created topic 'audit' (1 partitions", NULL);

    RUN(&r, "topic", "list", "-b", bs);
    expect(&r, 0, "orders", NULL);
    expect(&r, 0, "NAME", NULL);
    assert_true(strstr(r.out, "audit") < strstr(r.out, "orders")); /* sorted by name */
    RUN(&r, "topic", "list", "-b", bs, "--format", "json");
    json_t *list = parse_json(&r);
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "name")), "audit");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "name")), "orders");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 1), "partitions")), 3);
    json_decref(list);
    RUN(&r, "topic", "list", "-b", bs, "--internal");
    expect(&r, 0, "__consumer_offsets", NULL);

    RUN(&r, "topic", "describe", "orders", "-b", bs);
    expect(&r, 0, "DYNAMIC_TOPIC_CONFIG", NULL);
    expect(&r, 0, "DEFAULT_CONFIG", NULL);
    expect(&r, 0, "ISR", NULL);
    RUN(&r, "topic", "describe", "orders", "-b", bs, "--format", "json");
    json_t *d = parse_json(&r);
    assert_int_equal(json_integer_value(json_object_get(d, "partition_count")), 3);
    json_t *parts = json_object_get(d, "partitions");
    assert_int_equal(json_array_size(parts), 3);
    json_t *p0 = json_array_get(parts, 0);
    assert_true(json_integer_value(json_object_get(p0, "leader")) >= 0);
    assert_int_equal(json_array_size(json_object_get(p0, "isr")), 1);
    assert_string_equal(source_of(d, "retention.ms"), "DYNAMIC_TOPIC_CONFIG");
    assert_string_equal(json_string_value(json_object_get(config_entry(d, "retention.ms"), "value")), "3600000");
    assert_string_equal(source_of(d, "cleanup.policy"), "DEFAULT_CONFIG");
    json_decref(d);

    RUN(&r, "topic", "alter-config", "orders", "-b", bs, "--set", "cleanup.policy=compact", "--delete", "retention.ms");
    expect(&r, 0, "altered 2 config(s) of topic 'orders'", NULL);
    RUN(&r, "topic", "describe", "orders", "-b", bs, "--format", "json");
    d = parse_json(&r);
    assert_string_equal(source_of(d, "cleanup.policy"), "DYNAMIC_TOPIC_CONFIG");
    assert_string_equal(source_of(d, "retention.ms"), "DEFAULT_CONFIG");
    json_decref(d);

    RUN(&r, "topic", "add-partitions", "orders", "-b", bs, "--num", "2");
    expect(&r, 0, "topic 'orders' now has 5 partitions", NULL);
    RUN(&r, "topic", "describe", "orders", "-b", bs, "--format", "json");
    d = parse_json(&r);
    assert_int_equal(json_integer_value(json_object_get(d, "partition_count")), 5);
    json_decref(d);

    RUN(&r, "topic", "delete", "orders", "audit", "-b", bs);
    expect(&r, 0, "deleted topic 'orders'", NULL);
    expect(&r, 0, "deleted topic 'audit'", NULL);
    RUN(&r, "topic", "describe", "orders", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'orders' does not exist");
    RUN(&r, "topic", "list", "-b", bs);
    expect(&r, 0, NULL, NULL);
    assert_null(strstr(r.out, "orders"));
    assert_null(strstr(r.out, "audit"));
    broker_mark_passed(b);
}

static void test_bad_input(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;

    RUN(&r, "topic", "describe", "nosuch", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION");
    RUN(&r, "topic", "delete", "nosuch", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION");
    RUN(&r, "topic", "create", "badcfg", "-b", bs, "-c", "retention.ms=soon");
    expect(&r, 1, NULL, "INVALID_CONFIG");
    RUN(&r, "topic", "create", "t1", "-b", bs);
    expect(&r, 0, NULL, NULL);
    RUN(&r, "topic", "alter-config", "t1", "-b", bs, "--set", "retention.ms=soon");
    expect(&r, 1, NULL, "INVALID_CONFIG");

    RUN(&r, "topic", "list", "-b", bs, "--bogus");
    expect(&r, 2, NULL, "--bogus");
    RUN(&r, "topic", "describe", "-b", bs);
    expect(&r, 2, NULL, "one topic name");
    RUN(&r, "topic", "frobnicate", "-b", bs);
    expect(&r, 2, NULL, "unknown subcommand");
    RUN(&r, "topic", "add-partitions", "t1", "-b", bs);
    expect(&r, 2, NULL, "--num");
    RUN(&r, "topic", "list", "--format", "yaml", "-b", bs);
    expect(&r, 2, NULL, "--format");
    RUN(&r, "nonsense");
    expect(&r, 2, NULL, "unknown command");
    RUN(&r, "cluster", "info", "-b", "");
    expect(&r, 2, NULL, "no brokers given");
    RUN(&r, "cluster", "info", "-b", "nocolon");
    expect(&r, 2, NULL, "bad broker address 'nocolon'");

    const char *const helps[][3] = {
        {"topic", "create", "--help"}, {"topic", "list", "--help"},           {"topic", "describe", "--help"},
        {"topic", "delete", "--help"}, {"topic", "add-partitions", "--help"}, {"topic", "alter-config", "--help"},
        {"cluster", "info", "--help"}, {"group", "list", "--help"},           {"group", "describe", "--help"}};
    for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
        RUN(&r, helps[i][0], helps[i][1], helps[i][2]);
        expect(&r, 0, "usage: cairn", NULL);
    }

    /* Nobody listens: exit 3 within the timeout (plus process start). */
    char dead[64];
    snprintf(dead, sizeof(dead), "127.0.0.1:%d", harness_free_port());
    long long t0 = harness_now_ms();
    RUN(&r, "cluster", "info", "-b", dead, "--timeout", "1500");
    long long took = harness_now_ms() - t0;
    expect(&r, 3, NULL, "no broker reachable");
    assert_true(took < 4000);
    broker_mark_passed(b);
}

static void test_cluster_info(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    struct run r;
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", broker_port(b));
    RUN(&r, "cluster", "info", "-b", broker_bootstrap(b));
    expect(&r, 0, hp, NULL);
    expect(&r, 0, "CONTROLLER", NULL);
    RUN(&r, "cluster", "info", "-b", broker_bootstrap(b), "--format", "json");
    json_t *v = parse_json(&r);
    assert_true(strlen(json_string_value(json_object_get(v, "cluster_id"))) > 0);
    json_t *brokers = json_object_get(v, "brokers");
    assert_int_equal(json_array_size(brokers), 1);
    json_t *b0 = json_array_get(brokers, 0);
    assert_int_equal(json_integer_value(json_object_get(b0, "port")), broker_port(b));
    assert_int_equal(json_integer_value(json_object_get(v, "controller_id")),
                     json_integer_value(json_object_get(b0, "id")));
    json_decref(v);
    broker_mark_passed(b);
}

/* cairn config: broker configs described with their sources, changed at
 * runtime for one broker and as the cluster-wide default, and refused with
 * the key named when Cairn cannot change it at runtime. */
static void test_broker_config_commands(void **state)
{
    struct test_broker *b = *state;
    const char *overrides[] = {"log.retention.hours=100", NULL};
    broker_start(b, overrides);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "config", "describe", "--broker", "1", "-b", bs);
    expect(&r, 0, "STATIC_BROKER_CONFIG", NULL);
    expect(&r, 0, "READ_ONLY", NULL);

    RUN(&r, "config", "alter", "--broker", "1", "-b", bs, "--set", "message.max.bytes=2000000");
    expect(&r, 0, "altered 1 config(s) of broker 1", NULL);
    RUN(&r, "config", "alter", "--broker-defaults", "-b", bs, "--set", "log.retention.ms=3600000");
    expect(&r, 0, "altered 1 config(s) of the cluster-wide broker default", NULL);
    RUN(&r, "config", "describe", "--broker", "1", "-b", bs, "--format", "json");
    json_t *d = parse_json(&r);
    assert_string_equal(source_of(d, "message.max.bytes"), "DYNAMIC_BROKER_CONFIG");
    assert_string_equal(json_string_value(json_object_get(config_entry(d, "message.max.bytes"), "value")), "2000000");
    assert_string_equal(source_of(d, "log.retention.ms"), "DYNAMIC_DEFAULT_BROKER_CONFIG");
    assert_string_equal(source_of(d, "log.retention.hours"), "STATIC_BROKER_CONFIG");
    assert_string_equal(source_of(d, "num.io.threads"), "DEFAULT_CONFIG");
    assert_true(json_is_true(json_object_get(config_entry(d, "num.io.threads"), "read_only")));
    json_decref(d);
    RUN(&r, "config", "describe", "--broker-defaults", "-b", bs, "--format", "json");
    d = parse_json(&r);
    assert_int_equal(json_array_size(json_object_get(d, "configs")), 1);
    assert_string_equal(source_of(d, "log.retention.ms"), "DYNAMIC_DEFAULT_BROKER_CONFIG");
    json_decref(d);

    RUN(&r, "config", "alter", "--broker", "1", "-b", bs, "--delete", "message.max.bytes");
    expect(&r, 0, "altered 1 config(s) of broker 1", NULL);
    RUN(&r, "config", "describe", "--broker", "1", "-b", bs, "--format", "json");
    d = parse_json(&r);
    assert_string_equal(source_of(d, "message.max.bytes"), "DEFAULT_CONFIG");
    json_decref(d);

    RUN(&r, "config", "alter", "--broker", "1", "-b", bs, "--set", "num.io.threads=4");
    expect(&r, 1, NULL, "INVALID_CONFIG");
    expect(&r, 1, NULL, "num.io.threads");
    RUN(&r, "config", "describe", "-b", bs);
    expect(&r, 2, NULL, "one of --broker ID, --broker-defaults or --topic T");
    RUN(&r, "config", "describe", "--broker", "1", "--topic", "orders", "-b", bs);
    expect(&r, 2, NULL, "one of --broker ID, --broker-defaults or --topic T");
    broker_mark_passed(b);
}

/* Fails unless docs/cli.md shows text as written. */
static void cli_doc_shows(const char *text)
{
    static char doc[200000];
    FILE *f = fopen(CAIRN_SOURCE_DIR "/docs/cli.md", "r");
    assert_non_null(f);
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    if (!strstr(doc, text))
        fail_msg("docs/cli.md does not show:\n%s", text);
}

/* cairn config --topic: a topic's configs described with their sources and
 * changed at runtime, as kafka-configs.sh --entity-type topics does; the
 * change is what `cairn topic describe` then reports. */
static void test_topic_config_commands(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "orders", "-b", bs, "-c", "retention.ms=3600000");
    expect(&r, 0, "created topic 'orders'", NULL);

    RUN(&r, "config", "describe", "--topic", "orders", "-b", bs);
    expect(&r, 0, "DYNAMIC_TOPIC_CONFIG", NULL);
    RUN(&r, "config", "alter", "--topic", "orders", "-b", bs, "--set", "cleanup.policy=compact", "--delete",
        "retention.ms");
    expect(&r, 0, "altered 2 config(s) of topic orders", NULL);
    cli_doc_shows("$ cairn config alter --topic orders --set cleanup.policy=compact --delete retention.ms\n"
                  "altered 2 config(s) of topic orders\n");
    RUN(&r, "config", "describe", "--topic", "orders", "-b", bs, "--format", "json");
    json_t *d = parse_json(&r);
    assert_string_equal(json_string_value(json_object_get(d, "topic")), "orders");
    assert_string_equal(source_of(d, "cleanup.policy"), "DYNAMIC_TOPIC_CONFIG");
    assert_string_equal(json_string_value(json_object_get(config_entry(d, "cleanup.policy"), "value")), "compact");
    assert_string_not_equal(source_of(d, "retention.ms"), "DYNAMIC_TOPIC_CONFIG");
    json_decref(d);
    RUN(&r, "topic", "describe", "orders", "-b", bs, "--format", "json");
    d = parse_json(&r);
    assert_string_equal(json_string_value(json_object_get(config_entry(d, "cleanup.policy"), "value")), "compact");
    json_decref(d);

    RUN(&r, "config", "alter", "--topic", "orders", "-b", bs, "--set", "cleanup.policy=sometimes");
    expect(&r, 1, NULL, "INVALID_CONFIG");
    expect(&r, 1, NULL, "cannot alter the configs of topic orders");
    RUN(&r, "config", "describe", "--topic", "nope", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION");
    expect(&r, 1, NULL, "cannot describe the configs of topic nope");
    broker_mark_passed(b);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_profile_and_env(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    struct run r;
    char text[256], path[700], env[128], dead[64];
    snprintf(dead, sizeof(dead), "127.0.0.1:%d", harness_free_port());

    /* --profile FILE, with settings other tools use left alone. */
    snprintf(path, sizeof(path), "%s/kcat.conf", g_home);
    snprintf(text, sizeof(text), "# shared with kcat\nbootstrap.servers=%s\ngroup.id=x\nclient.id=ops\n",
             broker_bootstrap(b));
    write_text(path, text);
    RUN(&r, "cluster", "info", "--profile", path);
    expect(&r, 0, "CONTROLLER", NULL);

    /* Incomplete security settings are refused, not ignored. */
    snprintf(path, sizeof(path), "%s/sasl.conf", g_home);
    snprintf(text, sizeof(text), "bootstrap.servers=%s\nsecurity.protocol=SASL_SSL\n", broker_bootstrap(b));
    write_text(path, text);
    RUN(&r, "cluster", "info", "--profile", path);
    expect(&r, 2, NULL, "security.protocol=sasl_ssl needs sasl.mechanism");

    /* CAIRN_BROKERS, with no flag and no profile. */
    snprintf(env, sizeof(env), "CAIRN_BROKERS=%s", broker_bootstrap(b));
    RUN_ENV(&r, env, "cluster", "info");
    expect(&r, 0, "CONTROLLER", NULL);

    /* ~/.config/cairn/profile when present; the environment beats it and a flag beats both. */
    snprintf(path, sizeof(path), "%s/.config", g_home);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/.config/cairn", g_home);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/.config/cairn/profile", g_home);
    snprintf(text, sizeof(text), "bootstrap.servers=%s\n", broker_bootstrap(b));
    write_text(path, text);
    RUN(&r, "cluster", "info");
    expect(&r, 0, "CONTROLLER", NULL);
    RUN(&r, "cluster", "info", "-b", dead, "--timeout", "1000");
    expect(&r, 3, NULL, "no broker reachable");
    snprintf(text, sizeof(text), "bootstrap.servers=%s\n", dead);
    write_text(path, text);
    RUN_ENV(&r, env, "cluster", "info");
    expect(&r, 0, "CONTROLLER", NULL);
    unlink(path);
    broker_mark_passed(b);
}

static void test_group_lag(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "events", 2, NULL);
    rd_kafka_t *p = rk_producer_new(bs, NULL);
    for (int i = 0; i < 15; i++)
        assert_int_equal(rk_produce_blocking(p, "events", i < 10 ? 0 : 1, NULL, 0, "v", 1, 0, NULL, NULL), 0);
    rd_kafka_flush(p, 10000);
    assert_int_equal(rk_producer_stats(p)->delivered, 15);
    rk_producer_destroy(p);

    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers",  bs,      "group.id",           "billing", "client.id", "billing-1",
                        "enable.auto.commit", "false", "session.timeout.ms", "6000",    NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(c);
    rd_kafka_poll_set_consumer(c);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, "events", RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(c, sub), 0);
    rd_kafka_topic_partition_list_destroy(sub);
    long long deadline = harness_now_ms() + 20000;
    bool assigned = false;
    while (!assigned && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (m)
            rd_kafka_message_destroy(m);
        rd_kafka_topic_partition_list_t *a = NULL;
        if (rd_kafka_assignment(c, &a) == 0) {
            assigned = a->cnt == 2;
            rd_kafka_topic_partition_list_destroy(a);
        }
    }
    assert_true(assigned);
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(offs, "events", 0)->offset = 4;
    rd_kafka_topic_partition_list_add(offs, "events", 1)->offset = 5;
    assert_int_equal(rd_kafka_commit(c, offs, 0), 0);
    rd_kafka_topic_partition_list_destroy(offs);

    struct run r;
    RUN(&r, "group", "list", "-b", bs);
    expect(&r, 0, "billing", NULL);
    RUN(&r, "group", "list", "-b", bs, "--format", "json");
    json_t *l = parse_json(&r);
    assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "group")), "billing");
    assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "protocol_type")), "consumer");
    json_decref(l);

    RUN(&r, "group", "describe", "billing", "-b", bs);
    expect(&r, 0, "TOTAL LAG   6", NULL);
    expect(&r, 0, "billing-1", NULL);
    expect(&r, 0, "events:0,1", NULL);
    RUN(&r, "group", "describe", "billing", "-b", bs, "--format", "json");
    json_t *d = parse_json(&r);
    assert_string_equal(json_string_value(json_object_get(d, "state")), "Stable");
    assert_int_equal(json_integer_value(json_object_get(d, "total_lag")), 6);
    json_t *members = json_object_get(d, "members");
    assert_int_equal(json_array_size(members), 1);
    json_t *assign = json_object_get(json_object_get(json_array_get(members, 0), "assignment"), "events");
    assert_int_equal(json_array_size(assign), 2);
    json_t *offsets = json_object_get(d, "offsets");
    assert_int_equal(json_array_size(offsets), 2);
    const long long want[2][3] = {{4, 10, 6}, {5, 5, 0}};
    for (int i = 0; i < 2; i++) {
        json_t *o = json_array_get(offsets, (size_t)i);
        assert_int_equal(json_integer_value(json_object_get(o, "partition")), i);
        assert_int_equal(json_integer_value(json_object_get(o, "committed")), want[i][0]);
        assert_int_equal(json_integer_value(json_object_get(o, "log_end")), want[i][1]);
        assert_int_equal(json_integer_value(json_object_get(o, "lag")), want[i][2]);
        assert_non_null(json_string_value(json_object_get(o, "member")));
    }
    json_decref(d);

    RUN(&r, "group", "describe", "nobody", "-b", bs);
    expect(&r, 1, NULL, "GROUP_ID_NOT_FOUND");

    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    broker_mark_passed(b);
}

/* One controller (process.roles=controller) is its own quorum's leader. */
static void test_quorum_status(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, (const char *const[]){"listeners=CONTROLLER://127.0.0.1:{port}", "process.roles=controller",
                                          "controller.listener.names=CONTROLLER",
                                          "controller.quorum.voters=1@127.0.0.1:{port}",
                                          "cluster.id=MkU3OEVBNTcwNTJENDM2Qg", NULL});
    const char *addr = broker_bootstrap(b);
    struct run r;
    /* The listener answers before the election; wait for the leader. */
    json_t *v = NULL;
    for (long long deadline = harness_now_ms() + 15000; harness_now_ms() < deadline; usleep(100 * 1000)) {
        RUN(&r, "quorum", "status", "--bootstrap-controller", addr, "--format", "json");
        v = parse_json(&r);
        if (json_integer_value(json_object_get(v, "leader_id")) == 1)
            break;
        json_decref(v);
        v = NULL;
    }
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "leader_id")), 1);
    assert_true(json_integer_value(json_object_get(v, "leader_epoch")) >= 1);
    long long hw = json_integer_value(json_object_get(v, "high_watermark"));
    assert_true(hw >= 1);
    json_t *voters = json_object_get(v, "voters");
    assert_int_equal(json_array_size(voters), 1);
    json_t *v0 = json_array_get(voters, 0);
    assert_int_equal(json_integer_value(json_object_get(v0, "id")), 1);
    assert_true(json_integer_value(json_object_get(v0, "log_end_offset")) >= hw);
    assert_int_equal(json_integer_value(json_object_get(v0, "lag")), 0);
    assert_int_equal(json_array_size(json_object_get(v, "observers")), 0);
    json_decref(v);
    RUN(&r, "quorum", "status", "--bootstrap-controller", addr);
    expect(&r, 0, "LEADER          1\nEPOCH", NULL);
    expect(&r, 0, "ID  ROLE   LOG-END  LAG\n1   voter", NULL);

    RUN(&r, "quorum", "describe", "--bootstrap-controller", addr);
    expect(&r, 2, NULL, "unknown subcommand 'quorum describe'");
    RUN(&r, "quorum", "status", "--bootstrap-controller", "no-port");
    expect(&r, 2, NULL, "bad address 'no-port': want host:port");
    RUN(&r, "quorum", "status", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "1000");
    expect(&r, 3, NULL, "DescribeQuorum request");
    broker_mark_passed(b);
}

/* cairn leader elect over ElectLeaders: the commands of docs/cli.md on one
 * broker, where every partition is led by its only (preferred) replica. */
static void test_leader_elect(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "orders", "-b", bs, "--partitions", "2");
    expect(&r, 0, "created topic 'orders'", NULL);

    RUN(&r, "leader", "elect", "--type", "preferred", "--topic", "orders", "-b", bs);
    expect(&r, 0, "TOPIC   PARTITION  RESULT", NULL);
    expect(&r, 0, "orders  0          ELECTION_NOT_NEEDED", NULL);
    expect(&r, 0, "orders  1          ELECTION_NOT_NEEDED", NULL);
    RUN(&r, "leader", "elect", "--type", "unclean", "--topic", "orders", "--partition", "1", "--format", "json", "-b",
        bs);
    json_t *v = parse_json(&r);
    assert_int_equal(json_array_size(v), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "result")), "ELECTION_NOT_NEEDED");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 0), "partition")), 1);
    json_decref(v);
    /* --all answers only the partitions that needed an election: none. */
    RUN(&r, "leader", "elect", "--type", "preferred", "--all", "--format", "json", "-b", bs);
    v = parse_json(&r);
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);

    RUN(&r, "leader", "elect", "--type", "preferred", "--topic", "orders", "--partition", "7", "-b", bs);
    expect(&r, 1, "orders  7          UNKNOWN_TOPIC_OR_PARTITION", NULL);
    RUN(&r, "leader", "elect", "--type", "preferred", "--topic", "nope", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'nope' does not exist");
    RUN(&r, "leader", "elect", "--topic", "orders", "-b", bs);
    expect(&r, 2, NULL, "leader elect wants --type preferred or --type unclean");
    RUN(&r, "leader", "elect", "--type", "dirty", "--all", "-b", bs);
    expect(&r, 2, NULL, "--type wants preferred or unclean, got 'dirty'");
    RUN(&r, "leader", "elect", "--type", "preferred", "--all", "--topic", "orders", "-b", bs);
    expect(&r, 2, NULL, "leader elect wants either --all or --topic");

    /* The same under Kafka's names: cairn partition elect-leaders and
     * cairn partition reassign. */
    RUN(&r, "partition", "elect-leaders", "--type", "preferred", "--topic", "orders", "-b", bs);
    cli_doc_shows("`cairn partition elect-leaders\n--type preferred --topic orders`");
    expect(&r, 0, "orders  0          ELECTION_NOT_NEEDED", NULL);
    expect(&r, 0, "orders  1          ELECTION_NOT_NEEDED", NULL);
    RUN(&r, "partition", "elect-leaders", "--topic", "orders", "-b", bs);
    expect(&r, 2, NULL, "leader elect wants --type preferred or --type unclean");
    RUN(&r, "partition", "reassign", "list", "--format", "json", "-b", bs);
    v = parse_json(&r);
    assert_true(json_is_array(v));
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
    RUN(&r, "partition", "move", "-b", bs);
    expect(&r, 2, NULL, "unknown subcommand 'partition move'");
    broker_mark_passed(b);
}

/* TLS settings in librdkafka's names, from -X, the profile and CAIRN_<KEY>,
 * against an SSL listener that requires a client certificate (certificates
 * from tls/make_certs.sh): the cluster answers over TLS; a wrong CA, a
 * missing client certificate and incomplete SASL settings are refused with
 * their reasons. */
static void test_tls_settings(void **state)
{
    struct test_broker *b = *state;
    char certs[600], cmd[1400];
    snprintf(certs, sizeof(certs), "%s/certs", g_home);
    assert_int_equal(mkdir(certs, 0700), 0);
    snprintf(cmd, sizeof(cmd), "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, certs);
    assert_int_equal(system(cmd), 0);
    int ssl_port = harness_free_port();
    char listeners[160], keystore[700], truststore[700], ssl_hp[64];
    snprintf(listeners, sizeof(listeners), "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:%d", ssl_port);
    snprintf(keystore, sizeof(keystore), "ssl.keystore.location=%s/server.pem", certs);
    snprintf(truststore, sizeof(truststore), "ssl.truststore.location=%s/ca.pem", certs);
    snprintf(ssl_hp, sizeof(ssl_hp), "127.0.0.1:%d", ssl_port);
    const char *overrides[] = {listeners, keystore, truststore, "ssl.client.auth=required", NULL};
    broker_start(b, overrides);

    char ca[700], other_ca[700], cert[700], key[700];
    snprintf(ca, sizeof(ca), "ssl.ca.location=%s/ca.pem", certs);
    snprintf(other_ca, sizeof(other_ca), "ssl.ca.location=%s/other-ca.pem", certs);
    snprintf(cert, sizeof(cert), "ssl.certificate.location=%s/client.pem", certs);
    snprintf(key, sizeof(key), "ssl.key.location=%s/client.key", certs);
    struct run r;

    /* -X key=value: the bootstrap and the brokers Metadata lists (the SSL
     * listener's endpoints) are reached over TLS, the host checked. */
    RUN(&r, "cluster", "info", "-b", ssl_hp, "-X", "security.protocol=ssl", "-X", ca, "-X", cert, "-X", key);
    expect(&r, 0, ssl_hp, NULL);
    RUN(&r, "topic", "create", "tls-topic", "-b", ssl_hp, "-X", "security.protocol=SSL", "-X", ca, "-X", cert, "-X",
        key, "-X", "ssl.endpoint.identification.algorithm=https");
    expect(&r, 0, NULL, NULL);

    /* The profile holds the files; CAIRN_SECURITY_PROTOCOL turns TLS on. */
    char path[700], text[3000];
    snprintf(path, sizeof(path), "%s/tls.conf", g_home);
    snprintf(text, sizeof(text), "bootstrap.servers=%s\n%s\n%s\n%s\n", ssl_hp, ca, cert, key);
    write_text(path, text);
    RUN_ENV(&r, "CAIRN_SECURITY_PROTOCOL=ssl", "topic", "list", "--profile", path);
    expect(&r, 0, "tls-topic", NULL);
    /* Without it, plaintext to a TLS listener gets nowhere. */
    RUN(&r, "topic", "list", "--profile", path, "--timeout", "2000");
    expect(&r, 3, NULL, NULL);
    /* A -X flag beats the profile. */
    RUN(&r, "topic", "list", "--profile", path, "-X", "security.protocol=ssl", "-X", other_ca, "--timeout", "3000");
    expect(&r, 3, NULL, "certificate verify failed");
    /* The listener requires a client certificate (TLS 1.3: its alert
     * comes after the client's side of the handshake, so it may fail the
     * request or the connection under it; either way the message names
     * it). Time for the handshakes under ASan on a loaded machine. */
    RUN(&r, "topic", "list", "-b", ssl_hp, "-X", "security.protocol=ssl", "-X", ca, "--timeout", "8000");
    expect(&r, 3, NULL, "alert certificate required");
    RUN(&r, "topic", "list", "-b", ssl_hp, "-X", "security.protocol=ssl", "-X", ca, "-X",
        "ssl.endpoint.identification.algorithm=bogus");
    expect(&r, 2, NULL, "ssl.endpoint.identification.algorithm wants https or none");
    RUN(&r, "topic", "list", "-b", ssl_hp, "-X", "sasl.mechanism=GSSAPI");
    expect(&r, 2, NULL, "sasl.mechanism=GSSAPI is not supported");
    RUN_ENV(&r, "CAIRN_SECURITY_PROTOCOL=sasl_ssl", "topic", "list", "-b", ssl_hp);
    expect(&r, 2, NULL, "security.protocol=sasl_ssl needs sasl.mechanism");
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_topic_lifecycle, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_info, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_profile_and_env, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_tls_settings, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_group_lag, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_quorum_status, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_leader_elect, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_broker_config_commands, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_topic_config_commands, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
