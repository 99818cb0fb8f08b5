/* agent.c: the worker-side programs' environment (numbers, secrets) and controller requests. */
#include "agent/agent.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/crypto.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/log.h"

int agent_env_double(const char *name, double def, double lo, double hi, double *out,
                     struct error *e)
{
    const char *v = getenv(name);
    char *end = NULL;
    double x;

    if (!v || !v[0]) {
        *out = def;
        return 0;
    }
    errno = 0;
    x = strtod(v, &end);
    if (end == v || *end != '\0' || errno == ERANGE)
        return err_set(e, ERR_PARSE, name, 0, 0, "%s must be a number", name);
    if (!isfinite(x) || x < lo || x > hi)
        return err_set(e, ERR_RANGE, name, 0, 0, "%s must be from %g to %g", name, lo, hi);
    *out = x;
    return 0;
}

int agent_env_int(const char *name, int def, int lo, int hi, int *out, struct error *e)
{
    const char *v = getenv(name);
    char *end = NULL;
    long x;

    if (!v || !v[0]) {
        *out = def;
        return 0;
    }
    errno = 0;
    x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE)
        return err_set(e, ERR_PARSE, name, 0, 0, "%s must be a whole number", name);
    if (x < lo || x > hi)
        return err_set(e, ERR_RANGE, name, 0, 0, "%s must be from %d to %d", name, lo, hi);
    *out = (int)x;
    return 0;
}

int agent_env_log_level(const char *name, int def, int *out, struct error *e)
{
    const char *v = getenv(name);

    if (!v || !v[0]) {
        *out = def;
        return 0;
    }
    for (int l = LOG_DEBUG; l <= LOG_ERROR; l++) {
        if (strcmp(v, log_level_name((enum log_level)l)) == 0) {
            *out = l;
            return 0;
        }
    }
    return err_set(e, ERR_INVAL, name, 0, 0, "%s must be debug, info, warn or error", name);
}

int agent_env_secret(const char *name, const char *file_name, char **out, struct error *e)
{
    const char *v = getenv(name), *path = file_name ? getenv(file_name) : NULL;
    struct stat sb;
    char *text = NULL;
    size_t len = 0;
    int rc;

    if (v && v[0]) {
        if (!(text = strdup(v)))
            return err_set(e, ERR_NOMEM, name, 0, 0, "out of memory");
        *out = text;
        return 0;
    }
    if (!path || !path[0]) {
        *out = NULL;
        return 0;
    }
    if (stat(path, &sb) == 0 && (sb.st_mode & 077))
        return err_set(e, ERR_INVAL, path, 0, 0,
                       "a secret file must be readable by its owner only (chmod 600)");
    if ((rc = file_read_all(path, &text, &len, e)) < 0)
        return rc;
    if (len > 0 && text[len - 1] == '\n')
        text[--len] = '\0';
    if (len > 0 && text[len - 1] == '\r')
        text[--len] = '\0';
    if (len == 0 || strlen(text) != len) {
        crypto_wipe(text, len);
        free(text);
        return err_set(e, ERR_INVAL, path, 0, 0, "the file named by %s holds no secret (or a NUL)",
                       file_name);
    }
    *out = text;
    return 0;
}

void agent_secret_free(char *secret)
{
    if (!secret)
        return;
    crypto_wipe(secret, strlen(secret));
    free(secret);
}

int agent_call(struct http_client *http, const char *base, const char *token, const char *method,
               const char *path, const char *body, double timeout_s, const char *ca_file,
               struct http_client_response *resp, struct error *e)
{
    size_t alen = strlen(token) + 8, blen = strlen(base), ulen = blen + strlen(path) + 1;
    char *auth = malloc(alen), *url = malloc(ulen);
    struct http_client_header h[2] = {{"Authorization", auth},
                                      {"Content-Type", "application/json"}};
    struct http_client_request req = {.method = method, .url = url, .headers = h, .nheaders = 2};
    int rc;

    if (!auth || !url) {
        rc = err_set(e, ERR_NOMEM, NULL, 0, 0, "out of memory");
        goto out;
    }
    snprintf(auth, alen, "Bearer %s", token);
    if (blen > 0 && base[blen - 1] == '/') /* "http://c:1/" + "/v1/..." */
        blen--;
    snprintf(url, ulen, "%.*s%s", (int)blen, base, path);
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.timeout_ms = (long)(timeout_s * 1000);
    req.ca_file = ca_file;
    rc = http_client_do(http, &req, resp, e);
out:
    if (auth) {
        crypto_wipe(auth, alen);
        free(auth);
    }
    free(url);
    return rc;
}

int agent_route_address(const char *url, char *buf, size_t size)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *res = NULL;
    struct sockaddr_storage self;
    socklen_t len = sizeof(self);
    struct http_client_url u;
    char port[8], host[1025]; /* NI_MAXHOST */
    int fd, rc = ERR_IO;

    if (http_client_parse_url(url, &u) < 0)
        return ERR_INVAL;
    snprintf(port, sizeof(port), "%d", u.port ? u.port : strcmp(u.scheme, "https") ? 80 : 443);
    if (getaddrinfo(u.host, port, &hints, &res) != 0 || !res)
        return ERR_NOENT;
    fd = socket(res->ai_family, SOCK_DGRAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&self, &len) == 0 &&
        getnameinfo((struct sockaddr *)&self, len, host, sizeof(host), NULL, 0, NI_NUMERICHOST) ==
            0)
        rc = strlen(host) < size ? 0 : ERR_RANGE;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    if (rc == 0)
        memcpy(buf, host, strlen(host) + 1);
    return rc;
}
