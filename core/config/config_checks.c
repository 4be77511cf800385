/* Checks that involve several keys; each failure names the key and value. */
#include "config/config_internal.h"
#include "config/listeners.h"
#include "config/uuid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_LISTENERS 32
#define MAX_VOTERS 64

static const char *text_of(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = config_slot_for(cfg, key, NULL);
    return slot && slot->parsed.text ? slot->parsed.text : "";
}

static int64_t integer_of(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = config_slot_for(cfg, key, NULL);
    return slot ? slot->parsed.integer : 0;
}

static int bad_value(const struct broker_config *cfg, const char *key, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "invalid value '%s' for '%s': %s", text_of(cfg, key), key, why);
    return -1;
}

static int parse_protocol_map(struct broker_config *cfg, char *err, size_t errlen)
{
    const struct config_slot *slot = config_slot_for(cfg, "listener.security.protocol.map", NULL);
    static const char *const protocols[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};
    cfg->protocol_map = calloc(slot->parsed.list_len ? slot->parsed.list_len : 1, sizeof *cfg->protocol_map);
    if (!cfg->protocol_map) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < slot->parsed.list_len; i++) {
        const char *item = slot->parsed.list[i];
        const char *colon = strchr(item, ':');
        char why[320];
        const char *protocol = NULL;
        if (colon && colon != item) {
            for (size_t p = 0; p < sizeof protocols / sizeof protocols[0]; p++)
                if (strcasecmp(colon + 1, protocols[p]) == 0)
                    protocol = protocols[p];
        }
        if (!protocol) {
            snprintf(why, sizeof why,
                     "entry '%s' is not NAME:PROTOCOL with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
                     item);
            return bad_value(cfg, "listener.security.protocol.map", why, err, errlen);
        }
        struct protocol_map_entry *entry = &cfg->protocol_map[cfg->protocol_map_len];
        entry->listener = strndup(item, (size_t)(colon - item));
        entry->protocol = strdup(protocol);
        cfg->protocol_map_len++;
        if (!entry->listener || !entry->protocol) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (char *c = entry->listener; *c; c++)
            *c = (char)toupper((unsigned char)*c);
    }
    return 0;
}

static int check_listener_list(struct broker_config *cfg, const char *key, bool advertised, char *err, size_t errlen)
{
    struct listener_spec specs[MAX_LISTENERS];
    char why[600];
    const char *value = text_of(cfg, key);
    int n = config_parse_listeners(value, specs, MAX_LISTENERS, why, sizeof why);
    if (n < 0)
        return bad_value(cfg, key, why, err, errlen);
    if (n == 0)
        return bad_value(cfg, key, "expected at least one NAME://host:port", err, errlen);
    for (int i = 0; i < n; i++) {
        const char *protocol = config_listener_security_protocol(cfg, specs[i].name);
        if (!protocol) {
            snprintf(why, sizeof why, "listener name %.63s has no entry in listener.security.protocol.map",
                     specs[i].name);
            return bad_value(cfg, key, why, err, errlen);
        }
        if (advertised && (strcmp(specs[i].host, "0.0.0.0") == 0 || strcmp(specs[i].host, "::") == 0)) {
            snprintf(why, sizeof why, "%.63s advertises the wildcard address %.8s, which clients cannot connect to",
                     specs[i].name, specs[i].host);
            return bad_value(cfg, key, why, err, errlen);
        }
    }
    return 0;
}

/* With a quorum, a controller serves it on the first listener named in
 * controller.listener.names, which must be one of `listeners`. */
