/* fuzz_scenario.c: libFuzzer target for the market scenarios (src/sim/scenario.c): an input whose
 * first byte is even is a scenario file (written to a scratch folder next to a small workload, a
 * trace and a price series it may name: workload.csv, trace.csv, prices.csv); one whose first
 * byte is odd is an availability trace for scenario_parse_trace. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_support.h"
#include "sim/scenario.h"

static const char fz_workload[] = "name,time,application,num_replicas,batch_size\n"
                                  "cifar10-0,0,cifar10,1,128\n";
static const char fz_trace[] = "0,add,node1\n1000,add,node2\n5000,remove,node1\n";
static const char fz_prices[] = "time_s,price\n0,1.0\n3600,1.5\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_write(fuzz_path("workload.csv"), (const uint8_t *)fz_workload, strlen(fz_workload));
    fuzz_write(fuzz_path("trace.csv"), (const uint8_t *)fz_trace, strlen(fz_trace));
    fuzz_write(fuzz_path("prices.csv"), (const uint8_t *)fz_prices, strlen(fz_prices));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct error e = {0};

    if (size == 0)
        return 0;
    if (data[0] & 1) {
        struct mkt_trace_event *ev = NULL;
        int n = 0;

        if (scenario_parse_trace("fuzz.csv", (const char *)data + 1, size - 1, &ev, &n, &e) == 0)
            free(ev);
    } else {
        const char *path = fuzz_path("scenario.yaml");
        struct scenario *s = NULL;

        fuzz_write(path, data + 1, size - 1);
        if (scenario_load(path, &s, &e) == 0)
            scenario_free(s);
    }
    return 0;
}
