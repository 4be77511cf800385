/* Building an OpenSSL server context from Kafka's ssl.* keys, PEM only
 * (KIP-651): the keystore from one file (chain + key) or two inline
 * values, the truststore from a file or an inline value. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tls/tls_internal.h"

void tls_error_string(char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        int n = snprintf(out + used, outlen - used, "%s%s", used ? "; " : "", one);
        if (n < 0 || (size_t)n >= outlen - used)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(out, outlen, "no reason given by OpenSSL");
    ERR_clear_error();
}

/* err = "<key> (<what>): <OpenSSL reason>" */
static void fail_with_openssl(const struct tls_settings *s, enum tls_key key, const char *what, char *err,
                              size_t errlen)
{
    char why[512];
    tls_error_string(why, sizeof why);
    /* A file key also names the file: a reload's error must say which
     * file is bad, not just which key pointed at it. */
    bool file = (key == TLS_KEYSTORE_LOCATION || key == TLS_TRUSTSTORE_LOCATION || key == TLS_CRL_LOCATION) &&
                s->value[key];
    snprintf(err, errlen, "%s: %s: %s%s%s%s", s->source[key] ? s->source[key] : tls_key_name(key), what, why,
             file ? " (in " : "", file ? s->value[key] : "", file ? ")" : "");
}

/* A BIO over the PEM text of a file key or an inline key, whichever is set. */
static BIO *pem_source(const struct tls_settings *s, enum tls_key file_key, enum tls_key inline_key, char *err,
                       size_t errlen)
{
    if (s->value[file_key]) {
        BIO *b = BIO_new_file(s->value[file_key], "r");
        if (!b) {
            ERR_clear_error();
            snprintf(err, errlen, "%s: cannot open %s: %s", s->source[file_key], s->value[file_key], strerror(errno));
        }
        return b;
    }
    BIO *b = BIO_new_mem_buf(s->value[inline_key], -1);
    if (!b)
        fail_with_openssl(s, inline_key, "cannot read the inline PEM", err, errlen);
    return b;
}

static int password_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    const char *pw = u;
    if (!pw)
        return 0;
    size_t len = strlen(pw);
    if (len > (size_t)size)
        return -1;
    memcpy(buf, pw, len);
    return (int)len;
}

static int load_keystore(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    bool from_file = s->value[TLS_KEYSTORE_LOCATION] != NULL;
    if (!from_file && (!s->value[TLS_KEYSTORE_CERTIFICATE_CHAIN] || !s->value[TLS_KEYSTORE_KEY])) {
        snprintf(err, errlen,
                 "an SSL listener needs ssl.keystore.location, or ssl.keystore.certificate.chain and "
                 "ssl.keystore.key");
        return -1;
    }
    enum tls_key cert_key = from_file ? TLS_KEYSTORE_LOCATION : TLS_KEYSTORE_CERTIFICATE_CHAIN;
    enum tls_key key_key = from_file ? TLS_KEYSTORE_LOCATION : TLS_KEYSTORE_KEY;
    BIO *b = pem_source(s, TLS_KEYSTORE_LOCATION, TLS_KEYSTORE_CERTIFICATE_CHAIN, err, errlen);
    if (!b)
        return -1;
    int rc = -1;
    X509 *leaf = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        fail_with_openssl(s, cert_key, "no usable certificate", err, errlen);
        goto out;
    }
    X509 *extra;
    while ((extra = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
            X509_free(extra);
            fail_with_openssl(s, cert_key, "cannot add a chain certificate", err, errlen);
            goto out;
        }
    }
    ERR_clear_error(); /* the end of the certificates */
    if (!from_file) {
        BIO_free(b);
        b = BIO_new_mem_buf(s->value[TLS_KEYSTORE_KEY], -1);
    } else if (BIO_reset(b) < 0) { /* 0 is success for a file BIO */
        fail_with_openssl(s, key_key, "cannot read the key", err, errlen);
        goto out;
    }
    EVP_PKEY *pkey = b ? PEM_read_bio_PrivateKey(b, NULL, password_cb, s->value[TLS_KEY_PASSWORD]) : NULL;
    if (!pkey) {
        fail_with_openssl(s, key_key,
                          s->value[TLS_KEY_PASSWORD] ? "cannot read the private key (is ssl.key.password right?)"
                                                     : "cannot read the private key (encrypted without "
                                                       "ssl.key.password?)",
                          err, errlen);
        goto out;
    }
    int used = SSL_CTX_use_PrivateKey(ctx, pkey);
    EVP_PKEY_free(pkey);
    if (used != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        fail_with_openssl(s, key_key, "the private key does not match the certificate", err, errlen);
        goto out;
    }
    rc = 0;
