/* test_gradstats.c: the CPU reference of the gradient statistics against hand-computed values,
 * the fp16/bf16 conversions at their edges, and the GPU against the CPU where a device exists. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cuda/gradstats.h"
#include "cuda/inventory.h"
#include "util/error.h"

static uint32_t bits_of(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static float float_of(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* --- CPU reference, hand-computed ------------------------------------------------------------ */

/* a = (1, 2, 3, -1), b = (3, 2, 1, 1), c = (0.5, -0.5, 0, 2):
 * |a|^2 = 15, |b|^2 = 15, |c|^2 = 4.5. Two buffers: mean (2, 2, 2, 0) -> 12. Three buffers: mean
 * (1.5, 3.5/3, 4/3, 2/3) -> 2.25 + (12.25 + 16 + 4) / 9 = 35/6. */
static void gradstats_cpu__fp32_hand_computed(void **state)
{
    const float a[] = {1, 2, 3, -1}, b[] = {3, 2, 1, 1}, c[] = {0.5f, -0.5f, 0, 2};
    const void *bufs[] = {a, b, c};
    double out[4];

    (void)state;
    assert_int_equal(gradstats_cpu(bufs, 2, 4, GRADSTATS_F32, out), 0);
    assert_float_equal(out[0], 15.0, 0.0);
    assert_float_equal(out[1], 15.0, 0.0);
    assert_float_equal(out[2], 12.0, 0.0);
    assert_int_equal(gradstats_cpu(bufs, 3, 4, GRADSTATS_F32, out), 0);
    assert_float_equal(out[2], 4.5, 0.0);
    assert_float_equal(out[3], 35.0 / 6.0, 1e-15);
}

/* The same numbers in both 16-bit formats, written as bit patterns by hand:
 * x = (1, -2, 0.5), y = (3, 1.5, 0.5): |x|^2 = 5.25, |y|^2 = 11.5, mean (2, -0.25, 0.5) -> 4.3125.
 * bf16: 1 = 3F80, -2 = C000, 0.5 = 3F00, 3 = 4040, 1.5 = 3FC0.
 * fp16: 1 = 3C00, -2 = C000, 0.5 = 3800, 3 = 4200, 1.5 = 3E00. */
static void check_xy(const uint16_t *x, const uint16_t *y, enum gradstats_dtype dtype)
{
    const void *bufs[] = {x, y};
    double out[3];

    assert_int_equal(gradstats_cpu(bufs, 2, 3, dtype, out), 0);
    assert_float_equal(out[0], 5.25, 0.0);
    assert_float_equal(out[1], 11.5, 0.0);
    assert_float_equal(out[2], 4.3125, 0.0);
}

static void gradstats_cpu__bf16_hand_computed(void **state)
{
    const uint16_t x[] = {0x3F80, 0xC000, 0x3F00}, y[] = {0x4040, 0x3FC0, 0x3F00};

    (void)state;
    check_xy(x, y, GRADSTATS_BF16);
}

static void gradstats_cpu__fp16_hand_computed(void **state)
{
    const uint16_t x[] = {0x3C00, 0xC000, 0x3800}, y[] = {0x4200, 0x3E00, 0x3800};

    (void)state;
    check_xy(x, y, GRADSTATS_F16);
}

/* Edge values: the largest fp16 (65504^2 = 4290774016, exact in double), subnormals (2^-24 in fp16,
 * 2^-133 in bf16, 2^-149 in fp32: squares 2^-48, 2^-266, 2^-298, which only a double
 * accumulation keeps), and an infinity or a NaN that makes its buffer's norm and the mean's
 * non-finite while the other buffer's stays exact. */
