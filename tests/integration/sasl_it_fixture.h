/* The broker of the SASL integration tests: cairnd with a PLAINTEXT and a
 * SASL listener, SCRAM credentials sent with AlterUserScramCredentials
 * (librdkafka 2.0 has no admin call for it), librdkafka clients that
 * authenticate, and the audit log's authentication events.
 *
 * Thread-safety: the test's thread only; failures are cmocka failures. */
#ifndef CAIRN_TESTS_INTEGRATION_SASL_IT_FIXTURE_H
#define CAIRN_TESTS_INTEGRATION_SASL_IT_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <openssl/evp.h>

#include "harness.h"

#define SHA256 1
#define SHA512 2
#define ERR_UNSUPPORTED_SASL_MECHANISM 33
#define ERR_ILLEGAL_SASL_STATE 34
#define ERR_SASL_AUTHENTICATION_FAILED 58
#define ERR_RESOURCE_NOT_FOUND 91
#define ERR_DUPLICATE_RESOURCE 92
#define ERR_UNACCEPTABLE_CREDENTIAL 93

struct sasl_it {
    struct test_broker broker;
    int sasl_port;
    char sasl_bootstrap[64];
    char audit_path[600];
    const char *ca_location; /* set: the SASL listener is SASL_SSL */
};

/* The digest and key length of SHA256 or SHA512. */
const EVP_MD *sasl_it_md(int mech);
int sasl_it_key_len(int mech);

/* Starts cairnd with a PLAINTEXT listener and a SASL_PLAINTEXT one on a
 * free port, SCRAM-SHA-256 and -512 enabled, the audit plugin writing to
 * t->audit_path, and connections.max.reauth.ms=reauth_ms. extra: more
 * overrides (NULL-terminated, may be NULL); they come last. sasl_it_start:
 * none. */
void sasl_it_start_with(struct sasl_it *t, const char *reauth_ms, const char *const *extra);
void sasl_it_start(struct sasl_it *t, const char *reauth_ms);

/* Stops and cleans up the broker and removes its audit log. */
void sasl_it_stop(struct sasl_it *t);

/* One credential AlterUserScramCredentials upserts. */
struct sasl_it_upsert {
    const char *user;
    int mech;
    int iterations;
    const char *password;
};

/* Sends one AlterUserScramCredentials v0 on the PLAINTEXT listener; writes
 * each result's user and error into users/errors (up to max); returns the
 * result count. */
int sasl_it_alter_credentials(struct sasl_it *t, const struct sasl_it_upsert *ups, int n_ups,
                              const char *const *del_users, const int *del_mechs, int n_del, char users[][64],
                              int16_t *errors, int max);

/* One credential (4096 iterations) that must be accepted. */
void sasl_it_create_user(struct sasl_it *t, const char *user, int mech, const char *password);

/* The authentication errors librdkafka reported to a client's error callback. */
struct sasl_it_auth_errors {
    int count;
    char text[512];
};

/* A producer on the SASL listener (SASL_SSL when t->ca_location is set)
 * whose authentication errors land in *errors. */
rd_kafka_t *sasl_it_producer(struct sasl_it *t, const char *mech, const char *user, const char *password,
                             struct sasl_it_auth_errors *errors);

/* Produces n records with the given credentials, then reads them back with
 * a SASL consumer using the same ones. */
void sasl_it_produce_and_consume(struct sasl_it *t, const char *mech, const char *user, const char *password,
                                 const char *topic);

/* A producer with bad credentials reports librdkafka's authentication error
 * carrying the broker's message. */
void sasl_it_expect_auth_failure(struct sasl_it *t, const char *mech, const char *user, const char *password);

/* Waits up to 5 s for the audit log's authentication event of principal
 * (its error containing reason_part, when given) on the SASL_PLAINTEXT
 * listener with mech. */
void sasl_it_expect_audited(struct sasl_it *t, const char *principal, bool success, const char *reason_part,
                            const char *mech);

/* How many authentication events of the audit log at audit_path have that
 * principal (NULL: any), outcome, reason_part in their error (NULL: any)
 * and mechanism (NULL: any). */
int sasl_it_count_audited(const char *audit_path, const char *principal, bool success, const char *reason_part,
                          const char *mech);

#endif
