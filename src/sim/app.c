/* app.c: the emulated application: loading its traces, interpolating step times and statistics. */
#include "sim/app.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/measured.h"
#include "util/csv.h"
#include "util/delaunay.h"

/* The published per-application constants the traces do not hold. */
static const struct app_known {
    const char *name;
    int max_epochs;
    int max_local; /* 0: the largest local batch size in placements.csv */
} app_known[] = {
    {"bert", 2, 0},      {"cifar10", 100, 0}, {"deepspeech2", 80, 0},
    {"imagenet", 90, 0}, {"ncf", 10, 0},      {"yolov3", 50, 8},
};

/* The columns of a validation file, in the order of struct app_val's col. */
enum { APP_PROGRESS, APP_ITERATION, APP_SQR, APP_VAR, APP_NCOLS };
static const char *const app_col_names[APP_NCOLS] = {"progress", "iteration", "grad_sqr",
                                                     "grad_var"};

/* The N-D interpolation caps the node count here (the largest scalability measurement). */
#define APP_ND_MAX_NODES 16
/* Memoised placements have at most this many nodes, each with at most 255 GPUs. */
#define APP_MEMO_NODES 16

/* One validation file: a column per statistic, epochs rows each (one allocation, col[0]). */
struct app_val {
    int bsz;
    double *col[APP_NCOLS];
};

/* One measured placement: its rows are [first, first + count) of px, pstep, psync, by local_bsz. */
struct app_place {
    char digits[sizeof(((struct measured_row *)0)->placement)];
    size_t first;
    size_t count;
};

struct app_memo {
    int used;
    int len;
    unsigned char p[APP_MEMO_NODES];
    double bsz;
    double step;
    double sync;
};

struct app_impl {
    struct measured *m;
    struct app_val *val; /* nval files, by batch size ascending */
    size_t nval;
    int *bszs;
    struct app_place *place; /* nplace placements, by digits (strcmp) */
    size_t nplace;
    double *px, *pstep, *psync;
    struct delaunay *tri; /* the N-D interpolator, built on first use */
    double *ndvals;       /* (step, sync) per triangulated point */
    struct app_memo *memo;
    size_t memo_cap, memo_n;
};

/* The last component of dir (trailing slashes ignored) as [*start, *start + *len). */
static void app_basename(const char *dir, const char **start, size_t *len)
{
    size_t dlen = strlen(dir);
    const char *base;

    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    base = dir + dlen;
    while (base > dir && base[-1] != '/')
        base--;
    *start = base;
    *len = (size_t)(dir + dlen - base);
}

static const struct app_known *app_lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(app_known) / sizeof(app_known[0]); i++)
        if (strlen(app_known[i].name) == len && memcmp(app_known[i].name, name, len) == 0)
            return &app_known[i];
    return NULL;
}

/* A validation file found in the folder. */
struct app_vfile {
    long bsz;
    char *name;
};

static int app_vfile_cmp(const void *pa, const void *pb)
{
    const struct app_vfile *a = pa, *b = pb;

    return (a->bsz > b->bsz) - (a->bsz < b->bsz);
}

