/* delaunay.c: the Qhull wrapper: Delaunay triangulation with scipy's options, point location. */
#include "util/delaunay.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libqhull_r/libqhull_r.h>

/* scipy's tolerances. Barycentric weights may stray this far outside [0, 1]: */
#define DELAUNAY_EPS (100.0 * DBL_EPSILON)
/* towards a flat simplex's face, a neighbour's weight may go this far below 0: */
#define DELAUNAY_EPS_BROAD 1.4901161193847656e-08 /* sqrt(DBL_EPSILON) */
/* and a simplex whose reciprocal condition number is below this is flat. */
#define DELAUNAY_RCOND_MIN (1000.0 * DBL_EPSILON)

struct delaunay {
    int dim;
    size_t n;
    size_t nsimplex;
    double *points;      /* n * dim, row-major */
    int *simplices;      /* nsimplex * (dim + 1) point indices */
    int *neighbors;      /* nsimplex * (dim + 1): the simplex across the face opposite vertex k, or
                            -1 on the hull */
    double *equations;   /* nsimplex * (dim + 2): the facet's plane in the lifted space (normal,
                            offset) */
    double *transforms;  /* nsimplex * (dim + 1) * dim: T^-1 (dim * dim, row-major), then the last
                            vertex, where T's column j is vertex j minus the last vertex */
    unsigned char *flat; /* per simplex: 1 when T could not be inverted reliably */
    double para_scale;   /* the lifting: z = scale * |x|^2 + shift (Qbb) */
    double para_shift;
    double lo[DELAUNAY_MAX_DIM]; /* the points' bounding box */
    double hi[DELAUNAY_MAX_DIM];
};

/* Qhull's exit codes in castor's terms. */
static int delaunay_code(int qhull_exit)
{
    switch (qhull_exit) {
    case qh_ERRmem:
        return ERR_NOMEM;
    case qh_ERRinput:
    case qh_ERRsingular:
        return ERR_INVAL;
    case qh_ERRprec:
    case qh_ERRtopology:
    case qh_ERRwide:
        return ERR_NOCONV;
    default:
        return ERR_INTERNAL;
    }
}

/* The first line of what Qhull wrote (NUL-terminated in place), or a stand-in. */
static const char *delaunay_first_line(char *text)
{
    char *nl;

    if (!text || !*text)
        return "no message";
    nl = strchr(text, '\n');
    if (nl)
        *nl = '\0';
    return text;
}

/* Triangulate non-simplicial facets (Qt) unless Qhull already did: errors inside Qhull longjmp
 * back here. Returns 0 or ERR_INTERNAL. */
static int delaunay_triangulate(qhT *qh)
{
    if (qh->hasTriangulation)
        return 0;
    if (setjmp(qh->errexit) != 0) {
        qh->NOerrexit = True;
        return ERR_INTERNAL;
    }
    qh->NOerrexit = False;
    qh_triangulate(qh);
    qh->NOerrexit = True;
    return 0;
}

/* Copy the lower-hull (Delaunay) simplices out of a finished Qhull run into d: vertices,
 * neighbours and plane equations, numbered in Qhull's facet order as scipy numbers them. */
