/* storage-local's file copy (plugins/storage-local/storage_local_copy.c):
 * the kernel's copy_file_range where it answers, read/write where it
 * refuses (from the start or part way), a real copy from tmpfs to this
 * disk, and real errors passed on, not hidden by the fallback. Every copy
 * crosses several write-behind windows and is compared byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage_local_internal.h"

/* Three windows and a bit: write-behind runs more than once, and the last
 * window is partial. */
#define FILE_BYTES (3 * SL_COPY_WINDOW + 12345)

struct fixture {
    char dir[256];
    char src[300];
    char dst[300];
    uint8_t *content;
};

static int refusal_errno;     /* what the refusing copy answers */
static int64_t kernel_budget; /* bytes the partly refusing copy moves before refusing */
static int kernel_calls;      /* calls that reached a copy function */

static ssize_t refuse_always(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
    (void)in, (void)in_off, (void)out, (void)out_off, (void)len, (void)flags;
    kernel_calls++;
    errno = refusal_errno;
    return -1;
}

/* The real copy for kernel_budget bytes, then refusal_errno. */
static ssize_t refuse_part_way(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
    kernel_calls++;
    if (kernel_budget <= 0) {
        errno = refusal_errno;
        return -1;
    }
    size_t take = len < (size_t)kernel_budget ? len : (size_t)kernel_budget;
    ssize_t n = sl_copy_range_default(in, in_off, out, out_off, take, flags);
    if (n > 0)
        kernel_budget -= n;
    return n;
}

/* Answers "nothing copied" as some filesystems do for files they cannot
 * copy in the kernel. */
static ssize_t answer_zero(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
    (void)in, (void)in_off, (void)out, (void)out_off, (void)len, (void)flags;
    kernel_calls++;
    return 0;
}

static void write_source(const char *path, uint8_t *content)
{
    uint32_t x = 2463534242u; /* xorshift: no window repeats another */
    for (size_t i = 0; i < FILE_BYTES; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        content[i] = (uint8_t)x;
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(content, 1, FILE_BYTES, f), FILE_BYTES);
    assert_int_equal(fclose(f), 0);
}

static int setup_in(void **state, const char *base)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    fx->content = malloc(FILE_BYTES);
    if (!fx || !fx->content)
        return -1;
    snprintf(fx->dir, sizeof fx->dir, "%s/sl-copy-XXXXXX", base);
    if (!mkdtemp(fx->dir))
        return -1;
    snprintf(fx->src, sizeof fx->src, "%s/src", fx->dir);
    snprintf(fx->dst, sizeof fx->dst, "%s/dst", fx->dir);
    write_source(fx->src, fx->content);
    kernel_calls = 0;
    kernel_budget = 0;
    *state = fx;
    return 0;
}

static int setup(void **state)
{
    const char *tmp = getenv("TMPDIR");
    return setup_in(state, tmp && tmp[0] ? tmp : "/tmp");
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    unlink(fx->src);
    unlink(fx->dst);
    rmdir(fx->dir);
    free(fx->content);
    free(fx);
    return 0;
}

/* Copies fx->src to dst with copy_range; returns sl_copy_file's answer. */
static int copy_to(const struct fixture *fx, const char *dst, bool durable, sl_copy_range_fn copy_range,
                   struct sl_copy_stats *stats)
{
    int in = open(fx->src, O_RDONLY | O_CLOEXEC);
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(in >= 0);
    assert_true(out >= 0);
    int rc = sl_copy_file(in, out, durable, copy_range, stats);
    int saved = errno;
    assert_int_equal(close(out), 0);
    close(in);
    errno = saved;
    return rc;
}

static void assert_same_content(const struct fixture *fx, const char *dst)
{
    struct stat st;
    assert_int_equal(stat(dst, &st), 0);
    assert_int_equal(st.st_size, FILE_BYTES);
    uint8_t *got = malloc(FILE_BYTES);
    assert_non_null(got);
    FILE *f = fopen(dst, "rb");
    assert_non_null(f);
    assert_int_equal(fread(got, 1, FILE_BYTES, f), FILE_BYTES);
    fclose(f);
    assert_memory_equal(got, fx->content, FILE_BYTES);
    free(got);
}

