/* fake.c: the fake cloud: instances in memory or in a JSON file, capacity per offer, injected
 * faults. Idempotent launches by token, as a real cloud's. */
#include "providers/fake.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/conf.h"
#include "util/file.h"
#include "util/json.h"
#include "util/vec.h"

#define FAKE_MAX_FAULTS 8
#define FAKE_MAX_OFFERS 64
#define FAKE_MAX_QUOTAS 8

struct fake_instance {
    char id[CLOUD_ID_MAX];
    char offer[CLOUD_NAME_MAX];
    char cluster[CLOUD_ID_MAX];
    char token[CLOUD_ID_MAX];
    enum cloud_state state;
    double launched;
    double ends;
};

/* A quota over some offers: what live instances of them (any cluster's) take, plus what others
 * hold, may not pass limit. */
struct fake_quota {
    struct cloud_quota q;          /* q.used: what others hold (live instances are added) */
    double units[FAKE_MAX_OFFERS]; /* per offer (by index): a node's units; 0: not counted */
};

struct fake_fault {
    char op[16];
    int code;
    int times;
};

struct fake_cloud {
    pthread_mutex_t mu; /* tests reach the fake from their own thread */
    struct cloud_offer *offers;
    int *capacity;
    size_t noffers;
    struct fake_instance *inst;
    size_t n, cap;
    long next_id;
    struct cloud_fake_counts counts;
    struct fake_fault faults[FAKE_MAX_FAULTS];
    struct fake_quota quotas[FAKE_MAX_QUOTAS];
    size_t nquotas;
    char *path; /* NULL: in memory */
    double (*clock)(void *ctx);
    void *clock_ctx;
};

static const char *const fake_states[] = {"pending", "running", "noticed", "gone", NULL};

