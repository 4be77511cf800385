/* Bounded FIFO between the network loops and the io threads.
 *
 * Thread-safety: every function may be called from any thread; the queue
 * is guarded by its own mutex. Producers never block: a full queue refuses
 * the item and remembers the producer, which is notified once space frees. */
#ifndef CAIRN_NET_REQUEST_QUEUE_H
#define CAIRN_NET_REQUEST_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Called (with the queue lock released) when a refused producer may retry. */
typedef void (*net_queue_space_fn)(void *ctx, int producer);

struct net_request_queue {
    pthread_mutex_t mutex;
    pthread_cond_t not_empty;
    void **items; /* ring of capacity entries */
    size_t capacity, head, count;
    bool closed;
    bool *producer_waiting;
    int producer_count;
    net_queue_space_fn on_space;
    void *on_space_ctx;
};

int net_request_queue_init(struct net_request_queue *q, size_t capacity, int producer_count,
                           net_queue_space_fn on_space, void *on_space_ctx);
/* false when full (producer is then notified later) or closed. */
bool net_request_queue_try_push(struct net_request_queue *q, void *item, int producer);
/* Blocks until an item arrives; NULL once the queue is closed. */
void *net_request_queue_pop(struct net_request_queue *q);
/* Wakes every waiting consumer; later pops return NULL. */
void net_request_queue_close(struct net_request_queue *q);
/* Removes one leftover item after close (NULL when empty). */
void *net_request_queue_take_leftover(struct net_request_queue *q);
void net_request_queue_destroy(struct net_request_queue *q);

#endif
