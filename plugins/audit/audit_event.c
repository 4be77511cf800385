/* Formats audit events as one-line JSON objects. */
#include "audit_internal.h"

#include <jansson.h>

#include "cairn/names.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Kafka's names for API keys and enum values come from the SDK's names.h. */
const char *audit_api_name(int32_t api_key)
{
    const char *name = cairn_api_key_name(api_key);
    return strcmp(name, "UNKNOWN") == 0 ? "Unknown" : name;
}

void audit_format_time(int64_t epoch_ms, char *out, size_t outlen)
{
    int64_t seconds = epoch_ms / 1000;
    int64_t millis = epoch_ms % 1000;
    if (millis < 0) {
        millis += 1000;
        seconds -= 1;
    }
    time_t t = (time_t)seconds;
    struct tm tm;
    char date[32];
    if (!gmtime_r(&t, &tm) || strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(date, sizeof(date), "1970-01-01T00:00:00");
    snprintf(out, outlen, "%s.%03dZ", date, (int)millis);
}

/* A JSON string for text that came off the network: bytes that jansson
 * rejects as invalid UTF-8 become '?'. NULL text becomes JSON null. */
static json_t *audit_json_text(const char *text)
{
    if (!text)
        return json_null();
    json_t *value = json_string(text);
    if (value)
        return value;
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        copy[i] = (unsigned char)text[i] >= 0x80 ? '?' : text[i];
    value = json_string(copy);
    free(copy);
    return value;
}

/* Sets key to value, taking the reference; false when value is NULL. */
static bool audit_set(json_t *object, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(object, key, value) == 0;
}

static bool audit_add_request(json_t *object, const struct cairn_request_info *wire_request)
{
    if (!wire_request)
        return true;
    /* Read only the fields the host's struct holds. */
    struct cairn_request_info request;
    memset(&request, 0, sizeof(request));
    size_t size = wire_request->struct_size < sizeof(request) ? wire_request->struct_size : sizeof(request);
    memcpy(&request, wire_request, size);
    request.api_key = CAIRN_HAS_FIELD(wire_request, struct cairn_request_info, api_key) ? wire_request->api_key : -1;

    bool ok = true;
    if (request.principal && request.principal->name) {
        char principal[640];
        snprintf(principal, sizeof(principal), "%s:%s", request.principal->type ? request.principal->type : "User",
                 request.principal->name);
        ok = ok && audit_set(object, "principal", audit_json_text(principal));
    }
    if (request.client_host) {
        char client[320];
        bool ipv6 = strchr(request.client_host, ':') != NULL;
        snprintf(client, sizeof(client), "%s%s%s:%u", ipv6 ? "[" : "", request.client_host, ipv6 ? "]" : "",
                 (unsigned)request.client_port);
        ok = ok && audit_set(object, "client", audit_json_text(client));
    }
    ok = ok && audit_set(object, "client_id", audit_json_text(request.client_id ? request.client_id : ""));
    ok = ok && audit_set(object, "listener", audit_json_text(request.listener_name));
    ok = ok && audit_set(object, "security_protocol", audit_json_text(request.security_protocol));
    ok = ok && audit_set(object, "connection_id", json_integer((json_int_t)request.connection_id));
    if (request.api_key >= 0) {
        ok = ok && audit_set(object, "api_key", json_integer(request.api_key));
        ok = ok && audit_set(object, "api_name", json_string(audit_api_name(request.api_key)));
        ok = ok && audit_set(object, "api_version", json_integer(request.api_version));
        ok = ok && audit_set(object, "correlation_id", json_integer(request.correlation_id));
    }
    return ok;
}

static bool audit_add_resource(json_t *object, const struct cairn_audit_event *event)
{
    return audit_set(object, "resource_type", json_string(cairn_resource_type_name(event->resource_type))) &&
           audit_set(object, "resource_name", audit_json_text(event->resource_name));
}

static bool audit_add_details(json_t *object, const struct cairn_audit_event *event)
{
    if (!event->details_json)
        return audit_set(object, "details", json_null());
    json_t *details = json_loads(event->details_json, 0, NULL);
    if (details && json_is_object(details))
        return audit_set(object, "details", details);
    json_decref(details);
    /* Keep what the host said even when it is not an object. */
    return audit_set(object, "details", audit_json_text(event->details_json));
}

static bool audit_add_body(json_t *object, const struct cairn_audit_event *event)
{
    switch (event->type) {
    case CAIRN_AUDIT_AUTHENTICATION:
        return audit_set(object, "mechanism", audit_json_text(event->mechanism)) &&
               audit_set(object, "success", json_boolean(event->success)) &&
               audit_set(object, "error", audit_json_text(event->error_message));
    case CAIRN_AUDIT_AUTHORIZATION:
        return audit_set(object, "operation", json_string(cairn_operation_name(event->operation))) &&
               audit_add_resource(object, event) &&
               audit_set(object, "pattern_type", json_string(cairn_pattern_type_name(event->pattern_type))) &&
               audit_set(object, "decision", json_string(event->success ? "allowed" : "denied"));
    case CAIRN_AUDIT_ADMIN:
        return audit_set(object, "operation", audit_json_text(event->admin_operation)) &&
               audit_add_resource(object, event) && audit_set(object, "error_code", json_integer(event->error_code)) &&
               audit_add_details(object, event);
    default:
        return false;
    }
}

static const char *audit_type_name(int32_t type)
{
    switch (type) {
    case CAIRN_AUDIT_AUTHENTICATION:
        return "authentication";
    case CAIRN_AUDIT_AUTHORIZATION:
        return "authorization";
    case CAIRN_AUDIT_ADMIN:
        return "admin";
    default:
        return NULL;
    }
}

char *audit_event_format(const struct cairn_audit_event *wire_event, int64_t fallback_time_ms, size_t *len)
{
    /* A host built against an older minor passes a shorter struct: the
     * fields it lacks read as zero. */
    struct cairn_audit_event event;
    memset(&event, 0, sizeof(event));
    size_t size = wire_event->struct_size < sizeof(event) ? wire_event->struct_size : sizeof(event);
    memcpy(&event, wire_event, size);
    const char *type_name = audit_type_name(event.type);
    if (!type_name || size < offsetof(struct cairn_audit_event, request) + sizeof(event.request))
        return NULL;

    json_t *object = json_object();
    if (!object)
        return NULL;
    char when[40];
    audit_format_time(event.timestamp_ms > 0 ? event.timestamp_ms : fallback_time_ms, when, sizeof(when));
    bool ok = audit_set(object, "time", json_string(when)) && audit_set(object, "type", json_string(type_name)) &&
              audit_add_request(object, event.request) && audit_add_body(object, &event);
    char *line = NULL;
    if (ok) {
        size_t need = json_dumpb(object, NULL, 0, JSON_COMPACT);
        line = need > 0 ? malloc(need + 2) : NULL;
        if (line && json_dumpb(object, line, need, JSON_COMPACT) == need) {
            line[need] = '\n';
            line[need + 1] = '\0';
            *len = need + 1;
        } else {
            free(line);
            line = NULL;
        }
    }
    json_decref(object);
    return line;
}
