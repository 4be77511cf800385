/* Every API the broker serves, walked as one tenant (tenant_fixture.h: ALL
 * on "team-a." only). ApiVersions on the PLAINTEXT listener says which
 * APIs are served; each one is either probed or listed in no_name_apis
 * below with the reason it carries no tenant-owned name, and the test fails
 * on an API that is in neither, so a new API cannot be served unchecked.
 *
 * A probe is one request built with the generated codecs, sent twice: once
 * naming another tenant's topic, group or transactional id, once naming one
 * of the same length that never existed (the tenant's own names fill the
 * request's other fields). The two answers must be byte-identical once the
 * correlation id and throttle time are masked and the other tenant's name
 * is read as the never-existing one; the tenant's own name must get a
 * different answer (so the request is well formed and reached the
 * authorized path), unless the API needs a cluster permission the tenant
 * lacks. A listing probe (Metadata of every topic, every committed offset
 * of the tenant's group, ListGroups, ListTransactions, every ACL,
 * DescribeLogDirs of every topic) names nothing: its answer must not hold
 * another tenant's name. A probe by the other tenant's topic id (Metadata,
 * Fetch, DeleteTopics) must not name its topic either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/api_table.h"
#include "raw_session.h"
#include "tenant_fixture.h"
#include "tenant_probes.h"

/* Never-existing names, as long as the other tenant's so answers that echo
 * the name keep their layout. */
#define NEVER_TOPIC "team-b.absent"
#define NEVER_GROUP "team-b.ghost"
#define NEVER_TXN "team-b.zz"
/* The tenants' topic ids, read before the authorizer was loaded. */
static struct tenant_topic_ids topic_ids;

/* The served APIs that carry no topic, group or transactional id, and why. */
static const struct {
    int16_t api_key;
    const char *why;
} no_name_apis[] = {
    {17, "SaslHandshake: a mechanism name"},
    {18, "ApiVersions: the client software's name and version"},
    {36, "SaslAuthenticate: the caller's own credentials"},
    {48, "DescribeClientQuotas: user and client-id entities, not tenant-owned names"},
    {49, "AlterClientQuotas: user and client-id entities, not tenant-owned names"},
    {50, "DescribeUserScramCredentials: user names"},
    {51, "AlterUserScramCredentials: user names"},
    {60, "DescribeCluster: brokers and the cluster id"},
};

static const char *kind_name(enum name_kind kind)
{
    return kind == KIND_TOPIC      ? "topic"
           : kind == KIND_GROUP    ? "group"
           : kind == KIND_TXN      ? "transactional id"
           : kind == KIND_TOPIC_ID ? "topic id"
                                   : "listing";
}

/* The answer body (past the response header) to one built request. */
struct body {
    uint8_t *frame;
    const uint8_t *data;
    size_t len;
};

static void roundtrip(struct raw_session *s, const struct tenant_probe *p, const struct names *n, struct body *out)
{
    struct kafka_writer kw;
    assert_int_equal(kafka_writer_init(&kw, 256), 0);
    assert_int_equal(p->build(&kw, p->version, n), 0);
    assert_false(kw.failed);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, p->api_key, p->version, kafka_request_header_version(p->api_key, p->version) == 2,
                       ++s->correlation, "tenant-walk");
    raw_put_bytes(&w, kw.buf, kw.len);
    kafka_writer_free(&kw);
    struct raw_reader r;
    out->frame = raw_session_roundtrip(s, &w, &r, kafka_response_header_version(p->api_key, p->version) == 1);
    out->data = r.data + r.pos;
    out->len = r.len - r.pos;
    /* Masks the throttle time: the only field that may differ by load. */
    size_t at = p->throttle_at >= 0 ? (size_t)p->throttle_at : out->len - 4;
    if (p->throttle_at != THROTTLE_NONE && out->len >= at + 4)
        memset(out->frame + (out->data - out->frame) + at, 0, 4);
}

/* Reads every occurrence of the n bytes `from` in the body as `to`. */
static void rename_in(struct body *b, const void *from, const void *to, size_t n)
{
    uint8_t *data = b->frame + (b->data - b->frame);
    for (size_t i = 0; i + n <= b->len; i++)
        if (memcmp(data + i, from, n) == 0)
            memcpy(data + i, to, n);
}

static void hex(char *out, size_t cap, const uint8_t *data, size_t len, size_t from)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = from; i < len && i < from + 24 && used + 4 < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%02x ", data[i]);
}

/* A listing, or a request by the other tenant's topic id: its answer must
 * not hold another tenant's name. */
static void run_listing_probe(struct raw_session *s, const struct tenant_probe *p, const struct kafka_api_desc *api,
                              struct names own)
{
    /* By id, Kafka's answers tell an unauthorized id from an unknown
     * one (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID), as cairn's
     * do: a tenant can only hold another's id if it was given it. The
     * name behind the id must still not show. */
    struct body b;
    if (p->kind == KIND_TOPIC_ID) {
        own.topic = NULL;
        memcpy(own.topic_id.bytes, topic_ids.own, 16);
        if (p->flags & PROBE_OWN_LISTED) { /* the tenant's own id: its name */
            roundtrip(s, p, &own, &b);
            bool named = tenant_bytes_hold(b.data, b.len, TENANT_OWN_TOPIC);
            free(b.frame);
            if (!named)
                fail_msg("%s v%d does not name the tenant's own topic by id", api->name, p->version);
        }
        memcpy(own.topic_id.bytes, topic_ids.other, 16);
    }
    roundtrip(s, p, &own, &b);
    const char *others[] = {TENANT_OTHER_TOPIC, TENANT_OTHER_GROUP, TENANT_OTHER_TXN};
    for (size_t i = 0; i < 3; i++)
        if (tenant_bytes_hold(b.data, b.len, others[i]))
            fail_msg("%s v%d lists another tenant's name %s", api->name, p->version, others[i]);
    const char *listed = p->listed == KIND_GROUP ? TENANT_OWN_GROUP
                         : p->listed == KIND_TXN ? TENANT_OWN_TXN
                                                 : TENANT_OWN_TOPIC;
    if (p->kind == KIND_LISTING && (p->flags & PROBE_OWN_LISTED) && !tenant_bytes_hold(b.data, b.len, listed))
        fail_msg("%s v%d does not list the tenant's own name: the probe proves nothing", api->name, p->version);
    free(b.frame);
}