static void app_vfiles_free(struct app_vfile *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

/* If name is validation-<B>.csv, its B (> 0) in *bsz and 1; 0 if it is no validation file;
 * ERR_PARSE if it looks like one but B is not a whole number in [1, INT_MAX]. */
static int app_vfile_bsz(const char *dir, const char *name, long *bsz, struct error *e)
{
    static const char prefix[] = "validation-", suffix[] = ".csv";
    size_t len = strlen(name), plen = sizeof(prefix) - 1, slen = sizeof(suffix) - 1;
    long b = 0;

    if (len < plen + slen || strncmp(name, prefix, plen) != 0 ||
        strcmp(name + len - slen, suffix) != 0)
        return 0;
    for (size_t i = plen; i < len - slen; i++) {
        if (name[i] < '0' || name[i] > '9' || b > (INT32_MAX - 9) / 10) {
            b = 0;
            break;
        }
        b = b * 10 + (name[i] - '0');
    }
    if (b < 1)
        return err_set(e, ERR_PARSE, dir, 0, 0,
                       "%s: expected validation-<batch size>.csv with a whole batch size >= 1",
                       name);
    *bsz = b;
    return 1;
}

/* The validation files of dir, sorted by batch size. */
static int app_list_vfiles(const char *dir, struct app_vfile **out, size_t *nout, struct error *e)
{
    struct app_vfile *f = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    DIR *d;
    int rc = 0;

    d = opendir(dir);
    if (!d)
        return err_set(e, errno == ENOENT || errno == ENOTDIR ? ERR_NOENT : ERR_IO, dir, 0, 0,
                       "cannot list the folder: %s", strerror(errno));
    while ((ent = readdir(d)) != NULL) {
        long bsz = 0;

        if ((rc = app_vfile_bsz(dir, ent->d_name, &bsz, e)) <= 0) {
            if (rc < 0)
                goto out;
            continue;
        }
        rc = 0;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 8;
            struct app_vfile *grown = realloc(f, ncap * sizeof(*grown));

            if (!grown) {
                rc = err_set(e, ERR_NOMEM, dir, 0, 0, "no memory for the validation file list");
                goto out;
            }
            f = grown;
            cap = ncap;
        }
        f[n].bsz = bsz;
        if (!(f[n].name = strdup(ent->d_name))) {
            rc = err_set(e, ERR_NOMEM, dir, 0, 0, "no memory for the validation file list");
            goto out;
        }
        n++;
    }
    if (n == 0) {
        rc = err_set(e, ERR_NOENT, dir, 0, 0,
                     "no validation-<batch size>.csv files: an application needs at least one");
        goto out;
    }
    qsort(f, n, sizeof(*f), app_vfile_cmp);
    for (size_t i = 1; i < n; i++)
        if (f[i].bsz == f[i - 1].bsz) {
            rc = err_set(e, ERR_PARSE, dir, 0, 0, "%s and %s are both for batch size %ld",
                         f[i - 1].name, f[i].name, f[i].bsz);
            goto out;
        }
    *out = f;
    *nout = n;
    f = NULL;
    n = 0;
out:
    closedir(d);
    app_vfiles_free(f, n);
    return rc;
}

/* Read one validation file into v. *rows is the row count every file must have, or -1 before
 * the first file (then set); first names that first file for messages. */
static int app_read_vfile(const char *path, const char *first, struct app_val *v, int *rows,
                          struct error *e)
{
    struct csv_table *t = NULL;
    size_t cols[APP_NCOLS];
    int rc;

    if ((rc = csv_load(path, &t, e)) < 0)
        return rc;
    for (int c = 0; c < APP_NCOLS; c++)
        if ((rc = csv_column(t, app_col_names[c], &cols[c], e)) < 0)
            goto out;
    if (t->nrows > 1000000) {
        rc = err_set(e, ERR_RANGE, t->name, t->end_line, 0, "%zu rows: at most 1000000 epochs",
                     t->nrows);
        goto out;
    }
    if (*rows >= 0 && t->nrows != (size_t)*rows) {
        rc = err_set(e, ERR_PARSE, t->name, t->end_line, 0,
                     "%zu rows (epochs), but %s has %d: every validation file needs one row per "
                     "epoch",
                     t->nrows, first, *rows);
        goto out;
    }
    v->col[0] = malloc(APP_NCOLS * t->nrows * sizeof(double));
    if (!v->col[0]) {
        rc = err_set(e, ERR_NOMEM, t->name, 0, 0, "no memory for %zu rows", t->nrows);
        goto out;
    }
    for (int c = 1; c < APP_NCOLS; c++)
        v->col[c] = v->col[0] + (size_t)c * t->nrows;
    for (size_t i = 0; i < t->nrows; i++)
        for (int c = 0; c < APP_NCOLS; c++)
            if ((rc = csv_get_double(t, i, cols[c], &v->col[c][i], e)) < 0)
                goto out;
    *rows = (int)t->nrows;
out:
    csv_free(t);
    return rc;
}

