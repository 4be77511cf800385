/* The bounded request queue: FIFO order, refusal when full, notification
 * of refused producers, and close semantics. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "net/request_queue.h"

struct space_log {
    int calls[4];
};

static void record_space(void *ctx, int producer)
{
    struct space_log *log = ctx;
    log->calls[producer]++;
}

static void test_fifo_and_refusal_when_full(void **state)
{
    (void)state;
    struct space_log log = {{0}};
    struct net_request_queue q;
    assert_int_equal(net_request_queue_init(&q, 3, 2, record_space, &log), 0);
    int items[5] = {10, 11, 12, 13, 14};
    for (int i = 0; i < 3; i++)
        assert_true(net_request_queue_try_push(&q, &items[i], 0));
    assert_false(net_request_queue_try_push(&q, &items[3], 1));
    assert_int_equal(log.calls[1], 0);

    assert_ptr_equal(net_request_queue_pop(&q), &items[0]);
    /* Only the refused producer hears about the space, and only once. */
    assert_int_equal(log.calls[1], 1);
    assert_int_equal(log.calls[0], 0);
    assert_true(net_request_queue_try_push(&q, &items[3], 1));
    assert_ptr_equal(net_request_queue_pop(&q), &items[1]);
    assert_int_equal(log.calls[1], 1);
    /* Wrap-around keeps order. */
    assert_true(net_request_queue_try_push(&q, &items[4], 0));
    assert_ptr_equal(net_request_queue_pop(&q), &items[2]);
    assert_ptr_equal(net_request_queue_pop(&q), &items[3]);
    assert_ptr_equal(net_request_queue_pop(&q), &items[4]);
    net_request_queue_destroy(&q);
}

static void *pop_one(void *arg)
{
    return net_request_queue_pop(arg);
}

static void test_close_wakes_consumers_and_keeps_leftovers(void **state)
{
    (void)state;
    struct space_log log = {{0}};
    struct net_request_queue q;
    assert_int_equal(net_request_queue_init(&q, 2, 1, record_space, &log), 0);
    pthread_t consumer;
    pthread_create(&consumer, NULL, pop_one, &q);
    int item = 1;
    assert_true(net_request_queue_try_push(&q, &item, 0));
    void *got = NULL;
    pthread_join(consumer, &got);
    assert_ptr_equal(got, &item);

    pthread_create(&consumer, NULL, pop_one, &q);
    net_request_queue_close(&q);
    pthread_join(consumer, &got);
    assert_null(got);
    assert_false(net_request_queue_try_push(&q, &item, 0));
    assert_null(net_request_queue_take_leftover(&q));
    net_request_queue_destroy(&q);

    assert_int_equal(net_request_queue_init(&q, 2, 1, record_space, &log), 0);
    assert_true(net_request_queue_try_push(&q, &item, 0));
    net_request_queue_close(&q);
    assert_null(net_request_queue_pop(&q));
    assert_ptr_equal(net_request_queue_take_leftover(&q), &item);
    assert_null(net_request_queue_take_leftover(&q));
    net_request_queue_destroy(&q);
}

static void test_init_rejects_zero_capacity(void **state)
{
    (void)state;
    struct net_request_queue q;
    assert_int_equal(net_request_queue_init(&q, 0, 1, record_space, NULL), -1);
    assert_int_equal(net_request_queue_init(&q, 1, 0, record_space, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_refusal_when_full),
        cmocka_unit_test(test_close_wakes_consumers_and_keeps_leftovers),
        cmocka_unit_test(test_init_rejects_zero_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
