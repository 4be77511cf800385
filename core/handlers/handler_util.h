/* Small helpers shared by the API handlers. All run on io threads. */
#ifndef CAIRN_HANDLERS_HANDLER_UTIL_H
#define CAIRN_HANDLERS_HANDLER_UTIL_H

#include "cairn/authz.h"
#include "handlers/handlers.h"
#include "plugin/plugin_host.h"

struct metadata_broker;
struct metadata_endpoint;
struct metadata_partition;
struct metadata_topic;
struct partition_log;

/* The endpoint of broker b that clients of this request's listener should
 * use: the one with the same listener name, else the first; NULL if none. */
const struct metadata_endpoint *handler_endpoint_for_request(struct request_context *ctx,
                                                             const struct metadata_broker *b);

/* Copies n int32s into the request arena (NULL when n <= 0 or out of memory). */
int32_t *handler_copy_int32s(struct request_context *ctx, const int32_t *src, int32_t n);

/* KAFKA_ERR_NONE for a legal topic name (1-249 chars of [a-zA-Z0-9._-], not "." or ".."),
 * otherwise KAFKA_ERR_INVALID_TOPIC_EXCEPTION. */
int16_t handler_topic_name_error(struct kafka_str name);

/* Copies a name the request gives (a topic's) into buf as a C string. False,
 * with buf "", when it is null or empty, does not fit, or holds a NUL byte:
 * such a name can name no topic here, and its C string would name another. */
bool handler_name_cstr(struct kafka_str name, char *buf, size_t buflen);

/* A wire string as a NUL-terminated copy in the request arena; NULL for a
 * null string (and on allocation failure, which sets *oom). */
char *handler_arena_cstr(struct request_context *ctx, struct kafka_str s, bool *oom);

/* KIP-599: asks the quota plugins (CAIRN_QUOTA_CONTROLLER_MUTATION) about
 * the partitions one topic of CreateTopics, CreatePartitions or
 * DeleteTopics would create or delete. THROTTLING_QUOTA_EXCEEDED (with
 * Kafka's message) when refused and the request's version is at least
 * strict_from; a throttle is kept in ctx->mutation_throttle_ms either way. */
int16_t handler_mutation_quota(struct request_context *ctx, int32_t partitions, int16_t strict_from,
                               struct kafka_str *message);

/* Kafka's bound on the partitions one request may add (CreateTopics,
 * CreatePartitions, and the topics one Metadata request auto-creates),
 * whatever its topic count: every partition is a log directory made while
 * the request holds the metadata store, so a few hostile requests could
 * otherwise stall the broker for minutes. */
#define HANDLER_MAX_PARTITIONS_PER_REQUEST 10000

/* Creates a topic with the broker defaults (auto.create.topics.enable path). */
int16_t handler_auto_create_topic(struct request_context *ctx, const char *name);

/* The local log of a partition this broker leads. Returns KAFKA_ERR_NONE and
 * a new reference to the log (release it with partition_log_close), or
 * UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER. */
int16_t handler_leader_log(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                           struct partition_log **log_out);

/* KIP-320: the client's current leader epoch against the partition's.
 * -1 means the client named none (Kafka's NO_PARTITION_LEADER_EPOCH); any
 * other older value is FENCED_LEADER_EPOCH, a newer one
 * UNKNOWN_LEADER_EPOCH. */
int16_t handler_check_leader_epoch(const struct metadata_partition *p, int32_t current_leader_epoch);

/* The high watermark of a partition this broker leads. With a single
 * in-sync replica it is the log end offset. */
int64_t handler_high_watermark(struct partition_log *log);

/* Kafka's name of the cluster resource in ACLs. */
#define HANDLER_CLUSTER_RESOURCE "kafka-cluster"

/* True when at least one authorization plugin is loaded; with none every
 * action is allowed (Kafka without an authorizer). */
static inline bool handler_has_authorizer(const struct request_context *ctx)
{
    return ctx->env->plugins && ctx->env->plugins->authorizer_count > 0;
}

/* True when authorization decisions are taken: by the authorizers, or by
 * the default allow-all when only audit plugins are loaded, so that they
 * record every decision. */
static inline bool handler_decides(const struct request_context *ctx)
{
    return ctx->env->plugins && (ctx->env->plugins->authorizer_count > 0 || ctx->env->plugins->audit_count > 0);
}

/* The connection and request as plugins see them; built on first use. */
const struct cairn_request_info *handler_request_info(struct request_context *ctx);

/* Asks every authorization plugin about n actions (all must allow) and
 * writes CAIRN_AUTHZ_ALLOWED or CAIRN_AUTHZ_DENIED to results[i]; emits an
 * AUTHORIZATION audit event per action as its log_if_* flags ask. */
void handler_authorize(struct request_context *ctx, const struct cairn_authz_action *const *actions, size_t n,
                       uint8_t *results);

/* One action on a LITERAL resource; audit says whether the outcome is
 * logged (explicit resources of a request: true). True when allowed. */
bool handler_authorize_resource(struct request_context *ctx, int32_t operation, int32_t resource_type,
                                const char *resource_name, bool audit);
/* The same, logging each outcome as asked: a check whose refusal is
 * normal (a fallback follows) logs only when allowed, as Kafka does. */
bool handler_authorize_logged(struct request_context *ctx, int32_t operation, int32_t resource_type,
                              const char *resource_name, bool log_if_allowed, bool log_if_denied);
/* One action on a LITERAL resource, audited when allowed and when denied
 * (an explicit request for that resource). True when allowed. */
bool handler_authorize_one(struct request_context *ctx, int32_t operation, int32_t resource_type,
                           const char *resource_name);
/* The same for a resource named by a wire string (e.g. a topic); an
 * unauthorised implicit check (Metadata's topic listing) passes
 * audit=false. */
bool handler_authorize_name(struct request_context *ctx, int32_t operation, int32_t resource_type,
                            struct kafka_str resource_name, bool audit);

/* An ADMIN audit event for this request; details_json may be NULL. */
void handler_audit_admin(struct request_context *ctx, const char *operation, int32_t resource_type,
                         const char *resource_name, int16_t error_code, const char *details_json);

/* Allocates an array of n response structs in the request arena and runs the
 * generated init on each, so every field starts at its schema default (an
 * all-zero struct is not: defaults such as -1 matter when encoding). ptr is
 * NULL on allocation failure. */
#define HANDLER_NEW_ARRAY(ctx, ptr, n, init_fn)                                                                        \
    do {                                                                                                               \
        int32_t handler_n_ = (n) > 0 ? (n) : 0;                                                                        \
        (ptr) = kafka_arena_alloc(&(ctx)->arena, (size_t)(handler_n_ + 1) * sizeof *(ptr));                            \
        for (int32_t handler_i_ = 0; (ptr) && handler_i_ < handler_n_; handler_i_++)                                   \
            init_fn(&(ptr)[handler_i_]);                                                                               \
    } while (0)

/* KIP-405: a topic may set remote.storage.enable=true only on a broker with
 * remote.log.storage.system.enable (Kafka refuses it with INVALID_CONFIG
 * rather than keep every segment locally behind the user's back). Returns
 * KAFKA_ERR_NONE or INVALID_CONFIG with msg naming the broker key. */
struct metadata_config_kv;
int16_t handler_check_remote_storage(const struct request_context *ctx, const struct metadata_config_kv *kvs,
                                     int32_t count, char *msg, size_t msglen);

/* "127.0.0.1:53422" or "[::1]:53422" -> host (into host, hostlen bytes)
 * and port (0 without one). */
void handler_split_peer(const char *peer, char *host, size_t hostlen, uint16_t *port);

#endif
