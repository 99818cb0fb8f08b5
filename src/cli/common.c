/* common.c: what the castor subcommands share: finding workload files, wall time, numbers, the
 * configuration's cloud. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "control/config.h"
#include "providers/cloud.h"
#include "util/file.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_list_workloads(const char *path, char ***out, int *n, FILE *err)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    char **v = NULL;
    int k = 0, cap = 0;

    if (stat(path, &st) < 0) {
        fprintf(err, "castor simulate: %s: no such file or folder\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        v = malloc(sizeof(char *));
        if (!v || !(v[0] = strdup(path)))
            return -1;
        *out = v;
        *n = 1;
        return 0;
    }
    if (!(d = opendir(path)))
        return -1;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);

        if (len < 5 || strcmp(de->d_name + len - 4, ".csv") != 0)
            continue;
        if (k == cap) {
            char **g = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(char *));

            if (!g)
                break;
            v = g;
        }
        v[k] = malloc(strlen(path) + len + 2);
        if (!v[k])
            break;
        sprintf(v[k++], "%s/%s", path, de->d_name);
    }
    closedir(d);
    if (k == 0) {
        fprintf(err, "castor simulate: %s: no workload (*.csv) in this folder\n", path);
        free(v);
        return -1;
    }
    qsort(v, (size_t)k, sizeof(char *), cmp_str);
    *out = v;
    *n = k;
    return 0;
}

double cli_wall_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int cli_config_cloud(const struct config *c, struct cloud *out, struct error *e)
{
    struct cloud_host host = {0};
    char url[600], bin_dir[4096];

    config_api_url(c, c->api.port > 0 ? c->api.port : 1, url, sizeof(url));
    host.api_url = url;
    host.node_token_file = c->token_files[API_ROLE_NODE];
    host.job_token_file = c->token_files[API_ROLE_JOB];
    if (file_exe_dir(bin_dir, sizeof(bin_dir)) == 0)
        host.bin_dir = bin_dir;
    return cloud_new(c->world, c->cloud, c->dir, &host, out, e);
}

int cli_config_args(int argc, char **argv, const char *flag, int *flag_set, void (*usage)(FILE *),
                    FILE *out, FILE *err, const char **path)
{
    const char *got = NULL;

    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            got = argv[++i];
        } else if (flag && strcmp(argv[i], flag) == 0) {
            *flag_set = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(out);
            return 0;
        } else {
            fprintf(err, "castor %s: unexpected argument \"%s\"\n", argv[0], argv[i]);
            usage(err);
            return 2;
        }
    }
    if (!got) {
        fprintf(err, "castor %s: a configuration is required (-c FILE)\n", argv[0]);
        usage(err);
        return 2;
    }
    *path = got;
    return -1;
}