static double fake_now(struct fake_cloud *f)
{
    struct timespec ts;

    if (f->clock)
        return f->clock(f->clock_ctx);
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Take one injected fault of op: its code, or 0. */
static int fake_fault(struct fake_cloud *f, const char *op)
{
    for (int i = 0; i < FAKE_MAX_FAULTS; i++)
        if (f->faults[i].times > 0 && strcmp(f->faults[i].op, op) == 0) {
            f->faults[i].times--;
            return f->faults[i].code;
        }
    return 0;
}

static int fake_push(struct fake_cloud *f, const struct fake_instance *in)
{
    struct fake_instance *grown = vec_grow(f->inst, &f->cap, f->n, sizeof(*grown));

    if (!grown)
        return ERR_NOMEM;
    f->inst = grown;
    f->inst[f->n++] = *in;
    return 0;
}

static void fake_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static int fake_count(const struct jv *o, const char *key, long *out)
{
    long long v = 0;

    if (jv_integer_value(jv_get(o, key), &v) < 0 || v < 0)
        return ERR_PARSE;
    *out = (long)v;
    return 0;
}

/* Read the file into f (a missing file: nothing yet). */
static int fake_load(struct fake_cloud *f)
{
    struct jv *v = NULL;
    const struct jv *arr;
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (!f->path)
        return 0;
    rc = file_read_all(f->path, &text, &len, NULL);
    if (rc == ERR_NOENT)
        return 0;
    if (rc < 0)
        return rc;
    rc = jv_parse(text, len, &v, NULL);
    free(text);
    if (rc < 0)
        return rc;
    f->n = 0;
    if (fake_count(v, "next_id", &f->next_id) < 0 ||
        fake_count(v, "offers_calls", &f->counts.offers_calls) < 0 ||
        fake_count(v, "list_calls", &f->counts.list_calls) < 0 ||
        fake_count(v, "launch_calls", &f->counts.launch_calls) < 0 ||
        fake_count(v, "launched", &f->counts.launched) < 0 ||
        fake_count(v, "terminate_calls", &f->counts.terminate_calls) < 0 ||
        jv_type_of(arr = jv_get(v, "instances")) != JV_ARRAY) {
        rc = ERR_PARSE;
        goto out;
    }
    for (size_t i = 0; i < jv_size(arr) && rc == 0; i++) {
        const struct jv *o = jv_at(arr, i);
        const char *state = jv_string_value(jv_get(o, "state"));
        struct fake_instance in = {0};
        int s = -1;

        for (int k = 0; state && fake_states[k]; k++)
            if (strcmp(state, fake_states[k]) == 0)
                s = k;
        if (s < 0 || !jv_string_value(jv_get(o, "id")) || !jv_string_value(jv_get(o, "offer")) ||
            !jv_string_value(jv_get(o, "cluster")) || !jv_string_value(jv_get(o, "token")) ||
            jv_number_value(jv_get(o, "launched"), &in.launched) < 0 ||
            jv_number_value(jv_get(o, "ends"), &in.ends) < 0) {
            rc = ERR_PARSE;
            break;
        }
        fake_copy(in.id, sizeof(in.id), jv_string_value(jv_get(o, "id")));
        fake_copy(in.offer, sizeof(in.offer), jv_string_value(jv_get(o, "offer")));
        fake_copy(in.cluster, sizeof(in.cluster), jv_string_value(jv_get(o, "cluster")));
        fake_copy(in.token, sizeof(in.token), jv_string_value(jv_get(o, "token")));
        in.state = (enum cloud_state)s;
        rc = fake_push(f, &in);
    }
out:
    jv_free(v);
    return rc;
}

/* Write f to its file: a new file renamed over the old, so a reader never sees half of one. */
static int fake_save(struct fake_cloud *f)
{
    struct jv *v, *arr;
    char tmp[4200];
    int rc = 0;

    if (!f->path)
        return 0;
    v = jv_object();
    arr = jv_array();
    rc |= jv_set(v, "next_id", jv_integer(f->next_id));
    rc |= jv_set(v, "offers_calls", jv_integer(f->counts.offers_calls));
    rc |= jv_set(v, "list_calls", jv_integer(f->counts.list_calls));
    rc |= jv_set(v, "launch_calls", jv_integer(f->counts.launch_calls));
    rc |= jv_set(v, "launched", jv_integer(f->counts.launched));
    rc |= jv_set(v, "terminate_calls", jv_integer(f->counts.terminate_calls));
    for (size_t i = 0; i < f->n; i++) {
        const struct fake_instance *in = &f->inst[i];
        struct jv *o = jv_object();

        rc |= jv_set(o, "id", jv_string(in->id));
        rc |= jv_set(o, "offer", jv_string(in->offer));
        rc |= jv_set(o, "cluster", jv_string(in->cluster));
        rc |= jv_set(o, "token", jv_string(in->token));
        rc |= jv_set(o, "state", jv_string(fake_states[in->state]));
        rc |= jv_set(o, "launched", jv_number(in->launched));
        rc |= jv_set(o, "ends", jv_number(in->ends));
        rc |= jv_push(arr, o);
    }
    rc |= jv_set(v, "instances", arr);
    if (rc == 0) {
        snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
        rc = jv_write_path(v, tmp);
        if (rc == 0 && rename(tmp, f->path) != 0)
            rc = ERR_IO;
    } else {
        rc = ERR_NOMEM;
    }
    jv_free(v);
    return rc;
}

static int fake_offer_index(const struct fake_cloud *f, const char *name)
{
    for (size_t i = 0; i < f->noffers; i++)
        if (strcmp(f->offers[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Begin a call: lock, read the file, count the call (count may be NULL) and take a fault of op
 * (NULL: none). *loaded says whether the file was read (only then is it written back). The lock
 * is held on return, whatever it returns. */
static int fake_enter(struct fake_cloud *f, long *count, const char *op, int *loaded)
{
    int rc;

    pthread_mutex_lock(&f->mu);
    rc = fake_load(f);
    *loaded = rc == 0;
    if (rc == 0 && count)
        (*count)++;
    if (rc == 0 && op)
        rc = fake_fault(f, op);
    return rc;
}

/* End a call begun by fake_enter: write the file back (when it was read) and unlock. */
static int fake_leave(struct fake_cloud *f, int rc, int loaded)
{
    if (loaded && fake_save(f) < 0 && rc == 0)
        rc = ERR_IO;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fake_offers(void *ctx, struct cloud_offer **out, size_t *n)
{
    struct fake_cloud *f = ctx;
    struct cloud_offer *copy = NULL;
    int loaded, rc = fake_enter(f, &f->counts.offers_calls, "offers", &loaded);
    size_t k = f->noffers;

    if (rc == 0 && !(copy = malloc(k * sizeof(*copy))))
        rc = ERR_NOMEM;
    if (rc == 0)
        memcpy(copy, f->offers, k * sizeof(*copy));
    if ((rc = fake_leave(f, rc, loaded)) < 0) {
        free(copy);
        return rc;
    }
    *out = copy;
    *n = k;
    return 0;
}

static int fake_list(void *ctx, const char *cluster, struct cloud_instance **out, size_t *n)
{
    struct fake_cloud *f = ctx;
    struct cloud_instance *list = NULL;
    int loaded, rc = fake_enter(f, &f->counts.list_calls, "list", &loaded);
    size_t k = 0;

    if (rc == 0 && !(list = calloc(f->n + 1, sizeof(*list))))
        rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < f->n; i++) {
        struct fake_instance *in = &f->inst[i];

        if (strcmp(in->cluster, cluster) != 0)
            continue;
        list[k] =
            (struct cloud_instance){.state = in->state, .launched = in->launched, .ends = in->ends};
        fake_copy(list[k].id, sizeof(list[k].id), in->id);
        fake_copy(list[k].offer, sizeof(list[k].offer), in->offer);
        fake_copy(list[k].token, sizeof(list[k].token), in->token);
        k++;
        if (in->state == CLOUD_PENDING) /* booted by the next look */
            in->state = CLOUD_RUNNING;
    }
    if ((rc = fake_leave(f, rc, loaded)) < 0) {
        free(list);
        return rc;
    }
    *out = list;
    *n = k;
    return 0;
}

/* Make an instance of offer o; its id into id. */
static int fake_make(struct fake_cloud *f, int o, const char *cluster, const char *token,
                     enum cloud_state state, char *id)
{
    struct fake_instance in = {.state = state, .launched = fake_now(f)};
    int rc;

    snprintf(in.id, sizeof(in.id), "fake-%06ld", ++f->next_id);
    fake_copy(in.offer, sizeof(in.offer), f->offers[o].name);
    fake_copy(in.cluster, sizeof(in.cluster), cluster);
    fake_copy(in.token, sizeof(in.token), token);
    if ((rc = fake_push(f, &in)) < 0)
        return rc;
    f->counts.launched++;
    memcpy(id, in.id, sizeof(in.id));
    return 0;
}

/* What quota k counts now: others' units and those of the live instances of its offers. */
static double fake_quota_used(const struct fake_cloud *f, size_t k)
{
    const struct fake_quota *q = &f->quotas[k];
    double used = q->q.used;

    for (size_t i = 0; i < f->n; i++) {
        int o = fake_offer_index(f, f->inst[i].offer);

        if (o >= 0 && f->inst[i].state != CLOUD_GONE)
            used += q->units[o];
    }
    return used;
}

/* A launch under the lock: the first launch's instance for a token used before, else a new
 * instance of offer where capacity and every quota over it allow. */
static int fake_launch_locked(struct fake_cloud *f, const char *offer, const char *cluster,
                              const char *token, char *id)
{
    int o, alive = 0, lost;
    char made[CLOUD_ID_MAX];

    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->inst[i].cluster, cluster) == 0 && strcmp(f->inst[i].token, token) == 0) {
            memcpy(id, f->inst[i].id, CLOUD_ID_MAX);
            return 0;
        }
    if ((lost = fake_fault(f, "launch")) < 0)
        return lost;
    if ((o = fake_offer_index(f, offer)) < 0)
        return ERR_UNKNOWN;
    for (size_t i = 0; i < f->n; i++)
        alive += f->inst[i].state != CLOUD_GONE && strcmp(f->inst[i].offer, offer) == 0;
    if (f->capacity[o] > 0 && alive >= f->capacity[o])
        return ERR_CAPACITY;
    /* as EC2 refuses a bid below the spot price (SpotMaxPriceTooLow): no capacity at that bid */
    if (f->offers[o].spot && f->offers[o].max_price > 0 &&
        f->offers[o].price > f->offers[o].max_price)
        return ERR_CAPACITY;
    for (size_t k = 0; k < f->nquotas; k++)
        if (f->quotas[k].units[o] > 0 &&
            fake_quota_used(f, k) + f->quotas[k].units[o] > f->quotas[k].q.limit)
            return ERR_QUOTA;
    lost = fake_fault(f, "launch-lost");
    if ((o = fake_make(f, o, cluster, token, CLOUD_PENDING, made)) < 0)
        return o;
    if (lost < 0)
        return lost;
    memcpy(id, made, CLOUD_ID_MAX);
    return 0;
}

static int fake_launch(void *ctx, const char *offer, const char *cluster, const char *token,
                       char *id)
{
    struct fake_cloud *f = ctx;
    int loaded, rc;

    if (!offer || !cluster || !token || !token[0] || strlen(token) >= CLOUD_ID_MAX ||
        strlen(cluster) >= CLOUD_ID_MAX)
        return ERR_INVAL;
    rc = fake_enter(f, &f->counts.launch_calls, NULL, &loaded);
    if (rc == 0)
        rc = fake_launch_locked(f, offer, cluster, token, id);
    return fake_leave(f, rc, loaded);
}

static int fake_terminate(void *ctx, const char *cluster, const char *id)
{
    struct fake_cloud *f = ctx;
    int loaded, rc = fake_enter(f, &f->counts.terminate_calls, "terminate", &loaded);

    if (rc == 0)
        rc = ERR_UNKNOWN;
    for (size_t i = 0; rc == ERR_UNKNOWN && i < f->n; i++)
        if (strcmp(f->inst[i].id, id) == 0 && strcmp(f->inst[i].cluster, cluster) == 0) {
            f->inst[i].state = CLOUD_GONE;
            rc = 0;
        }
    return fake_leave(f, rc, loaded);
}

static int fake_quotas(void *ctx, struct cloud_quota **quotas, size_t *nq,
                       struct cloud_quota_use **uses, size_t *nu)
{
    struct fake_cloud *f = ctx;
    struct cloud_quota *q = NULL;
    struct cloud_quota_use *u = NULL;
    int loaded, rc = fake_enter(f, &f->counts.quotas_calls, "quotas", &loaded);
    size_t k = 0;

    if (rc == 0 && (!(q = calloc(f->nquotas + 1, sizeof(*q))) ||
                    !(u = calloc(f->nquotas * f->noffers + 1, sizeof(*u)))))
        rc = ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < f->nquotas; i++) {
        q[i] = f->quotas[i].q;
        q[i].used = fake_quota_used(f, i);
        for (size_t o = 0; o < f->noffers; o++)
            if (f->quotas[i].units[o] > 0) {
                u[k] = (struct cloud_quota_use){.quota = i, .units = f->quotas[i].units[o]};
                fake_copy(u[k].offer, sizeof(u[k].offer), f->offers[o].name);
                k++;
            }
    }
    if ((rc = fake_leave(f, rc, loaded)) < 0) {
        free(q);
        free(u);
        return rc;
    }
    *quotas = q;
    *nq = f->nquotas;
    *uses = u;
    *nu = k;
    return 0;
}

static void fake_destroy(void *ctx)
{
    struct fake_cloud *f = ctx;

    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->offers);
    free(f->capacity);
    free(f->inst);
    free(f->path);
    free(f);
}

static const struct cloud_ops cloud_fake_ops = {
    .name = "fake",
    .offers = fake_offers,
    .list = fake_list,
    .launch = fake_launch,
    .terminate = fake_terminate,
    .destroy = fake_destroy,
    .quotas = fake_quotas,
};

int cloud_fake_create(const struct cloud_offer *offers, const int *capacity, size_t n,
                      const char *path, struct cloud *out)
{
    struct fake_cloud *f;
    int rc = 0;

    if (!offers || n == 0 || n > FAKE_MAX_OFFERS || !out)
        return ERR_INVAL;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (strcmp(offers[i].name, offers[k].name) == 0)
                return ERR_INVAL;
    if (!(f = calloc(1, sizeof(*f))))
        return ERR_NOMEM;
    f->offers = malloc(n * sizeof(*f->offers));
    f->capacity = calloc(n, sizeof(int));
    f->path = path ? strdup(path) : NULL;
    if (!f->offers || !f->capacity || (path && !f->path) || pthread_mutex_init(&f->mu, NULL) != 0) {
        free(f->offers);
        free(f->capacity);
        free(f->path);
        free(f);
        return ERR_NOMEM;
    }
    memcpy(f->offers, offers, n * sizeof(*f->offers));
    for (size_t i = 0; capacity && i < n; i++)
        f->capacity[i] = capacity[i] > 0 ? capacity[i] : 0;
    f->noffers = n;
    if ((rc = fake_load(f)) < 0) {
        fake_destroy(f);
        return rc;
    }
    out->ops = &cloud_fake_ops;
    out->ctx = f;
    return 0;
}

/* The section's `quotas:` (a list of {name, limit, used, offers: {offer: units}}) set on the
 * fake cloud c. Errors at the key's file:line:column. */
static int fake_quotas_conf(const struct conf_node *list, struct cloud *c, struct error *e)
{
    static const char *const keys[] = {"name", "limit", "used", "offers", NULL};

    if (list->kind != CONF_SEQUENCE || list->n > FAKE_MAX_QUOTAS)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: expected a list of at most %d quotas", list->path, FAKE_MAX_QUOTAS);
    for (size_t i = 0; i < list->n; i++) {
        const struct conf_node *m = list->items[i], *offers;
        const char *name = NULL, *names[FAKE_MAX_OFFERS];
        double limit = -1, used = 0, units[FAKE_MAX_OFFERS];
        int rc;

        if ((rc = conf_check_keys(m, keys, e)) < 0 ||
            (rc = conf_get_string(m, "name", &name, e)) < 0 ||
            (rc = conf_get_double(m, "limit", 0, 1e9, &limit, e)) < 0 ||
            (rc = conf_get_double(m, "used", 0, 1e9, &used, e)) < 0)
            return rc;
        offers = conf_find(m, "offers");
        if (!name || limit < 0 || !offers || offers->kind != CONF_MAPPING || offers->n == 0 ||
            offers->n > FAKE_MAX_OFFERS)
            return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                           "%s: a quota needs a name, a limit and offers (offer: units a node "
                           "takes)",
                           m->path);
        for (size_t k = 0; k < offers->n; k++) {
            names[k] = offers->entries[k].key;
            if ((rc = conf_get_double(offers, names[k], 1e-9, 1e9, &units[k], e)) < 0)
                return rc;
        }
        rc = cloud_fake_set_quota(c, name, limit, used, names, units, offers->n);
        if (rc < 0)
            return err_set(e, rc, offers->file, offers->line, offers->column, "%s: %s",
                           offers->path,
                           rc == ERR_UNKNOWN ? "names an offer not listed" : err_str(rc));
    }
    return 0;
}

