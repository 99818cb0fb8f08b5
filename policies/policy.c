/* policy.c: the policy registry and what policies share. */
#include "policies/policy.h"

#include <string.h>

#include "util/error.h"

const struct policy_ops *const policy_registry[] = {&policy_pollux, &policy_optimus,
                                                    &policy_tiresias, &policy_castor, NULL};

const struct policy_ops *policy_find(const char *name)
{
    for (size_t i = 0; name && policy_registry[i]; i++)
        if (strcmp(policy_registry[i]->name, name) == 0)
            return policy_registry[i];
    return NULL;
}

double policy_p_mean(const struct policy_config *cfg, double dflt)
{
    return cfg && cfg->p_mean_set ? cfg->p_mean : dflt;
}

int policy_new(const char *name, const struct policy_config *cfg, struct policy *out)
{
    const struct policy_ops *ops = policy_find(name);
    struct policy_config none = {0};
    void *ctx = NULL;
    int rc;

    if (!ops)
        return ERR_UNKNOWN;
    if (ops->create && (rc = ops->create(cfg ? cfg : &none, &ctx)) < 0)
        return rc;
    out->ops = ops;
    out->ctx = ctx;
    return 0;
}

int policy_allocate(struct policy *p, const struct snapshot *s, uint64_t seed, struct alloc *out)
{
    return p->ops->allocate(p->ctx, s, seed, out);
}

void policy_free(struct policy *p)
{
    if (p && p->ops && p->ops->destroy)
        p->ops->destroy(p->ctx);
    if (p)
        p->ctx = NULL;
}
