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
#include <stdio.h>

#include "net/client.h"
#include "protocol/messages.h"

/* Exit codes, documented in docs/cli.md. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_KAFKA = 1,       /* the broker answered with a Kafka error */
    CLI_EXIT_USAGE = 2,       /* bad flags, arguments or profile */
    CLI_EXIT_UNREACHABLE = 3, /* no broker reachable (or it stopped answering) */
    CLI_EXIT_TIMEOUT = 4,     /* a --wait ran out of time with the work under way */
};

/* The API keys the tool sends (Kafka's numbering). */
enum {
    KAFKA_API_KEY_PRODUCE = 0,
    KAFKA_API_KEY_FETCH = 1,
    KAFKA_API_KEY_LIST_OFFSETS = 2,
    KAFKA_API_KEY_METADATA = 3,
    KAFKA_API_KEY_OFFSET_COMMIT = 8,
    KAFKA_API_KEY_OFFSET_FETCH = 9,
    KAFKA_API_KEY_FIND_COORDINATOR = 10,
    KAFKA_API_KEY_JOIN_GROUP = 11,
    KAFKA_API_KEY_HEARTBEAT = 12,
    KAFKA_API_KEY_LEAVE_GROUP = 13,
    KAFKA_API_KEY_SYNC_GROUP = 14,
    KAFKA_API_KEY_DESCRIBE_GROUPS = 15,
    KAFKA_API_KEY_LIST_GROUPS = 16,
    KAFKA_API_KEY_SASL_HANDSHAKE = 17,
    KAFKA_API_KEY_CREATE_TOPICS = 19,
    KAFKA_API_KEY_INIT_PRODUCER_ID = 22,
    KAFKA_API_KEY_DELETE_TOPICS = 20,
    KAFKA_API_KEY_DESCRIBE_CONFIGS = 32,
    KAFKA_API_KEY_DESCRIBE_ACLS = 29,
    KAFKA_API_KEY_CREATE_ACLS = 30,
    KAFKA_API_KEY_DELETE_ACLS = 31,
    KAFKA_API_KEY_SASL_AUTHENTICATE = 36,
    KAFKA_API_KEY_CREATE_PARTITIONS = 37,
    KAFKA_API_KEY_DELETE_GROUPS = 42,
    KAFKA_API_KEY_ELECT_LEADERS = 43,
    KAFKA_API_KEY_INCREMENTAL_ALTER_CONFIGS = 44,
    KAFKA_API_KEY_ALTER_PARTITION_REASSIGNMENTS = 45,
    KAFKA_API_KEY_LIST_PARTITION_REASSIGNMENTS = 46,
    KAFKA_API_KEY_DESCRIBE_CLIENT_QUOTAS = 48,
    KAFKA_API_KEY_ALTER_CLIENT_QUOTAS = 49,
    KAFKA_API_KEY_DESCRIBE_USER_SCRAM_CREDENTIALS = 50,
    KAFKA_API_KEY_ALTER_USER_SCRAM_CREDENTIALS = 51,
    KAFKA_API_KEY_OFFSET_DELETE = 47,
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
    /* A consumer group member (cairn consume --group), in librdkafka's
     * names: session.timeout.ms, heartbeat.interval.ms,
     * max.poll.interval.ms (the rebalance timeout), auto.commit.interval.ms. */
    int32_t session_timeout_ms, heartbeat_interval_ms, max_poll_interval_ms, auto_commit_interval_ms;
    /* group.instance.id: a static member (KIP-345); empty for a dynamic one. */
    char group_instance_id[256];
    /* debug: librdkafka's contexts; cgrp (or all) prints the member's joins on stderr. */
    bool debug_cgrp;
    /* cairn produce, in librdkafka's names: enable.idempotence (-1 unset,
     * 0 or 1) and delivery.timeout.ms (alias message.timeout.ms; 0: the
     * --timeout), how long a batch is retried before produce gives up. */
    int8_t idempotence;
    int64_t delivery_timeout_ms;
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

#define CLI_KNOWN_BROKERS 64

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
    int32_t any_node; /* a broker that answered (bootstrap or real id) */
    /* Brokers Metadata listed, for refreshes once the one asked stops
     * answering (as Kafka's clients do): failed_ms 0 until a call to it
     * fails. nbootstrap: the -b entries registered, the last resort. */
    struct cli_known_broker {
        int32_t id;
        int64_t failed_ms;
    } known[CLI_KNOWN_BROKERS];
    int nknown;
    int nbootstrap;
    int32_t controller_id; /* from Metadata; any_node if the cluster names none */
    struct net_client_kept *meta_kept;
    struct metadata_response *meta; /* cluster metadata (brokers, no topics) */
    int16_t meta_version;
    bool no_response;                   /* the next calls expect no answer (Produce with acks=0) */
    bool fail_fast;                     /* the next calls fail at a refused connection (net/client.h) */
    enum net_client_status last_status; /* of the last call */
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
/* cli_call to any broker that answers: the last one that did, then the
 * known brokers least recently failed first, then the bootstrap list.
 * Metadata refreshes go this way so a dead bootstrap broker does not
 * hide the rest of the cluster. */
int cli_call_any(struct cli_conn *c, int16_t api_key, cli_build_fn build, void *ctx, struct cli_reply *out);
/* True when a controller-bound answer says NOT_CONTROLLER anywhere. */
typedef bool (*cli_controller_moved_fn)(const void *response);
/* cli_call to the controller Metadata named. An answer of NOT_CONTROLLER
 * (the quorum's leader moved, or the node asked lost its lead) or a
 * refused connection (the controller died) is asked again of the
 * controller a fresh Metadata names, backing off 100 ms to 1 s, until
 * --timeout, as Kafka's admin client retries them; the last answer is
 * returned as it came. */
int cli_call_controller(struct cli_conn *c, int16_t api_key, cli_build_fn build, void *ctx,
                        cli_controller_moved_fn moved, struct cli_reply *out);
/* cli_controller_moved_fn of IncrementalAlterConfigs. */
bool cli_alter_configs_moved(const void *response);
/* Remembers (and registers) the brokers a Metadata answer lists. */
void cli_note_brokers(struct cli_conn *c, const struct metadata_response *m);
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
 * 0 or an exit code (message printed). With c->net_err set, a network
 * failure or a coordinator not available yet is stored there instead and
 * returns CLI_EXIT_UNREACHABLE. */
int cli_coordinator(struct cli_conn *c, const char *group, int32_t *node);

/* ---- list_offsets.c ---- */

/* One partition whose offset ListOffsets looks up: topic, partition and
 * leader in; offset (-1: none or failed) and error out. */
struct cli_offset_query {
    const char *topic;
    int32_t partition;
    int32_t leader; /* -1: unknown (error LEADER_NOT_AVAILABLE) */
    int64_t offset;
    int16_t error;
};
/* Looks up every query's offset at timestamp (-2 earliest, -1 latest, else
 * ms since the epoch) with one ListOffsets to each leader. Returns 0 (each
 * query's own error set), or CLI_EXIT_UNREACHABLE with the reason printed. */
int cli_list_offsets(struct cli_conn *c, struct cli_offset_query *q, int n, int64_t timestamp);
/* The leader of topic's partition in a Metadata reply, or -1. */
int32_t cli_metadata_leader(const struct metadata_response *m, const char *topic, int32_t partition);

/* ---- group.c ---- */

/* Walks a consumer protocol assignment (ConsumerProtocolAssignment: a
 * version, topics with their partitions, user data), calling fn per
 * partition. Returns 0, or -1 when the bytes do not decode. */
typedef void (*cli_assignment_fn)(struct kafka_str topic, int32_t partition, void *ctx);
int cli_assignment_each(struct kafka_bytes b, cli_assignment_fn fn, void *ctx);
/* Request builders: DescribeGroups for one group, OffsetFetch of every
 * committed offset of one group (ctx: the group id). */
int cli_build_describe_groups(void *req, int16_t version, struct kafka_arena *a, void *ctx);
int cli_build_offset_fetch_all(void *req, int16_t version, struct kafka_arena *a, void *ctx);
/* Walks an OffsetFetch reply's committed offsets (any version). Returns 0,
 * or CLI_EXIT_KAFKA with the group-level error printed. */
typedef void (*cli_committed_fn)(struct kafka_str topic, int32_t partition, int64_t offset, void *ctx);
int cli_offset_fetch_each(const struct cli_reply *r, const char *group, cli_committed_fn fn, void *ctx);

/* ---- group_offsets.c: group reset-offsets and delete-offsets ---- */
int cli_group_reset_offsets(int argc, char **argv);
int cli_group_delete_offsets(int argc, char **argv);

/* ---- completion.c ---- */

/* One command family of the tool: the table main() dispatches on, prints
 * as help and turns into shell completion. subcommands is space-separated. */
struct cli_command {
    const char *name;
    const char *subcommands;
    const char *note; /* shown after the subcommands in help, or NULL */
    int (*run)(int argc, char **argv);
};
/* Prints the commands as the help text lists them. */
void cli_commands_help(FILE *out, const struct cli_command *cmds, size_t n);
/* cairn completion bash|zsh: prints a completion script for cmds. */
int cli_completion_main(int argc, char **argv, const struct cli_command *cmds, size_t n);
/* The long and short forms of the flags every command takes
 * ("--brokers", "-b", ...), NULL-terminated. */
const char *const *cli_common_flags(void);

/* ---- acl.c, user.c ---- */

/* Kafka's AclOperation value for a name as kafka-acls.sh takes it ("Read",
 * "describe_configs", "AlterConfigs"; not Any/Unknown). Returns 0 or -1. */
int cli_acl_operation_parse(const char *text, int8_t *out);
/* SCRAM's SaltedPassword = Hi(password, salt, iterations), PBKDF2 with the
 * mechanism's HMAC (1: SHA-256, 2: SHA-512) into out (64 bytes room).
 * Returns the length written, or -1. */
int cli_scram_salted_password(int8_t mechanism, const char *password, const uint8_t *salt, int salt_len, int iterations,
                              uint8_t *out);

/* ---- topic_io.c: what produce and consume share ---- */

/* A topic's partitions and their leaders (by partition index; -1: none).
 * Owned by the main thread; free with cli_topic_info_free. */
struct cli_topic_info {
    char name[256];
    struct kafka_uuid id; /* zero before Metadata v10 */
    int32_t partitions;
    int32_t *leader;
};
/* How cli_topic_lookup takes an unknown topic: an error (EXISTING), a
 * topic the broker may create and is waited for (CREATE, as producers
 * ask), or one that existed a moment ago, waited for (REFRESH: a broker
 * restarting knows it only once its metadata is loaded). */
enum cli_lookup { CLI_LOOKUP_EXISTING, CLI_LOOKUP_CREATE, CLI_LOOKUP_REFRESH };
/* Metadata for one topic, asked again (until --timeout) while a partition
 * has no leader or, per mode, while the topic is unknown. Registers the
 * brokers the answer lists. Returns 0 or an exit code
 * (UNKNOWN_TOPIC_OR_PARTITION named). */
int cli_topic_lookup(struct cli_conn *c, const char *topic, enum cli_lookup mode, struct cli_topic_info *t);
void cli_topic_info_free(struct cli_topic_info *t);
/* 0 when partition (-1: none named) exists in t; else prints
 * UNKNOWN_TOPIC_OR_PARTITION and returns its exit code. */
int cli_topic_has_partition(const struct cli_topic_info *t, long long partition);
/* Kafka's murmur2 hash of a record key (the default partitioner's). */
uint32_t cli_murmur2(const void *data, size_t len);
/* ListOffsets for parts[0..n) at timestamp (-1 latest, -2 earliest, or
 * milliseconds) from each partition's leader: out[i] the offset (-1 when
 * no record is at or after the timestamp). Returns 0 or an exit code. */
int cli_topic_list_offsets(struct cli_conn *c, const struct cli_topic_info *t, const int32_t *parts, int n,
                           int64_t timestamp, int8_t isolation, int64_t *out);
int64_t cli_now_ms(void);
void cli_sleep_ms(int64_t ms);

/* ---- record_out.c: how consume prints a record ---- */

struct record_batch_record;
/* Checks a consume format string's escapes; -1 with the reason in err. */
int cli_format_check(const char *fmt, char *err, size_t errlen);
/* The record through a checked format string (docs/cli.md lists the escapes). */
void cli_record_print_format(FILE *out, const char *fmt, const char *topic, int32_t partition,
                             const struct record_batch_record *r);
/* The record as one JSON object on a line: topic, partition, offset,
 * timestamp, key, value, headers (bytes that are not UTF-8 as
 * key_base64/value_base64). */
void cli_record_print_json(FILE *out, const char *topic, int32_t partition, const struct record_batch_record *r);

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
int cli_produce_main(int argc, char **argv);
int cli_consume_main(int argc, char **argv);
int cli_reassign_main(int argc, char **argv);
int cli_partition_main(int argc, char **argv);

#endif