int cloud_fake_new(const struct conf_node *section, const char *base_dir,
                   const struct cloud_host *host, struct cloud *out, struct error *e)
{
    static const char *const keys[] = {"path", "offers", "quotas", NULL};
    static const char *const offer_keys[] = {"name",     "gpus",      "market",         "price",
                                             "capacity", "max_price", "reclaim_free_s", NULL};
    static const char *const markets[] = {"on-demand", "spot", NULL};
    struct cloud_offer offers[FAKE_MAX_OFFERS];
    struct cloud made;
    int capacity[FAKE_MAX_OFFERS] = {0};
    const struct conf_node *list = NULL;
    const char *path = NULL;
    char full[4096];
    size_t n = 0;
    int rc;

    (void)host; /* the fake's instances never talk back */
    if (section && (rc = conf_check_keys(section, keys, e)) < 0)
        return rc;
    if (section && (rc = conf_get_string(section, "path", &path, e)) < 0)
        return rc;
    list = section ? conf_find(section, "offers") : NULL;
    if (list && list->kind != CONF_SEQUENCE)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "%s: expected a list of offers", list->path);
    if (list && (list->n == 0 || list->n > FAKE_MAX_OFFERS))
        return err_set(e, ERR_RANGE, list->file, list->line, list->column,
                       "%s: from 1 to %d offers", list->path, FAKE_MAX_OFFERS);
    for (size_t i = 0; list && i < list->n; i++) {
        const struct conf_node *m = list->items[i];
        const char *name = NULL;
        long gpus = 1, cap = 0;
        int market = 0;

        offers[i] = (struct cloud_offer){.price = 1.0};
        if ((rc = conf_check_keys(m, offer_keys, e)) < 0 ||
            (rc = conf_get_string(m, "name", &name, e)) < 0 ||
            (rc = conf_get_long(m, "gpus", 1, 1024, &gpus, e)) < 0 ||
            (rc = conf_get_choice(m, "market", markets, &market, e)) < 0 ||
            (rc = conf_get_double(m, "price", 0, 1e6, &offers[i].price, e)) < 0 ||
            (rc = conf_get_long(m, "capacity", 0, 1000000, &cap, e)) < 0 ||
            (rc = conf_get_double(m, "max_price", 0, 1e6, &offers[i].max_price, e)) < 0 ||
            (rc = conf_get_double(m, "reclaim_free_s", 0, 86400, &offers[i].reclaim_free_s, e)) < 0)
            return rc;
        if (!name || strlen(name) >= CLOUD_NAME_MAX)
            return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                           "%s.name: required, at most %d bytes", m->path, CLOUD_NAME_MAX - 1);
        for (size_t k = 0; k < i; k++)
            if (strcmp(offers[k].name, name) == 0)
                return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                               "%s.name: the offer %s is listed twice", m->path, name);
        fake_copy(offers[i].name, sizeof(offers[i].name), name);
        offers[i].gpus = (int)gpus;
        offers[i].spot = market == 1;
        if (offers[i].reclaim_free_s > 0 && !offers[i].spot)
            return err_set(e, ERR_PARSE, m->file, m->line, m->column,
                           "%s.reclaim_free_s: only a spot offer is reclaimed", m->path);
        capacity[i] = (int)cap;
        n++;
    }
    if (n == 0) {
        offers[0] = (struct cloud_offer){.name = "fake.4gpu/on-demand", .gpus = 4, .price = 1.0};
        n = 1;
    }
    if (path && path[0] != '/' && base_dir) {
        snprintf(full, sizeof(full), "%s/%s", base_dir, path);
        path = full;
    }
    rc = cloud_fake_create(offers, capacity, n, path, &made);
    if (rc < 0)
        return err_set(e, rc, path ? path : "", 0, 0, "the fake cloud: %s", err_str(rc));
    list = section ? conf_find(section, "quotas") : NULL;
    if (list && (rc = fake_quotas_conf(list, &made, e)) < 0) {
        cloud_free(&made);
        return rc;
    }
    *out = made;
    return 0;
}

