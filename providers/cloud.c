/* cloud.c: the wrappers through which the controller reaches a cloud. */
#include <math.h>

#include "providers/cloud.h"

int cloud_offers(struct cloud *c, struct cloud_offer **out, size_t *n)
{
    return c->ops->offers(c->ctx, out, n);
}

int cloud_list(struct cloud *c, const char *cluster, struct cloud_instance **out, size_t *n)
{
    return c->ops->list(c->ctx, cluster, out, n);
}

int cloud_launch(struct cloud *c, const char *offer, const char *cluster, const char *token,
                 char *id)
{
    return c->ops->launch(c->ctx, offer, cluster, token, id);
}

int cloud_terminate(struct cloud *c, const char *cluster, const char *id)
{
    return c->ops->terminate(c->ctx, cluster, id);
}

int cloud_quotas(struct cloud *c, struct cloud_quota **quotas, size_t *nq,
                 struct cloud_quota_use **uses, size_t *nu)
{
    if (!c->ops->quotas) {
        *quotas = NULL;
        *uses = NULL;
        *nq = *nu = 0;
        return 0;
    }
    return c->ops->quotas(c->ctx, quotas, nq, uses, nu);
}

double cloud_quota_room(double limit, double used, double units)
{
    double left = (limit - used) / units;

    return left > 0 ? floor(left + 1e-9) : 0;
}

void cloud_free(struct cloud *c)
{
    if (c && c->ops && c->ops->destroy)
        c->ops->destroy(c->ctx);
    if (c) {
        c->ops = NULL;
        c->ctx = NULL;
    }
}
