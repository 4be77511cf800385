/* SASL/SCRAM on a real cairnd with a PLAINTEXT and a SASL_PLAINTEXT
 * listener: credentials created with AlterUserScramCredentials (sent by
 * the test: librdkafka 2.0 has no admin call for it), librdkafka producing
 * and consuming with SCRAM-SHA-256 and -512, wrong passwords and unknown
 * users refused with Kafka's message, requests before the handshake
 * refused, UNSUPPORTED_SASL_MECHANISM with the enabled list, KIP-368
 * session lifetime and re-authentication (a SCRAM client written here),
 * and every authentication in the audit log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"

#define SHA256 1
#define SHA512 2
#define ERR_UNSUPPORTED_SASL_MECHANISM 33
#define ERR_ILLEGAL_SASL_STATE 34
#define ERR_SASL_AUTHENTICATION_FAILED 58
#define ERR_RESOURCE_NOT_FOUND 91
#define ERR_DUPLICATE_RESOURCE 92
#define ERR_UNACCEPTABLE_CREDENTIAL 93

struct sasl_it {
    struct test_broker broker;
    int sasl_port;
    char sasl_bootstrap[64];
    char audit_path[600];
    const char *ca_location; /* set: the SASL listener is SASL_SSL */
};

static const EVP_MD *md_of(int mech)
{
    return mech == SHA256 ? EVP_sha256() : EVP_sha512();
}

static int key_len(int mech)
{
    return mech == SHA256 ? 32 : 64;
}

/* extra: more overrides (NULL-terminated, may be NULL); they come last. */
static void start_broker_with(struct sasl_it *t, const char *reauth_ms, const char *const *extra)
{
    t->sasl_port = harness_free_port();
    assert_true(t->sasl_port > 0);
    snprintf(t->sasl_bootstrap, sizeof t->sasl_bootstrap, "127.0.0.1:%d", t->sasl_port);
    char listeners[200], plugin_path[600], audit_file[700], reauth[80];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             t->sasl_port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(t->audit_path, sizeof t->audit_path, "/tmp/cairn-sasl-audit-%d-%d.log", (int)getpid(), t->sasl_port);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", t->audit_path);
    snprintf(reauth, sizeof reauth, "connections.max.reauth.ms=%s", reauth_ms);
    const char *overrides[16] = {listeners,   "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
                                 plugin_path, "plugins=audit",
                                 audit_file,  reauth};
    int n = 6;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_start(&t->broker, overrides);
}

static void start_broker(struct sasl_it *t, const char *reauth_ms)
{
    start_broker_with(t, reauth_ms, NULL);
}

static void stop_broker(struct sasl_it *t)
{
    broker_stop(&t->broker);
    broker_mark_passed(&t->broker);
    broker_cleanup(&t->broker);
    unlink(t->audit_path);
}

/* ---- AlterUserScramCredentials / DescribeUserScramCredentials on the wire ---- */

struct upsert {
    const char *user;
    int mech;
    int iterations;
    const char *password;
};

/* Sends one AlterUserScramCredentials v0 on the PLAINTEXT listener; writes
 * each result's user and error into users/errors (up to max); returns the
 * result count. */