static void test_kernel_copy_same_filesystem(void **state)
{
    struct fixture *fx = *state;
    struct sl_copy_stats stats = {0};
    assert_int_equal(copy_to(fx, fx->dst, true, sl_copy_range_default, &stats), 0);
    assert_same_content(fx, fx->dst);
    assert_int_equal(stats.kernel_bytes + stats.plain_bytes, FILE_BYTES);
    /* Linux has copied within one filesystem since 4.5; a kernel or
     * filesystem that refuses still gives a whole copy (above). */
    if (!stats.fell_back)
        assert_int_equal(stats.kernel_bytes, FILE_BYTES);
}

static void test_refused_from_the_start(void **state)
{
    struct fixture *fx = *state;
    const int refusals[] = {EXDEV, EOPNOTSUPP, ENOSYS, EINVAL};
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        refusal_errno = refusals[i];
        kernel_calls = 0;
        struct sl_copy_stats stats = {0};
        assert_int_equal(copy_to(fx, fx->dst, true, refuse_always, &stats), 0);
        assert_same_content(fx, fx->dst);
        assert_true(stats.fell_back);
        assert_int_equal(stats.kernel_bytes, 0);
        assert_int_equal(stats.plain_bytes, FILE_BYTES);
        assert_int_equal(kernel_calls, 1); /* asked once, not per window */
    }
}

static void test_refused_part_way(void **state)
{
    struct fixture *fx = *state;
    refusal_errno = EXDEV;
    kernel_budget = SL_COPY_WINDOW + 4096; /* past the first write-behind */
    struct sl_copy_stats stats = {0};
    assert_int_equal(copy_to(fx, fx->dst, true, refuse_part_way, &stats), 0);
    assert_same_content(fx, fx->dst);
    assert_true(stats.fell_back);
    if (stats.kernel_bytes == 0) /* this filesystem refused on its own */
        assert_int_equal(stats.plain_bytes, FILE_BYTES);
    else
        assert_int_equal(stats.kernel_bytes, SL_COPY_WINDOW + 4096);
    assert_int_equal(stats.kernel_bytes + stats.plain_bytes, FILE_BYTES);
}

static void test_zero_before_the_end_falls_back(void **state)
{
    struct fixture *fx = *state;
    struct sl_copy_stats stats = {0};
    assert_int_equal(copy_to(fx, fx->dst, false, answer_zero, &stats), 0);
    assert_same_content(fx, fx->dst);
    assert_true(stats.fell_back);
    assert_int_equal(stats.plain_bytes, FILE_BYTES);
}

static void test_plain_only_and_not_durable(void **state)
{
    struct fixture *fx = *state;
    struct sl_copy_stats stats = {0};
    assert_int_equal(copy_to(fx, fx->dst, false, NULL, &stats), 0);
    assert_same_content(fx, fx->dst);
    assert_false(stats.fell_back);
    assert_int_equal(stats.plain_bytes, FILE_BYTES);
}

/* A failure that is not a refusal (a disk error) is the copy's answer. */
static void test_real_error_is_not_hidden(void **state)
{
    struct fixture *fx = *state;
    refusal_errno = EIO;
    struct sl_copy_stats stats = {0};
    errno = 0;
    assert_int_equal(copy_to(fx, fx->dst, true, refuse_always, &stats), -1);
    assert_int_equal(errno, EIO);
    assert_false(stats.fell_back);
    assert_int_equal(stats.plain_bytes, 0);
}

/* From tmpfs to this test's directory through the real copy_file_range:
 * across filesystems Linux answers EXDEV (since 5.19) or copies; either
 * way the store gets every byte. */
static void test_across_filesystems(void **state)
{
    struct fixture *disk = *state;
    struct stat shm;
    if (stat("/dev/shm", &shm) != 0 || !S_ISDIR(shm.st_mode) || access("/dev/shm", W_OK) != 0)
        skip();
    void *on_tmpfs = NULL;
    assert_int_equal(setup_in(&on_tmpfs, "/dev/shm"), 0);
    struct fixture *fx = on_tmpfs;
    struct sl_copy_stats stats = {0};
    assert_int_equal(copy_to(fx, disk->dst, true, sl_copy_range_default, &stats), 0);
    assert_same_content(fx, disk->dst);
    assert_int_equal(stats.kernel_bytes + stats.plain_bytes, FILE_BYTES);
    teardown(&on_tmpfs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kernel_copy_same_filesystem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_from_the_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_part_way, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_before_the_end_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_only_and_not_durable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_error_is_not_hidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_across_filesystems, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
