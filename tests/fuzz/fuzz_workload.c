/* fuzz_workload.c: libFuzzer target for the workload traces (workload_load in src/sim/workload.c):
 * the input is written to a scratch file and read as a trace of the bundled applications. */
#include "fuzz/fuzz_support.h"
#include "sim/workload.h"

static const char *const fz_apps[] = {"bert", "cifar10", "deepspeech2", "imagenet",
                                      "ncf",  "yolov3",  NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_path("workload.csv");
    struct workload *w = NULL;
    struct error e = {0};

    fuzz_write(path, data, size);
    if (workload_load(path, fz_apps, &w, &e) == 0)
        workload_free(w);
    return 0;
}
