/* scenario.c: reading market scenarios (YAML), their availability traces and price series. */
#include "sim/scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/conf.h"
#include "util/csv.h"
#include "util/file.h"

/* What a scenario owns besides itself. */
struct scenario_mem {
    struct conf *doc;
    char *path;
    char *workload;
    struct mkt_trace_event *traces[SCENARIO_MAX_OFFERS];
    struct mkt_price_point *series[SCENARIO_MAX_OFFERS];
};

static void scenario_mem_free(struct scenario_mem *m)
{
    if (!m)
        return;
    conf_free(m->doc);
    free(m->path);
    free(m->workload);
    for (int i = 0; i < SCENARIO_MAX_OFFERS; i++) {
        free(m->traces[i]);
        free(m->series[i]);
    }
    free(m);
}

void scenario_free(struct scenario *s)
{
    if (!s)
        return;
    scenario_mem_free(s->mem);
    free(s);
}

/* A path written in the file at base: kept when absolute, else taken from base's folder. */
static char *scenario_path(const char *base, const char *path)
{
    const char *slash = strrchr(base, '/');
    size_t dl = slash ? (size_t)(slash - base) + 1 : 0;
    char *p;

    if (path[0] == '/')
        dl = 0;
    if (!(p = malloc(dl + strlen(path) + 1)))
        return NULL;
    memcpy(p, base, dl);
    strcpy(p + dl, path);
    return p;
}

