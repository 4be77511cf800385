/* The verified client certificate as the plugin ABI describes it
 * (struct cairn_tls_peer), and the principal it maps to. */
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/authn.h"
#include "tls/tls_internal.h"

#define TLS_PEER_MAX_SANS 32

/* Strings and arrays the peer description points into; freed together. */
struct peer_buffers {
    char subject[1024];
    char issuer[1024];
    char *dns[TLS_PEER_MAX_SANS], *uris[TLS_PEER_MAX_SANS], *emails[TLS_PEER_MAX_SANS];
    size_t dns_count, uri_count, email_count;
    unsigned char *der;
    unsigned char **chain;
    size_t *chain_len;
    size_t chain_count;
};

/* RFC 2253, most specific first ("CN=alice,O=Example"), as Java's
 * X500Principal.getName() gives Kafka. */
static void name_rfc2253(const X509_NAME *name, char *out, size_t outlen)
{
    out[0] = '\0';
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return;
    if (X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
        int n = BIO_read(b, out, (int)outlen - 1);
        out[n > 0 ? n : 0] = '\0';
    }
    BIO_free(b);
}

static void add_san(char **list, size_t *count, const ASN1_STRING *s)
{
    if (*count >= TLS_PEER_MAX_SANS)
        return;
    int len = ASN1_STRING_length(s);
    const unsigned char *data = ASN1_STRING_get0_data(s);
    /* An embedded NUL would let "a.example\0.evil" pass as a.example. */
    if (len <= 0 || memchr(data, '\0', (size_t)len))
        return;
    char *copy = malloc((size_t)len + 1);
    if (!copy)
        return;
    memcpy(copy, data, (size_t)len);
    copy[len] = '\0';
    list[(*count)++] = copy;
}

static void collect_sans(X509 *cert, struct peer_buffers *pb)
{
    GENERAL_NAMES *names = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
        if (g->type == GEN_DNS)
            add_san(pb->dns, &pb->dns_count, g->d.dNSName);
        else if (g->type == GEN_URI)
            add_san(pb->uris, &pb->uri_count, g->d.uniformResourceIdentifier);
        else if (g->type == GEN_EMAIL)
            add_san(pb->emails, &pb->email_count, g->d.rfc822Name);
    }
    GENERAL_NAMES_free(names);
}

static void collect_chain(SSL *ssl, struct peer_buffers *pb)
{
    STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
    int n = chain ? sk_X509_num(chain) : 0;
    if (n <= 1)
        return;
    pb->chain = calloc((size_t)n - 1, sizeof *pb->chain);
    pb->chain_len = calloc((size_t)n - 1, sizeof *pb->chain_len);
    if (!pb->chain || !pb->chain_len)
        return;
    for (int i = 1; i < n; i++) {
        unsigned char *der = NULL;
        int len = i2d_X509(sk_X509_value(chain, i), &der);
        if (len <= 0)
            continue;
        pb->chain[pb->chain_count] = der;
        pb->chain_len[pb->chain_count++] = (size_t)len;
    }
}

static void free_buffers(struct peer_buffers *pb)
{
    for (size_t i = 0; i < pb->dns_count; i++)
        free(pb->dns[i]);
    for (size_t i = 0; i < pb->uri_count; i++)
        free(pb->uris[i]);
    for (size_t i = 0; i < pb->email_count; i++)
        free(pb->emails[i]);
    for (size_t i = 0; i < pb->chain_count; i++)
        OPENSSL_free(pb->chain[i]);
    free(pb->chain);
    free(pb->chain_len);
    OPENSSL_free(pb->der);
}

int tls_peer_principal(const struct tls_listener *l, const char *peer_addr, SSL *ssl, char *type, size_t type_len,
                       char *name, size_t name_len, char *err, size_t errlen)
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (!cert) {
        snprintf(err, errlen, "no client certificate");
        return -1;
    }
    struct peer_buffers *pb = calloc(1, sizeof *pb);
    if (!pb) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    name_rfc2253(X509_get_subject_name(cert), pb->subject, sizeof pb->subject);
    name_rfc2253(X509_get_issuer_name(cert), pb->issuer, sizeof pb->issuer);
    collect_sans(cert, pb);
    int der_len = i2d_X509(cert, &pb->der);
    collect_chain(ssl, pb);
    ERR_clear_error();

    struct cairn_tls_peer peer = {
        .struct_size = sizeof peer,
        .subject_dn = pb->subject,
        .issuer_dn = pb->issuer,
        .san_dns = (const char *const *)pb->dns,
        .san_dns_count = pb->dns_count,
        .san_uris = (const char *const *)pb->uris,
        .san_uri_count = pb->uri_count,
        .san_emails = (const char *const *)pb->emails,
        .san_email_count = pb->email_count,
        .der = pb->der,
        .der_len = der_len > 0 ? (size_t)der_len : 0,
        .chain_der = (const uint8_t *const *)pb->chain,
        .chain_der_len = pb->chain_len,
        .chain_count = pb->chain_count,
    };
    int rc = 1;
    if (l->map_principal)
        rc = l->map_principal(l->map_ctx, l->name, peer_addr, &peer, type, type_len, name, name_len, err, errlen);
    if (rc > 0) {
        /* Kafka's default: the subject DN as the user name. */
        snprintf(type, type_len, "User");
        snprintf(name, name_len, "%s", pb->subject);
        rc = 0;
    }
    free_buffers(pb);
    free(pb);
    return rc < 0 ? -1 : 0;
}