static int alter_credentials(struct sasl_it *t, const struct upsert *ups, int n_ups, const char *const *del_users,
                             const int *del_mechs, int n_del, char users[][64], int16_t *errors, int max)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 51, 0, 7, "sasl-it");
    raw_put_compact_array_len(&w, n_del);
    for (int i = 0; i < n_del; i++) {
        raw_put_compact_string(&w, del_users[i]);
        raw_put_i8(&w, (int8_t)del_mechs[i]);
        raw_put_uvarint(&w, 0);
    }
    raw_put_compact_array_len(&w, n_ups);
    for (int i = 0; i < n_ups; i++) {
        uint8_t salt[32], salted[64];
        assert_int_equal(RAND_bytes(salt, sizeof salt), 1);
        int klen = key_len(ups[i].mech == SHA512 ? SHA512 : SHA256);
        assert_int_equal(PKCS5_PBKDF2_HMAC(ups[i].password, (int)strlen(ups[i].password), salt, sizeof salt,
                                           ups[i].iterations, md_of(ups[i].mech), klen, salted),
                         1);
        raw_put_compact_string(&w, ups[i].user);
        raw_put_i8(&w, (int8_t)ups[i].mech);
        raw_put_i32(&w, ups[i].iterations);
        raw_put_compact_bytes(&w, salt, sizeof salt);
        raw_put_compact_bytes(&w, salted, (size_t)klen);
        raw_put_uvarint(&w, 0);
    }
    raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&t->broker), &w, 7, true, 10000, &frame, &r), 0);
    assert_int_equal(raw_get_i32(&r), 0); /* throttle */
    int count = (int)raw_get_uvarint(&r) - 1;
    assert_true(count >= 0 && count <= max);
    for (int i = 0; i < count; i++) {
        assert_true(raw_get_compact_string(&r, users[i], 64));
        errors[i] = raw_get_i16(&r);
        char msg[256];
        raw_get_compact_string(&r, msg, sizeof msg);
        raw_skip_tagged_fields(&r);
    }
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return count;
}

static void create_user(struct sasl_it *t, const char *user, int mech, const char *password)
{
    struct upsert u = {user, mech, 4096, password};
    char users[1][64];
    int16_t errors[1];
    assert_int_equal(alter_credentials(t, &u, 1, NULL, NULL, 0, users, errors, 1), 1);
    assert_string_equal(users[0], user);
    assert_int_equal(errors[0], 0);
}

/* ---- librdkafka over SASL_PLAINTEXT ---- */

struct auth_errors {
    int count;
    char text[512];
};

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct auth_errors *e = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        e->count++;
        snprintf(e->text, sizeof e->text, "%s", reason);
    }
}

static rd_kafka_t *scram_producer(struct sasl_it *t, const char *mech, const char *user, const char *password,
                                  struct auth_errors *errors)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    const char *kv[] = {"bootstrap.servers",
                        t->sasl_bootstrap,
                        "security.protocol",
                        t->ca_location ? "SASL_SSL" : "SASL_PLAINTEXT",
                        "sasl.mechanisms",
                        mech,
                        "sasl.username",
                        user,
                        "sasl.password",
                        password,
                        "linger.ms",
                        "5",
                        t->ca_location ? "ssl.ca.location" : NULL,
                        t->ca_location,
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("%s: %s", kv[i], errstr);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, errors);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk)
        fail_msg("rd_kafka_new: %s", errstr);
    return rk;
}

/* Produces n records with the given credentials, then reads them back with
 * a SASL consumer using the same ones. */
