/* The quota host service of ABI 1.2: plugins subscribe to the client
 * quotas set at run time; the server attaches the metadata feed, which
 * hands every listener the whole set at first and after each change. All
 * under quota_lock, so deliveries never overlap. */
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_internal.h"

#define QUOTA_LISTENER_V1_2_SIZE (offsetof(struct cairn_quota_listener, on_quotas) + sizeof(void (*)(void)))

int plugin_quota_subscribe(void *ctx, const struct cairn_quota_listener *listener)
{
    struct loaded_plugin *p = ctx;
    if (!p || !listener || listener->struct_size < QUOTA_LISTENER_V1_2_SIZE || !listener->on_quotas)
        return CAIRN_INVALID;
    struct plugin_host *host = p->owner;
    /* A listener from a later minor may be larger: keep what this host knows. */
    struct cairn_quota_listener known;
    memset(&known, 0, sizeof known);
    memcpy(&known, listener, listener->struct_size < sizeof known ? listener->struct_size : sizeof known);
    int rc = CAIRN_OK;
    pthread_mutex_lock(&host->quota_lock);
    size_t n = host->quota_listener_count;
    struct cairn_quota_listener *grown = realloc(host->quota_listeners, (n + 1) * sizeof(*grown));
    if (grown) {
        host->quota_listeners = grown;
        grown[n] = known;
        host->quota_listener_count = n + 1;
        if (host->quota_snapshot)
            host->quota_snapshot(host->quota_snapshot_ctx, &grown[n]);
    } else {
        rc = CAIRN_ERROR;
    }
    pthread_mutex_unlock(&host->quota_lock);
    return rc;
}

void plugin_host_attach_quotas(struct plugin_host *host, plugin_quota_snapshot_fn snapshot, void *ctx)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->quota_lock);
    host->quota_snapshot = snapshot;
    host->quota_snapshot_ctx = ctx;
    for (size_t i = 0; snapshot && i < host->quota_listener_count; i++)
        snapshot(ctx, &host->quota_listeners[i]);
    pthread_mutex_unlock(&host->quota_lock);
}

void plugin_host_detach_quotas(struct plugin_host *host)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->quota_lock);
    host->quota_snapshot = NULL;
    host->quota_snapshot_ctx = NULL;
    host->quota_listener_count = 0;
    pthread_mutex_unlock(&host->quota_lock);
}

void plugin_host_publish_quotas(struct plugin_host *host, const struct cairn_client_quota *const *quotas, size_t count)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->quota_lock);
    if (host->quota_snapshot)
        for (size_t i = 0; i < host->quota_listener_count; i++)
            host->quota_listeners[i].on_quotas(host->quota_listeners[i].arg, quotas, count);
    pthread_mutex_unlock(&host->quota_lock);
}

bool plugin_host_wants_quotas(struct plugin_host *host)
{
    if (!host)
        return false;
    pthread_mutex_lock(&host->quota_lock);
    bool wants = host->quota_listener_count > 0;
    pthread_mutex_unlock(&host->quota_lock);
    return wants;
}
