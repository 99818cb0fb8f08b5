/* gradstats.cu: the GPU gradient statistics (one pass over the buffers: fp32 per thread, fp64 per
 * block, fp64 across blocks in a fixed order), the NCCL all-reduce of statistics, and staging. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifdef CASTOR_HAVE_NCCL
#include <nccl.h>
#endif

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "cuda/gpu_err.h"
#include "cuda/gradstats.h"
#include "util/error.h"
}

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/* Enough blocks to fill a large GPU several times over; each thread then strides over the rest. */
constexpr int kMaxBlocks = 1024;

/* The buffers travel by value in the kernel's parameters (8 x 32 bytes). */
struct bufs_arg {
    const void *p[GRADSTATS_MAX_BUFS];
};

template <int D> __device__ __forceinline__ float load(const void *p, size_t j);

template <> __device__ __forceinline__ float load<GRADSTATS_F32>(const void *p, size_t j)
{
    return static_cast<const float *>(p)[j];
}

template <> __device__ __forceinline__ float load<GRADSTATS_BF16>(const void *p, size_t j)
{
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[j]);
}

template <> __device__ __forceinline__ float load<GRADSTATS_F16>(const void *p, size_t j)
{
    return __half2float(static_cast<const __half *>(p)[j]);
}

__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/*
 * Pass 1. N is nbufs rounded up to a power of two (so the accumulators stay in registers); each
 * thread keeps N + 1 fp32 sums (squares of each buffer, then the square of the average) over a
 * grid-stride share of the elements; the block reduces them in fp64 and writes its nbufs + 1
 * partial sums to partial[block][*] (the average's last).
 */
template <int N, int D>
__global__ void __launch_bounds__(kThreads)
    partial_kernel(bufs_arg bufs, int nbufs, size_t len, double *partial)
{
    __shared__ double warp_part[kWarps][N + 1];
    float acc[N + 1];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t stride = (size_t)gridDim.x * blockDim.x;

#pragma unroll
    for (int i = 0; i <= N; i++)
        acc[i] = 0.0f;
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < len; j += stride) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < N; i++) {
            if (i < nbufs) {
                float x = load<D>(bufs.p[i], j);
                acc[i] = fmaf(x, x, acc[i]);
                s += x;
            }
        }
        const float a = s / (float)nbufs;
        acc[N] = fmaf(a, a, acc[N]);
    }

#pragma unroll
    for (int i = 0; i <= N; i++) {
        const double v = warp_sum((double)acc[i]);
        if (lane == 0)
            warp_part[warp][i] = v;
    }
    __syncthreads();
    const int k = threadIdx.x;
    if (k <= N && (k < nbufs || k == N)) {
        double v = 0.0;
        for (int w = 0; w < kWarps; w++)
            v += warp_part[w][k];
        partial[(size_t)blockIdx.x * (nbufs + 1) + (k == N ? nbufs : k)] = v;
    }
}

/* Pass 2: block k adds statistic k over the blocks of pass 1, in a fixed order. */
__global__ void __launch_bounds__(kThreads)
    finish_kernel(const double *partial, int nblocks, int nstats, double *out)
{
    __shared__ double warp_part[kWarps];
    const int k = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    double v = 0.0;

    for (int b = threadIdx.x; b < nblocks; b += blockDim.x)
        v += partial[(size_t)b * nstats + k];
    v = warp_sum(v);
    if (lane == 0)
        warp_part[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < kWarps; w++)
            t += warp_part[w];
        out[k] = t;
    }
}

template <int D>
void launch_partial(int nbufs, const bufs_arg &bufs, size_t len, int blocks, cudaStream_t st,
                    double *partial)
{
    if (nbufs <= 1)
        partial_kernel<1, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
    else if (nbufs <= 2)
        partial_kernel<2, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
    else if (nbufs <= 4)
        partial_kernel<4, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
    else if (nbufs <= 8)
        partial_kernel<8, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
    else if (nbufs <= 16)
        partial_kernel<16, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
    else
        partial_kernel<32, D><<<blocks, kThreads, 0, st>>>(bufs, nbufs, len, partial);
}

static_assert(GRADSTATS_MAX_BUFS == 32, "launch_partial's largest bucket is GRADSTATS_MAX_BUFS");
static_assert(32 + 1 <= kThreads, "pass 1 writes one statistic per thread");

/* ERR_NODEV unless a CUDA device is visible. */
int have_device(void)
{
    int n = 0;
    int rc = gpu_err_from_cuda(cudaGetDeviceCount(&n));

    if (rc < 0)
        return rc;
    return n > 0 ? 0 : ERR_NODEV;
}

} // namespace