/* The fake behind c, or NULL when c is another cloud. */
static struct fake_cloud *fake_of(struct cloud *c)
{
    return c && c->ops == &cloud_fake_ops ? c->ctx : NULL;
}

int cloud_fake_counts(struct cloud *c, struct cloud_fake_counts *out)
{
    struct fake_cloud *f = fake_of(c);
    struct cloud_fake_counts got;
    int loaded, rc;

    if (!f || !out)
        return ERR_INVAL;
    rc = fake_enter(f, NULL, NULL, &loaded);
    got = f->counts;
    if ((rc = fake_leave(f, rc, 0)) == 0) /* nothing to write back */
        *out = got;
    return rc;
}

int cloud_fake_fail(struct cloud *c, const char *op, int code, int times)
{
    static const char *const ops[] = {"offers",    "list",   "launch", "launch-lost",
                                      "terminate", "quotas", NULL};
    struct fake_cloud *f = fake_of(c);
    int known = 0;

    for (int i = 0; op && ops[i]; i++)
        known |= strcmp(op, ops[i]) == 0;
    if (!f || !known || code >= 0 || times < 0)
        return ERR_INVAL;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < FAKE_MAX_FAULTS; i++)
        if (f->faults[i].times == 0 || strcmp(f->faults[i].op, op) == 0) {
            fake_copy(f->faults[i].op, sizeof(f->faults[i].op), op);
            f->faults[i].code = code;
            f->faults[i].times = times;
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return 0;
}