static int app_load_validation(struct app *a, const char *dir, size_t dlen, struct error *e)
{
    struct app_impl *im = a->impl;
    struct app_vfile *f = NULL;
    char path[4096], first[4096];
    size_t n = 0;
    int rows = -1, rc;

    if ((rc = app_list_vfiles(dir, &f, &n, e)) < 0)
        return rc;
    im->val = calloc(n, sizeof(*im->val));
    im->bszs = calloc(n, sizeof(*im->bszs));
    if (!im->val || !im->bszs) {
        rc = err_set(e, ERR_NOMEM, dir, 0, 0, "no memory for %zu validation files", n);
        goto out;
    }
    snprintf(first, sizeof(first), "%.*s/%s", (int)dlen, dir, f[0].name);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%.*s/%s", (int)dlen, dir, f[i].name);
        im->val[i].bsz = im->bszs[i] = (int)f[i].bsz;
        im->nval++;
        if ((rc = app_read_vfile(path, first, &im->val[i], &rows, e)) < 0)
            goto out;
    }
    a->epochs = rows;
    a->nbsz = (int)n;
    a->bszs = im->bszs;
    a->init_bsz = im->bszs[0];
    a->max_bsz = im->bszs[n - 1];
out:
    app_vfiles_free(f, n);
    return rc;
}

/* A placement row and its place in the file, for sorting. */
struct app_rowref {
    const struct measured_row *r;
    size_t idx;
};

