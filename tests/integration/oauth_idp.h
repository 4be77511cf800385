/* A test identity provider on loopback, on its own threads: the OAuth 2
 * token endpoint (POST /token, client-credentials grant with HTTP Basic
 * client authentication, RFC 6749 4.4) answering a JWT for sub=<client
 * id> signed with jwt_forge, and the JWK set it publishes (GET
 * /jwks.json), over plain HTTP and, when given a certificate, over HTTPS
 * on a second port. The signing key and the published set can change
 * while it runs (key rotation). */
#ifndef CAIRN_TESTS_OAUTH_IDP_H
#define CAIRN_TESTS_OAUTH_IDP_H

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct idp_options {
    const char *client_id;
    const char *secret;
    const char *scope; /* the grant must ask for it; NULL: any or none */
    const char *audience, *issuer;
    int lifetime_s;
    EVP_PKEY *key; /* signs the tokens; the caller keeps it alive */
    const char *alg, *kid;
    const char *tls_cert, *tls_key; /* PEM files; NULL: no HTTPS port */
};

struct idp {
    struct idp_options o;
    int fd, port;           /* HTTP */
    int tls_fd, tls_port;   /* HTTPS, -1 and 0 without a certificate */
    struct ssl_ctx_st *tls; /* OpenSSL's SSL_CTX */
    pthread_t thread;
    atomic_bool stop;
    atomic_bool down; /* answers 503 temporarily_unavailable while set */
    atomic_int issued, refused, serving, jwks_served;
    pthread_mutex_t mu; /* the signing key and the JWK set; jwt_forge is single-threaded */
    char *jwks;         /* NULL: GET /jwks.json is a 404 */
};

/* Listens and serves; fails the test when it cannot. */
void idp_start(struct idp *idp, const struct idp_options *options);
/* Tokens from now on are signed with key (kept alive by the caller). */
void idp_sign_with(struct idp *idp, EVP_PKEY *key, const char *alg, const char *kid);
/* GET /jwks.json answers {"keys":[jwk, ...]} from now on. */
void idp_publish(struct idp *idp, const char *const *jwks, size_t count);
void idp_stop(struct idp *idp);

#endif
