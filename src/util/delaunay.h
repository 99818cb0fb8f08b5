/* delaunay.h: Delaunay triangulations of points in a few dimensions, built by Qhull with the
 * options scipy's Delaunay uses, and barycentric location and linear interpolation in them. */
#ifndef CASTOR_UTIL_DELAUNAY_H
#define CASTOR_UTIL_DELAUNAY_H

#include <stddef.h>

#include "util/error.h"

/* The most dimensions a triangulation may have. */
#define DELAUNAY_MAX_DIM 8

/* A triangulation: the points (copied) and the simplices Qhull chose. Opaque; owned by the caller
 * of delaunay_build, freed with delaunay_free. Read-only after building, so it may be shared. */
struct delaunay;

/*
 * Triangulate n points of dim coordinates each (points is n * dim doubles, row-major; copied).
 * Qhull runs as "qhull d Qbb Qc Qz Q12 Qt" on the points in the order given, the options and order
 * scipy.spatial.Delaunay (and so LinearNDInterpolator) use, so that on degenerate (cospherical)
 * inputs the same triangulation is chosen. A point equal to another, or inside the hull without
 * being a vertex of any simplex, takes part in no simplex. Errors: ERR_INVAL (dim outside
 * [2, DELAUNAY_MAX_DIM], fewer than dim + 1 points, a non-finite coordinate, or points that span
 * less than dim dimensions: Qhull's words are in *e), ERR_NOCONV (Qhull gave up for precision),
 * ERR_NOMEM, ERR_INTERNAL (any other Qhull failure). On success *out owns a new triangulation; on
 * error *out is untouched.
 */
int delaunay_build(const double *points, size_t n, int dim, struct delaunay **out, struct error *e);

void delaunay_free(struct delaunay *d);

/* The dimension, the number of points given and the number of simplices. */
int delaunay_dim(const struct delaunay *d);
size_t delaunay_npoints(const struct delaunay *d);
size_t delaunay_nsimplex(const struct delaunay *d);

/* The dim + 1 point indices (into the points given) of simplex i < delaunay_nsimplex(d), in
 * Qhull's vertex order. Borrowed from d. */
const int *delaunay_simplex(const struct delaunay *d, size_t i);

/*
 * Find a simplex containing x (dim coordinates) and the barycentric weights of x in it: x is the
 * sum of weights[k] times point simplex_vertices[k], for k in [0, dim], and the weights sum to 1.
 * The search is scipy's Delaunay.find_simplex for a query made on its own: from simplex 0, climb
 * to a simplex whose plane has x's lift onto the paraboloid above it, then walk across the face
 * of the first weight below -eps (eps = 100 * DBL_EPSILON) until all weights are in
 * [-eps, 1 + eps]; a walk that meets a simplex too flat to invert (reciprocal condition number
 * below 1000 * DBL_EPSILON) or takes too long falls back on trying every simplex in order. Where
 * x lies on a face, the simplex returned is the one that search reaches, which matters when Qhull
 * triangulated the two sides of a cospherical cell's face differently (Qt): the interpolant is
 * then not continuous there, and this keeps it equal to scipy's. On success writes *simplex (may
 * be NULL) and weights (dim + 1 doubles). Errors: ERR_RANGE (x outside the convex hull, or not
 * finite).
 */
int delaunay_locate(const struct delaunay *d, const double *x, size_t *simplex, double *weights);

/*
 * Linear interpolation at x of nvalues values per point (values is npoints * nvalues doubles,
 * row-major, in the order of the points given): the weighted sum of the values at the containing
 * simplex's vertices, summed in vertex order as scipy's LinearNDInterpolator does. On success
 * writes out (nvalues doubles). Errors: as delaunay_locate.
 */
int delaunay_interpolate(const struct delaunay *d, const double *values, size_t nvalues,
                         const double *x, double *out);

#endif
