/* AWS Signature Version 4, from AWS's signing documentation: canonical
 * request -> string to sign -> HMAC chain of the secret over date, region,
 * service and "aws4_request" -> hex signature. */
#include "s3_sigv4.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGV4_MAX_HEADERS 16
#define SIGV4_MAX_QUERY_PARAMS 16
#define SIGV4_MAX_NAME 64
#define SIGV4_MAX_VALUE 1024

/* A bounded string builder: every append checks the room left. */
struct sigv4_buf {
    char *data;
    size_t cap;
    size_t len;
    bool overflow;
};

static void buf_append_n(struct sigv4_buf *b, const char *s, size_t n)
{
    if (b->overflow || b->len + n + 1 > b->cap) {
        b->overflow = true;
        return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_append(struct sigv4_buf *b, const char *s)
{
    buf_append_n(b, s, strlen(s));
}

static int buf_finish(struct sigv4_buf *b)
{
    return b->overflow ? -1 : 0;
}

static void hex_encode(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char hex[SIGV4_HEX_SHA256_LEN + 1])
{
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    EVP_Digest(data, len, digest, &digest_len, EVP_sha256(), NULL);
    hex_encode(digest, digest_len, hex);
}

void sigv4_md5_base64(const void *data, size_t len, char out[25])
{
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    EVP_Digest(data, len, digest, &digest_len, EVP_md5(), NULL);
    EVP_EncodeBlock((unsigned char *)out, digest, (int)digest_len);
}

void sigv4_amz_date(time_t t, char out[17])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

int sigv4_uri_encode(const char *in, bool keep_slash, char *out, size_t outlen)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/');
        size_t need = plain ? 1 : 3;
        if (n + need + 1 > outlen)
            return -1;
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = digits[*p >> 4];
            out[n++] = digits[*p & 15];
        }
    }
    if (n + 1 > outlen)
        return -1;
    out[n] = '\0';
    return 0;
}

struct canonical_header {
    char name[SIGV4_MAX_NAME];
    char value[SIGV4_MAX_VALUE];
};

static int compare_headers(const void *a, const void *b)
{
    return strcmp(((const struct canonical_header *)a)->name, ((const struct canonical_header *)b)->name);
}

/* Lower-cases names, trims values and folds runs of spaces into one, then
 * sorts by name. */
static int canonical_headers(const struct sigv4_request *req, struct canonical_header *out)
{
    if (req->header_count > SIGV4_MAX_HEADERS)
        return -1;
    for (size_t i = 0; i < req->header_count; i++) {
        const char *name = req->headers[i].name;
        const char *value = req->headers[i].value;
        size_t name_len = strlen(name);
        if (name_len == 0 || name_len >= SIGV4_MAX_NAME)
            return -1;
        for (size_t j = 0; j <= name_len; j++)
            out[i].name[j] = (char)tolower((unsigned char)name[j]);
        while (*value == ' ' || *value == '\t')
            value++;
        size_t n = 0;
        for (const char *p = value; *p; p++) {
            bool space = *p == ' ' || *p == '\t';
            if (space && (n == 0 || out[i].value[n - 1] == ' '))
                continue;
            if (n + 2 > SIGV4_MAX_VALUE)
                return -1;
            out[i].value[n++] = space ? ' ' : *p;
        }
        while (n > 0 && out[i].value[n - 1] == ' ')
            n--;
        out[i].value[n] = '\0';
    }
    qsort(out, req->header_count, sizeof(*out), compare_headers);
    return 0;
}

struct query_param {
    const char *start;
    size_t len;
};

static int compare_params(const void *a, const void *b)
{
    const struct query_param *x = a, *y = b;
    /* By key, then by value (a plain strcmp of "k=v" would put "a=z"
     * after "a-b=c" only by accident of '=' and '-' ordering). */
    size_t xk = strcspn(x->start, "=&"), yk = strcspn(y->start, "=&");
    if (xk > x->len)
        xk = x->len;
    if (yk > y->len)
        yk = y->len;
    size_t kmin = xk < yk ? xk : yk;
    int c = memcmp(x->start, y->start, kmin);
    if (c != 0 || xk != yk)
        return c != 0 ? c : (xk < yk ? -1 : 1);
    const char *xv = x->start + xk, *yv = y->start + yk;
    size_t xvl = x->len - xk, yvl = y->len - yk;
    if (xvl > 0) {
        xv++;
        xvl--;
    }
    if (yvl > 0) {
        yv++;
        yvl--;
    }
    size_t vmin = xvl < yvl ? xvl : yvl;
    c = memcmp(xv, yv, vmin);
    if (c != 0)
        return c;
    return xvl < yvl ? -1 : (xvl > yvl ? 1 : 0);
}

static void append_canonical_query(struct sigv4_buf *b, const char *query)
{
    struct query_param params[SIGV4_MAX_QUERY_PARAMS];
    size_t count = 0;
    for (const char *p = query ? query : ""; *p;) {
        size_t len = strcspn(p, "&");
        if (len > 0) {
            if (count == SIGV4_MAX_QUERY_PARAMS) {
                b->overflow = true;
                return;
            }
            params[count++] = (struct query_param){p, len};
        }
        p += len;
        if (*p == '&')
            p++;
    }
    qsort(params, count, sizeof(params[0]), compare_params);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            buf_append(b, "&");
        buf_append_n(b, params[i].start, params[i].len);
        if (memchr(params[i].start, '=', params[i].len) == NULL)
            buf_append(b, "="); /* a bare "uploads" is signed as "uploads=" */
    }
}

static void append_signed_headers(struct sigv4_buf *b, const struct canonical_header *headers, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            buf_append(b, ";");
        buf_append(b, headers[i].name);
    }
}

