/* faulty.c: the fault-injecting cloud wrapper (faulty.h). */
#include "providers/faulty.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const faulty_kind_names[FAULTY_NKINDS] = {
    [FAULTY_THROTTLE] = "throttle", [FAULTY_5XX] = "5xx",     [FAULTY_TIMEOUT] = "timeout",
    [FAULTY_CAPACITY] = "capacity", [FAULTY_QUOTA] = "quota", [FAULTY_LOST] = "lost",
};

struct faulty {
    struct cloud inner;
    struct faulty_config cfg;
    pthread_mutex_t mu; /* the stream and the counts (the API may list while the loop launches) */
    uint64_t state;
    struct faulty_counts counts;
};

static const struct cloud_ops faulty_ops;

/* The kinds each operation can have. */
static const enum faulty_kind fy_read_kinds[] = {FAULTY_THROTTLE, FAULTY_5XX, FAULTY_TIMEOUT};
static const enum faulty_kind fy_launch_kinds[] = {FAULTY_THROTTLE, FAULTY_5XX,   FAULTY_TIMEOUT,
                                                   FAULTY_CAPACITY, FAULTY_QUOTA, FAULTY_LOST};
static const enum faulty_kind fy_terminate_kinds[] = {FAULTY_THROTTLE, FAULTY_5XX, FAULTY_TIMEOUT,
                                                      FAULTY_LOST};

/* A uniform draw in [0, 1) (xorshift64*, under mu). */
static double fy_uniform(struct faulty *f)
{
    f->state ^= f->state >> 12;
    f->state ^= f->state << 25;
    f->state ^= f->state >> 27;
    return (double)((f->state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Whether this call fails, and how: -1 for none, else the kind (counted). */
static int fy_draw(struct faulty *f, const enum faulty_kind *kinds, size_t n)
{
    int kind = -1;

    pthread_mutex_lock(&f->mu);
    f->counts.calls++;
    if (fy_uniform(f) < f->cfg.rate) {
        size_t k = (size_t)(fy_uniform(f) * (double)n);

        kind = (int)kinds[k < n ? k : n - 1];
        f->counts.faults[kind]++;
    }
    pthread_mutex_unlock(&f->mu);
    return kind;
}

static void fy_sleep(struct faulty *f)
{
    struct timespec ts;
    double s = f->cfg.timeout_s;

    if (f->cfg.sleep) {
        f->cfg.sleep(f->cfg.sleep_ctx, s);
        return;
    }
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - floor(s)) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The error a fault decided before the call answers with (the timeout waited first). */
static int fy_before(struct faulty *f, int kind)
{
    switch (kind) {
    case FAULTY_THROTTLE:
        return ERR_AGAIN;
    case FAULTY_TIMEOUT:
        fy_sleep(f);
        return ERR_AGAIN;
    case FAULTY_CAPACITY:
        return ERR_CAPACITY;
    case FAULTY_QUOTA:
        return ERR_QUOTA;
    default:
        return ERR_IO;
    }
}

static int fy_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct faulty *f = ctx;
    int kind = fy_draw(f, fy_read_kinds, sizeof(fy_read_kinds) / sizeof(fy_read_kinds[0]));

    return kind >= 0 ? fy_before(f, kind) : cloud_offers(&f->inner, out, n);
}

static int fy_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    struct faulty *f = ctx;
    int kind = fy_draw(f, fy_read_kinds, sizeof(fy_read_kinds) / sizeof(fy_read_kinds[0]));

    return kind >= 0 ? fy_before(f, kind) : cloud_list(&f->inner, cluster, out, n);
}

static int fy_launch(void *ctx, const char *offer, const char *cluster, const char *token, char *id)
{
    struct faulty *f = ctx;
    int kind = fy_draw(f, fy_launch_kinds, sizeof(fy_launch_kinds) / sizeof(fy_launch_kinds[0]));
    char got[CLOUD_ID_MAX];
    int rc;

    if (kind >= 0 && kind != FAULTY_LOST)
        return fy_before(f, kind);
    rc = cloud_launch(&f->inner, offer, cluster, token, got);
    if (rc < 0)
        return rc;
    if (kind == FAULTY_LOST)
        return ERR_IO; /* launched, but the caller never hears of it */
    memcpy(id, got, sizeof(got));
    return 0;
}

static int fy_terminate(void *ctx, const char *cluster, const char *id)
{
    struct faulty *f = ctx;
    int kind =
        fy_draw(f, fy_terminate_kinds, sizeof(fy_terminate_kinds) / sizeof(fy_terminate_kinds[0]));
    int rc;

    if (kind >= 0 && kind != FAULTY_LOST)
        return fy_before(f, kind);
    rc = cloud_terminate(&f->inner, cluster, id);
    return rc == 0 && kind == FAULTY_LOST ? ERR_IO : rc;
}

static int fy_quotas(void *ctx, struct cloud_quota **quotas, size_t *nq,
                     struct cloud_quota_use **uses, size_t *nu)
{
    struct faulty *f = ctx;
    int kind = fy_draw(f, fy_read_kinds, sizeof(fy_read_kinds) / sizeof(fy_read_kinds[0]));

    return kind >= 0 ? fy_before(f, kind) : cloud_quotas(&f->inner, quotas, nq, uses, nu);
}

static void fy_destroy(void *ctx)
{
    struct faulty *f = ctx;

    cloud_free(&f->inner);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static const struct cloud_ops faulty_ops = {
    .name = "faulty",
    .offers = fy_offers,
    .list = fy_list,
    .launch = fy_launch,
    .terminate = fy_terminate,
    .destroy = fy_destroy,
    .quotas = fy_quotas,
};

int faulty_wrap(struct cloud *inner, const struct faulty_config *cfg, struct cloud *out)
{
    struct faulty *f;

    if (!inner || !inner->ops || !cfg || !out || !(cfg->rate >= 0 && cfg->rate <= 1) ||
        !(cfg->timeout_s >= 0 && cfg->timeout_s <= 600))
        return ERR_INVAL;
    if (!(f = calloc(1, sizeof(*f))))
        return ERR_NOMEM;
    if (pthread_mutex_init(&f->mu, NULL) != 0) {
        free(f);
        return ERR_NOMEM;
    }
    f->inner = *inner;
    f->cfg = *cfg;
    f->state = cfg->seed ^ 0x9E3779B97F4A7C15ULL;
    if (f->state == 0)
        f->state = 1;
    inner->ops = NULL;
    inner->ctx = NULL;
    out->ops = &faulty_ops;
    out->ctx = f;
    return 0;
}

int faulty_counts(const struct cloud *c, struct faulty_counts *out)
{
    struct faulty *f;

    if (!c || c->ops != &faulty_ops || !out)
        return ERR_INVAL;
    f = c->ctx;
    pthread_mutex_lock(&f->mu);
    *out = f->counts;
    pthread_mutex_unlock(&f->mu);
    return 0;
}