static void gradstats_cpu__edge_values(void **state)
{
    const uint16_t big[] = {0x7BFF}, sub16[] = {0x0001}, subbf[] = {0x0001};
    const float sub32[] = {float_of(1)};
    const uint16_t inf16[] = {0x3C00, 0x7C00}, nan16[] = {0x3C00, 0x7E00}, one16[] = {0x3C00, 0};
    double out[3];

    (void)state;
    assert_int_equal(gradstats_cpu((const void *[]){big}, 1, 1, GRADSTATS_F16, out), 0);
    assert_float_equal(out[0], 4290774016.0, 0.0);
    assert_float_equal(out[1], 4290774016.0, 0.0);
    assert_int_equal(gradstats_cpu((const void *[]){sub16}, 1, 1, GRADSTATS_F16, out), 0);
    assert_true(out[0] == ldexp(1.0, -48));
    assert_int_equal(gradstats_cpu((const void *[]){subbf}, 1, 1, GRADSTATS_BF16, out), 0);
    assert_true(out[0] == ldexp(1.0, -266));
    assert_int_equal(gradstats_cpu((const void *[]){sub32}, 1, 1, GRADSTATS_F32, out), 0);
    assert_true(out[0] == ldexp(1.0, -298));

    assert_int_equal(gradstats_cpu((const void *[]){one16, inf16}, 2, 2, GRADSTATS_F16, out), 0);
    assert_float_equal(out[0], 1.0, 0.0);
    assert_true(isinf(out[1]) && isinf(out[2]));
    assert_int_equal(gradstats_cpu((const void *[]){one16, nan16}, 2, 2, GRADSTATS_F16, out), 0);
    assert_float_equal(out[0], 1.0, 0.0);
    assert_true(isnan(out[1]) && isnan(out[2]));
}

/* No elements: zeros. Bad arguments: ERR_INVAL and out untouched. */
static void gradstats_cpu__empty_and_bad_arguments(void **state)
{
    const float a[] = {1};
    const void *bufs[GRADSTATS_MAX_BUFS + 1], *nulls[] = {a, NULL};
    double out[3] = {7, 7, 7};

    (void)state;
    for (size_t i = 0; i <= GRADSTATS_MAX_BUFS; i++)
        bufs[i] = a;
    assert_int_equal(gradstats_cpu(bufs, 2, 0, GRADSTATS_F32, out), 0);
    assert_float_equal(out[0] + out[1] + out[2], 0.0, 0.0);
    out[0] = 7;
    assert_int_equal(gradstats_cpu(bufs, 0, 1, GRADSTATS_F32, out), ERR_INVAL);
    assert_int_equal(gradstats_cpu(bufs, GRADSTATS_MAX_BUFS + 1, 1, GRADSTATS_F32, out), ERR_INVAL);
    assert_int_equal(gradstats_cpu(nulls, 2, 1, GRADSTATS_F32, out), ERR_INVAL);
    assert_int_equal(gradstats_cpu(NULL, 1, 1, GRADSTATS_F32, out), ERR_INVAL);
    assert_int_equal(gradstats_cpu(bufs, 1, 1, (enum gradstats_dtype)7, out), ERR_INVAL);
    assert_int_equal(gradstats_cpu(bufs, 1, 1, GRADSTATS_F32, NULL), ERR_INVAL);
    assert_float_equal(out[0], 7.0, 0.0);
    /* The most buffers: 32 copies of (1): each norm 1, the mean 1. */
    double many[GRADSTATS_MAX_BUFS + 1];
    assert_int_equal(gradstats_cpu(bufs, GRADSTATS_MAX_BUFS, 1, GRADSTATS_F32, many), 0);
    assert_float_equal(many[GRADSTATS_MAX_BUFS - 1], 1.0, 0.0);
    assert_float_equal(many[GRADSTATS_MAX_BUFS], 1.0, 0.0);
}

/* --- Conversions ----------------------------------------------------------------------------- */

