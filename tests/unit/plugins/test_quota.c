/* The quota plugin, loaded with dlopen into a test host: Kafka's entity
 * precedence, usage buckets, rate and throttle math on an injected clock,
 * and rejection of malformed entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_host.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Owned by the test's main thread (recorder threads only call record). */
static struct test_host quota_host;

static int quota_group_setup(void **state)
{
    (void)state;
    test_host_load(&quota_host, "quota");
    return 0;
}

static int quota_group_teardown(void **state)
{
    (void)state;
    test_host_unload(&quota_host);
    return 0;
}

/* Starts the plugin with Kafka's sampled-rate throttle, whose math most
 * tests here check, or with the given throttle.algorithm. */
static void quota_start_with(const char *entries, const char *algorithm)
{
    test_host_fini(&quota_host);
    test_host_clear_config(&quota_host);
    test_host_set(&quota_host, "entries", entries);
    if (algorithm)
        test_host_set(&quota_host, "throttle.algorithm", algorithm);
    char err[512];
    if (test_host_init(&quota_host, err, sizeof(err)) != CAIRN_OK)
        fail_msg("quota init with '%s' failed: %s", entries, err);
}

static void quota_start(const char *entries)
{
    quota_start_with(entries, "sampled-rate");
}

static int32_t quota_rec(const char *user, const char *client_id, int32_t kind, double value, int64_t now_ms)
{
    struct cairn_principal principal = {sizeof(principal), "User", user};
    struct cairn_request_info request = {
        .struct_size = sizeof(request),
        .principal = user ? &principal : NULL,
        .client_host = "127.0.0.1",
        .client_id = client_id,
        .api_key = 0,
    };
    return quota_host.descriptor->quota->record(quota_host.instance, &request, kind, value, now_ms);
}

/* Kafka's throttle for a first burst: rate = bytes / 10 s (11 windows of
 * 1 s, measured over at least 10), throttle = (rate - limit) / limit * 10 s. */
static int32_t expected_first_burst_throttle(double bytes, double limit)
{
    double rate = bytes / 10.0;
    if (rate <= limit)
        return 0;
    double throttle = (rate - limit) / limit * 10000.0;
    return (int32_t)llround(throttle > 11000 ? 11000 : throttle);
}

/* Level k of Kafka's precedence gets limit 1000 + 50k, so the throttle of
 * one 20000-byte burst tells which level matched. */
static const char *const precedence_entities[9] = {
    NULL,
    "user=alice,client-id=app1",
    "user=alice,client-id=<default>",
    "user=alice",
    "user=<default>,client-id=app1",
    "user=<default>,client-id=<default>",
    "user=<default>",
    "client-id=app1",
    "client-id=<default>",
};

static void precedence_entries(unsigned levels_mask, char *out, size_t outlen)
{
    out[0] = '\0';
    for (int level = 8; level >= 1; level--) {
        if (!(levels_mask & (1u << level)))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s:producer_byte_rate=%d", used ? ";" : "", precedence_entities[level],
                 1000 + 50 * level);
    }
}

static void expect_level(unsigned levels_mask, const char *user, const char *client, int level)
{
    char entries[1024];
    precedence_entries(levels_mask, entries, sizeof(entries));
    quota_start(entries);
    int32_t got = quota_rec(user, client, CAIRN_QUOTA_PRODUCE, 20000, 0);
    int32_t want = level == 0 ? 0 : expected_first_burst_throttle(20000, 1000 + 50 * level);
    if (got != want)
        fail_msg("user %s client %s with entries %s: throttle %d, expected %d (level %d)", user ? user : "(none)",
                 client, entries, got, want, level);
}

#define LEVELS(...) levels_mask_of((int[]){__VA_ARGS__, 0})
static unsigned levels_mask_of(const int *levels)
{
    unsigned mask = 0;
    for (; *levels; levels++)
        mask |= 1u << *levels;
    return mask;
}