static int check_controller_listener(struct broker_config *cfg, char *err, size_t errlen)
{
    const struct config_slot *names = config_slot_for(cfg, "controller.listener.names", NULL);
    if (names->parsed.is_null || names->parsed.list_len == 0) {
        snprintf(err, errlen,
                 "controller.listener.names must be set on a node with the controller role when "
                 "controller.quorum.voters is set");
        return -1;
    }
    struct listener_spec specs[MAX_LISTENERS];
    char why[600];
    int n = config_parse_listeners(text_of(cfg, "listeners"), specs, MAX_LISTENERS, why, sizeof why);
    if (n < 0)
        return bad_value(cfg, "listeners", why, err, errlen);
    for (size_t k = 0; k < names->parsed.list_len; k++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found = found || strcasecmp(specs[i].name, names->parsed.list[k]) == 0;
        if (!found) {
            snprintf(why, sizeof why, "controller listener %.63s is not one of listeners (%.200s)",
                     names->parsed.list[k], text_of(cfg, "listeners"));
            return bad_value(cfg, "controller.listener.names", why, err, errlen);
        }
    }
    return 0;
}

/* controller.quorum.bootstrap.servers (KIP-853, its first step): a broker
 * finds the quorum through it instead of controller.quorum.voters. The
 * controllers keep the static voters: a controller cannot join a quorum
 * through bootstrap servers before dynamic voters exist. */
static int check_bootstrap_servers(struct broker_config *cfg, int n_voters, int64_t id, char *err, size_t errlen)
{
    struct quorum_voter servers[QUORUM_BOOTSTRAP_MAX];
    char why[600];
    const char *roles = text_of(cfg, "process.roles");
    int n = config_parse_quorum_bootstrap_servers(text_of(cfg, "controller.quorum.bootstrap.servers"), servers,
                                                  QUORUM_BOOTSTRAP_MAX, why, sizeof why);
    if (n < 0)
        return bad_value(cfg, "controller.quorum.bootstrap.servers", why, err, errlen);
    bool controller = strstr(roles, "controller") != NULL;
    if (n > 0 && controller) {
        snprintf(err, errlen,
                 "controller.quorum.bootstrap.servers is set on a node with the controller role (process.roles=%s): "
                 "controllers need controller.quorum.voters (dynamic voters are not implemented); only a broker "
                 "(process.roles=broker) finds the quorum through bootstrap servers",
                 roles);
        return -1;
    }
    if (n > 0 && n_voters > 0) {
        snprintf(err, errlen,
                 "controller.quorum.voters and controller.quorum.bootstrap.servers are both set: set exactly one of "
                 "them");
        return -1;
    }
    if (!controller && n == 0 && n_voters == 0) {
        /* Kafka's check: a broker alone has no quorum to follow. */
        snprintf(err, errlen,
                 "process.roles=%s has no controller role: either controller.quorum.bootstrap.servers must contain "
                 "the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of "
                 "controllers",
                 roles);
        return -1;
    }
    if (n > 0 && id < 0) {
        snprintf(err, errlen, "node.id must be set when controller.quorum.bootstrap.servers is set");
        return -1;
    }
    return 0;
}

static int check_identity(struct broker_config *cfg, char *err, size_t errlen)
{
    int64_t node_id = integer_of(cfg, "node.id");
    int64_t broker_id = integer_of(cfg, "broker.id");
    if (node_id >= 0 && broker_id >= 0 && node_id != broker_id) {
        snprintf(err, errlen, "node.id (%lld) and broker.id (%lld) are both set and differ", (long long)node_id,
                 (long long)broker_id);
        return -1;
    }
    struct quorum_voter voters[MAX_VOTERS];
    char why[600];
    int n = config_parse_quorum_voters(text_of(cfg, "controller.quorum.voters"), voters, MAX_VOTERS, why, sizeof why);
    if (n < 0)
        return bad_value(cfg, "controller.quorum.voters", why, err, errlen);
    if (check_bootstrap_servers(cfg, n, node_id >= 0 ? node_id : broker_id, err, errlen) < 0)
        return -1;
    if (n > 0) {
        int64_t id = node_id >= 0 ? node_id : broker_id;
        if (id < 0) {
            snprintf(err, errlen, "node.id must be set when controller.quorum.voters is set");
            return -1;
        }
        bool is_controller = strstr(text_of(cfg, "process.roles"), "controller") != NULL;
        bool listed = false;
        for (int i = 0; i < n; i++)
            listed = listed || voters[i].node_id == id;
        if (is_controller && !listed) {
            snprintf(err, errlen, "node.id %lld has the controller role but is not listed in controller.quorum.voters",
                     (long long)id);
            return -1;
        }
        if (!is_controller && listed) {
            snprintf(err, errlen,
                     "node.id %lld is listed in controller.quorum.voters but process.roles (%s) has no controller role",
                     (long long)id, text_of(cfg, "process.roles"));
            return -1;
        }
        if (is_controller && check_controller_listener(cfg, err, errlen) < 0)
            return -1;
    }
    const struct config_slot *cluster = config_slot_for(cfg, "cluster.id", NULL);
    uint8_t uuid[16];
    if (!cluster->parsed.is_null && uuid_from_base64url(cluster->parsed.text, uuid) < 0)
        return bad_value(cfg, "cluster.id", "expected 22 base64url characters encoding 16 bytes", err, errlen);
    return 0;
}

