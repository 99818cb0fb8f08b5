/* test_delaunay.c: the Qhull wrapper: triangulations as scipy.spatial.Delaunay makes them, point
 * location and linear interpolation, and the errors. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/delaunay.h"
#include "util/error.h"

/* A pointer no allocation returns, to show that *out is left alone on error. */
#define UNTOUCHED ((struct delaunay *)(uintptr_t)0x1234)

/* The 3 x 3 x 3 integer grid in itertools.product order (x slowest), with the values
 * x^2 + 2 y^2 z + 3 z^2 - x y: every cell is cospherical, so Qhull's choices show. */
static void grid3(double *pts, double *vals)
{
    int i = 0;

    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++)
            for (int z = 0; z < 3; z++, i++) {
                pts[3 * i] = x;
                pts[3 * i + 1] = y;
                pts[3 * i + 2] = z;
                vals[i] = x * x + 2 * y * y * z + 3 * z * z - x * y;
            }
}

static int has_vertices(const int *s, int a, int b, int c)
{
    int seen = 0;

    for (int k = 0; k < 3; k++)
        seen |= (s[k] == a) << 0 | (s[k] == b) << 1 | (s[k] == c) << 2;
    return seen == 7;
}

/* Three points in the plane make one triangle, which holds them all. */
static void delaunay_build__triangle(void **state)
{
    const double pts[] = {0, 0, 2, 0, 0, 2};
    struct delaunay *d = NULL;
    struct error e;

    (void)state;
    assert_int_equal(delaunay_build(pts, 3, 2, &d, &e), 0);
    assert_int_equal(delaunay_dim(d), 2);
    assert_int_equal(delaunay_npoints(d), 3);
    assert_int_equal(delaunay_nsimplex(d), 1);
    assert_true(has_vertices(delaunay_simplex(d, 0), 0, 1, 2));
    delaunay_free(d);
}

/* The unit square is cocircular: either diagonal is Delaunay. scipy's Delaunay picks simplices
 * [[3, 2, 0], [1, 3, 0]] (the diagonal 0-3), and so must we. With values 0, 0, 0, 1 at the
 * corners, (0.25, 0.5) lies in triangle (3, 2, 0) with weight 0.25 on corner 3, so 0.25 (the
 * other diagonal would give 0); (0.75, 0.5) lies in (1, 3, 0) with weight 0.5 on corner 3. */
static void delaunay_build__square_diagonal_as_scipy(void **state)
{
    const double pts[] = {0, 0, 1, 0, 0, 1, 1, 1}, vals[] = {0, 0, 0, 1};
    const double q1[] = {0.25, 0.5}, q2[] = {0.75, 0.5};
    struct delaunay *d = NULL;
    const int *s;
    double out;

    (void)state;
    assert_int_equal(delaunay_build(pts, 4, 2, &d, NULL), 0);
    assert_int_equal(delaunay_nsimplex(d), 2);
    s = delaunay_simplex(d, 0);
    assert_int_equal(s[0], 3);
    assert_int_equal(s[1], 2);
    assert_int_equal(s[2], 0);
    s = delaunay_simplex(d, 1);
    assert_int_equal(s[0], 1);
    assert_int_equal(s[1], 3);
    assert_int_equal(s[2], 0);
    assert_int_equal(delaunay_interpolate(d, vals, 1, q1, &out), 0);
    assert_float_equal(out, 0.25, 1e-15);
    assert_int_equal(delaunay_interpolate(d, vals, 1, q2, &out), 0);
    assert_float_equal(out, 0.5, 1e-15);
    delaunay_free(d);
}

/* A linear function is reproduced exactly whatever the triangulation: on the 3 x 3 x 3 grid,
 * f = 1 + 2x - 3y + 0.5z at a few points inside, two values per point (f and 2f). */
static void delaunay_interpolate__linear_is_exact(void **state)
{
    double pts[81], vals[54], ignored[27];
    const double qs[][3] = {{0.3, 0.7, 1.1}, {1.9, 0.1, 0.4}, {1, 1, 1}, {2, 2, 2}, {0.5, 1.5, 2}};
    struct delaunay *d = NULL;

    (void)state;
    grid3(pts, ignored);
    for (int i = 0; i < 27; i++) {
        vals[2 * i] = 1 + 2 * pts[3 * i] - 3 * pts[3 * i + 1] + 0.5 * pts[3 * i + 2];
        vals[2 * i + 1] = 2 * vals[2 * i];
    }
    assert_int_equal(delaunay_build(pts, 27, 3, &d, NULL), 0);
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        double f = 1 + 2 * qs[i][0] - 3 * qs[i][1] + 0.5 * qs[i][2], out[2];

        assert_int_equal(delaunay_interpolate(d, vals, 2, qs[i], out), 0);
        assert_float_equal(out[0], f, 1e-12);
        assert_float_equal(out[1], 2 * f, 1e-12);
    }
    delaunay_free(d);
}

/* Weights are barycentric: they sum to 1, lie in [0, 1] inside, rebuild the query from the
 * simplex's vertices, and a query at a grid point puts weight 1 on it. */
