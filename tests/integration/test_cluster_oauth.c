/* OAUTHBEARER on the node's own links: three broker,controller nodes whose
 * CONTROLLER and INTERNAL (inter-broker) listeners are SASL_PLAINTEXT with
 * OAUTHBEARER only, checked by the auth-oauth plugin against a JWK set in
 * a file. Each node gets its tokens from the test's identity provider (a
 * token endpoint served here, on a thread) with the client-credentials
 * grant, as clientId/clientSecret/scope of
 * listener.name.<l>.oauthbearer.sasl.jaas.config. The quorum elects, every
 * broker registers, a config change is forwarded, an acks=all produce
 * needs both followers, and the links go on with new tokens after the
 * first ones expired. A node with a wrong client secret gets no token,
 * never registers, and its log names the link and the endpoint's error;
 * nodes started while the endpoint is down come up once it is back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "harness.h"
#include "jwt_forge.h"
#include "oauth_idp.h"
#include "raw_kafka.h"

#define CLUSTER_ID "b2F1dGgtbGlua3MtY2x1cw"
#define CLIENT_ID "cairn-broker"
#define SECRET "good-secret"
#define SCOPE "kafka.cluster"
#define MODULE "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
#define TOKEN_LIFETIME_S 20

/* The test's identity provider (oauth_idp.h): POST /token with HTTP Basic
 * client credentials and grant_type=client_credentials&scope=kafka.cluster
 * gets an ES256 JWT for sub=<client id>; anything else a 401 or 400 with
 * an RFC 6749 error. */
static void start_idp(struct idp *idp, EVP_PKEY *key)
{
    const struct idp_options o = {.client_id = CLIENT_ID,
                                  .secret = SECRET,
                                  .scope = SCOPE,
                                  .lifetime_s = TOKEN_LIFETIME_S,
                                  .key = key,
                                  .alg = "ES256",
                                  .kid = "idp-key"};
    idp_start(idp, &o);
}

static char dir[256], jwks_path[300];
static char plugin_kv[600], jwks_kv[400], endpoint_kv[200];

/* The key the identity provider signs with, in a JWK set file the nodes read. */
static EVP_PKEY *make_key(void)
{
    snprintf(dir, sizeof dir, "/tmp/cairn-oauth-links-%d-XXXXXX", (int)getpid());
    assert_non_null(mkdtemp(dir));
    snprintf(jwks_path, sizeof jwks_path, "%s/jwks.json", dir);
    EVP_PKEY *key = forge_keygen("ES256");
    assert_non_null(key);
    char *jwk = forge_jwk(key, "idp-key", "ES256");
    assert_non_null(jwk);
    const char *const jwks[] = {jwk};
    assert_int_equal(forge_write_jwks(jwks_path, jwks, 1), 0);
    free(jwk);
    return key;
}

static void start(struct cluster *c, struct idp *idp, const char *node3, unsigned not_awaited)
{
    snprintf(plugin_kv, sizeof plugin_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(jwks_kv, sizeof jwks_kv, "plugin.auth-oauth.sasl.oauthbearer.jwks.endpoint.url=file://%s", jwks_path);
    snprintf(endpoint_kv, sizeof endpoint_kv, "sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:%d/token",
             idp->port);
    static const char *settings[32];
    const char *const fixed[] = {
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name=INTERNAL", plugin_kv, "plugins=auth-oauth", jwks_kv,
        "plugin.auth-oauth.sasl.oauthbearer.expected.audience=cairn",
        "plugin.auth-oauth.sasl.oauthbearer.expected.issuer=https://issuer.test", "sasl.enabled.mechanisms=OAUTHBEARER",
        "sasl.mechanism.controller.protocol=OAUTHBEARER", "sasl.mechanism.inter.broker.protocol=OAUTHBEARER",
        endpoint_kv,
        /* Short-lived tokens: refreshed within a few seconds of expiry. */
        "sasl.login.refresh.min.period.seconds=1", "sasl.login.refresh.buffer.seconds=3",
        "listener.name.controller.oauthbearer.sasl.jaas.config=" MODULE "clientId=\"" CLIENT_ID
        "\" clientSecret=\"" SECRET "\" scope=\"" SCOPE "\";",
        "listener.name.internal.oauthbearer.sasl.jaas.config=" MODULE "clientId=\"" CLIENT_ID
        "\" clientSecret=\"" SECRET "\" scope=\"" SCOPE "\";",
        "replica.fetch.backoff.ms=200", "replica.lag.time.max.ms=5000", NULL};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        settings[i] = fixed[i];
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 6000,
                                .internal_partitions = 1,
                                .settings = settings,
                                .extra_listener = "INTERNAL",
                                .node_setting = {NULL, NULL, node3},
                                .not_awaited = not_awaited};
    cluster_start(c, &o);
}

