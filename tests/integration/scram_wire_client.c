/* The SASL tests' SCRAM client on the wire; see scram_wire_client.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw_kafka.h"
#include "raw_session.h"
#include "scram_wire_client.h"

/* Sends a built frame, reads the answer; 0, or 1 when the broker closed. */
static int scram_wire_roundtrip(struct scram_wire_conn *c, struct raw_writer *w, bool flexible_header, uint8_t **frame,
                                struct raw_reader *r)
{
    raw_frame_finish(w);
    assert_int_equal(raw_send_all(c->fd, w->data, w->len), 0);
    raw_writer_free(w);
    size_t len = 0;
    int rc = raw_recv_frame(c->fd, 10000, 1 << 20, frame, &len);
    if (rc == 1)
        return 1;
    if (rc != 0)
        fail_msg("no answer from the broker");
    raw_reader_init(r, *frame, len);
    assert_int_equal(raw_get_i32(r), c->corr);
    if (flexible_header)
        raw_skip_tagged_fields(r);
    return 0;
}

int16_t scram_wire_handshake_v(struct scram_wire_conn *c, int16_t version, const char *mechanism, char *mechanisms,
                               size_t cap)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 17, version, ++c->corr, "sasl-it");
    raw_put_string(&w, mechanism);
    uint8_t *frame;
    struct raw_reader r;
    assert_int_equal(scram_wire_roundtrip(c, &w, false, &frame, &r), 0);
    int16_t err = raw_get_i16(&r);
    int32_t n = raw_get_i32(&r);
    mechanisms[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        int16_t len = raw_get_i16(&r);
        size_t at = strlen(mechanisms);
        snprintf(mechanisms + at, cap - at, "%s%.*s", i ? "," : "", len, (const char *)r.data + r.pos);
        raw_skip(&r, (size_t)len);
    }
    raw_session_finish_read(&r, frame);
    return err;
}

int16_t scram_wire_handshake(struct scram_wire_conn *c, const char *mechanism, char *mechanisms, size_t cap)
{
    return scram_wire_handshake_v(c, 1, mechanism, mechanisms, cap);
}

int scram_wire_authenticate(struct scram_wire_conn *c, const void *token, size_t len, struct scram_wire_answer *a)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 36, 2, ++c->corr, "sasl-it");
    raw_put_compact_bytes(&w, token, len);
    raw_put_uvarint(&w, 0);
    uint8_t *frame;
    struct raw_reader r;
    if (scram_wire_roundtrip(c, &w, true, &frame, &r) != 0)
        return 1;
    a->error = raw_get_i16(&r);
    a->message[0] = '\0';
    raw_get_compact_string(&r, a->message, sizeof a->message);
    uint64_t n = raw_get_uvarint(&r);
    a->len = n > 0 ? (size_t)n - 1 : 0;
    assert_true(a->len < sizeof a->bytes);
    memcpy(a->bytes, r.data + r.pos, a->len);
    raw_skip(&r, a->len);
    a->lifetime_ms = raw_get_i64(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return 0;
}

static void hmac_of(int mech, const uint8_t *key, size_t klen, const void *data, size_t n, uint8_t *out)
{
    unsigned int len = 0;
    assert_non_null(HMAC(sasl_it_md(mech), key, (int)klen, data, n, out, &len));
}

static size_t b64(const uint8_t *in, size_t n, char *out)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* After a SaslHandshake v0: a bare token each way, no Kafka header. */
static int bare_token(struct scram_wire_conn *c, const void *token, size_t len, struct scram_wire_answer *a)
{
    uint8_t size[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    assert_int_equal(raw_send_all(c->fd, size, 4), 0);
    assert_int_equal(raw_send_all(c->fd, token, len), 0);
    uint8_t *frame = NULL;
    size_t n = 0;
    int rc = raw_recv_frame(c->fd, 10000, sizeof a->bytes - 1, &frame, &n);
    memset(a, 0, sizeof *a);
    if (rc == 0) {
        memcpy(a->bytes, frame, n);
        a->len = n;
    }
    free(frame);
    return rc;
}

/* One SCRAM token through SaslAuthenticate, or bare after a v0 handshake. */
static int scram_token(struct scram_wire_conn *c, bool bare, const char *token, struct scram_wire_answer *a)
{
    return bare ? bare_token(c, token, strlen(token), a) : scram_wire_authenticate(c, token, strlen(token), a);
}

void scram_wire_login_as(struct scram_wire_conn *c, bool bare, int mech, const char *user, const char *password,
                         struct scram_wire_answer *a)
{
    char first[256];
    snprintf(first, sizeof first, "n,,n=%s,r=fyko+d2lbbFgONRv9qkxdawL", user);
    assert_int_equal(scram_token(c, bare, first, a), 0);
    if (a->error)
        return;
    char server_first[600];
    snprintf(server_first, sizeof server_first, "%.*s", (int)a->len, (const char *)a->bytes);
    char nonce[300], salt64[200];
    int iterations = 0;
    assert_int_equal(sscanf(server_first, "r=%299[^,],s=%199[^,],i=%d", nonce, salt64, &iterations), 3);
    uint8_t salt[200], salted[64], client_key[64], stored[64], sig[64], proof[64];
    int salt_len = EVP_DecodeBlock(salt, (const unsigned char *)salt64, (int)strlen(salt64));
    salt_len -= (int)(strlen(salt64) - strcspn(salt64, "=")); /* padding */
    int klen = sasl_it_key_len(mech);
    assert_int_equal(
        PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, salt_len, iterations, sasl_it_md(mech), klen, salted),
        1);
    char without_proof[400], auth_msg[1400];
    snprintf(without_proof, sizeof without_proof, "c=biws,r=%s", nonce);
    snprintf(auth_msg, sizeof auth_msg, "%s,%s,%s", first + 3, server_first, without_proof);
    hmac_of(mech, salted, (size_t)klen, "Client Key", 10, client_key);
    unsigned int n = 0;
    EVP_Digest(client_key, (size_t)klen, stored, &n, sasl_it_md(mech), NULL);
    hmac_of(mech, stored, (size_t)klen, auth_msg, strlen(auth_msg), sig);
    for (int i = 0; i < klen; i++)
        proof[i] = client_key[i] ^ sig[i];
    char proof64[100], final[600];
    b64(proof, (size_t)klen, proof64);
    snprintf(final, sizeof final, "%s,p=%s", without_proof, proof64);
    int rc = scram_token(c, bare, final, a);
    if (bare && rc == 1)
        a->error = ERR_SASL_AUTHENTICATION_FAILED; /* v0 has no error frame: the broker closes */
    else
        assert_int_equal(rc, 0);
}

void scram_wire_login(struct scram_wire_conn *c, int mech, const char *user, const char *password,
                      struct scram_wire_answer *a)
{
    scram_wire_login_as(c, false, mech, user, password, a);
}

struct scram_wire_conn scram_wire_connect(struct sasl_it *t)
{
    struct scram_wire_conn c = {raw_connect(t->sasl_port, 10000), 0};
    assert_true(c.fd >= 0);
    return c;
}

int scram_wire_metadata(struct scram_wire_conn *c)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 3, 1, ++c->corr, "sasl-it");
    raw_put_i32(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = scram_wire_roundtrip(c, &w, false, &frame, &r);
    free(frame);
    return rc;
}
