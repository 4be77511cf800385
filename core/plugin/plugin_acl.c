/* The ACL host service of ABI 1.1: plugins subscribe to the cluster's ACL
 * bindings; the server attaches the metadata feed, which hands each
 * listener every binding once and then each change. */
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_internal.h"

#define LISTENER_V1_1_SIZE (offsetof(struct cairn_acl_listener, on_acls) + sizeof(void (*)(void)))

int plugin_acl_subscribe(void *ctx, const struct cairn_acl_listener *listener)
{
    struct loaded_plugin *p = ctx;
    if (!p || !listener || listener->struct_size < LISTENER_V1_1_SIZE || !listener->on_acls)
        return CAIRN_INVALID;
    struct plugin_host *host = p->owner;
    pthread_mutex_lock(&host->acl_lock);
    struct plugin_acl_listener *grown = realloc(host->acl_listeners,
                                                (host->acl_listener_count + 1) * sizeof(*host->acl_listeners));
    if (!grown) {
        pthread_mutex_unlock(&host->acl_lock);
        return CAIRN_ERROR;
    }
    host->acl_listeners = grown;
    struct plugin_acl_listener *l = &grown[host->acl_listener_count++];
    memset(l, 0, sizeof(*l));
    l->plugin = p;
    /* A listener from a later minor may be larger: keep what this host knows. */
    memcpy(&l->listener, listener,
           listener->struct_size < sizeof(l->listener) ? listener->struct_size : sizeof(l->listener));
    if (host->acl_snapshot)
        host->acl_snapshot(host->acl_snapshot_ctx, &l->listener);
    pthread_mutex_unlock(&host->acl_lock);
    return CAIRN_OK;
}

void plugin_host_attach_acls(struct plugin_host *host, plugin_acl_snapshot_fn snapshot, void *ctx)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->acl_lock);
    host->acl_snapshot = snapshot;
    host->acl_snapshot_ctx = ctx;
    for (size_t i = 0; i < host->acl_listener_count; i++)
        snapshot(ctx, &host->acl_listeners[i].listener);
    pthread_mutex_unlock(&host->acl_lock);
}

void plugin_host_detach_acls(struct plugin_host *host)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->acl_lock);
    host->acl_snapshot = NULL;
    host->acl_snapshot_ctx = NULL;
    host->acl_listener_count = 0;
    pthread_mutex_unlock(&host->acl_lock);
}

void plugin_host_publish_acls(struct plugin_host *host, const struct cairn_acl_binding *const *added,
                              size_t added_count, const struct cairn_acl_binding *const *removed, size_t removed_count)
{
    if (!host)
        return;
    pthread_mutex_lock(&host->acl_lock);
    for (size_t i = 0; host->acl_snapshot && i < host->acl_listener_count; i++) {
        const struct cairn_acl_listener *l = &host->acl_listeners[i].listener;
        l->on_acls(l->arg, false, added, added_count, removed, removed_count);
    }
    pthread_mutex_unlock(&host->acl_lock);
}

bool plugin_host_wants_acls(struct plugin_host *host)
{
    if (!host)
        return false;
    pthread_mutex_lock(&host->acl_lock);
    bool wants = host->acl_listener_count > 0;
    pthread_mutex_unlock(&host->acl_lock);
    return wants;
}
