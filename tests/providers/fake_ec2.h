/* fake_ec2.h: a strict fake EC2 endpoint on loopback for tests: it verifies every request's
 * SigV4 signature against the secret it was given (AuthFailure otherwise), checks the Query
 * form, answers from a script of replies in the real XML shapes, and records what it got. It can
 * act as the Price List Query API or Service Quotas instead (the JSON protocol, services
 * "pricing" and "servicequotas"). */
#ifndef CASTOR_TESTS_FAKE_EC2_H
#define CASTOR_TESTS_FAKE_EC2_H

#include <stddef.h>

struct fake_ec2;

/* Start a fake accepting key id akid with secret in region. NULL when it cannot start. */
struct fake_ec2 *fake_ec2_start(const char *akid, const char *secret, const char *region);

void fake_ec2_stop(struct fake_ec2 *f);

/* Act as the Price List Query API instead (before any request): SigV4 for the service
 * "pricing" (x-amz-target signed too), POST with Content-Type application/x-amz-json-1.1,
 * X-Amz-Target AWSPriceListService.GetProducts and a JSON object body; refusals as JSON errors
 * ({"__type", "message"}: InvalidSignatureException, SerializationException); every answer
 * carries "x-amzn-RequestId: fake-req-N" (N: the request's index, from 1). */
void fake_ec2_set_pricing(struct fake_ec2 *f);

/* Act as Service Quotas instead (before any request), as fake_ec2_set_pricing does but for the
 * service "servicequotas" and the targets ServiceQuotasV20190624.GetServiceQuota and
 * ServiceQuotasV20190624.GetAWSDefaultServiceQuota. */
void fake_ec2_set_quotas(struct fake_ec2 *f);

/* The X-Amz-Target of request i ("" when it had none), or NULL. */
const char *fake_ec2_target(const struct fake_ec2 *f, size_t i);

/* "http://127.0.0.1:PORT". */
const char *fake_ec2_url(const struct fake_ec2 *f);

/* Queue a reply for the next verified request (any action): status and body as given. In body,
 * "@TOKEN@" is replaced by the request's X-Amz-Security-Token (a server that echoes it). */
void fake_ec2_push(struct fake_ec2 *f, int status, const char *body);

/* Queue a request that is read and never answered (the client times out). */
void fake_ec2_push_hang(struct fake_ec2 *f);

/* Queue a 200 whose body stops after cut bytes while Content-Length promises all of it. */
void fake_ec2_push_cut(struct fake_ec2 *f, const char *body, long cut);

/* Requests received (verified or not), and those refused for their signature. */
size_t fake_ec2_requests(const struct fake_ec2 *f);
size_t fake_ec2_auth_failures(const struct fake_ec2 *f);

/* Replies still queued. */
size_t fake_ec2_pending(const struct fake_ec2 *f);

/* The decoded value of key in the form body of request i (0-based), or NULL. */
const char *fake_ec2_param(const struct fake_ec2 *f, size_t i, const char *key);

/* The body of request i as received, or NULL. */
const char *fake_ec2_body(const struct fake_ec2 *f, size_t i);

/* How many parameters of request i have keys starting with prefix. */
size_t fake_ec2_count_params(const struct fake_ec2 *f, size_t i, const char *prefix);

#endif
