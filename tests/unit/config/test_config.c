#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/listeners.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static struct broker_config *build_ok(const char *const *keys, const char *const *values, size_t n)
{
    struct broker_config *cfg = NULL;
    char err[512] = "";
    if (config_build(keys, values, n, &cfg, err, sizeof err) != 0)
        fail_msg("config_build failed: %s", err);
    return cfg;
}

/* Build with one key=value and return the error text (empty on success). */
static const char *build_error(const char *key, const char *value)
{
    static char err[512];
    struct broker_config *cfg = NULL;
    err[0] = '\0';
    const char *keys[] = {key};
    const char *values[] = {value};
    if (config_build(keys, values, 1, &cfg, err, sizeof err) == 0) {
        config_free(cfg);
        return "";
    }
    assert_null(cfg);
    return err;
}

static void test_defaults(void **state)
{
    (void)state;
    struct broker_config *cfg = build_ok(NULL, NULL, 0);
    assert_int_equal(config_get_int(cfg, "num.partitions"), 1);
    assert_int_equal(config_get_int(cfg, "num.io.threads"), 8);
    assert_int_equal(config_get_int(cfg, "socket.request.max.bytes"), 104857600);
    assert_int_equal(config_get_int(cfg, "message.max.bytes"), 1048588);
    assert_int_equal(config_get_long(cfg, "log.flush.interval.messages"), INT64_MAX);
    assert_true(config_get_bool(cfg, "auto.create.topics.enable"));
    assert_false(config_get_bool(cfg, "unclean.leader.election.enable"));
    assert_string_equal(config_get_string(cfg, "listeners"), "PLAINTEXT://localhost:9092");
    assert_string_equal(config_advertised_listeners(cfg), "PLAINTEXT://localhost:9092");
    assert_int_equal(config_node_id(cfg), 1);
    assert_true(config_single_node(cfg));
    size_t n;
    const char *const *dirs = config_log_dirs(cfg, &n);
    assert_int_equal(n, 1);
    assert_string_equal(dirs[0], "./data");
    const char *const *roles = config_get_list(cfg, "process.roles", &n);
    assert_int_equal(n, 2);
    assert_string_equal(roles[0], "broker");
    assert_string_equal(roles[1], "controller");
    assert_int_equal(config_log_retention_ms(cfg), 168LL * 3600 * 1000);
    assert_int_equal(config_log_roll_ms(cfg), 168LL * 3600 * 1000);
    assert_int_equal(config_log_flush_interval_ms(cfg), INT64_MAX);
    assert_false(config_has_value(cfg, "log.retention.ms"));
    assert_int_equal(config_source(cfg, "num.partitions"), CONFIG_SOURCE_DEFAULT_CONFIG);
    assert_int_equal(config_source(cfg, "no.such.key"), CONFIG_SOURCE_UNKNOWN);
    assert_string_equal(config_listener_security_protocol(cfg, "plaintext"), "PLAINTEXT");
    assert_true(config_get_double(cfg, "log.cleaner.min.cleanable.ratio") == 0.5);
    assert_null(config_file_path(cfg));
    config_free(cfg);
}

