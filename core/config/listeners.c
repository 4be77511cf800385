#include "config/listeners.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Copy of one comma-separated entry, trimmed; entries longer than this are refused. */
#define ENTRY_MAX 512

static bool next_entry(const char **cursor, char entry[ENTRY_MAX], bool *too_long)
{
    const char *p = *cursor;
    *too_long = false;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        while (n > 0 && isspace((unsigned char)*s)) {
            s++;
            n--;
        }
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        p = comma ? comma + 1 : p + strlen(p);
        if (n == 0)
            continue;
        if (n >= ENTRY_MAX) {
            *too_long = true;
            n = ENTRY_MAX - 1;
        }
        memcpy(entry, s, n);
        entry[n] = '\0';
        *cursor = p;
        return true;
    }
    *cursor = p;
    return false;
}

static bool parse_port(const char *s, int *port)
{
    if (!*s || strlen(s) > 5)
        return false;
    int v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return false;
        v = v * 10 + (*s - '0');
    }
    if (v > 65535)
        return false;
    *port = v;
    return true;
}

static bool host_char_ok(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* Parse "host:port" or "[v6]:port" into host and port. */
static bool parse_host_port(const char *s, char host[LISTENER_HOST_MAX], int *port)
{
    const char *port_text;
    size_t host_len;
    const char *host_start = s;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return false;
        host_start = s + 1;
        host_len = (size_t)(close - host_start);
        port_text = close + 2;
        if (host_len == 0)
            return false;
        for (size_t i = 0; i < host_len; i++)
            if (!isxdigit((unsigned char)host_start[i]) && host_start[i] != ':' && host_start[i] != '.' &&
                host_start[i] != '%')
                return false;
    } else {
        const char *colon = strrchr(s, ':');
        if (!colon)
            return false;
        host_len = (size_t)(colon - s);
        port_text = colon + 1;
        for (size_t i = 0; i < host_len; i++)
            if (!host_char_ok(s[i]))
                return false;
    }
    if (host_len >= LISTENER_HOST_MAX)
        return false;
    if (!parse_port(port_text, port))
        return false;
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    return true;
}

int config_parse_listeners(const char *value, struct listener_spec *out, int max, char *err, size_t errlen)
{
    char entry[ENTRY_MAX];
    bool too_long;
    int count = 0;
    const char *cursor = value ? value : "";
    while (next_entry(&cursor, entry, &too_long)) {
        const char *sep = strstr(entry, "://");
        struct listener_spec spec;
        size_t name_len = sep ? (size_t)(sep - entry) : 0;
        bool ok = !too_long && sep && name_len > 0 && name_len < LISTENER_NAME_MAX;
        for (size_t i = 0; ok && i < name_len; i++)
            ok = isalnum((unsigned char)entry[i]) || entry[i] == '_' || entry[i] == '-';
        if (ok)
            ok = parse_host_port(sep + 3, spec.host, &spec.port);
        if (!ok) {
            snprintf(err, errlen, "invalid listener '%s': expected NAME://host:port with port in [0, 65535]", entry);
            return -1;
        }
        for (size_t i = 0; i < name_len; i++)
            spec.name[i] = (char)toupper((unsigned char)entry[i]);
        spec.name[name_len] = '\0';
        for (int i = 0; i < count; i++) {
            if (strcmp(out[i].name, spec.name) == 0) {
                snprintf(err, errlen, "invalid listener '%s': listener name %s is used twice", entry, spec.name);
                return -1;
            }
        }
        if (count >= max) {
            snprintf(err, errlen, "too many listeners (at most %d)", max);
            return -1;
        }
        out[count++] = spec;
    }
    return count;
}

int config_security_protocol_id(const char *name)
{
    static const char *const names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};
    for (int i = 0; name && i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

int config_parse_quorum_voters(const char *value, struct quorum_voter *out, int max, char *err, size_t errlen)
{
    char entry[ENTRY_MAX];
    bool too_long;
    int count = 0;
    const char *cursor = value ? value : "";
    while (next_entry(&cursor, entry, &too_long)) {
        struct quorum_voter voter;
        char *at = strchr(entry, '@');
        bool ok = !too_long && at && at != entry && (size_t)(at - entry) <= 10;
        long long id = 0;
        for (char *p = entry; ok && p < at; p++) {
            ok = isdigit((unsigned char)*p);
            id = id * 10 + (*p - '0');
        }
        ok = ok && id <= INT32_MAX && parse_host_port(at + 1, voter.host, &voter.port) && voter.host[0] != '\0';
        if (!ok) {
            snprintf(err, errlen, "invalid quorum voter '%s': expected id@host:port", entry);
            return -1;
        }
        voter.node_id = (int32_t)id;
        for (int i = 0; i < count; i++) {
            if (out[i].node_id == voter.node_id) {
                snprintf(err, errlen, "invalid quorum voter '%s': node id %d is listed twice", entry, voter.node_id);
                return -1;
            }
        }
        if (count >= max) {
            snprintf(err, errlen, "too many quorum voters (at most %d)", max);
            return -1;
        }
        out[count++] = voter;
    }
    return count;
}

int config_parse_quorum_bootstrap_servers(const char *value, struct quorum_voter *out, int max, char *err,
                                          size_t errlen)
{
    char entry[ENTRY_MAX];
    bool too_long;
    int count = 0;
    const char *cursor = value ? value : "";
    while (next_entry(&cursor, entry, &too_long)) {
        struct quorum_voter server;
        if (too_long || !parse_host_port(entry, server.host, &server.port) || server.host[0] == '\0' ||
            server.port == 0) {
            snprintf(err, errlen, "invalid bootstrap server '%s': expected host:port with port in [1, 65535]", entry);
            return -1;
        }
        if (count >= max) {
            snprintf(err, errlen, "too many bootstrap servers (at most %d)", max);
            return -1;
        }
        server.node_id = QUORUM_BOOTSTRAP_ID(count);
        out[count++] = server;
    }
    return count;
}
