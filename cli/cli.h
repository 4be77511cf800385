/* cairn, the command-line tool: what every command family shares.
 *
 * The tool is single-threaded except for the outbound client's own loop
 * thread (core/net/client.h); cli_call turns its callbacks into blocking
 * calls, so command code reads as straight-line requests and answers. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/client.h"
#include "protocol/messages.h"

/* Exit codes, documented in docs/cli.md. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_KAFKA = 1,       /* the broker answered with a Kafka error */
    CLI_EXIT_USAGE = 2,       /* bad flags, arguments or profile */
    CLI_EXIT_UNREACHABLE = 3, /* no broker reachable (or it stopped answering) */
};

/* The API keys the tool sends (Kafka's numbering). */
enum {
    KAFKA_API_KEY_LIST_OFFSETS = 2,
    KAFKA_API_KEY_METADATA = 3,
    KAFKA_API_KEY_OFFSET_FETCH = 9,
    KAFKA_API_KEY_FIND_COORDINATOR = 10,
    KAFKA_API_KEY_DESCRIBE_GROUPS = 15,
    KAFKA_API_KEY_LIST_GROUPS = 16,
    KAFKA_API_KEY_SASL_HANDSHAKE = 17,
    KAFKA_API_KEY_CREATE_TOPICS = 19,
    KAFKA_API_KEY_DELETE_TOPICS = 20,
    KAFKA_API_KEY_DESCRIBE_CONFIGS = 32,
    KAFKA_API_KEY_DESCRIBE_ACLS = 29,
    KAFKA_API_KEY_CREATE_ACLS = 30,
    KAFKA_API_KEY_DELETE_ACLS = 31,
    KAFKA_API_KEY_SASL_AUTHENTICATE = 36,
    KAFKA_API_KEY_CREATE_PARTITIONS = 37,
    KAFKA_API_KEY_ELECT_LEADERS = 43,
    KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS = 44,
    KAFKA_API_KEY_ALTER_PARTITION_REASSIGNMENTS = 45,
    KAFKA_API_KEY_LIST_PARTITION_REASSIGNMENTS = 46,
    KAFKA_API_KEY_DESCRIBE_CLIENT_QUOTAS = 48,
    KAFKA_API_KEY_ALTER_CLIENT_QUOTAS = 49,
    KAFKA_API_KEY_DESCRIBE_USER_SCRAM_CREDENTIALS = 50,
    KAFKA_API_KEY_ALTER_USER_SCRAM_CREDENTIALS = 51,
    KAFKA_API_KEY_DESCRIBE_QUORUM = 55,
};

/* Connection and output settings, resolved from flags, the environment
 * and the profile file (in that order of precedence). Plain data. */
struct cli_settings {
    char brokers[1024]; /* "host:port,host:port" */
    char client_id[64];
    int64_t timeout_ms; /* per request, and for bootstrap */
    bool json;
    /* TLS, in librdkafka's names: security.protocol=ssl, ssl.ca.location,
     * ssl.certificate.location, ssl.key.location, ssl.key.password,
     * ssl.endpoint.identification.algorithm (https, the default, or none). */
    bool ssl;
    char ssl_ca[512], ssl_cert[512], ssl_key[512], ssl_key_password[256];
    bool ssl_no_host_check;
    /* SASL, in librdkafka's names: security.protocol=sasl_plaintext or
     * sasl_ssl, sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512),
     * sasl.username, sasl.password. */
    bool sasl;
    char sasl_mechanism[32], sasl_username[256], sasl_password[256];
};

/* ---- args.c ---- */

/* Parses the flags every command takes (-b/--brokers, --profile, --format,
 * --timeout, -h/--help) plus the command's own (getopt_long spec), calling
 * own(opt, optarg, ctx) for each of the latter; positional arguments end up
 * in pos[0..*npos). usage is printed for --help (exit 0) and referred to on
 * errors. Returns -1 to go on, or an exit code to stop with. */
struct option;
typedef int (*cli_flag_fn)(int opt, const char *arg, void *ctx);
int cli_parse(int argc, char **argv, const char *usage, const char *own_short, const struct option *own_long,
              cli_flag_fn own, void *ctx, struct cli_settings *s, char **pos, int *npos, int max_pos);
/* Applies one librdkafka-named setting (from the profile, CAIRN_<KEY> or
 * -X key=value; `where` names it in errors). Returns 0, or CLI_EXIT_USAGE
 * with the reason printed. */
int cli_setting_apply(const char *where, const char *key, const char *val, struct cli_settings *s);
/* Reads a "key=value" profile (librdkafka property names) into s. Returns
 * 0, or CLI_EXIT_USAGE with the reason printed. */
int cli_profile_load(const char *path, struct cli_settings *s);
/* Splits "host:port" (or "[v6addr]:port"); returns 0 or -1. */
int cli_split_host_port(const char *hp, char *host, size_t hostlen, int *port);
/* Parses a decimal integer in [min, max]; returns 0 or -1. */
int cli_parse_int(const char *text, long long min, long long max, long long *out);

/* ---- output.c ---- */

/* Prints "cairn: <message>" to stderr and returns code. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "NAME: <message>; <hint>" for a Kafka error code (the broker's
 * message when it sent one) and returns CLI_EXIT_KAFKA. */
int cli_kafka_fail(int16_t code, struct kafka_str broker_msg, const char *what, const char *hint);
/* A NUL-terminated copy of a wire string in a static ring of buffers
 * (null prints as ""), for printing a handful at a time. */
const char *cli_str(struct kafka_str s);
/* Name of a DescribeConfigs config source ("DYNAMIC_TOPIC_CONFIG"). */
const char *cli_config_source_name(int8_t source);
/* Formats a list of int32 as "1,2,3" into buf. */
const char *cli_int_list(const int32_t *v, int32_t n, char *buf, size_t len);

