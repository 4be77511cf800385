/* Broker configuration: Kafka's server.properties keys, types, defaults
 * and validation, loaded from a file and --override arguments.
 *
 * A struct broker_config is built once at start-up by config_load() and
 * is read-only afterwards: any thread may call the getters concurrently.
 * Nothing in it changes until config_free(). */
#ifndef CAIRN_CONFIG_CONFIG_H
#define CAIRN_CONFIG_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Kafka's config types, numbered as DescribeConfigs v3+ reports them. */
enum config_type {
    CONFIG_TYPE_UNKNOWN = 0,
    CONFIG_TYPE_BOOLEAN = 1,
    CONFIG_TYPE_STRING = 2,
    CONFIG_TYPE_INT = 3,
    CONFIG_TYPE_SHORT = 4,
    CONFIG_TYPE_LONG = 5,
    CONFIG_TYPE_DOUBLE = 6,
    CONFIG_TYPE_LIST = 7,
    CONFIG_TYPE_CLASS = 8,
    CONFIG_TYPE_PASSWORD = 9,
};

/* Kafka's DescribeConfigs ConfigSource values. */
enum config_source {
    CONFIG_SOURCE_UNKNOWN = 0,
    CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG = 1,
    CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG = 2,
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3,
    CONFIG_SOURCE_STATIC_BROKER_CONFIG = 4,
    CONFIG_SOURCE_DEFAULT_CONFIG = 5,
};

struct broker_config;

/* Parse the command line, read the config file, apply overrides, validate.
 *   cairnd [--config FILE | -c FILE | FILE] [--override key=value]...
 *          [--help] [--version] [--print-config-docs]
 * Returns 0 with *out set, 1 when --help/--version/--print-config-docs has
 * been printed to stdout (caller exits 0), or -1 with err filled. */
int config_load(int argc, char **argv, struct broker_config **out, char *err, size_t errlen);

/* Start-up's check that every key set does what it says: a key Cairn
 * accepts but does not act on yet (flagged not implemented in the
 * registry) may be present, as in a server.properties written for Kafka,
 * only at its default; any other value is refused with a line naming the
 * key. config_load runs it; config_build does not, so tests may build
 * configs holding such keys. Returns 0 or -1 with err. */
int config_check_implemented(const struct broker_config *cfg, char *err, size_t errlen);

/* config_load for cairnd --check-config: the keys set are read strictly
 * (config_check_key_name before anything else, config_check_known_keys
 * once built). Same return convention. */
int config_load_strict(int argc, char **argv, struct broker_config **out, char *err, size_t errlen);

/* -1 with err for a key that is neither a broker key nor under
 * listener.name. or plugin. (start-up only warns about it); else 0. */
int config_check_key_name(const char *key, char *err, size_t errlen);

/* cairnd --check-config's stricter reading of the keys set (start-up only
 * warns about an unknown key): every key must be a broker key,
 * listener.name.<listener>.<broker key or mechanism.sasl.jaas.config> for a
 * listener of listeners or listener.security.protocol.map (its value
 * checked as the broker key's), or plugin.<name>.* for a plugin listed in
 * plugins. Returns 0 or -1 with err naming the first key at fault. */
int config_check_known_keys(const struct broker_config *cfg, char *err, size_t errlen);

/* Build a config from already-parsed key/value pairs (file entries first,
 * then overrides); used by config_load and by tests. keys/values may be NULL
 * when count is 0. Same return convention as config_load (never 1). */
int config_build(const char *const *keys, const char *const *values, size_t count, struct broker_config **out,
                 char *err, size_t errlen);

void config_free(struct broker_config *cfg);

/* Typed getters for known keys. A key that is unknown or of another type is
 * a programming error: it is logged and 0/false/NULL returned. A key whose
 * value is null (no default, not set) also gives 0/false/NULL.
 * config_get_long accepts INT, SHORT and LONG keys. */
int32_t config_get_int(const struct broker_config *cfg, const char *key);
int64_t config_get_long(const struct broker_config *cfg, const char *key);
double config_get_double(const struct broker_config *cfg, const char *key);
bool config_get_bool(const struct broker_config *cfg, const char *key);
/* STRING, CLASS, PASSWORD and LIST keys: the value as written (trimmed). */
const char *config_get_string(const struct broker_config *cfg, const char *key);
/* LIST keys: elements, trimmed, empty elements dropped. *count may be 0. */
const char *const *config_get_list(const struct broker_config *cfg, const char *key, size_t *count);
/* Any known key's value as text (trimmed, as written or its default);
 * NULL when null or unknown. */
