/* SASL on the tool's connections (security.protocol=sasl_plaintext or
 * sasl_ssl): the outbound client authenticates every connection it opens
 * (SaslHandshake v1, then SaslAuthenticate rounds of core/sasl's client)
 * before any of the tool's requests goes out; this file names the
 * mechanisms and turns a refusal into the tool's error line. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sasl/sasl_client.h"

#define ERR_UNSUPPORTED_SASL_MECHANISM 33

const char *cli_sasl_mechanism_canonical(const char *name)
{
    return sasl_client_mechanism_canonical(name);
}

int cli_sasl_failed(const struct cli_conn *c, int16_t code, const char *detail)
{
    if (code < 0)
        return cli_fail(CLI_EXIT_KAFKA, "SASL %s: %s", c->sasl_mechanism, detail);
    if (code == ERR_UNSUPPORTED_SASL_MECHANISM) {
        char what[700];
        snprintf(what, sizeof(what), "the broker does not enable SASL mechanism %s (it enables: %s)", c->sasl_mechanism,
                 detail[0] ? detail : "none");
        return cli_kafka_fail(code, (struct kafka_str){NULL, -1}, what, "set sasl.mechanism to one of those");
    }
    char what[400];
    snprintf(what, sizeof(what), "SASL %s authentication of user '%s' failed", c->sasl_mechanism, c->sasl_username);
    return cli_kafka_fail(
        code, kafka_str_from_cstr(detail), what,
        code == 34 /* ILLEGAL_SASL_STATE */ ? "check security.protocol"
                                            : "check sasl.username, sasl.password and sasl.mechanism");
}