int sigv4_canonical_request(const struct sigv4_request *req, char *out, size_t outlen)
{
    struct canonical_header headers[SIGV4_MAX_HEADERS];
    if (!req->method || !req->path || !req->payload_hash || canonical_headers(req, headers) != 0)
        return -1;
    struct sigv4_buf b = {out, outlen, 0, outlen == 0};
    if (outlen > 0)
        out[0] = '\0';
    buf_append(&b, req->method);
    buf_append(&b, "\n");
    buf_append(&b, req->path[0] ? req->path : "/");
    buf_append(&b, "\n");
    append_canonical_query(&b, req->query);
    buf_append(&b, "\n");
    for (size_t i = 0; i < req->header_count; i++) {
        buf_append(&b, headers[i].name);
        buf_append(&b, ":");
        buf_append(&b, headers[i].value);
        buf_append(&b, "\n");
    }
    buf_append(&b, "\n");
    append_signed_headers(&b, headers, req->header_count);
    buf_append(&b, "\n");
    buf_append(&b, req->payload_hash);
    return buf_finish(&b);
}

int sigv4_signed_headers(const struct sigv4_request *req, char *out, size_t outlen)
{
    struct canonical_header headers[SIGV4_MAX_HEADERS];
    if (canonical_headers(req, headers) != 0)
        return -1;
    struct sigv4_buf b = {out, outlen, 0, outlen == 0};
    if (outlen > 0)
        out[0] = '\0';
    append_signed_headers(&b, headers, req->header_count);
    return buf_finish(&b);
}

static void append_credential_scope(struct sigv4_buf *b, const struct sigv4_scope *scope)
{
    buf_append_n(b, scope->amz_date, 8);
    buf_append(b, "/");
    buf_append(b, scope->region);
    buf_append(b, "/");
    buf_append(b, scope->service);
    buf_append(b, "/aws4_request");
}

static bool scope_valid(const struct sigv4_scope *scope)
{
    return scope->access_key_id && scope->secret_access_key && scope->region && scope->service && scope->amz_date &&
           strlen(scope->amz_date) == 16;
}

int sigv4_string_to_sign(const struct sigv4_scope *scope, const char *canonical_request, char *out, size_t outlen)
{
    if (!scope_valid(scope))
        return -1;
    char hash[SIGV4_HEX_SHA256_LEN + 1];
    sigv4_sha256_hex(canonical_request, strlen(canonical_request), hash);
    struct sigv4_buf b = {out, outlen, 0, outlen == 0};
    if (outlen > 0)
        out[0] = '\0';
    buf_append(&b, "AWS4-HMAC-SHA256\n");
    buf_append(&b, scope->amz_date);
    buf_append(&b, "\n");
    append_credential_scope(&b, scope);
    buf_append(&b, "\n");
    buf_append(&b, hash);
    return buf_finish(&b);
}

static void hmac_sha256(const uint8_t *key, size_t key_len, const char *data, size_t data_len, uint8_t out[32])
{
    unsigned int out_len = 32;
    HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data, data_len, out, &out_len);
}

int sigv4_signature(const struct sigv4_scope *scope, const char *string_to_sign, char hex[SIGV4_HEX_SHA256_LEN + 1])
{
    if (!scope_valid(scope))
        return -1;
    char secret[512];
    int n = snprintf(secret, sizeof(secret), "AWS4%s", scope->secret_access_key);
    if (n < 0 || (size_t)n >= sizeof(secret))
        return -1;
    uint8_t k_date[32], k_region[32], k_service[32], k_signing[32], signature[32];
    hmac_sha256((const uint8_t *)secret, (size_t)n, scope->amz_date, 8, k_date);
    hmac_sha256(k_date, 32, scope->region, strlen(scope->region), k_region);
    hmac_sha256(k_region, 32, scope->service, strlen(scope->service), k_service);
    hmac_sha256(k_service, 32, "aws4_request", 12, k_signing);
    hmac_sha256(k_signing, 32, string_to_sign, strlen(string_to_sign), signature);
    hex_encode(signature, 32, hex);
    /* The derived keys are as sensitive as the secret itself. */
    OPENSSL_cleanse(secret, sizeof(secret));
    OPENSSL_cleanse(k_date, sizeof(k_date));
    OPENSSL_cleanse(k_region, sizeof(k_region));
    OPENSSL_cleanse(k_service, sizeof(k_service));
    OPENSSL_cleanse(k_signing, sizeof(k_signing));
    return 0;
}

int sigv4_authorization(const struct sigv4_request *req, const struct sigv4_scope *scope, char *out, size_t outlen)
{
    char canonical[8192], to_sign[512], signature[SIGV4_HEX_SHA256_LEN + 1], signed_headers[512];
    if (sigv4_canonical_request(req, canonical, sizeof(canonical)) != 0 ||
        sigv4_string_to_sign(scope, canonical, to_sign, sizeof(to_sign)) != 0 ||
        sigv4_signature(scope, to_sign, signature) != 0 ||
        sigv4_signed_headers(req, signed_headers, sizeof(signed_headers)) != 0)
        return -1;
    struct sigv4_buf b = {out, outlen, 0, outlen == 0};
    if (outlen > 0)
        out[0] = '\0';
    buf_append(&b, "AWS4-HMAC-SHA256 Credential=");
    buf_append(&b, scope->access_key_id);
    buf_append(&b, "/");
    append_credential_scope(&b, scope);
    buf_append(&b, ", SignedHeaders=");
    buf_append(&b, signed_headers);
    buf_append(&b, ", Signature=");
    buf_append(&b, signature);
    return buf_finish(&b);
}
