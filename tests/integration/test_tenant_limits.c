/* The tenant-limits topic policy in a real cairnd, through librdkafka's
 * admin API as three SCRAM principals: User:team-a-app (under the tenant
 * principal prefix User:team-a-*, owning topics "team-a."), User:bob
 * (owning "bob.") and User:carol (no tenant, not limited), plus the
 * PLAINTEXT listener's User:ANONYMOUS for raw IncrementalAlterConfigs. Creations,
 * partition additions and retention changes within the caps succeed; over
 * a cap they get POLICY_VIOLATION with a message naming the cap, the same
 * for validate_only requests. And through a pure broker without plugins:
 * its forwarded CreateTopics is judged by the combined controller node;
 * through a pure broker in front of a controller-only node (both loading
 * tenant-limits and acl-authorizer), the controller judges and authorizes
 * the forwarded requests, and runs no Envelope from a sender without
 * CLUSTER_ACTION. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "raw_session.h"
#include "rk_helpers.h"

#define PASSWORD "tenant-secret"
#define TENANTS                                                                                                        \
    "plugin.tenant-limits.entries=principal=User:team-a-*,prefix=team-a.:max.partitions.per.topic=4,"                  \
    "max.partitions=6,max.replication.factor=1,max.retention.ms=86400000,max.retention.bytes=1048576;"                 \
    "principal=User:bob,prefix=bob.:max.partitions=2;principal=User:ANONYMOUS,prefix=anon.:max.retention.bytes=1000"

struct tenants_it {
    struct test_broker broker;
    char sasl_bootstrap[64];
};

/* cairn user create <name> --password PASSWORD, over a PLAINTEXT listener. */
static void scram_user_at(const char *bootstrap, const char *name)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(CAIRN_CLI_PATH, CAIRN_CLI_PATH, "user", "create", name, "--password", PASSWORD, "-b", bootstrap,
              (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void scram_user(struct tenants_it *t, const char *name)
{
    scram_user_at(broker_bootstrap(&t->broker), name);
}

/* An admin client authenticated as name on the SASL listener at bootstrap. */
static rd_kafka_t *client_at(const char *bootstrap, const char *name)
{
    const char *conf[] = {"security.protocol", "SASL_PLAINTEXT", "sasl.mechanisms",
                          "SCRAM-SHA-256",     "sasl.username",  name,
                          "sasl.password",     PASSWORD,         NULL};
    return rk_producer_new(bootstrap, conf);
}

static rd_kafka_t *client_as(struct tenants_it *t, const char *name)
{
    return client_at(t->sasl_bootstrap, name);
}

/* Asserts a refusal as POLICY_VIOLATION whose message names cap. */
static void assert_refused(rd_kafka_resp_err_t err, const char *message, const char *cap)
{
    if (err != RD_KAFKA_RESP_ERR_POLICY_VIOLATION || !strstr(message, cap))
        fail_msg("expected POLICY_VIOLATION naming %s, got %s: %s", cap, rd_kafka_err2name(err), message);
}

static rd_kafka_resp_err_t create(rd_kafka_t *rk, const char *topic, int partitions, int replication,
                                  const char *const *configs, bool validate_only, char *msg, size_t len)
{
    return rk_create_topic_result(rk, topic, partitions, replication, configs, validate_only, msg, len);
}

/* The one result of an admin event of the given type: its error and message. */
static rd_kafka_resp_err_t admin_outcome(rd_kafka_queue_t *q, rd_kafka_event_type_t type, char *msg, size_t len)
{
    rd_kafka_event_t *ev = rk_admin_result(q, type, 20000);
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    snprintf(msg, len, "%s", err ? rd_kafka_event_error_string(ev) : "");
    if (!err && type == RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT) {
        size_t n = 0;
        const rd_kafka_topic_result_t **r = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &n);
        assert_int_equal(n, 1);
        err = rd_kafka_topic_result_error(r[0]);
        snprintf(msg, len, "%s",
                 rd_kafka_topic_result_error_string(r[0]) ? rd_kafka_topic_result_error_string(r[0]) : "");
    } else if (!err) {
        size_t n = 0;
        const rd_kafka_ConfigResource_t **r = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &n);
        assert_int_equal(n, 1);
        err = rd_kafka_ConfigResource_error(r[0]);
        snprintf(msg, len, "%s",
                 rd_kafka_ConfigResource_error_string(r[0]) ? rd_kafka_ConfigResource_error_string(r[0]) : "");
    }
    rd_kafka_event_destroy(ev);
    return err;
}

