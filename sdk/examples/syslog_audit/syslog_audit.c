/* syslog_audit: an audit sink writing one syslog line per event.
 *
 *   plugins=syslog_audit
 *   plugin.syslog_audit.ident=cairn-audit
 *   plugin.syslog_audit.facility=local0
 *   plugin.syslog_audit.events=AUTHORIZATION,ADMIN
 *   plugin.syslog_audit.socket.path=          (empty: syslog(3))
 *
 * With socket.path set, each line goes as an RFC 3164 datagram to that unix
 * socket instead of through syslog(3) (for a private collector, or tests). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cairn/names.h>
#include <cairn/plugin.h>

/* Immutable after init; on_event only reads it and sends on the socket,
 * which is safe from many io threads at once. */
struct syslog_audit {
    int facility;
    unsigned types; /* bit (1 << event type) set for each wanted type */
    int fd;         /* datagram socket when socket.path is set, else -1 */
    struct sockaddr_un addr;
    char ident[64];
};

#define KEY(var, key, type, def, text) static const struct cairn_config_key var = {sizeof var, key, type, def, text}
KEY(key_ident, "ident", CAIRN_CONFIG_STRING, "cairn-audit", "Tag put before each line.");
KEY(key_facility, "facility", CAIRN_CONFIG_STRING, "local0", "user, daemon, auth, authpriv or local0..local7.");
KEY(key_events, "events", CAIRN_CONFIG_LIST, "AUTHENTICATION,AUTHORIZATION,ADMIN", "Event types to log.");
KEY(key_socket, "socket.path", CAIRN_CONFIG_STRING, "",
    "Unix datagram socket to send RFC 3164 lines to; empty: syslog(3).");
static const struct cairn_config_key *const config_keys[] = {&key_ident, &key_facility, &key_events, &key_socket};

static const char *const type_names[] = {[CAIRN_AUDIT_AUTHENTICATION] = "AUTHENTICATION",
                                         [CAIRN_AUDIT_AUTHORIZATION] = "AUTHORIZATION",
                                         [CAIRN_AUDIT_ADMIN] = "ADMIN"};

static int parse_facility(const char *name)
{
    static const struct {
        const char *name;
        int value;
    } table[] = {{"user", LOG_USER},     {"daemon", LOG_DAEMON}, {"auth", LOG_AUTH},     {"authpriv", LOG_AUTHPRIV},
                 {"local0", LOG_LOCAL0}, {"local1", LOG_LOCAL1}, {"local2", LOG_LOCAL2}, {"local3", LOG_LOCAL3},
                 {"local4", LOG_LOCAL4}, {"local5", LOG_LOCAL5}, {"local6", LOG_LOCAL6}, {"local7", LOG_LOCAL7}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].value;
    return -1;
}

static int parse_events(const char *list, unsigned *types, char *err, size_t errlen)
{
    *types = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        size_t t;
        for (t = 1; t < sizeof type_names / sizeof type_names[0]; t++)
            if (strlen(type_names[t]) == n && strncmp(p, type_names[t], n) == 0)
                break;
        if (t == sizeof type_names / sizeof type_names[0]) {
            snprintf(err, errlen, "events: unknown event type '%.*s'", (int)n, p);
            return CAIRN_ERROR;
        }
        *types |= 1u << t;
        p += n + (p[n] == ',');
    }
    return CAIRN_OK;
}

