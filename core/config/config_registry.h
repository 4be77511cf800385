/* Registry of known keys (broker and topic level) and the parsing and
 * validation of one value against its definition. The tables are constant
 * data: safe to read from any thread. */
#ifndef CAIRN_CONFIG_CONFIG_REGISTRY_H
#define CAIRN_CONFIG_CONFIG_REGISTRY_H
#include "config/config.h"

enum config_importance { CONFIG_IMPORTANCE_HIGH, CONFIG_IMPORTANCE_MEDIUM, CONFIG_IMPORTANCE_LOW };

enum config_group {
    CONFIG_GROUP_SERVER,
    CONFIG_GROUP_NETWORK,
    CONFIG_GROUP_LOG,
    CONFIG_GROUP_REPLICATION,
    CONFIG_GROUP_GROUPS,
    CONFIG_GROUP_TRANSACTIONS,
    CONFIG_GROUP_PLUGINS,
    CONFIG_GROUP_TOPIC,
};

enum config_validator {
    CONFIG_VALID_ANY,          /* any value of the type */
    CONFIG_VALID_RANGE,        /* integer types: min..max inclusive */
    CONFIG_VALID_DOUBLE_RANGE, /* DOUBLE: dmin..dmax inclusive */
    CONFIG_VALID_ONE_OF,       /* STRING: one of `choices` */
    CONFIG_VALID_LIST_OF,      /* LIST: every element one of `choices`, at least one */
};

/* Kafka lets these keys change at run time per broker (not read-only). */
#define CONFIG_FLAG_DYNAMIC 0x1u
/* Accepted and validated, but Cairn does not act on it yet. */
#define CONFIG_FLAG_UNUSED 0x2u
/* ONE_OF / LIST_OF compare ignoring case. */
#define CONFIG_FLAG_NOCASE 0x4u
/* With DYNAMIC: Kafka's "per-broker" update mode, settable for one broker
 * only; DYNAMIC without it is "cluster-wide" (settable for one broker or as
 * the cluster-wide default). */
#define CONFIG_FLAG_PER_BROKER 0x8u
/* Cairn applies a change made through AlterConfigs without a restart; only
 * these keys are accepted as dynamic broker configs. */
#define CONFIG_FLAG_RUNTIME 0x10u

struct config_key_def {
    const char *name;
    enum config_type type;
    const char *default_value; /* NULL: no default, the value is null */
    enum config_validator validator;
    int64_t min, max;
    double dmin, dmax;
    const char *choices; /* comma-separated allowed values */
    enum config_importance importance;
    enum config_group group;
    unsigned flags;
    const char *doc;
};

/* A parsed value. list is a malloc'd array of malloc'd strings. */
struct config_parsed {
    bool is_null;
    int64_t integer; /* BOOLEAN (0/1), INT, SHORT, LONG */
    double number;   /* DOUBLE */
    char *text;      /* trimmed value, all types; NULL when is_null */
    char **list;     /* LIST */
    size_t list_len;
};

size_t config_broker_key_count(void);
const struct config_key_def *config_broker_key_at(size_t index);
/* Index of a broker key, or -1. */
long config_broker_key_index(const char *name);

/* Parse and validate raw (NULL means null) for def. On error returns -1 with
 *   invalid value 'abc' for 'num.partitions': expected an integer in [1, 2147483647]
 * in err. */
int config_value_parse(const struct config_key_def *def, const char *raw, struct config_parsed *out, char *err,
                       size_t errlen);
void config_parsed_free(struct config_parsed *parsed);

/* Describe what def accepts, e.g. "an integer in [1, 2147483647]". */
void config_expected_form(const struct config_key_def *def, char *buf, size_t buflen);

const char *config_group_name(enum config_group group);

#endif