int cloud_fake_set_capacity(struct cloud *c, const char *offer, int capacity)
{
    struct fake_cloud *f = fake_of(c);
    int o;

    if (!f || !offer)
        return ERR_INVAL;
    pthread_mutex_lock(&f->mu);
    o = fake_offer_index(f, offer);
    if (o >= 0)
        f->capacity[o] = capacity > 0 ? capacity : 0;
    pthread_mutex_unlock(&f->mu);
    return o >= 0 ? 0 : ERR_UNKNOWN;
}

int cloud_fake_set_price(struct cloud *c, const char *offer, double price)
{
    struct fake_cloud *f = fake_of(c);
    int o;

    if (!f || !offer || !(price >= 0))
        return ERR_INVAL;
    pthread_mutex_lock(&f->mu);
    o = fake_offer_index(f, offer);
    if (o >= 0)
        f->offers[o].price = price;
    pthread_mutex_unlock(&f->mu);
    return o >= 0 ? 0 : ERR_UNKNOWN;
}

int cloud_fake_inject(struct cloud *c, const char *cluster, const char *offer, const char *token,
                      char *id)
{
    struct fake_cloud *f = fake_of(c);
    int loaded, rc, o;

    if (!f || !cluster || !offer || !token || !id)
        return ERR_INVAL;
    rc = fake_enter(f, NULL, NULL, &loaded);
    if (rc == 0) {
        o = fake_offer_index(f, offer);
        rc = o < 0 ? ERR_UNKNOWN : fake_make(f, o, cluster, token, CLOUD_RUNNING, id);
        if (rc == 0)
            f->counts.launched--; /* not a launch anyone asked of this cloud */
    }
    return fake_leave(f, rc, loaded);
}