/* By placement digits, then local_bsz, then file order (as a stable sort by local_bsz). */
static int app_rowref_by_placement(const void *pa, const void *pb)
{
    const struct app_rowref *a = pa, *b = pb;
    int c = strcmp(a->r->placement, b->r->placement);

    if (c)
        return c;
    if (a->r->s.x.local_bsz != b->r->s.x.local_bsz)
        return a->r->s.x.local_bsz < b->r->s.x.local_bsz ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* By (nodes, replicas, local_bsz), then file order. */
static int app_rowref_by_key(const void *pa, const void *pb)
{
    const struct app_rowref *a = pa, *b = pb;
    const struct tput_point *x = &a->r->s.x, *y = &b->r->s.x;

    if (x->nodes != y->nodes)
        return x->nodes < y->nodes ? -1 : 1;
    if (x->replicas != y->replicas)
        return x->replicas < y->replicas ? -1 : 1;
    if (x->local_bsz != y->local_bsz)
        return x->local_bsz < y->local_bsz ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The placement rows of m, sorted by cmp; *n of them. */
static int app_placement_rows(const struct measured *m, int (*cmp)(const void *, const void *),
                              struct app_rowref **out, size_t *n)
{
    struct app_rowref *refs = malloc((m->n ? m->n : 1) * sizeof(*refs));
    size_t k = 0;

    if (!refs)
        return ERR_NOMEM;
    for (size_t i = 0; i < m->n; i++)
        if (m->rows[i].source == MEASURED_PLACEMENTS)
            refs[k++] = (struct app_rowref){.r = &m->rows[i], .idx = i};
    qsort(refs, k, sizeof(*refs), cmp);
    *out = refs;
    *n = k;
    return 0;
}

/* Group the placement rows by placement for the exact path; set min_local, max_local and
 * max_node_gpus. */
static int app_index_placements(struct app *a, const char *dir, size_t dlen, struct error *e)
{
    struct app_impl *im = a->impl;
    struct app_rowref *refs = NULL;
    size_t n = 0;
    int rc;

    if ((rc = app_placement_rows(im->m, app_rowref_by_placement, &refs, &n)) < 0)
        return err_set(e, rc, dir, 0, 0, "no memory for the placement index");
    im->place = malloc((n ? n : 1) * sizeof(*im->place));
    im->px = malloc((n ? n : 1) * sizeof(double));
    im->pstep = malloc((n ? n : 1) * sizeof(double));
    im->psync = malloc((n ? n : 1) * sizeof(double));
    if (!im->place || !im->px || !im->pstep || !im->psync) {
        rc = err_set(e, ERR_NOMEM, dir, 0, 0, "no memory for the placement index");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct measured_row *r = refs[i].r;
        double b = r->s.x.local_bsz;

        if (b != floor(b) || b > INT32_MAX) {
            char file[4096];

            snprintf(file, sizeof(file), "%.*s/placements.csv", (int)dlen, dir);
            rc = err_set(e, ERR_PARSE, file, r->line, 0,
                         "local_bsz: expected a whole number of samples, found %g", b);
            goto out;
        }
        if (i == 0 || b < a->min_local)
            a->min_local = (int)b;
        if (i == 0 || b > a->max_local)
            a->max_local = (int)b;
        if (i == 0 || strcmp(r->placement, refs[i - 1].r->placement) != 0) {
            struct app_place *p = &im->place[im->nplace++];

            memcpy(p->digits, r->placement, sizeof(p->digits));
            p->first = i;
            p->count = 0;
            for (const char *d = r->placement; *d; d++)
                if (*d - '0' > a->max_node_gpus)
                    a->max_node_gpus = *d - '0';
        }
        im->place[im->nplace - 1].count++;
        im->px[i] = b;
        im->pstep[i] = r->s.step_time;
        im->psync[i] = r->s.sync_time;
    }
out:
    free(refs);
    return rc;
}

int app_load(const char *dir, struct app **out, struct error *e)
{
    const struct app_known *known;
    struct app *a = NULL;
    const char *base;
    size_t blen, dlen = strlen(dir);
    int rc;

    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    app_basename(dir, &base, &blen);
    known = app_lookup(base, blen);
    if (!known)
        return err_set(e, ERR_UNKNOWN, dir, 0, 0,
                       "unknown application \"%.*s\": its epoch count is not known (known: bert, "
                       "cifar10, deepspeech2, imagenet, ncf, yolov3)",
                       (int)(blen > 64 ? 64 : blen), base);
    a = calloc(1, sizeof(*a));
    if (!a || !(a->impl = calloc(1, sizeof(*a->impl))) || !(a->name = strndup(base, blen))) {
        rc = err_set(e, ERR_NOMEM, dir, 0, 0, "no memory for the application");
        goto out;
    }
    if ((rc = measured_load(dir, &a->impl->m, e)) < 0 ||
        (rc = app_index_placements(a, dir, dlen, e)) < 0 ||
        (rc = app_load_validation(a, dir, dlen, e)) < 0)
        goto out;
    a->max_epochs = known->max_epochs;
    if (known->max_local > 0)
        a->max_local = known->max_local;
    if (a->epochs < a->max_epochs) {
        rc = err_set(e, ERR_RANGE, dir, 0, 0,
                     "the validation files have %d rows (epochs), fewer than the %d epochs of %s",
                     a->epochs, a->max_epochs, a->name);
        goto out;
    }
    *out = a;
    a = NULL;
out:
    app_free(a);
    return rc;
}

void app_free(struct app *a)
{
    struct app_impl *im;

    if (!a)
        return;
    im = a->impl;
    if (im) {
        measured_free(im->m);
        for (size_t i = 0; i < im->nval; i++)
            free(im->val[i].col[0]);
        free(im->val);
        free(im->bszs);
        free(im->place);
        free(im->px);
        free(im->pstep);
        free(im->psync);
        delaunay_free(im->tri);
        free(im->ndvals);
        free(im->memo);
        free(im);
    }
    free(a->name);
    free(a);
}

/* ---- throughput ---- */

/* Linear interpolation of (y1, y2) over ascending x at q, computed as scipy's interp1d does
 * (the segment is the one whose right end is the first x >= q). ERR_RANGE outside [x0, xn-1]. */
static int app_interp1d(const double *x, const double *y1, const double *y2, size_t n, double q,
                        double *o1, double *o2)
{
    size_t lo = 0, hi = n, i;
    double slope;

    if (!(q >= x[0] && q <= x[n - 1]))
        return ERR_RANGE;
    if (n == 1) {
        *o1 = y1[0];
        *o2 = y2[0];
        return 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (x[mid] < q)
            lo = mid + 1;
        else
            hi = mid;
    }
    i = lo < 1 ? 1 : lo > n - 1 ? n - 1 : lo;
    if (x[i] == x[i - 1]) {
        *o1 = y1[i - 1];
        *o2 = y2[i - 1];
        return 0;
    }
    slope = (y1[i] - y1[i - 1]) / (x[i] - x[i - 1]);
    *o1 = slope * (q - x[i - 1]) + y1[i - 1];
    slope = (y2[i] - y2[i - 1]) / (x[i] - x[i - 1]);
    *o2 = slope * (q - x[i - 1]) + y2[i - 1];
    return 0;
}

static int app_place_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct app_place *)elem)->digits);
}

