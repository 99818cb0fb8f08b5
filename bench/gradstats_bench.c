/* gradstats_bench.c: how fast the GPU computes a step's gradient statistics (cuda/gradstats.h),
 * against the bytes it must read, and the NCCL all-reduce probe; says so and exits 0 where no
 * CUDA device is present. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/gradstats.h"
#include "cuda/inventory.h"
#include "util/error.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Host buffer of len elements of dtype, uniform in [-1.75e-3, 1.75e-3) from a fixed generator
 * (xorshift), so that every run sees the same gradients. NULL when out of memory. */
static void *make_buffer(size_t len, enum gradstats_dtype dtype, uint64_t seed)
{
    size_t size = dtype == GRADSTATS_F32 ? 4 : 2;
    void *b = malloc(len * size);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

    if (!b)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        float v;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5) * 3.5e-3f;
        gradstats_store(b, i, dtype, v);
    }
    return b;
}

/* Times gradstats_gpu on nbufs device buffers of len elements (mean of iters calls after two
 * warm-ups) and checks it once against the CPU reference. 0, or an error code. */
static int bench_dtype(enum gradstats_dtype dtype, const char *name, size_t nbufs, size_t len,
                       int iters)
{
    size_t size = dtype == GRADSTATS_F32 ? 4 : 2;
    void *host[GRADSTATS_MAX_BUFS] = {0}, *dev[GRADSTATS_MAX_BUFS] = {0};
    double gpu[GRADSTATS_MAX_BUFS + 1], cpu[GRADSTATS_MAX_BUFS + 1], t0, dt, worst = 0;
    int rc = 0;

    for (size_t i = 0; i < nbufs; i++) {
        if (!(host[i] = make_buffer(len, dtype, 17 + i))) {
            rc = ERR_NOMEM;
            goto out;
        }
        if ((rc = gradstats_device_copy(host[i], len * size, &dev[i])) < 0)
            goto out;
    }
    for (int w = 0; w < 2; w++)
        if ((rc = gradstats_gpu((const void *const *)dev, nbufs, len, dtype, NULL, gpu)) < 0)
            goto out;
    t0 = now_s();
    for (int k = 0; k < iters; k++)
        if ((rc = gradstats_gpu((const void *const *)dev, nbufs, len, dtype, NULL, gpu)) < 0)
            goto out;
    dt = (now_s() - t0) / iters;
    if ((rc = gradstats_cpu((const void *const *)host, nbufs, len, dtype, cpu)) < 0)
        goto out;
    for (size_t i = 0; i <= nbufs; i++)
        worst = fmax(worst, fabs(gpu[i] - cpu[i]) / fabs(cpu[i]));
    printf("%-5s %3zu x %10zu  %9.3f ms  %8.1f GB/s read  max rel. diff from CPU %.1e\n", name,
           nbufs, len, dt * 1e3, (double)(nbufs * len * size) / dt / 1e9, worst);
out:
    for (size_t i = 0; i < nbufs; i++) {
        gradstats_device_free(dev[i]);
        free(host[i]);
    }
    return rc;
}

int main(int argc, char **argv)
{
    size_t nbufs = 8, len = 25000000;
    int iters = 20, rc;
    struct inventory inv;
    struct inventory_bw bw;

    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--bufs") == 0)
            nbufs = (size_t)strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--elements") == 0)
            len = (size_t)strtoul(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: castor-bench-gradstats [--bufs N (1-%d)] [--elements M] "
                    "[--iters K]\n",
                    GRADSTATS_MAX_BUFS);
            return 2;
        }
    }
    if (nbufs < 1 || nbufs > GRADSTATS_MAX_BUFS || len < 1 || iters < 1) {
        fprintf(stderr, "castor-bench-gradstats: --bufs 1-%d, --elements and --iters at least 1\n",
                GRADSTATS_MAX_BUFS);
        return 2;
    }
    if (inventory_cuda(&inv) < 0 || inv.count == 0) {
        printf("castor-bench-gradstats: no CUDA device (or a build without CUDA): nothing to "
               "time\n");
        return 0;
    }
    printf("castor-bench-gradstats: %s, %.1f GiB; gradient statistics of %zu buffers\n",
           inv.gpu[0].name, inv.gpu[0].total_bytes / 1073741824.0, nbufs);
    if ((rc = bench_dtype(GRADSTATS_F32, "fp32", nbufs, len, iters)) < 0 ||
        (rc = bench_dtype(GRADSTATS_BF16, "bf16", nbufs, len, iters)) < 0 ||
        (rc = bench_dtype(GRADSTATS_F16, "fp16", nbufs, len, iters)) < 0) {
        fprintf(stderr, "castor-bench-gradstats: %s\n", err_str(rc));
        return 1;
    }
    for (size_t bytes = 1 << 10; bytes <= (size_t)1 << 28; bytes <<= 6) {
        rc = inventory_allreduce_bw(NULL, bytes, 20, &bw);
        if (rc == ERR_NODEV) {
            printf("all-reduce probe: built without NCCL\n");
            break;
        }
        if (rc < 0) {
            fprintf(stderr, "castor-bench-gradstats: all-reduce probe: %s\n", err_str(rc));
            return 1;
        }
        printf("all-reduce of %10zu bytes over %d GPU(s): %9.1f us, bus %.2f GB/s\n", bw.bytes,
               bw.ranks, bw.seconds * 1e6, bw.busbw / 1e9);
    }
    return 0;
}