static void cleanup(EVP_PKEY *key)
{
    EVP_PKEY_free(key);
    unlink(jwks_path);
    rmdir(dir);
}

/* Lines of every node's log holding needle. */
static int count_logged(struct cluster *c, const char *needle)
{
    int n = 0;
    for (int i = 0; i < N; i++) {
        FILE *f = fopen(c->nodes[i].log_path, "r");
        char line[2048];
        while (f && fgets(line, sizeof line, f))
            n += strstr(line, needle) != NULL;
        if (f)
            fclose(f);
    }
    return n;
}

/* Every broker registers over the controller link, replicas fetch over
 * the inter-broker link (min.insync.replicas=3: acks=all needs both
 * followers), a forwarded change succeeds, and all of it goes on once the
 * first tokens expired. */
static void test_links_over_oauthbearer(void **state)
{
    (void)state;
    EVP_PKEY *key = make_key();
    struct idp idp;
    start_idp(&idp, key);
    struct cluster c;
    long long started = harness_now_ms();
    start(&c, &idp, NULL, 0);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    int32_t controller = agreed_controller(&c, -1, 30000);
    cluster_alter_forwarded(&c, controller == 1 ? 2 : 1);

    const char *configs[] = {"min.insync.replicas", "3", NULL};
    int32_t leader = create_replicated(&c, "oauth-linked", configs);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    produce_acked(bootstrap, "oauth-linked", 1, 200);
    struct view v;
    assert_true(metadata(&c, leader, "oauth-linked", &v));
    assert_int_equal(v.p[0].isr_count, 3);
    /* The principal is the token's subject, on both listeners. */
    broker_wait_log(&c.nodes[leader - 1], "User:" CLIENT_ID " authenticated with OAUTHBEARER from", 5000);
    assert_true(cluster_any_logged(&c, "on INTERNAL"));
    assert_true(cluster_any_logged(&c, "on CONTROLLER"));
    assert_true(atomic_load(&idp.issued) >= N);
    assert_int_equal(atomic_load(&idp.refused), 0);

    /* The first tokens expire TOKEN_LIFETIME_S after they were issued:
     * each node fetches new ones before, and its links re-authenticate
     * with them (the plugin ends a session when its token expires). */
    int first = atomic_load(&idp.issued);
    const char *authenticated = "User:" CLIENT_ID " authenticated with OAUTHBEARER from";
    int sessions = count_logged(&c, authenticated);
    long long deadline = started + (TOKEN_LIFETIME_S + 5) * 1000LL + 30000;
    while (harness_now_ms() < started + (TOKEN_LIFETIME_S + 5) * 1000LL || atomic_load(&idp.issued) < first + N) {
        if (harness_now_ms() > deadline)
            fail_msg("the nodes fetched %d tokens after the first %d", atomic_load(&idp.issued) - first, first);
        usleep(200 * 1000);
    }
    /* Sessions end with their tokens: the links opened new ones since. */
    deadline = harness_now_ms() + 20000;
    while (count_logged(&c, authenticated) < sessions + N) {
        if (harness_now_ms() > deadline)
            fail_msg("no new sessions after the first tokens expired (%d before)", sessions);
        usleep(200 * 1000);
    }
    produce_acked(bootstrap, "oauth-linked", 1, 100);
    assert_true(metadata(&c, leader, "oauth-linked", &v));
    assert_int_equal(v.p[0].isr_count, 3);
    cluster_alter_forwarded(&c, controller == 1 ? 3 : 1);
    wait_view(&c, 2, ALL, "oauth-linked", 1, 10000);
    /* The listeners never refused a token the links sent, new or old. */
    assert_false(cluster_any_logged(&c, "on CONTROLLER failed"));
    assert_false(cluster_any_logged(&c, "on INTERNAL failed"));
    assert_int_equal(atomic_load(&idp.refused), 0);
    cluster_stop(&c);
    idp_stop(&idp);
    cleanup(key);
}

