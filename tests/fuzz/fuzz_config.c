/* fuzz_config.c: libFuzzer target for the controller's configuration file (config_load in
 * src/control/config.c, over src/util/conf.c): the input is written to a scratch file and loaded
 * as castor.yaml; a loaded configuration is compared with itself as a reload would be. */
#include "control/config.h"
#include "fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_path("castor.yaml");
    struct config *c = NULL;
    struct error e = {0};
    char why[512], warn[512];

    fuzz_write(path, data, size);
    if (config_load(path, &c, &e) < 0)
        return 0;
    (void)config_reload_check(c, c, why, sizeof(why), warn, sizeof(warn));
    config_free(c);
    return 0;
}