static void run_probe(struct raw_session *s, const struct tenant_probe *p)
{
    const struct kafka_api_desc *api = kafka_api_lookup(p->api_key);
    struct names own = {TENANT_OWN_TOPIC, TENANT_OWN_GROUP, TENANT_OWN_TXN, {{0}}};
    if (p->kind == KIND_LISTING || p->kind == KIND_TOPIC_ID) {
        run_listing_probe(s, p, api, own);
        return;
    }
    struct names other = own, never = own;
    const char *other_name = NULL, *never_name = NULL, *own_name = NULL;
    if (p->kind == KIND_TOPIC) {
        other_name = other.topic = TENANT_OTHER_TOPIC;
        never_name = never.topic = NEVER_TOPIC;
        own_name = own.topic;
    } else if (p->kind == KIND_GROUP) {
        other_name = other.group = TENANT_OTHER_GROUP;
        never_name = never.group = NEVER_GROUP;
        own_name = own.group;
    } else {
        other_name = other.txn = TENANT_OTHER_TXN;
        never_name = never.txn = NEVER_TXN;
        own_name = own.txn;
    }
    size_t name_len = strlen(other_name);
    assert_int_equal(strlen(never_name), name_len);
    assert_int_equal(strlen(own_name), name_len);
    struct body a, b;
    roundtrip(s, p, &other, &a);
    roundtrip(s, p, &never, &b);
    rename_in(&a, other_name, never_name, name_len);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
        size_t at = 0;
        while (at < a.len && at < b.len && a.data[at] == b.data[at])
            at++;
        char ha[128], hb[128];
        hex(ha, sizeof ha, a.data, a.len, at);
        hex(hb, sizeof hb, b.data, b.len, at);
        fail_msg("%s v%d leaks another tenant's %s: answers differ at byte %zu of %zu/%zu: other [%s], never [%s]",
                 api->name, p->version, kind_name(p->kind), at, a.len, b.len, ha, hb);
    }
    free(a.frame);
    /* The tenant's own name (as long again) must get another answer, or
     * the request never reached the authorized path and proves nothing. */
    struct body c;
    roundtrip(s, p, &own, &c);
    rename_in(&c, own_name, never_name, name_len);
    bool same = c.len == b.len && memcmp(c.data, b.data, b.len) == 0;
    free(c.frame);
    free(b.frame);
    if (same && !(p->flags & PROBE_CLUSTER_GATED))
        fail_msg("%s v%d answers the tenant's own %s as it answers a name that never existed", api->name, p->version,
                 kind_name(p->kind));
}

static bool probed(int16_t api_key)
{
    for (size_t i = 0; i < tenant_probe_count; i++)
        if (tenant_probes[i].api_key == api_key)
            return true;
    return false;
}

static bool nameless(int16_t api_key)
{
    for (size_t i = 0; i < sizeof no_name_apis / sizeof no_name_apis[0]; i++)
        if (no_name_apis[i].api_key == api_key)
            return true;
    return false;
}

static void test_every_api_hides_other_tenants(void **state)
{
    (void)state;
    struct test_broker b = {0};
    tenant_fixture_start(&b, &topic_ids);
    struct raw_session s = {.fd = raw_connect(b.port, 10000)};
    assert_true(s.fd >= 0);
    struct raw_api_versions served;
    assert_int_equal(raw_api_versions(s.fd, 3, ++s.correlation, &served), 0);
    assert_int_equal(served.error_code, 0);
    assert_true(served.count > 0);
    for (int i = 0; i < served.count; i++) {
        int16_t key = served.ranges[i].api_key;
        const struct kafka_api_desc *api = kafka_api_lookup(key);
        if (!probed(key) && !nameless(key))
            fail_msg("ApiVersions lists %s (key %d), which neither has a tenant probe nor is in no_name_apis",
                     api ? api->name : "an unknown API", key);
    }
    int ran = 0;
    for (size_t i = 0; i < tenant_probe_count; i++) {
        const struct raw_api_range *range = raw_api_versions_find(&served, tenant_probes[i].api_key);
        if (!range)
            continue; /* not served on this listener */
        if (tenant_probes[i].version < range->min_version || tenant_probes[i].version > range->max_version)
            fail_msg("probe of API %d uses v%d, outside the served v%d-v%d", tenant_probes[i].api_key,
                     tenant_probes[i].version, range->min_version, range->max_version);
        run_probe(&s, &tenant_probes[i]);
        ran++;
    }
    /* Every probe's API is served today: a probe that stops running is a
     * change to look at. */
    assert_int_equal(ran, (int)(tenant_probe_count));
    close(s.fd);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_api_hides_other_tenants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