/* Node 3's client secret is wrong: the endpoint refuses it, node 3 has no
 * token for its controller link, never registers, and says why; nodes 1
 * and 2 go on between them. */
static void test_wrong_secret_stays_out(void **state)
{
    (void)state;
    EVP_PKEY *key = make_key();
    struct idp idp;
    start_idp(&idp, key);
    struct cluster c;
    start(&c, &idp,
          "listener.name.controller.oauthbearer.sasl.jaas.config=" MODULE "clientId=\"" CLIENT_ID
          "\" clientSecret=\"wrong-secret\" scope=\"" SCOPE "\";",
          1u << 3);
    const unsigned two = (1u << 1) | (1u << 2);
    wait_view(&c, 1, two, NULL, 0, 30000);
    char line[300];
    snprintf(line, sizeof line,
             "controller link: the token endpoint http://127.0.0.1:%d/token did not give client " CLIENT_ID
             " an access token: HTTP 401: invalid_client (client authentication failed)",
             idp.port);
    broker_wait_log(&c.nodes[2], line, 30000);
    broker_wait_log(&c.nodes[2],
                    "controller link: SASL OAUTHBEARER authentication as " CLIENT_ID " with 127.0.0.1:", 30000);
    broker_wait_log(&c.nodes[2], "no access token from http://127.0.0.1:", 5000);
    assert_true(atomic_load(&idp.refused) >= 1);
    /* Nodes 1 and 2 elect, forward and replicate between them. */
    long long deadline = harness_now_ms() + 30000;
    struct view v;
    while (!metadata(&c, 1, NULL, &v) || (v.controller_id != 1 && v.controller_id != 2)) {
        if (harness_now_ms() > deadline)
            fail_msg("no active controller among nodes 1 and 2");
        usleep(200 * 1000);
    }
    cluster_alter_forwarded(&c, v.controller_id == 1 ? 2 : 1);
    /* Node 3 is still running and still not registered. */
    assert_true(broker_alive(&c.nodes[2]));
    wait_view(&c, 2, two, NULL, 0, 10000);
    broker_stop(&c.nodes[2]);
    assert_true(broker_log_contains(&c.nodes[2], "received SIGTERM during start-up"));
    cluster_stop(&c);
    idp_stop(&idp);
    cleanup(key);
}

/* The endpoint is down when the nodes start: they start anyway, their
 * links fail with its answer, and once it is back the logins retry, the
 * brokers register and the quorum forms. */
static void test_endpoint_back_later(void **state)
{
    (void)state;
    EVP_PKEY *key = make_key();
    struct idp idp;
    start_idp(&idp, key);
    atomic_store(&idp.down, true);
    struct cluster c;
    start(&c, &idp, NULL, ALL);
    char line[300];
    snprintf(line, sizeof line,
             "controller link: the token endpoint http://127.0.0.1:%d/token did not give client " CLIENT_ID
             " an access token: HTTP 503: temporarily_unavailable (down for the test)",
             idp.port);
    for (int i = 0; i < N; i++)
        broker_wait_log(&c.nodes[i], line, 30000);
    broker_wait_log(&c.nodes[0], "controller link: SASL OAUTHBEARER authentication as " CLIENT_ID, 30000);
    assert_int_equal(atomic_load(&idp.issued), 0);
    atomic_store(&idp.down, false);
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c.nodes[i]);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    assert_true(atomic_load(&idp.issued) >= N);
    cluster_stop(&c);
    idp_stop(&idp);
    cleanup(key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_over_oauthbearer),
        cmocka_unit_test(test_wrong_secret_stays_out),
        cmocka_unit_test(test_endpoint_back_later),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