out:
    X509_free(leaf);
    BIO_free(b);
    return rc;
}

static int load_truststore(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    enum tls_key key = s->value[TLS_TRUSTSTORE_LOCATION] ? TLS_TRUSTSTORE_LOCATION : TLS_TRUSTSTORE_CERTIFICATES;
    BIO *b = pem_source(s, TLS_TRUSTSTORE_LOCATION, TLS_TRUSTSTORE_CERTIFICATES, err, errlen);
    if (!b)
        return -1;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int count = 0;
    X509 *cert;
    while ((cert = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        /* Also offered to clients as the acceptable issuers. */
        int ok = X509_STORE_add_cert(store, cert) == 1 && SSL_CTX_add_client_CA(ctx, cert) == 1;
        X509_free(cert);
        if (!ok) {
            fail_with_openssl(s, key, "cannot add a trusted certificate", err, errlen);
            BIO_free(b);
            return -1;
        }
        count++;
    }
    BIO_free(b);
    if (count == 0) {
        fail_with_openssl(s, key, "no certificate found", err, errlen);
        return -1;
    }
    ERR_clear_error();
    return 0;
}

/* The CRLs of ssl.crl.location join the trusted certificates; with them,
 * every certificate of a client's chain must have a current CRL from its
 * issuer and not be on it (OpenSSL's CRL_CHECK | CRL_CHECK_ALL), so a
 * missing or lapsed CRL refuses clients instead of letting revoked ones in. */
static int load_crls(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    const char *path = s->value[TLS_CRL_LOCATION];
    BIO *b = BIO_new_file(path, "r");
    if (!b) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: cannot open %s: %s", s->source[TLS_CRL_LOCATION], path, strerror(errno));
        return -1;
    }
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int count = 0;
    X509_CRL *crl;
    while ((crl = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL)) != NULL) {
        int ok = X509_STORE_add_crl(store, crl) == 1;
        X509_CRL_free(crl);
        if (!ok) {
            fail_with_openssl(s, TLS_CRL_LOCATION, "cannot add a CRL", err, errlen);
            BIO_free(b);
            return -1;
        }
        count++;
    }
    BIO_free(b);
    if (count == 0) {
        fail_with_openssl(s, TLS_CRL_LOCATION, "no CRL found", err, errlen);
        return -1;
    }
    ERR_clear_error();
    if (X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL) != 1) {
        fail_with_openssl(s, TLS_CRL_LOCATION, "cannot turn on CRL checks", err, errlen);
        return -1;
    }
    return 0;
}

static int protocol_version(const char *name)
{
    static const struct {
        const char *name;
        int version;
    } known[] = {
        {"TLSv1", TLS1_VERSION}, {"TLSv1.1", TLS1_1_VERSION}, {"TLSv1.2", TLS1_2_VERSION}, {"TLSv1.3", TLS1_3_VERSION}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(name, known[i].name) == 0)
            return known[i].version;
    return -1;
}

/* Splits a comma-separated list in place; calls fn on each trimmed entry. */
static int each_entry(const char *list, int (*fn)(const char *entry, void *arg), void *arg)
{
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (*tok && fn(tok, arg) != 0)
            return -1;
    }
    return 0;
}

struct version_range {
    int min, max;
    const char *bad;
    char bad_buf[64];
};

static int add_version(const char *entry, void *arg)
{
    struct version_range *r = arg;
    int v = protocol_version(entry);
    if (v < 0) {
        snprintf(r->bad_buf, sizeof r->bad_buf, "%.60s", entry);
        r->bad = r->bad_buf;
        return -1;
    }
    if (r->min == 0 || v < r->min)
        r->min = v;
    if (v > r->max)
        r->max = v;
    return 0;
}

