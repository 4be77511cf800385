/* What the TLS cluster tests (and test_tls_client_certs) share: the test certificates
 * (tls/make_certs.sh, the openssl command line) in a temporary directory,
 * files written over in place (a certificate rotation), and waits on a
 * node's log. Test thread only; include <cmocka.h> (with its
 * prerequisites) and harness.h first. Needs CAIRN_SOURCE_DIR. */
#ifndef CAIRN_TESTS_TLS_CLUSTER_H
#define CAIRN_TESTS_TLS_CLUSTER_H

#include <stddef.h>

struct test_broker;

/* Makes a new directory $TMPDIR/<name>-XXXXXX (path into dir) and the
 * certificates in it: ca.pem signs server.pem, other-ca.pem signs
 * other-server.pem (both name localhost and 127.0.0.1). 0, or -1. */
int tls_certs_make(const char *name, char *dir, size_t dirlen);
/* Removes the directory. 0, or -1. */
int tls_certs_remove(const char *dir);

/* Writes the concatenation of the NULL-terminated files (names in dir)
 * to dir/target through a rename, so a reader sees the old file or the
 * new one, never half of one. Fails the test on an error. */
void tls_certs_write(const char *dir, const char *target, const char *const *sources);

/* Lines of b's log holding needle. */
int broker_log_count(const struct test_broker *b, const char *needle);
/* Waits until at least `count` lines of b's log hold needle; fails the
 * test (printing the log's tail) after timeout_ms. */
void broker_wait_log_count(struct test_broker *b, const char *needle, int count, int timeout_ms);

#endif
