/* The connection-limit counts: total and per-address limits, overrides
 * (parsed from max.connections.per.ip.overrides), release, and IPv4 peers
 * seen through a dual-stack socket counted under one key; and the
 * max.connection.creation.rate token bucket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <limits.h>
#include <string.h>

#include "net/net_internal.h"

static struct net_ip ip_of(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(text, ':')) {
        ss.ss_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
    } else {
        ss.ss_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr), 1);
    }
    struct net_ip ip;
    net_ip_from_sockaddr(&ss, &ip);
    return ip;
}

static void init_limits(struct net_conn_limits *l, int total, int per_ip, const char *overrides)
{
    struct net_config cfg;
    net_config_defaults(&cfg);
    cfg.max_connections = total;
    cfg.max_connections_per_ip = per_ip;
    snprintf(cfg.max_connections_per_ip_overrides, sizeof cfg.max_connections_per_ip_overrides, "%s", overrides);
    char err[256] = "";
    if (net_conn_limits_init(l, &cfg, err, sizeof err) != 0)
        fail_msg("init: %s", err);
}

static void test_per_ip_limit_and_release(void **state)
{
    (void)state;
    struct net_conn_limits l;
    init_limits(&l, INT_MAX, 2, "");
    struct net_ip a = ip_of("10.0.0.1"), b = ip_of("10.0.0.2");
    int limit = 0;
    assert_null(net_conn_limits_admit(&l, &a, &limit));
    assert_null(net_conn_limits_admit(&l, &a, &limit));
    assert_string_equal(net_conn_limits_admit(&l, &a, &limit), "max.connections.per.ip");
    assert_int_equal(limit, 2);
    assert_null(net_conn_limits_admit(&l, &b, &limit)); /* another address has its own count */
    net_conn_limits_release(&l, &a);
    assert_null(net_conn_limits_admit(&l, &a, &limit));
    assert_int_equal(l.total, 3);
    net_conn_limits_release(&l, &a);
    net_conn_limits_release(&l, &a);
    net_conn_limits_release(&l, &b);
    assert_int_equal(l.total, 0);
    assert_int_equal(l.open_count, 0); /* addresses without connections are forgotten */
    net_conn_limits_destroy(&l);
}

static void test_total_limit(void **state)
{
    (void)state;
    struct net_conn_limits l;
    init_limits(&l, 2, INT_MAX, "");
    assert_false(l.per_ip);
    struct net_ip a = ip_of("10.0.0.1"), b = ip_of("10.0.0.2");
    int limit = 0;
    assert_null(net_conn_limits_admit(&l, &a, &limit));
    assert_null(net_conn_limits_admit(&l, &b, &limit));
    assert_string_equal(net_conn_limits_admit(&l, &b, &limit), "max.connections");
    assert_int_equal(limit, 2);
    net_conn_limits_release(&l, &a);
    assert_null(net_conn_limits_admit(&l, &b, &limit));
    net_conn_limits_destroy(&l);
}

static void test_overrides(void **state)
{
    (void)state;
    struct net_conn_limits l;
    init_limits(&l, INT_MAX, 1, " 127.0.0.1:3 ,[::1]:0,10.0.0.9:2");
    struct net_ip loop4 = ip_of("127.0.0.1"), loop6 = ip_of("::1"), mapped = ip_of("::ffff:127.0.0.1");
    int limit = 0;
    assert_memory_equal(&loop4, &mapped, sizeof loop4);
    assert_null(net_conn_limits_admit(&l, &loop4, &limit));
    assert_null(net_conn_limits_admit(&l, &mapped, &limit));
    assert_null(net_conn_limits_admit(&l, &loop4, &limit));
    assert_string_equal(net_conn_limits_admit(&l, &mapped, &limit), "max.connections.per.ip");
    assert_int_equal(limit, 3);
    assert_non_null(net_conn_limits_admit(&l, &loop6, &limit)); /* 0: none at all */
    assert_int_equal(limit, 0);
    net_conn_limits_destroy(&l);
}

static void test_malformed_overrides_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"127.0.0.1", "127.0.0.1:", "127.0.0.1:x", ":3", "127.0.0.1:-1", "[::1]:2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct net_config cfg;
        net_config_defaults(&cfg);
        snprintf(cfg.max_connections_per_ip_overrides, sizeof cfg.max_connections_per_ip_overrides, "%s", bad[i]);
        struct net_conn_limits l;
        char err[256] = "";
        if (net_conn_limits_init(&l, &cfg, err, sizeof err) == 0)
            fail_msg("'%s' was accepted", bad[i]);
        assert_non_null(strstr(err, "max.connections.per.ip.overrides"));
        net_conn_limits_destroy(&l);
    }
}

/* max.connection.creation.rate's bucket: a second's worth at once, then
 * one per 1/rate s; no limit never waits; 0 admits nothing. */
static void test_creation_rate_bucket(void **state)
{
    (void)state;
    struct net_rate_limit r;
    net_rate_limit_init(&r, 4, 1000);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(net_rate_limit_wait_ms(&r, 1000), 0);
        net_rate_limit_take(&r);
    }
    int64_t wait = net_rate_limit_wait_ms(&r, 1000);
    assert_true(wait > 240 && wait <= 251); /* a quarter second for the next one */
    assert_true(net_rate_limit_wait_ms(&r, 1100) > 0);
    assert_int_equal(net_rate_limit_wait_ms(&r, 1250), 0);
    net_rate_limit_take(&r);
    assert_true(net_rate_limit_wait_ms(&r, 1250) > 0);
    /* A long pause refills a second's worth, not more. */
    assert_int_equal(net_rate_limit_wait_ms(&r, 100000), 0);
    for (int i = 0; i < 4; i++)
        net_rate_limit_take(&r);
    assert_true(net_rate_limit_wait_ms(&r, 100000) > 0);

    net_rate_limit_init(&r, INT32_MAX, 0);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(net_rate_limit_wait_ms(&r, 0), 0);
        net_rate_limit_take(&r);
    }
    net_rate_limit_init(&r, 0, 0);
    assert_true(net_rate_limit_wait_ms(&r, 5000) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_ip_limit_and_release),
        cmocka_unit_test(test_total_limit),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_malformed_overrides_are_refused),
        cmocka_unit_test(test_creation_rate_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
