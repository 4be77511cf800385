/* The ACL feed: hands the metadata image's ACL bindings to the plugins
 * that subscribed through the ACL host service (cairn_host.acl_subscribe),
 * all of them once, then each change as the image catches up.
 *
 * Thread-safety: start and stop run on the main thread (start before the
 * listeners open, stop before plugin_host_stop); changes are delivered on
 * the thread that publishes a metadata image. */
#ifndef CAIRN_SERVER_ACL_FEED_H
#define CAIRN_SERVER_ACL_FEED_H

struct metadata_store;
struct plugin_host;
struct acl_feed;

/* *out is NULL (and 0 returned) when no plugin subscribed. -1 on allocation failure. */
int acl_feed_start(struct metadata_store *store, struct plugin_host *plugins, struct acl_feed **out);
void acl_feed_stop(struct acl_feed *feed);

#endif
