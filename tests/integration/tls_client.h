/* What the TLS tests' librdkafka clients share: an SSL client conf from
 * the test certificates (tls/make_certs.sh), a Metadata round trip as the
 * admission check, and counting log lines. Test thread only. */
#ifndef CAIRN_TESTS_TLS_CLIENT_H
#define CAIRN_TESTS_TLS_CLIENT_H

#include <stdbool.h>

/* Owns the strings the conf points at; lives as long as the conf is used. */
struct ssl_conf {
    char ca[400], cert[400], key[400];
    const char *kv[16];
};

/* librdkafka conf for an SSL client trusting certs_dir/ca (NULL:
 * "ca.pem") and presenting certs_dir/<client>.pem with its .key (client
 * NULL: no certificate). */
const char *const *ssl_client_conf(struct ssl_conf *c, const char *certs_dir, const char *ca, const char *client);

/* True when a Metadata request with conf gets through within timeout_ms. */
bool rk_metadata_works(const char *bootstrap, const char *const *conf, int timeout_ms);

/* Lines of the file at path holding a, b and c (c may be NULL); 0 when it
 * cannot be read. */
int file_lines_with(const char *path, const char *a, const char *b, const char *c);

#endif
