/* Producer id blocks: allocation through ProducerIdsRecord, ids handed out
 * from the block, and no reuse after the store is reopened (replay). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-pids-XXXXXX");
    if (!f)
        return -1;
    open_store(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

static int64_t next_id(struct fixture *f)
{
    char err[256] = "";
    int64_t id = -1;
    assert_int_equal(metadata_next_producer_id(f->store, &id, err, sizeof err), KAFKA_ERR_NONE);
    return id;
}

static int64_t image_next(struct fixture *f)
{
    const struct metadata_image *img = metadata_image_acquire(f->store);
    int64_t v = img->next_producer_id;
    metadata_image_release(img);
    return v;
}

static void test_blocks_and_restart(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(image_next(f), 0);
    assert_int_equal(next_id(f), 0);
    assert_int_equal(image_next(f), METADATA_PRODUCER_ID_BLOCK_SIZE);
    for (int64_t i = 1; i < METADATA_PRODUCER_ID_BLOCK_SIZE; i++)
        assert_int_equal(next_id(f), i);
    assert_int_equal(image_next(f), METADATA_PRODUCER_ID_BLOCK_SIZE);
    /* The block is used up: the next id comes from a new block. */
    assert_int_equal(next_id(f), METADATA_PRODUCER_ID_BLOCK_SIZE);
    assert_int_equal(image_next(f), 2 * METADATA_PRODUCER_ID_BLOCK_SIZE);

    /* After a restart the replayed image continues past every handed-out block. */
    metadata_store_close(f->store);
    f->store = NULL;
    open_store(f);
    assert_int_equal(image_next(f), 2 * METADATA_PRODUCER_ID_BLOCK_SIZE);
    assert_int_equal(next_id(f), 2 * METADATA_PRODUCER_ID_BLOCK_SIZE);
    assert_int_equal(image_next(f), 3 * METADATA_PRODUCER_ID_BLOCK_SIZE);
}

static void test_record_codec(void **state)
{
    (void)state;
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    metadata_record_write_producer_ids(&w, 3, 77, 5000);
    assert_false(w.failed);
    struct metadata_builder *b = metadata_builder_new(NULL);
    char err[256] = "";
    assert_int_equal(metadata_record_apply(b, w.buf, w.len, 0, err, sizeof err), METADATA_APPLY_OK);
    /* A block that moves backwards is refused. */
    struct kafka_writer back;
    kafka_writer_init(&back, 64);
    metadata_record_write_producer_ids(&back, 3, 77, 4000);
    assert_int_equal(metadata_record_apply(b, back.buf, back.len, 1, err, sizeof err), METADATA_APPLY_INVALID);
    /* A truncated record is malformed. */
    assert_int_equal(metadata_record_apply(b, w.buf, w.len - 3, 2, err, sizeof err), METADATA_APPLY_INVALID);
    struct metadata_image *img = metadata_builder_finish(b, 2);
    assert_int_equal(img->next_producer_id, 5000);
    metadata_image_release(img);
    kafka_writer_free(&w);
    kafka_writer_free(&back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blocks_and_restart, setup, teardown),
        cmocka_unit_test(test_record_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