static void produce_and_consume(struct sasl_it *t, const char *mech, const char *user, const char *password,
                                const char *topic)
{
    struct auth_errors errors = {0};
    rd_kafka_t *rk = scram_producer(t, mech, user, password, &errors);
    for (int i = 0; i < 10; i++) {
        char value[32];
        snprintf(value, sizeof value, "%s-%d", user, i);
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                           RD_KAFKA_V_VALUE(value, strlen(value)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(errors.count, 0);
    rd_kafka_destroy(rk);

    const char *conf[] = {"security.protocol",
                          t->ca_location ? "SASL_SSL" : "SASL_PLAINTEXT",
                          "sasl.mechanisms",
                          mech,
                          "sasl.username",
                          user,
                          "sasl.password",
                          password,
                          t->ca_location ? "ssl.ca.location" : NULL,
                          t->ca_location,
                          NULL};
    rd_kafka_t *consumer = rk_consumer_new(t->sasl_bootstrap, conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    int got = 0;
    unsigned seen = 0;
    long long deadline = harness_now_ms() + 20000;
    while (got < 10 && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 500);
        if (!m)
            continue;
        if (!m->err) {
            char value[64];
            int index = -1;
            snprintf(value, sizeof value, "%.*s", (int)m->len, (const char *)m->payload);
            size_t ulen = strlen(user);
            if (strncmp(value, user, ulen) == 0 && value[ulen] == '-')
                index = atoi(value + ulen + 1);
            if (index < 0 || index > 9 || (seen & (1u << index)))
                fail_msg("unexpected record '%s' at offset %lld (seen %x)", value, (long long)m->offset, seen);
            seen |= 1u << index;
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(consumer);
    assert_int_equal(got, 10);
}

/* A producer with bad credentials reports librdkafka's authentication error
 * carrying the broker's message. */
static void expect_auth_failure(struct sasl_it *t, const char *mech, const char *user, const char *password)
{
    struct auth_errors errors = {0};
    rd_kafka_t *rk = scram_producer(t, mech, user, password, &errors);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_metadata(rk, 0, NULL, &md, 3000);
    if (md)
        rd_kafka_metadata_destroy(md);
    long long deadline = harness_now_ms() + 10000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    char expected[160];
    snprintf(expected, sizeof expected,
             "Authentication failed during authentication due to invalid credentials with SASL mechanism %s", mech);
    if (errors.count == 0 || !strstr(errors.text, expected))
        fail_msg("expected an authentication error with '%s', got %d: %s", expected, errors.count, errors.text);
}

static json_t *find_auth_event(const char *path, const char *principal, bool success, const char *reason_part)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[8192];
    json_t *found = NULL;
    while (!found && fgets(line, sizeof line, f)) {
        json_t *ev = json_loads(line, 0, NULL);
        if (!ev)
            continue;
        const char *type = json_string_value(json_object_get(ev, "type"));
        const char *who = json_string_value(json_object_get(ev, "principal"));
        json_t *ok = json_object_get(ev, "success");
        const char *err = json_string_value(json_object_get(ev, "error"));
        if (type && strcmp(type, "authentication") == 0 && who && strcmp(who, principal) == 0 &&
            json_is_true(ok) == success && (!reason_part || (err && strstr(err, reason_part))))
            found = ev;
        else
            json_decref(ev);
    }
    fclose(f);
    return found;
}

static void expect_audited(struct sasl_it *t, const char *principal, bool success, const char *reason_part,
                           const char *mech)
{
    json_t *ev = NULL;
    long long deadline = harness_now_ms() + 5000;
    while (!(ev = find_auth_event(t->audit_path, principal, success, reason_part)) && harness_now_ms() < deadline)
        usleep(100 * 1000);
    if (!ev)
        fail_msg("no %s authentication event for %s in %s", success ? "successful" : "failed", principal,
                 t->audit_path);
    assert_string_equal(json_string_value(json_object_get(ev, "mechanism")), mech);
    assert_string_equal(json_string_value(json_object_get(ev, "listener")), "SASL_PLAINTEXT");
    const char *client = json_string_value(json_object_get(ev, "client"));
    assert_non_null(client);
    assert_true(strncmp(client, "127.0.0.1:", 10) == 0);
    json_decref(ev);
}

static void test_scram_with_librdkafka(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    start_broker(&t, "0");
    create_user(&t, "alice", SHA256, "alice-secret");
    create_user(&t, "bob", SHA512, "bob-secret");
    rk_create_topic(broker_bootstrap(&t.broker), "sasl-topic", 1, NULL);

    produce_and_consume(&t, "SCRAM-SHA-256", "alice", "alice-secret", "sasl-topic");
    expect_auth_failure(&t, "SCRAM-SHA-256", "alice", "not-her-password");
    expect_auth_failure(&t, "SCRAM-SHA-256", "mallory", "whatever");
    /* bob has no SCRAM-SHA-256 credential, only -512. */
    expect_auth_failure(&t, "SCRAM-SHA-256", "bob", "bob-secret");

    /* Credentials live in the metadata log: a restarted broker knows them. */
    broker_stop(&t.broker);
    broker_restart(&t.broker);
    produce_and_consume(&t, "SCRAM-SHA-512", "bob", "bob-secret", "sasl-topic-2");

    expect_audited(&t, "User:alice", true, NULL, "SCRAM-SHA-256");
    expect_audited(&t, "User:alice", false, "wrong password", "SCRAM-SHA-256");
    expect_audited(&t, "User:mallory", false, "no SCRAM-SHA-256 credential", "SCRAM-SHA-256");
    expect_audited(&t, "User:bob", true, NULL, "SCRAM-SHA-512");
    stop_broker(&t);
}

/* ---- the wire: a SCRAM client of its own, the gate, re-authentication ---- */

struct conn {
    int fd;
    int32_t corr;
};

/* Sends a built frame, reads the answer; 0, or 1 when the broker closed. */
static int conn_roundtrip(struct conn *c, struct raw_writer *w, bool flexible_header, uint8_t **frame,
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

/* SaslHandshake v1; returns the error and fills the mechanism list. */
static int16_t handshake_v(struct conn *c, int16_t version, const char *mechanism, char *mechanisms, size_t cap)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 17, version, ++c->corr, "sasl-it");
    raw_put_string(&w, mechanism);
    uint8_t *frame;
    struct raw_reader r;
    assert_int_equal(conn_roundtrip(c, &w, false, &frame, &r), 0);
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

static int16_t handshake(struct conn *c, const char *mechanism, char *mechanisms, size_t cap)
{
    return handshake_v(c, 1, mechanism, mechanisms, cap);
}

struct auth_answer {
    int16_t error;
    char message[256];
    uint8_t bytes[512];
    size_t len;
    int64_t lifetime_ms;
};

/* SaslAuthenticate v2; returns 1 when the broker closed instead. */
static int authenticate(struct conn *c, const void *token, size_t len, struct auth_answer *a)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 36, 2, ++c->corr, "sasl-it");
    raw_put_compact_bytes(&w, token, len);
    raw_put_uvarint(&w, 0);
    uint8_t *frame;
    struct raw_reader r;
    if (conn_roundtrip(c, &w, true, &frame, &r) != 0)
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
    assert_non_null(HMAC(md_of(mech), key, (int)klen, data, n, out, &len));
}

static size_t b64(const uint8_t *in, size_t n, char *out)
{
    return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* A whole SCRAM exchange (RFC 5802 client side) after a handshake;
 * returns the final answer (error set on failure). */
/* After a SaslHandshake v0: a bare token each way, no Kafka header. */
static int bare_token(struct conn *c, const void *token, size_t len, struct auth_answer *a)
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
static int scram_token(struct conn *c, bool bare, const char *token, struct auth_answer *a)
{
    return bare ? bare_token(c, token, strlen(token), a) : authenticate(c, token, strlen(token), a);
}

static void scram_login_as(struct conn *c, bool bare, int mech, const char *user, const char *password,
                           struct auth_answer *a)
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
    int klen = key_len(mech);
    assert_int_equal(
        PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, salt_len, iterations, md_of(mech), klen, salted), 1);
    char without_proof[400], auth_msg[1400];
    snprintf(without_proof, sizeof without_proof, "c=biws,r=%s", nonce);
    snprintf(auth_msg, sizeof auth_msg, "%s,%s,%s", first + 3, server_first, without_proof);
    hmac_of(mech, salted, (size_t)klen, "Client Key", 10, client_key);
    unsigned int n = 0;
    EVP_Digest(client_key, (size_t)klen, stored, &n, md_of(mech), NULL);
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

static void scram_login(struct conn *c, int mech, const char *user, const char *password, struct auth_answer *a)
{
    scram_login_as(c, false, mech, user, password, a);
}

static struct conn sasl_connect(struct sasl_it *t)
{
    struct conn c = {raw_connect(t->sasl_port, 10000), 0};
    assert_true(c.fd >= 0);
    return c;
}

/* Metadata v1 (no topics); returns 0 answered, 1 closed. */
static int metadata_request(struct conn *c)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 3, 1, ++c->corr, "sasl-it");
    raw_put_i32(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    int rc = conn_roundtrip(c, &w, false, &frame, &r);
    free(frame);
    return rc;
}

