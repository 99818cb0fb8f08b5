/* local_preempt.c: the local cloud's preemption as a process, for tests written in other
 * languages (tests/chaos/chaos.py): it takes instance ID of the run folder RUN_DIR away as a spot
 * market would, with NOTICE seconds of notice (0: none), through local_preempt itself.
 *
 *   castor-test-local-preempt RUN_DIR ID NOTICE
 *
 * Exit status 0 once the instance is gone; 3 when there is no such live instance; 1 otherwise,
 * with the reason on stderr. */
#include <stdio.h>
#include <stdlib.h>

#include "providers/local.h"
#include "util/error.h"

int main(int argc, char **argv)
{
    struct local_offer offer = {.name = "any", .gpus = 1, .capacity = 0};
    struct local_config lc = {0};
    struct cloud cloud;
    char *end = NULL;
    double notice;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: castor-test-local-preempt RUN_DIR ID NOTICE_SECONDS\n");
        return 2;
    }
    notice = strtod(argv[3], &end);
    if (end == argv[3] || *end) {
        fprintf(stderr, "castor-test-local-preempt: %s: not a number of seconds\n", argv[3]);
        return 2;
    }
    lc.run_dir = argv[1];
    lc.node_bin = "/nonexistent"; /* nothing is launched */
    lc.url = "http://127.0.0.1:1";
    lc.offers = &offer;
    lc.noffers = 1;
    if ((rc = cloud_local_new(&lc, &cloud)) < 0) {
        fprintf(stderr, "castor-test-local-preempt: %s: %s\n", argv[1], err_str(rc));
        return 1;
    }
    rc = local_preempt(&cloud, argv[2], notice);
    cloud_free(&cloud);
    if (rc == ERR_UNKNOWN)
        return 3;
    if (rc < 0) {
        fprintf(stderr, "castor-test-local-preempt: %s: %s\n", argv[2], err_str(rc));
        return 1;
    }
    return 0;
}
