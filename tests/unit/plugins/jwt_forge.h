/* Test-side JWT issuer: keys made with OpenSSL, their public JWKs, and
 * compact JWS tokens signed with them (RS*, PS*, ES*), so tests of the
 * auth-oauth plugin need no fixture files. Test code: fails by returning
 * NULL. Single-threaded use. */
#ifndef CAIRN_TESTS_JWT_FORGE_H
#define CAIRN_TESTS_JWT_FORGE_H

#include <openssl/evp.h>
#include <stddef.h>

/* A fresh key for alg: RSA 2048 for RS and PS, the alg's curve for ES. */
EVP_PKEY *forge_keygen(const char *alg);
/* The public key as one JWK object ({"kty":...}); kid and alg may be NULL. Caller frees. */
char *forge_jwk(EVP_PKEY *pkey, const char *kid, const char *alg);
/* Writes {"keys":[jwk, ...]} to path; 0 on success. */
int forge_write_jwks(const char *path, const char *const *jwks, size_t count);
/* base64url without padding. Caller frees. */
char *forge_b64url(const void *data, size_t len);
/* header.payload.signature with the header {"alg":alg,"typ":"JWT"[,"kid":kid]}
 * and claims_json as payload. alg "none" gives an empty signature. Caller frees. */
char *forge_token(EVP_PKEY *pkey, const char *alg, const char *kid, const char *claims_json);

#endif
