/* SASL on SASL_PLAINTEXT / SASL_SSL listeners: SaslHandshake v0-1,
 * SaslAuthenticate v0-2, the gate that serves nothing else before a
 * connection authenticated, and KIP-368 re-authentication.
 *
 * A connection's exchange state (struct sasl_conn, sasl.c) lives in its
 * net auth_state slot: created by its first SaslHandshake, changed only by
 * the handler of its one in-flight request, freed with the connection. */
#ifndef CAIRN_HANDLERS_SASL_H
#define CAIRN_HANDLERS_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers/handlers.h"
#include "net/server.h"

/* Runs after a request is decoded, before its handler. True: go on. False:
 * the gate answered (ILLEGAL_SASL_STATE, then close) or closed the
 * connection, and ctx is gone. */
bool sasl_gate(struct request_context *ctx);

/* After a SaslHandshake v0, the client sends bare SASL tokens (no request
 * header) until the exchange ends: true when req is one of those. */
bool sasl_expects_raw_token(const struct net_request *req);
/* Answers such a token with a bare token (or closes on failure). */
void sasl_handle_raw_token(struct net_request *req, struct handler_env *env);

/* The listener's sasl.enabled.mechanisms: listener.name.<l>.sasl.enabled.mechanisms
 * (listener names compare ignoring case), else the broker-wide key, served
 * or not. The override's raw value is split into buf. Returns how many. */
int sasl_enabled_mechanisms(const struct broker_config *cfg, const char *listener, const char **out, int max, char *buf,
                            size_t buflen);

/* Mechanisms a listener offers: sasl.enabled.mechanisms (or its
 * listener.name.<listener>. override) that something serves (the core's
 * SCRAM, or a loaded authentication plugin), in the configured order.
 * Writes up to max names (pointers into config or plugin memory); returns
 * how many. */
int sasl_offered_mechanisms(const struct handler_env *env, const char *listener, const char **out, int max);

/* The front of a SASL listener whose other requests another handler
 * serves (the controller listener, served by the quorum): ApiVersions
 * before a handshake and every request once authenticated go to next;
 * SaslHandshake, SaslAuthenticate and the tokens run through
 * handlers_dispatch with env (its config, plugins and metadata: the
 * mechanisms' credentials); anything else closes the connection unanswered,
 * as the broker's gate does. env and next_ctx outlive the server. */
void sasl_front_dispatch(struct net_request *req, struct handler_env *env, net_request_handler next, void *next_ctx);

/* A net_auth_refusal_fn (env: the struct handler_env whose plugins audit):
 * a connection of a SASL listener closed by the network layer before it
 * authenticated (a frame above sasl.server.max.receive.size) becomes one
 * failed AUTHENTICATION event, as the user an exchange in progress named,
 * else as the connection's principal; that exchange is then not audited
 * again when the connection goes. */
void sasl_audit_net_refusal(void *env, const struct net_auth_refusal *refusal);

enum handler_result handle_sasl_handshake(struct request_context *, void *, void *);
enum handler_result handle_sasl_authenticate(struct request_context *, void *, void *);

#endif