static void test_wire_gate_and_mechanisms(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    start_broker(&t, "0");
    create_user(&t, "carol", SHA256, "carol-secret");

    /* Before the handshake only ApiVersions is served; anything else closes. */
    struct conn c = sasl_connect(&t);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(c.fd, 3, 1, &versions), 0);
    assert_non_null(raw_api_versions_find(&versions, 17));
    assert_non_null(raw_api_versions_find(&versions, 36));
    c.corr = 1;
    assert_int_equal(metadata_request(&c), 1);
    close(c.fd);

    /* SaslAuthenticate before a handshake closes too. */
    c = sasl_connect(&t);
    struct auth_answer a;
    assert_int_equal(authenticate(&c, "n,,n=carol,r=abc", 16, &a), 1);
    close(c.fd);

    /* A mechanism that is not enabled: the enabled list, then a close. */
    c = sasl_connect(&t);
    char mechanisms[200];
    assert_int_equal(handshake(&c, "PLAIN", mechanisms, sizeof mechanisms), ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_string_equal(mechanisms, "SCRAM-SHA-256,SCRAM-SHA-512");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);

    /* After a handshake, another request is ILLEGAL_SASL_STATE, then a close. */
    c = sasl_connect(&t);
    assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), ERR_ILLEGAL_SASL_STATE);
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);

    /* A wrong password: Kafka's message (KIP-152) and a close. */
    c = sasl_connect(&t);
    assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA256, "carol", "wrong", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(a.message, "Authentication failed during authentication due to invalid credentials with SASL "
                                   "mechanism SCRAM-SHA-256");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);

    /* The right one: then any request is served, and SaslAuthenticate is
     * ILLEGAL_SASL_STATE outside an exchange. */
    c = sasl_connect(&t);
    assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA256, "carol", "carol-secret", &a);
    assert_int_equal(a.error, 0);
    assert_true(a.len > 2 && memcmp(a.bytes, "v=", 2) == 0);
    assert_int_equal(a.lifetime_ms, 0);
    assert_int_equal(metadata_request(&c), 0);
    assert_int_equal(authenticate(&c, "x", 1, &a), 0);
    assert_int_equal(a.error, ERR_ILLEGAL_SASL_STATE);
    assert_int_equal(metadata_request(&c), 0);
    close(c.fd);

    /* SaslHandshake v0: the tokens follow bare, without Kafka headers. */
    c = sasl_connect(&t);
    assert_int_equal(handshake_v(&c, 0, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_login_as(&c, true, SHA256, "carol", "carol-secret", &a);
    assert_int_equal(a.error, 0);
    assert_true(a.len > 2 && memcmp(a.bytes, "v=", 2) == 0);
    assert_int_equal(metadata_request(&c), 0);
    close(c.fd);
    c = sasl_connect(&t);
    assert_int_equal(handshake_v(&c, 0, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_login_as(&c, true, SHA256, "carol", "wrong", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    close(c.fd);

    /* The PLAINTEXT listener answers SASL requests with ILLEGAL_SASL_STATE. */
    struct conn p = {raw_connect(broker_port(&t.broker), 10000), 0};
    assert_true(p.fd >= 0);
    assert_int_equal(handshake(&p, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), ERR_ILLEGAL_SASL_STATE);
    close(p.fd);
    stop_broker(&t);
}

static void test_reauthentication(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    start_broker(&t, "1500");
    create_user(&t, "dave", SHA512, "dave-secret");
    create_user(&t, "erin", SHA512, "erin-secret");

    struct conn c = sasl_connect(&t);
    char mechanisms[200];
    struct auth_answer a;
    assert_int_equal(handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.lifetime_ms, 1500);
    assert_int_equal(metadata_request(&c), 0);

    /* Re-authenticating as the same user renews the session. */
    assert_int_equal(handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.lifetime_ms, 1500);
    assert_int_equal(metadata_request(&c), 0);

    /* Past its lifetime, a request other than SASL closes the connection. */
    usleep(1700 * 1000);
    assert_int_equal(metadata_request(&c), 1);
    close(c.fd);

    /* Re-authenticating as another user is refused. */
    c = sasl_connect(&t);
    assert_int_equal(handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA512, "erin", "erin-secret", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(a.message, "Cannot change principals during re-authentication from User:dave: User:erin");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);
    expect_audited(&t, "User:erin", false, "re-authentication as User:erin", "SCRAM-SHA-512");
    stop_broker(&t);
}

/* DescribeUserScramCredentials v0 of one user: error, and the first
 * credential's mechanism and iterations. */
static int16_t describe_user(struct sasl_it *t, const char *user, int *mech, int *iterations)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 50, 0, 9, "sasl-it");
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, user);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&t->broker), &w, 9, true, 10000, &frame, &r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    char text[256];
    raw_get_compact_string(&r, text, sizeof text);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, text, sizeof text);
    assert_string_equal(text, user);
    int16_t err = raw_get_i16(&r);
    raw_get_compact_string(&r, text, sizeof text);
    int n = (int)raw_get_uvarint(&r) - 1;
    for (int i = 0; i < n; i++) {
        int m = raw_get_i8(&r);
        int it = raw_get_i32(&r);
        raw_skip_tagged_fields(&r);
        if (i == 0) {
            *mech = m;
            *iterations = it;
        }
    }
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return err;
}

