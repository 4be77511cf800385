/* cairnd --check-config's reading of the keys set: start-up only warns
 * about a key it does not know, which lets a misspelt key go unnoticed;
 * here every key must be one cairnd reads. */
#include "config/config.h"

#include "config/config_internal.h"
#include "config/listeners.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_LISTENERS 32

/* Kafka's listener.name.<listener>.<mechanism>.sasl.* names the mechanism
 * in lower case. */
static const char *const sasl_mechanisms[] = {"plain", "scram-sha-256", "scram-sha-512", "gssapi", "oauthbearer"};

/* True when name is a listener of `listeners` or of the protocol map. */
static bool listener_known(const struct broker_config *cfg, const char *name, size_t len)
{
    for (size_t i = 0; i < cfg->protocol_map_len; i++)
        if (strlen(cfg->protocol_map[i].listener) == len && strncasecmp(cfg->protocol_map[i].listener, name, len) == 0)
            return true;
    struct listener_spec specs[MAX_LISTENERS];
    char why[256];
    const char *listeners = config_value_text(cfg, "listeners");
    int n = config_parse_listeners(listeners ? listeners : "", specs, MAX_LISTENERS, why, sizeof why);
    for (int i = 0; i < n; i++)
        if (strlen(specs[i].name) == len && strncasecmp(specs[i].name, name, len) == 0)
            return true;
    return false;
}

/* listener.name.<listener>.<key>: a broker key for one listener, or
 * <mechanism>.sasl.jaas.config (or another sasl.* key) for one mechanism.
 * The value is checked as the broker-wide key's would be. */
static int check_listener_key(const struct broker_config *cfg, const char *key, const char *value, char *err,
                              size_t errlen)
{
    const char *listener = key + strlen("listener.name.");
    const char *dot = strchr(listener, '.');
    if (!dot || dot == listener || !listener_known(cfg, listener, (size_t)(dot - listener))) {
        snprintf(err, errlen,
                 "unknown configuration key '%s': no listener %.*s in listeners or listener.security.protocol.map", key,
                 dot ? (int)(dot - listener) : (int)strlen(listener), listener);
        return -1;
    }
    const char *rest = dot + 1;
    for (size_t m = 0; m < sizeof sasl_mechanisms / sizeof sasl_mechanisms[0]; m++) {
        size_t len = strlen(sasl_mechanisms[m]);
        if (strncmp(rest, sasl_mechanisms[m], len) == 0 && rest[len] == '.') {
            rest += len + 1;
            if (strcmp(rest, "sasl.jaas.config") == 0)
                return 0;
            break;
        }
    }
    long index = config_broker_key_index(rest);
    if (index < 0) {
        snprintf(err, errlen, "unknown configuration key '%s': %s is not a broker key", key, rest);
        return -1;
    }
    struct config_parsed parsed;
    char why[512];
    if (config_value_parse(config_broker_key_at((size_t)index), value, &parsed, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s (set as '%s')", why, key);
        return -1;
    }
    config_parsed_free(&parsed);
    return 0;
}

/* plugin.<name>.*: the plugin must be listed in plugins=; its own keys are
 * checked against its descriptor by the plugin host. */
static int check_plugin_key(const struct broker_config *cfg, const char *key, char *err, size_t errlen)
{
    const char *name = key + strlen("plugin.");
    const char *dot = strchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    size_t count = 0;
    const char *const *plugins = config_get_list(cfg, "plugins", &count);
    for (size_t i = 0; i < count; i++)
        if (strlen(plugins[i]) == len && strncmp(plugins[i], name, len) == 0)
            return 0;
    snprintf(err, errlen, "unknown configuration key '%s': no plugin '%.*s' is listed in plugins=", key, (int)len,
             name);
    return -1;
}

int config_check_key_name(const char *key, char *err, size_t errlen)
{
    if (config_broker_key_index(key) >= 0 || strncmp(key, "listener.name.", 14) == 0 || strncmp(key, "plugin.", 7) == 0)
        return 0;
    snprintf(err, errlen, "unknown configuration key '%s' (start-up ignores it with a warning)", key);
    return -1;
}

int config_check_known_keys(const struct broker_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->explicit_entries.count; i++) {
        const char *key = cfg->explicit_entries.entries[i].key;
        const char *value = cfg->explicit_entries.entries[i].value;
        if (config_broker_key_index(key) >= 0)
            continue;
        int rc;
        if (strncmp(key, "listener.name.", 14) == 0)
            rc = check_listener_key(cfg, key, value, err, errlen);
        else if (strncmp(key, "plugin.", 7) == 0)
            rc = check_plugin_key(cfg, key, err, errlen);
        else
            rc = config_check_key_name(key, err, errlen);
        if (rc < 0)
            return -1;
    }
    return 0;
}
