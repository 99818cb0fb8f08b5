/* install_consumer.c: a program built outside the tree against the installed libcastor, with the
 * flags pkg-config gives for castor (tests/agent/install_check.sh): the header stands alone and
 * the library links, loads and works. */
#include <castor/castor.h>

#include <math.h>
#include <stdio.h>

int main(void)
{
    struct castor_options o = {0};
    struct castor_stats s;
    struct castor *h = NULL;
    double micro[2] = {4.0, 3.0};
    char msg[128] = "";
    int rc;

    if (castor_version() != CASTOR_VERSION_NUMBER) {
        fprintf(stderr, "library %u, header %u\n", castor_version(), CASTOR_VERSION_NUMBER);
        return 1;
    }
    o.world_size = 2;
    o.local_bsz = 16;
    rc = castor_new(&o, sizeof(o), &h, msg, sizeof(msg));
    if (rc != CASTOR_OK) {
        fprintf(stderr, "castor_new: %s (%s)\n", castor_strerror(rc), msg);
        return 1;
    }
    rc = castor_step(h, 0.05, 0.01, micro, 2, 2.5);
    if (rc == CASTOR_OK)
        rc = castor_step(h, 0.05, 0.01, micro, 2, NAN) == CASTOR_EINVAL ? CASTOR_OK : 1;
    if (rc == CASTOR_OK)
        rc = castor_get_stats(h, &s, sizeof(s));
    castor_free(h);
    if (rc != CASTOR_OK || s.steps != 2 || s.grad_skipped != 1 || !(s.progress > 0)) {
        fprintf(stderr, "unexpected: rc %d\n", rc);
        return 1;
    }
    printf("libcastor %u from the installed tree: ok\n", castor_version());
    return 0;
}
