/* realworld_quota.c: the cloud's quotas in a real world: read every RW_QUOTA_READ_S (sooner once
 * an instance goes or a launch is refused for a quota), the room each offer has under them in
 * nodes, counted down by this controller's launches until the next read, and what the planner,
 * the log and the metrics are told of them. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/realworld_internal.h"
#include "util/log.h"

/* Quotas change rarely; this controller's launches are counted between reads, and an instance
 * that goes (ours or another's) makes the next read come sooner. */
#define RW_QUOTA_READ_S 300.0
#define RW_QUOTA_SOON_S 30.0
/* Figures older than this (every read since failed) are dropped: launches are then limited by no
 * quota, as before any read, rather than by a count of launches that never forgets. */
#define RW_QUOTA_STALE_S 3600.0

void rw_quotas_free(struct realworld *rw)
{
    for (size_t i = 0; i < rw->nquotas; i++) {
        free(rw->quotas[i].name);
        free(rw->quotas[i].title);
        free(rw->quotas[i].unit);
    }
    free(rw->quotas);
    free(rw->quota_uses);
    rw->quotas = NULL;
    rw->quota_uses = NULL;
    rw->nquotas = rw->nquota_uses = 0;
}

int rw_offer_room(const struct realworld *rw, int o, int *room)
{
    double left;

    if (rw_quota_binding(rw, o, &left) < 0)
        return 0;
    *room = (int)fmin(left, INT_MAX);
    return 1;
}

void rw_quota_launched(struct realworld *rw, int o)
{
    for (size_t i = 0; i < rw->nquota_uses; i++)
        if (rw->quota_uses[i].offer == o)
            rw->quotas[rw->quota_uses[i].quota].launched += rw->quota_uses[i].units;
}

int rw_quota_binding(const struct realworld *rw, int o, double *left)
{
    int best = -1;
    double least = INFINITY;

    for (size_t i = 0; i < rw->nquota_uses; i++) {
        const struct rw_quota_use *u = &rw->quota_uses[i];
        const struct rw_quota *q = &rw->quotas[u->quota];
        double n = cloud_quota_room(q->limit, q->used + q->launched, u->units);

        if (u->offer == o && (best < 0 || n < least)) {
            least = n;
            best = (int)u->quota;
        }
    }
    if (best >= 0 && left)
        *left = least;
    return best;
}

/* Take the cloud's answer as the quotas kept (replacing them). ERR_NOMEM leaves none. */
static int rw_quotas_take(struct realworld *rw, const struct cloud_quota *q, size_t nq,
                          const struct cloud_quota_use *u, size_t nu)
{
    rw_quotas_free(rw);
    if (nq == 0)
        return 0;
    rw->quotas = calloc(nq, sizeof(*rw->quotas));
    rw->quota_uses = calloc(nu + 1, sizeof(*rw->quota_uses));
    if (!rw->quotas || !rw->quota_uses) {
        rw_quotas_free(rw);
        return ERR_NOMEM;
    }
    rw->nquotas = nq;
    for (size_t i = 0; i < nq; i++) {
        struct rw_quota *k = &rw->quotas[i];

        k->name = strdup(q[i].name);
        k->title = strdup(q[i].title[0] ? q[i].title : q[i].name);
        k->unit = strdup(q[i].unit);
        k->limit = isfinite(q[i].limit) ? q[i].limit : INFINITY;
        k->used = isfinite(q[i].used) && q[i].used > 0 ? q[i].used : 0;
        if (!k->name || !k->title || !k->unit) {
            rw_quotas_free(rw);
            return ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < nu; i++) {
        int o = rw_offer_find(rw, u[i].offer);

        /* a use of an offer not known here, or of no quota of the answer, limits nothing */
        if (o < 0 || u[i].quota >= nq || !(u[i].units > 0))
            continue;
        rw->quota_uses[rw->nquota_uses++] =
            (struct rw_quota_use){.offer = o, .quota = u[i].quota, .units = u[i].units};
    }
    return 0;
}

void rw_quota_say(const struct realworld *rw, int o, char *buf, size_t size)
{
    int b = rw_quota_binding(rw, o, NULL);
    const struct rw_quota *q = b >= 0 ? &rw->quotas[b] : NULL;

    if (q)
        snprintf(buf, size, "quota %s \"%s\" has %.0f of %.0f %s in use", q->name, q->title,
                 q->used + q->launched, q->limit, q->unit);
    else
        snprintf(buf, size, "no quota limits it");
}

void rw_quotas_tell(struct realworld *rw, double now)
{
    for (size_t o = 0; o < rw->noffers; o++) {
        struct rw_offer *of = &rw->offers[o];
        int room;

        if (!rw_offer_room(rw, (int)o, &room)) {
            of->quota_full = 0;
            continue;
        }
        if (room == 0 && !of->quota_full) {
            char said[512];

            rw_quota_say(rw, (int)o, said, sizeof(said));
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "%s cannot be launched: %s; ask the cloud for an increase", of->name, said);
        } else if (room > 0 && of->quota_full) {
            log_msg(rw->log, now, LOG_INFO, NULL, NULL,
                    "%s may be launched again: its quotas leave room for %d", of->name, room);
        }
        of->quota_full = room == 0;
    }
}

/* After a read: an offer held for a quota refusal may launch again when the quotas now leave it
 * room. */
static void rw_quotas_release(struct realworld *rw)
{
    for (size_t o = 0; o < rw->noffers; o++) {
        int room;

        if (rw->offers[o].quota_held && rw_offer_room(rw, (int)o, &room) && room > 0) {
            rw->offers[o].quota_held = 0;
            rw->offers[o].unavailable_until = 0;
        }
    }
}

void rw_quotas_refresh(struct realworld *rw, double now)
{
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    size_t nq = 0, nu = 0;
    int rc;

    if (!rw->cloud->ops->quotas)
        return;
    if (isfinite(rw->quotas_read_at) &&
        now - rw->quotas_read_at < (rw->quotas_stale ? RW_QUOTA_SOON_S : RW_QUOTA_READ_S))
        return;
    rw->quotas_read_at = now;
    rc = cloud_quotas(rw->cloud, &q, &nq, &u, &nu);
    if (rc < 0) {
        /* the last figures stay (counting our launches) for an hour; none: launches as without
         * quotas */
        if (!rw->quotas_failed)
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "cannot read the cloud's quotas (%s)%s: launches go on, and a launch refused "
                    "for a quota holds its offer",
                    err_str(rc), rc == ERR_PERM ? "; the controller's role may not read them" : "");
        rw->quotas_failed = 1;
        if (rw->nquotas > 0 && now - rw->quotas_ok_at >= RW_QUOTA_STALE_S) {
            log_msg(rw->log, now, LOG_WARN, NULL, NULL,
                    "the quotas read last at %.0f are an hour old: launches are limited by none "
                    "until they are read again",
                    rw->quotas_ok_at);
            rw_quotas_free(rw);
        }
        return;
    }
    rw->quotas_failed = 0;
    rw->quotas_ok_at = now;
    rw->quotas_stale = 0;
    rc = rw_quotas_take(rw, q, nq, u, nu);
    free(q);
    free(u);
    if (rc < 0) {
        log_msg(rw->log, now, LOG_WARN, NULL, NULL, "cannot keep the quotas: %s", err_str(rc));
        return;
    }
    rw_quotas_release(rw);
}
