/* What cli/consume.c and cli/consume_group.c share: the consumer's
 * flags and state. Main thread only. */
#ifndef CAIRN_CLI_CONSUME_H
#define CAIRN_CLI_CONSUME_H

#include <signal.h>

#include "cli.h"

enum start_kind { START_DEFAULT, START_EARLIEST, START_LATEST, START_AT, START_FROM_END, START_TIMESTAMP };

/* Flags; plain data on the main thread's stack. */
struct consume_args {
    long long partition; /* -1: all */
    enum start_kind start;
    long long start_value;
    long long count; /* -1: no limit */
    bool exit_at_end;
    const char *format; /* NULL: json or the default */
    bool json;
    int8_t isolation;
    const char *group;
    const char *group_instance_id; /* NULL: a dynamic member */
    bool debug_group;              /* debug=cgrp: each join printed on stderr */
    /* Group membership timing (cli_settings, librdkafka's names). */
    int32_t session_timeout_ms, heartbeat_interval_ms, rebalance_timeout_ms, commit_interval_ms;
};

/* One partition being read. */
struct part {
    int32_t id;
    int64_t position;  /* next offset to print */
    int64_t end;       /* high watermark (read_committed: last stable offset) of the last answer */
    int64_t committed; /* the group's offset as last committed or fetched; -1 none */
    int32_t max_bytes;
    bool at_end;
};

/* The consumer; main thread only. */
struct consumer {
    struct cli_conn *c;
    struct cli_topic_info t;
    const struct consume_args *a;
    struct part *parts;
    int nparts, parts_cap;
    long long printed;
    int32_t coordinator;
    uint8_t *inflated;
    size_t inflated_cap;
    int64_t last_commit_ms;
    /* --group: this process as a member of the group (consume_member.c). */
    bool member; /* joined (a generation and an assignment) */
    bool rejoin; /* the coordinator asked for a rebalance */
    char member_id[512];
    int32_t generation;
    int64_t last_heartbeat_ms, last_heartbeat_ok_ms;
    bool static_unsupported; /* the coordinator speaks JoinGroup below v5 (KIP-345) */
};

/* The member's group.instance.id as a wire string (null when dynamic). */
struct kafka_str cli_consume_instance_id(const struct consumer *k);
/* What to do about FENCED_INSTANCE_ID (a static buffer). */
const char *cli_consume_fenced_hint(const struct consumer *k);

/* Set by SIGINT/SIGTERM: the read ends, the positions committed. */
extern volatile sig_atomic_t cli_consume_stop;

/* The part of k reading partition id, or NULL. */
struct part *cli_consume_part(struct consumer *k, int32_t id);
/* The group's committed offsets (FindCoordinator, OffsetFetch): each
 * part's committed, and its position when no start was given. Returns 0
 * or an exit code (message printed). */
int cli_consume_fetch_committed(struct consumer *k);
/* OffsetCommit of every position that moved (nothing without --group).
 * Returns 0 or an exit code (message printed). */
int cli_consume_commit(struct consumer *k);
/* Positions for parts without one (position < 0) from the start flags
 * (ListOffsets). Returns 0 or an exit code (message printed). */
int cli_consume_start_positions(struct consumer *k);

/* ---- consume_member.c: --group as a member of the group ---- */

/* Joins the group (FindCoordinator, JoinGroup, SyncGroup; the leader
 * assigns with the range assignor) and sets k->parts to the assignment,
 * each at its committed offset or the start flags. Returns 0 or an exit
 * code (message printed). */
int cli_consume_member_join(struct consumer *k);
/* Between fetches: heartbeats when due, commits when due, and on a
 * rebalance commits and joins again. Returns 0 or an exit code. */
int cli_consume_member_poll(struct consumer *k);
/* Commits the positions and leaves the group; a static member
 * (group.instance.id) only commits, keeping its partitions until
 * session.timeout.ms, as Kafka's consumer does. Returns 0 or an exit code. */
int cli_consume_member_leave(struct consumer *k);

#endif
