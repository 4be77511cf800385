/* metadata_log_ops (metadata/metadata_log.h) over the networked quorum:
 * the controller appends at the leader and every node's listener hears of
 * each committed entry once the high watermark passes it, in offset order,
 * on the raft thread.
 *
 * Use: create, register the listener through the ops, put
 * raft_shell_metadata_listener() into the shell's config, start the shell,
 * then attach it. leader_epoch is -1 away from the leader and, at a new
 * leader, until the listener has heard of every entry the log holds;
 * append away from the leader returns METADATA_LOG_NOT_LEADER.
 *
 * Snapshots (KIP-630): with a directory set, create_snapshot writes
 * <end offset>-<epoch>.checkpoint files beside the quorum's log segments
 * (keeping the newest METADATA_SNAPSHOTS_KEPT), and register_listener
 * hands the newest readable one to the listener, whose commits then start
 * at its end offset.
 *
 * Thread-safety: append, leader_epoch and end_offset from any thread but
 * the raft thread; commits are delivered on the raft thread. */
#ifndef CAIRN_RAFT_RAFT_SHELL_METADATA_H
#define CAIRN_RAFT_RAFT_SHELL_METADATA_H

#include "metadata/metadata_log.h"
#include "raft/raft_shell.h"

struct raft_shell_metadata;

extern const struct metadata_log_ops raft_shell_metadata_ops;

struct raft_shell_metadata *raft_shell_metadata_create(void);
/* Before registering the listener: the directory the quorum's store was
 * opened on (raft_shell_disk_store_open); snapshots live in its
 * __cluster_metadata-0. Returns 0, or -1 with err. */
int raft_shell_metadata_set_dir(struct raft_shell_metadata *log, const char *dir, char *err, size_t errlen);
/* The shell listener that delivers commits to the metadata listener. */
struct raft_shell_listener raft_shell_metadata_listener(struct raft_shell_metadata *log);
void raft_shell_metadata_attach(struct raft_shell_metadata *log, struct raft_shell *shell);
/* The quorum's leader as this node knows it, -1 when none (or not started). */
int32_t raft_shell_metadata_leader_id(struct raft_shell_metadata *log);
/* Where the controller node_id (the leader, usually) listens, as the
 * quorum knows it (raft_shell_node_endpoint): true with host and *port
 * filled; false when unknown or not started. Any thread. */
bool raft_shell_metadata_node_endpoint(struct raft_shell_metadata *log, int32_t node_id, char *host, size_t hostlen,
                                       int *port);
/* After the shell has stopped. */
void raft_shell_metadata_destroy(struct raft_shell_metadata *log);

#endif
