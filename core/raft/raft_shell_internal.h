/* Shared by raft_shell.c (the raft thread) and raft_shell_wire.c (frames
 * in and out). */
#ifndef CAIRN_RAFT_RAFT_SHELL_INTERNAL_H
#define CAIRN_RAFT_RAFT_SHELL_INTERNAL_H

#include <pthread.h>
#include <uv.h>

#include "net/client.h"
#include "metadata/metadata_snapshot.h"
#include "raft/raft_codec.h"
#include "raft/raft_shell.h"

enum shell_item_kind {
    ITEM_REQUEST,          /* msg: a request for the core; net answered with its response */
    ITEM_DESCRIBE,         /* net: a DescribeQuorum request, answered from the core's state */
    ITEM_RESPONSE,         /* msg: another voter's answer to the core's request */
    ITEM_REQUEST_FAILED,   /* msg: the core's request, which will get no answer */
    ITEM_APPEND,           /* append: raft_shell_append waiting for the raft thread */
    ITEM_SNAPSHOT_CHUNK,   /* chunk: a FetchSnapshot answer (or failure) */
    ITEM_SNAPSHOT_WRITTEN, /* the metadata snapshot writer made a new snapshot */
};

/* One FetchSnapshot answer for the download in progress. */
struct shell_chunk {
    uint64_t seq;       /* the download it belongs to */
    int16_t error_code; /* -1: the request failed (why) */
    char why[200];
    struct metadata_snapshot_id id;
    int64_t size;
    int64_t position;
    uint8_t *data; /* owned */
    int32_t len;
};

/* The snapshot being downloaded (raft thread only). */
struct shell_download {
    bool active;
    struct metadata_snapshot_id id;
    int32_t leader;
    int64_t position; /* bytes written so far */
    int fd;
    char part_path[PATH_MAX];
    uint64_t seq;
    int chunks;
    int64_t started_ms;
};

/* The frame a response goes back in. */
struct shell_reply_to {
    struct net_request *net;
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id; /* the wire's */
};

struct shell_append {
    const struct raft_shell_record *records;
    int32_t count;
    int32_t want_epoch; /* -1: any */
    int rc;
    int32_t epoch;
    int64_t last_offset;
    bool done;
};

/* One handover to the raft thread; owned by the inbox, then by it. */
struct shell_item {
    enum shell_item_kind kind;
    struct shell_item *next;
    struct raft_msg msg;
    struct shell_reply_to reply;
    struct shell_append *append;
    struct shell_chunk *chunk;
};

/* An inbound request the core has not answered yet. */
struct shell_pending {
    struct shell_reply_to reply;
    int32_t src;
    int32_t local_correlation; /* what the core sees as the request's */
    int32_t max_bytes;         /* a Fetch's record budget */
    int64_t received_ms;
};

struct raft_shell {
    struct raft_shell_config cfg;
    struct raft_node *node; /* raft thread only, once started */
    struct net_client *client;

    uv_loop_t loop;
    uv_timer_t timer;
    uv_async_t wake;
    uv_thread_t thread;
    bool thread_started;

    /* Guards the inbox, stopping and status. */
    pthread_mutex_t mu;
    pthread_cond_t appended; /* an ITEM_APPEND is done */
    struct shell_item *head, *tail;
    bool stopping;
    struct raft_shell_status status;
    /* When a repeated error line was last logged (shell_log_now). */
    int64_t voter_set_request_ms;  /* a quorum request from outside the voters */
    int64_t voter_set_answer_ms;   /* INCONSISTENT_VOTER_SET came back */
    int64_t cluster_id_refused_ms; /* a request of another cluster came in */
    int64_t cluster_id_answer_ms;  /* another cluster answered ours */
    /* Controller endpoints learned from Fetch answers' NodeEndpoints: how
     * an observer given only bootstrap servers reaches the leader. */
    struct raft_codec_endpoint learned[RAFT_MAX_VOTERS];
    int n_learned;

    /* raft thread only */
    struct shell_pending *pending;
    size_t n_pending, cap_pending;
    int32_t next_local_correlation;
    bool store_failed;
    bool store_resigned;       /* resigned the leadership once the store failed */
    struct raft_entry scratch; /* raft_shell_entry's answer, read from the store */
    struct shell_download download;
    int64_t next_clean_ms;
};

/* raft_shell_wire.c */
/* Writes a whole response frame (size, header, body) for reply; body_fn
 * writes the body. Completes reply->net (closing the connection when the
 * body does not encode). */
typedef int (*shell_body_fn)(struct kafka_writer *w, int16_t version, const void *arg);
void shell_respond(const struct shell_reply_to *reply, shell_body_fn body_fn, const void *arg);
void shell_close(struct net_request *net);
/* raft_shell_snapshot.c: answers a FetchSnapshot request on the io thread. */
void shell_serve_fetch_snapshot(struct raft_shell *s, const struct shell_reply_to *reply, const uint8_t *body,
                                size_t len);
/* Sends the core's request m (copied) to m->dst through the client. */
void shell_send_request(struct raft_shell *s, const struct raft_msg *m);

/* Learns where node ep->node_id listens from a Fetch answer (any thread):
 * the quorum's client reaches it there from now on. Voters of the static
 * configuration keep their configured addresses. */
void shell_learn_endpoint(struct raft_shell *s, const struct raft_codec_endpoint *ep);

/* True at most every 5 s per slot: a peer that keeps sending the same bad
 * request gets one log line, not one per request. Any thread. */
bool shell_log_now(struct raft_shell *s, int64_t *last_ms);
/* Logs that another node's voter set disagrees with this one's, at most
 * every few seconds. Any thread. */
void shell_voter_set_mismatch(struct raft_shell *s, int64_t *last_ms, const char *what, int32_t other);

/* raft_shell_read.c: the log's bytes, read back from the store (the core
 * keeps headers only). */
/* Every entry's header (data NULL) from start, read in bounded chunks; *entries_out
 * is malloc'd. Returns 0, or -1 with err. */
int shell_load_headers(struct raft_shell *s, int64_t start, struct raft_entry **entries_out, int64_t *n_out, char *err,
                       size_t errlen);
/* The core's fetch answer m (headers only) with its entries' bytes read
 * from the store, within max_bytes (at least one entry); filled owns its
 * records (raft_msg_clear). Returns 0, or -1 with filled holding none. */
int shell_fill_fetch(struct raft_shell *s, const struct raft_msg *m, int32_t max_bytes, struct raft_msg *filled);
/* The entry of header with its bytes, valid until the next call; NULL
 * (logged) when the store cannot give it. */
const struct raft_entry *shell_entry_from_store(struct raft_shell *s, const struct raft_entry *header);

/* raft_shell_catch_up.c (raft thread) */
/* Cleans the log behind the newest snapshot once retention says so. */
void shell_maybe_clean(struct raft_shell *s, int64_t now);
/* RAFT_OUT_FETCH_SNAPSHOT: starts downloading snapshot (end_offset, epoch). */
void shell_download_start(struct raft_shell *s, int64_t end_offset, int32_t epoch, int32_t leader);
void shell_download_chunk(struct raft_shell *s, struct shell_chunk *chunk);
void shell_download_abort(struct raft_shell *s, const char *why);
void shell_chunk_free(struct shell_chunk *chunk);
/* At start: deletes the .download files a crash left behind. */
void shell_download_remove_leftovers(struct raft_shell *s);

/* raft_shell.c */
/* Hands an item to the raft thread; false (item untouched) once stopping. */
bool shell_enqueue(struct raft_shell *s, struct shell_item *item);

#endif
