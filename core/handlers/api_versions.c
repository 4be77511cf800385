/* ApiVersions: the versions this broker serves, exactly as implemented. */
#include "handlers/handler_util.h"

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
    resp->error_code = KAFKA_ERR_NONE;
    return HANDLER_RESPOND;
}
