/* Parsing of listener lists ("PLAINTEXT://localhost:9092,INTERNAL://[::1]:0")
 * of controller.quorum.voters ("1@host:9093,2@[::1]:9093") and of
 * controller.quorum.bootstrap.servers ("host:9093,[::1]:9093").
 * Pure functions on caller-provided storage: thread-safe. */
#ifndef CAIRN_CONFIG_LISTENERS_H
#define CAIRN_CONFIG_LISTENERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LISTENER_NAME_MAX 64
#define LISTENER_HOST_MAX 256

struct listener_spec {
    char name[LISTENER_NAME_MAX]; /* upper-cased, as Kafka normalises listener names */
    char host[LISTENER_HOST_MAX]; /* without IPv6 brackets; "" means every interface */
    int port;                     /* 0..65535; 0 asks the OS for a free port */
};

/* Parse a comma-separated listener list into out[0..max). Returns the count
 * (0 for an empty list) or -1 with an error naming the bad entry. Listener
 * names must be unique. */
int config_parse_listeners(const char *value, struct listener_spec *out, int max, char *err, size_t errlen);

/* Kafka's SecurityProtocol id of a protocol name, case-insensitive:
 * PLAINTEXT 0, SSL 1, SASL_PLAINTEXT 2, SASL_SSL 3; -1 for any other name. */
int config_security_protocol_id(const char *name);

struct quorum_voter {
    int32_t node_id;
    char host[LISTENER_HOST_MAX];
    int port;
};

/* Parse controller.quorum.voters; same conventions as config_parse_listeners. */
int config_parse_quorum_voters(const char *value, struct quorum_voter *out, int max, char *err, size_t errlen);

/* The most bootstrap servers a node takes (the quorum's RAFT_MAX_VOTERS). */
#define QUORUM_BOOTSTRAP_MAX 9

/* Kafka's id for the i-th (from 0) bootstrap server: -2, -3, ... */
#define QUORUM_BOOTSTRAP_ID(i) (-2 - (int32_t)(i))

/* Parse controller.quorum.bootstrap.servers ("host:port,host:port"): each
 * entry gets QUORUM_BOOTSTRAP_ID of its position as node_id. Host and
 * port are required (port in [1, 65535]). Same conventions otherwise. */
int config_parse_quorum_bootstrap_servers(const char *value, struct quorum_voter *out, int max, char *err,
                                          size_t errlen);

#endif
