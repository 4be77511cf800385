/* Connection and routing: a blocking call helper over the outbound client,
 * bootstrap through Metadata, and the group coordinator lookup. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tls/tls.h"

/* Bootstrap entries get ids below any real node id. */
#define CLI_BOOTSTRAP_ID_BASE (-1000)

/* One request in flight: the main thread waits on it, the client's thread
 * completes it. Lives on the main thread's stack for the call. */
struct cli_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    enum net_client_status status;
    char error[320];
    int16_t auth_error; /* NET_CLIENT_AUTH_FAILED: the broker's code */
    int16_t version;
    struct net_client_kept *kept;
    /* the encode side */
    const struct kafka_api_desc *desc;
    cli_build_fn build;
    void *build_ctx;
};

static void on_done(struct net_client_result *r, void *ctx)
{
    struct cli_wait *w = ctx;
    struct net_client_kept *kept = NULL;
    if (r->status == NET_CLIENT_OK && r->response)
        kept = net_client_result_keep(r);
    pthread_mutex_lock(&w->mu);
    w->status = r->status;
    if (r->status == NET_CLIENT_OK && r->response && !kept) {
        w->status = NET_CLIENT_BAD_RESPONSE;
        snprintf(w->error, sizeof(w->error), "out of memory keeping the response");
    } else {
        snprintf(w->error, sizeof(w->error), "%s", r->error);
    }
    w->auth_error = r->auth_error;
    w->version = r->api_version;
    w->kept = kept;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Runs on the client's thread once the version is known: the request is
 * built for exactly that version, since the codecs refuse fields a version
 * does not carry. */
static int encode_request(struct kafka_writer *wr, int16_t version, void *ctx)
{
    struct cli_wait *w = ctx;
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    int rc = -1;
    void *req = kafka_arena_alloc(&arena, w->desc->request_size_of);
    if (req) {
        w->desc->request_init(req);
        if (w->build(req, version, &arena, w->build_ctx) == 0)
            rc = w->desc->request_encode(req, wr, version);
    }
    kafka_arena_free(&arena);
    return rc;
}

static int call_quiet(struct cli_conn *c, int32_t node, int16_t api_key, int16_t pinned, cli_build_fn build, void *ctx,
                      int64_t timeout_ms, struct cli_reply *out, char *err, size_t errlen)
{
    struct cli_wait w = {.desc = kafka_api_lookup(api_key), .build = build, .build_ctx = ctx};
    memset(out, 0, sizeof(*out));
    if (!w.desc) {
        snprintf(err, errlen, "unknown API key %d", api_key);
        return -1;
    }
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    struct net_client_request req = {
        .node_id = node,
        .api_key = api_key,
        .pinned_version = pinned,
        .encode = encode_request,
        .encode_ctx = &w,
        .timeout_ms = timeout_ms,
        .done = on_done,
        .ctx = &w,
        .no_response = c->no_response,
        /* A caller that handles network failures itself (net_err set) or
         * has other brokers to ask does not wait out a dead broker. */
        .fail_fast = c->net_err != NULL || c->fail_fast,
    };
    int rc = -1;
    c->last_status = NET_CLIENT_CANCELLED; /* not sent */
    if (net_client_send(c->client, &req, err, errlen) == 0) {
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        c->last_status = w.status;
        if (w.status == NET_CLIENT_OK) {
            out->kept = w.kept;
            out->response = w.kept ? net_client_kept_response(w.kept) : NULL;
            out->version = w.version;
            rc = 0;
        } else if (w.status == NET_CLIENT_AUTH_FAILED) {
            /* Not a network failure: another broker would refuse it too. */
            c->auth_error = w.auth_error;
            snprintf(err, errlen, "%s", w.error);
            rc = -2;
        } else {
            snprintf(err, errlen, "%s%s%s", net_client_status_name(w.status), w.error[0] ? ": " : "", w.error);
        }
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return rc;
}

/* The exit code of a call_quiet failure (rc -1 or -2), its reason printed
 * (or stored in c->net_err). */
static int call_failed(struct cli_conn *c, int32_t node, int16_t api_key, int rc, const char *err)
{
    if (rc == -2)
        return cli_sasl_failed(c, c->auth_error, err);
    if (c->net_err) {
        snprintf(c->net_err, c->net_err_len, "%s", err);
        return CLI_EXIT_UNREACHABLE;
    }
    const struct kafka_api_desc *d = kafka_api_lookup(api_key);
    return cli_fail(CLI_EXIT_UNREACHABLE,
                    "%s request to broker %d failed: %s; check the broker is up or raise --timeout", d ? d->name : "?",
                    (int)node, err);
}

int cli_call_raw(struct cli_conn *c, int32_t node, int16_t api_key, int16_t pinned, cli_build_fn build, void *ctx,
                 struct cli_reply *out)
{
    char err[400];
    int rc = call_quiet(c, node, api_key, pinned, build, ctx, c->timeout_ms, out, err, sizeof(err));
    return rc == 0 ? 0 : call_failed(c, node, api_key, rc, err);
}

int cli_call(struct cli_conn *c, int32_t node, int16_t api_key, cli_build_fn build, void *ctx, struct cli_reply *out)
{
    return cli_call_raw(c, node, api_key, -1, build, ctx, out);
}

static struct cli_known_broker *known_find(struct cli_conn *c, int32_t id)
{
    for (int i = 0; i < c->nknown; i++)
        if (c->known[i].id == id)
            return &c->known[i];
    return NULL;
}

void cli_note_brokers(struct cli_conn *c, const struct metadata_response *m)
{
    for (int32_t i = 0; i < m->brokers_count; i++) {
        const struct metadata_response_metadata_response_broker *b = &m->brokers[i];
        if (net_client_add_node(c->client, b->node_id, cli_str(b->host), b->port) < 0)
            continue;
        if (!known_find(c, b->node_id) && c->nknown < CLI_KNOWN_BROKERS)
            c->known[c->nknown++] = (struct cli_known_broker){b->node_id, 0};
    }
}

/* The order cli_call_any tries: the broker that last answered unless it
 * has failed since, the known ones by last failure (never first), then
 * the bootstrap entries. Returns the count. */
static int any_candidates(const struct cli_conn *c, int32_t *ids, int cap)
{
    int n = 0;
    struct cli_known_broker order[CLI_KNOWN_BROKERS];
    int k = c->nknown;
    memcpy(order, c->known, sizeof(order[0]) * (size_t)k);
    for (int i = 1; i < k; i++) /* insertion sort: a handful of brokers */
        for (int j = i; j > 0 && order[j].failed_ms < order[j - 1].failed_ms; j--) {
            struct cli_known_broker t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    bool last_ok = true;
    for (int i = 0; i < k; i++)
        if (order[i].id == c->any_node)
            last_ok = order[i].failed_ms == 0;
    if (last_ok && n < cap)
        ids[n++] = c->any_node;
    for (int i = 0; i < k && n < cap; i++)
        if (order[i].id != c->any_node || !last_ok)
            ids[n++] = order[i].id;
    for (int i = 0; i < c->nbootstrap && n < cap; i++) {
        int32_t id = CLI_BOOTSTRAP_ID_BASE - i;
        if (id != c->any_node || !last_ok)
            ids[n++] = id;
    }
    return n;
}

int cli_call_any(struct cli_conn *c, int16_t api_key, cli_build_fn build, void *ctx, struct cli_reply *out)
{
    int32_t ids[CLI_KNOWN_BROKERS + 16];
    int n = c->nknown ? any_candidates(c, ids, (int)(sizeof(ids) / sizeof(ids[0]))) : 0;
    if (n <= 1)
        return cli_call(c, c->any_node, api_key, build, ctx, out);
    /* A dead broker on loopback refuses at once; one that hangs gets a
     * share of --timeout, so the whole round stays within it. */
    int64_t share = c->timeout_ms / n;
    if (share < 2000)
        share = c->timeout_ms < 2000 ? c->timeout_ms : 2000;
    char err[400] = "";
    for (int i = 0; i < n; i++) {
        c->fail_fast = i + 1 < n; /* the last one gets its share to answer */
        int rc = call_quiet(c, ids[i], api_key, -1, build, ctx, share, out, err, sizeof(err));
        c->fail_fast = false;
        struct cli_known_broker *kb = known_find(c, ids[i]);
        if (rc == 0) {
            if (kb)
                kb->failed_ms = 0;
            c->any_node = ids[i];
            return 0;
        }
        if (rc == -2)
            return cli_sasl_failed(c, c->auth_error, err);
        if (kb)
            kb->failed_ms = cli_now_ms();
    }
    if (c->net_err) {
        snprintf(c->net_err, c->net_err_len, "%s", err);
        return CLI_EXIT_UNREACHABLE;
    }
    const struct kafka_api_desc *d = kafka_api_lookup(api_key);
    return cli_fail(CLI_EXIT_UNREACHABLE,
                    "%s request failed on every known broker (last: %s); check the brokers are "
                    "up or raise --timeout",
                    d ? d->name : "?", err);
}

void cli_reply_free(struct cli_reply *r)
{
    if (r->kept)
        net_client_kept_free(r->kept);
    memset(r, 0, sizeof(*r));
}

struct metadata_ctx {
    const char *const *topics;
    int n;
};

static int build_metadata(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct metadata_request *m = req;
    struct metadata_ctx *mc = ctx;
    (void)version;
    m->allow_auto_topic_creation = version <= 3;
    if (mc->n < 0) {
        m->topics_count = version >= 1 ? -1 : 0;
        return 0;
    }
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)(mc->n ? mc->n : 1));
    if (!m->topics)
        return -1;
    for (int i = 0; i < mc->n; i++) {
        metadata_request_metadata_request_topic_init(&m->topics[i]);
        m->topics[i].name = kafka_str_from_cstr(mc->topics[i]);
    }
    m->topics_count = mc->n;
    return 0;
}

int cli_metadata(struct cli_conn *c, const char *const *topics, int n, struct cli_reply *out)
{
    struct metadata_ctx mc = {topics, n};
    return cli_call_any(c, KAFKA_API_KEY_METADATA, build_metadata, &mc, out);
}

int cli_split_host_port(const char *hp, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp)
        return -1;
    long long p;
    if (cli_parse_int(colon + 1, 1, 65535, &p) < 0)
        return -1;
    const char *h = hp;
    size_t len = (size_t)(colon - hp);
    if (h[0] == '[' && len >= 2 && h[len - 1] == ']') {
        h++;
        len -= 2;
    }
    if (len == 0 || len >= hostlen)
        return -1;
    memcpy(host, h, len);
    host[len] = '\0';
    *port = (int)p;
    return 0;
}

