#include "net/request_queue.h"

#include <stdlib.h>
#include <string.h>

int net_request_queue_init(struct net_request_queue *q, size_t capacity, int producer_count,
                           net_queue_space_fn on_space, void *on_space_ctx)
{
    memset(q, 0, sizeof(*q));
    if (capacity == 0 || producer_count <= 0)
        return -1;
    q->items = calloc(capacity, sizeof(*q->items));
    q->producer_waiting = calloc((size_t)producer_count, sizeof(*q->producer_waiting));
    if (!q->items || !q->producer_waiting) {
        free(q->items);
        free(q->producer_waiting);
        return -1;
    }
    q->capacity = capacity;
    q->producer_count = producer_count;
    q->on_space = on_space;
    q->on_space_ctx = on_space_ctx;
    pthread_mutex_init(&q->mutex, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    return 0;
}

bool net_request_queue_try_push(struct net_request_queue *q, void *item, int producer)
{
    bool pushed = false;
    pthread_mutex_lock(&q->mutex);
    if (!q->closed && q->count < q->capacity) {
        q->items[(q->head + q->count) % q->capacity] = item;
        q->count++;
        pushed = true;
        pthread_cond_signal(&q->not_empty);
    } else if (!q->closed && producer >= 0 && producer < q->producer_count) {
        q->producer_waiting[producer] = true;
    }
    pthread_mutex_unlock(&q->mutex);
    return pushed;
}

void *net_request_queue_pop(struct net_request_queue *q)
{
    void *item = NULL;
    int notify[64];
    int notify_count = 0;

    pthread_mutex_lock(&q->mutex);
    while (!q->closed && q->count == 0)
        pthread_cond_wait(&q->not_empty, &q->mutex);
    if (!q->closed) {
        item = q->items[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        for (int i = 0; i < q->producer_count && notify_count < 64; i++) {
            if (q->producer_waiting[i]) {
                q->producer_waiting[i] = false;
                notify[notify_count++] = i;
            }
        }
    }
    pthread_mutex_unlock(&q->mutex);
    /* Notify outside the lock: the callback takes the producer's own lock. */
    for (int i = 0; i < notify_count; i++)
        q->on_space(q->on_space_ctx, notify[i]);
    return item;
}

void net_request_queue_close(struct net_request_queue *q)
{
    pthread_mutex_lock(&q->mutex);
    q->closed = true;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mutex);
}

void *net_request_queue_take_leftover(struct net_request_queue *q)
{
    void *item = NULL;
    pthread_mutex_lock(&q->mutex);
    if (q->count > 0) {
        item = q->items[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
    }
    pthread_mutex_unlock(&q->mutex);
    return item;
}

void net_request_queue_destroy(struct net_request_queue *q)
{
    if (!q->items)
        return;
    pthread_mutex_destroy(&q->mutex);
    pthread_cond_destroy(&q->not_empty);
    free(q->items);
    free(q->producer_waiting);
    q->items = NULL;
    q->producer_waiting = NULL;
}