static void test_precedence(void **state)
{
    (void)state;
    unsigned all = LEVELS(1, 2, 3, 4, 5, 6, 7, 8);
    expect_level(all, "alice", "app1", 1);
    expect_level(all, "alice", "other", 2);
    expect_level(all, "bob", "app1", 4);
    expect_level(all, "bob", "other", 5);
    expect_level(LEVELS(3, 4, 5, 6, 7, 8), "alice", "app1", 3);
    expect_level(LEVELS(3, 4, 5, 6, 7, 8), "alice", "other", 3);
    expect_level(LEVELS(6, 7, 8), "alice", "app1", 6);
    expect_level(LEVELS(7, 8), "alice", "app1", 7);
    expect_level(LEVELS(7, 8), "alice", "other", 8);
    expect_level(LEVELS(3, 7), "alice", "app1", 3);
    expect_level(LEVELS(6, 7), "bob", "app1", 6);
    expect_level(LEVELS(2, 4), "alice", "app1", 2);
    expect_level(LEVELS(1), "alice", "other", 0);
    expect_level(LEVELS(1), "bob", "app1", 0);
    expect_level(LEVELS(3), "bob", "app1", 0);
    expect_level(LEVELS(7), "alice", "app2", 0);
    /* No principal is User:ANONYMOUS, which <default> covers. */
    expect_level(LEVELS(6), NULL, "app1", 6);
    expect_level(LEVELS(1, 3, 6), "ANONYMOUS", "app1", 6);
    /* An empty client id matches only <default>. */
    expect_level(LEVELS(7, 8), "alice", "", 8);
}

/* Each quota type is matched on its own: a more specific entity without
 * a producer limit does not hide a less specific one that has it. */
static void test_precedence_per_type(void **state)
{
    (void)state;
    quota_start("user=alice:consumer_byte_rate=1000;client-id=app1:producer_byte_rate=1350");
    assert_int_equal(quota_rec("alice", "app1", CAIRN_QUOTA_PRODUCE, 20000, 0),
                     expected_first_burst_throttle(20000, 1350));
    assert_int_equal(quota_rec("alice", "app1", CAIRN_QUOTA_FETCH, 20000, 0),
                     expected_first_burst_throttle(20000, 1000));
    assert_int_equal(quota_rec("alice", "app1", CAIRN_QUOTA_REQUEST, 1e12, 0), 0);
    assert_int_equal(quota_rec("alice", "app1", 99, 1e12, 0), 0); /* unknown kind */
}

/* Usage is kept per matched entity as Kafka does: a named entity is one
 * shared bucket, a <default> part gives each name its own. */
static void test_usage_buckets(void **state)
{
    (void)state;
    quota_start("user=alice:producer_byte_rate=1000;client-id=<default>:producer_byte_rate=1000;"
                "user=<default>,client-id=shared:producer_byte_rate=1000");
    /* alice's clients share alice's bucket: 6000 + 6000 over 10 s. */
    assert_int_equal(quota_rec("alice", "a1", CAIRN_QUOTA_PRODUCE, 6000, 0), 0);
    assert_int_equal(quota_rec("alice", "a2", CAIRN_QUOTA_PRODUCE, 6000, 0),
                     expected_first_burst_throttle(12000, 1000));
    /* Other users fall to client-id=<default>: one bucket per client id. */
    assert_int_equal(quota_rec("bob", "b1", CAIRN_QUOTA_PRODUCE, 6000, 0), 0);
    assert_int_equal(quota_rec("carol", "b2", CAIRN_QUOTA_PRODUCE, 6000, 0), 0);
    assert_int_equal(quota_rec("dave", "b1", CAIRN_QUOTA_PRODUCE, 6000, 0), expected_first_burst_throttle(12000, 1000));
    /* user=<default>,client-id=shared: per user, so bob and carol differ. */
    assert_int_equal(quota_rec("bob", "shared", CAIRN_QUOTA_PRODUCE, 6000, 0), 0);
    assert_int_equal(quota_rec("carol", "shared", CAIRN_QUOTA_PRODUCE, 6000, 0), 0);
    assert_int_equal(quota_rec("bob", "shared", CAIRN_QUOTA_PRODUCE, 6000, 0),
                     expected_first_burst_throttle(12000, 1000));
    /* Produce and fetch usage are separate. */
    quota_start("user=alice:producer_byte_rate=1000,consumer_byte_rate=1000");
    assert_int_equal(quota_rec("alice", "a1", CAIRN_QUOTA_PRODUCE, 9000, 0), 0);
    assert_int_equal(quota_rec("alice", "a1", CAIRN_QUOTA_FETCH, 9000, 0), 0);
}

