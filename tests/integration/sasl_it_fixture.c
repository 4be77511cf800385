/* The SASL tests' broker, credentials and librdkafka clients; see
 * sasl_it_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"
#include "sasl_it_fixture.h"

const EVP_MD *sasl_it_md(int mech)
{
    return mech == SHA256 ? EVP_sha256() : EVP_sha512();
}

int sasl_it_key_len(int mech)
{
    return mech == SHA256 ? 32 : 64;
}

void sasl_it_start_with(struct sasl_it *t, const char *reauth_ms, const char *const *extra)
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

void sasl_it_start(struct sasl_it *t, const char *reauth_ms)
{
    sasl_it_start_with(t, reauth_ms, NULL);
}

void sasl_it_stop(struct sasl_it *t)
{
    broker_stop(&t->broker);
    broker_mark_passed(&t->broker);
    broker_cleanup(&t->broker);
    unlink(t->audit_path);
}

int sasl_it_alter_credentials(struct sasl_it *t, const struct sasl_it_upsert *ups, int n_ups,
                              const char *const *del_users, const int *del_mechs, int n_del, char users[][64],
                              int16_t *errors, int max)
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
        int klen = sasl_it_key_len(ups[i].mech == SHA512 ? SHA512 : SHA256);
        assert_int_equal(PKCS5_PBKDF2_HMAC(ups[i].password, (int)strlen(ups[i].password), salt, sizeof salt,
                                           ups[i].iterations, sasl_it_md(ups[i].mech), klen, salted),
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

void sasl_it_create_user(struct sasl_it *t, const char *user, int mech, const char *password)
{
    struct sasl_it_upsert u = {user, mech, 4096, password};
    char users[1][64];
    int16_t errors[1];
    assert_int_equal(sasl_it_alter_credentials(t, &u, 1, NULL, NULL, 0, users, errors, 1), 1);
    assert_string_equal(users[0], user);
    assert_int_equal(errors[0], 0);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct sasl_it_auth_errors *e = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        e->count++;
        snprintf(e->text, sizeof e->text, "%s", reason);
    }
}

rd_kafka_t *sasl_it_producer(struct sasl_it *t, const char *mech, const char *user, const char *password,
                             struct sasl_it_auth_errors *errors)
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

void sasl_it_produce_and_consume(struct sasl_it *t, const char *mech, const char *user, const char *password,
                                 const char *topic)
{
    struct sasl_it_auth_errors errors = {0};
    rd_kafka_t *rk = sasl_it_producer(t, mech, user, password, &errors);
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

void sasl_it_expect_auth_failure(struct sasl_it *t, const char *mech, const char *user, const char *password)
{
    struct sasl_it_auth_errors errors = {0};
    rd_kafka_t *rk = sasl_it_producer(t, mech, user, password, &errors);
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

/* The first authentication event of principal (any when NULL) with that
 * outcome and reason_part in its error; *count, when given, gets how many
 * there are. */
static json_t *scan_auth_events(const char *path, const char *principal, bool success, const char *reason_part,
                                const char *mech, int *count)
{
    if (count)
        *count = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[8192];
    json_t *found = NULL;
    while ((count || !found) && fgets(line, sizeof line, f)) {
        json_t *ev = json_loads(line, 0, NULL);
        if (!ev)
            continue;
        const char *type = json_string_value(json_object_get(ev, "type"));
        const char *who = json_string_value(json_object_get(ev, "principal"));
        json_t *ok = json_object_get(ev, "success");
        const char *err = json_string_value(json_object_get(ev, "error"));
        const char *m = json_string_value(json_object_get(ev, "mechanism"));
        bool match = type && strcmp(type, "authentication") == 0 && who &&
                     (!principal || strcmp(who, principal) == 0) && json_is_true(ok) == success &&
                     (!reason_part || (err && strstr(err, reason_part))) && (!mech || (m && strcmp(m, mech) == 0));
        if (match && count)
            (*count)++;
        if (match && !found)
            found = ev;
        else
            json_decref(ev);
    }
    fclose(f);
    return found;
}

static json_t *find_auth_event(const char *path, const char *principal, bool success, const char *reason_part)
{
    return scan_auth_events(path, principal, success, reason_part, NULL, NULL);
}

int sasl_it_count_audited(const char *audit_path, const char *principal, bool success, const char *reason_part,
                          const char *mech)
{
    int count = 0;
    json_decref(scan_auth_events(audit_path, principal, success, reason_part, mech, &count));
    return count;
}

void sasl_it_expect_audited(struct sasl_it *t, const char *principal, bool success, const char *reason_part,
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
