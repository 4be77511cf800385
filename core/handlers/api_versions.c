/* ApiVersions: the versions this broker serves, exactly as implemented, and
 * the features (KIP-584) it supports and the cluster has finalized. */
#include "handlers/handler_util.h"
#include "metadata/metadata_builder.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"

#define METADATA_VERSION_FEATURE "metadata.version"

/* What this build can run: metadata.version exactly the level it writes (no
 * downgrade path exists), ELR off (0) or on (1). */
struct supported_feature {
    const char *name;
    int16_t min_version;
    int16_t max_version;
};

static const struct supported_feature supported_features[] = {
    {METADATA_VERSION_FEATURE, METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL},
    {METADATA_ELR_FEATURE, 0, 1},
};

#define SUPPORTED_FEATURE_COUNT ((int)(sizeof supported_features / sizeof supported_features[0]))

static int fill_supported_features(struct request_context *ctx, struct api_versions_response *resp)
{
    HANDLER_NEW_ARRAY(ctx, resp->supported_features, SUPPORTED_FEATURE_COUNT,
                      api_versions_response_supported_feature_key_init);
    if (!resp->supported_features)
        return -1;
    for (int i = 0; i < SUPPORTED_FEATURE_COUNT; i++) {
        struct api_versions_response_supported_feature_key *k = &resp->supported_features[i];
        k->name = kafka_str_from_cstr(supported_features[i].name);
        /* Before v4 a client cannot take a minimum of 0 (KAFKA-17011):
         * Kafka reports 1 there instead of leaving the feature out. */
        k->min_version = supported_features[i].min_version;
        if (ctx->api_version < 4 && k->min_version < 1)
            k->min_version = 1;
        k->max_version = supported_features[i].max_version;
    }
    resp->supported_features_count = SUPPORTED_FEATURE_COUNT;
    return 0;
}

/* Finalized levels come from the metadata log; a level of 0 is not listed,
 * and the epoch is the offset of the image they were read from, as in
 * KRaft. */
static int fill_finalized_features(struct request_context *ctx, struct api_versions_response *resp)
{
    resp->finalized_features_epoch = -1;
    resp->finalized_features_count = 0;
    if (!ctx->env || !ctx->env->metadata)
        return 0;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return -1;
    const char *names[2];
    int16_t levels[2];
    int n = 0;
    if (img->metadata_version > 0) {
        names[n] = METADATA_VERSION_FEATURE;
        levels[n++] = img->metadata_version;
    }
    if (img->elr_version > 0) {
        names[n] = METADATA_ELR_FEATURE;
        levels[n++] = img->elr_version;
    }
    int64_t epoch = img->last_offset;
    metadata_image_release(img);

    HANDLER_NEW_ARRAY(ctx, resp->finalized_features, n, api_versions_response_finalized_feature_key_init);
    if (!resp->finalized_features)
        return -1;
    for (int i = 0; i < n; i++) {
        resp->finalized_features[i].name = kafka_str_from_cstr(names[i]);
        resp->finalized_features[i].min_version_level = levels[i];
        resp->finalized_features[i].max_version_level = levels[i];
    }
    resp->finalized_features_count = n;
    resp->finalized_features_epoch = epoch;
    return 0;
}

enum handler_result handle_api_versions(struct request_context *ctx, void *request, void *response)
{
    (void)request;
    struct api_versions_response *resp = response;
    int n;
    const struct api_handler_entry *table = handlers_table(&n);
    HANDLER_NEW_ARRAY(ctx, resp->api_keys, n, api_versions_response_api_version_init);
    if (!resp->api_keys)
        return HANDLER_CLOSE;
    resp->api_keys_count = n;
    for (int i = 0; i < n; i++) {
        resp->api_keys[i].api_key = table[i].api_key;
        resp->api_keys[i].min_version = table[i].min_version;
        resp->api_keys[i].max_version = table[i].max_version;
    }
    /* The feature fields are tagged fields of v3+; older versions drop them
     * when encoding. */
    if (ctx->api_version >= 3 && (fill_supported_features(ctx, resp) != 0 || fill_finalized_features(ctx, resp) != 0))
        return HANDLER_CLOSE;
    resp->error_code = KAFKA_ERR_NONE;
    return HANDLER_RESPOND;
}
