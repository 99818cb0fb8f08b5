/* fuzz_profile.c: libFuzzer target for the measured profiles (measured_load in src/sim/measured.c,
 * then measured_to_profile in src/model/profile.c's terms): the input up to a line "--" is
 * placements.csv, what follows it (if there is such a line) scalability.csv, both written to a
 * scratch folder that is then loaded. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz_support.h"
#include "model/profile.h"
#include "sim/measured.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char sep[] = "\n--\n";
    const uint8_t *cut = NULL;
    size_t first = size;
    struct measured *m = NULL;
    struct profile p;
    struct error e = {0};
    char dir[512];

    for (size_t i = 0; i + sizeof(sep) - 1 <= size && !cut; i++)
        if (memcmp(data + i, sep, sizeof(sep) - 1) == 0) {
            cut = data + i;
            first = i;
        }
    fuzz_write(fuzz_path("placements.csv"), data, first);
    if (cut)
        fuzz_write(fuzz_path("scalability.csv"), cut + sizeof(sep) - 1,
                   size - first - (sizeof(sep) - 1));
    else
        unlink(fuzz_path("scalability.csv"));
    snprintf(dir, sizeof(dir), "%s", fuzz_path(""));
    if (measured_load(dir, &m, &e) < 0)
        return 0;
    profile_init(&p);
    (void)measured_to_profile(m, ~0u, &p);
    profile_free(&p);
    measured_free(m);
    return 0;
}
