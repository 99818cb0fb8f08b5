/* fuzz_conf.c: libFuzzer target for the YAML reader (src/util/conf.c) and the job specs a
 * configuration holds (config_job_spec in src/control/config.c): the document is parsed, every
 * scalar read through each getter, and the top mapping, its `jobs` items and its `templates`
 * items' `job` read as job specs. */
#include <stdlib.h>

#include "control/config.h"
#include "fuzz/fuzz_support.h"
#include "util/conf.h"

static const char *const fz_choices[] = {"spot", "on-demand", "pollux", NULL};

/* Every getter on every scalar under n, depth first. */
static void fz_walk(const struct conf_node *n)
{
    struct error e = {0};
    long l;
    double d;
    int b;
    const char *s;

    switch (n->kind) {
    case CONF_MAPPING:
        for (size_t i = 0; i < n->n; i++)
            fz_walk(n->entries[i].value);
        (void)conf_check_keys(n, fz_choices, &e);
        (void)conf_find(n, "name");
        break;
    case CONF_SEQUENCE:
        for (size_t i = 0; i < n->n; i++)
            fz_walk(n->items[i]);
        break;
    default:
        (void)conf_as_long(n, -1000000, 1000000, &l, &e);
        (void)conf_as_double(n, -1e300, 1e300, &d, &e);
        (void)conf_as_bool(n, &b, &e);
        (void)conf_as_string(n, &s, &e);
        (void)conf_as_choice(n, fz_choices, &b, &e);
    }
}

/* Read m as a job spec (in_template as given), dropping what it made. */
static void fz_spec(const struct conf_node *m, int in_template)
{
    struct error e = {0};
    char *json = NULL, *name = NULL;

    if (config_job_spec(m, in_template, &json, &name, &e) == 0) {
        free(json);
        free(name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct conf *c = NULL;
    struct error e = {0};
    const struct conf_node *jobs, *templates;

    if (conf_parse("fuzz.yaml", (const char *)data, size, &c, &e) < 0)
        return 0;
    fz_walk(c->root);
    fz_spec(c->root, 0);
    fz_spec(c->root, 1);
    jobs = conf_find(c->root, "jobs");
    for (size_t i = 0; jobs && jobs->kind == CONF_SEQUENCE && i < jobs->n; i++)
        fz_spec(jobs->items[i], 0);
    templates = conf_find(c->root, "templates");
    for (size_t i = 0; templates && templates->kind == CONF_SEQUENCE && i < templates->n; i++) {
        const struct conf_node *job = conf_find(templates->items[i], "job");

        if (job)
            fz_spec(job, 1);
    }
    conf_free(c);
    return 0;
}
