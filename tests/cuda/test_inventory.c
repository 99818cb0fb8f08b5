/* test_inventory.c: fake GPUs from the environment, the real inventory (empty without a device)
 * and the all-reduce bandwidth probe's arguments and no-device path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cuda/inventory.h"
#include "util/error.h"

static void inventory_fake__count_and_memory(void **state)
{
    struct inventory inv;

    (void)state;
    assert_int_equal(inventory_fake("4", &inv), 0);
    assert_int_equal(inv.count, 4);
    assert_int_equal(inv.fake, 1);
    assert_int_equal(inv.gpu[3].index, 3);
    assert_string_equal(inv.gpu[3].name, INVENTORY_FAKE_NAME);
    assert_true(inv.gpu[0].total_bytes == (uint64_t)INVENTORY_FAKE_GIB * 1024 * 1024 * 1024);
    assert_true(inv.gpu[0].free_bytes == inv.gpu[0].total_bytes);

    assert_int_equal(inventory_fake("2:80", &inv), 0);
    assert_int_equal(inv.count, 2);
    assert_true(inv.gpu[1].total_bytes == 80ULL << 30);

    assert_int_equal(inventory_fake("0", &inv), 0);
    assert_int_equal(inv.count, 0);
    assert_int_equal(inventory_fake("64:4096", &inv), 0);
    assert_int_equal(inv.count, 64);
    assert_true(inv.gpu[63].total_bytes == 4096ULL << 30);
}

/* Malformed or out-of-range specs are refused and leave the output alone. */
static void inventory_fake__bad_specs(void **state)
{
    const char *parse[] = {"", "x", "4:", ":16", "-1", "+4", " 4", "4 ", "4:16:1", "4x16", "4:1.5"};
    const char *range[] = {"65", "4:0", "4:4097", "9999999999", "1:99999999999"};
    struct inventory inv;

    (void)state;
    inv.count = -7;
    for (size_t i = 0; i < sizeof(parse) / sizeof(parse[0]); i++)
        assert_int_equal(inventory_fake(parse[i], &inv), ERR_PARSE);
    for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++)
        assert_int_equal(inventory_fake(range[i], &inv), ERR_RANGE);
    assert_int_equal(inventory_fake(NULL, &inv), ERR_INVAL);
    assert_int_equal(inventory_fake("1", NULL), ERR_INVAL);
    assert_int_equal(inv.count, -7);
}

/* The probe takes CASTOR_FAKE_GPUS when set and not empty, else the real devices. */
static void inventory_probe__environment(void **state)
{
    struct inventory inv, real;

    (void)state;
    assert_int_equal(setenv(INVENTORY_FAKE_ENV, "3:24", 1), 0);
    assert_int_equal(inventory_probe(&inv), 0);
    assert_int_equal(inv.count, 3);
    assert_int_equal(inv.fake, 1);
    assert_true(inv.gpu[2].total_bytes == 24ULL << 30);

    assert_int_equal(setenv(INVENTORY_FAKE_ENV, "three", 1), 0);
    assert_int_equal(inventory_probe(&inv), ERR_PARSE);

    assert_int_equal(setenv(INVENTORY_FAKE_ENV, "", 1), 0);
    assert_int_equal(inventory_probe(&inv), 0);
    assert_int_equal(inv.fake, 0);
    assert_int_equal(unsetenv(INVENTORY_FAKE_ENV), 0);
    assert_int_equal(inventory_cuda(&real), 0);
    assert_int_equal(inventory_probe(&inv), 0);
    assert_int_equal(inv.fake, 0);
    assert_int_equal(inv.count, real.count);
}

/* The real inventory: empty here when there is no device (or no CUDA in the build), else every
 * device with a name and free <= total. */
static void inventory_cuda__devices(void **state)
{
    struct inventory inv;

    (void)state;
    assert_int_equal(inventory_cuda(NULL), ERR_INVAL);
    assert_int_equal(inventory_cuda(&inv), 0);
    assert_int_equal(inv.fake, 0);
    assert_true(inv.count >= 0 && inv.count <= INVENTORY_MAX_GPUS);
    print_message("inventory_cuda: %d device(s)\n", inv.count);
    for (int i = 0; i < inv.count; i++) {
        print_message("  %d: %s, %.1f of %.1f GiB free\n", i, inv.gpu[i].name,
                      inv.gpu[i].free_bytes / 1073741824.0, inv.gpu[i].total_bytes / 1073741824.0);
        assert_int_equal(inv.gpu[i].index, i);
        assert_true(inv.gpu[i].name[0] != '\0');
        assert_true(inv.gpu[i].total_bytes > 0);
        assert_true(inv.gpu[i].free_bytes <= inv.gpu[i].total_bytes);
    }
}

static void inventory_allreduce_bw__bad_arguments(void **state)
{
    struct inventory_bw bw;

    (void)state;
    assert_int_equal(inventory_allreduce_bw(NULL, 1 << 20, 5, NULL), ERR_INVAL);
    assert_int_equal(inventory_allreduce_bw(NULL, 3, 5, &bw), ERR_INVAL);
    assert_int_equal(inventory_allreduce_bw(NULL, (1u << 30) + 4, 5, &bw), ERR_INVAL);
    assert_int_equal(inventory_allreduce_bw(NULL, 1 << 20, 0, &bw), ERR_INVAL);
    assert_int_equal(inventory_allreduce_bw(NULL, 1 << 20, 10001, &bw), ERR_INVAL);
}

/* Without a device the probe says so; with one (and NCCL), it measures something plausible. */
static void inventory_allreduce_bw__measures_or_nodev(void **state)
{
    struct inventory inv;
    struct inventory_bw bw = {.ranks = -1};
    int rc;

    (void)state;
    assert_int_equal(inventory_cuda(&inv), 0);
    rc = inventory_allreduce_bw(NULL, 1 << 22, 5, &bw);
    if (inv.count == 0) {
        print_message("no CUDA device: the probe must answer ERR_NODEV\n");
        assert_int_equal(rc, ERR_NODEV);
        assert_int_equal(bw.ranks, -1);
        return;
    }
    if (!inventory_have_nccl()) {
        print_message("built without NCCL: bandwidth probe skipped\n");
        assert_int_equal(rc, ERR_NODEV);
        skip();
    }
    assert_int_equal(rc, 0);
    print_message("all-reduce of %zu bytes over %d GPU(s): %.1f us, bus %.2f GB/s\n", bw.bytes,
                  bw.ranks, bw.seconds * 1e6, bw.busbw / 1e9);
    assert_int_equal(bw.ranks, inv.count);
    assert_true(bw.bytes == 1 << 22);
    assert_true(bw.seconds > 0.0);
    assert_float_equal(bw.algbw, bw.bytes / bw.seconds, 1e-6 * bw.algbw);
    assert_float_equal(bw.busbw, bw.algbw * 2.0 * (bw.ranks - 1) / bw.ranks, 1e-6 * bw.algbw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inventory_fake__count_and_memory),
        cmocka_unit_test(inventory_fake__bad_specs),
        cmocka_unit_test(inventory_probe__environment),
        cmocka_unit_test(inventory_cuda__devices),
        cmocka_unit_test(inventory_allreduce_bw__bad_arguments),
        cmocka_unit_test(inventory_allreduce_bw__measures_or_nodev),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
