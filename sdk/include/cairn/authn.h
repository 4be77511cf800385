/* Cairn plugin ABI: authentication. Two independent parts: a SASL server
 * (SaslHandshake/SaslAuthenticate exchanges) and a mapping from a TLS peer
 * certificate to a principal. A plugin fills in the parts it provides and
 * leaves the others NULL. */
#ifndef CAIRN_AUTHN_H
#define CAIRN_AUTHN_H

#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_sasl_step_result {
    CAIRN_SASL_CONTINUE = 1, /* send *out to the client and wait for its next token */
    CAIRN_SASL_DONE = 2,     /* authenticated: principal is filled in; *out may hold a final token */
    CAIRN_SASL_FAILED = 3,   /* rejected: err holds the message sent to the client */
};

/* What a step may say besides its result, read by the host:
 *  - CAIRN_SASL_FAILED with principal->name set: the identity the client
 *    claimed (e.g. PLAIN's authcid), recorded in the audit event of the
 *    refusal; it never becomes the connection's principal. The host clears
 *    principal before each step, so leaving it alone means "unknown".
 *  - CAIRN_SASL_FAILED with *out set: the exchange is refused now, but
 *    the mechanism owes the client a last challenge (RFC 7628 3.2.3: the
 *    OAUTHBEARER error JSON, which the client answers with %x01). The host
 *    audits and logs the refusal at once with err as the reason, sends *out
 *    as a normal challenge, and calls sasl_step once more with the client's
 *    answer; that step's err is the message the client reads (anything but
 *    CAIRN_SASL_FAILED then counts as a failure too). A client that closes
 *    instead is not audited twice. */

/* Bytes a plugin hands to the host. The host calls release(ctx) once it has
 * sent them; data stays valid until then. */
struct cairn_bytes_out {
    uint32_t struct_size;
    const uint8_t *data;
    size_t len;
    void (*release)(void *ctx);
    void *ctx;
};

/* The TLS peer of a connection. der/der_len is the leaf certificate; chain
 * holds the rest of the verified chain, leaf excluded. */
struct cairn_tls_peer {
    uint32_t struct_size;
    const char *subject_dn; /* RFC 2253 form, e.g. "CN=alice,O=Example" */
    const char *issuer_dn;
    const char *const *san_dns; /* subjectAltName DNS entries */
    size_t san_dns_count;
    const char *const *san_uris; /* subjectAltName URI entries (SPIFFE ids) */
    size_t san_uri_count;
    const char *const *san_emails;
    size_t san_email_count;
    const uint8_t *der;
    size_t der_len;
    const uint8_t *const *chain_der;
    const size_t *chain_der_len;
    size_t chain_count;
};

/* Thread-safety: every call for one session comes from one io thread at a
 * time (a connection's requests are serialised), but different sessions run
 * concurrently. sasl_step may block briefly (e.g. a local password check);
 * a step that needs the network (token introspection) should be fast or
 * cached, as it holds an io thread. */
struct cairn_authn_vtable {
    uint32_t struct_size;

    /* SASL mechanisms served, NULL-terminated, e.g. {"PLAIN", "SCRAM-SHA-256",
     * NULL}; NULL when this plugin does no SASL. */
    const char *const *sasl_mechanisms;
    /* A client picked `mechanism` (SaslHandshake). *session is the plugin's
     * per-exchange state, passed to step and end. */
    int (*sasl_start)(void *instance, const char *mechanism, const struct cairn_request_info *connection,
                      void **session, char *err, size_t errlen);
    /* One client token in, at most one server token out (out->data NULL for
     * none). Returns enum cairn_sasl_step_result. */
    int (*sasl_step)(void *instance, void *session, const uint8_t *in, size_t in_len, struct cairn_bytes_out *out,
                     struct cairn_principal_out *principal, char *err, size_t errlen);
    /* The exchange ended (done, failed, or the connection closed). */
    void (*sasl_end)(void *instance, void *session);

    /* Maps a verified TLS peer to a principal (ssl.principal.mapping.rules
     * style). CAIRN_NOT_FOUND lets the host fall back to its default
     * (User:<subject DN>); CAIRN_ERROR rejects the connection. */
    int (*map_tls_principal)(void *instance, const struct cairn_tls_peer *peer, struct cairn_principal_out *principal,
                             char *err, size_t errlen);
};

#ifdef __cplusplus
}
#endif

#endif
