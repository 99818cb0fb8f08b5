/* gradstats_nogpu.c: the GPU entry points of gradstats.h in a build without CUDA: arguments are
 * checked as in the CUDA build, then every call reports that there is no device. */
#include "cuda/gradstats.h"

#include "util/error.h"

int gradstats_gpu(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                  void *stream, double *out)
{
    int rc = gradstats_check(bufs, nbufs, len, dtype, out);

    (void)stream;
    return rc < 0 ? rc : ERR_NODEV;
}

int gradstats_allreduce(double *stats, size_t n, void *nccl_comm, void *stream)
{
    (void)stream;
    if (!stats || n == 0 || !nccl_comm)
        return ERR_INVAL;
    return ERR_NODEV;
}

int gradstats_device_copy(const void *host, size_t bytes, void **dev)
{
    if (!host || !dev || bytes == 0)
        return ERR_INVAL;
    return ERR_NODEV;
}

void gradstats_device_free(void *dev)
{
    (void)dev;
}