/* Build the N-D interpolator: the per-(nodes, replicas, local_bsz) means of the placement rows in
 * key order, then the scalability rows in file order. */
static int app_build_nd(struct app_impl *im)
{
    const struct measured *m = im->m;
    struct app_rowref *refs = NULL;
    double *pts = NULL, *vals = NULL;
    size_t n = 0, k = 0;
    int rc;

    if ((rc = app_placement_rows(m, app_rowref_by_key, &refs, &n)) < 0)
        return rc;
    pts = malloc((m->n ? m->n : 1) * 3 * sizeof(double));
    vals = malloc((m->n ? m->n : 1) * 2 * sizeof(double));
    if (!pts || !vals) {
        rc = ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n;) {
        const struct tput_point *x = &refs[i].r->s.x;
        double step = 0.0, sync = 0.0;
        size_t j = i;

        while (j < n && refs[j].r->s.x.nodes == x->nodes &&
               refs[j].r->s.x.replicas == x->replicas && refs[j].r->s.x.local_bsz == x->local_bsz) {
            step += refs[j].r->s.step_time;
            sync += refs[j].r->s.sync_time;
            j++;
        }
        pts[3 * k] = x->nodes;
        pts[3 * k + 1] = x->replicas;
        pts[3 * k + 2] = x->local_bsz;
        vals[2 * k] = step / (double)(j - i);
        vals[2 * k + 1] = sync / (double)(j - i);
        k++;
        i = j;
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct measured_row *r = &m->rows[i];

        if (r->source != MEASURED_SCALABILITY)
            continue;
        pts[3 * k] = r->s.x.nodes;
        pts[3 * k + 1] = r->s.x.replicas;
        pts[3 * k + 2] = r->s.x.local_bsz;
        vals[2 * k] = r->s.step_time;
        vals[2 * k + 1] = r->s.sync_time;
        k++;
    }
    if ((rc = delaunay_build(pts, k, 3, &im->tri, NULL)) < 0)
        goto out;
    im->ndvals = vals;
    vals = NULL;
out:
    free(refs);
    free(pts);
    free(vals);
    return rc;
}