static void test_rate_math_over_windows(void **state)
{
    (void)state;
    quota_start("client-id=c:producer_byte_rate=2000");
    /* 2000 bytes at the start of each of 11 one-second windows: 22000
     * bytes over 10 s is 2200/s, 10% over, so 10% of the 10 s window. */
    for (int64_t t = 0; t < 10000; t += 1000)
        assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 2000, t), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 2000, 10000), 1000);
    /* The 12th window replaces the oldest: still 22000 over 1000..11000. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 2000, 11000), 1000);
    /* Half-way through a window the measured span grows and the rate
     * falls: 22000 / 10.5 s. */
    int32_t throttle = quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 11500);
    assert_int_equal(throttle, (int32_t)llround((22000 / 10.5 - 2000) / 2000 * 10500));
    /* After a whole idle window set the old usage has expired. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 25000), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 20000, 25000), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 10000, 25000), 5000);

    /* One burst then silence. The span is padded to at least 10 windows,
     * so the throttle is 15000/1000 s minus the span... */
    quota_start("client-id=c:producer_byte_rate=1000");
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 15000, 0), 5000);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 5500), 4500);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 10999), 4001);
    /* ...until the burst's sample is 11 windows old and expires. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 11000), 0);
}

static void test_throttle_bounded_by_window(void **state)
{
    (void)state;
    quota_start("client-id=c:producer_byte_rate=1000");
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1e9, 0), 11000);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1e15, 1), 11000);

    test_host_fini(&quota_host);
    test_host_clear_config(&quota_host);
    test_host_set(&quota_host, "entries", "client-id=c:producer_byte_rate=1000");
    test_host_set(&quota_host, "throttle.algorithm", "sampled-rate");
    test_host_set(&quota_host, "quota.window.num", "3");
    test_host_set(&quota_host, "quota.window.size.seconds", "2");
    char err[256];
    assert_int_equal(test_host_init(&quota_host, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1e9, 0), 6000);
    /* Two windows of 2 s: 5000 bytes is 1250/s, 25% over: 1 s. */
    assert_int_equal(quota_rec("u", "d", CAIRN_QUOTA_PRODUCE, 5000, 0), 0);
    assert_int_equal(quota_rec("u2", "c2", CAIRN_QUOTA_PRODUCE, 5000, 0), 0);
    test_host_fini(&quota_host);
    test_host_set(&quota_host, "entries", "client-id=<default>:producer_byte_rate=1000");
    assert_int_equal(test_host_init(&quota_host, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(quota_rec("u", "d", CAIRN_QUOTA_PRODUCE, 5000, 0), 1000);
    /* Bad input from the host never throttles. */
    assert_int_equal(quota_rec("u", "e", CAIRN_QUOTA_PRODUCE, -5, 0), 0);
    assert_int_equal(quota_rec("u", "e", CAIRN_QUOTA_PRODUCE, NAN, 0), 0);
    assert_int_equal(quota_rec("u", "e", CAIRN_QUOTA_PRODUCE, INFINITY, 0), 0);
    assert_int_equal(quota_host.descriptor->quota->record(quota_host.instance, NULL, CAIRN_QUOTA_PRODUCE, 1e9, 0), 0);
}

/* The default throttle: a bucket of one window's worth of quota, credited
 * at the quota. What passes in any window stays near the quota, where the
 * sampled rate lets ten windows' worth through at once (above). */
static void test_token_bucket(void **state)
{
    (void)state;
    quota_start_with("client-id=c:producer_byte_rate=1000", NULL);
    /* One second's worth passes; the next byte is a debt of 1 ms. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1000, 0), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1, 0), 1);
    /* 15000 bytes at once (the sampled rate would say 5 s): 15 s of debt,
     * capped at the longest throttle, 11 windows. */
    quota_start_with("client-id=c:producer_byte_rate=1000", "token-bucket");
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 15000, 0), 11000);
    /* The debt is held to what the longest throttle repays (11000 bytes),
     * and 3 s repay 3000 of it. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 3000), 8000);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 0, 11000), 0);
    /* Idle time refills the bucket to one window, no more. */
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1000, 60000), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 500, 60000), 500);

    /* A client offering 10 times its quota in 100 ms steps, as long as it
     * is not throttled: no second passes more than the quota plus one
     * window's worth, and over 30 s it gets the quota. */
    quota_start_with("client-id=c:producer_byte_rate=1000", "token-bucket");
    double per_second[30] = {0};
    int64_t unmuted_at = 0;
    for (int64_t t = 0; t < 30000; t += 100) {
        if (t < unmuted_at)
            continue;
        int32_t throttle = quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 1000, t);
        per_second[t / 1000] += 1000;
        unmuted_at = t + throttle;
    }
    double total = 0;
    for (int s = 0; s < 30; s++) {
        assert_true(per_second[s] <= 2000);
        total += per_second[s];
    }
    assert_true(total >= 29000 && total <= 31000);

    /* Windows of 2 s: the bucket holds 2 s of quota. */
    test_host_fini(&quota_host);
    test_host_clear_config(&quota_host);
    test_host_set(&quota_host, "entries", "client-id=c:producer_byte_rate=1000");
    test_host_set(&quota_host, "quota.window.size.seconds", "2");
    char err[256];
    assert_int_equal(test_host_init(&quota_host, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 2000, 0), 0);
    assert_int_equal(quota_rec("u", "c", CAIRN_QUOTA_PRODUCE, 250, 0), 250);

    /* An unknown algorithm stops start-up with a message naming the key. */
    test_host_fini(&quota_host);
    test_host_set(&quota_host, "throttle.algorithm", "leaky");
    assert_int_not_equal(test_host_init(&quota_host, err, sizeof(err)), CAIRN_OK);
    assert_non_null(strstr(err, "throttle.algorithm"));
    assert_non_null(strstr(err, "leaky"));
}