/* The node number of name in names (added when new); -1 when full. */
static int trace_node(char names[][32], int *nnames, int max, const char *name, size_t len)
{
    for (int i = 0; i < *nnames; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return i;
    if (*nnames == max || len >= 32)
        return -1;
    memcpy(names[*nnames], name, len);
    names[*nnames][len] = '\0';
    return (*nnames)++;
}

int scenario_parse_trace(const char *name, const char *data, size_t len,
                         struct mkt_trace_event **out, int *n, struct error *e)
{
    enum { MAXN = 4096 };
    char(*names)[32] = calloc(MAXN, 32);
    unsigned char *alive = calloc(MAXN, 1);
    struct mkt_trace_event *ev = NULL;
    size_t pos = 0, cap = 0;
    int nev = 0, nnames = 0, line = 0, rc = 0;
    double last = -INFINITY;

    if (!names || !alive) {
        rc = err_set(e, ERR_NOMEM, name, 0, 0, NULL);
        goto out;
    }
    while (pos < len) {
        const char *l = data + pos, *nl = memchr(l, '\n', len - pos), *c1, *c2, *c3;
        size_t ll = nl ? (size_t)(nl - l) : len - pos;
        char num[32], *end;
        double t;
        int add, node;

        pos += ll + 1;
        line++;
        if (ll > 0 && l[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            continue;
        c1 = memchr(l, ',', ll);
        c2 = c1 ? memchr(c1 + 1, ',', ll - (size_t)(c1 + 1 - l)) : NULL;
        if (!c2) {
            rc = err_set(e, ERR_PARSE, name, line, 1, "expected time_ms,add|remove,node");
            goto out;
        }
        if ((c3 = memchr(c2 + 1, ',', (size_t)(l + ll - c2 - 1)))) {
            rc = err_set(e, ERR_PARSE, name, line, (int)(c3 + 1 - l),
                         "expected time_ms,add|remove,node: a fourth field");
            goto out;
        }
        if ((size_t)(c1 - l) >= sizeof(num) || c1 == l) {
            rc = err_set(e, ERR_PARSE, name, line, 1, "bad time");
            goto out;
        }
        memcpy(num, l, (size_t)(c1 - l));
        num[c1 - l] = '\0';
        t = strtod(num, &end);
        if (*end != '\0' || !isfinite(t) || t < 0) {
            rc = err_set(e, ERR_PARSE, name, line, 1, "time '%s' is not a number of ms >= 0", num);
            goto out;
        }
        t /= 1000.0;
        if (t < last) {
            rc = err_set(e, ERR_PARSE, name, line, 1, "time goes back (the trace must be sorted)");
            goto out;
        }
        last = t;
        if (c2 - c1 - 1 == 3 && memcmp(c1 + 1, "add", 3) == 0)
            add = 1;
        else if (c2 - c1 - 1 == 6 && memcmp(c1 + 1, "remove", 6) == 0)
            add = 0;
        else {
            rc = err_set(e, ERR_PARSE, name, line, (int)(c1 + 2 - l), "expected add or remove");
            goto out;
        }
        if ((size_t)(l + ll - c2 - 1) == 0 ||
            (node = trace_node(names, &nnames, MAXN, c2 + 1, (size_t)(l + ll - c2 - 1))) < 0) {
            rc = err_set(e, ERR_PARSE, name, line, (int)(c2 + 2 - l), "bad or too many node names");
            goto out;
        }
        if (alive[node] == add) {
            rc = err_set(e, ERR_INVAL, name, line, (int)(c2 + 2 - l),
                         add ? "adds node %s, which is already there"
                             : "removes node %s, which is not there",
                         names[node]);
            goto out;
        }
        alive[node] = (unsigned char)add;
        if ((size_t)nev == cap) {
            struct mkt_trace_event *g;

            cap = cap ? 2 * cap : 256;
            if (!(g = realloc(ev, cap * sizeof(*ev)))) {
                rc = err_set(e, ERR_NOMEM, name, 0, 0, NULL);
                goto out;
            }
            ev = g;
        }
        ev[nev++] = (struct mkt_trace_event){.t = t, .add = add, .node = node};
    }
    if (nev == 0) {
        rc = err_set(e, ERR_EMPTY, name, 0, 0, "the trace has no events");
        goto out;
    }
    *out = ev;
    *n = nev;
    ev = NULL;
out:
    free(ev);
    free(names);
    free(alive);
    return rc;
}

/* A price series file: header time_s,price; sorted, the first at time 0 or before; prices >= 0. */
static int scenario_load_prices(const char *path, struct mkt_price_point **out, int *n,
                                struct error *e)
{
    struct csv_table *t = NULL;
    struct mkt_price_point *p = NULL;
    size_t ct, cp;
    int rc;

    if ((rc = csv_load(path, &t, e)) < 0 || (rc = csv_column(t, "time_s", &ct, e)) < 0 ||
        (rc = csv_column(t, "price", &cp, e)) < 0)
        goto out;
    if (!(p = calloc(t->nrows, sizeof(*p)))) {
        rc = err_set(e, ERR_NOMEM, path, 0, 0, NULL);
        goto out;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        const struct csv_cell *c = csv_cell_at(t, r, cp);

        if ((rc = csv_get_double(t, r, ct, &p[r].t, e)) < 0 ||
            (rc = csv_get_double(t, r, cp, &p[r].price, e)) < 0)
            goto out;
        if (p[r].price < 0) {
            rc =
                err_set(e, ERR_RANGE, path, c->line, c->column, "price %g is negative", p[r].price);
            goto out;
        }
        if (r > 0 && p[r].t < p[r - 1].t) {
            c = csv_cell_at(t, r, ct);
            rc = err_set(e, ERR_PARSE, path, c->line, c->column, "time goes back");
            goto out;
        }
        if (r == 0 && p[r].t > 0) {
            c = csv_cell_at(t, r, ct);
            rc = err_set(e, ERR_RANGE, path, c->line, c->column,
                         "the series starts at %g s: its first price must be at time 0 or before "
                         "(the price from the start)",
                         p[r].t);
            goto out;
        }
    }
    *out = p;
    *n = (int)t->nrows;
    p = NULL;
out:
    free(p);
    csv_free(t);
    return rc;
}

/* The offer called name (at node n for errors), or an error. */
static int scenario_offer_index(const struct scenario *s, const struct conf_node *n,
                                const char *name, int *out, struct error *e)
{
    for (int o = 0; o < s->noffers; o++)
        if (strcmp(s->offers[o].name, name) == 0) {
            *out = o;
            return 0;
        }
    return err_set(e, ERR_UNKNOWN, n->file, n->line, n->column, "%s: no offer is called '%s'",
                   n->path, name);
}

/* The offer n's price bounds as the market takes them (price_min 0: half the price, price_max 0:
 * twice it) must not cross: ERR_RANGE at the bound given (price_min when both are). */
static int scenario_price_band(const struct conf_node *n, const struct mkt_offer_spec *sp,
                               struct error *e)
{
    double lo = sp->price_min > 0 ? sp->price_min : sp->price / 2;
    double hi = sp->price_max > 0 ? sp->price_max : sp->price * 2;
    const struct conf_node *at = conf_find(n, sp->price_min > 0 ? "price_min" : "price_max");

    if (lo <= hi || !at)
        return 0;
    if (sp->price_min > 0)
        return err_set(e, ERR_RANGE, at->file, at->line, at->column,
                       "%s: %g is above the highest price (%g%s)", at->path, lo, hi,
                       sp->price_max > 0 ? ", price_max" : ": twice the price");
    return err_set(e, ERR_RANGE, at->file, at->line, at->column,
                   "%s: %g is below the lowest price (%g: half the price)", at->path, hi, lo);
}

static int scenario_offer(struct scenario *s, struct scenario_mem *m, const struct conf_node *n,
                          struct error *e)
{
    static const char *const keys[] = {"name",
                                       "type",
                                       "zone",
                                       "gpu",
                                       "market",
                                       "gpus",
                                       "price",
                                       "volatility",
                                       "price_min",
                                       "price_max",
                                       "capacity",
                                       "boot",
                                       "notice",
                                       "preemption_rate",
                                       "expected_rate",
                                       "trace",
                                       "prices",
                                       "reclaim_free_s",
                                       NULL};
    static const char *const markets[] = {"on-demand", "spot", NULL};
    int o = s->noffers, rc, market = 0;
    struct mkt_offer_spec *sp = &s->offers[o];
    const char *trace = NULL, *prices = NULL;
    long v;

    if (o == SCENARIO_MAX_OFFERS)
        return err_set(e, ERR_RANGE, n->file, n->line, n->column, "more than %d offers",
                       SCENARIO_MAX_OFFERS);
    memset(sp, 0, sizeof(*sp));
    sp->type = sp->zone = sp->gpu = "";
    if ((rc = conf_check_keys(n, keys, e)) < 0)
        return rc;
    if (!conf_find(n, "name") || !conf_find(n, "gpus") || !conf_find(n, "price"))
        return err_set(e, ERR_PARSE, n->file, n->line, n->column,
                       "%s: an offer needs name, gpus and price", n->path);
    if ((rc = conf_get_string(n, "name", &sp->name, e)) < 0 ||
        (rc = conf_get_string(n, "type", &sp->type, e)) < 0 ||
        (rc = conf_get_string(n, "zone", &sp->zone, e)) < 0 ||
        (rc = conf_get_string(n, "gpu", &sp->gpu, e)) < 0 ||
        (rc = conf_get_choice(n, "market", markets, &market, e)) < 0 ||
        (rc = conf_get_long(n, "gpus", 1, 64, &v, e)) < 0)
        return rc;
    sp->gpus = (int)v;
    sp->spot = market == 1;
    v = 0;
    if ((rc = conf_get_double(n, "price", 0, 1e6, &sp->price, e)) < 0 ||
        (rc = conf_get_double(n, "volatility", 0, 10, &sp->volatility, e)) < 0 ||
        (rc = conf_get_double(n, "price_min", 0, 1e6, &sp->price_min, e)) < 0 ||
        (rc = conf_get_double(n, "price_max", 0, 1e6, &sp->price_max, e)) < 0 ||
        (rc = conf_get_long(n, "capacity", 0, 100000, &v, e)) < 0 ||
        (rc = conf_get_double(n, "boot", 0, 86400, &sp->boot_s, e)) < 0 ||
        (rc = conf_get_double(n, "notice", -1, 3600, &sp->notice_s, e)) < 0 ||
        (rc = conf_get_double(n, "reclaim_free_s", 0, 86400, &sp->reclaim_free_s, e)) < 0 ||
        (rc = conf_get_double(n, "preemption_rate", 0, 1000, &sp->rate, e)) < 0 ||
        (rc = conf_get_double(n, "expected_rate", 0, 1000, &s->rate_prior[o], e)) < 0 ||
        (rc = conf_get_string(n, "trace", &trace, e)) < 0 ||
        (rc = conf_get_string(n, "prices", &prices, e)) < 0)
        return rc;
    sp->capacity = (int)v;
    /* an explicit 0 means none (the market's 0 is its default): no boot delay; no notice, so a
     * preemption loses the work since the last checkpoint */
    if (conf_find(n, "boot") && sp->boot_s == 0)
        sp->boot_s = -1;
    if (sp->notice_s < 0 && sp->notice_s != -1) {
        const struct conf_node *at = conf_find(n, "notice");

        return err_set(e, ERR_RANGE, at->file, at->line, at->column,
                       "%s: a notice is 0 or -1 (none) or a number of seconds above 0", at->path);
    }
    if (conf_find(n, "notice") && sp->notice_s == 0)
        sp->notice_s = -1;
    if (!conf_find(n, "expected_rate"))
        s->rate_prior[o] = sp->spot ? (sp->rate > 0 ? sp->rate : 0.05) : 0.0;
    for (int k = 0; k < o; k++)
        if (strcmp(s->offers[k].name, sp->name) == 0) {
            const struct conf_node *nn = conf_find(n, "name");

            return err_set(e, ERR_INVAL, nn->file, nn->line, nn->column,
                           "%s: offer '%s' is named twice", nn->path, sp->name);
        }
    if ((rc = scenario_price_band(n, sp, e)) < 0)
        return rc;
    if ((trace || prices || sp->rate > 0 || sp->volatility > 0 || sp->reclaim_free_s > 0 ||
         sp->price_min > 0 || sp->price_max > 0 || conf_find(n, "expected_rate")) &&
        !sp->spot) {
        return err_set(e, ERR_INVAL, n->file, n->line, n->column,
                       "%s: only a spot offer has a trace, a price series, a volatility, price "
                       "bounds, a preemption rate, an expected rate or an unbilled window",
                       n->path);
    }
    if (trace && sp->rate > 0) {
        const struct conf_node *at = conf_find(n, "preemption_rate");

        return err_set(e, ERR_INVAL, at->file, at->line, at->column,
                       "%s: an offer's preemptions come from its trace or from a rate, not both",
                       at->path);
    }
    if (trace) {
        char *p = scenario_path(s->path, trace), *data = NULL;
        size_t len;

        if (!p)
            return err_set(e, ERR_NOMEM, "", 0, 0, NULL);
        rc = file_read_all(p, &data, &len, e);
        if (rc == 0)
            rc = scenario_parse_trace(p, data, len, &m->traces[o], &sp->ntrace, e);
        free(data);
        free(p);
        if (rc < 0)
            return rc;
        sp->trace = m->traces[o];
    }
    if (prices) {
        char *p = scenario_path(s->path, prices);

        if (!p)
            return err_set(e, ERR_NOMEM, "", 0, 0, NULL);
        rc = scenario_load_prices(p, &m->series[o], &sp->nseries, e);
        free(p);
        if (rc < 0)
            return rc;
        sp->series = m->series[o];
    }
    s->noffers++;
    return 0;
}

/*
 * The `quotas:` list (NULL: none): each {name, limit, offers: {offer: units a node takes}}, as an
 * account's quotas (AWS's vCPU quotas over instance families, Compute Engine's GPU quotas).
 * Errors at file:line:column: not a list, more than SCENARIO_MAX_QUOTAS, a key not known, a
 * name missing or given twice, a limit out of [0, 1e9], no offers, an offer not in the
 * scenario, units out of (0, 1e6].
 */
static int scenario_quotas(struct scenario *s, const struct conf_node *list, struct error *e)
{
    static const char *const keys[] = {"name", "limit", "offers", NULL};

    if (!list)
        return 0;
    if (list->kind != CONF_SEQUENCE || list->n > SCENARIO_MAX_QUOTAS)
        return err_set(e, ERR_PARSE, list->file, list->line, list->column,
                       "quotas: a list of at most %d quotas (- name: ..., limit: ..., offers: "
                       "{offer: units})",
                       SCENARIO_MAX_QUOTAS);
    for (size_t i = 0; i < list->n; i++) {
        const struct conf_node *q = list->items[i], *offers;
        struct mkt_quota_spec *sp = &s->quotas[i];
        int rc;

        sp->limit = -1;
        if ((rc = conf_check_keys(q, keys, e)) < 0 ||
            (rc = conf_get_string(q, "name", &sp->name, e)) < 0 ||
            (rc = conf_get_double(q, "limit", 0, 1e9, &sp->limit, e)) < 0)
            return rc;
        offers = conf_find(q, "offers");
        if (!sp->name || sp->limit < 0 || !offers || offers->kind != CONF_MAPPING || offers->n == 0)
            return err_set(e, ERR_PARSE, q->file, q->line, q->column,
                           "%s: a quota needs a name, a limit and offers (offer: units a node "
                           "takes)",
                           q->path);
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->quotas[k].name, sp->name) == 0)
                return err_set(e, ERR_PARSE, q->file, q->line, q->column,
                               "%s.name: the quota %s is listed twice", q->path, sp->name);
        for (size_t k = 0; k < offers->n; k++) {
            const struct conf_entry *en = &offers->entries[k];
            int o = 0;

            while (o < s->noffers && strcmp(s->offers[o].name, en->key) != 0)
                o++;
            if (o == s->noffers)
                return err_set(e, ERR_UNKNOWN, offers->file, en->line, en->column,
                               "%s: %s is not an offer of the scenario", offers->path, en->key);
            if ((rc = conf_get_double(offers, en->key, 1e-9, 1e6, &s->quota_units[i][o], e)) < 0)
                return rc;
        }
        sp->units = s->quota_units[i];
        s->nquotas++;
    }
    return 0;
}

/* The offer of market spot (1 spot, 0 on-demand) that key of section sec names (ERR_UNKNOWN for no
 * such offer, ERR_INVAL for one of the other market, at the value), else the first of that market
 * (-1: none). */
static int scenario_offer_by_key(const struct scenario *s, const struct conf_node *sec,
                                 const char *key, int spot, int *out, struct error *e)
{
    const char *name;
    int rc = sec ? conf_get_string(sec, key, &name, e) : 0;

    if (rc < 0)
        return rc;
    if (rc == 1) {
        const struct conf_node *at = conf_find(sec, key);

        if ((rc = scenario_offer_index(s, at, name, out, e)) < 0)
            return rc;
        /* the systems named for a market run on it: fixed-spot's nodes must be spot ones */
        if (s->offers[*out].spot != spot)
            return err_set(e, ERR_INVAL, at->file, at->line, at->column,
                           "%s: offer '%s' is %s, not %s", at->path, name,
                           spot ? "on-demand" : "spot", spot ? "spot" : "on-demand");
        return 0;
    }
    /* the first offer of that market, or none (-1: only --compare needs it) */
    *out = -1;
    for (int o = 0; o < s->noffers; o++)
        if (s->offers[o].spot == spot) {
            *out = o;
            break;
        }
    return 0;
}

int scenario_load(const char *path, struct scenario **out, struct error *e)
{
    static const char *const keys[] = {"workload",  "interval",    "seed",    "checkpoint",
                                       "max_nodes", "offers",      "compare", "castor",
                                       "quotas",    "reconfigure", NULL};
    static const char *const reconfigures[] = {"in_flight", "restart", NULL};
    static const char *const compare_keys[] = {"on_demand", "spot", "nodes",  "policy",
                                               "high",      "low",  "window", NULL};
    static const char *const castor_keys[] = {"mode",   "value",    "budget", "patience",
                                              "policy", "families", "p_mean", NULL};
    static const char *const modes[] = {"efficiency", "budget", "deadline", NULL};
    const char *policies[16] = {NULL};
    struct scenario *s = calloc(1, sizeof(*s));
    struct scenario_mem *m = calloc(1, sizeof(*m));
    const struct conf_node *root, *offers, *cmp = NULL, *cas = NULL;
    const char *wl = NULL;
    int rc, od = 0, sp = 0, k, mode = 0, families = 1;
    long v;
    struct fleet_config base = {0}, cast = {0};
    struct policy_config cast_pcfg = {0};

    if (!s || !m || !(m->path = strdup(path))) {
        rc = err_set(e, ERR_NOMEM, path, 0, 0, NULL);
        goto out;
    }
    for (size_t i = 0; policy_registry[i] && i < 15; i++)
        policies[i] = policy_registry[i]->name;
    s->path = m->path;
    s->interval = 60;
    s->seed = 1;
    s->checkpoint_s = 600;
    s->max_nodes = 512;
    if ((rc = conf_load(path, &m->doc, e)) < 0)
        goto out;
    root = m->doc->root;
    if ((rc = conf_check_keys(root, keys, e)) < 0 ||
        (rc = conf_get_section(root, "compare", compare_keys, &cmp, e)) < 0 ||
        (rc = conf_get_section(root, "castor", castor_keys, &cas, e)) < 0 ||
        (rc = conf_get_string(root, "workload", &wl, e)) < 0)
        goto out;
    if (wl && !(m->workload = scenario_path(path, wl))) {
        rc = err_set(e, ERR_NOMEM, path, 0, 0, NULL);
        goto out;
    }
    s->workload = m->workload;
    if ((rc = conf_get_long(root, "interval", 1, 86400, &v, e)) < 0)
        goto out;
    if (rc == 1)
        s->interval = (int)v;
    if ((rc = conf_get_long(root, "seed", 0, 2147483647, &v, e)) < 0)
        goto out;
    if (rc == 1)
        s->seed = (uint64_t)v;
    if ((rc = conf_get_double(root, "checkpoint", 0, 86400, &s->checkpoint_s, e)) < 0 ||
        (rc = conf_get_choice(root, "reconfigure", reconfigures, &s->reconfigure_restart, e)) < 0)
        goto out;
    if ((rc = conf_get_long(root, "max_nodes", 1, 4096, &v, e)) < 0)
        goto out;
    if (rc == 1)
        s->max_nodes = (int)v;
    offers = conf_find(root, "offers");
    if (!offers || offers->kind != CONF_SEQUENCE || offers->n == 0) {
        const struct conf_node *at = offers ? offers : root;

        rc = err_set(e, ERR_EMPTY, at->file, at->line, at->column,
                     "the scenario needs a list of offers (offers: - name: ...)");
        goto out;
    }
    for (size_t i = 0; i < offers->n; i++)
        if ((rc = scenario_offer(s, m, offers->items[i], e)) < 0)
            goto out;
    if ((rc = scenario_quotas(s, conf_find(root, "quotas"), e)) < 0)
        goto out;
    /* the comparison */
    base.max_nodes = s->max_nodes;
    base.nodes = 16;
    if ((rc = scenario_offer_by_key(s, cmp, "on_demand", 0, &od, e)) < 0 ||
        (rc = scenario_offer_by_key(s, cmp, "spot", 1, &sp, e)) < 0)
        goto out;
    if (cmp && ((rc = conf_get_long(cmp, "nodes", 1, 4096, &v, e)) < 0 ||
                (rc == 1 && (base.nodes = (int)v, 0)) ||
                (rc = conf_get_double(cmp, "high", 0.01, 1, &base.util_high, e)) < 0 ||
                (rc = conf_get_double(cmp, "low", 0.01, 1, &base.util_low, e)) < 0 ||
                (rc = conf_get_long(cmp, "window", 1, 1000, &v, e)) < 0 ||
                (rc == 1 && (base.window = (int)v, 0))))
        goto out;
    if ((rc = conf_check_below(cmp, "low", base.util_low, FLEET_UTIL_LOW, "high", base.util_high,
                               FLEET_UTIL_HIGH, e)) < 0)
        goto out;
    if (base.nodes > s->max_nodes) {
        /* the fixed clusters hold compare.nodes nodes at once: within max_nodes, as every
         * system (at the place given: compare.nodes, else max_nodes below the default 16) */
        const struct conf_node *at =
            cmp && conf_find(cmp, "nodes") ? conf_find(cmp, "nodes") : conf_find(root, "max_nodes");

        rc = err_set(e, ERR_RANGE, at->file, at->line, at->column,
                     "%s: the fixed clusters' %d nodes (compare.nodes%s) are more than max_nodes "
                     "(%d) allows",
                     at->path, base.nodes, cmp && conf_find(cmp, "nodes") ? "" : ", the default",
                     s->max_nodes);
        goto out;
    }
    for (int i = 0; i < SCENARIO_SYSTEMS; i++)
        s->systems[i].policy = "pollux";
    if (cmp && (rc = conf_get_choice(cmp, "policy", policies, &k, e)) < 0)
        goto out;
    if (cmp && rc == 1)
        for (int i = 0; i < 3; i++)
            s->systems[i].policy = policies[k];
    cast = base;
    /* castor's system splits with pollux unless castor.policy says otherwise, as the controller
     * does under fleet.planner: castor (its policy's default; docs/fleet.md, step 6) */
    s->systems[3].policy = "pollux";
    if (cas && ((rc = conf_get_choice(cas, "mode", modes, &mode, e)) < 0 ||
                (rc = conf_get_double(cas, "value", 0.001, 1e6, &cast.value, e)) < 0 ||
                (rc = conf_get_long(cas, "patience", 1, 1000, &v, e)) < 0 ||
                (rc == 1 && (cast.patience = (int)v, 0)) ||
                (rc = conf_get_double(cas, "budget", 0.01, 1e7, &cast.budget, e)) < 0))
        goto out;
    cast.mode = (enum fleet_mode)mode;
    if (cast.mode == FLEET_BUDGET && !(cast.budget > 0)) {
        rc = err_set(e, ERR_INVAL, cas->file, cas->line, cas->column,
                     "castor: mode budget needs a budget ($/h)");
        goto out;
    }
    if (cas && (rc = conf_get_choice(cas, "policy", policies, &k, e)) < 0)
        goto out;
    if (cas && rc == 1)
        s->systems[3].policy = policies[k];
    if (cas && (rc = conf_get_bool(cas, "families", &families, e)) < 0)
        goto out;
    if (cas && (rc = conf_get_double(cas, "p_mean", -100, 100, &cast_pcfg.p_mean, e)) < 0)
        goto out;
    cast_pcfg.p_mean_set = cas && rc == 1;
    fleet_policy_defaults("castor", s->systems[3].policy, &cast_pcfg);
    s->systems[0] = (struct scenario_system){.name = "fixed-on-demand",
                                             .fleet = "fixed",
                                             .policy = s->systems[0].policy,
                                             .fcfg = base,
                                             .initial_offer = od,
                                             .initial_nodes = base.nodes};
    s->systems[0].fcfg.offer = od;
    s->systems[1] = (struct scenario_system){.name = "pollux-autoscale",
                                             .fleet = "pollux-autoscale",
                                             .policy = s->systems[1].policy,
                                             .fcfg = base,
                                             .initial_offer = od};
    s->systems[1].fcfg.offer = od;
    s->systems[2] = (struct scenario_system){.name = "fixed-spot",
                                             .fleet = "fixed",
                                             .policy = s->systems[2].policy,
                                             .fcfg = base,
                                             .initial_offer = sp,
                                             .initial_nodes = base.nodes};
    s->systems[2].fcfg.offer = sp;
    s->systems[3] = (struct scenario_system){.name = "castor",
                                             .fleet = "castor",
                                             .policy = s->systems[3].policy,
                                             .fcfg = cast,
                                             .initial_offer = sp >= 0 ? sp : 0,
                                             .families = families,
                                             .pcfg = cast_pcfg};
    rc = 0;
    s->mem = m;
    m = NULL;
    *out = s;
    s = NULL;
out:
    scenario_mem_free(m);
    free(s);
    return rc;
}