static rd_kafka_resp_err_t add_partitions(rd_kafka_t *rk, const char *topic, int total, bool validate_only, char *msg,
                                          size_t len)
{
    char e[256];
    rd_kafka_NewPartitions_t *np = rd_kafka_NewPartitions_new(topic, (size_t)total, e, sizeof e);
    assert_non_null(np);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
    if (validate_only)
        rd_kafka_AdminOptions_set_validate_only(opts, 1, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreatePartitions(rk, &np, 1, opts, q);
    rd_kafka_resp_err_t err = admin_outcome(q, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, msg, len);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_NewPartitions_destroy(np);
    return err;
}

/* AlterConfigs (replacing the topic's dynamic configs) with one key. */
static rd_kafka_resp_err_t set_config(rd_kafka_t *rk, const char *topic, const char *key, const char *value,
                                      bool validate_only, char *msg, size_t len)
{
    char e[256];
    rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_ConfigResource_set_config(cr, key, value);
    rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
    if (validate_only)
        rd_kafka_AdminOptions_set_validate_only(opts, 1, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AlterConfigs(rk, &cr, 1, opts, q);
    rd_kafka_resp_err_t err = admin_outcome(q, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT, msg, len);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(opts);
    rd_kafka_ConfigResource_destroy(cr);
    return err;
}

/* IncrementalAlterConfigs v1 SET of one topic key, raw over PLAINTEXT
 * (User:ANONYMOUS): librdkafka 2.0 has no call for it. */
static int16_t incremental_set_at(int port, const char *topic, const char *key, const char *value, bool validate_only,
                                  char *msg, size_t len)
{
    struct raw_session s = {.fd = raw_connect(port, 10000)};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    raw_session_begin(&s, &w, 44, 1);
    raw_put_compact_array_len(&w, 1);
    raw_put_i8(&w, 2); /* TOPIC */
    raw_put_compact_string(&w, topic);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, key);
    raw_put_i8(&w, 0); /* SET */
    raw_put_compact_string(&w, value);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i8(&w, validate_only);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, true);
    close(s.fd);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    int16_t err = raw_get_i16(&r);
    msg[0] = '\0';
    raw_get_compact_string(&r, msg, len);
    assert_false(r.overflow);
    free(frame);
    return err;
}

static int16_t incremental_set(struct tenants_it *t, const char *topic, const char *key, const char *value,
                               bool validate_only, char *msg, size_t len)
{
    return incremental_set_at(t->broker.port, topic, key, value, validate_only, msg, len);
}

