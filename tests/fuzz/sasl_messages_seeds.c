/* Writes seeds for fuzz_sasl_messages into the directory given: a valid
 * message for each of its parsers, so the fuzzer starts past the framing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwt_forge.h"

static void seed(const char *dir, const char *name, int selector, const char *body)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputc(selector, f);
    fwrite(body, 1, strlen(body), f);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
        return 2;
    }
    EVP_PKEY *key = forge_keygen("ES256");
    char *jwk = forge_jwk(key, "ec", "ES256");
    char *token = forge_token(key, "ES256", "ec",
                              "{\"sub\":\"alice\",\"aud\":\"cairn\",\"iss\":\"https://issuer.test\","
                              "\"exp\":1700000600,\"iat\":1700000000,\"scope\":\"a b\"}");
    if (!jwk || !token)
        return 1;
    char doc[4096], msg[4096];
    snprintf(doc, sizeof doc, "{\"keys\":[%s]}", jwk);
    snprintf(msg, sizeof msg, "n,a=alice,\x01" "auth=Bearer %s\x01" "ext=1\x01\x01", token);
    seed(argv[1], "scram-first", 0, "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
    seed(argv[1], "scram-final", 1,
         "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
         "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    seed(argv[1], "oauth-message", 2, msg);
    seed(argv[1], "jwt", 3, token);
    seed(argv[1], "jwks", 4, doc);
    free(jwk);
    free(token);
    EVP_PKEY_free(key);
    return 0;
}