const char *config_get_text(const struct broker_config *cfg, const char *key);
/* True when the key has a value (set, or a non-null default). */
bool config_has_value(const struct broker_config *cfg, const char *key);
/* STATIC_BROKER_CONFIG when set in the file or by --override, else
 * DEFAULT_CONFIG; UNKNOWN for a key not in the registry. */
enum config_source config_source(const struct broker_config *cfg, const char *key);
/* Path of the file read, or NULL when started without one. */
const char *config_file_path(const struct broker_config *cfg);

/* Values derived from several keys, following Kafka's precedence rules. */
int32_t config_node_id(const struct broker_config *cfg);                            /* node.id, broker.id, else 1 */
const char *const *config_log_dirs(const struct broker_config *cfg, size_t *count); /* log.dirs else log.dir */
int64_t config_log_retention_ms(const struct broker_config *cfg);                   /* ms > minutes > hours; <0 => -1 */
int64_t config_log_roll_ms(const struct broker_config *cfg);                        /* log.roll.ms > hours */
int64_t config_log_roll_jitter_ms(const struct broker_config *cfg);
int64_t config_log_flush_interval_ms(const struct broker_config *cfg);    /* null => scheduler interval */
const char *config_advertised_listeners(const struct broker_config *cfg); /* defaults to listeners */
/* Security protocol named for a listener in listener.security.protocol.map,
 * or NULL. Listener names compare case-insensitively. */
const char *config_listener_security_protocol(const struct broker_config *cfg, const char *listener_name);
/* True for the default single-node mode (controller.quorum.voters empty). */
bool config_single_node(const struct broker_config *cfg);

/* Raw entries set explicitly (file, then --override), known or not, whose
 * key starts with prefix; e.g. "plugin.audit.". Keys keep the prefix.
 * *out is a malloc'd array the caller frees; the strings belong to cfg. */
struct config_kv {
    const char *key;
    const char *value;
};
int config_keys_with_prefix(const struct broker_config *cfg, const char *prefix, struct config_kv **out, size_t *count);

/* One known key as DescribeConfigs reports it for a broker resource.
 * value is NULL for a null value and for sensitive (PASSWORD) keys;
 * read_only is true unless Cairn applies the key at runtime. */
struct config_describe_entry {
    const char *name;
    const char *value;
    bool read_only;
    enum config_source source;
    bool is_sensitive;
    enum config_type type;
    const char *documentation;
};
/* Iterate: size_t pos = 0; while (config_describe_next(cfg, &pos, &e)) ... */
bool config_describe_next(const struct broker_config *cfg, size_t *pos, struct config_describe_entry *out);

/* Dynamic broker configs (AlterConfigs on a BROKER resource). A key may be
 * set when Kafka classifies it dynamic and Cairn applies it at runtime;
 * Kafka's per-broker keys only for one broker, not as the cluster-wide
 * default. Returns CONFIG_DYNAMIC_OK, or the refusal with a message naming
 * the key in err. */
enum config_dynamic_verdict {
    CONFIG_DYNAMIC_OK,
    CONFIG_DYNAMIC_UNKNOWN,
    CONFIG_DYNAMIC_READ_ONLY,
    CONFIG_DYNAMIC_NOT_RUNTIME,
    CONFIG_DYNAMIC_PER_BROKER_ONLY,
};
enum config_dynamic_verdict config_dynamic_check_key(const char *key, bool cluster_default, char *err, size_t errlen);
/* The broker key a per-listener key names: for
 * "listener.name.<listener>.ssl.<...>" the index of "ssl.<...>" in the
 * broker key table, else -1. Only the ssl.* keys may be set per listener
 * dynamically (Kafka's listener-prefixed security configs). */
long config_listener_key_index(const char *key);
/* True for a known key Cairn applies without restart. */
bool config_key_runtime(const char *key);
/* A new config: base with the cluster-wide default layer, then the
 * per-broker layer, over it (sources DYNAMIC_DEFAULT_BROKER_CONFIG and
 * DYNAMIC_BROKER_CONFIG). Values are validated as at start (err names the
 * key). The caller frees *out with config_free; base is only read. */
int config_build_layered(const struct broker_config *base, const struct config_kv *cluster_default,
                         size_t default_count, const struct config_kv *per_broker, size_t per_broker_count,
                         struct broker_config **out, char *err, size_t errlen);

const char *config_type_name(enum config_type type);
const char *config_source_name(enum config_source source);

/* Markdown reference of every known broker and topic key (docs/configuration.md). */
void config_print_docs(FILE *out);

#endif