static int delaunay_collect(qhT *qh, struct delaunay *d, struct error *e)
{
    int width = d->dim + 1;
    int *id_map = NULL;
    facetT *facet;
    size_t m = 0;
    int rc = 0;

    id_map = malloc((qh->facet_id ? qh->facet_id : 1) * sizeof(*id_map));
    if (!id_map)
        return err_set(e, ERR_NOMEM, "", 0, 0, "delaunay: no memory for %u facets", qh->facet_id);
    for (unsigned i = 0; i < qh->facet_id; i++)
        id_map[i] = -1;
    for (facet = qh->facet_list; facet && facet->next; facet = facet->next)
        if ((boolT)facet->upperdelaunay == qh->UPPERdelaunay) {
            if (m >= INT_MAX) {
                rc = err_set(e, ERR_RANGE, "", 0, 0, "delaunay: too many simplices");
                goto out;
            }
            id_map[facet->id] = (int)m++;
        }
    d->simplices = malloc((m ? m : 1) * (size_t)width * sizeof(*d->simplices));
    d->neighbors = malloc((m ? m : 1) * (size_t)width * sizeof(*d->neighbors));
    d->equations = malloc((m ? m : 1) * (size_t)(width + 1) * sizeof(*d->equations));
    if (!d->simplices || !d->neighbors || !d->equations) {
        rc = err_set(e, ERR_NOMEM, "", 0, 0, "delaunay: no memory for %zu simplices", m);
        goto out;
    }
    m = 0;
    for (facet = qh->facet_list; facet && facet->next; facet = facet->next) {
        int *s = d->simplices + m * (size_t)width, *nb = d->neighbors + m * (size_t)width;
        double *eq = d->equations + m * (size_t)(width + 1);

        if ((boolT)facet->upperdelaunay != qh->UPPERdelaunay)
            continue;
        if (qh_setsize(qh, facet->vertices) != width || qh_setsize(qh, facet->neighbors) != width) {
            rc = err_set(e, ERR_INTERNAL, "", 0, 0,
                         "delaunay: Qhull left a facet with %d vertices, expected %d",
                         qh_setsize(qh, facet->vertices), width);
            goto out;
        }
        for (int i = 0; i < width; i++) {
            vertexT *v = SETelemt_(facet->vertices, i, vertexT);
            facetT *f = SETelemt_(facet->neighbors, i, facetT);
            int id = qh_pointid(qh, v->point);

            if (id < 0 || (size_t)id >= d->n) {
                rc = err_set(e, ERR_INTERNAL, "", 0, 0,
                             "delaunay: a simplex uses point %d, not one of the %zu given", id,
                             d->n);
                goto out;
            }
            s[i] = id;
            nb[i] = id_map[f->id];
        }
        /* As scipy: 2-D triangles are turned counter-clockwise. */
        if (d->dim == 2 && facet->toporient == qh_ORIENTclock) {
            int t = s[0];

            s[0] = s[1];
            s[1] = t;
            t = nb[0];
            nb[0] = nb[1];
            nb[1] = t;
        }
        for (int i = 0; i < width; i++)
            eq[i] = facet->normal[i];
        eq[width] = facet->offset;
        m++;
    }
    d->nsimplex = m;
    if (qh->SCALElast) {
        d->para_scale = qh->last_newhigh / (qh->last_high - qh->last_low);
        d->para_shift = -qh->last_low * d->para_scale;
    } else {
        d->para_scale = 1.0;
        d->para_shift = 0.0;
    }
out:
    free(id_map);
    return rc;
}

/* Run Qhull on d->points and fill d->simplices. */
static int delaunay_run_qhull(struct delaunay *d, struct error *e)
{
    char cmd[] = "qhull d Qbb Qc Qz Q12 Qt";
    char *msg = NULL;
    size_t msglen = 0;
    FILE *errfile = NULL;
    qhT *qh = NULL;
    int exitcode, curlong, totlong, rc;

    qh = malloc(sizeof(*qh));
    errfile = open_memstream(&msg, &msglen);
    if (!qh || !errfile) {
        rc = err_set(e, ERR_NOMEM, "", 0, 0, "delaunay: no memory for Qhull");
        free(qh);
        qh = NULL;
        goto out;
    }
    qh_zero(qh, errfile);
    exitcode = qh_new_qhull(qh, d->dim, (int)d->n, d->points, False, cmd, NULL, errfile);
    if (exitcode == 0 && delaunay_triangulate(qh) < 0)
        exitcode = qh_ERRqhull;
    if (exitcode != 0) {
        fflush(errfile);
        rc =
            err_set(e, delaunay_code(exitcode), "", 0, 0,
                    "delaunay: Qhull failed on %zu points: %.300s", d->n, delaunay_first_line(msg));
        goto out;
    }
    rc = delaunay_collect(qh, d, e);
out:
    if (qh) {
        qh_freeqhull(qh, qh_ALL);
        qh_memfreeshort(qh, &curlong, &totlong);
        free(qh);
    }
    if (errfile)
        fclose(errfile);
    free(msg);
    return rc;
}

/* Invert the dim x dim matrix a (row-major, overwritten) into inv by LU with partial pivoting.
 * Returns 0, or -1 when a is singular or its reciprocal condition number (1-norm) is too small. */
