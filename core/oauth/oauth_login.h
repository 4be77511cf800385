/* The OAuth 2 login of the broker's OAUTHBEARER links, Kafka's
 * broker-side client (KIP-768): the client-credentials grant at
 * sasl.oauthbearer.token.endpoint.url with the link's clientId and
 * clientSecret (HTTP Basic, as Kafka sends them) and optional scope. The
 * access token is kept and fetched again before it expires, on the
 * schedule of Kafka's sasl.login.refresh.* keys; a failed request is
 * retried after sasl.login.retry.backoff.ms, doubling up to
 * sasl.login.retry.backoff.max.ms, and logged with the link's name.
 *
 * Threads: oauth_login_start and oauth_login_stop on the main thread; the
 * login runs one thread of its own for the HTTP requests (libcurl);
 * oauth_login_token may be called from any thread and never waits on the
 * network (the links' loop threads call it). */
#ifndef CAIRN_OAUTH_LOGIN_H
#define CAIRN_OAUTH_LOGIN_H

#include <stddef.h>
#include <stdint.h>

/* Read during oauth_login_start only (copied). */
struct oauth_login_settings {
    const char *link; /* names the link in log lines: "controller", "inter-broker" */
    const char *token_endpoint_url;
    const char *client_id, *client_secret;
    const char *scope;            /* "" or NULL: none sent */
    double refresh_window_factor; /* sasl.login.refresh.window.factor */
    double refresh_window_jitter; /* sasl.login.refresh.window.jitter */
    int64_t refresh_min_period_ms, refresh_buffer_ms;
    int64_t connect_timeout_ms, read_timeout_ms;
    int64_t retry_backoff_ms, retry_backoff_max_ms;
};

struct oauth_login;

/* Starts the login and waits for its first request's outcome (5 s at
 * most), so links opened next find a token when the endpoint answers; a
 * refusal is logged and retried, not an error here. A login with the same
 * settings already running is shared (counted: one stop per start). NULL
 * with err only when the login cannot run at all. */
struct oauth_login *oauth_login_start(const struct oauth_login_settings *s, char *err, size_t errlen);

/* A copy of the current access token in *token (caller frees), 0; or -1
 * with err saying why there is none (the endpoint's last answer). */
int oauth_login_token(struct oauth_login *l, char **token, char *err, size_t errlen);

/* Drops one start; the last one stops the thread and wipes the secret
 * and the token. NULL is a no-op. */
void oauth_login_stop(struct oauth_login *l);

/* When to fetch again a token valid from start_ms to expiry_ms (Unix
 * ms), random01 in [0,1): Kafka's rule, start + lifetime * (factor +
 * jitter * random01), moved earlier to keep refresh_buffer_ms before the
 * expiry but no earlier than refresh_min_period_ms after start; both
 * bounds are ignored when they add up to more than the lifetime. */
int64_t oauth_login_refresh_at(const struct oauth_login_settings *s, int64_t start_ms, int64_t expiry_ms,
                               double random01);

/* The exp claim of a JWT access token, in Unix ms: 0, or -1 when the
 * token is not a JWT with a numeric exp. */
int oauth_token_expiry_ms(const char *token, int64_t *expiry_ms);

#endif