static uint64_t app_memo_hash(const unsigned char *p, int len, double bsz)
{
    uint64_t h = 1469598103934665603ULL, bits;

    memcpy(&bits, &bsz, sizeof(bits));
    for (int i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    for (int i = 0; i < 8; i++)
        h = (h ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ULL;
    return h ^ (uint64_t)len;
}

/* The memo slot for the key: the entry when used, else the empty slot where it would go. */
static struct app_memo *app_memo_slot(struct app_memo *tab, size_t cap, const unsigned char *p,
                                      int len, double bsz)
{
    size_t i = (size_t)app_memo_hash(p, len, bsz) & (cap - 1);

    for (;; i = (i + 1) & (cap - 1)) {
        struct app_memo *s = &tab[i];

        if (!s->used || (s->len == len && s->bsz == bsz && memcmp(s->p, p, (size_t)len) == 0))
            return s;
    }
}

/* Remember a result; a failure to grow only loses the memo entry. */
static void app_memo_put(struct app_impl *im, const unsigned char *p, int len, double bsz,
                         double step, double sync)
{
    struct app_memo *s;

    if (2 * (im->memo_n + 1) > im->memo_cap) {
        size_t ncap = im->memo_cap ? 2 * im->memo_cap : 256;
        struct app_memo *grown = calloc(ncap, sizeof(*grown));

        if (!grown)
            return;
        for (size_t i = 0; i < im->memo_cap; i++)
            if (im->memo[i].used)
                *app_memo_slot(grown, ncap, im->memo[i].p, im->memo[i].len, im->memo[i].bsz) =
                    im->memo[i];
        free(im->memo);
        im->memo = grown;
        im->memo_cap = ncap;
    }
    s = app_memo_slot(im->memo, im->memo_cap, p, len, bsz);
    if (s->used)
        return;
    *s = (struct app_memo){.used = 1, .len = len, .bsz = bsz, .step = step, .sync = sync};
    memcpy(s->p, p, (size_t)len);
    im->memo_n++;
}

/* The canonical placement (non-zero entries, smallest rotation) of p into c; returns the entry
 * count and the total GPUs in *replicas; -1 for a negative entry. */
static int app_canonical(const int *p, int n, int *c, long *replicas)
{
    int k = 0, best = 0;

    *replicas = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < 0)
            return -1;
        if (p[i] > 0) {
            c[k++] = p[i];
            *replicas += p[i];
        }
    }
    for (int r = 1; r < k; r++)
        for (int i = 0; i < k; i++) {
            int x = c[(r + i) % k], y = c[(best + i) % k];

            if (x != y) {
                if (x < y)
                    best = r;
                break;
            }
        }
    if (best) {
        int tmp[APP_MEMO_NODES], *t = k <= APP_MEMO_NODES ? tmp : malloc((size_t)k * sizeof(int));

        if (!t)
            return -2;
        for (int i = 0; i < k; i++)
            t[i] = c[(best + i) % k];
        memcpy(c, t, (size_t)k * sizeof(int));
        if (t != tmp)
            free(t);
    }
    return k;
}

/* The look-up itself, on a canonical placement c of k nodes. */
static int app_lookup_tput(struct app_impl *im, const int *c, int k, long replicas,
                           double local_bsz, double *step, double *sync)
{
    char digits[sizeof(((struct app_place *)0)->digits)];
    const struct app_place *pl = NULL;
    double q[3], out[2];
    int rc;

    if ((size_t)k < sizeof(digits)) {
        int i;

        for (i = 0; i < k && c[i] <= 9; i++)
            digits[i] = (char)('0' + c[i]);
        digits[i] = '\0';
        if (i == k)
            pl = bsearch(digits, im->place, im->nplace, sizeof(*im->place), app_place_cmp);
    }
    if (pl)
        return app_interp1d(im->px + pl->first, im->pstep + pl->first, im->psync + pl->first,
                            pl->count, local_bsz, step, sync);
    if (!im->tri && (rc = app_build_nd(im)) < 0)
        return rc;
    q[0] = k < APP_ND_MAX_NODES ? k : APP_ND_MAX_NODES;
    q[1] = (double)replicas;
    q[2] = local_bsz;
    if ((rc = delaunay_interpolate(im->tri, im->ndvals, 2, q, out)) < 0)
        return rc;
    *step = out[0];
    *sync = out[1];
    return 0;
}