static void test_values_are_parsed_and_sourced(void **state)
{
    (void)state;
    const char *keys[] = {"num.partitions", "auto.create.topics.enable", "log.dirs", "advertised.listeners",
                          "offsets.topic.replication.factor"};
    const char *values[] = {" 12 ", "FALSE", "/a, /b ,,/c", "PLAINTEXT://broker1:9092", "1"};
    struct broker_config *cfg = build_ok(keys, values, ARRAY_LEN(keys));
    assert_int_equal(config_get_int(cfg, "num.partitions"), 12);
    assert_int_equal(config_source(cfg, "num.partitions"), CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    assert_false(config_get_bool(cfg, "auto.create.topics.enable"));
    size_t n;
    const char *const *dirs = config_log_dirs(cfg, &n);
    assert_int_equal(n, 3);
    assert_string_equal(dirs[0], "/a");
    assert_string_equal(dirs[1], "/b");
    assert_string_equal(dirs[2], "/c");
    assert_string_equal(config_advertised_listeners(cfg), "PLAINTEXT://broker1:9092");
    assert_int_equal(config_get_int(cfg, "offsets.topic.replication.factor"), 1);
    assert_int_equal(config_get_long(cfg, "num.partitions"), 12);
    config_free(cfg);
}

static void test_wrong_type_getter_returns_zero(void **state)
{
    (void)state;
    struct broker_config *cfg = build_ok(NULL, NULL, 0);
    assert_int_equal(config_get_int(cfg, "log.flush.interval.messages"), 0); /* LONG via int getter */
    assert_false(config_get_bool(cfg, "num.partitions"));
    assert_null(config_get_string(cfg, "not.a.key"));
    config_free(cfg);
}

static void test_error_messages(void **state)
{
    (void)state;
    assert_string_equal(build_error("num.partitions", "abc"),
                        "invalid value 'abc' for 'num.partitions': expected an integer in [1, 2147483647]");
    assert_string_equal(build_error("num.partitions", "0"),
                        "invalid value '0' for 'num.partitions': expected an integer in [1, 2147483647]");
    assert_string_equal(build_error("num.partitions", "2147483648"),
                        "invalid value '2147483648' for 'num.partitions': expected an integer in [1, 2147483647]");
    assert_string_equal(build_error("num.partitions", "1.5"),
                        "invalid value '1.5' for 'num.partitions': expected an integer in [1, 2147483647]");
    assert_string_equal(build_error("auto.create.topics.enable", "yes"),
                        "invalid value 'yes' for 'auto.create.topics.enable': expected true or false");
    assert_string_equal(build_error("log.retention.bytes", "99999999999999999999"),
                        "invalid value '99999999999999999999' for 'log.retention.bytes': expected an integer in "
                        "[-1, 9223372036854775807]");
    assert_string_equal(build_error("offsets.topic.replication.factor", "40000"),
                        "invalid value '40000' for 'offsets.topic.replication.factor': expected an integer in "
                        "[1, 32767]");
    assert_string_equal(build_error("log.cleaner.min.cleanable.ratio", "1.5"),
                        "invalid value '1.5' for 'log.cleaner.min.cleanable.ratio': expected a number in [0, 1]");
    assert_string_equal(build_error("log.message.timestamp.type", "createtime"),
                        "invalid value 'createtime' for 'log.message.timestamp.type': expected one of: "
                        "CreateTime, LogAppendTime");
    assert_string_equal(build_error("log.cleanup.policy", "delete,shred"),
                        "invalid value 'delete,shred' for 'log.cleanup.policy': expected a comma-separated list "
                        "of: compact, delete");
    assert_string_equal(build_error("log.retention.ms", ""),
                        "invalid value '' for 'log.retention.ms': expected an integer in [-1, 9223372036854775807]");
    /* Secrets are never echoed. */
    const char *e = build_error("ssl.keystore.password", "s3cret");
    assert_string_equal(e, "");
}

static void test_listener_errors(void **state)
{
    (void)state;
    const char *e = build_error("listeners", "PLAINTEXT://localhost");
    assert_non_null(strstr(e, "'listeners'"));
    assert_non_null(strstr(e, "invalid listener 'PLAINTEXT://localhost'"));
    e = build_error("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093");
    assert_non_null(strstr(e, "used twice"));
    e = build_error("listeners", "PLAINTEXT://:70000");
    assert_non_null(strstr(e, "invalid listener 'PLAINTEXT://:70000'"));
    e = build_error("listeners", "INTERNAL://:9093");
    assert_non_null(strstr(e, "INTERNAL has no entry in listener.security.protocol.map"));
    e = build_error("listeners", " , ");
    assert_non_null(strstr(e, "at least one"));
    e = build_error("advertised.listeners", "PLAINTEXT://0.0.0.0:9092");
    assert_non_null(strstr(e, "wildcard"));
    e = build_error("listener.security.protocol.map", "PLAINTEXT:TLS");
    assert_non_null(strstr(e, "entry 'PLAINTEXT:TLS'"));
}

/* Each listener resolves through listener.security.protocol.map; only
 * protocol is served (SSL and SASL_SSL listeners check their keystore
 * when they start). */
static void test_listener_security_protocols(void **state)
{
    (void)state;
    const char *keys[] = {"listeners", "advertised.listeners", "listener.security.protocol.map"};
    const char *values[] = {"CLIENT://:9092,REPLICATION://:9093", "CLIENT://host1:9092,REPLICATION://host1:9093",
                            "client:plaintext,REPLICATION:PLAINTEXT,EXTERNAL:SASL_SSL"};
    struct broker_config *cfg = build_ok(keys, values, ARRAY_LEN(keys));
    assert_string_equal(config_listener_security_protocol(cfg, "CLIENT"), "PLAINTEXT");
    assert_string_equal(config_listener_security_protocol(cfg, "external"), "SASL_SSL");
    assert_null(config_listener_security_protocol(cfg, "OTHER"));
    config_free(cfg);

    /* Kafka's default map names the four protocols after themselves, so a
     * listener called SSL is an SSL listener; every protocol is served (a
     * keystore is checked when the listener starts). */
    const char *ssl_keys[] = {"listeners"};
    const char *ssl_values[] = {"PLAINTEXT://:9092,SSL://:9093,SASL_PLAINTEXT://:9094,SASL_SSL://:9095"};
    config_free(build_ok(ssl_keys, ssl_values, 1));
    /* The map must name the default PLAINTEXT listener too. */
    assert_non_null(strstr(build_error("listener.security.protocol.map", "CLIENT:PLAINTEXT"),
                           "listener name PLAINTEXT has no entry in listener.security.protocol.map"));

    assert_int_equal(config_security_protocol_id("PLAINTEXT"), 0);
    assert_int_equal(config_security_protocol_id("ssl"), 1);
    assert_int_equal(config_security_protocol_id("SASL_PLAINTEXT"), 2);
    assert_int_equal(config_security_protocol_id("SASL_SSL"), 3);
    assert_int_equal(config_security_protocol_id("TLS"), -1);
    assert_int_equal(config_security_protocol_id(NULL), -1);
}

static void test_parse_listeners(void **state)
{
    (void)state;
    struct listener_spec specs[4];
    char err[256];
    int n = config_parse_listeners("PLAINTEXT://localhost:9092, internal://0.0.0.0:0,EXT://:19092,V6://[::1]:9093",
                                   specs, 4, err, sizeof err);
    assert_int_equal(n, 4);
    assert_string_equal(specs[0].name, "PLAINTEXT");
    assert_string_equal(specs[0].host, "localhost");
    assert_int_equal(specs[0].port, 9092);
    assert_string_equal(specs[1].name, "INTERNAL");
    assert_string_equal(specs[1].host, "0.0.0.0");
    assert_int_equal(specs[1].port, 0);
    assert_string_equal(specs[2].host, "");
    assert_int_equal(specs[2].port, 19092);
    assert_string_equal(specs[3].host, "::1");
    assert_int_equal(specs[3].port, 9093);
    assert_int_equal(config_parse_listeners("", specs, 4, err, sizeof err), 0);
    assert_int_equal(config_parse_listeners("A://h:1,B://h:2", specs, 1, err, sizeof err), -1);
    const char *bad[] = {"localhost:9092", "://h:1",   "P://h:",   "P://h:x",
                         "P://[::1:9092",  "P://h:-1", "P@://h:1", "P://bad host:1"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        assert_int_equal(config_parse_listeners(bad[i], specs, 4, err, sizeof err), -1);
        assert_non_null(strstr(err, bad[i]));
    }
}

static void test_quorum_voters(void **state)
{
    (void)state;
    struct quorum_voter voters[4];
    char err[256];
    assert_int_equal(config_parse_quorum_voters("1@a:9093,2@[::1]:9093", voters, 4, err, sizeof err), 2);
    assert_int_equal(voters[1].node_id, 2);
    assert_string_equal(voters[1].host, "::1");
    assert_int_equal(config_parse_quorum_voters("x@a:1", voters, 4, err, sizeof err), -1);
    assert_int_equal(config_parse_quorum_voters("1@a:1,1@b:1", voters, 4, err, sizeof err), -1);

    /* A voter with the controller role serves the quorum on a listener
     * named in controller.listener.names. */
    const char *keys[] = {
        "controller.quorum.voters", "node.id", "controller.listener.names", "listeners", "process.roles", "cluster.id"};
    const char *values[] = {"1@a:9093,2@b:9093", "2",
                            "CONTROLLER",        "PLAINTEXT://:9092,CONTROLLER://:9093",
                            "broker,controller", "MkU3OEVBNTcwNTJENDM2Qg"};
    struct broker_config *cfg = build_ok(keys, values, 6);
    assert_false(config_single_node(cfg));
    assert_int_equal(config_node_id(cfg), 2);
    config_free(cfg);
    assert_non_null(strstr(build_error("controller.quorum.voters", "1@a:9093"), "node.id must be set"));
    const char *v2[] = {"1@a:9093", "3", "CONTROLLER", "CONTROLLER://:9093", "controller", "MkU3OEVBNTcwNTJENDM2Qg"};
    char e[300];
    assert_int_equal(config_build(keys, v2, 6, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "not listed"));
    /* Listed as a voter without the controller role. */
    const char *v3[] = {"1@a:9093,2@b:9093", "2",      "CONTROLLER",
                        "PLAINTEXT://:9092", "broker", "MkU3OEVBNTcwNTJENDM2Qg"};
    assert_int_equal(config_build(keys, v3, 6, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "has no controller role"));
    /* A controller without controller.listener.names. */
    assert_int_equal(config_build(keys, values, 2, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "controller.listener.names must be set"));
    /* A controller listener that is not in listeners. */
    const char *v4[] = {"1@a:9093,2@b:9093", "2",          "CONTROLLER",
                        "PLAINTEXT://:9092", "controller", "MkU3OEVBNTcwNTJENDM2Qg"};
    assert_int_equal(config_build(keys, v4, 6, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "controller listener CONTROLLER is not one of listeners"));
    /* A broker-only node needs no controller listener. */
    const char *v5[] = {"1@a:9093,2@b:9093", "3",      "CONTROLLER",
                        "PLAINTEXT://:9092", "broker", "MkU3OEVBNTcwNTJENDM2Qg"};
    cfg = build_ok(keys, v5, 6);
    config_free(cfg);
    /* The cluster id may come from meta.properties (cairnd format) instead. */
    cfg = build_ok(keys, v5, 5);
    config_free(cfg);
}

/* controller.quorum.bootstrap.servers: a broker's way to the quorum
 * instead of the voters (exactly one of the two); refused on a controller,
 * which still needs the static voters. */
static void test_quorum_bootstrap_servers(void **state)
{
    (void)state;
    struct quorum_voter servers[4];
    char err[256];
    assert_int_equal(config_parse_quorum_bootstrap_servers("a:9093,[::1]:9094", servers, 4, err, sizeof err), 2);
    assert_int_equal(servers[0].node_id, -2);
    assert_int_equal(servers[1].node_id, -3);
    assert_string_equal(servers[1].host, "::1");
    assert_int_equal(servers[1].port, 9094);
    assert_int_equal(config_parse_quorum_bootstrap_servers("1@a:9093", servers, 4, err, sizeof err), -1);
    assert_int_equal(config_parse_quorum_bootstrap_servers("a:0", servers, 4, err, sizeof err), -1);
    assert_int_equal(config_parse_quorum_bootstrap_servers(":9093", servers, 4, err, sizeof err), -1);

    const char *keys[] = {"controller.quorum.bootstrap.servers", "node.id", "process.roles", "listeners",
                          "controller.quorum.voters"};
    const char *broker[] = {"a:9093,b:9093", "4", "broker", "PLAINTEXT://:9092", "1@a:9093"};
    struct broker_config *cfg = build_ok(keys, broker, 4);
    assert_false(config_single_node(cfg));
    config_free(cfg);
    char e[400];
    /* Both set. */
    assert_int_equal(config_build(keys, broker, 5, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "set exactly one"));
    /* Neither set on a broker: no quorum to follow (Kafka's check). */
    assert_int_equal(config_build(keys + 1, broker + 1, 3, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "either controller.quorum.bootstrap.servers"));
    /* A controller. */
    const char *controller[] = {"a:9093", "1", "broker,controller", "PLAINTEXT://:9092"};
    assert_int_equal(config_build(keys, controller, 4, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "controllers need controller.quorum.voters"));
    /* Without node.id. */
    const char *k2[] = {"controller.quorum.bootstrap.servers", "process.roles"};
    const char *v2[] = {"a:9093", "broker"};
    assert_int_equal(config_build(k2, v2, 2, &cfg, e, sizeof e), -1);
    assert_non_null(strstr(e, "node.id must be set"));
    assert_non_null(strstr(build_error("controller.quorum.bootstrap.servers", "a"), "expected host:port"));
}

static void test_node_id_and_broker_id(void **state)
{
    (void)state;
    const char *keys[] = {"broker.id"};
    const char *values[] = {"7"};
    struct broker_config *cfg = build_ok(keys, values, 1);
    assert_int_equal(config_node_id(cfg), 7);
    config_free(cfg);
    const char *k2[] = {"broker.id", "node.id"};
    const char *v2[] = {"7", "8"};
    char err[256];
    assert_int_equal(config_build(k2, v2, 2, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "differ"));
    assert_string_equal(build_error("node.id", "-2"),
                        "invalid value '-2' for 'node.id': expected an integer in [-1, 2147483647]");
}

static void test_retention_precedence(void **state)
{
    (void)state;
    const char *keys[] = {"log.retention.hours", "log.retention.minutes", "log.retention.ms"};
    const char *values[] = {"2", "3", "4000"};
    struct broker_config *cfg = build_ok(keys, values, 1);
    assert_int_equal(config_log_retention_ms(cfg), 2LL * 3600000);
    config_free(cfg);
    cfg = build_ok(keys, values, 2);
    assert_int_equal(config_log_retention_ms(cfg), 3LL * 60000);
    config_free(cfg);
    cfg = build_ok(keys, values, 3);
    assert_int_equal(config_log_retention_ms(cfg), 4000);
    config_free(cfg);
    const char *unlimited[] = {"-1"};
    cfg = build_ok(keys, unlimited, 1);
    assert_int_equal(config_log_retention_ms(cfg), -1);
    config_free(cfg);

    const char *roll_keys[] = {"log.roll.hours", "log.roll.ms", "log.flush.interval.ms"};
    const char *roll_values[] = {"5", "1234", "77"};
    cfg = build_ok(roll_keys, roll_values, 1);
    assert_int_equal(config_log_roll_ms(cfg), 5LL * 3600000);
    config_free(cfg);
    cfg = build_ok(roll_keys, roll_values, 3);
    assert_int_equal(config_log_roll_ms(cfg), 1234);
    assert_int_equal(config_log_flush_interval_ms(cfg), 77);
    config_free(cfg);
}

/* Run config_build with stderr captured into buf. */
static int build_capturing_stderr(const char *const *keys, const char *const *values, size_t n,
                                  struct broker_config **cfg, char *buf, size_t buflen)
{
    char path[] = "/tmp/cairn-stderr-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    char err[256];
    int rc = config_build(keys, values, n, cfg, err, sizeof err);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t got = pread(fd, buf, buflen - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

static void test_unknown_key_warns_and_plugin_keys_pass_through(void **state)
{
    (void)state;
    const char *keys[] = {"no.such.setting", "plugin.audit.sink", "plugin.audit.path", "plugin.quota.rate", "plugins"};
    const char *values[] = {"1", "file", "/var/log/audit", "10", "audit,quota"};
    struct broker_config *cfg = NULL;
    char log[4096];
    assert_int_equal(build_capturing_stderr(keys, values, ARRAY_LEN(keys), &cfg, log, sizeof log), 0);
    assert_non_null(cfg);
    assert_non_null(strstr(log, "WARN"));
    assert_non_null(strstr(log, "no.such.setting"));
    assert_null(strstr(log, "plugin.audit.sink"));

    struct config_kv *items;
    size_t n;
    assert_int_equal(config_keys_with_prefix(cfg, "plugin.audit.", &items, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(items[0].key, "plugin.audit.sink");
    assert_string_equal(items[0].value, "file");
    assert_string_equal(items[1].key, "plugin.audit.path");
    assert_string_equal(items[1].value, "/var/log/audit");
    free(items);
    assert_int_equal(config_keys_with_prefix(cfg, "plugin.none.", &items, &n), 0);
    assert_int_equal(n, 0);
    assert_null(items);
    const char *const *plugins = config_get_list(cfg, "plugins", &n);
    assert_int_equal(n, 2);
    assert_string_equal(plugins[1], "quota");
    config_free(cfg);
}

static char *write_temp_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/cairn-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_command_line_forms_and_override_precedence(void **state)
{
    (void)state;
    char *path = strdup(write_temp_file("num.partitions=3\nlog.dirs=/tmp/x\ndelete.topic.enable=false\n"));
    char err[512];
    struct broker_config *cfg;

    char *argv1[] = {"cairnd", "--config", path, "--override", "num.partitions=5", NULL};
    assert_int_equal(config_load(5, argv1, &cfg, err, sizeof err), 0);
    assert_int_equal(config_get_int(cfg, "num.partitions"), 5);
    assert_false(config_get_bool(cfg, "delete.topic.enable"));
    assert_string_equal(config_file_path(cfg), path);
    config_free(cfg);

    /* The override wins even when it comes before the file argument. */
    char *argv2[] = {"cairnd", "--override=num.partitions=6", path, NULL};
    assert_int_equal(config_load(3, argv2, &cfg, err, sizeof err), 0);
    assert_int_equal(config_get_int(cfg, "num.partitions"), 6);
    assert_int_equal(config_source(cfg, "num.partitions"), CONFIG_SOURCE_STATIC_BROKER_CONFIG);
    config_free(cfg);

    char *argv3[] = {"cairnd", "-c", path, NULL};
    assert_int_equal(config_load(3, argv3, &cfg, err, sizeof err), 0);
    assert_int_equal(config_get_int(cfg, "num.partitions"), 3);
    config_free(cfg);

    char *argv4[] = {"cairnd", NULL};
    assert_int_equal(config_load(1, argv4, &cfg, err, sizeof err), 0);
    assert_int_equal(config_get_int(cfg, "num.partitions"), 1);
    config_free(cfg);

    char *bad_override[] = {"cairnd", "--override", "novalue", NULL};
    assert_int_equal(config_load(3, bad_override, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "key=value"));
    char *two_files[] = {"cairnd", path, path, NULL};
    assert_int_equal(config_load(3, two_files, &cfg, err, sizeof err), -1);
    char *unknown[] = {"cairnd", "--frobnicate", NULL};
    assert_int_equal(config_load(2, unknown, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "--frobnicate"));
    char *missing[] = {"cairnd", "--config", NULL};
    assert_int_equal(config_load(2, missing, &cfg, err, sizeof err), -1);
    char *bad_value[] = {"cairnd", path, "--override", "num.io.threads=zero", NULL};
    assert_int_equal(config_load(4, bad_value, &cfg, err, sizeof err), -1);
    assert_string_equal(err, "invalid value 'zero' for 'num.io.threads': expected an integer in [1, 2147483647]");
    unlink(path);
    char *gone[] = {"cairnd", path, NULL};
    assert_int_equal(config_load(2, gone, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    free(path);
}

static void test_help_and_version_return_one(void **state)
{
    (void)state;
    struct broker_config *cfg = (struct broker_config *)0x1;
    char err[64];
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    char *help[] = {"cairnd", "--help", NULL};
    char *version[] = {"cairnd", "--version", NULL};
    char *docs[] = {"cairnd", "--print-config-docs", NULL};
    int rc_help = config_load(2, help, &cfg, err, sizeof err);
    int rc_version = config_load(2, version, &cfg, err, sizeof err);
    int rc_docs = config_load(2, docs, &cfg, err, sizeof err);
    fclose(stdout);
    stdout = saved;
    assert_int_equal(rc_help, 1);
    assert_int_equal(rc_version, 1);
    assert_int_equal(rc_docs, 1);
    assert_null(cfg);
}

static void test_describe_iterator(void **state)
{
    (void)state;
    const char *keys[] = {"num.partitions", "ssl.keystore.password"};
    const char *values[] = {"4", "hunter2"};
    struct broker_config *cfg = build_ok(keys, values, 2);
    size_t pos = 0, count = 0;
    struct config_describe_entry e;
    bool saw_partitions = false, saw_password = false, saw_retention_ms = false;
    while (config_describe_next(cfg, &pos, &e)) {
        count++;
        assert_non_null(e.documentation);
        assert_true(e.type >= CONFIG_TYPE_BOOLEAN && e.type <= CONFIG_TYPE_PASSWORD);
        if (strcmp(e.name, "num.partitions") == 0) {
            saw_partitions = true;
            assert_string_equal(e.value, "4");
            assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER_CONFIG);
            assert_int_equal(e.type, CONFIG_TYPE_INT);
            assert_true(e.read_only);
            assert_false(e.is_sensitive);
        } else if (strcmp(e.name, "ssl.keystore.password") == 0) {
            saw_password = true;
            assert_null(e.value);
            assert_true(e.is_sensitive);
            assert_int_equal(e.type, CONFIG_TYPE_PASSWORD);
            assert_int_equal(e.source, CONFIG_SOURCE_STATIC_BROKER_CONFIG);
        } else if (strcmp(e.name, "log.retention.ms") == 0) {
            saw_retention_ms = true;
            assert_null(e.value);
            assert_false(e.read_only);
            assert_int_equal(e.source, CONFIG_SOURCE_DEFAULT_CONFIG);
            assert_int_equal(e.type, CONFIG_TYPE_LONG);
        }
    }
    assert_true(saw_partitions && saw_password && saw_retention_ms);
    assert_true(count > 80);
    assert_string_equal(config_get_string(cfg, "ssl.keystore.password"), "hunter2");
    config_free(cfg);
}

static void test_group_session_bounds_checked(void **state)
{
    (void)state;
    const char *keys[] = {"group.min.session.timeout.ms", "group.max.session.timeout.ms"};
    const char *values[] = {"10000", "5000"};
    struct broker_config *cfg;
    char err[256];
    assert_int_equal(config_build(keys, values, 2, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "group.min.session.timeout.ms"));
    assert_non_null(strstr(build_error("cluster.id", "not-a-uuid"), "'cluster.id'"));
    assert_string_equal(build_error("cluster.id", "AAAAAAAAAAAAAAAAAAAAAA"), "");
}

/* Kafka's rack-aware selector is the one value accepted; unset is leader-only. */
static void test_replica_selector_class_checked(void **state)
{
    (void)state;
    const char *rack_aware = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
    assert_string_equal(build_error("replica.selector.class", rack_aware), "");
    assert_string_equal(build_error("replica.selector.class", ""), "");
    const char *err = build_error("replica.selector.class", "com.example.NearestSelector");
    assert_non_null(strstr(err, "'replica.selector.class'"));
    assert_non_null(strstr(err, rack_aware));
    struct broker_config *cfg = build_ok(NULL, NULL, 0);
    assert_null(config_get_string(cfg, "replica.selector.class"));
    config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values_are_parsed_and_sourced),
        cmocka_unit_test(test_wrong_type_getter_returns_zero),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_listener_errors),
        cmocka_unit_test(test_listener_security_protocols),
        cmocka_unit_test(test_parse_listeners),
        cmocka_unit_test(test_quorum_voters),
        cmocka_unit_test(test_quorum_bootstrap_servers),
        cmocka_unit_test(test_node_id_and_broker_id),
        cmocka_unit_test(test_retention_precedence),
        cmocka_unit_test(test_unknown_key_warns_and_plugin_keys_pass_through),
        cmocka_unit_test(test_command_line_forms_and_override_precedence),
        cmocka_unit_test(test_help_and_version_return_one),
        cmocka_unit_test(test_describe_iterator),
        cmocka_unit_test(test_group_session_bounds_checked),
        cmocka_unit_test(test_replica_selector_class_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