static int delaunay_invert(int dim, double *a, double *inv)
{
    double lu[DELAUNAY_MAX_DIM * DELAUNAY_MAX_DIM];
    int piv[DELAUNAY_MAX_DIM];
    double anorm = 0.0, inorm = 0.0;

    for (int j = 0; j < dim; j++) {
        double col = 0.0;

        for (int i = 0; i < dim; i++)
            col += fabs(a[i * dim + j]);
        if (col > anorm)
            anorm = col;
    }
    memcpy(lu, a, (size_t)(dim * dim) * sizeof(double));
    for (int k = 0; k < dim; k++) {
        int p = k;

        for (int i = k + 1; i < dim; i++)
            if (fabs(lu[i * dim + k]) > fabs(lu[p * dim + k]))
                p = i;
        piv[k] = p;
        if (lu[p * dim + k] == 0.0)
            return -1;
        if (p != k)
            for (int j = 0; j < dim; j++) {
                double t = lu[k * dim + j];

                lu[k * dim + j] = lu[p * dim + j];
                lu[p * dim + j] = t;
            }
        for (int i = k + 1; i < dim; i++) {
            double f = lu[i * dim + k] / lu[k * dim + k];

            lu[i * dim + k] = f;
            for (int j = k + 1; j < dim; j++)
                lu[i * dim + j] -= f * lu[k * dim + j];
        }
    }
    /* Solve LU x = P e_c for every column c of the inverse. */
    for (int c = 0; c < dim; c++) {
        double x[DELAUNAY_MAX_DIM];

        for (int i = 0; i < dim; i++)
            x[i] = i == c ? 1.0 : 0.0;
        for (int k = 0; k < dim; k++) {
            double t = x[k];

            x[k] = x[piv[k]];
            x[piv[k]] = t;
        }
        for (int i = 0; i < dim; i++)
            for (int j = 0; j < i; j++)
                x[i] -= lu[i * dim + j] * x[j];
        for (int i = dim - 1; i >= 0; i--) {
            for (int j = i + 1; j < dim; j++)
                x[i] -= lu[i * dim + j] * x[j];
            x[i] /= lu[i * dim + i];
        }
        for (int i = 0; i < dim; i++)
            inv[i * dim + c] = x[i];
    }
    for (int j = 0; j < dim; j++) {
        double col = 0.0;

        for (int i = 0; i < dim; i++)
            col += fabs(inv[i * dim + j]);
        if (col > inorm)
            inorm = col;
    }
    if (!isfinite(inorm) || !(anorm * inorm > 0) || 1.0 / (anorm * inorm) < DELAUNAY_RCOND_MIN)
        return -1;
    return 0;
}

/* The barycentric transform of every simplex. */
static int delaunay_transforms(struct delaunay *d, struct error *e)
{
    int dim = d->dim, width = dim + 1;
    size_t stride = (size_t)(width * dim);

    d->transforms = calloc(d->nsimplex ? d->nsimplex * stride : 1, sizeof(double));
    d->flat = calloc(d->nsimplex ? d->nsimplex : 1, 1);
    if (!d->transforms || !d->flat)
        return err_set(e, ERR_NOMEM, "", 0, 0, "delaunay: no memory for %zu simplices",
                       d->nsimplex);
    for (size_t s = 0; s < d->nsimplex; s++) {
        const int *v = d->simplices + s * (size_t)width;
        double *tr = d->transforms + s * stride;
        const double *last = d->points + (size_t)v[dim] * (size_t)dim;
        double t[DELAUNAY_MAX_DIM * DELAUNAY_MAX_DIM];

        for (int i = 0; i < dim; i++) {
            tr[dim * dim + i] = last[i];
            for (int j = 0; j < dim; j++)
                t[i * dim + j] = d->points[(size_t)v[j] * (size_t)dim + i] - last[i];
        }
        if (delaunay_invert(dim, t, tr) < 0) {
            /* As scipy: a flat simplex's weights are not numbers, which sends a walk that
             * reaches it to the search of all simplices. */
            d->flat[s] = 1;
            for (int i = 0; i < (width - 1) * dim; i++)
                tr[i] = NAN;
        }
    }
    return 0;
}