static int syslog_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *ident, *facility, *events, *socket_path;
    if (host->config_string(host->ctx, "ident", &ident, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "facility", &facility, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "events", &events, err, errlen) != CAIRN_OK ||
        host->config_string(host->ctx, "socket.path", &socket_path, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    struct syslog_audit *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, errlen, "out of memory"), CAIRN_ERROR;
    s->fd = -1;
    snprintf(s->ident, sizeof s->ident, "%s", ident);
    if ((s->facility = parse_facility(facility)) < 0) {
        snprintf(err, errlen, "facility: unknown facility '%s'", facility);
    } else if (parse_events(events, &s->types, err, errlen) == CAIRN_OK) {
        if (!socket_path[0]) {
            openlog(s->ident, LOG_PID | LOG_NDELAY, s->facility);
            *instance = s;
            return CAIRN_OK;
        }
        s->addr.sun_family = AF_UNIX;
        if (strlen(socket_path) >= sizeof s->addr.sun_path)
            snprintf(err, errlen, "socket.path is too long");
        else if ((s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
            snprintf(err, errlen, "socket: %s", strerror(errno));
        else {
            memcpy(s->addr.sun_path, socket_path, strlen(socket_path) + 1);
            *instance = s;
            return CAIRN_OK;
        }
    }
    free(s);
    return CAIRN_ERROR;
}

static void syslog_fini(void *instance)
{
    struct syslog_audit *s = instance;
    if (s->fd >= 0)
        close(s->fd);
    else
        closelog();
    free(s);
}

static void syslog_on_event(void *instance, const struct cairn_audit_event *ev)
{
    struct syslog_audit *s = instance;
    if (ev->type < 1 || ev->type > CAIRN_AUDIT_ADMIN || !(s->types & (1u << ev->type)))
        return;
    const struct cairn_request_info *rq = ev->request;
    const struct cairn_principal *who = rq ? rq->principal : NULL;
    char line[1024];
    int n = snprintf(line, sizeof line, "type=%s principal=%s:%s client_id=%s client=%s api_key=%d",
                     type_names[ev->type], who ? who->type : "-", who ? who->name : "-",
                     rq && rq->client_id && rq->client_id[0] ? rq->client_id : "-",
                     rq && rq->client_host ? rq->client_host : "-", rq ? rq->api_key : -1);
    if (n > 0 && (size_t)n < sizeof line) {
        if (ev->type == CAIRN_AUDIT_AUTHENTICATION)
            snprintf(line + n, sizeof line - n, " mechanism=%s success=%s error=%s",
                     ev->mechanism ? ev->mechanism : "-", ev->success ? "true" : "false",
                     ev->error_message ? ev->error_message : "-");
        else if (ev->type == CAIRN_AUDIT_AUTHORIZATION)
            snprintf(line + n, sizeof line - n, " operation=%s resource=%s:%s decision=%s",
                     cairn_operation_name(ev->operation), cairn_resource_type_name(ev->resource_type),
                     ev->resource_name ? ev->resource_name : "-", ev->success ? "ALLOWED" : "DENIED");
        else
            snprintf(line + n, sizeof line - n, " operation=%s resource=%s:%s error_code=%d details=%s",
                     ev->admin_operation ? ev->admin_operation : "-", cairn_resource_type_name(ev->resource_type),
                     ev->resource_name ? ev->resource_name : "-", ev->error_code,
                     ev->details_json ? ev->details_json : "{}");
    }
    int severity = ev->type != CAIRN_AUDIT_ADMIN && !ev->success ? LOG_WARNING : LOG_INFO;
    if (s->fd < 0) {
        syslog(severity, "%s", line);
        return;
    }
    /* RFC 3164: <PRI>Mmm dd hh:mm:ss host tag[pid]: message */
    char datagram[1200], stamp[32], host[64] = "localhost";
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &tm);
    gethostname(host, sizeof host - 1);
    int len = snprintf(datagram, sizeof datagram, "<%d>%s %s %s[%d]: %s", s->facility | severity, stamp, host, s->ident,
                       (int)getpid(), line);
    if (len > (int)sizeof datagram - 1)
        len = sizeof datagram - 1;
    /* MSG_DONTWAIT: a stalled collector loses lines rather than stalling io threads. */
    sendto(s->fd, datagram, (size_t)len, MSG_DONTWAIT, (const struct sockaddr *)&s->addr, sizeof s->addr);
}

static const struct cairn_audit_vtable audit_table = {.struct_size = sizeof audit_table, .on_event = syslog_on_event};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "syslog_audit",
    .version = "1.0.0",
    .description = "Writes one syslog line per audit event.",
    .capabilities = CAIRN_CAP_AUDIT,
    .config_keys = config_keys,
    .config_key_count = sizeof config_keys / sizeof config_keys[0],
    .init = syslog_init,
    .fini = syslog_fini,
    .audit = &audit_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
