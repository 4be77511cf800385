/* The quota feed: hands the metadata image's client quotas to the plugins
 * that subscribed through the quota host service
 * (cairn_host.quota_subscribe), the whole set once and again whenever a
 * published image changes it.
 *
 * Thread-safety: start and stop run on the main thread (start before the
 * listeners open, stop before plugin_host_stop); sets are delivered on the
 * thread that publishes a metadata image. */
#ifndef CAIRN_SERVER_QUOTA_FEED_H
#define CAIRN_SERVER_QUOTA_FEED_H

struct metadata_store;
struct plugin_host;
struct quota_feed;

/* *out is NULL (and 0 returned) when no plugin subscribed. -1 on allocation failure. */
int quota_feed_start(struct metadata_store *store, struct plugin_host *plugins, struct quota_feed **out);
void quota_feed_stop(struct quota_feed *feed);

#endif