static bool same_value(const struct config_key_def *def, const struct config_parsed *a, const struct config_parsed *b)
{
    if (a->is_null || b->is_null)
        return a->is_null == b->is_null;
    switch (def->type) {
    case CONFIG_TYPE_BOOLEAN:
    case CONFIG_TYPE_SHORT:
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_LONG:
        return a->integer == b->integer;
    case CONFIG_TYPE_DOUBLE:
        return a->number == b->number;
    default:
        return strcmp(a->text, b->text) == 0;
    }
}

int config_check_implemented(const struct broker_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < cfg->slot_count; i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        const struct config_slot *slot = &cfg->slots[i];
        if (!(def->flags & CONFIG_FLAG_UNUSED) || slot->source == CONFIG_SOURCE_DEFAULT_CONFIG)
            continue;
        struct config_parsed dflt;
        char why[64];
        if (config_value_parse(def, def->default_value, &dflt, why, sizeof why) < 0)
            continue;
        bool same = same_value(def, &slot->parsed, &dflt);
        config_parsed_free(&dflt);
        if (!same) {
            snprintf(err, errlen,
                     "'%s' is set, but Cairn does not implement it yet: remove it or leave it at its "
                     "default (%s)",
                     def->name, def->default_value ? def->default_value : "null");
            return -1;
        }
    }
    return 0;
}

int config_check_consistency(struct broker_config *cfg, char *err, size_t errlen)
{
    if (check_identity(cfg, err, errlen) < 0)
        return -1;
    if (parse_protocol_map(cfg, err, errlen) < 0)
        return -1;
    if (check_listener_list(cfg, "listeners", false, err, errlen) < 0)
        return -1;
    const struct config_slot *advertised = config_slot_for(cfg, "advertised.listeners", NULL);
    if (!advertised->parsed.is_null && check_listener_list(cfg, "advertised.listeners", true, err, errlen) < 0)
        return -1;
    size_t dirs = 0;
    config_log_dirs(cfg, &dirs);
    if (dirs == 0) {
        snprintf(err, errlen, "no data directory: log.dirs and log.dir are both empty");
        return -1;
    }
    /* Kafka loads any ReplicaSelector class; Cairn has the rack-aware one. */
    const struct config_slot *selector = config_slot_for(cfg, "replica.selector.class", NULL);
    if (!selector->parsed.is_null && selector->parsed.text[0] &&
        strcmp(selector->parsed.text, "org.apache.kafka.common.replica.RackAwareReplicaSelector") != 0)
        return bad_value(cfg, "replica.selector.class",
                         "the only replica selector is org.apache.kafka.common.replica.RackAwareReplicaSelector "
                         "(leave it unset to fetch from leaders only)",
                         err, errlen);
    if (integer_of(cfg, "group.min.session.timeout.ms") > integer_of(cfg, "group.max.session.timeout.ms")) {
        snprintf(err, errlen, "group.min.session.timeout.ms (%lld) is larger than group.max.session.timeout.ms (%lld)",
                 (long long)integer_of(cfg, "group.min.session.timeout.ms"),
                 (long long)integer_of(cfg, "group.max.session.timeout.ms"));
        return -1;
    }
    return 0;
}
