/* The links' OAuth login: Kafka's refresh schedule, the exp of a JWT
 * access token, and a login whose token endpoint does not answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "oauth/oauth_login.h"

static struct oauth_login_settings defaults(void)
{
    struct oauth_login_settings s = {.link = "controller",
                                     .token_endpoint_url = "http://127.0.0.1:1/token",
                                     .client_id = "broker",
                                     .client_secret = "secret",
                                     .refresh_window_factor = 0.8,
                                     .refresh_window_jitter = 0.05,
                                     .refresh_min_period_ms = 60000,
                                     .refresh_buffer_ms = 300000,
                                     .connect_timeout_ms = 2000,
                                     .read_timeout_ms = 2000,
                                     .retry_backoff_ms = 50,
                                     .retry_backoff_max_ms = 200};
    return s;
}

static void test_refresh_schedule(void **state)
{
    (void)state;
    struct oauth_login_settings s = defaults();
    /* An hour's token: 80% (+ up to 5% jitter), well clear of the buffer. */
    assert_int_equal(oauth_login_refresh_at(&s, 0, 3600000, 0.0), 2880000);
    assert_int_equal(oauth_login_refresh_at(&s, 0, 3600000, 0.5), 2970000);
    /* Ten minutes: 80% would leave 2 minutes, less than the 5-minute buffer. */
    assert_int_equal(oauth_login_refresh_at(&s, 1000, 1000 + 600000, 0.0), 1000 + 300000);
    /* Six minutes: the buffer would leave 1 minute, the min period wins. */
    s.refresh_buffer_ms = 330000;
    assert_int_equal(oauth_login_refresh_at(&s, 0, 400000, 0.0), 70000);
    /* Both together exceed the lifetime: ignored, the window alone counts. */
    s = defaults();
    assert_int_equal(oauth_login_refresh_at(&s, 0, 20000, 0.0), 16000);
    s.refresh_min_period_ms = 1000;
    s.refresh_buffer_ms = 3000;
    s.refresh_window_jitter = 0.25;
    assert_int_equal(oauth_login_refresh_at(&s, 0, 20000, 0.99), 17000);
}

static void test_token_expiry(void **state)
{
    (void)state;
    int64_t exp = 0;
    assert_int_equal(oauth_token_expiry_ms("eyJhbGciOiJFUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDAsInN1YiI6ImIifQ.c2ln", &exp),
                     0);
    assert_int_equal(exp, 1700000000000LL);
    assert_int_equal(oauth_token_expiry_ms("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJiIn0.c2ln", &exp), -1);
    assert_int_equal(oauth_token_expiry_ms("eyJhbGciOiJFUzI1NiJ9.eyJleHAiOiJzb29uIn0.c2ln", &exp), -1);
    assert_int_equal(oauth_token_expiry_ms("opaque-token", &exp), -1);
    assert_int_equal(oauth_token_expiry_ms("a.!!!.b", &exp), -1);
    assert_int_equal(oauth_token_expiry_ms("a..b", &exp), -1);
}

/* Nothing listens on port 1: no token, and the reason names the endpoint. */
static void test_endpoint_down(void **state)
{
    (void)state;
    struct oauth_login_settings s = defaults();
    char err[512];
    struct oauth_login *l = oauth_login_start(&s, err, sizeof err);
    assert_non_null(l);
    char *token = (char *)"unset";
    assert_int_equal(oauth_login_token(l, &token, err, sizeof err), -1);
    assert_null(token);
    assert_non_null(strstr(err, "no access token from http://127.0.0.1:1/token: "));
    assert_null(strstr(err, "secret"));
    /* The same settings share the login; another client gets its own. */
    struct oauth_login *same = oauth_login_start(&s, err, sizeof err);
    assert_ptr_equal(same, l);
    s.client_id = "other";
    struct oauth_login *other = oauth_login_start(&s, err, sizeof err);
    assert_non_null(other);
    assert_ptr_not_equal(other, l);
    oauth_login_stop(same);
    assert_int_equal(oauth_login_token(l, &token, err, sizeof err), -1);
    oauth_login_stop(other);
    oauth_login_stop(l);
    oauth_login_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refresh_schedule),
        cmocka_unit_test(test_token_expiry),
        cmocka_unit_test(test_endpoint_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