static void delaunay_locate__weights(void **state)
{
    double pts[81], vals[27], w[4], x[3] = {0};
    const double q[3] = {0.3, 1.2, 1.7}, corner[3] = {2, 1, 0};
    struct delaunay *d = NULL;
    const int *s;
    size_t si;

    (void)state;
    grid3(pts, vals);
    assert_int_equal(delaunay_build(pts, 27, 3, &d, NULL), 0);
    assert_int_equal(delaunay_locate(d, q, &si, w), 0);
    assert_true(si < delaunay_nsimplex(d));
    s = delaunay_simplex(d, si);
    assert_float_equal(w[0] + w[1] + w[2] + w[3], 1.0, 1e-14);
    for (int k = 0; k < 4; k++) {
        assert_true(w[k] >= -1e-14 && w[k] <= 1 + 1e-14);
        for (int j = 0; j < 3; j++)
            x[j] += w[k] * pts[3 * s[k] + j];
    }
    for (int j = 0; j < 3; j++)
        assert_float_equal(x[j], q[j], 1e-14);
    /* (2, 1, 0) is point 2 * 9 + 1 * 3 + 0 = 21. */
    assert_int_equal(delaunay_locate(d, corner, &si, w), 0);
    s = delaunay_simplex(d, si);
    for (int k = 0; k < 4; k++)
        assert_float_equal(w[k], s[k] == 21 ? 1.0 : 0.0, 1e-14);
    delaunay_free(d);
}

/* Computed with scipy's LinearNDInterpolator on the same points and values: the 3 x 3 x 3 grid has
 * 58 simplices, 10 of them flat, and Qt triangulates the two sides of some inner faces
 * differently, so points on those faces get different values from the simplices on either side.
 * scipy returns 10 at (1, 0.5, 1.5) and 7 at (1, 0.25, 1.25); the first simplex in order that
 * holds them would give 9 and 6.5. The walk from simplex 0 must find what scipy's finds. */
static void delaunay_interpolate__follows_scipy_on_split_faces(void **state)
{
    double pts[81], vals[27], out;
    const double q1[3] = {1, 0.5, 1.5}, q2[3] = {1, 0.25, 1.25};
    struct delaunay *d = NULL;

    (void)state;
    grid3(pts, vals);
    assert_int_equal(delaunay_build(pts, 27, 3, &d, NULL), 0);
    assert_int_equal(delaunay_nsimplex(d), 58);
    assert_int_equal(delaunay_interpolate(d, vals, 1, q1, &out), 0);
    assert_float_equal(out, 10.0, 1e-12);
    assert_int_equal(delaunay_interpolate(d, vals, 1, q2, &out), 0);
    assert_float_equal(out, 7.0, 1e-12);
    delaunay_free(d);
}

/* Outside the hull: beyond the bounding box, inside the box but past the hypotenuse of a
 * triangle, and NaN are all ERR_RANGE; the hull's own edge is inside. */
static void delaunay_locate__outside_is_range(void **state)
{
    const double pts[] = {0, 0, 1, 0, 0, 1};
    const double far[] = {2, 0}, corner[] = {0.9, 0.9}, nan_q[] = {NAN, 0}, edge[] = {0.5, 0.5};
    struct delaunay *d = NULL;
    double w[3];

    (void)state;
    assert_int_equal(delaunay_build(pts, 3, 2, &d, NULL), 0);
    assert_int_equal(delaunay_locate(d, far, NULL, w), ERR_RANGE);
    assert_int_equal(delaunay_locate(d, corner, NULL, w), ERR_RANGE);
    assert_int_equal(delaunay_locate(d, nan_q, NULL, w), ERR_RANGE);
    assert_int_equal(delaunay_locate(d, edge, NULL, w), 0);
    delaunay_free(d);
}

/* Bad input: one dimension, too few points, a NaN coordinate, and points on a line (flat, which
 * Qhull reports) are ERR_INVAL, with *out untouched. */
static void delaunay_build__errors(void **state)
{
    const double line[] = {0, 0, 1, 1, 2, 2, 3, 3}, two[] = {0, 0, 1, 1};
    const double with_nan[] = {0, 0, 1, NAN, 0, 1};
    struct delaunay *d = UNTOUCHED;
    struct error e;

    (void)state;
    assert_int_equal(delaunay_build(line, 8, 1, &d, &e), ERR_INVAL);
    assert_int_equal(delaunay_build(two, 2, 2, &d, &e), ERR_INVAL);
    assert_int_equal(delaunay_build(with_nan, 3, 2, &d, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "not finite"));
    assert_int_equal(delaunay_build(line, 4, 2, &d, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "Qhull"));
    assert_ptr_equal(d, UNTOUCHED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delaunay_build__triangle),
        cmocka_unit_test(delaunay_build__square_diagonal_as_scipy),
        cmocka_unit_test(delaunay_interpolate__linear_is_exact),
        cmocka_unit_test(delaunay_locate__weights),
        cmocka_unit_test(delaunay_interpolate__follows_scipy_on_split_faces),
        cmocka_unit_test(delaunay_locate__outside_is_range),
        cmocka_unit_test(delaunay_build__errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