static void test_credential_admin(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    start_broker(&t, "0");
    create_user(&t, "frank", SHA256, "frank-secret");
    int mech = 0, iterations = 0;
    assert_int_equal(describe_user(&t, "frank", &mech, &iterations), 0);
    assert_int_equal(mech, SHA256);
    assert_int_equal(iterations, 4096);
    assert_int_equal(describe_user(&t, "nobody", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    char users[8][64];
    int16_t errors[8];
    struct upsert bad[] = {
        {"few", SHA256, 100, "x"},    {"many", SHA512, 20000, "x"}, {"twice", SHA256, 4096, "x"},
        {"twice", SHA256, 8192, "y"}, {"weird", 9, 4096, "x"},
    };
    int n = alter_credentials(&t, bad, 5, NULL, NULL, 0, users, errors, 8);
    assert_int_equal(n, 4);
    assert_string_equal(users[0], "few");
    assert_int_equal(errors[0], ERR_UNACCEPTABLE_CREDENTIAL);
    assert_int_equal(errors[1], ERR_UNACCEPTABLE_CREDENTIAL);
    assert_string_equal(users[2], "twice");
    assert_int_equal(errors[2], ERR_DUPLICATE_RESOURCE);
    assert_int_equal(errors[3], ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_int_equal(describe_user(&t, "twice", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    /* Deleting: a missing credential is RESOURCE_NOT_FOUND; frank's goes. */
    const char *del_users[] = {"frank", "ghost"};
    int del_mechs[] = {SHA256, SHA256};
    n = alter_credentials(&t, NULL, 0, del_users, del_mechs, 2, users, errors, 8);
    assert_int_equal(n, 2);
    assert_int_equal(errors[0], 0);
    assert_int_equal(errors[1], ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(describe_user(&t, "frank", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    /* frank can no longer log in; the change needed no restart. */
    struct conn c = sasl_connect(&t);
    char mechanisms[200];
    struct auth_answer a;
    assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_login(&c, SHA256, "frank", "frank-secret", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    close(c.fd);
    stop_broker(&t);
}

/* PLAIN through the auth-sasl plugin (Cyrus SASL) against a sasldb the
 * test makes with saslpasswd2. */
static void test_plain_through_cyrus(void **state)
{
    (void)state;
    char db[256], cmd[600], db_key[300];
    snprintf(db, sizeof db, "/tmp/cairn-sasldb-%d", (int)getpid());
    unlink(db);
    snprintf(cmd, sizeof cmd,
             "printf %%s 'gina-secret' | /usr/sbin/saslpasswd2 -p -c -f '%s' -u cairn -a cairn gina 2>&1", db);
    if (system(cmd) != 0)
        fail_msg("saslpasswd2 failed (is sasl2-bin installed?): %s", cmd);
    snprintf(db_key, sizeof db_key, "plugin.auth-sasl.sasldb_path=%s", db);
    const char *extra[] = {"plugins=audit,auth-sasl", db_key, "plugin.auth-sasl.realm=cairn",
                           "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", NULL};
    struct sasl_it t = {0};
    start_broker_with(&t, "0", extra);
    rk_create_topic(broker_bootstrap(&t.broker), "plain-topic", 1, NULL);
    produce_and_consume(&t, "PLAIN", "gina", "gina-secret", "plain-topic");

    struct auth_errors errors = {0};
    rd_kafka_t *rk = scram_producer(&t, "PLAIN", "gina", "wrong", &errors);
    long long deadline = harness_now_ms() + 10000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    if (!strstr(errors.text, "Authentication failed: Invalid username or password"))
        fail_msg("expected Kafka's PLAIN failure message, got: %s", errors.text);

    /* The handshake offers what is enabled and served, in the configured order. */
    struct conn c = sasl_connect(&t);
    char mechanisms[200];
    assert_int_equal(handshake(&c, "GSSAPI", mechanisms, sizeof mechanisms), ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_string_equal(mechanisms, "PLAIN,SCRAM-SHA-256");
    close(c.fd);

    expect_audited(&t, "User:gina", true, NULL, "PLAIN");
    expect_audited(&t, "User:ANONYMOUS", false, "Invalid username or password", "PLAIN");
    stop_broker(&t);
    unlink(db);
}

/* SASL_SSL: SCRAM over the TLS transport, with the certificates the TLS
 * tests make; a wrong password is refused there too. */
static void test_scram_over_sasl_ssl(void **state)
{
    (void)state;
    char dir[256], cmd[700], keystore[300], ca[300], listeners[200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/cairn-sasl-ssl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);

    struct sasl_it t = {.ca_location = ca};
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:%d", port);
    const char *extra[] = {listeners, keystore, NULL};
    start_broker_with(&t, "0", extra);
    /* The listener override replaced the SASL_PLAINTEXT port start_broker_with chose. */
    t.sasl_port = port;
    snprintf(t.sasl_bootstrap, sizeof t.sasl_bootstrap, "127.0.0.1:%d", port);
    create_user(&t, "carol", SHA512, "carol-secret");
    rk_create_topic(broker_bootstrap(&t.broker), "sasl-ssl-topic", 1, NULL);
    produce_and_consume(&t, "SCRAM-SHA-512", "carol", "carol-secret", "sasl-ssl-topic");
    expect_auth_failure(&t, "SCRAM-SHA-512", "carol", "not-her-password");
    stop_broker(&t);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* connection.failed.authentication.delay.ms: a wrong password's answer and
 * the close after it wait that long; a right one does not. */
static void test_failed_authentication_delay(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    const char *const extra[] = {"connection.failed.authentication.delay.ms=800", NULL};
    start_broker_with(&t, "0", extra);
    create_user(&t, "dana", SHA256, "dana-secret");
    char mechanisms[200];
    struct auth_answer a;
    for (int right = 0; right <= 1; right++) {
        struct conn c = sasl_connect(&t);
        assert_int_equal(handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
        long long began = harness_now_ms();
        scram_login(&c, SHA256, "dana", right ? "dana-secret" : "wrong", &a);
        long long answered = harness_now_ms() - began;
        if (right) {
            assert_int_equal(a.error, 0);
            if (answered >= 700)
                fail_msg("a successful login took %lld ms", answered);
        } else {
            assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
            assert_true(raw_wait_closed(c.fd, 5000));
            long long closed = harness_now_ms() - began;
            if (answered < 780 || closed < 780)
                fail_msg("failure answered after %lld ms, closed after %lld ms; expected >= 800", answered, closed);
        }
        close(c.fd);
    }
    stop_broker(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_gate_and_mechanisms), cmocka_unit_test(test_reauthentication),
        cmocka_unit_test(test_credential_admin),         cmocka_unit_test(test_scram_with_librdkafka),
        cmocka_unit_test(test_scram_over_sasl_ssl),
        cmocka_unit_test(test_plain_through_cyrus),      cmocka_unit_test(test_failed_authentication_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
