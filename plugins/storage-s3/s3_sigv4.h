/* AWS Signature Version 4 for S3 requests: canonical request, string to
 * sign, signing key and the Authorization header, written from AWS's
 * "Signature Version 4 signing process" documentation. Pure functions over
 * caller buffers (no I/O, no global state), so any thread may call them. */
#ifndef CAIRN_S3_SIGV4_H
#define CAIRN_S3_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SIGV4_HEX_SHA256_LEN 64
/* Hex SHA-256 of the empty string: the payload hash of a body-less request. */
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_header {
    const char *name; /* any case; canonicalised to lower case */
    const char *value;
};

/* One request as it goes on the wire. Every header listed is signed, so
 * list host and x-amz-date (and x-amz-content-sha256 for S3). */
struct sigv4_request {
    const char *method;
    const char *path;  /* URI-encoded absolute path, e.g. "/bucket/a%20b"; S3 does not encode it twice */
    const char *query; /* URI-encoded "k=v&k2" without '?', any order; "" or NULL for none */
    const struct sigv4_header *headers;
    size_t header_count;
    const char *payload_hash; /* hex SHA-256 of the body, or UNSIGNED-PAYLOAD */
};

struct sigv4_scope {
    const char *access_key_id;
    const char *secret_access_key;
    const char *region;
    const char *service; /* "s3" */
    const char *amz_date; /* yyyymmddThhmmssZ; its first 8 characters are the scope date */
};

/* Each returns 0, or -1 when out is too small or the input is malformed. */

/* Percent-encodes every byte but A-Z a-z 0-9 - . _ ~ (and '/' when
 * keep_slash), as SigV4 requires: %XX with upper-case hex. */
int sigv4_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen);

int sigv4_canonical_request(const struct sigv4_request *req, char *out, size_t outlen);
/* "host;x-amz-date": the lower-cased, sorted header names. */
int sigv4_signed_headers(const struct sigv4_request *req, char *out, size_t outlen);
int sigv4_string_to_sign(const struct sigv4_scope *scope, const char *canonical_request, char *out, size_t outlen);
/* Hex HMAC-SHA256 of string_to_sign with the key derived from the secret,
 * date, region and service. */
int sigv4_signature(const struct sigv4_scope *scope, const char *string_to_sign, char hex[SIGV4_HEX_SHA256_LEN + 1]);
/* The full Authorization header value:
 * "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...". */
int sigv4_authorization(const struct sigv4_request *req, const struct sigv4_scope *scope, char *out, size_t outlen);

void sigv4_sha256_hex(const void *data, size_t len, char hex[SIGV4_HEX_SHA256_LEN + 1]);
/* Base64 of the MD5 of data: the Content-MD5 header value. */
void sigv4_md5_base64(const void *data, size_t len, char out[25]);
/* yyyymmddThhmmssZ for a UTC time. */
void sigv4_amz_date(time_t t, char out[17]);

#endif
