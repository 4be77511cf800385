/* The SASL client (sasl_client.h) against the core's SCRAM server, PLAIN's
 * message, and the JAAS lines the broker's links accept and refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sasl/sasl_client.h"
#include "sasl/scram.h"

/* One full exchange with server credentials made from server_password;
 * returns the client's last step. */
static enum sasl_client_step run_scram(int mech, const char *client_password, const char *server_password, char *err,
                                       size_t errlen)
{
    const uint8_t salt[] = "saltsaltsaltsalt";
    uint8_t salted[SCRAM_MAX_KEY];
    struct scram_credential cred;
    size_t key_len = scram_key_len(mech);
    assert_int_equal(scram_salted_password(mech, server_password, strlen(server_password), salt, 16, 4096, salted), 0);
    assert_int_equal(scram_credential_from_salted(mech, salted, key_len, salt, 16, 4096, &cred), 0);

    static struct sasl_client c;
    enum sasl_client_step step = sasl_client_begin(&c, scram_mechanism_name(mech), "bro,ker", client_password, err,
                                                   errlen);
    assert_int_equal(step, SASL_CLIENT_SEND);
    struct scram_server *s = scram_server_new(mech);
    const char *user = NULL;
    assert_int_equal(scram_server_parse_first(s, c.out, c.out_len, &user, err, errlen), 0);
    assert_string_equal(user, "bro,ker"); /* escaped as =2C on the wire, and back */
    const uint8_t *out;
    size_t out_len;
    assert_int_equal(scram_server_challenge(s, &cred, &out, &out_len, err, errlen), 0);
    step = sasl_client_next(&c, out, out_len, err, errlen);
    assert_int_equal(step, SASL_CLIENT_SEND);
    if (scram_server_finish(s, c.out, c.out_len, &out, &out_len, err, errlen) != SCRAM_STEP_DONE) {
        scram_server_free(s);
        sasl_client_clear(&c);
        return SASL_CLIENT_FAILED;
    }
    step = sasl_client_next(&c, out, out_len, err, errlen);
    /* A server that does not know the credential cannot fake its proof. */
    if (step == SASL_CLIENT_DONE) {
        static struct sasl_client again;
        memcpy(&again, &c, sizeof c);
        again.stage = 1;
        uint8_t forged[200];
        memcpy(forged, out, out_len);
        /* A character in the middle of "v=<base64>": the last ones may
         * carry only padding bits, which a decoder rightly ignores. */
        forged[4] = forged[4] == 'A' ? 'B' : 'A';
        assert_int_equal(sasl_client_next(&again, forged, out_len, err, errlen), SASL_CLIENT_FAILED);
        assert_non_null(strstr(err, "did not prove"));
    }
    scram_server_free(s);
    sasl_client_clear(&c);
    return step;
}

static void test_scram_against_the_server(void **state)
{
    (void)state;
    char err[300] = "";
    assert_int_equal(run_scram(SCRAM_SHA_256, "pw", "pw", err, sizeof err), SASL_CLIENT_DONE);
    assert_int_equal(run_scram(SCRAM_SHA_512, "pw", "pw", err, sizeof err), SASL_CLIENT_DONE);
    assert_int_equal(run_scram(SCRAM_SHA_512, "wrong", "pw", err, sizeof err), SASL_CLIENT_FAILED);
}

static void test_plain_and_bad_input(void **state)
{
    (void)state;
    static struct sasl_client c;
    char err[300] = "";
    assert_int_equal(sasl_client_begin(&c, "plain", "u", "p", err, sizeof err), SASL_CLIENT_SEND);
    assert_int_equal(c.out_len, 4);
    assert_memory_equal(c.out, "\0u\0p", 4);
    assert_int_equal(sasl_client_next(&c, NULL, 0, err, sizeof err), SASL_CLIENT_DONE);
    assert_int_equal(sasl_client_begin(&c, "GSSAPI", "u", "p", err, sizeof err), SASL_CLIENT_FAILED);
    assert_non_null(strstr(err, "GSSAPI"));
    /* A server-first-message with another nonce, or none, is refused. */
    assert_int_equal(sasl_client_begin(&c, "SCRAM-SHA-256", "u", "p", err, sizeof err), SASL_CLIENT_SEND);
    const char *bad = "r=othernonce,s=c2FsdA==,i=4096";
    assert_int_equal(sasl_client_next(&c, (const uint8_t *)bad, strlen(bad), err, sizeof err), SASL_CLIENT_FAILED);
    assert_non_null(strstr(err, "bad server-first-message"));
    assert_string_equal(sasl_client_mechanism_canonical("scram-sha-512"), "SCRAM-SHA-512");
    assert_null(sasl_client_mechanism_canonical("OAUTHBEARER"));
}

