/* SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, and
 * the derivation of the credentials a server stores (salt, StoredKey,
 * ServerKey, iterations), as Kafka keeps them in UserScramCredentialRecord.
 * Cryptography is OpenSSL's: PBKDF2, HMAC, the digests, CRYPTO_memcmp for
 * the proof check, RAND_bytes for server nonces.
 *
 * Threads: the credential functions are pure; a scram_server is owned by one
 * thread at a time (the io thread handling the connection's request). */
#ifndef CAIRN_SASL_SCRAM_H
#define CAIRN_SASL_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's ScramMechanism ids (UserScramCredentialRecord.mechanism). */
enum scram_mechanism {
    SCRAM_UNKNOWN = 0,
    SCRAM_SHA_256 = 1,
    SCRAM_SHA_512 = 2,
};

#define SCRAM_MAX_KEY 64 /* SHA-512 digest */
#define SCRAM_MAX_SALT 128
/* Kafka's bounds on iterations (ScramMechanism.minIterations/maxIterations). */
#define SCRAM_MIN_ITERATIONS 4096
#define SCRAM_MAX_ITERATIONS 16384

/* "SCRAM-SHA-256" -> SCRAM_SHA_256; SCRAM_UNKNOWN for anything else. */
enum scram_mechanism scram_mechanism_from_name(const char *name);
/* The mechanism's SASL name, NULL for SCRAM_UNKNOWN or an unknown id. */
const char *scram_mechanism_name(int mechanism);
/* Digest length: 32 or 64, 0 for an unknown mechanism. */
size_t scram_key_len(int mechanism);

struct scram_credential {
    int mechanism; /* enum scram_mechanism */
    uint8_t salt[SCRAM_MAX_SALT];
    size_t salt_len;
    uint8_t stored_key[SCRAM_MAX_KEY];
    uint8_t server_key[SCRAM_MAX_KEY];
    int32_t iterations;
};

/* SaltedPassword = PBKDF2(password, salt, iterations). out holds
 * scram_key_len(mechanism) bytes. Returns 0 or -1. */
int scram_salted_password(int mechanism, const char *password, size_t password_len, const uint8_t *salt,
                          size_t salt_len, int32_t iterations, uint8_t *out);
/* StoredKey and ServerKey from a salted password (AlterUserScramCredentials
 * sends the salted password, never the password). Returns 0 or -1. */
int scram_credential_from_salted(int mechanism, const uint8_t *salted, size_t salted_len, const uint8_t *salt,
                                 size_t salt_len, int32_t iterations, struct scram_credential *out);

/* One server-side exchange: client-first -> server-first, client-final ->
 * server-final. */
struct scram_server;

enum scram_step {
    SCRAM_STEP_CONTINUE = 1, /* send out, wait for the client's next message */
    SCRAM_STEP_DONE = 2,     /* authenticated: send out (server-final) */
    SCRAM_STEP_FAILED = 3,   /* err says why (for the log, not the client) */
};

/* NULL on allocation failure or an unknown mechanism. */
struct scram_server *scram_server_new(int mechanism);
void scram_server_free(struct scram_server *s);

/* Tests: use this nonce part instead of a random one (RFC test vectors). */
void scram_server_set_nonce(struct scram_server *s, const char *nonce);

/* Parses client-first-message; on success *user points at the (unescaped)
 * user name held by s. Returns 0, or -1 with err. */
int scram_server_parse_first(struct scram_server *s, const uint8_t *msg, size_t len, const char **user, char *err,
                             size_t errlen);
/* Builds server-first-message with cred (for the user parse_first named;
 * cred->mechanism must match). out and out_len point into s. */
int scram_server_challenge(struct scram_server *s, const struct scram_credential *cred, const uint8_t **out,
                           size_t *out_len, char *err, size_t errlen);
/* Verifies client-final-message; on success *out is server-final. Returns
 * SCRAM_STEP_DONE or SCRAM_STEP_FAILED. */
enum scram_step scram_server_finish(struct scram_server *s, const uint8_t *msg, size_t len, const uint8_t **out,
                                    size_t *out_len, char *err, size_t errlen);

/* Base64 (RFC 4648, padded). encode returns the length written (out needs
 * 4*ceil(n/3)+1 bytes, NUL-terminated); decode returns the byte count or -1. */
size_t scram_base64_encode(const uint8_t *in, size_t n, char *out);
long scram_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap);

#endif