static void gradstats_f16_to_float__values(void **state)
{
    (void)state;
    assert_true(gradstats_f16_to_float(0x3C00) == 1.0f);
    assert_true(gradstats_f16_to_float(0xC000) == -2.0f);
    assert_true(gradstats_f16_to_float(0x7BFF) == 65504.0f);
    assert_true(gradstats_f16_to_float(0x0400) == ldexpf(1.0f, -14)); /* smallest normal */
    assert_true(gradstats_f16_to_float(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    assert_true(gradstats_f16_to_float(0x83FF) == -ldexpf(1023.0f, -24));
    assert_true(isinf(gradstats_f16_to_float(0x7C00)) && gradstats_f16_to_float(0x7C00) > 0);
    assert_true(isinf(gradstats_f16_to_float(0xFC00)) && gradstats_f16_to_float(0xFC00) < 0);
    assert_true(isnan(gradstats_f16_to_float(0x7E00)));
    assert_true(isnan(gradstats_f16_to_float(0x7C01))); /* signalling payload: still NaN */
    assert_true(signbit(gradstats_f16_to_float(0x8000)) && gradstats_f16_to_float(0x8000) == 0);
}

/* Rounding to nearest, ties to even, at the places it can go wrong. */
static void gradstats_float_to_f16__rounding_and_edges(void **state)
{
    (void)state;
    assert_int_equal(gradstats_float_to_f16(1.0f), 0x3C00);
    assert_int_equal(gradstats_float_to_f16(1.0f + ldexpf(1, -11)), 0x3C00); /* tie -> even */
    assert_int_equal(gradstats_float_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3C02);
    assert_int_equal(gradstats_float_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3C01);
    assert_int_equal(gradstats_float_to_f16(2047.0f / 1024.0f * 2.0f), 0x4000 | 0x3FF);
    assert_int_equal(gradstats_float_to_f16(65504.0f), 0x7BFF);
    assert_int_equal(gradstats_float_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(gradstats_float_to_f16(65520.0f), 0x7C00); /* tie at the top -> inf */
    assert_int_equal(gradstats_float_to_f16(-1e6f), 0xFC00);
    assert_int_equal(gradstats_float_to_f16(INFINITY), 0x7C00);
    assert_int_equal(gradstats_float_to_f16(-0.0f), 0x8000);
    assert_int_equal(gradstats_float_to_f16(ldexpf(1, -14)), 0x0400);
    assert_int_equal(gradstats_float_to_f16(ldexpf(1, -24)), 0x0001);
    assert_int_equal(gradstats_float_to_f16(ldexpf(1, -25)), 0x0000);       /* tie -> 0 */
    assert_int_equal(gradstats_float_to_f16(ldexpf(1.5f, -25)), 0x0001);    /* above tie */
    assert_int_equal(gradstats_float_to_f16(ldexpf(3, -25)), 0x0002);       /* tie -> 2 */
    assert_int_equal(gradstats_float_to_f16(ldexpf(1023.5f, -24)), 0x0400); /* into normal */
    assert_int_equal(gradstats_float_to_f16(-ldexpf(5, -26)), 0x8001);      /* 1.25 units */
    assert_int_equal(gradstats_float_to_f16(1e-10f), 0x0000);
    assert_int_equal(gradstats_float_to_f16(float_of(0x00000001)), 0x0000);
    uint16_t n = gradstats_float_to_f16(NAN), m = gradstats_float_to_f16(-NAN);
    assert_int_equal(n & 0x7C00, 0x7C00);
    assert_true((n & 0x0200) != 0); /* quiet */
    assert_int_equal(m & 0x8000, 0x8000);
    /* A signalling float NaN whose payload sits only in the low bits stays a NaN. */
    assert_true(isnan(gradstats_f16_to_float(gradstats_float_to_f16(float_of(0x7F800001)))));
}

static void gradstats_bf16__rounding_and_edges(void **state)
{
    (void)state;
    assert_true(gradstats_bf16_to_float(0x3F80) == 1.0f);
    assert_true(gradstats_bf16_to_float(0x0001) == ldexpf(1, -133));
    assert_true(isinf(gradstats_bf16_to_float(0xFF80)) && gradstats_bf16_to_float(0xFF80) < 0);
    assert_int_equal(gradstats_float_to_bf16(1.0f), 0x3F80);
    assert_int_equal(gradstats_float_to_bf16(1.0f + ldexpf(1, -8)), 0x3F80); /* tie -> even */
    assert_int_equal(gradstats_float_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3F82);
    assert_int_equal(gradstats_float_to_bf16(1.0f + ldexpf(1, -8) + ldexpf(1, -20)), 0x3F81);
    assert_int_equal(gradstats_float_to_bf16(FLT_MAX), 0x7F80); /* rounds up to inf */
    assert_int_equal(gradstats_float_to_bf16(float_of(0x7F7F7FFF)), 0x7F7F);
    assert_int_equal(gradstats_float_to_bf16(-INFINITY), 0xFF80);
    assert_int_equal(gradstats_float_to_bf16(-0.0f), 0x8000);
    assert_int_equal(gradstats_float_to_bf16(float_of(0x00010000)), 0x0001); /* subnormal */
    assert_int_equal(gradstats_float_to_bf16(float_of(0x00008000)), 0x0000); /* tie -> 0 */
    assert_int_equal(gradstats_float_to_bf16(float_of(0x00018000)), 0x0002); /* tie -> 2 */
    assert_int_equal(gradstats_float_to_bf16(float_of(0x80008001)), 0x8001); /* above tie */
    uint16_t n = gradstats_float_to_bf16(float_of(0xFF800001)); /* -sNaN, low payload */
    assert_int_equal(n & 0xFF80, 0xFF80);
    assert_true((n & 0x0040) != 0);
}

/* Every 16-bit pattern survives the round trip through binary32 (NaNs stay NaN, quietened). */
static void gradstats_conversions__round_trip_all_patterns(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        float f = gradstats_f16_to_float((uint16_t)h), g = gradstats_bf16_to_float((uint16_t)h);
        int f_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF),
            g_nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);

        assert_int_equal(isnan(f) != 0, f_nan);
        assert_int_equal(isnan(g) != 0, g_nan);
        if (f_nan)
            assert_int_equal(gradstats_float_to_f16(f), h | 0x0200);
        else
            assert_int_equal(gradstats_float_to_f16(f), h);
        if (g_nan)
            assert_int_equal(gradstats_float_to_bf16(g), h | 0x0040);
        else
            assert_int_equal(gradstats_float_to_bf16(g), h);
        assert_int_equal(bits_of(g), h << 16);
    }
}