static void test_tenant_caps(void **state)
{
    (void)state;
    struct tenants_it t = {0};
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(t.sasl_bootstrap, sizeof t.sasl_bootstrap, "127.0.0.1:%d", port);
    char listeners[200], plugin_path[600];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d", port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    const char *overrides[] = {listeners, plugin_path, "sasl.enabled.mechanisms=SCRAM-SHA-256", "plugins=tenant-limits",
                               TENANTS,   NULL};
    broker_start(&t.broker, overrides);
    scram_user(&t, "team-a-app");
    scram_user(&t, "bob");
    scram_user(&t, "carol");
    char msg[512];

    rd_kafka_t *a = client_as(&t, "team-a-app");
    assert_int_equal(create(a, "team-a.one", 4, 1, NULL, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_true(rk_wait_topic(a, "team-a.one", 4, 15000));
    assert_refused(create(a, "team-a.two", 5, 1, NULL, false, msg, sizeof msg), msg, "max.partitions.per.topic=4");
    /* 4 + 3 is over the tenant's 6, whether validated or done. */
    assert_refused(create(a, "team-a.two", 3, 1, NULL, true, msg, sizeof msg), msg, "max.partitions=6");
    assert_refused(create(a, "team-a.two", 3, 1, NULL, false, msg, sizeof msg), msg, "max.partitions=6");
    assert_int_equal(create(a, "team-a.two", 2, 1, NULL, true, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_refused(create(a, "team-a.two", 1, 2, NULL, false, msg, sizeof msg), msg, "max.replication.factor=1");
    const char *week[] = {"retention.ms", "604800000", NULL};
    assert_refused(create(a, "team-a.two", 1, 1, week, true, msg, sizeof msg), msg, "max.retention.ms=86400000");
    const char *unlimited[] = {"retention.bytes", "-1", NULL};
    assert_refused(create(a, "team-a.two", 1, 1, unlimited, false, msg, sizeof msg), msg,
                   "max.retention.bytes=1048576");
    assert_refused(create(a, "bob.mine", 1, 1, NULL, false, msg, sizeof msg), msg, "outside the prefix 'team-a.'");
    /* CreatePartitions: the new total is judged. */
    assert_refused(add_partitions(a, "team-a.one", 5, true, msg, sizeof msg), msg, "max.partitions.per.topic=4");
    assert_refused(add_partitions(a, "team-a.one", 5, false, msg, sizeof msg), msg, "max.partitions.per.topic=4");
    /* AlterConfigs: retention over the cap refused, within it applied. */
    assert_refused(set_config(a, "team-a.one", "retention.ms", "90000000", true, msg, sizeof msg), msg,
                   "max.retention.ms=86400000");
    assert_refused(set_config(a, "team-a.one", "retention.ms", "-1", false, msg, sizeof msg), msg,
                   "max.retention.ms=86400000");
    assert_int_equal(set_config(a, "team-a.one", "retention.ms", "3600000", false, msg, sizeof msg),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(create(a, "team-a.two", 2, 1, week + 2, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(a);

    rd_kafka_t *bob = client_as(&t, "bob");
    assert_refused(create(bob, "bob.big", 3, 1, NULL, false, msg, sizeof msg), msg, "max.partitions=2");
    assert_int_equal(create(bob, "bob.small", 2, 1, NULL, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_true(rk_wait_topic(bob, "bob.small", 2, 15000));
    assert_refused(add_partitions(bob, "bob.small", 3, false, msg, sizeof msg), msg, "max.partitions=2");
    rk_producer_destroy(bob);

    /* IncrementalAlterConfigs, as the tenant of the PLAINTEXT listener. */
    rk_create_topic(broker_bootstrap(&t.broker), "anon.t", 1, NULL);
    assert_refused(incremental_set(&t, "anon.t", "retention.bytes", "1001", true, msg, sizeof msg), msg,
                   "max.retention.bytes=1000");
    assert_refused(incremental_set(&t, "anon.t", "retention.bytes", "-1", false, msg, sizeof msg), msg,
                   "max.retention.bytes=1000");
    assert_int_equal(incremental_set(&t, "anon.t", "retention.bytes", "1000", false, msg, sizeof msg), 0);

    /* No tenant names carol: nothing limits her. */
    rd_kafka_t *carol = client_as(&t, "carol");
    assert_int_equal(create(carol, "team-a.ops", 8, 1, unlimited, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(add_partitions(carol, "bob.small", 4, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(carol);

    broker_stop(&t.broker);
    broker_mark_passed(&t.broker);
    broker_cleanup(&t.broker);
}

/* CreateTopics v7 of one topic, raw on the PLAINTEXT listener at port
 * (User:ANONYMOUS): its error and message. */
static int16_t raw_create(int port, const char *topic, int32_t partitions, char *msg, size_t len)
{
    struct raw_session s = {.fd = raw_connect(port, 10000)};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    raw_session_begin(&s, &w, 19, 7);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, topic);
    raw_put_i32(&w, partitions);
    raw_put_i16(&w, -1);
    raw_put_compact_array_len(&w, 0); /* assignments */
    raw_put_compact_array_len(&w, 0); /* configs */
    raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 20000);
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, true);
    close(s.fd);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64];
    raw_get_compact_string(&r, name, sizeof name);
    raw_skip(&r, 16);
    int16_t err = raw_get_i16(&r);
    msg[0] = '\0';
    raw_get_compact_string(&r, msg, len);
    assert_false(r.overflow);
    free(frame);
    return err;
}

/* A pure broker (no plugins) forwards CreateTopics in an Envelope to the
 * combined controller node, which loads tenant-limits: the controller
 * judges the request with the principal the broker saw. */
static void test_forwarded_requests_judged_at_controller(void **state)
{
    (void)state;
    struct test_broker controller = {0}, broker = {0};
    int cport = harness_free_port(), p1, p2;
    do {
        p1 = harness_free_port();
    } while (p1 == cport);
    do {
        p2 = harness_free_port();
    } while (p2 == cport || p2 == p1);
    char voters[80], listeners[160], plugin_path[600];
    snprintf(voters, sizeof voters, "controller.quorum.voters=1@127.0.0.1:%d", cport);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", p1, cport);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
#define FORWARD_COMMON                                                                                                 \
    voters, "controller.listener.names=CONTROLLER", "cluster.id=VGVuYW50TGltaXRzRndkMQ",                               \
        "controller.quorum.election.timeout.ms=500", "controller.quorum.fetch.timeout.ms=1000",                        \
        "broker.heartbeat.interval.ms=500", "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1"
    const char *combined[] = {
        listeners,
        "node.id=1",
        "process.roles=broker,controller",
        plugin_path,
        "plugins=tenant-limits",
        "plugin.tenant-limits.entries=principal=User:ANONYMOUS,prefix=fwd.:max.partitions.per.topic=2",
        FORWARD_COMMON,
        NULL};
    const char *pure[] = {"node.id=2", "process.roles=broker", FORWARD_COMMON, NULL};
#undef FORWARD_COMMON
    broker_spawn_on_port(&controller, p1, combined);
    broker_spawn_on_port(&broker, p2, pure);
    broker_wait_ready(&controller);
    broker_wait_ready(&broker);
    char msg[512];
    assert_refused(raw_create(p2, "fwd.big", 3, msg, sizeof msg), msg, "max.partitions.per.topic=2");
    assert_int_equal(raw_create(p2, "fwd.ok", 2, msg, sizeof msg), 0);
    broker_stop(&broker);
    broker_stop(&controller);
    broker_mark_passed(&broker);
    broker_mark_passed(&controller);
    broker_cleanup(&broker);
    broker_cleanup(&controller);
}

/* A controller-only node loads the plugins too: a pure broker forwards
 * CreateTopics (and the SCRAM user's creation) to it in Envelopes, and it
 * judges them with tenant-limits and authorizes them with acl-authorizer
 * as the principal the broker authenticated. User:ANONYMOUS (PLAINTEXT,
 * also the broker's principal on the controller listener) is a super
 * user; User:mallory (SCRAM) has no ACL. */
static void test_controller_only_node_loads_plugins(void **state)
{
    (void)state;
    struct test_broker controller = {0}, broker = {0};
    int cport = harness_free_port(), port, sasl_port;
    do {
        port = harness_free_port();
    } while (port == cport);
    do {
        sasl_port = harness_free_port();
    } while (sasl_port == cport || sasl_port == port);
    char voters[80], clisteners[96], blisteners[160], plugin_path[600], sasl_bootstrap[64];
    snprintf(voters, sizeof voters, "controller.quorum.voters=1@127.0.0.1:%d", cport);
    snprintf(clisteners, sizeof clisteners, "listeners=CONTROLLER://127.0.0.1:%d", cport);
    snprintf(blisteners, sizeof blisteners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             sasl_port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(sasl_bootstrap, sizeof sasl_bootstrap, "127.0.0.1:%d", sasl_port);
#define CTRL_ONLY_COMMON                                                                                               \
    voters, plugin_path, "plugins=tenant-limits,acl-authorizer",                                                       \
        "plugin.tenant-limits.entries=principal=User:ANONYMOUS,prefix=fwd.:max.partitions.per.topic=2,"                \
        "max.retention.ms=86400000",                                                                                   \
        "plugin.acl-authorizer.super.users=User:ANONYMOUS", "controller.listener.names=CONTROLLER",                    \
        "cluster.id=Q3RybE9ubHlQbHVnaW5zMQ", "controller.quorum.election.timeout.ms=500",                              \
        "controller.quorum.fetch.timeout.ms=1000", "broker.heartbeat.interval.ms=500",                                 \
        "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1"
    const char *ctrl[] = {clisteners, "node.id=1", "process.roles=controller", CTRL_ONLY_COMMON, NULL};
    const char *pure[] = {
        blisteners,       "node.id=2", "process.roles=broker", "sasl.enabled.mechanisms=SCRAM-SHA-256",
        CTRL_ONLY_COMMON, NULL};
#undef CTRL_ONLY_COMMON
    broker_spawn_on_port(&controller, cport, ctrl);
    broker_spawn_on_port(&broker, port, pure);
    broker_wait_ready(&controller);
    broker_wait_ready(&broker);
    char msg[512];
    /* The broker registers and learns the leader: until then NOT_CONTROLLER. */
    int16_t err = -1;
    for (int64_t deadline = harness_now_ms() + 30000; harness_now_ms() < deadline; usleep(200 * 1000))
        if ((err = raw_create(port, "fwd.big", 3, msg, sizeof msg)) != 41 /* NOT_CONTROLLER */)
            break;
    assert_refused(err, msg, "max.partitions.per.topic=2");
    assert_int_equal(raw_create(port, "fwd.ok", 1, msg, sizeof msg), 0);
    /* CreatePartitions, AlterConfigs and IncrementalAlterConfigs are judged there too. */
    rd_kafka_t *anon = rk_producer_new(broker_bootstrap(&broker), NULL);
    assert_true(rk_wait_topic(anon, "fwd.ok", 1, 15000));
    assert_refused(add_partitions(anon, "fwd.ok", 3, false, msg, sizeof msg), msg, "max.partitions.per.topic=2");
    assert_int_equal(add_partitions(anon, "fwd.ok", 2, false, msg, sizeof msg), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_refused(set_config(anon, "fwd.ok", "retention.ms", "-1", false, msg, sizeof msg), msg,
                   "max.retention.ms=86400000");
    rk_producer_destroy(anon);
    assert_refused(incremental_set_at(port, "fwd.ok", "retention.ms", "90000000", false, msg, sizeof msg), msg,
                   "max.retention.ms=86400000");
    assert_int_equal(incremental_set_at(port, "fwd.ok", "retention.ms", "3600000", false, msg, sizeof msg), 0);

    /* The user is made at the controller (forwarded), then authenticates
     * at the broker once its image has the credential. */
    scram_user_at(broker_bootstrap(&broker), "mallory");
    rd_kafka_t *mallory = client_at(sasl_bootstrap, "mallory");
    rd_kafka_resp_err_t rerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int64_t deadline = harness_now_ms() + 30000; harness_now_ms() < deadline; usleep(200 * 1000))
        if ((rerr = create(mallory, "mallory.t", 1, 1, NULL, false, msg, sizeof msg)) ==
                RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
            rerr == RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
    rk_producer_destroy(mallory);
    if (rerr != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
        fail_msg("expected TOPIC_AUTHORIZATION_FAILED, got %s: %s", rd_kafka_err2name(rerr), msg);

    broker_stop(&broker);
    broker_stop(&controller);
    broker_mark_passed(&broker);
    broker_mark_passed(&controller);
    broker_cleanup(&broker);
    broker_cleanup(&controller);
}

/* As in Kafka, only a sender with CLUSTER_ACTION on the cluster may send
 * Envelopes: here the controller listener's User:ANONYMOUS has none. */
static void test_envelope_needs_cluster_action(void **state)
{
    (void)state;
    struct test_broker controller = {0};
    int cport = harness_free_port();
    char voters[80], listeners[96], plugin_path[600];
    snprintf(voters, sizeof voters, "controller.quorum.voters=1@127.0.0.1:%d", cport);
    snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", cport);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    const char *ctrl[] = {listeners,
                          voters,
                          plugin_path,
                          "node.id=1",
                          "process.roles=controller",
                          "plugins=acl-authorizer",
                          "plugin.acl-authorizer.super.users=User:admin",
                          "controller.listener.names=CONTROLLER",
                          "cluster.id=Q3RybE9ubHlQbHVnaW5zMQ",
                          "controller.quorum.election.timeout.ms=500",
                          NULL};
    broker_spawn_on_port(&controller, cport, ctrl);
    broker_wait_ready(&controller);
    /* The inner principal (a super user) does not matter: the sender does. */
    assert_int_equal(raw_envelope_create_topic(cport, "forged", "forger", NULL), 31 /* CLUSTER_AUTHORIZATION_FAILED */);
    assert_true(broker_log_contains(&controller, "may not forward requests"));
    broker_stop(&controller);
    broker_mark_passed(&controller);
    broker_cleanup(&controller);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tenant_caps),
        cmocka_unit_test(test_forwarded_requests_judged_at_controller),
        cmocka_unit_test(test_controller_only_node_loads_plugins),
        cmocka_unit_test(test_envelope_needs_cluster_action),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
