/* The SASL mechanisms behind SaslAuthenticate: SCRAM-SHA-256/512 served by
 * the core against the credentials in the metadata image, and whatever an
 * authentication plugin serves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "handlers/sasl_internal.h"
#include "metadata/metadata_store.h"
#include "sasl/scram.h"

bool sasl_mech_served(const struct handler_env *env, const char *mechanism)
{
    return scram_mechanism_from_name(mechanism) != SCRAM_UNKNOWN ||
           plugin_host_sasl_plugin(env->plugins, mechanism) != NULL;
}

/* The credential of (user, mechanism) from the current image; false when
 * the user has none. */
static bool scram_lookup(struct metadata_store *store, const char *user, int mechanism, struct scram_credential *out)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    const struct metadata_scram *c = metadata_image_scram(img, user, (int8_t)mechanism);
    bool found = c && c->key_len == (int32_t)scram_key_len(mechanism) && c->salt_len <= SCRAM_MAX_SALT;
    if (found) {
        memset(out, 0, sizeof *out);
        out->mechanism = mechanism;
        memcpy(out->salt, c->salt, (size_t)c->salt_len);
        out->salt_len = (size_t)c->salt_len;
        memcpy(out->stored_key, c->stored_key, (size_t)c->key_len);
        memcpy(out->server_key, c->server_key, (size_t)c->key_len);
        out->iterations = c->iterations;
    }
    metadata_image_release(img);
    return found;
}

static void scram_step(struct request_context *ctx, struct sasl_conn *st, const uint8_t *in, size_t in_len,
                       struct sasl_step *step)
{
    int mechanism = scram_mechanism_from_name(st->mechanism);
    step->outcome = SASL_STEP_FAILED;
    if (!st->scram) {
        st->scram = scram_server_new(mechanism);
        if (!st->scram) {
            snprintf(step->reason, sizeof step->reason, "out of memory");
            return;
        }
        const char *user = NULL;
        if (scram_server_parse_first(st->scram, in, in_len, &user, step->reason, sizeof step->reason) != 0)
            return;
        snprintf(st->user, sizeof st->user, "%s", user);
        snprintf(step->user, sizeof step->user, "%s", user);
        struct scram_credential cred;
        if (!scram_lookup(ctx->env->metadata, user, mechanism, &cred)) {
            snprintf(step->reason, sizeof step->reason, "no %s credential for user '%.200s'", st->mechanism, user);
            return;
        }
        if (scram_server_challenge(st->scram, &cred, &step->out, &step->out_len, step->reason, sizeof step->reason) ==
            0)
            step->outcome = SASL_STEP_CONTINUE;
        return;
    }
    snprintf(step->user, sizeof step->user, "%s", st->user);
    if (scram_server_finish(st->scram, in, in_len, &step->out, &step->out_len, step->reason, sizeof step->reason) ==
        SCRAM_STEP_DONE)
        step->outcome = SASL_STEP_DONE;
}

/* A mechanism of an authentication plugin: its session starts with the
 * first token; its error text is what the client reads. */
static void plugin_step(struct request_context *ctx, struct sasl_conn *st, const uint8_t *in, size_t in_len,
                        struct sasl_step *step)
{
    step->outcome = SASL_STEP_FAILED;
    char err[256] = "";
    if (!st->plugin) {
        struct loaded_plugin *p = plugin_host_sasl_plugin(ctx->env->plugins, st->mechanism);
        if (!p) {
            snprintf(step->reason, sizeof step->reason, "mechanism %s is not served", st->mechanism);
            return;
        }
        if (plugin_host_sasl_start(p, st->mechanism, handler_request_info(ctx), &st->plugin_session, err, sizeof err) !=
            CAIRN_OK) {
            snprintf(step->reason, sizeof step->reason, "the plugin did not start the exchange: %s", err);
            return;
        }
        st->plugin = p;
    }
    struct cairn_bytes_out out;
    struct cairn_principal_out principal;
    int rc = plugin_host_sasl_step(st->plugin, st->plugin_session, in, in_len, &out, &principal, err, sizeof err);
    step->out = out.data;
    step->out_len = out.data ? out.len : 0;
    step->release = out.release;
    step->release_ctx = out.ctx;
    if (rc == CAIRN_SASL_CONTINUE) {
        step->outcome = SASL_STEP_CONTINUE;
    } else if (rc == CAIRN_SASL_DONE && principal.name[0] && memchr(principal.name, '\0', sizeof principal.name) &&
               memchr(principal.type, '\0', sizeof principal.type)) {
        step->outcome = SASL_STEP_DONE;
        snprintf(step->user, sizeof step->user, "%s", principal.name);
        snprintf(step->principal_type, sizeof step->principal_type, "%s", principal.type);
        step->lifetime_ms = principal.session_lifetime_ms > 0 ? principal.session_lifetime_ms : 0;
    } else {
        const char *why = rc == CAIRN_SASL_DONE ? "the plugin named no principal" : err[0] ? err : "refused";
        snprintf(step->reason, sizeof step->reason, "%s", why);
        snprintf(step->client_message, sizeof step->client_message, "%s", why);
        /* The identity the client claimed, for the audit of the refusal. */
        if (rc == CAIRN_SASL_FAILED && principal.name[0] && memchr(principal.name, '\0', sizeof principal.name) &&
            memchr(principal.type, '\0', sizeof principal.type)) {
            snprintf(step->user, sizeof step->user, "%s", principal.name);
            snprintf(step->principal_type, sizeof step->principal_type, "%s", principal.type);
        }
        if (rc == CAIRN_SASL_FAILED && step->out_len > 0)
            step->outcome = SASL_STEP_REFUSED;
    }
}

void sasl_mech_step(struct request_context *ctx, struct sasl_conn *st, const uint8_t *in, size_t in_len,
                    struct sasl_step *step)
{
    if (scram_mechanism_from_name(st->mechanism) != SCRAM_UNKNOWN)
        scram_step(ctx, st, in, in_len, step);
    else
        plugin_step(ctx, st, in, in_len, step);
}

void sasl_step_release(struct sasl_step *step)
{
    if (step->release)
        step->release(step->release_ctx);
    step->release = NULL;
    step->out = NULL;
    step->out_len = 0;
}

void sasl_mech_end(struct sasl_conn *st)
{
    scram_server_free(st->scram);
    st->scram = NULL;
    if (st->plugin)
        plugin_host_sasl_end(st->plugin, st->plugin_session);
    st->plugin = NULL;
    st->plugin_session = NULL;
}
