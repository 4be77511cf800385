/* DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554):
 * SCRAM credentials kept in the metadata log, with Kafka's per-user
 * results and error codes. The request carries the salted password; the
 * broker derives and stores StoredKey and ServerKey, never the password. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "sasl/scram.h"
#include "util/logger.h"

static bool str_eq(struct kafka_str a, struct kafka_str b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.data, b.data, (size_t)a.len) == 0);
}

static char *arena_cstr(struct request_context *ctx, struct kafka_str s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = kafka_arena_alloc(&ctx->arena, n + 1);
    if (p) {
        if (n)
            memcpy(p, s.data, n);
        p[n] = '\0';
    }
    return p;
}

static void describe_user(struct request_context *ctx, const struct metadata_image *img, const char *name,
                          struct describe_user_scram_credentials_response_describe_user_scram_credentials_result *r)
{
    r->user = kafka_arena_strdup(&ctx->arena, name);
    int32_t n = 0;
    const struct metadata_scram *found[2];
    for (int8_t mech = SCRAM_SHA_256; mech <= SCRAM_SHA_512; mech++)
        if ((found[n] = metadata_image_scram(img, name, mech)) != NULL)
            n++;
    if (n == 0) {
        r->error_code = KAFKA_ERR_RESOURCE_NOT_FOUND;
        char msg[600];
        snprintf(msg, sizeof msg, "Attempt to describe a user credential that does not exist: %.512s", name);
        r->error_message = kafka_arena_strdup(&ctx->arena, msg);
        return;
    }
    HANDLER_NEW_ARRAY(ctx, r->credential_infos, n, describe_user_scram_credentials_response_credential_info_init);
    if (!r->credential_infos) {
        r->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        r->credential_infos[i].mechanism = found[i]->mechanism;
        r->credential_infos[i].iterations = found[i]->iterations;
    }
    r->credential_infos_count = n;
}

enum handler_result handle_describe_user_scram_credentials(struct request_context *ctx, void *request, void *response)
{
    struct describe_user_scram_credentials_request *req = request;
    struct describe_user_scram_credentials_response *resp = response;
    if (!handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE, true)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    /* No users named: every user with a credential, once. */
    bool all = req->users_count <= 0;
    int32_t cap = all ? img->scram_count : req->users_count;
    HANDLER_NEW_ARRAY(ctx, resp->results, cap,
                      describe_user_scram_credentials_response_describe_user_scram_credentials_result_init);
    if (!resp->results) {
        metadata_image_release(img);
        return HANDLER_CLOSE;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < cap; i++) {
        if (all) {
            if (i > 0 && strcmp(img->scrams[i].name, img->scrams[i - 1].name) == 0)
                continue;
            describe_user(ctx, img, img->scrams[i].name, &resp->results[n++]);
            continue;
        }
        struct kafka_str name = req->users[i].name;
        bool duplicate = false;
        for (int32_t j = 0; j < req->users_count; j++)
            duplicate |= j != i && str_eq(req->users[j].name, name);
        char *cname = arena_cstr(ctx, name);
        if (!cname) {
            metadata_image_release(img);
            return HANDLER_CLOSE;
        }
        if (duplicate) {
            /* Kafka answers a user named twice once, with this error. */
            bool first = true;
            for (int32_t j = 0; j < i; j++)
                first &= !str_eq(req->users[j].name, name);
            if (!first)
                continue;
            resp->results[n].user = kafka_arena_strdup(&ctx->arena, cname);
            resp->results[n].error_code = KAFKA_ERR_DUPLICATE_RESOURCE;
            resp->results[n++].error_message = kafka_str_from_cstr(
                "Cannot describe SCRAM credentials for the same user twice in a single request");
            continue;
        }
        describe_user(ctx, img, cname, &resp->results[n++]);
    }
    resp->results_count = n;
    metadata_image_release(img);
    return HANDLER_RESPOND;
}

/* One alteration of the request, flattened: deletions first, then upsertions. */
struct alteration {
    struct kafka_str name;
    int8_t mechanism;
    const struct alter_user_scram_credentials_request_scram_credential_upsertion *upsert; /* NULL: delete */
};

/* Kafka's checks of one alteration, apart from existence; NONE or an error with msg. */
static int16_t check_alteration(const struct alteration *a, const struct alteration *all, int32_t count,
                                const char **msg)
{
    for (int32_t j = 0; j < count; j++)
        if (&all[j] != a && str_eq(all[j].name, a->name) && all[j].mechanism == a->mechanism) {
            *msg = "A user credential cannot be altered twice in the same request";
            return KAFKA_ERR_DUPLICATE_RESOURCE;
        }
    if (a->name.len <= 0 || memchr(a->name.data, '\0', (size_t)a->name.len)) {
        *msg = "Username must not be empty";
        return KAFKA_ERR_UNACCEPTABLE_CREDENTIAL;
    }
    if (!scram_mechanism_name(a->mechanism)) {
        *msg = "Unknown SCRAM mechanism";
        return KAFKA_ERR_UNSUPPORTED_SASL_MECHANISM;
    }
    if (!a->upsert)
        return KAFKA_ERR_NONE;
    if (a->upsert->iterations < SCRAM_MIN_ITERATIONS) {
        *msg = "Too few iterations";
        return KAFKA_ERR_UNACCEPTABLE_CREDENTIAL;
    }
    if (a->upsert->iterations > SCRAM_MAX_ITERATIONS) {
        *msg = "Too many iterations";
        return KAFKA_ERR_UNACCEPTABLE_CREDENTIAL;
    }
    if (a->upsert->salt.len <= 0 || a->upsert->salt.len > SCRAM_MAX_SALT ||
        a->upsert->salted_password.len != (int32_t)scram_key_len(a->mechanism)) {
        *msg = "Salt or salted password of an unacceptable length";
        return KAFKA_ERR_UNACCEPTABLE_CREDENTIAL;
    }
    return KAFKA_ERR_NONE;
}