int gradstats_gpu(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                  void *stream, double *out)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    double host[GRADSTATS_MAX_BUFS + 1] = {0};
    double *scratch = nullptr, *result = nullptr;
    const int nstats = (int)nbufs + 1;
    const size_t want = (len + kThreads - 1) / kThreads;
    const int blocks = want < (size_t)kMaxBlocks ? (int)want : kMaxBlocks;
    bufs_arg arg = {};
    int rc = gradstats_check(bufs, nbufs, len, dtype, out), sync;

    if (rc < 0)
        return rc;
    rc = have_device();
    if (rc < 0 || len == 0)
        goto out;
    for (size_t i = 0; i < nbufs; i++)
        arg.p[i] = bufs[i];

    /* Stream-ordered scratch: the blocks' partial sums, then the nstats results. */
    rc = gpu_err_from_cuda(cudaMallocAsync(reinterpret_cast<void **>(&scratch),
                                           ((size_t)blocks + 1) * nstats * sizeof(double), st));
    if (rc < 0)
        goto out;
    result = scratch + (size_t)blocks * nstats;
    switch (dtype) {
    case GRADSTATS_F32:
        launch_partial<GRADSTATS_F32>((int)nbufs, arg, len, blocks, st, scratch);
        break;
    case GRADSTATS_BF16:
        launch_partial<GRADSTATS_BF16>((int)nbufs, arg, len, blocks, st, scratch);
        break;
    case GRADSTATS_F16:
        launch_partial<GRADSTATS_F16>((int)nbufs, arg, len, blocks, st, scratch);
        break;
    }
    finish_kernel<<<nstats, kThreads, 0, st>>>(scratch, blocks, nstats, result);
    rc = gpu_err_from_cuda(cudaGetLastError());
    if (rc == 0)
        rc = gpu_err_from_cuda(cudaMemcpyAsync(host, result, (size_t)nstats * sizeof(double),
                                               cudaMemcpyDeviceToHost, st));
    /* Freed in stream order whatever happened above; the synchronisation reports kernel faults. */
    cudaFreeAsync(scratch, st);
    sync = gpu_err_from_cuda(cudaStreamSynchronize(st));
    if (rc == 0)
        rc = sync;
out:
    if (rc == 0)
        memcpy(out, host, (size_t)nstats * sizeof(*out));
    return rc;
}

int gradstats_allreduce(double *stats, size_t n, void *nccl_comm, void *stream)
{
    if (!stats || n == 0 || !nccl_comm)
        return ERR_INVAL;
#ifdef CASTOR_HAVE_NCCL
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    double *dev = nullptr, *host = nullptr;
    int rc = have_device(), sync;

    if (rc < 0)
        return rc;
    host = static_cast<double *>(malloc(n * sizeof(double)));
    if (!host)
        return ERR_NOMEM;
    rc = gpu_err_from_cuda(cudaMallocAsync(reinterpret_cast<void **>(&dev), n * sizeof(double), st));
    if (rc < 0)
        goto out;
    rc = gpu_err_from_cuda(
        cudaMemcpyAsync(dev, stats, n * sizeof(double), cudaMemcpyHostToDevice, st));
    if (rc == 0)
        rc = gpu_err_from_nccl(ncclAllReduce(dev, dev, n, ncclDouble, ncclSum,
                                             static_cast<ncclComm_t>(nccl_comm), st));
    if (rc == 0)
        rc = gpu_err_from_cuda(
            cudaMemcpyAsync(host, dev, n * sizeof(double), cudaMemcpyDeviceToHost, st));
    cudaFreeAsync(dev, st);
    sync = gpu_err_from_cuda(cudaStreamSynchronize(st));
    if (rc == 0)
        rc = sync;
    if (rc == 0)
        memcpy(stats, host, n * sizeof(double));
out:
    free(host);
    return rc;
#else
    (void)stream;
    return ERR_NODEV;
#endif
}

int gradstats_device_copy(const void *host, size_t bytes, void **dev)
{
    void *p = nullptr;
    int rc;

    if (!host || !dev || bytes == 0)
        return ERR_INVAL;
    rc = have_device();
    if (rc < 0)
        goto out;
    rc = gpu_err_from_cuda(cudaMalloc(&p, bytes));
    if (rc < 0)
        goto out;
    rc = gpu_err_from_cuda(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
out:
    if (rc < 0)
        gradstats_device_free(p);
    else
        *dev = p;
    return rc;
}

void gradstats_device_free(void *dev)
{
    if (dev)
        cudaFree(dev);
}
