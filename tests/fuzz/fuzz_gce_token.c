/* fuzz_gce_token.c: libFuzzer target for Google's token answers (read_token in
 * providers/gcp/auth.c: the GCE metadata server's and the OAuth token endpoint's JSON) and for
 * service-account key files (gcp_sa_key_parse). read_token is static in auth.c; this file
 * includes auth.c to reach it (a fuzzing seam that compiles the very code castor runs; no second
 * copy of auth.o is linked). */
#include "providers/gcp/auth.c"

#include "fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gcp_sa_key k = {0};
    struct error e = {0};
    char *token = NULL;
    int64_t expires = 0;

    if (read_token((const char *)data, size, "metadata", 1714564800, &token, &expires, &e) == 0)
        crypto_free_string(token);
    if (gcp_sa_key_parse((const char *)data, size, &k, &e) == 0)
        gcp_sa_key_clear(&k);
    return 0;
}
