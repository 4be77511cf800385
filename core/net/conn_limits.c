/* Connection limits (max.connections, max.connections.per.ip and its
 * overrides): the accept thread counts a connection in before handing it to
 * a loop; whichever loop closes it counts it out. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net_internal.h"
#include "util/clock.h"
#include "util/logger.h"

/* At most one refusal line per this many ms; the rest are counted. */
#define NET_REFUSAL_LOG_INTERVAL_MS 1000

void net_ip_from_sockaddr(const struct sockaddr_storage *ss, struct net_ip *out)
{
    memset(out, 0, sizeof(*out));
    if (ss->ss_family == AF_INET) {
        /* As an IPv4-mapped address, so a dual-stack listener counts the
         * same peer under the same key. */
        out->addr[10] = 0xff;
        out->addr[11] = 0xff;
        memcpy(&out->addr[12], &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        memcpy(out->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

static int limits_add_override(struct net_conn_limits *l, const struct net_ip *ip, int count)
{
    for (size_t i = 0; i < l->override_count; i++) {
        if (memcmp(&l->overrides[i].ip, ip, sizeof(*ip)) == 0) {
            l->overrides[i].count = count;
            return 0;
        }
    }
    struct net_ip_count *grown = realloc(l->overrides, (l->override_count + 1) * sizeof(*grown));
    if (!grown)
        return -1;
    l->overrides = grown;
    l->overrides[l->override_count].ip = *ip;
    l->overrides[l->override_count].count = count;
    l->override_count++;
    return 0;
}

/* One "host:count" entry; a host name counts for every address it resolves to. */
static int limits_parse_override(struct net_conn_limits *l, const char *entry, size_t len, char *err, size_t errlen)
{
    char text[300];
    const char *colon = len < sizeof text ? memrchr(entry, ':', len) : NULL;
    if (!colon || colon == entry) {
        snprintf(err, errlen, "max.connections.per.ip.overrides: '%.*s' is not host:count", (int)len, entry);
        return -1;
    }
    memcpy(text, entry, len);
    text[len] = '\0';
    text[colon - entry] = '\0';
    char *end = NULL;
    errno = 0;
    long count = strtol(text + (colon - entry) + 1, &end, 10);
    if (errno != 0 || end == text + (colon - entry) + 1 || *end != '\0' || count < 0 || count > INT_MAX) {
        snprintf(err, errlen, "max.connections.per.ip.overrides: '%s' has no count 0..%d", text, INT_MAX);
        return -1;
    }
    const char *host = text;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:5 */
        text[strlen(text) - 1] = '\0';
        host++;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "max.connections.per.ip.overrides: host '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *ai = res; ai && rc == 0; ai = ai->ai_next) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        struct net_ip ip;
        net_ip_from_sockaddr(&ss, &ip);
        rc = limits_add_override(l, &ip, (int)count);
    }
    freeaddrinfo(res);
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

int net_conn_limits_init(struct net_conn_limits *l, const struct net_config *cfg, char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    if (cfg->max_connections < 0 || cfg->max_connections_per_ip < 0) {
        snprintf(err, errlen, "max.connections and max.connections.per.ip must be >= 0");
        return -1;
    }
    l->max_total = cfg->max_connections;
    l->max_per_ip = cfg->max_connections_per_ip;
    pthread_mutex_init(&l->mutex, NULL);
    l->initialised = true;
    const char *spec = cfg->max_connections_per_ip_overrides;
    while (*spec) {
        size_t n = strcspn(spec, ",");
        const char *start = spec;
        while (n > 0 && (*start == ' ' || *start == '\t')) {
            start++;
            n--;
        }
        while (n > 0 && (start[n - 1] == ' ' || start[n - 1] == '\t'))
            n--;
        if (n > 0 && limits_parse_override(l, start, n, err, errlen) != 0)
            return -1;
        spec += strcspn(spec, ",");
        spec += *spec == ',';
    }
    l->per_ip = l->max_per_ip < INT_MAX || l->override_count > 0;
    return 0;
}

void net_conn_limits_destroy(struct net_conn_limits *l)
{
    if (!l->initialised)
        return;
    pthread_mutex_destroy(&l->mutex);
    free(l->overrides);
    free(l->open);
    l->initialised = false;
}

static int limits_for_ip(const struct net_conn_limits *l, const struct net_ip *ip)
{
    for (size_t i = 0; i < l->override_count; i++)
        if (memcmp(&l->overrides[i].ip, ip, sizeof(*ip)) == 0)
            return l->overrides[i].count;
    return l->max_per_ip;
}

/* The per-address count of ip, or NULL. Linear: the table holds one entry
 * per address with open connections, and is only kept when a per-address
 * limit is set. Under l->mutex. */
static struct net_ip_count *limits_find_open(struct net_conn_limits *l, const struct net_ip *ip)
{
    for (size_t i = 0; i < l->open_count; i++)
        if (memcmp(&l->open[i].ip, ip, sizeof(*ip)) == 0)
            return &l->open[i];
    return NULL;
}

const char *net_conn_limits_admit(struct net_conn_limits *l, const struct net_ip *ip, int *limit)
{
    bool counted;
    return net_conn_limits_admit_counted(l, ip, limit, &counted);
}

const char *net_conn_limits_admit_counted(struct net_conn_limits *l, const struct net_ip *ip, int *limit, bool *counted)
{
    *counted = false;
    const char *refused = NULL;
    pthread_mutex_lock(&l->mutex);
    struct net_ip_count *entry = l->per_ip ? limits_find_open(l, ip) : NULL;
    int ip_limit = l->per_ip ? limits_for_ip(l, ip) : INT_MAX;
    if (l->total >= l->max_total) {
        refused = "max.connections";
        *limit = l->max_total;
    } else if ((entry ? entry->count : 0) >= ip_limit) {
        refused = "max.connections.per.ip";
        *limit = ip_limit;
    } else if (l->per_ip && !entry) {
        if (l->open_count == l->open_cap) {
            size_t cap = l->open_cap ? l->open_cap * 2 : 16;
            struct net_ip_count *grown = realloc(l->open, cap * sizeof(*grown));
            if (grown) {
                l->open = grown;
                l->open_cap = cap;
            }
        }
        if (l->open_count < l->open_cap) {
            entry = &l->open[l->open_count++];
            entry->ip = *ip;
            entry->count = 0;
        } else {
            refused = "memory for connection counts";
            *limit = 0;
        }
    }
    if (!refused) {
        l->total++;
        if (entry)
            entry->count++;
        *counted = entry != NULL;
    }
    pthread_mutex_unlock(&l->mutex);
    return refused;
}

void net_conn_limits_release(struct net_conn_limits *l, const struct net_ip *ip)
{
    net_conn_limits_release_counted(l, ip, l->per_ip);
}

void net_conn_limits_release_counted(struct net_conn_limits *l, const struct net_ip *ip, bool counted)
{
    pthread_mutex_lock(&l->mutex);
    l->total--;
    struct net_ip_count *entry = counted ? limits_find_open(l, ip) : NULL;
    if (entry && --entry->count == 0)
        *entry = l->open[--l->open_count];
    pthread_mutex_unlock(&l->mutex);
}

void net_server_set_connection_limits(struct net_server *server, int max_connections, int max_connections_per_ip)
{
    struct net_conn_limits *l = &server->limits;
    if (!l->initialised || max_connections < 0 || max_connections_per_ip < 0)
        return;
    pthread_mutex_lock(&l->mutex);
    l->max_total = max_connections;
    l->max_per_ip = max_connections_per_ip;
    /* Per-address counts start now: connections already open from an
     * address are not counted against a per-address limit set later. */
    if (max_connections_per_ip < INT_MAX)
        l->per_ip = true;
    pthread_mutex_unlock(&l->mutex);
}

void net_conn_limits_log_refusal(struct net_conn_limits *l, int fd, const char *which, int limit)
{
    int64_t now = clock_mono_ms();
    if (l->last_refusal_log_ms != 0 && now - l->last_refusal_log_ms < NET_REFUSAL_LOG_INTERVAL_MS) {
        l->refusals_unlogged++;
        return;
    }
    char peer[64];
    net_format_peer(fd, peer, sizeof peer);
    logger_warn(NET_LOG, "closed a new connection from %s: %s (%d) reached (%llu more refused since the last line)",
                peer, which, limit, (unsigned long long)l->refusals_unlogged);
    l->last_refusal_log_ms = now;
    l->refusals_unlogged = 0;
}

void net_accepted_drop(struct net_server *server, const struct net_accepted *a)
{
    net_conn_limits_release_counted(&server->limits, &a->ip, a->ip_counted);
    close(a->fd);
}

void net_rate_limit_init(struct net_rate_limit *r, int rate, int64_t now_ms)
{
    r->rate = rate;
    r->tokens = rate;
    r->last_ms = now_ms;
}

int64_t net_rate_limit_wait_ms(struct net_rate_limit *r, int64_t now_ms)
{
    if (r->rate == INT32_MAX)
        return 0;
    if (r->rate <= 0)
        return 1000; /* a rate of 0 admits nothing: look again now and then */
    if (now_ms > r->last_ms) {
        r->tokens += (double)(now_ms - r->last_ms) * r->rate / 1000.0;
        if (r->tokens > r->rate)
            r->tokens = r->rate; /* the burst is one second's worth */
        r->last_ms = now_ms;
    }
    if (r->tokens >= 1.0)
        return 0;
    int64_t wait = (int64_t)((1.0 - r->tokens) * 1000.0 / r->rate) + 1;
    return wait > 0 ? wait : 1;
}

void net_rate_limit_take(struct net_rate_limit *r)
{
    if (r->rate != INT32_MAX)
        r->tokens -= 1.0;
}
