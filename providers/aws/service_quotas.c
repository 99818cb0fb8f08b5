/* service_quotas.c: Service Quotas' GetServiceQuota, falling back to GetAWSDefaultServiceQuota
 * when the account has no applied value, over the JSON protocol of providers/aws/json_api.c;
 * errors mapped into castor's table (access denied is ERR_PERM, throttling retried). */
#include "providers/aws/service_quotas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/strbuf.h"

#define SQ_WHERE_GET "servicequotas GetServiceQuota"
#define SQ_WHERE_DEFAULT "servicequotas GetAWSDefaultServiceQuota"

struct sq_client {
    struct aws_json *json;
};

/* castor's codes for the error types of Service Quotas (its API's and AWS's common ones); 0:
 * retried (credentials refused as expired are asked again once by json_api.c, then ERR_PERM). */
static const struct aws_json_code sq_codes[] = {
    {"ThrottlingException", 0},
    {"TooManyRequestsException", 0},
    {"ServiceException", 0},
    {"InternalFailure", 0},
    {"ServiceUnavailable", 0},
    {"NoSuchResourceException", ERR_NOENT},
    {"AccessDeniedException", ERR_PERM},
    {"NotAuthorized", ERR_PERM},
    {"IllegalArgumentException", ERR_INVAL},
    {"ValidationException", ERR_INVAL},
    {"ValidationError", ERR_INVAL},
    {"InvalidParameterValue", ERR_INVAL},
    {"InvalidSignatureException", ERR_INVAL},
    {"IncompleteSignature", ERR_INVAL},
    {"MissingAuthenticationToken", ERR_INVAL},
};

static const struct aws_json_api sq_api = {"servicequotas", "servicequotas",
                                           "AWS_ENDPOINT_URL_SERVICE_QUOTAS", sq_codes,
                                           sizeof(sq_codes) / sizeof(sq_codes[0])};

int sq_client_new(const char *region, const struct aws_json_config *cfg, struct sq_client **out,
                  struct error *e)
{
    char endpoint[160];
    struct sq_client *c;
    int rc;

    if (!region || !*region || strlen(region) > 40 || !cfg || !out)
        return err_set(e, ERR_INVAL, "servicequotas", 0, 0,
                       "a region of at most 40 characters is needed");
    snprintf(endpoint, sizeof(endpoint), "https://servicequotas.%s.amazonaws.com", region);
    c = calloc(1, sizeof(*c));
    if (!c)
        return ERR_NOMEM;
    rc = aws_json_new(&sq_api, endpoint, region, cfg, &c->json, e);
    if (rc < 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void sq_client_free(struct sq_client *c)
{
    if (!c)
        return;
    aws_json_free(c->json);
    free(c);
}

const char *sq_client_endpoint(const struct sq_client *c)
{
    return aws_json_endpoint(c->json);
}

/* Copy the string member key of q into buf ("" when absent); 1 when it was there. */
static int sq_text(const struct jv *q, const char *key, char *buf, size_t size)
{
    const char *s = jv_string_value(jv_get(q, key));

    snprintf(buf, size, "%s", s ? s : "");
    strbuf_printable(buf);
    return s != NULL;
}

/* Read an answer {"Quota": {...}} into *out; ERR_PARSE naming what is wrong. */
static int sq_read(const struct jv *doc, const char *where, const char *service, const char *code,
                   const char *rid, struct sq_quota *out, struct error *e)
{
    const struct jv *q = jv_get(doc, "Quota");
    struct sq_quota r = {0};

    if (jv_type_of(q) != JV_OBJECT)
        return err_set(e, ERR_PARSE, where, 0, 0, "an answer without Quota (request id %s)", rid);
    if (jv_number_value(jv_get(q, "Value"), &r.value) < 0 || !isfinite(r.value) || r.value < 0)
        return err_set(e, ERR_PARSE, where, 0, 0,
                       "%.20s/%.40s: Quota.Value is not a number >= 0 (request id %s)", service,
                       code, rid);
    if (sq_text(q, "QuotaCode", r.quota_code, sizeof(r.quota_code)) &&
        strcmp(r.quota_code, code) != 0)
        return err_set(e, ERR_PARSE, where, 0, 0, "asked for %.40s, answered %.40s (request id %s)",
                       code, r.quota_code, rid);
    sq_text(q, "ServiceCode", r.service_code, sizeof(r.service_code));
    sq_text(q, "QuotaName", r.name, sizeof(r.name));
    sq_text(q, "Unit", r.unit, sizeof(r.unit));
    if (!r.service_code[0])
        snprintf(r.service_code, sizeof(r.service_code), "%s", service);
    if (!r.quota_code[0])
        snprintf(r.quota_code, sizeof(r.quota_code), "%s", code);
    *out = r;
    return 0;
}

int sq_get_quota(struct sq_client *c, const char *service_code, const char *quota_code,
                 struct sq_quota *out, struct error *e)
{
    struct sq_quota q = {0};
    struct error local = {0};
    struct jv *req = NULL, *doc = NULL;
    char *body = NULL, rid[160] = "(none)";
    const char *where = SQ_WHERE_GET;
    int rc;

    if (!c || !service_code || !*service_code || !quota_code || !*quota_code || !out ||
        strlen(service_code) >= sizeof(q.service_code) ||
        strlen(quota_code) >= sizeof(q.quota_code))
        return err_set(e, ERR_INVAL, SQ_WHERE_GET, 0, 0, "needs a service code and a quota code");
    if (!e) /* the log line still says what went wrong */
        e = &local;
    req = jv_object();
    if (!req || jv_set(req, "ServiceCode", jv_string(service_code)) < 0 ||
        jv_set(req, "QuotaCode", jv_string(quota_code)) < 0 || jv_dump(req, &body) < 0) {
        rc = err_set(e, ERR_NOMEM, where, 0, 0, "out of memory");
        goto out;
    }
    rc = aws_json_call(c->json, where, SQ_TARGET_GET, body, &doc, rid, sizeof(rid), e);
    if (rc == ERR_NOENT) { /* no applied value: AWS's default */
        where = SQ_WHERE_DEFAULT;
        rc = aws_json_call(c->json, where, SQ_TARGET_DEFAULT, body, &doc, rid, sizeof(rid), e);
    }
    if (rc == 0)
        rc = sq_read(doc, where, service_code, quota_code, rid, &q, e);
    if (rc == 0) {
        q.is_default = strcmp(where, SQ_WHERE_DEFAULT) == 0;
        *out = q;
    } else {
        aws_json_log(c->json, "%s failed: %s", where, e->msg);
    }
out:
    jv_free(doc);
    jv_free(req);
    free(body);
    return rc;
}