/* --- GPU against CPU ------------------------------------------------------------------------- */

/* 1 when a real CUDA device is there; else prints why not. */
static int have_cuda_device(void)
{
    struct inventory inv;
    int rc = inventory_cuda(&inv);

    if (rc < 0) {
        print_message("no usable CUDA device: inventory_cuda: %s\n", err_str(rc));
        return 0;
    }
    if (!inventory_have_cuda()) {
        print_message("built without CUDA (CASTOR_CUDA=OFF or no toolkit): GPU test skipped\n");
        return 0;
    }
    if (inv.count == 0) {
        print_message("no CUDA device on this machine: GPU test skipped\n");
        return 0;
    }
    return 1;
}

/* gradstats_store writes the element it is given, rounded as the conversions round, at its index
 * only: 1 + 2^-11 is a tie in fp16 (to even: 0x3C00) and 1 + 3 * 2^-11 rounds up (0x3C02); in
 * bf16 1 + 2^-8 is a tie (0x3F80) and 1 + 3 * 2^-8 rounds up (0x3F82); an unknown type writes
 * nothing. */
static void gradstats_store__rounds_and_places(void **state)
{
    float f[3] = {0};
    uint16_t h[3] = {0};

    (void)state;
    gradstats_store(f, 1, GRADSTATS_F32, 1.0f + 0x1p-23f);
    assert_true(f[0] == 0.0f && f[1] == 1.0f + 0x1p-23f && f[2] == 0.0f);
    gradstats_store(h, 0, GRADSTATS_F16, 1.0f + 0x1p-11f);
    gradstats_store(h, 2, GRADSTATS_F16, 1.0f + 3 * 0x1p-11f);
    assert_int_equal(h[0], 0x3C00);
    assert_int_equal(h[1], 0);
    assert_int_equal(h[2], 0x3C02);
    gradstats_store(h, 0, GRADSTATS_BF16, 1.0f + 0x1p-8f);
    gradstats_store(h, 1, GRADSTATS_BF16, 1.0f + 3 * 0x1p-8f);
    assert_int_equal(h[0], 0x3F80);
    assert_int_equal(h[1], 0x3F82);
    gradstats_store(h, 2, (enum gradstats_dtype)7, 2.0f);
    assert_int_equal(h[2], 0x3C02);
}

