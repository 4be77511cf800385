/* A small fixed pool of threads for plugin calls that may block. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "plugin/plugin_internal.h"

struct pool_job {
    struct pool_job *next;
    void (*work)(void *);
    void (*done)(void *);
    void *arg;
};

/* Shared by the submitting threads and the workers; everything is under
 * lock except threads/thread_count (main thread only). */
struct plugin_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct pool_job *head, *tail;
    bool stopping;
    pthread_t *threads;
    int thread_count;
};

static void *pool_worker(void *arg)
{
    struct plugin_pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        while (!pool->head && !pool->stopping)
            pthread_cond_wait(&pool->wake, &pool->lock);
        struct pool_job *job = pool->head;
        if (!job) {
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        pool->head = job->next;
        if (!pool->head)
            pool->tail = NULL;
        pthread_mutex_unlock(&pool->lock);
        job->work(job->arg);
        if (job->done)
            job->done(job->arg);
        free(job);
    }
}

int plugin_pool_start(int threads, struct plugin_pool **out)
{
    struct plugin_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return -1;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return -1;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&pool->threads[i], NULL, pool_worker, pool) != 0)
            break;
        pool->thread_count++;
    }
    if (pool->thread_count == 0) {
        plugin_pool_free(pool);
        return -1;
    }
    *out = pool;
    return 0;
}

int plugin_pool_submit(struct plugin_pool *pool, void (*work)(void *), void (*done)(void *), void *arg)
{
    if (!work)
        return CAIRN_INVALID;
    if (!pool)
        return CAIRN_RETRIABLE;
    struct pool_job *job = calloc(1, sizeof *job);
    if (!job)
        return CAIRN_RETRIABLE;
    job->work = work;
    job->done = done;
    job->arg = arg;
    pthread_mutex_lock(&pool->lock);
    if (pool->stopping) {
        pthread_mutex_unlock(&pool->lock);
        free(job);
        return CAIRN_RETRIABLE;
    }
    if (pool->tail)
        pool->tail->next = job;
    else
        pool->head = job;
    pool->tail = job;
    pthread_cond_signal(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    return CAIRN_OK;
}

void plugin_pool_stop(struct plugin_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->thread_count; i++)
        pthread_join(pool->threads[i], NULL);
    pool->thread_count = 0;
}

void plugin_pool_free(struct plugin_pool *pool)
{
    if (!pool)
        return;
    plugin_pool_stop(pool);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    free(pool->threads);
    free(pool);
}