int delaunay_build(const double *points, size_t n, int dim, struct delaunay **out, struct error *e)
{
    struct delaunay *d = NULL;
    int rc;

    if (dim < 2 || dim > DELAUNAY_MAX_DIM)
        return err_set(e, ERR_INVAL, "", 0, 0, "delaunay: dimension %d is not in [2, %d]", dim,
                       DELAUNAY_MAX_DIM);
    if (n < (size_t)dim + 1 || n > (size_t)(INT_MAX / (dim + 1)))
        return err_set(e, ERR_INVAL, "", 0, 0,
                       "delaunay: %zu points in %d dimensions: need %d to %d", n, dim, dim + 1,
                       INT_MAX / (dim + 1));
    for (size_t i = 0; i < n * (size_t)dim; i++)
        if (!isfinite(points[i]))
            return err_set(e, ERR_INVAL, "", 0, 0,
                           "delaunay: coordinate %d of point %zu is not finite",
                           (int)(i % (size_t)dim), i / (size_t)dim);
    d = calloc(1, sizeof(*d));
    if (!d || !(d->points = malloc(n * (size_t)dim * sizeof(double)))) {
        rc = err_set(e, ERR_NOMEM, "", 0, 0, "delaunay: no memory for %zu points", n);
        goto out;
    }
    d->dim = dim;
    d->n = n;
    memcpy(d->points, points, n * (size_t)dim * sizeof(double));
    for (int k = 0; k < dim; k++) {
        d->lo[k] = d->hi[k] = points[k];
        for (size_t i = 1; i < n; i++) {
            double x = points[i * (size_t)dim + (size_t)k];

            d->lo[k] = x < d->lo[k] ? x : d->lo[k];
            d->hi[k] = x > d->hi[k] ? x : d->hi[k];
        }
    }
    if ((rc = delaunay_run_qhull(d, e)) < 0 || (rc = delaunay_transforms(d, e)) < 0)
        goto out;
    *out = d;
    d = NULL;
out:
    delaunay_free(d);
    return rc;
}

void delaunay_free(struct delaunay *d)
{
    if (!d)
        return;
    free(d->points);
    free(d->simplices);
    free(d->neighbors);
    free(d->equations);
    free(d->transforms);
    free(d->flat);
    free(d);
}

int delaunay_dim(const struct delaunay *d)
{
    return d->dim;
}

size_t delaunay_npoints(const struct delaunay *d)
{
    return d->n;
}

size_t delaunay_nsimplex(const struct delaunay *d)
{
    return d->nsimplex;
}

const int *delaunay_simplex(const struct delaunay *d, size_t i)
{
    return d->simplices + i * (size_t)(d->dim + 1);
}

/* The barycentric weights of x in simplex s (as scipy: the last is one minus the others). */
static void delaunay_weights(const struct delaunay *d, size_t s, const double *x, double *w)
{
    int dim = d->dim;
    const double *tr = d->transforms + s * (size_t)((dim + 1) * dim);

    w[dim] = 1.0;
    for (int i = 0; i < dim; i++) {
        w[i] = 0.0;
        for (int j = 0; j < dim; j++)
            w[i] += tr[i * dim + j] * (x[j] - tr[dim * dim + j]);
        w[dim] -= w[i];
    }
}

/* Whether x is outside the points' bounding box (by more than eps). */
static int delaunay_outside_box(const struct delaunay *d, const double *x)
{
    for (int k = 0; k < d->dim; k++)
        if (!(x[k] >= d->lo[k] - DELAUNAY_EPS && x[k] <= d->hi[k] + DELAUNAY_EPS))
            return 1;
    return 0;
}

/* Whether all weights are in [-eps, 1 + eps]; with broad_face >= 0, weight broad_face may go down
 * to -eps_broad. */
static int delaunay_inside(int dim, const double *w, int broad_face)
{
    for (int k = 0; k <= dim; k++) {
        double low = k == broad_face ? -DELAUNAY_EPS_BROAD : -DELAUNAY_EPS;

        if (!(w[k] >= low && w[k] <= 1.0 + DELAUNAY_EPS))
            return 0;
    }
    return 1;
}

/* Every simplex in order, the first that holds x. A flat simplex is replaced by those of its
 * neighbours that hold x, with extra leeway on the face they share with it. -1 if none. */
static long delaunay_search_all(const struct delaunay *d, const double *x, double *w)
{
    int dim = d->dim, width = dim + 1;

    for (size_t s = 0; s < d->nsimplex; s++) {
        if (!d->flat[s]) {
            delaunay_weights(d, s, x, w);
            if (delaunay_inside(dim, w, -1))
                return (long)s;
            continue;
        }
        for (int k = 0; k < width; k++) {
            int nb = d->neighbors[s * (size_t)width + (size_t)k], face = -1;

            if (nb < 0 || d->flat[nb])
                continue;
            for (int j = 0; j < width; j++)
                if (d->neighbors[(size_t)nb * (size_t)width + (size_t)j] == (int)s)
                    face = j;
            delaunay_weights(d, (size_t)nb, x, w);
            if (delaunay_inside(dim, w, face))
                return nb;
        }
    }
    return -1;
}