static void test_request_percentage(void **state)
{
    (void)state;
    quota_start("user=alice:request_percentage=50");
    /* 1 s of io-thread time in 10 s is 10% of a thread. */
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_REQUEST, 1e9, 0), 0);
    /* 6 s in 10 s is 60%: 20% over 50%, so 2 s. */
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_REQUEST, 5e9, 0), 2000);
    /* Byte kinds are not limited by a request quota. */
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_PRODUCE, 1e12, 0), 0);
    int64_t throttled = test_host_metric(&quota_host, "throttled_responses");
    assert_int_equal(throttled, 1);
}

/* Concurrent recorders into one bucket lose no usage. */
struct recorder {
    int id;
    int records;
};

static void *recorder_main(void *arg)
{
    struct recorder *r = arg;
    char client[32];
    for (int i = 0; i < r->records; i++) {
        /* Also create many per-client buckets concurrently. */
        snprintf(client, sizeof(client), "c%d-%d", r->id, i % 64);
        quota_rec("alice", client, CAIRN_QUOTA_PRODUCE, 1, 0);
        quota_rec("bob", client, CAIRN_QUOTA_FETCH, 1, 0);
    }
    return NULL;
}

static void test_concurrent_record(void **state)
{
    (void)state;
    quota_start("user=alice:producer_byte_rate=30000;client-id=<default>:consumer_byte_rate=1000000");
    enum { THREADS = 4, RECORDS = 100000 };
    struct recorder recorders[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        recorders[i] = (struct recorder){.id = i, .records = RECORDS};
        assert_int_equal(pthread_create(&threads[i], NULL, recorder_main, &recorders[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    /* 400000 bytes in 10 s = 40000/s against 30000/s. */
    assert_int_equal(quota_rec("alice", "any", CAIRN_QUOTA_PRODUCE, 0, 0),
                     expected_first_burst_throttle(THREADS * RECORDS, 30000));
}

static void expect_rejected(const char *entries, const char *entry_number, const char *reason)
{
    test_host_fini(&quota_host);
    test_host_clear_config(&quota_host);
    test_host_set(&quota_host, "entries", entries);
    char err[512];
    if (test_host_init(&quota_host, err, sizeof(err)) == CAIRN_OK)
        fail_msg("entries '%s' were accepted", entries);
    if (!strstr(err, entry_number) || !strstr(err, reason))
        fail_msg("entries '%s': error '%s' should name %s and say '%s'", entries, err, entry_number, reason);
}

/* Quotas set at run time (the ABI 1.2 quota service) laid over the
 * configured entries: a run-time value wins for its entity and type, the
 * configured ones stay for the rest, ip entities and unknown keys are
 * skipped, and an empty set brings back the configured entries alone. */
static void test_runtime_quotas_merge(void **state)
{
    (void)state;
    memset(&quota_host.quota_listener, 0, sizeof(quota_host.quota_listener));
    quota_start("user=alice:producer_byte_rate=1000,consumer_byte_rate=2000");
    struct cairn_quota_listener *l = &quota_host.quota_listener;
    assert_int_equal(l->struct_size, sizeof(*l));
    const struct cairn_client_quota set[] = {
        {sizeof(set[0]), CAIRN_QUOTA_PART_NAMED, "alice", CAIRN_QUOTA_PART_ABSENT, NULL, CAIRN_QUOTA_PART_ABSENT, NULL,
         "producer_byte_rate", 5000},
        {sizeof(set[0]), CAIRN_QUOTA_PART_ABSENT, NULL, CAIRN_QUOTA_PART_NAMED, "app1", CAIRN_QUOTA_PART_ABSENT, NULL,
         "producer_byte_rate", 4000},
        {sizeof(set[0]), CAIRN_QUOTA_PART_ABSENT, NULL, CAIRN_QUOTA_PART_ABSENT, NULL, CAIRN_QUOTA_PART_DEFAULT, NULL,
         "connection_creation_rate", 1},
        {sizeof(set[0]), CAIRN_QUOTA_PART_DEFAULT, NULL, CAIRN_QUOTA_PART_ABSENT, NULL, CAIRN_QUOTA_PART_ABSENT, NULL,
         "controller_mutation_rate", 1},
    };
    const struct cairn_client_quota *ptrs[] = {&set[0], &set[1], &set[2], &set[3]};
    l->on_quotas(l->arg, ptrs, 4);
    /* 100000 bytes in the first window: 10000 B/s over the 10 s measured. */
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_PRODUCE, 100000, 0),
                     expected_first_burst_throttle(100000, 5000));
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_FETCH, 100000, 0),
                     expected_first_burst_throttle(100000, 2000));
    assert_int_equal(quota_rec("bob", "app1", CAIRN_QUOTA_PRODUCE, 50000, 0),
                     expected_first_burst_throttle(50000, 4000));
    assert_int_equal(quota_rec("carol", "other", CAIRN_QUOTA_PRODUCE, 100000, 0), 0);

    l->on_quotas(l->arg, NULL, 0);
    assert_int_equal(quota_rec("dave", "app1", CAIRN_QUOTA_PRODUCE, 100000, 0), 0);
    /* alice's bucket keeps its usage: 100000 more bytes at the configured 1000 B/s. */
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_PRODUCE, 100000, 0),
                     expected_first_burst_throttle(200000, 1000));
}

