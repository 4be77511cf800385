/* Delayed operations: requests that wait for something (data for a fetch
 * with min_bytes, replicas for acks=all) or for their deadline.
 *
 * Thread-safety: every function may be called from any thread. An
 * operation's try_complete runs with the operation's lock held, so it runs
 * for one caller at a time and never after it has returned true. */
#ifndef CAIRN_COORDINATOR_PURGATORY_H
#define CAIRN_COORDINATOR_PURGATORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct purgatory;
struct delayed_op;

/* Returns true when the operation completed (it has sent its response).
 * With expired=true it must complete. */
typedef bool (*delayed_op_try_complete)(struct delayed_op *op, bool expired);
/* Frees the operation's own state once nothing refers to it any more. */
typedef void (*delayed_op_free)(struct delayed_op *op);

/* Keys held inside the operation; more spill to the heap. */
#define DELAYED_OP_INLINE_KEYS 8

/* Embedded at the start of an operation's own struct. Owned by the purgatory
 * from purgatory_add until it completes; freed through free_fn. */
struct delayed_op {
    delayed_op_try_complete try_complete;
    delayed_op_free free_fn;
    int64_t deadline_mono_ms;
    /* Watch keys: opaque values (a partition log's address, say) whose
     * purgatory_notify makes this operation try again. Added with
     * delayed_op_watch; there is no limit on their number. */
    uintptr_t *watch_keys;
    int watch_key_count;
    /* private */
    int watch_key_cap;
    uintptr_t watch_inline_keys[DELAYED_OP_INLINE_KEYS];
    pthread_mutex_t lock;
    bool done;
    int refs;
    int64_t heap_index;
};

/* Adds a watch key to an operation that is not parked yet (before
 * purgatory_add). Returns 0, or -1 when out of memory (the keys added so far
 * stay). The op must start zeroed (calloc) or have had no keys yet. */
int delayed_op_watch(struct delayed_op *op, uintptr_t key);
/* Frees the key storage of an operation that never reached purgatory_add
 * (the purgatory does this itself for operations it was given). */
void delayed_op_release_keys(struct delayed_op *op);

int purgatory_create(const char *name, struct purgatory **out);
/* Stops the expiry thread after expiring (completing) every waiting operation. */
void purgatory_destroy(struct purgatory *p);

/* Tries the operation once; if it did not complete, parks it until a
 * watched key is notified or the deadline passes. */
void purgatory_add(struct purgatory *p, struct delayed_op *op);
/* Moves a parked operation's deadline to now, so the expiry thread
 * completes it at once (its try_complete runs with expired=true). For a
 * request whose client went away. The caller guarantees op has not been
 * freed (it has not completed); an op not parked (yet or any more) is left
 * alone. */
void purgatory_expire_now(struct purgatory *p, struct delayed_op *op);
/* For a stopping broker: every waiting operation completes now (expired,
 * answering with what it has), and any added later does not wait, so the
 * network layer's drain is not held for a fetch's max wait. NULL ignored. */
void purgatory_expire_all(struct purgatory *p);
/* Something changed for key: waiting operations watching it try again. */
void purgatory_notify(struct purgatory *p, uintptr_t key);
/* Number of operations waiting (for metrics and tests); also exported as
 * the gauge cairn_purgatory_waiting{purgatory="<name>"}. */
int purgatory_waiting(struct purgatory *p);

#endif
