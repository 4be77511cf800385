/* A SCRAM client of the SASL tests' own, on the wire: SaslHandshake,
 * SaslAuthenticate (or v0's bare tokens) and a whole RFC 5802 exchange,
 * so the tests can see what librdkafka hides (error codes, messages,
 * session lifetimes, the broker closing).
 *
 * Thread-safety: the test's thread only; failures are cmocka failures. */
#ifndef CAIRN_TESTS_INTEGRATION_SCRAM_WIRE_CLIENT_H
#define CAIRN_TESTS_INTEGRATION_SCRAM_WIRE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sasl_it_fixture.h"

/* A connection to the SASL listener and its last correlation id. */
struct scram_wire_conn {
    int fd;
    int32_t corr;
};

/* SaslHandshake of a version (after v0 the tokens go bare); returns the
 * error and fills the mechanism list. scram_wire_handshake: v1. */
int16_t scram_wire_handshake_v(struct scram_wire_conn *c, int16_t version, const char *mechanism, char *mechanisms,
                               size_t cap);
int16_t scram_wire_handshake(struct scram_wire_conn *c, const char *mechanism, char *mechanisms, size_t cap);

/* What SaslAuthenticate (or a bare v0 token) answered. */
struct scram_wire_answer {
    int16_t error;
    char message[256];
    uint8_t bytes[512];
    size_t len;
    int64_t lifetime_ms;
};

/* SaslAuthenticate v2; returns 1 when the broker closed instead. */
int scram_wire_authenticate(struct scram_wire_conn *c, const void *token, size_t len, struct scram_wire_answer *a);

/* A whole SCRAM exchange (RFC 5802 client side) after a handshake, its
 * tokens in SaslAuthenticate or bare (after a v0 handshake); a holds the
 * final answer (error set on failure). scram_wire_login: not bare. */
void scram_wire_login_as(struct scram_wire_conn *c, bool bare, int mech, const char *user, const char *password,
                         struct scram_wire_answer *a);
void scram_wire_login(struct scram_wire_conn *c, int mech, const char *user, const char *password,
                      struct scram_wire_answer *a);

/* Connects to t's SASL listener. */
struct scram_wire_conn scram_wire_connect(struct sasl_it *t);

/* Metadata v1 (no topics); returns 0 answered, 1 closed. */
int scram_wire_metadata(struct scram_wire_conn *c);

#endif
