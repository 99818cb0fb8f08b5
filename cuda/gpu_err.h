/* gpu_err.h: CUDA runtime and NCCL statuses translated into castor's error table (internal to
 * cuda/, built only with CUDA). */
#ifndef CASTOR_CUDA_GPU_ERR_H
#define CASTOR_CUDA_GPU_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

/* A cudaError_t (as int) into 0 or an error code: no device or no usable driver -> ERR_NODEV, out
 * of device memory -> ERR_NOMEM, an invalid value (a bad pointer or size) -> ERR_INVAL, anything
 * else -> ERR_INTERNAL. */
int gpu_err_from_cuda(int status);

/* An ncclResult_t (as int) into 0 or an error code: invalid argument or usage -> ERR_INVAL, a
 * system or remote failure -> ERR_IO (a peer or the network may come back), else ERR_INTERNAL. */
int gpu_err_from_nccl(int status);

#ifdef __cplusplus
}
#endif

#endif