/* A seeded buffer of len elements of dtype, with values of a few sizes and signs. */
static void *random_buffer(size_t len, enum gradstats_dtype dtype, uint64_t seed)
{
    size_t size = dtype == GRADSTATS_F32 ? 4 : 2;
    unsigned char *p = malloc(len * size);

    assert_non_null(p);
    for (size_t j = 0; j < len; j++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        float v = (float)((int64_t)(seed >> 11) - (1LL << 52)) / (float)(1LL << 52);
        v *= (j % 7 == 0) ? 30.0f : 0.01f;
        gradstats_store(p, j, dtype, v);
    }
    return p;
}

/*
 * The GPU's statistics match the CPU's to a relative 1e-5: each GPU thread adds at most
 * ceil(len / (1024 x 256)) squares in fp32 (relative error about that many times 6e-8) and the
 * average is formed in fp32 (a few ulps); everything after is fp64. An indexing or reduction
 * mistake is off by far more. Lengths cover a partial block, a partial grid and several strides;
 * buffer counts every launch bucket. Two runs give identical bits (fixed-order reduction).
 */
static void gradstats_gpu__matches_cpu(void **state)
{
    const size_t lens[] = {1, 255, 257, 100003, 3 * 1024 * 256 + 17};
    const size_t counts[] = {1, 2, 3, 5, 8, 13, 32};
    const enum gradstats_dtype dtypes[] = {GRADSTATS_F32, GRADSTATS_BF16, GRADSTATS_F16};

    (void)state;
    if (!have_cuda_device())
        skip();
    for (size_t t = 0; t < 3; t++)
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                size_t n = counts[c], len = lens[l], size = dtypes[t] == GRADSTATS_F32 ? 4 : 2;
                void *host[GRADSTATS_MAX_BUFS], *dev[GRADSTATS_MAX_BUFS];
                double cpu[GRADSTATS_MAX_BUFS + 1], gpu[GRADSTATS_MAX_BUFS + 1],
                    again[GRADSTATS_MAX_BUFS + 1];

                for (size_t i = 0; i < n; i++) {
                    host[i] = random_buffer(len, dtypes[t], 1000 * l + 10 * i + t);
                    assert_int_equal(gradstats_device_copy(host[i], len * size, &dev[i]), 0);
                }
                assert_int_equal(gradstats_cpu((const void *const *)host, n, len, dtypes[t], cpu),
                                 0);
                assert_int_equal(
                    gradstats_gpu((const void *const *)dev, n, len, dtypes[t], NULL, gpu), 0);
                assert_int_equal(
                    gradstats_gpu((const void *const *)dev, n, len, dtypes[t], NULL, again), 0);
                for (size_t i = 0; i <= n; i++) {
                    assert_float_equal(gpu[i], cpu[i], 1e-5 * cpu[i]);
                    assert_memory_equal(&gpu[i], &again[i], sizeof(double));
                }
                for (size_t i = 0; i < n; i++) {
                    gradstats_device_free(dev[i]);
                    free(host[i]);
                }
            }
}