static int jaas(const char *text, const char *mech, char *user, char *pass, char *err)
{
    return sasl_jaas_parse(text, mech, user, 64, pass, 64, err, 200);
}

static void test_jaas(void **state)
{
    (void)state;
    char user[64], pass[64], err[200];
    assert_int_equal(jaas("org.apache.kafka.common.security.scram.ScramLoginModule required\n"
                          "  username=\"broker\" password=\"a \\\"quoted\\\" secret\";",
                          "SCRAM-SHA-512", user, pass, err),
                     0);
    assert_string_equal(user, "broker");
    assert_string_equal(pass, "a \"quoted\" secret");
    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required password=p username=u ;",
                          "PLAIN", user, pass, err),
                     0);
    assert_string_equal(user, "u");
    assert_string_equal(pass, "p");

    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" "
                          "password=\"p\";",
                          "SCRAM-SHA-256", user, pass, err),
                     -1);
    assert_non_null(strstr(err, "ScramLoginModule"));
    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule optional username=u password=p;",
                          "PLAIN", user, pass, err),
                     -1);
    assert_non_null(strstr(err, "'required'"));
    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p",
                          "PLAIN", user, pass, err),
                     -1);
    assert_non_null(strstr(err, "';'"));
    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=\"p;",
                          "PLAIN", user, pass, err),
                     -1);
    assert_null(strstr(err, "p;")); /* never the password */
    assert_int_equal(
        jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=u;", "PLAIN", user, pass, err),
        -1);
    assert_non_null(strstr(err, "both required"));
    assert_int_equal(jaas("org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p "
                          "user_admin=x;",
                          "PLAIN", user, pass, err),
                     -1);
    assert_non_null(strstr(err, "user_admin"));
}

/* OAuthBearerLoginModule's options for the links, and Kafka's initial
 * client response. */
static void test_jaas_oauth_and_message(void **state)
{
    (void)state;
    char id[64], secret[64], scope[64], err[200];
    struct sasl_jaas_option opts[] = {
        {"clientId", id, sizeof id}, {"clientSecret", secret, sizeof secret}, {"scope", scope, sizeof scope}};
    const char *module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
    assert_int_equal(sasl_jaas_parse_module("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                            "required clientId=\"broker\" clientSecret=\"s3cret\";",
                                            module, opts, 3, err, sizeof err),
                     0);
    assert_string_equal(id, "broker");
    assert_string_equal(secret, "s3cret");
    assert_string_equal(scope, "");
    assert_int_equal(sasl_jaas_parse_module("org.apache.kafka.common.security.plain.PlainLoginModule required;", module,
                                            opts, 3, err, sizeof err),
                     -2);
    assert_int_equal(sasl_jaas_parse_module("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                            "required clientId=b unsecuredLoginStringClaim_sub=x;",
                                            module, opts, 3, err, sizeof err),
                     -1);
    assert_string_equal(err, "option unsecuredLoginStringClaim_sub is not served (only clientId, clientSecret and "
                             "scope)");
    assert_int_equal(sasl_jaas_parse_module("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                            "required clientSecret=\"0123456789012345678901234567890123456789"
                                            "01234567890123456789012345\";",
                                            module, opts, 3, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "clientSecret is too long"));
    assert_null(strstr(err, "0123"));

    size_t len = 0;
    char *msg = sasl_oauthbearer_message("abc.def.ghi", &len);
    assert_non_null(msg);
    assert_int_equal(len, 29);
    assert_memory_equal(msg,
                        "n,,\x01"
                        "auth=Bearer abc.def.ghi\x01\x01",
                        len);
    free(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scram_against_the_server),
        cmocka_unit_test(test_plain_and_bad_input),
        cmocka_unit_test(test_jaas),
        cmocka_unit_test(test_jaas_oauth_and_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
