/* fuzz_imds.c: libFuzzer target for the EC2 instance metadata service's role credentials
 * (imds_parse in providers/aws/credentials.c), the JSON an instance's IMDS answers. The reader
 * is static in credentials.c; this file includes credentials.c to reach it (a fuzzing seam that
 * compiles the very code castor runs; no second copy of credentials.o is linked). The shared
 * credentials file (aws_credentials_from_file) is fuzzed on the same input. */
#include "providers/aws/credentials.c"

#include "fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct aws_credentials c = {0};
    struct error e = {0};
    char *text = fuzz_strndup(data, size);
    const char *path = fuzz_path("credentials");

    if (imds_parse(text, &c, &e) == 0)
        aws_credentials_clear(&c);
    free(text);
    fuzz_write(path, data, size);
    if (aws_credentials_from_file(path, "default", &c, &e) == 0)
        aws_credentials_clear(&c);
    return 0;
}