static void test_malformed_entries_rejected(void **state)
{
    (void)state;
    expect_rejected("user=alice", "entry 1 'user=alice'", "missing ':'");
    expect_rejected("user=alice:producer_byte_rate=1;client-id=x:producer_byte_rate=fast",
                    "entry 2 'client-id=x:producer_byte_rate=fast'", "not a positive integer");
    expect_rejected("user=alice:producer_byte_rate=-5", "entry 1", "not a positive integer");
    expect_rejected("user=alice:producer_byte_rate=0", "entry 1", "not a positive integer");
    expect_rejected("user=alice:producer_byte_rate=1.5", "entry 1", "not a positive integer");
    expect_rejected("user=alice:request_percentage=abc", "entry 1", "not a positive number");
    expect_rejected("group=g:producer_byte_rate=1", "entry 1", "unknown entity type 'group'");
    expect_rejected("user=alice:bytes_per_second=1", "entry 1", "unknown quota 'bytes_per_second'");
    expect_rejected("user=alice,user=bob:producer_byte_rate=1", "entry 1", "user given twice");
    expect_rejected("user=a:producer_byte_rate=1,producer_byte_rate=2", "entry 1", "producer_byte_rate given twice");
    expect_rejected("user=a,client-id=b:producer_byte_rate=1; client-id=b , user=a:consumer_byte_rate=1", "entry 2",
                    "same entity as entry 1");
    expect_rejected(":producer_byte_rate=1", "entry 1", "no entity");
    expect_rejected("user=alice:", "entry 1", "no quota");
    expect_rejected("user=:producer_byte_rate=1", "entry 1", "not user=<name> or client-id=<name>");
    expect_rejected("user=alice:producer_byte_rate", "entry 1", "not <quota>=<number>");

    /* Blank entries, spaces and colons inside names are fine. */
    quota_start(" ; user = svc:api , client-id = <default> : request_percentage = 12.5 ;;");
    assert_int_equal(quota_rec("svc:api", "any", CAIRN_QUOTA_REQUEST, 2.5e9, 0),
                     (int32_t)llround((25.0 - 12.5) / 12.5 * 10000));
    quota_start("");
    assert_int_equal(quota_rec("alice", "x", CAIRN_QUOTA_PRODUCE, 1e12, 0), 0);

    /* Window settings are range-checked. */
    test_host_fini(&quota_host);
    test_host_set(&quota_host, "quota.window.num", "1");
    char err[256];
    assert_int_not_equal(test_host_init(&quota_host, err, sizeof(err)), CAIRN_OK);
    assert_non_null(strstr(err, "quota.window.num"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_precedence_per_type),
        cmocka_unit_test(test_usage_buckets),
        cmocka_unit_test(test_rate_math_over_windows),
        cmocka_unit_test(test_throttle_bounded_by_window),
        cmocka_unit_test(test_token_bucket),
        cmocka_unit_test(test_request_percentage),
        cmocka_unit_test(test_concurrent_record),
        cmocka_unit_test(test_malformed_entries_rejected),
        cmocka_unit_test(test_runtime_quotas_merge),
    };
    return cmocka_run_group_tests(tests, quota_group_setup, quota_group_teardown);
}