int app_throughput(struct app *a, const int *placement, int nnodes, double local_bsz,
                   double *step_time, double *sync_time)
{
    struct app_impl *im = a->impl;
    unsigned char key[APP_MEMO_NODES];
    int buf[64], *c = buf, k, memo = 1, rc;
    double step, sync;
    long replicas;

    if (nnodes < 0 || (nnodes > 0 && !placement) || !isfinite(local_bsz))
        return ERR_INVAL;
    if (nnodes > (int)(sizeof(buf) / sizeof(buf[0])) && !(c = malloc((size_t)nnodes * sizeof(int))))
        return ERR_NOMEM;
    k = app_canonical(placement, nnodes, c, &replicas);
    if (k <= 0) {
        rc = k == -2 ? ERR_NOMEM : ERR_INVAL;
        goto out;
    }
    memo = k <= APP_MEMO_NODES;
    for (int i = 0; i < k && memo; i++) {
        memo = c[i] <= 255;
        key[i] = (unsigned char)c[i];
    }
    if (memo && im->memo) {
        const struct app_memo *s = app_memo_slot(im->memo, im->memo_cap, key, k, local_bsz);

        if (s->used) {
            step = s->step;
            sync = s->sync;
            rc = 0;
            goto done;
        }
    }
    if ((rc = app_lookup_tput(im, c, k, replicas, local_bsz, &step, &sync)) < 0)
        goto out;
    if (memo)
        app_memo_put(im, key, k, local_bsz, step, sync);
done:
    if (step_time)
        *step_time = step;
    if (sync_time)
        *sync_time = sync;
out:
    if (c != buf)
        free(c);
    return rc;
}

/* ---- validation traces ---- */

/* The value of column col at (batch, epoch), linear in batch between the bracketing sizes. */
static int app_interp_bsz(const struct app *a, int col, double batch, int epoch, double *out)
{
    const struct app_val *v = a->impl->val;
    int lo = -1, hi = -1, n = a->nbsz;

    if (!(batch >= a->init_bsz && batch <= a->max_bsz) || epoch < 0 || epoch >= a->epochs)
        return ERR_RANGE;
    for (int i = 0; i < n; i++) {
        if (v[i].bsz <= batch)
            lo = i;
        if (hi < 0 && v[i].bsz >= batch)
            hi = i;
    }
    if (lo == hi) {
        *out = v[lo].col[col][epoch];
        return 0;
    }
    *out = ((batch - v[lo].bsz) * v[hi].col[col][epoch] +
            (v[hi].bsz - batch) * v[lo].col[col][epoch]) /
           (double)(v[hi].bsz - v[lo].bsz);
    return 0;
}

int app_grad_stats(const struct app *a, double batch, int epoch, double *sqr, double *var)
{
    double s, v;
    int rc;

    if ((rc = app_interp_bsz(a, APP_SQR, batch, epoch, &s)) < 0 ||
        (rc = app_interp_bsz(a, APP_VAR, batch, epoch, &v)) < 0)
        return rc;
    if (sqr)
        *sqr = s;
    if (var)
        *var = v;
    return 0;
}

int app_iteration(const struct app *a, double batch, int epoch, double *iteration)
{
    return app_interp_bsz(a, APP_ITERATION, batch, epoch, iteration);
}

double app_progress_needed(const struct app *a, int epoch)
{
    double p;

    if (epoch < 0 || epoch > a->epochs)
        return NAN;
    if (epoch == 0)
        return 0.0;
    p = a->impl->val[0].col[APP_PROGRESS][epoch - 1];
    for (int i = 1; i < a->nbsz; i++)
        if (a->impl->val[i].col[APP_PROGRESS][epoch - 1] < p)
            p = a->impl->val[i].col[APP_PROGRESS][epoch - 1];
    return p;
}

static int app_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **app_list(const char *profiles)
{
    DIR *d = opendir(profiles);
    struct dirent *de;
    char **v = calloc(65, sizeof(char *));
    int k = 0;

    if (!d || !v) {
        if (d)
            closedir(d);
        return v;
    }
    while ((de = readdir(d)) && k < 64) {
        char p[4096];
        struct stat st;

        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s/placements.csv", profiles, de->d_name);
        if (stat(p, &st) == 0 && !(v[k] = strdup(de->d_name))) {
            closedir(d);
            app_list_free(v);
            return NULL;
        }
        k += v[k] != NULL;
    }
    closedir(d);
    qsort(v, (size_t)k, sizeof(char *), app_name_cmp);
    return v;
}

void app_list_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}