/* Non-finite elements reach the GPU's statistics as on the CPU, and len 0 gives zeros. */
static void gradstats_gpu__non_finite_and_empty(void **state)
{
    const uint16_t one16[] = {0x3C00, 0x3C00}, inf16[] = {0x3C00, 0x7C00}, nan16[] = {0x7E00, 0};
    void *dev[3];
    double out[4];

    (void)state;
    if (!have_cuda_device())
        skip();
    assert_int_equal(gradstats_device_copy(one16, sizeof(one16), &dev[0]), 0);
    assert_int_equal(gradstats_device_copy(inf16, sizeof(inf16), &dev[1]), 0);
    assert_int_equal(gradstats_device_copy(nan16, sizeof(nan16), &dev[2]), 0);
    assert_int_equal(gradstats_gpu((const void *const *)dev, 2, 2, GRADSTATS_F16, NULL, out), 0);
    assert_float_equal(out[0], 2.0, 0.0);
    assert_true(isinf(out[1]) && isinf(out[2]));
    assert_int_equal(gradstats_gpu((const void *const *)dev, 3, 2, GRADSTATS_F16, NULL, out), 0);
    assert_true(isnan(out[2]) && isnan(out[3]));
    assert_int_equal(gradstats_gpu((const void *const *)dev, 3, 0, GRADSTATS_F16, NULL, out), 0);
    assert_float_equal(out[0] + out[1] + out[2] + out[3], 0.0, 0.0);
    for (int i = 0; i < 3; i++)
        gradstats_device_free(dev[i]);
}

/* Without a device every GPU entry point says so (after checking its arguments). */
static void gradstats_gpu__no_device_is_nodev(void **state)
{
    const float a[] = {1};
    const void *bufs[] = {a};
    double out[2] = {7, 7}, stats[2] = {1, 2};
    void *dev = NULL;
    int comm_standin = 0;

    (void)state;
    if (have_cuda_device()) {
        print_message("a CUDA device is present: the no-device path is not reachable\n");
        skip();
    }
    assert_int_equal(gradstats_gpu(bufs, 1, 1, GRADSTATS_F32, NULL, out), ERR_NODEV);
    assert_int_equal(gradstats_gpu(bufs, 0, 1, GRADSTATS_F32, NULL, out), ERR_INVAL);
    assert_float_equal(out[0], 7.0, 0.0);
    assert_int_equal(gradstats_device_copy(a, sizeof(a), &dev), ERR_NODEV);
    assert_null(dev);
    assert_int_equal(gradstats_allreduce(stats, 2, &comm_standin, NULL), ERR_NODEV);
    assert_int_equal(gradstats_allreduce(stats, 2, NULL, NULL), ERR_INVAL);
    assert_float_equal(stats[1], 2.0, 0.0);
    gradstats_device_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradstats_cpu__fp32_hand_computed),
        cmocka_unit_test(gradstats_cpu__bf16_hand_computed),
        cmocka_unit_test(gradstats_cpu__fp16_hand_computed),
        cmocka_unit_test(gradstats_cpu__edge_values),
        cmocka_unit_test(gradstats_cpu__empty_and_bad_arguments),
        cmocka_unit_test(gradstats_f16_to_float__values),
        cmocka_unit_test(gradstats_float_to_f16__rounding_and_edges),
        cmocka_unit_test(gradstats_bf16__rounding_and_edges),
        cmocka_unit_test(gradstats_conversions__round_trip_all_patterns),
        cmocka_unit_test(gradstats_store__rounds_and_places),
        cmocka_unit_test(gradstats_gpu__matches_cpu),
        cmocka_unit_test(gradstats_gpu__non_finite_and_empty),
        cmocka_unit_test(gradstats_gpu__no_device_is_nodev),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