static int register_brokers(struct cli_conn *c, const struct metadata_response *m)
{
    for (int32_t i = 0; i < m->brokers_count; i++) {
        const struct metadata_response_metadata_response_broker *b = &m->brokers[i];
        if (net_client_add_node(c->client, b->node_id, cli_str(b->host), b->port) < 0)
            return cli_fail(CLI_EXIT_UNREACHABLE, "cannot register broker %d", (int)b->node_id);
    }
    cli_note_brokers(c, m);
    /* A controller the answer does not list (a broker naming itself while
     * its own image still has it fenced) has no address: ask the broker
     * that answered instead, which forwards what it must. */
    bool listed = false;
    for (int32_t i = 0; i < m->brokers_count; i++)
        listed = listed || m->brokers[i].node_id == m->controller_id;
    c->controller_id = listed ? m->controller_id : c->any_node;
    return 0;
}

/* A whole small file (a PEM certificate or key), NUL-terminated; NULL
 * with the reason printed. */
static char *slurp(const char *key, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_fail(CLI_EXIT_USAGE, "%s: cannot read %s: %s", key, path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* librdkafka's TLS settings as the broker's ssl.* ones: the CA file is the
 * truststore, the certificate and key files an inline keystore. */
static int tls_open(struct cli_conn *c, const struct cli_settings *s)
{
    static const char system_cas[] = "/etc/ssl/certs/ca-certificates.crt";
    const char *ca = s->ssl_ca[0] ? s->ssl_ca : (access(system_cas, R_OK) == 0 ? system_cas : NULL);
    if (!ca)
        return cli_fail(CLI_EXIT_USAGE, "security.protocol=ssl needs ssl.ca.location (no system CA file found)");
    if (!s->ssl_cert[0] != !s->ssl_key[0])
        return cli_fail(CLI_EXIT_USAGE, "ssl.certificate.location and ssl.key.location go together");
    struct tls_settings ts;
    memset(&ts, 0, sizeof(ts));
    char *cert = NULL, *key = NULL;
    int rc = CLI_EXIT_USAGE;
    if (s->ssl_cert[0] &&
        (!(cert = slurp("ssl.certificate.location", s->ssl_cert)) || !(key = slurp("ssl.key.location", s->ssl_key))))
        goto out;
    if (tls_settings_set(&ts, TLS_TRUSTSTORE_LOCATION, ca) != 0 ||
        (cert && tls_settings_set(&ts, TLS_KEYSTORE_CERTIFICATE_CHAIN, cert) != 0) ||
        (key && tls_settings_set(&ts, TLS_KEYSTORE_KEY, key) != 0) ||
        (s->ssl_key_password[0] && tls_settings_set(&ts, TLS_KEY_PASSWORD, s->ssl_key_password) != 0) ||
        tls_settings_set(&ts, TLS_ENDPOINT_IDENTIFICATION, s->ssl_no_host_check ? "" : "https") != 0) {
        cli_fail(CLI_EXIT_USAGE, "out of memory");
        goto out;
    }
    char err[1024];
    if (tls_client_create("cairn", &ts, &c->tls, err, sizeof(err)) != 0) {
        cli_fail(CLI_EXIT_USAGE, "%s", err);
        goto out;
    }
    rc = 0;
out:
    tls_settings_clear(&ts);
    free(cert);
    free(key);
    return rc;
}

/* Starts the outbound client with the settings' id and timeouts. */
static int client_open(struct cli_conn *c, const struct cli_settings *s)
{
    memset(c, 0, sizeof(*c));
    c->timeout_ms = s->timeout_ms;
    if (s->sasl) {
        if (!s->sasl_mechanism[0] || !s->sasl_username[0])
            return cli_fail(CLI_EXIT_USAGE,
                            "security.protocol=%s needs sasl.mechanism (%s), sasl.username and "
                            "sasl.password",
                            s->ssl ? "sasl_ssl" : "sasl_plaintext", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512");
        snprintf(c->sasl_mechanism, sizeof(c->sasl_mechanism), "%s", s->sasl_mechanism);
        snprintf(c->sasl_username, sizeof(c->sasl_username), "%s", s->sasl_username);
    }
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    if (s->sasl) {
        snprintf(cfg.sasl_mechanism, sizeof(cfg.sasl_mechanism), "%s", s->sasl_mechanism);
        snprintf(cfg.sasl_username, sizeof(cfg.sasl_username), "%s", s->sasl_username);
        snprintf(cfg.sasl_password, sizeof(cfg.sasl_password), "%s", s->sasl_password);
    }
    snprintf(cfg.client_id, sizeof(cfg.client_id), "%s", s->client_id[0] ? s->client_id : "cairn-cli");
    snprintf(cfg.software_name, sizeof(cfg.software_name), "cairn-cli");
    snprintf(cfg.software_version, sizeof(cfg.software_version), "0.1.0");
    cfg.request_timeout_ms = s->timeout_ms;
    cfg.connection_setup_timeout_ms = s->timeout_ms;
    if (s->ssl) {
        int rc = tls_open(c, s);
        if (rc)
            return rc;
        cfg.transport_ops = &tls_client_transport_ops;
        cfg.transport_ctx = c->tls;
    }
    char err[400];
    if (net_client_create(&cfg, &c->client, err, sizeof(err)) < 0) {
        tls_client_free(c->tls);
        c->tls = NULL;
        return cli_fail(CLI_EXIT_UNREACHABLE, "cannot start the client: %s", err);
    }
    return 0;
}

int cli_connect_direct(struct cli_conn *c, const struct cli_settings *s, const char *host_port)
{
    int rc = client_open(c, s);
    if (rc)
        return rc;
    char host[256];
    int port;
    if (cli_split_host_port(host_port, host, sizeof(host), &port) < 0) {
        cli_close(c);
        return cli_fail(CLI_EXIT_USAGE, "bad address '%s': want host:port", host_port);
    }
    c->any_node = c->controller_id = CLI_BOOTSTRAP_ID_BASE;
    if (net_client_add_node(c->client, c->any_node, host, port) < 0) {
        cli_close(c);
        return cli_fail(CLI_EXIT_UNREACHABLE, "cannot register %s", host_port);
    }
    return 0;
}

int cli_connect(struct cli_conn *c, const struct cli_settings *s)
{
    int rc0 = client_open(c, s);
    if (rc0)
        return rc0;

    char list[sizeof(s->brokers)];
    snprintf(list, sizeof(list), "%s", s->brokers);
    int count = 0;
    for (char *p = list; *p; p++)
        count += *p == ',';
    count++;
    /* Each bootstrap broker gets a share of the timeout, so the whole
     * bootstrap stays within --timeout. */
    int64_t share = s->timeout_ms / count;
    if (share < 1)
        share = 1;
    char last_err[600] = "no brokers given";
    int idx = 0;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save), idx++) {
        while (*tok == ' ')
            tok++;
        char host[256];
        int port;
        if (cli_split_host_port(tok, host, sizeof(host), &port) < 0) {
            cli_close(c);
            return cli_fail(CLI_EXIT_USAGE, "bad broker address '%s': want host:port", tok);
        }
        int32_t id = CLI_BOOTSTRAP_ID_BASE - idx;
        if (net_client_add_node(c->client, id, host, port) < 0)
            continue;
        struct metadata_ctx mc = {NULL, 0};
        struct cli_reply r;
        char e[256] = "";
        /* The connection authenticates first (SASL); a refusal stops, a
         * network failure moves on to the next broker. */
        int got = call_quiet(c, id, KAFKA_API_KEY_METADATA, -1, build_metadata, &mc, share, &r, e, sizeof(e));
        if (got == -2) {
            int code = cli_sasl_failed(c, c->auth_error, e);
            cli_close(c);
            return code;
        }
        if (got < 0) {
            snprintf(last_err, sizeof(last_err), "%s: %s", tok, e);
            continue;
        }
        c->meta_kept = r.kept;
        c->meta = r.response;
        c->meta_version = r.version;
        c->any_node = id;
        c->nbootstrap = idx + 1;
        int rc = register_brokers(c, c->meta);
        if (rc)
            cli_close(c);
        return rc;
    }
    if (idx == 0) {
        cli_close(c);
        return cli_fail(CLI_EXIT_USAGE, "no brokers given; use -b host:port, CAIRN_BROKERS or a profile");
    }
    cli_close(c);
    return cli_fail(CLI_EXIT_UNREACHABLE, "no broker reachable (%s); check -b/--brokers, CAIRN_BROKERS or the profile",
                    last_err);
}

/* The controller as Metadata names it now; the kept c->meta (which callers
 * may hold pointers into) is left as it is. */
static int refresh_controller(struct cli_conn *c)
{
    struct metadata_ctx mc = {NULL, 0};
    struct cli_reply r;
    int rc = cli_call_any(c, KAFKA_API_KEY_METADATA, build_metadata, &mc, &r);
    if (rc)
        return rc;
    rc = register_brokers(c, r.response);
    cli_reply_free(&r);
    return rc;
}

bool cli_alter_configs_moved(const void *response)
{
    const struct incremental_alter_configs_response *m = response;
    for (int32_t i = 0; i < m->responses_count; i++)
        if (m->responses[i].error_code == KAFKA_ERR_NOT_CONTROLLER)
            return true;
    return false;
}

int cli_call_controller(struct cli_conn *c, int16_t api_key, cli_build_fn build, void *ctx,
                        cli_controller_moved_fn moved, struct cli_reply *out)
{
    int64_t deadline = cli_now_ms() + c->timeout_ms;
    int64_t backoff_ms = 100;
    for (;;) {
        char err[400] = "";
        int32_t node = c->controller_id;
        int64_t left = deadline - cli_now_ms();
        /* A controller that died refuses at once: ask Metadata again
         * rather than wait out --timeout on it. */
        c->fail_fast = true;
        int rc = call_quiet(c, node, api_key, -1, build, ctx, left > 1 ? left : 1, out, err, sizeof(err));
        c->fail_fast = false;
        bool again = rc == 0 ? moved(out->response) : c->last_status == NET_CLIENT_NETWORK_ERROR;
        if (!again)
            return rc == 0 ? 0 : call_failed(c, node, api_key, rc, err);
        bool last = cli_now_ms() + backoff_ms > deadline;
        if (last)
            return rc == 0 ? 0 : call_failed(c, node, api_key, rc, err);
        if (rc == 0)
            cli_reply_free(out);
        struct timespec pause = {.tv_sec = backoff_ms / 1000, .tv_nsec = (backoff_ms % 1000) * 1000000};
        nanosleep(&pause, NULL);
        backoff_ms = backoff_ms * 2 > 1000 ? 1000 : backoff_ms * 2;
        rc = refresh_controller(c);
        if (rc)
            return rc;
    }
}

void cli_close(struct cli_conn *c)
{
    if (c->meta_kept)
        net_client_kept_free(c->meta_kept);
    c->meta_kept = NULL;
    c->meta = NULL;
    if (c->client)
        net_client_destroy(c->client);
    c->client = NULL;
    tls_client_free(c->tls); /* no connection uses it any more */
    c->tls = NULL;
}

static int build_find_coordinator(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct find_coordinator_request *m = req;
    if (version >= 4) {
        m->coordinator_keys = kafka_arena_alloc(a, sizeof(*m->coordinator_keys));
        if (!m->coordinator_keys)
            return -1;
        m->coordinator_keys[0] = kafka_str_from_cstr(ctx);
        m->coordinator_keys_count = 1;
    } else {
        m->key = kafka_str_from_cstr(ctx);
    }
    m->key_type = 0; /* group */
    return 0;
}

int cli_coordinator(struct cli_conn *c, const char *group, int32_t *node)
{
    struct cli_reply r;
    int rc = cli_call_any(c, KAFKA_API_KEY_FIND_COORDINATOR, build_find_coordinator, (void *)group, &r);
    if (rc)
        return rc;
    const struct find_coordinator_response *m = r.response;
    int16_t code = m->error_code;
    struct kafka_str msg = m->error_message, host = m->host;
    int32_t id = m->node_id, port = m->port;
    if (r.version >= 4) {
        if (m->coordinators_count < 1) {
            cli_reply_free(&r);
            return cli_fail(CLI_EXIT_KAFKA, "FindCoordinator for group '%s' returned no coordinator", group);
        }
        code = m->coordinators[0].error_code;
        msg = m->coordinators[0].error_message;
        host = m->coordinators[0].host;
        id = m->coordinators[0].node_id;
        port = m->coordinators[0].port;
    }
    bool retriable = code == KAFKA_ERR_COORDINATOR_NOT_AVAILABLE || code == KAFKA_ERR_NOT_COORDINATOR ||
                     code == KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    if (code != KAFKA_ERR_NONE && retriable && c->net_err) {
        /* A broker still loading its groups: the caller waits and asks again. */
        snprintf(c->net_err, c->net_err_len, "%s", kafka_error_name(code));
        rc = CLI_EXIT_UNREACHABLE;
    } else if (code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(code, msg, "finding the group coordinator", "retry shortly, or check the broker log");
    } else if (net_client_add_node(c->client, id, cli_str(host), port) < 0) {
        rc = cli_fail(CLI_EXIT_UNREACHABLE, "cannot register coordinator %d", (int)id);
    } else {
        *node = id;
    }
    cli_reply_free(&r);
    return rc;
}