int cloud_fake_set_state(struct cloud *c, const char *id, enum cloud_state state, double ends)
{
    struct fake_cloud *f = fake_of(c);
    int loaded, rc;

    if (!f || !id || state < CLOUD_PENDING || state > CLOUD_GONE)
        return ERR_INVAL;
    rc = fake_enter(f, NULL, NULL, &loaded);
    if (rc == 0)
        rc = ERR_UNKNOWN;
    for (size_t i = 0; rc == ERR_UNKNOWN && i < f->n; i++)
        if (strcmp(f->inst[i].id, id) == 0) {
            f->inst[i].state = state;
            f->inst[i].ends = state == CLOUD_NOTICED ? ends : 0;
            rc = 0;
        }
    return fake_leave(f, rc, loaded);
}

void cloud_fake_set_clock(struct cloud *c, double (*fn)(void *ctx), void *ctx)
{
    struct fake_cloud *f = fake_of(c);

    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->clock = fn;
    f->clock_ctx = ctx;
    pthread_mutex_unlock(&f->mu);
}

int cloud_fake_set_quota(struct cloud *c, const char *name, double limit, double others,
                         const char *const *offers, const double *units, size_t n)
{
    struct fake_cloud *f;
    struct fake_quota q = {0};
    size_t k;

    if (!(f = fake_of(c)) || !name || !name[0] || strlen(name) >= CLOUD_NAME_MAX || !(limit >= 0) ||
        !(others >= 0) || (n && (!offers || !units)))
        return ERR_INVAL;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < n; i++) {
        int o = fake_offer_index(f, offers[i]);

        if (o < 0 || !(units[i] > 0)) {
            pthread_mutex_unlock(&f->mu);
            return o < 0 ? ERR_UNKNOWN : ERR_INVAL;
        }
        q.units[o] = units[i];
    }
    fake_copy(q.q.name, sizeof(q.q.name), name);
    snprintf(q.q.title, sizeof(q.q.title), "%s (fake)", name);
    fake_copy(q.q.unit, sizeof(q.q.unit), "vCPUs");
    q.q.limit = limit;
    q.q.used = others;
    for (k = 0; k < f->nquotas && strcmp(f->quotas[k].q.name, name) != 0; k++)
        ;
    if (k == FAKE_MAX_QUOTAS) {
        pthread_mutex_unlock(&f->mu);
        return ERR_RANGE;
    }
    f->quotas[k] = q;
    if (k == f->nquotas)
        f->nquotas++;
    pthread_mutex_unlock(&f->mu);
    return 0;
}
