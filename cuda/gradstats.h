/* gradstats.h: squared L2 norms of gradient buffers and of their element-wise average in one
 * pass, on the CPU (the reference) and on the GPU; fp16 and bf16 conversions. No CUDA types. */
#ifndef CASTOR_CUDA_GRADSTATS_H
#define CASTOR_CUDA_GRADSTATS_H

#include <stddef.h>
#include <stdint.h>

/* Element types of the gradient buffers. */
enum gradstats_dtype {
    GRADSTATS_F32 = 0,  /* IEEE binary32 */
    GRADSTATS_BF16 = 1, /* bfloat16: the top 16 bits of a binary32 */
    GRADSTATS_F16 = 2,  /* IEEE binary16 */
};

/* The most buffers (replicas or micro-batches) one call takes. */
#define GRADSTATS_MAX_BUFS 32

/*
 * The statistics of nbufs buffers of len elements each, all of dtype: out[i] = sum_j buf_i[j]^2
 * for i < nbufs, and out[nbufs] = sum_j (sum_i buf_i[j] / nbufs)^2, the squared norm of the
 * element-wise average (the all-reduced gradient when the buffers are the replicas' gradients).
 * So out holds nbufs + 1 doubles, written only on success. A NaN or infinite element makes the
 * statistics it enters NaN or infinite (that is how an overflowed step shows); nothing is
 * refused for it. len 0 gives zeros.
 */

/* 0 when the arguments describe buffers that gradstats_cpu and gradstats_gpu take (bufs and out
 * not NULL, nbufs in 1..GRADSTATS_MAX_BUFS, a known dtype, no NULL buffer unless len is 0), else
 * ERR_INVAL. */
int gradstats_check(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                    const double *out);

/* CPU reference: bufs are host pointers; elements are widened to double and every sum is in
 * double. Returns ERR_INVAL for NULL pointers, an unknown dtype or nbufs outside
 * 1..GRADSTATS_MAX_BUFS. */
int gradstats_cpu(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                  double *out);

/*
 * GPU: bufs is a host array of nbufs device pointers (on the current device); the work is queued
 * on stream (a cudaStream_t, NULL for the default stream) and the call returns once out (host
 * memory) holds the result. Each thread sums squares in fp32 over its share of the elements,
 * blocks reduce in fp64, and a second kernel adds the blocks' partial sums in a fixed order, so
 * the result is deterministic for a given len. The fp32 stages overflow to infinity where the
 * double reference may not (an element beyond about 1.8e19, or a sum of squares beyond 3.4e38:
 * a gradient that has overflowed anyway). Returns ERR_INVAL as gradstats_cpu, ERR_NODEV without a
 * device or in a build without CUDA, ERR_NOMEM when device scratch memory runs out, ERR_INTERNAL
 * for other CUDA errors.
 */
int gradstats_gpu(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                  void *stream, double *out);

/*
 * Sums n doubles (host memory, in place) across the ranks of an NCCL communicator (an ncclComm_t
 * whose device is the current one), on stream (NULL: default); every rank calls it with the same
 * n. This is how per-rank gradient statistics become the job's. Returns ERR_INVAL for NULL
 * arguments or n 0, ERR_NODEV without a device or in a build without CUDA or NCCL, ERR_NOMEM,
 * ERR_INTERNAL for other CUDA or NCCL errors; stats is unchanged on error.
 */
int gradstats_allreduce(double *stats, size_t n, void *nccl_comm, void *stream);

/* Copies bytes of host memory into a new buffer on the current device; *dev is the caller's, to
 * release with gradstats_device_free. Returns ERR_INVAL (NULL arguments or bytes 0), ERR_NODEV,
 * ERR_NOMEM or ERR_INTERNAL. For tests and tools that stage data for gradstats_gpu. */
int gradstats_device_copy(const void *host, size_t bytes, void **dev);

/* Releases a buffer from gradstats_device_copy; NULL is a no-op. */
void gradstats_device_free(void *dev);

/* Conversions between binary32 and the 16-bit formats. Widening is exact (NaN stays NaN with its
 * sign, infinities and subnormals are kept); narrowing rounds to nearest, ties to even, overflows
 * to infinity, and turns NaN into a quiet NaN of the same sign. */
float gradstats_f16_to_float(uint16_t h);
uint16_t gradstats_float_to_f16(float f);
float gradstats_bf16_to_float(uint16_t b);
uint16_t gradstats_float_to_bf16(float f);

/* Writes v as element i of buf, a buffer of dtype (the 16-bit types rounded to nearest even), for
 * tests and tools that make gradient buffers; an unknown dtype writes nothing. */
void gradstats_store(void *buf, size_t i, enum gradstats_dtype dtype, float v);

#endif
