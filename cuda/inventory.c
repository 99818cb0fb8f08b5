/* inventory.c: the GPU inventory (CUDA runtime, or fake GPUs from the environment) and the NCCL
 * all-reduce bandwidth probe. */
#include "cuda/inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CASTOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/gpu_err.h"
#endif
#ifdef CASTOR_HAVE_NCCL
#include <nccl.h>
#include <time.h>
#endif

#include "util/error.h"

int inventory_have_cuda(void)
{
#ifdef CASTOR_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

int inventory_have_nccl(void)
{
#ifdef CASTOR_HAVE_NCCL
    return 1;
#else
    return 0;
#endif
}

/* A decimal number of at most 9 digits at *s (no sign, no space); advances *s. ERR_PARSE if none,
 * ERR_RANGE above max. */
static int parse_count(const char **s, long max, long *out)
{
    long v = 0;
    int digits = 0;

    for (; **s >= '0' && **s <= '9'; (*s)++) {
        if (++digits > 9)
            return ERR_RANGE;
        v = v * 10 + (**s - '0');
    }
    if (digits == 0)
        return ERR_PARSE;
    if (v > max)
        return ERR_RANGE;
    *out = v;
    return 0;
}

int inventory_fake(const char *spec, struct inventory *out)
{
    struct inventory inv;
    long n = 0, gib = INVENTORY_FAKE_GIB;
    int rc;

    if (!spec || !out)
        return ERR_INVAL;
    rc = parse_count(&spec, INVENTORY_MAX_GPUS, &n);
    if (rc == 0 && *spec == ':') {
        spec++;
        rc = parse_count(&spec, INVENTORY_FAKE_MAX_GIB, &gib);
        if (rc == 0 && gib < 1)
            rc = ERR_RANGE;
    }
    if (rc == 0 && *spec != '\0')
        rc = ERR_PARSE;
    if (rc < 0)
        return rc;
    memset(&inv, 0, sizeof(inv));
    inv.count = (int)n;
    inv.fake = 1;
    for (int i = 0; i < inv.count; i++) {
        inv.gpu[i].index = i;
        snprintf(inv.gpu[i].name, sizeof(inv.gpu[i].name), "%s", INVENTORY_FAKE_NAME);
        inv.gpu[i].total_bytes = inv.gpu[i].free_bytes = (uint64_t)gib << 30;
    }
    *out = inv;
    return 0;
}

int inventory_cuda(struct inventory *out)
{
    struct inventory inv;
    int rc = 0;

    if (!out)
        return ERR_INVAL;
    memset(&inv, 0, sizeof(inv));
#ifdef CASTOR_HAVE_CUDA
    int n = 0, prev = 0;

    rc = gpu_err_from_cuda(cudaGetDeviceCount(&n));
    if (rc == ERR_NODEV) /* no device or no usable driver: nothing to list */
        n = 0, rc = 0;
    if (rc == 0 && n > INVENTORY_MAX_GPUS)
        rc = ERR_RANGE;
    if (rc == 0 && n > 0)
        rc = gpu_err_from_cuda(cudaGetDevice(&prev));
    if (rc < 0)
        return rc;
    for (int i = 0; rc == 0 && i < n; i++) {
        struct cudaDeviceProp prop;
        size_t free_b = 0, total_b = 0;

        rc = gpu_err_from_cuda(cudaGetDeviceProperties(&prop, i));
        if (rc == 0)
            rc = gpu_err_from_cuda(cudaSetDevice(i));
        if (rc == 0)
            rc = gpu_err_from_cuda(cudaMemGetInfo(&free_b, &total_b));
        if (rc == 0) {
            inv.gpu[i].index = i;
            snprintf(inv.gpu[i].name, sizeof(inv.gpu[i].name), "%s", prop.name);
            inv.gpu[i].total_bytes = total_b;
            inv.gpu[i].free_bytes = free_b;
            inv.count = i + 1;
        }
    }
    if (n > 0)
        cudaSetDevice(prev);
#endif
    if (rc == 0)
        *out = inv;
    return rc;
}

int inventory_probe(struct inventory *out)
{
    const char *spec = getenv(INVENTORY_FAKE_ENV);

    if (spec && *spec)
        return inventory_fake(spec, out);
    return inventory_cuda(out);
}

#ifdef CASTOR_HAVE_NCCL
/* The one probe that reads a clock: the mean wall time is what it measures. */
static double monotonic_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One participating device of this process. */
struct bw_rank {
    int dev;
    ncclComm_t comm;
    cudaStream_t stream;
    float *buf;
};

/* One round of all-reduces, one per local rank, grouped so that NCCL runs them together. */
static int bw_round(struct bw_rank *rank, int nlocal, size_t count)
{
    int rc = gpu_err_from_nccl(ncclGroupStart());

    for (int r = 0; rc == 0 && r < nlocal; r++)
        rc = gpu_err_from_nccl(ncclAllReduce(rank[r].buf, rank[r].buf, count, ncclFloat, ncclSum,
                                             rank[r].comm, rank[r].stream));
    int end = gpu_err_from_nccl(ncclGroupEnd());
    return rc < 0 ? rc : end;
}

static int bw_sync(struct bw_rank *rank, int nlocal)
{
    int rc = 0;

    for (int r = 0; r < nlocal; r++) {
        int s = gpu_err_from_cuda(cudaStreamSynchronize(rank[r].stream));
        if (rc == 0)
            rc = s;
    }
    return rc;
}
#endif

int inventory_allreduce_bw(void *nccl_comm, size_t bytes, int iters, struct inventory_bw *out)
{
    if (!out || bytes < 4 || bytes > ((size_t)1 << 30) || iters < 1 || iters > 10000)
        return ERR_INVAL;
#ifdef CASTOR_HAVE_NCCL
    struct bw_rank rank[INVENTORY_MAX_GPUS];
    ncclComm_t comms[INVENTORY_MAX_GPUS];
    int devs[INVENTORY_MAX_GPUS];
    int ndev = 0, prev = 0, nlocal = 0, ranks = 0, own = 0;
    size_t count = bytes / 4;
    double t0 = 0.0, t1 = 0.0;
    int rc = gpu_err_from_cuda(cudaGetDeviceCount(&ndev));

    memset(rank, 0, sizeof(rank));
    if (rc == 0 && ndev == 0)
        rc = ERR_NODEV;
    if (rc == 0 && ndev > INVENTORY_MAX_GPUS)
        rc = ERR_RANGE;
    if (rc == 0)
        rc = gpu_err_from_cuda(cudaGetDevice(&prev));
    if (rc < 0)
        return rc;

    if (nccl_comm) {
        rank[0].comm = (ncclComm_t)nccl_comm;
        nlocal = 1;
        rc = gpu_err_from_nccl(ncclCommCuDevice(rank[0].comm, &rank[0].dev));
        if (rc == 0)
            rc = gpu_err_from_nccl(ncclCommCount(rank[0].comm, &ranks));
    } else {
        for (int d = 0; d < ndev; d++)
            devs[d] = d;
        rc = gpu_err_from_nccl(ncclCommInitAll(comms, ndev, devs));
        if (rc == 0) {
            own = 1;
            nlocal = ranks = ndev;
            for (int d = 0; d < ndev; d++)
                rank[d].dev = d, rank[d].comm = comms[d];
        }
    }
    for (int r = 0; rc == 0 && r < nlocal; r++) {
        rc = gpu_err_from_cuda(cudaSetDevice(rank[r].dev));
        if (rc == 0)
            rc = gpu_err_from_cuda(cudaMalloc((void **)&rank[r].buf, count * sizeof(float)));
        if (rc == 0)
            rc = gpu_err_from_cuda(cudaMemset(rank[r].buf, 0, count * sizeof(float)));
        if (rc == 0)
            rc = gpu_err_from_cuda(
                cudaStreamCreateWithFlags(&rank[r].stream, cudaStreamNonBlocking));
    }
    if (rc < 0)
        goto out;

    /* Two untimed rounds set up NCCL's channels, then iters timed ones. */
    for (int it = 0; rc == 0 && it < 2; it++)
        rc = bw_round(rank, nlocal, count);
    if (rc == 0)
        rc = bw_sync(rank, nlocal);
    t0 = monotonic_seconds();
    for (int it = 0; rc == 0 && it < iters; it++)
        rc = bw_round(rank, nlocal, count);
    if (rc == 0)
        rc = bw_sync(rank, nlocal);
    t1 = monotonic_seconds();
    if (rc == 0) {
        struct inventory_bw bw = {.ranks = ranks, .bytes = count * sizeof(float), .iters = iters};

        bw.seconds = (t1 - t0) / iters;
        bw.algbw = bw.seconds > 0.0 ? (double)bw.bytes / bw.seconds : 0.0;
        bw.busbw = bw.algbw * 2.0 * (ranks - 1) / ranks;
        *out = bw;
    }
out:
    for (int r = 0; r < nlocal; r++) {
        cudaSetDevice(rank[r].dev);
        if (rank[r].stream)
            cudaStreamDestroy(rank[r].stream);
        cudaFree(rank[r].buf);
        if (own)
            ncclCommDestroy(rank[r].comm);
    }
    cudaSetDevice(prev);
    return rc;
#else
    (void)nccl_comm;
    return ERR_NODEV;
#endif
}
