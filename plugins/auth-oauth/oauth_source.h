/* Fetching a JWK set from sasl.oauthbearer.jwks.endpoint.url. Blocking:
 * call it off the request threads. */
#ifndef CAIRN_AUTH_OAUTH_SOURCE_H
#define CAIRN_AUTH_OAUTH_SOURCE_H

#include <stddef.h>

#include "oauth_internal.h"

/* 0 when url is file://, http:// or https://. */
int oauth_source_check(const char *url, char *err, size_t errlen);
/* libcurl's process-wide set-up and tear-down; call from init and fini. */
int oauth_source_global_init(char *err, size_t errlen);
void oauth_source_global_cleanup(void);
/* Reads and parses the set; *out belongs to the caller. ca_file (a PEM
 * file of CA certificates, NULL or "" for the system's) is what an
 * https:// server's certificate must chain to. */
int oauth_source_fetch(const char *url, const char *ca_file, long timeout_ms, struct jwks **out, char *err,
                       size_t errlen);

#endif