/* A text table: columns padded to their widest cell. Owns its cells. */
struct cli_table;
struct cli_table *cli_table_new(int columns, const char *const *headers);
void cli_table_add(struct cli_table *t, ...); /* exactly `columns` const char * */
void cli_table_print(struct cli_table *t);    /* prints and frees */
void cli_table_free(struct cli_table *t);

/* Prints a jansson value (stolen) as indented JSON on stdout. Returns 0. */
struct json_t;
int cli_json_print(struct json_t *v);

/* ---- conn.c ---- */

/* A bootstrapped connection: the client plus the cluster's Metadata.
 * Owned by the main thread. */
struct tls_client;

struct cli_conn {
    struct net_client *client;
    struct tls_client *tls; /* security.protocol=ssl; freed after the client */
    int64_t timeout_ms;
    /* SASL: empty mechanism for none. The outbound client authenticates
     * every connection it opens (net/client.h); these name the failures. */
    char sasl_mechanism[32], sasl_username[256];
    int16_t auth_error; /* of the last call failed with NET_CLIENT_AUTH_FAILED */
    /* Set: a failed call stores the network error here instead of
     * printing it (bootstrap tries the next broker). */
    char *net_err;
    size_t net_err_len;
    int32_t any_node;      /* a broker that answered (bootstrap or real id) */
    int32_t controller_id; /* from Metadata; any_node if the cluster names none */
    struct net_client_kept *meta_kept;
    struct metadata_response *meta; /* cluster metadata (brokers, no topics) */
    int16_t meta_version;
};

/* A kept response: the caller reads response and frees with cli_reply_free. */
struct cli_reply {
    struct net_client_kept *kept;
    void *response;
    int16_t version;
};

/* Fills the request struct req (already _init'ed) for version; arrays come
 * from arena. Returns 0 or -1. */
typedef int (*cli_build_fn)(void *req, int16_t version, struct kafka_arena *arena, void *ctx);

/* Bootstraps: Metadata to the first reachable broker in s->brokers, then
 * registers every broker it lists. Returns 0 or an exit code (message printed). */
int cli_connect(struct cli_conn *c, const struct cli_settings *s);
void cli_close(struct cli_conn *c);
/* A connection to one node without Metadata (a controller listener serves
 * none): any_node and controller_id name it, meta is NULL. Returns 0 or an
 * exit code (message printed); unreachable shows on the first cli_call. */
int cli_connect_direct(struct cli_conn *c, const struct cli_settings *s, const char *host_port);
/* Sends one request and waits for its answer. Returns 0, or
 * CLI_EXIT_UNREACHABLE with the reason printed. */
int cli_call(struct cli_conn *c, int32_t node, int16_t api_key, cli_build_fn build, void *ctx, struct cli_reply *out);
void cli_reply_free(struct cli_reply *r);
/* cli_call at version pinned (-1: negotiated). */
int cli_call_raw(struct cli_conn *c, int32_t node, int16_t api_key, int16_t pinned, cli_build_fn build, void *ctx,
                 struct cli_reply *out);

/* ---- sasl.c ---- */

/* "scram-sha-256" -> "SCRAM-SHA-256" for the mechanisms the tool speaks;
 * NULL for others. */
const char *cli_sasl_mechanism_canonical(const char *name);
/* Prints why the broker refused the SASL authentication (code: its error,
 * -1 for a refusal of the tool's own; detail: its message, or the
 * mechanisms it enables). Returns the exit code. */
int cli_sasl_failed(const struct cli_conn *c, int16_t code, const char *detail);
/* Metadata for the given topics (n < 0: all topics). */
int cli_metadata(struct cli_conn *c, const char *const *topics, int n, struct cli_reply *out);
/* The group's coordinator (FindCoordinator), registered as a node. Returns
 * 0 or an exit code (message printed). */
int cli_coordinator(struct cli_conn *c, const char *group, int32_t *node);

/* ---- group.c ---- */

/* Walks a consumer protocol assignment (ConsumerProtocolAssignment: a
 * version, topics with their partitions, user data), calling fn per
 * partition. Returns 0, or -1 when the bytes do not decode. */
typedef void (*cli_assignment_fn)(struct kafka_str topic, int32_t partition, void *ctx);
int cli_assignment_each(struct kafka_bytes b, cli_assignment_fn fn, void *ctx);

/* ---- acl.c, user.c ---- */

/* Kafka's AclOperation value for a name as kafka-acls.sh takes it ("Read",
 * "describe_configs", "AlterConfigs"; not Any/Unknown). Returns 0 or -1. */
int cli_acl_operation_parse(const char *text, int8_t *out);
/* SCRAM's SaltedPassword = Hi(password, salt, iterations), PBKDF2 with the
 * mechanism's HMAC (1: SHA-256, 2: SHA-512) into out (64 bytes room).
 * Returns the length written, or -1. */
int cli_scram_salted_password(int8_t mechanism, const char *password, const uint8_t *salt, int salt_len, int iterations,
                              uint8_t *out);

/* ---- command families ---- */
int cli_topic_main(int argc, char **argv);
int cli_cluster_main(int argc, char **argv);
int cli_group_main(int argc, char **argv);
int cli_acl_main(int argc, char **argv);
int cli_user_main(int argc, char **argv);
int cli_quorum_main(int argc, char **argv);
int cli_quota_main(int argc, char **argv);
int cli_config_main(int argc, char **argv);
int cli_leader_main(int argc, char **argv);
int cli_reassign_main(int argc, char **argv);

#endif