static int set_protocols(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    const char *list = s->value[TLS_ENABLED_PROTOCOLS];
    if (!list || !*list)
        return 0;
    struct version_range r = {0};
    if (each_entry(list, add_version, &r) != 0 || r.min == 0) {
        snprintf(err, errlen, "%s: unknown protocol '%s' (expected TLSv1.2, TLSv1.3)", s->source[TLS_ENABLED_PROTOCOLS],
                 r.bad ? r.bad : list);
        return -1;
    }
    if (SSL_CTX_set_min_proto_version(ctx, r.min) != 1 || SSL_CTX_set_max_proto_version(ctx, r.max) != 1) {
        fail_with_openssl(s, TLS_ENABLED_PROTOCOLS, "cannot enable these protocols", err, errlen);
        return -1;
    }
    return 0;
}

struct cipher_lists {
    const STACK_OF(SSL_CIPHER) * all;
    char tls12[2048];
    char tls13[1024];
};

/* Kafka names suites as IANA does (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256);
 * OpenSSL's TLS 1.2 list takes its own names, so translate, and take
 * OpenSSL names as they are. */
static int add_cipher(const char *entry, void *arg)
{
    struct cipher_lists *c = arg;
    const char *openssl_name = entry;
    bool tls13 = false;
    for (int i = 0; i < sk_SSL_CIPHER_num(c->all); i++) {
        const SSL_CIPHER *sc = sk_SSL_CIPHER_value(c->all, i);
        const char *std = SSL_CIPHER_standard_name(sc);
        if ((std && strcmp(std, entry) == 0) || strcmp(SSL_CIPHER_get_name(sc), entry) == 0) {
            openssl_name = SSL_CIPHER_get_name(sc);
            tls13 = strcmp(SSL_CIPHER_get_version(sc), "TLSv1.3") == 0;
            break;
        }
    }
    char *list = tls13 ? c->tls13 : c->tls12;
    size_t cap = tls13 ? sizeof c->tls13 : sizeof c->tls12;
    size_t used = strlen(list);
    snprintf(list + used, cap - used, "%s%s", used ? ":" : "", openssl_name);
    return 0;
}

static int set_ciphers(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    const char *list = s->value[TLS_CIPHER_SUITES];
    if (!list || !*list)
        return 0;
    SSL *probe = SSL_new(ctx);
    if (!probe || SSL_set_cipher_list(probe, "ALL:COMPLEMENTOFALL") != 1) {
        SSL_free(probe);
        fail_with_openssl(s, TLS_CIPHER_SUITES, "cannot list ciphers", err, errlen);
        return -1;
    }
    struct cipher_lists c = {.all = SSL_get_ciphers(probe)};
    each_entry(list, add_cipher, &c);
    SSL_free(probe);
    /* Only TLS 1.3 suites listed: the TLS 1.2 defaults stay, as OpenSSL
     * refuses an empty TLS 1.2 list. */
    if (c.tls12[0] && SSL_CTX_set_cipher_list(ctx, c.tls12) != 1) {
        fail_with_openssl(s, TLS_CIPHER_SUITES, "no usable TLS 1.2 cipher suite", err, errlen);
        return -1;
    }
    if (SSL_CTX_set_ciphersuites(ctx, c.tls13) != 1) {
        fail_with_openssl(s, TLS_CIPHER_SUITES, "no usable TLS 1.3 cipher suite", err, errlen);
        return -1;
    }
    ERR_clear_error();
    return 0;
}

static int check_types(const struct tls_settings *s, char *err, size_t errlen)
{
    enum tls_key types[] = {TLS_KEYSTORE_TYPE, TLS_TRUSTSTORE_TYPE};
    for (size_t i = 0; i < 2; i++) {
        const char *v = s->value[types[i]];
        if (v && strcasecmp(v, "PEM") != 0) {
            snprintf(err, errlen, "%s: type %s is not supported (only PEM)", s->source[types[i]], v);
            return -1;
        }
    }
    if (s->value[TLS_KEYSTORE_LOCATION] && (s->value[TLS_KEYSTORE_CERTIFICATE_CHAIN] || s->value[TLS_KEYSTORE_KEY])) {
        snprintf(err, errlen,
                 "%s and ssl.keystore.certificate.chain/ssl.keystore.key are both set; choose one "
                 "(Kafka refuses both too)",
                 s->source[TLS_KEYSTORE_LOCATION]);
        return -1;
    }
    if (s->value[TLS_TRUSTSTORE_LOCATION] && s->value[TLS_TRUSTSTORE_CERTIFICATES]) {
        snprintf(err, errlen, "%s and ssl.truststore.certificates are both set; choose one",
                 s->source[TLS_TRUSTSTORE_LOCATION]);
        return -1;
    }
    return 0;
}