/* Builds the stored form of an upsertion in the arena; NULL on failure. */
static struct metadata_scram *stored_credential(struct request_context *ctx, const struct alteration *a,
                                                const char *name)
{
    const struct alter_user_scram_credentials_request_scram_credential_upsertion *u = a->upsert;
    struct scram_credential cred;
    if (scram_credential_from_salted(a->mechanism, u->salted_password.data, (size_t)u->salted_password.len,
                                     u->salt.data, (size_t)u->salt.len, u->iterations, &cred) != 0)
        return NULL;
    struct metadata_scram *m = kafka_arena_alloc(&ctx->arena, sizeof *m);
    uint8_t *salt = kafka_arena_alloc(&ctx->arena, cred.salt_len);
    if (!m || !salt)
        return NULL;
    memset(m, 0, sizeof *m);
    memcpy(salt, cred.salt, cred.salt_len);
    m->name = (char *)name;
    m->mechanism = a->mechanism;
    m->salt = salt;
    m->salt_len = (int32_t)cred.salt_len;
    m->key_len = (int32_t)scram_key_len(a->mechanism);
    memcpy(m->stored_key, cred.stored_key, (size_t)m->key_len);
    memcpy(m->server_key, cred.server_key, (size_t)m->key_len);
    m->iterations = u->iterations;
    return m;
}

enum handler_result handle_alter_user_scram_credentials(struct request_context *ctx, void *request, void *response)
{
    struct alter_user_scram_credentials_request *req = request;
    struct alter_user_scram_credentials_response *resp = response;
    int32_t count = (req->deletions_count > 0 ? req->deletions_count : 0) +
                    (req->upsertions_count > 0 ? req->upsertions_count : 0);
    struct alteration *alts = kafka_arena_alloc(&ctx->arena, (size_t)(count + 1) * sizeof *alts);
    struct metadata_scram_change *changes = kafka_arena_alloc(&ctx->arena, (size_t)(count + 1) * sizeof *changes);
    const char **messages = kafka_arena_alloc(&ctx->arena, (size_t)(count + 1) * sizeof *messages);
    HANDLER_NEW_ARRAY(ctx, resp->results, count,
                      alter_user_scram_credentials_response_alter_user_scram_credentials_result_init);
    if (!alts || !changes || !messages || !resp->results)
        return HANDLER_CLOSE;
    int32_t k = 0;
    for (int32_t i = 0; i < req->deletions_count; i++)
        alts[k++] = (struct alteration){req->deletions[i].name, req->deletions[i].mechanism, NULL};
    for (int32_t i = 0; i < req->upsertions_count; i++)
        alts[k++] = (struct alteration){req->upsertions[i].name, req->upsertions[i].mechanism, &req->upsertions[i]};

    bool allowed = handler_authorize_resource(ctx, CAIRN_OP_ALTER, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE,
                                              true);
    for (int32_t i = 0; i < count; i++) {
        messages[i] = NULL;
        changes[i] = (struct metadata_scram_change){arena_cstr(ctx, alts[i].name), alts[i].mechanism, NULL,
                                                    KAFKA_ERR_NONE};
        if (!changes[i].name)
            return HANDLER_CLOSE;
        changes[i].error_code = allowed ? check_alteration(&alts[i], alts, count, &messages[i])
                                        : KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        if (changes[i].error_code == KAFKA_ERR_NONE && alts[i].upsert) {
            changes[i].cred = stored_credential(ctx, &alts[i], changes[i].name);
            if (!changes[i].cred) {
                changes[i].error_code = KAFKA_ERR_UNACCEPTABLE_CREDENTIAL;
                messages[i] = "Could not derive the credential";
            }
        }
    }
    char err[256] = "";
    int16_t batch = allowed ? metadata_alter_scram(ctx->env->metadata, changes, count, err, sizeof err)
                            : KAFKA_ERR_NONE;
    /* One result per user, in the order users first appear; the first error wins. */
    int32_t n = 0;
    for (int32_t i = 0; i < count; i++) {
        int32_t r = 0;
        while (r < n && strcmp(resp->results[r].user.data, changes[i].name) != 0)
            r++;
        if (r == n) {
            resp->results[n].user = kafka_str_from_cstr(changes[i].name);
            resp->results[n++].error_code = batch;
            if (batch != KAFKA_ERR_NONE)
                resp->results[r].error_message = kafka_arena_strdup(&ctx->arena, err);
        }
        if (resp->results[r].error_code == KAFKA_ERR_NONE && changes[i].error_code != KAFKA_ERR_NONE) {
            resp->results[r].error_code = changes[i].error_code;
            if (!messages[i] && changes[i].error_code == KAFKA_ERR_RESOURCE_NOT_FOUND)
                messages[i] = "Attempt to delete a user credential that does not exist";
            if (messages[i])
                resp->results[r].error_message = kafka_str_from_cstr(messages[i]);
        }
    }
    resp->results_count = n;
    for (int32_t r = 0; r < n; r++) {
        handler_audit_admin(ctx, "AlterUserScramCredentials", CAIRN_RESOURCE_USER, resp->results[r].user.data,
                            resp->results[r].error_code, NULL);
        logger_info("sasl", "AlterUserScramCredentials for user '%s' from %s: error %d", resp->results[r].user.data,
                    ctx->net->peer, resp->results[r].error_code);
    }
    return HANDLER_RESPOND;
}
