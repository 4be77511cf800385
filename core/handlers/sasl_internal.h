/* Shared by sasl.c (the exchange) and sasl_mech.c (the mechanisms). */
#ifndef CAIRN_HANDLERS_SASL_INTERNAL_H
#define CAIRN_HANDLERS_SASL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers/handlers.h"

#define SASL_MAX_MECHANISMS 16
#define SASL_MECHANISM_MAX 64
#define SASL_USER_MAX 512
#define SASL_PRINCIPAL_MAX (SASL_USER_MAX + 72)

enum sasl_phase {
    SASL_PHASE_INITIAL = 0,        /* only ApiVersions and SaslHandshake */
    SASL_PHASE_HANDSHAKE_DONE = 1, /* a mechanism is chosen: only its tokens */
    SASL_PHASE_AUTHENTICATED = 2,  /* everything; SaslHandshake re-authenticates */
    SASL_PHASE_FAILED = 3,         /* the connection closes after the answer */
};

struct scram_server;
struct loaded_plugin;
struct plugin_host;

/* Who an exchange in progress is for, kept from its last token: a client
 * that closes before the exchange ends is audited from this when the
 * connection is freed, when no request of it is left to ask. */
struct sasl_pending_audit {
    struct plugin_host *host; /* NULL: nothing to audit */
    uint64_t connection_id;
    char client_host[64];
    uint16_t client_port;
    char client_id[256];
    char listener_name[64];
    const char *security_protocol; /* a static name */
    char principal_type[64];
    char principal_name[SASL_USER_MAX];
};

/* One connection's SASL state, in its net auth_state slot. Touched only by
 * the handler of the connection's in-flight request. */
struct sasl_conn {
    enum sasl_phase phase;
    int16_t handshake_version;
    bool reauthenticating;              /* this exchange is a KIP-368 re-authentication */
    bool refused;                       /* refused and audited; the client still owes its last token */
    char mechanism[SASL_MECHANISM_MAX]; /* chosen by the last SaslHandshake */
    char user[SASL_USER_MAX];           /* named by the client during the exchange */
    /* The authenticated session (phase AUTHENTICATED, or being re-authenticated). */
    char session_principal[SASL_PRINCIPAL_MAX];
    char session_mechanism[SASL_MECHANISM_MAX];
    /* The mechanism's exchange in progress; at most one is set. */
    struct scram_server *scram;
    struct loaded_plugin *plugin;
    void *plugin_session;
    struct sasl_pending_audit pending; /* an exchange that went on past a token */
};

/* REFUSED: failed, but out is a last challenge the client answers before
 * the exchange ends (the plugin's CAIRN_SASL_FAILED with a token). */
enum sasl_step_outcome { SASL_STEP_CONTINUE = 1, SASL_STEP_DONE = 2, SASL_STEP_FAILED = 3, SASL_STEP_REFUSED = 4 };

/* What one token did. out/out_len stay valid until sasl_step_release. */
struct sasl_step {
    enum sasl_step_outcome outcome;
    const uint8_t *out;
    size_t out_len;
    void (*release)(void *ctx);
    void *release_ctx;
    char user[SASL_USER_MAX];  /* authenticated (DONE) or attempted, "" unknown */
    char principal_type[64];   /* "" means User */
    int64_t lifetime_ms;       /* a limit the mechanism sets (0: none) */
    char client_message[1300]; /* sent to the client on failure; "" for Kafka's generic one */
    char reason[1300];         /* for the log and the audit */
};

/* True when the core or a loaded plugin serves the mechanism. */
bool sasl_mech_served(const struct handler_env *env, const char *mechanism);
/* Feeds one client token to st->mechanism, starting the exchange on the
 * first token. Fills step. */
void sasl_mech_step(struct request_context *ctx, struct sasl_conn *st, const uint8_t *in, size_t in_len,
                    struct sasl_step *step);
/* Gives back the step's output buffer. */
void sasl_step_release(struct sasl_step *step);
/* Ends the exchange in progress, if any (frees its state). */
void sasl_mech_end(struct sasl_conn *st);

#endif
