/* The large-frame buffer pool: reuse, growth in place, its bounds and its
 * idle trim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "net/frame_pool.h"

static int64_t pool_gauge(void)
{
    return metrics_value(metrics_register(METRICS_GAUGE, "cairn_request_frame_pool_bytes", NULL, NULL));
}

static int64_t pool_reused(void)
{
    return metrics_value(metrics_register(METRICS_COUNTER, "cairn_request_frame_pool_reused_total", NULL, NULL));
}

static void fill(uint8_t *mem, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        mem[i] = (uint8_t)(seed + i * 13);
}

static void check(const uint8_t *mem, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (mem[i] != (uint8_t)(seed + i * 13))
            fail_msg("byte %zu differs", i);
}

/* A fresh buffer starts at the initial size and doubles up to the frame,
 * keeping its bytes; given back, it serves the next frame that fits and,
 * when none fits, the largest kept one grows instead of a fresh mapping. */
static void test_grow_keep_and_reuse(void **state)
{
    (void)state;
    struct net_frame_pool pool;
    net_frame_pool_init(&pool);
    int64_t gauge0 = pool_gauge(), reused0 = pool_reused();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    size_t frame = (1 << 20) + 100, cap = 0;
    uint8_t *mem = net_frame_pool_take(&pool, frame, 256 << 10, &cap);
    assert_non_null(mem);
    assert_int_equal(cap, 256 << 10);
    fill(mem, cap, 1);
    size_t sizes[] = {512 << 10, 1 << 20, ((1 << 20) + 100 + page - 1) / page * page};
    for (int i = 0; i < 3; i++) {
        size_t before = cap;
        mem = net_frame_pool_grow(mem, &cap, frame);
        assert_non_null(mem);
        assert_int_equal(cap, sizes[i]);
        check(mem, before, 1);
        fill(mem, cap, 1);
    }
    /* Already whole: no change. */
    uint8_t *same = net_frame_pool_grow(mem, &cap, frame);
    assert_ptr_equal(same, mem);
    assert_int_equal(cap, sizes[2]);

    net_frame_pool_give(&pool, mem, cap, 1000);
    assert_int_equal(pool.kept_bytes, sizes[2]);
    assert_int_equal(pool_gauge() - gauge0, (int64_t)sizes[2]);

    size_t cap2 = 0;
    uint8_t *again = net_frame_pool_take(&pool, 700 << 10, 256 << 10, &cap2);
    assert_ptr_equal(again, mem);
    assert_int_equal(cap2, sizes[2]);
    assert_int_equal(pool_reused() - reused0, 1);
    assert_int_equal(pool.kept_bytes, 0);
    net_frame_pool_give(&pool, again, cap2, 1000);

    /* Larger than anything kept: the kept one is taken and grown. */
    size_t cap3 = 0;
    uint8_t *big = net_frame_pool_take(&pool, 3 << 20, 256 << 10, &cap3);
    assert_ptr_equal(big, mem);
    fill(big, cap3, 7);
    big = net_frame_pool_grow(big, &cap3, 3 << 20);
    assert_non_null(big);
    assert_int_equal(cap3, 2 * sizes[2]);
    check(big, sizes[2], 7);
    net_frame_pool_give(&pool, big, cap3, 1000);
    assert_int_equal(pool.kept_bytes, cap3);

    net_frame_pool_destroy(&pool);
    assert_int_equal(pool_gauge(), gauge0);
}

/* Buffers above NET_FRAME_POOL_MAX_BUFFER are never kept, and all kept
 * buffers together stay within NET_FRAME_POOL_MAX_BYTES. */
static void test_bounds(void **state)
{
    (void)state;
    struct net_frame_pool pool;
    net_frame_pool_init(&pool);
    size_t cap = 0;
    uint8_t *huge = net_frame_pool_take(&pool, NET_FRAME_POOL_MAX_BUFFER + 4096, NET_FRAME_POOL_MAX_BUFFER + 4096,
                                        &cap);
    assert_non_null(huge);
    net_frame_pool_give(&pool, huge, cap, 0);
    assert_int_equal(pool.kept_count, 0);

    enum { N = NET_FRAME_POOL_MAX_BYTES / NET_FRAME_POOL_MAX_BUFFER + 2 };
    uint8_t *bufs[N];
    size_t caps[N];
    for (int i = 0; i < N; i++) {
        bufs[i] = net_frame_pool_take(&pool, NET_FRAME_POOL_MAX_BUFFER, NET_FRAME_POOL_MAX_BUFFER, &caps[i]);
        assert_non_null(bufs[i]);
    }
    for (int i = 0; i < N; i++)
        net_frame_pool_give(&pool, bufs[i], caps[i], 0);
    assert_int_equal(pool.kept_bytes, NET_FRAME_POOL_MAX_BYTES);
    assert_int_equal(pool.kept_count, N - 2);
    net_frame_pool_destroy(&pool);
}

/* A kept buffer not taken for NET_FRAME_POOL_IDLE_MS is unmapped. */
static void test_idle_trim(void **state)
{
    (void)state;
    struct net_frame_pool pool;
    net_frame_pool_init(&pool);
    size_t cap_a = 0, cap_b = 0;
    uint8_t *a = net_frame_pool_take(&pool, 1 << 20, 1 << 20, &cap_a);
    uint8_t *b = net_frame_pool_take(&pool, 1 << 20, 1 << 20, &cap_b);
    net_frame_pool_give(&pool, a, cap_a, 1000);
    net_frame_pool_give(&pool, b, cap_b, 5000);
    net_frame_pool_trim(&pool, 1000 + NET_FRAME_POOL_IDLE_MS - 1);
    assert_int_equal(pool.kept_count, 2);
    net_frame_pool_trim(&pool, 1000 + NET_FRAME_POOL_IDLE_MS);
    assert_int_equal(pool.kept_count, 1);
    assert_ptr_equal(pool.kept[0].mem, b);
    net_frame_pool_trim(&pool, 5000 + NET_FRAME_POOL_IDLE_MS);
    assert_int_equal(pool.kept_count, 0);
    assert_int_equal(pool.kept_bytes, 0);
    net_frame_pool_destroy(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_keep_and_reuse),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_idle_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
