/* The client half of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512
 * (RFC 5802, RFC 7677): the messages a client sends in SaslAuthenticate and
 * the checks of the server's answers, with no I/O. Used by the broker's own
 * links (net/client_conn.c) and by the cairn tool (cli/sasl.c).
 *
 * Also parses the credentials a broker gives its links in Kafka's
 * `sasl.jaas.config` form: PlainLoginModule and ScramLoginModule with
 * username and password only, and the options of any other login module
 * (OAuthBearerLoginModule's clientId, clientSecret, scope) through
 * sasl_jaas_parse_module.
 *
 * Threads: a sasl_client is owned by one thread (one connection's). */
#ifndef CAIRN_SASL_CLIENT_H
#define CAIRN_SASL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define SASL_CLIENT_NAME_MAX 256
#define SASL_CLIENT_MSG_MAX 2048

/* The canonical spelling of a mechanism this client speaks (PLAIN,
 * SCRAM-SHA-256, SCRAM-SHA-512; any case), or NULL. */
const char *sasl_client_mechanism_canonical(const char *name);

enum sasl_client_step {
    SASL_CLIENT_SEND = 1,   /* send out/out_len, pass the answer to sasl_client_next */
    SASL_CLIENT_DONE = 2,   /* authenticated (the server proved itself for SCRAM) */
    SASL_CLIENT_FAILED = 3, /* err says why */
};

struct sasl_client {
    int scram; /* enum scram_mechanism; 0 for PLAIN */
    int stage;
    char mechanism[16];
    char username[SASL_CLIENT_NAME_MAX], password[SASL_CLIENT_NAME_MAX];
    char nonce[48];
    char first_bare[SASL_CLIENT_MSG_MAX];
    char auth_msg[3 * SASL_CLIENT_MSG_MAX];
    uint8_t server_key[64];
    uint8_t out[SASL_CLIENT_MSG_MAX + 2 * SASL_CLIENT_NAME_MAX];
    size_t out_len;
};

/* Starts an exchange (not sasl_client_start: that is Cyrus SASL's, which
 * net/client_gssapi.c calls in the same binary); on SASL_CLIENT_SEND, out holds the first message.
 * SASL_CLIENT_FAILED for an unknown mechanism or names too long. */
enum sasl_client_step sasl_client_begin(struct sasl_client *c, const char *mechanism, const char *username,
                                        const char *password, char *err, size_t errlen);
/* The server's answer to the last message sent (auth_bytes of a successful
 * SaslAuthenticate). */
enum sasl_client_step sasl_client_next(struct sasl_client *c, const uint8_t *in, size_t in_len, char *err,
                                       size_t errlen);
/* Wipes the password and keys. */
void sasl_client_clear(struct sasl_client *c);

/* Parses `<module> required username="..." password="...";` where module
 * is org.apache.kafka.common.security.plain.PlainLoginModule (mechanism
 * PLAIN) or org.apache.kafka.common.security.scram.ScramLoginModule
 * (SCRAM-SHA-256/512). Returns 0, or -1 with err saying what is wrong
 * (never quoting the password). */
int sasl_jaas_parse(const char *text, const char *mechanism, char *username, size_t ulen, char *password, size_t plen,
                    char *err, size_t errlen);

/* One option a login module takes: its key, and where its value goes
 * (cap bytes with the NUL; left empty when the entry does not set it). */
struct sasl_jaas_option {
    const char *key;
    char *value;
    size_t cap;
};
#define SASL_JAAS_VALUE_MAX 1024

/* Parses `<module_name> required key="value" ...;` taking only the keys of
 * opts. 0; -2 when the entry names another module (err untouched); -1 with
 * err for anything else wrong (never quoting a value). */
int sasl_jaas_parse_module(const char *text, const char *module_name, struct sasl_jaas_option *opts, size_t count,
                           char *err, size_t errlen);

/* The OAUTHBEARER initial client response of RFC 7628 as Kafka's clients
 * send it: "n,,\x01auth=Bearer <token>\x01\x01". Caller frees; NULL when out
 * of memory. */
char *sasl_oauthbearer_message(const char *token, size_t *len);

#endif