static int set_client_auth(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
    const char *mode = s->value[TLS_CLIENT_AUTH] ? s->value[TLS_CLIENT_AUTH] : "none";
    bool has_trust = s->value[TLS_TRUSTSTORE_LOCATION] || s->value[TLS_TRUSTSTORE_CERTIFICATES];
    if (has_trust && load_truststore(ctx, s, err, errlen) != 0)
        return -1;
    if (s->value[TLS_CRL_LOCATION]) {
        if (!has_trust) {
            snprintf(err, errlen,
                     "%s needs the certificates of the CAs that signed the CRLs: set ssl.truststore.location or "
                     "ssl.truststore.certificates",
                     s->source[TLS_CRL_LOCATION]);
            return -1;
        }
        if (load_crls(ctx, s, err, errlen) != 0)
            return -1;
    }
    if (strcasecmp(mode, "none") == 0) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        return 0;
    }
    int flags = SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE;
    if (strcasecmp(mode, "required") == 0)
        flags |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    else if (strcasecmp(mode, "requested") != 0) {
        snprintf(err, errlen, "%s: '%s' is not one of none, requested, required", s->source[TLS_CLIENT_AUTH], mode);
        return -1;
    }
    if (!has_trust) {
        snprintf(err, errlen,
                 "%s=%s needs trusted certificates to check clients against: set ssl.truststore.location or "
                 "ssl.truststore.certificates",
                 s->source[TLS_CLIENT_AUTH], mode);
        return -1;
    }
    SSL_CTX_set_verify(ctx, flags, NULL);
    return 0;
}

SSL_CTX *tls_context_build(const struct tls_settings *s, char *err, size_t errlen)
{
    ERR_clear_error();
    if (check_types(s, err, errlen) != 0)
        return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        char why[256];
        tls_error_string(why, sizeof why);
        snprintf(err, errlen, "cannot create a TLS context: %s", why);
        return NULL;
    }
    /* Renegotiation would let a read need a write and back; kTLS is used
     * for sends where the kernel offers it (OpenSSL falls back silently). */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_ENABLE_KTLS);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Whole socket buffers per recv instead of a header and a body per
     * record; what is read past a record shows in SSL_has_pending. */
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_default_read_buffer_len(ctx, 64 * 1024);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    static const unsigned char sid_ctx[] = "cairn";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
    if (load_keystore(ctx, s, err, errlen) != 0 || set_client_auth(ctx, s, err, errlen) != 0 ||
        set_protocols(ctx, s, err, errlen) != 0 || set_ciphers(ctx, s, err, errlen) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

SSL_CTX *tls_client_context_build(const struct tls_settings *s, char *err, size_t errlen)
{
    ERR_clear_error();
    if (check_types(s, err, errlen) != 0)
        return NULL;
    if (!s->value[TLS_TRUSTSTORE_LOCATION] && !s->value[TLS_TRUSTSTORE_CERTIFICATES]) {
        snprintf(err, errlen,
                 "an SSL link needs trusted certificates to check the server against: set "
                 "ssl.truststore.location or ssl.truststore.certificates");
        return NULL;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        char why[256];
        tls_error_string(why, sizeof why);
        snprintf(err, errlen, "cannot create a TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    /* The client's writes coalesce iovecs in a stack buffer: a retried
     * write may come from another address. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    bool has_keystore = s->value[TLS_KEYSTORE_LOCATION] || s->value[TLS_KEYSTORE_CERTIFICATE_CHAIN];
    /* The same CRLs as the listeners: a peer broker or controller whose
     * certificate is revoked is refused like a revoked client. */
    if (load_truststore(ctx, s, err, errlen) != 0 ||
        (s->value[TLS_CRL_LOCATION] && load_crls(ctx, s, err, errlen) != 0) ||
        (has_keystore && load_keystore(ctx, s, err, errlen) != 0) || set_protocols(ctx, s, err, errlen) != 0 ||
        set_ciphers(ctx, s, err, errlen) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}
