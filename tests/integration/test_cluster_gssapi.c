/* GSSAPI on the node's own links: three broker,controller nodes whose
 * CONTROLLER and INTERNAL (inter-broker) listeners are SASL_PLAINTEXT with
 * GSSAPI only, served by the auth-sasl plugin as kafka/127.0.0.1 against a
 * real MIT KDC the test starts (krb5_kdc.c). Each node logs in as
 * broker@CAIRN.TEST from the keyTab of its Krb5LoginModule entries. The
 * quorum elects, every broker registers, a config change is forwarded,
 * and an acks=all produce needs both followers, each over GSSAPI; a node
 * asking for an unknown service stays out and says why. Skipped only when
 * the KDC binaries are not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "harness.h"
#include "krb5_kdc.h"
#include "raw_kafka.h"

#define CLUSTER_ID "Z3NzYXBpLWxpbmtzLWNsdQ"
#define MODULE "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "

struct realm {
    struct test_kdc kdc;
    char service_keytab[300], broker_keytab[300];
    char plugin_kv[600], keytab_kv[400], controller_jaas[700], internal_jaas[700];
    const char *settings[16];
};

/* The KDC, its principals (kafka/127.0.0.1 for the listeners, broker for
 * the links) and the nodes' settings; false when the KDC binaries are
 * missing. */
static bool realm_start(struct realm *r)
{
    if (!test_kdc_available())
        return false;
    memset(r, 0, sizeof *r);
    char why[512];
    if (test_kdc_start(&r->kdc, why, sizeof why) != 0)
        fail_msg("KDC: %s", why);
    /* The links ask for kafka/<the host they dial>: 127.0.0.1 (rdns off). */
    if (test_kdc_add_principal(&r->kdc, "kafka/127.0.0.1", "kafka.keytab", r->service_keytab, sizeof r->service_keytab,
                               why, sizeof why) != 0 ||
        test_kdc_add_principal(&r->kdc, "broker", "broker.keytab", r->broker_keytab, sizeof r->broker_keytab, why,
                               sizeof why) != 0)
        fail_msg("%s", why);
    /* Each node's tickets in its own memory, not a file the three share. */
    setenv("KRB5CCNAME", "MEMORY:cairn-links", 1);
    snprintf(r->plugin_kv, sizeof r->plugin_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(r->keytab_kv, sizeof r->keytab_kv, "plugin.auth-sasl.keytab=%s", r->service_keytab);
    snprintf(r->controller_jaas, sizeof r->controller_jaas,
             "listener.name.controller.gssapi.sasl.jaas.config=" MODULE "keyTab=\"%s\" principal=\"broker@%s\";",
             r->broker_keytab, r->kdc.realm);
    snprintf(r->internal_jaas, sizeof r->internal_jaas,
             "listener.name.internal.gssapi.sasl.jaas.config=" MODULE "keyTab=\"%s\" principal=\"broker@%s\";",
             r->broker_keytab, r->kdc.realm);
    const char *settings[] = {
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name=INTERNAL",
        r->plugin_kv,
        "plugins=auth-sasl",
        r->keytab_kv,
        "plugin.auth-sasl.kerberos_host=127.0.0.1",
        "sasl.enabled.mechanisms=GSSAPI",
        "sasl.mechanism.controller.protocol=GSSAPI",
        "sasl.mechanism.inter.broker.protocol=GSSAPI",
        "sasl.kerberos.service.name=kafka",
        r->controller_jaas,
        r->internal_jaas,
        "replica.fetch.backoff.ms=200",
        "replica.lag.time.max.ms=5000",
        NULL};
    memcpy(r->settings, settings, sizeof settings);
    return true;
}

static void start(struct cluster *c, struct realm *r, const char *node3, unsigned not_awaited)
{
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 6000,
                                .internal_partitions = 1,
                                .settings = r->settings,
                                .extra_listener = "INTERNAL",
                                .node_setting = {NULL, NULL, node3},
                                .not_awaited = not_awaited};
    cluster_start(c, &o);
}

#define SKIP_WITHOUT_KDC()                                                                                             \
    do {                                                                                                               \
        print_message("skipping: MIT Kerberos KDC binaries (krb5kdc, kdb5_util, kadmin.local, kinit) "                 \
                      "are not installed; apt-get install krb5-kdc krb5-admin-server krb5-user\n");                    \
        skip();                                                                                                        \
    } while (0)

static void test_links_over_gssapi(void **state)
{
    (void)state;
    struct realm r;
    if (!realm_start(&r))
        SKIP_WITHOUT_KDC();
    struct cluster c;
    start(&c, &r, NULL, 0);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    int32_t controller = agreed_controller(&c, -1, 30000);
    cluster_alter_forwarded(&c, controller == 1 ? 2 : 1);
    const char *configs[] = {"min.insync.replicas", "3", NULL};
    int32_t leader = create_replicated(&c, "gssapi-linked", configs);
    produce_acked(broker_bootstrap(&c.nodes[leader - 1]), "gssapi-linked", 1, 200);
    struct view v;
    assert_true(metadata(&c, leader, "gssapi-linked", &v));
    assert_int_equal(v.p[0].isr_count, 3);
    broker_wait_log(&c.nodes[leader - 1], "User:broker authenticated with GSSAPI from", 5000);
    assert_true(cluster_any_logged(&c, "on INTERNAL"));
    assert_true(cluster_any_logged(&c, "on CONTROLLER"));
    assert_false(cluster_any_logged(&c, "on CONTROLLER failed"));
    assert_false(cluster_any_logged(&c, "on INTERNAL failed"));
    cluster_stop(&c);
    test_kdc_stop(&r.kdc);
}

/* Node 3 asks for tickets to a service the KDC does not know: it never
 * authenticates, never registers, and its log names the link and krb5's
 * error; nodes 1 and 2 go on between them. */
static void test_unknown_service_stays_out(void **state)
{
    (void)state;
    struct realm r;
    if (!realm_start(&r))
        SKIP_WITHOUT_KDC();
    struct cluster c;
    start(&c, &r, "sasl.kerberos.service.name=nosuch", 1u << 3);
    const unsigned two = (1u << 1) | (1u << 2);
    wait_view(&c, 1, two, NULL, 0, 30000);
    broker_wait_log(&c.nodes[2],
                    "controller link: SASL GSSAPI authentication as broker@CAIRN.TEST with 127.0.0.1:", 30000);
    broker_wait_log(&c.nodes[2], "GSSAPI for nosuch/127.0.0.1: ", 5000);
    long long deadline = harness_now_ms() + 30000;
    struct view v;
    while (!metadata(&c, 1, NULL, &v) || (v.controller_id != 1 && v.controller_id != 2)) {
        if (harness_now_ms() > deadline)
            fail_msg("no active controller among nodes 1 and 2");
        usleep(200 * 1000);
    }
    cluster_alter_forwarded(&c, v.controller_id == 1 ? 2 : 1);
    assert_true(broker_alive(&c.nodes[2]));
    wait_view(&c, 2, two, NULL, 0, 10000);
    cluster_stop(&c);
    test_kdc_stop(&r.kdc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_over_gssapi),
        cmocka_unit_test(test_unknown_service_stays_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
