/* inventory.h: the GPUs of this machine (name, total and free memory), from the CUDA runtime or
 * faked for the local world, and an all-reduce bandwidth probe (NCCL). */
#ifndef CASTOR_CUDA_INVENTORY_H
#define CASTOR_CUDA_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

/* The most GPUs one inventory lists (the largest cloud instances have 16). */
#define INVENTORY_MAX_GPUS 64
/* CASTOR_FAKE_GPUS=N or N:GIB: N fake GPUs of GIB GiB each (default INVENTORY_FAKE_GIB). */
#define INVENTORY_FAKE_ENV "CASTOR_FAKE_GPUS"
#define INVENTORY_FAKE_GIB 16
#define INVENTORY_FAKE_MAX_GIB 4096
#define INVENTORY_FAKE_NAME "castor fake GPU"

struct inventory_gpu {
    int index; /* CUDA device ordinal, or the fake GPU's number */
    char name[256];
    uint64_t total_bytes;
    uint64_t free_bytes;
};

struct inventory {
    int count; /* GPUs listed in gpu[0..count) */
    int fake;  /* 1 when they come from CASTOR_FAKE_GPUS */
    struct inventory_gpu gpu[INVENTORY_MAX_GPUS];
};

/* 1 when this build has the CUDA runtime (inventory_have_cuda) or NCCL (inventory_have_nccl),
 * else 0: whether "no GPU" means no device or no support. */
int inventory_have_cuda(void);
int inventory_have_nccl(void);

/* The fake GPUs that spec ("N" or "N:GIB", N in 0..INVENTORY_MAX_GPUS, GIB in
 * 1..INVENTORY_FAKE_MAX_GIB) describes: all memory free. Returns ERR_INVAL (NULL), ERR_PARSE
 * (not of that form) or ERR_RANGE (a number out of range); *out written only on success. */
int inventory_fake(const char *spec, struct inventory *out);

/*
 * The real CUDA devices. A build without CUDA, a machine without a device or without a usable
 * driver: 0 and count 0. Reading free memory creates each device's primary CUDA context, which
 * holds device memory (hundreds of MiB) until the process exits: a daemon should probe in a
 * short-lived process. Returns ERR_RANGE beyond INVENTORY_MAX_GPUS, ERR_INTERNAL for other CUDA
 * errors; the current device is restored; *out written only on success.
 */
int inventory_cuda(struct inventory *out);

/* What castor-node reports: the fake GPUs when CASTOR_FAKE_GPUS is set and not empty (its errors
 * as inventory_fake's), else inventory_cuda. */
int inventory_probe(struct inventory *out);

/* One all-reduce bandwidth measurement. */
struct inventory_bw {
    int ranks;      /* GPUs taking part */
    size_t bytes;   /* payload per all-reduce (a multiple of 4: fp32 elements) */
    int iters;      /* timed all-reduces, after two untimed ones */
    double seconds; /* mean wall time of one all-reduce */
    double algbw;   /* bytes / seconds */
    double busbw;   /* algbw x 2 (ranks - 1) / ranks: what each link carries in a ring */
};

/*
 * Times iters (1..10000) in-place fp32 sum all-reduces of bytes (rounded down to a multiple of
 * 4, at least 4; at most 1 GiB) with NCCL. With nccl_comm NULL, over all the CUDA devices of this
 * process (one communicator made and destroyed here); otherwise over the given ncclComm_t, on its
 * device, which every rank of it must call together. This seeds the synchronisation-time prior
 * for placements a job has not run. Returns ERR_INVAL for bad arguments, ERR_NODEV without a
 * CUDA device (fake GPUs have none) or in a build without CUDA or NCCL, ERR_NOMEM, ERR_IO or
 * ERR_INTERNAL for CUDA and NCCL failures; *out written only on success.
 */
int inventory_allreduce_bw(void *nccl_comm, size_t bytes, int iters, struct inventory_bw *out);

#endif
