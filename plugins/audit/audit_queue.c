/* Bounded line queue between io threads and the audit writer thread. */
#include "audit_internal.h"

#include <stdlib.h>

int audit_queue_init(struct audit_queue *queue, size_t capacity)
{
    queue->slots = calloc(capacity, sizeof(*queue->slots));
    if (!queue->slots)
        return CAIRN_ERROR;
    queue->capacity = capacity;
    queue->head = 0;
    queue->count = 0;
    queue->closed = false;
    pthread_mutex_init(&queue->lock, NULL);
    pthread_cond_init(&queue->not_empty, NULL);
    pthread_cond_init(&queue->not_full, NULL);
    return CAIRN_OK;
}

int audit_queue_push(struct audit_queue *queue, struct audit_line line, bool wait_for_room)
{
    pthread_mutex_lock(&queue->lock);
    while (!queue->closed && queue->count == queue->capacity && wait_for_room)
        pthread_cond_wait(&queue->not_full, &queue->lock);
    int result;
    if (queue->closed) {
        result = AUDIT_PUSH_CLOSED;
    } else if (queue->count == queue->capacity) {
        result = AUDIT_PUSH_FULL;
    } else {
        queue->slots[(queue->head + queue->count) % queue->capacity] = line;
        queue->count++;
        result = AUDIT_PUSH_OK;
        pthread_cond_signal(&queue->not_empty);
    }
    pthread_mutex_unlock(&queue->lock);
    return result;
}

size_t audit_queue_pop(struct audit_queue *queue, struct audit_line *out, size_t max)
{
    pthread_mutex_lock(&queue->lock);
    while (queue->count == 0 && !queue->closed)
        pthread_cond_wait(&queue->not_empty, &queue->lock);
    size_t n = 0;
    while (n < max && queue->count > 0) {
        out[n++] = queue->slots[queue->head];
        queue->head = (queue->head + 1) % queue->capacity;
        queue->count--;
    }
    /* Several producers may wait for room; wake them all. */
    if (n > 0)
        pthread_cond_broadcast(&queue->not_full);
    pthread_mutex_unlock(&queue->lock);
    return n;
}

void audit_queue_close(struct audit_queue *queue)
{
    pthread_mutex_lock(&queue->lock);
    queue->closed = true;
    pthread_cond_broadcast(&queue->not_empty);
    pthread_cond_broadcast(&queue->not_full);
    pthread_mutex_unlock(&queue->lock);
}

void audit_queue_destroy(struct audit_queue *queue)
{
    while (queue->count > 0) {
        free(queue->slots[queue->head].text);
        queue->head = (queue->head + 1) % queue->capacity;
        queue->count--;
    }
    free(queue->slots);
    queue->slots = NULL;
    pthread_mutex_destroy(&queue->lock);
    pthread_cond_destroy(&queue->not_empty);
    pthread_cond_destroy(&queue->not_full);
}
