/* gpu_err.c: CUDA runtime and NCCL statuses into castor's error table. */
#include "cuda/gpu_err.h"

#include <cuda_runtime.h>
#ifdef CASTOR_HAVE_NCCL
#include <nccl.h>
#endif

#include "util/error.h"

int gpu_err_from_cuda(int status)
{
    switch ((enum cudaError)status) {
    case cudaSuccess:
        return 0;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
        return ERR_NODEV;
    case cudaErrorMemoryAllocation:
        return ERR_NOMEM;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
        return ERR_INVAL;
    default:
        return ERR_INTERNAL;
    }
}

int gpu_err_from_nccl(int status)
{
#ifdef CASTOR_HAVE_NCCL
    switch ((ncclResult_t)status) {
    case ncclSuccess:
        return 0;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
        return ERR_INVAL;
    case ncclSystemError:
    case ncclRemoteError:
        return ERR_IO;
    default:
        return ERR_INTERNAL;
    }
#else
    return status == 0 ? 0 : ERR_INTERNAL;
#endif
}