/* Walk from simplex s towards x, stepping across the face of the first weight below -eps; stop
 * where all weights are within [-eps, 1 + eps]. -1 when the walk leaves the hull; falls back on
 * delaunay_search_all when it meets a flat simplex or takes too long. */
static long delaunay_walk(const struct delaunay *d, long s, const double *x, double *w)
{
    int dim = d->dim, width = dim + 1;
    size_t steps = 1 + d->nsimplex / 4;

    for (size_t step = 0; step < steps; step++) {
        const double *tr = d->transforms + (size_t)s * (size_t)(width * dim);
        int inside = 1, hop = -1;

        for (int k = 0; k < width && hop < 0; k++) {
            if (k < dim) {
                w[k] = 0.0;
                for (int j = 0; j < dim; j++)
                    w[k] += tr[k * dim + j] * (x[j] - tr[dim * dim + j]);
            } else {
                w[dim] = 1.0;
                for (int j = 0; j < dim; j++)
                    w[dim] -= w[j];
            }
            if (w[k] < -DELAUNAY_EPS)
                hop = k;
            else if (!(w[k] <= 1.0 + DELAUNAY_EPS))
                inside = 0; /* beyond a vertex, or not a number: a flat simplex */
        }
        if (hop >= 0) {
            s = d->neighbors[(size_t)s * (size_t)width + (size_t)hop];
            if (s < 0)
                return -1;
            continue;
        }
        return inside ? s : delaunay_search_all(d, x, w);
    }
    return delaunay_search_all(d, x, w);
}

/* The signed distance of the lifted point z from simplex s's plane. */
static double delaunay_plane_dist(const struct delaunay *d, size_t s, const double *z)
{
    const double *eq = d->equations + s * (size_t)(d->dim + 2);
    double dist = eq[d->dim + 1];

    for (int k = 0; k <= d->dim; k++)
        dist += eq[k] * z[k];
    return dist;
}

int delaunay_locate(const struct delaunay *d, const double *x, size_t *simplex, double *weights)
{
    double z[DELAUNAY_MAX_DIM + 1], w[DELAUNAY_MAX_DIM + 1], best;
    int dim = d->dim, width = dim + 1, moved = 1;
    long s = 0;

    if (delaunay_outside_box(d, x) || d->nsimplex == 0)
        return ERR_RANGE;
    /* Lift x onto the paraboloid and climb to a simplex whose plane has it above. */
    z[dim] = 0.0;
    for (int k = 0; k < dim; k++) {
        z[k] = x[k];
        z[dim] += x[k] * x[k];
    }
    z[dim] *= d->para_scale;
    z[dim] += d->para_shift;
    best = delaunay_plane_dist(d, 0, z);
    while (moved && !(best > 0)) {
        moved = 0;
        /* Keep scanning the faces after a move, from the next face of the new simplex. */
        for (int k = 0; k < width; k++) {
            int nb = d->neighbors[(size_t)s * (size_t)width + (size_t)k];
            double dist;

            if (nb < 0)
                continue;
            dist = delaunay_plane_dist(d, (size_t)nb, z);
            if (dist > best + DELAUNAY_EPS * (1.0 + fabs(best))) {
                s = nb;
                best = dist;
                moved = 1;
            }
        }
    }
    s = delaunay_walk(d, s, x, w);
    if (s < 0)
        return ERR_RANGE;
    if (simplex)
        *simplex = (size_t)s;
    memcpy(weights, w, (size_t)width * sizeof(double));
    return 0;
}

int delaunay_interpolate(const struct delaunay *d, const double *values, size_t nvalues,
                         const double *x, double *out)
{
    double w[DELAUNAY_MAX_DIM + 1];
    const int *v;
    size_t s;
    int rc;

    if ((rc = delaunay_locate(d, x, &s, w)) < 0)
        return rc;
    v = delaunay_simplex(d, s);
    for (size_t k = 0; k < nvalues; k++) {
        double sum = 0.0;

        for (int j = 0; j <= d->dim; j++)
            sum += w[j] * values[(size_t)v[j] * nvalues + k];
        out[k] = sum;
    }
    return 0;
}
