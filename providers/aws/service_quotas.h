/* service_quotas.h: the AWS Service Quotas client (the JSON 1.1 protocol, SigV4 for the service
 * "servicequotas"): one quota's applied value (GetServiceQuota), else AWS's default for it
 * (GetAWSDefaultServiceQuota) when the account has no applied value. */
#ifndef CASTOR_PROVIDERS_AWS_SERVICE_QUOTAS_H
#define CASTOR_PROVIDERS_AWS_SERVICE_QUOTAS_H

#include "providers/aws/json_api.h"
#include "util/error.h"

#define SQ_TARGET_GET "ServiceQuotasV20190624.GetServiceQuota"
#define SQ_TARGET_DEFAULT "ServiceQuotasV20190624.GetAWSDefaultServiceQuota"

struct sq_client; /* opaque; one thread at a time */

/* A quota as Service Quotas tells it. */
struct sq_quota {
    char service_code[64]; /* "ec2" */
    char quota_code[64];   /* "L-DB2E81BA" */
    char name[128];        /* QuotaName, "" when the answer has none */
    char unit[32];         /* Unit ("None" for EC2's vCPU quotas), "" when absent */
    double value;          /* the limit */
    int is_default;        /* 1: AWS's default (the account has no applied value) */
};

/* A new client for region in *out (sq_client_free). cfg as aws_json_config's, where the
 * endpoint defaults to AWS_ENDPOINT_URL_SERVICE_QUOTAS, else AWS_ENDPOINT_URL, else
 * https://servicequotas.<region>.amazonaws.com, and the signing region to region. Copies what
 * aws_json_new copies. ERR_INVAL (no region or credentials, a bad endpoint: e says which),
 * ERR_NOMEM; *out is then unchanged. */
int sq_client_new(const char *region, const struct aws_json_config *cfg, struct sq_client **out,
                  struct error *e);

void sq_client_free(struct sq_client *c);

/* The endpoint the client talks to. Borrowed. */
const char *sq_client_endpoint(const struct sq_client *c);

/*
 * The quota (service_code, quota_code) into *out: GetServiceQuota, and when it answers
 * NoSuchResourceException (no applied value), GetAWSDefaultServiceQuota with the same body.
 * Errors, with e->file "servicequotas GetServiceQuota" (or ...GetAWSDefaultServiceQuota) and
 * e->msg naming the error type, its message and the request id: ERR_NOENT (neither call knows
 * the quota), ERR_PERM (AccessDeniedException: not allowed to read it), ERR_AGAIN (throttled,
 * ThrottlingException or TooManyRequestsException, or 5xx on the last attempt), ERR_IO
 * (transport or timeout on the last attempt), ERR_PARSE (an answer without Quota.Value as a
 * finite number >= 0, or not JSON), ERR_INVAL (a refused request: a bad signature, unknown
 * credentials, a bad argument), ERR_UNKNOWN (an error type castor does not know), ERR_NOMEM, the
 * credential source's; *out is then unchanged.
 */
int sq_get_quota(struct sq_client *c, const char *service_code, const char *quota_code,
                 struct sq_quota *out, struct error *e);

#endif
