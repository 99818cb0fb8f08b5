/* test_cloud_aws.c: the aws cloud against the strict fake EC2 endpoint and the fake Price List
 * API: launches as an instant fleet of the offer's one pool with the launch token as
 * ClientToken, a pool's fleet errors returned as castor's codes (capacity, quota), RunInstances
 * when CreateFleet is refused or there is no launch template; on-demand offers priced by the
 * Price List API, cached, and by the static table when it cannot answer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "providers/cloud.h"
#include "providers/fake_ec2.h"
#include "util/conf.h"
#include "util/timestamp.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""
#define CLUSTER "alpha"
#define G5_SPOT "g5.xlarge/us-east-1a/spot"
#define G4_OD "g4dn.12xlarge/us-east-1b/on-demand"
#define G4_PRICE_LIST                                                                        \
    "{\"FormatVersion\":\"aws_v1\",\"PriceList\":[\"{\\\"product\\\":{\\\"attributes\\\":{"  \
    "\\\"instanceType\\\":\\\"g4dn.12xlarge\\\",\\\"regionCode\\\":\\\"us-east-1\\\"}},"     \
    "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"S.T\\\":{\\\"priceDimensions\\\":{\\\"S.T.R\\\":{" \
    "\\\"unit\\\":\\\"Hrs\\\",\\\"pricePerUnit\\\":{\\\"USD\\\":\\\"3.5000000000\\\"}}}}}}}\"]}"

#define GP3_PRICE_LIST                                                                       \
    "{\"FormatVersion\":\"aws_v1\",\"PriceList\":[\"{\\\"product\\\":{\\\"attributes\\\":{"  \
    "\\\"volumeApiName\\\":\\\"gp3\\\",\\\"regionCode\\\":\\\"us-east-1\\\"}},"              \
    "\\\"terms\\\":{\\\"OnDemand\\\":{\\\"S.T\\\":{\\\"priceDimensions\\\":{\\\"S.T.R\\\":{" \
    "\\\"unit\\\":\\\"GB-Mo\\\",\\\"pricePerUnit\\\":{\\\"USD\\\":\\\"0.0960000000\\\"}}}}}}}\"]}"

/* DescribeSpotPriceHistory with no price */
#define NO_SPOT                                                           \
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-p</requestId>" \
    "<spotPriceHistorySet/></DescribeSpotPriceHistoryResponse>"

struct fixture {
    struct fake_ec2 *fake;
    struct cloud c;
};

/* The cloud over the fake, from a section with launch (a "launch_template: ..." or
 * "image_id: ..." line). */
static int make(struct fixture *f, const char *launch)
{
    struct conf *doc = NULL;
    struct error e = {0};
    char text[2048];
    int rc;

    snprintf(text, sizeof(text),
             "world: aws\n"
             "cloud:\n"
             "  region: us-east-1\n"
             "  endpoint: %s\n"
             "  credentials_file: /nonexistent\n"
             "  imds: false\n"
             "  %s\n"
             "  offers:\n"
             "    - instance_type: g5.xlarge\n"
             "      zone: us-east-1a\n"
             "      market: spot\n"
             "      gpus: 1\n"
             "      max_price: 0.9\n"
             "    - instance_type: g4dn.12xlarge\n"
             "      zone: us-east-1b\n"
             "      subnet: subnet-0b\n"
             "      gpus: 4\n",
             fake_ec2_url(f->fake), launch);
    assert_int_equal(conf_parse("castor.yaml", text, strlen(text), &doc, NULL), 0);
    rc = cloud_new("aws", conf_find(doc->root, "cloud"), "/etc/castor", NULL, &f->c, &e);
    conf_free(doc);
    if (rc < 0)
        fail_msg("%d:%d: %s", e.line, e.column, e.msg);
    return rc;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ENDPOINT_URL_EC2");
    f->fake = fake_ec2_start(AKID, SECRET, "us-east-1");
    if (!f->fake)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(fake_ec2_pending(f->fake), 0);
    assert_int_equal(fake_ec2_auth_failures(f->fake), 0);
    cloud_free(&f->c);
    fake_ec2_stop(f->fake);
    free(f);
    return 0;
}

/* A fleet answer: the items of its errorSet and of its fleetInstanceSet. */
#define FLEET(errors, instances)                                                           \
    "<CreateFleetResponse " NS "><requestId>r-fleet</requestId><fleetId>fleet-1</fleetId>" \
    "<errorSet>" errors "</errorSet><fleetInstanceSet>" instances                          \
    "</fleetInstanceSet></CreateFleetResponse>"
#define FLEET_ERROR(type, zone, life, code)                                                  \
    "<item><launchTemplateAndOverrides><overrides><instanceType>" type "</instanceType>"     \
    "<availabilityZone>" zone "</availabilityZone></overrides></launchTemplateAndOverrides>" \
    "<lifecycle>" life "</lifecycle><errorCode>" code                                        \
    "</errorCode><errorMessage>no</errorMessage>"                                            \
    "</item>"
#define FLEET_INSTANCE(type, id, life)                                                      \
    "<item><launchTemplateAndOverrides><overrides><instanceType>" type "</instanceType>"    \
    "</overrides></launchTemplateAndOverrides><lifecycle>" life "</lifecycle><instanceIds>" \
    "<item>" id "</item></instanceIds><instanceType>" type "</instanceType></item>"

static const char run_ok[] =
    "<RunInstancesResponse " NS "><requestId>r-run</requestId><reservationId>r-1</reservationId>"
    "<instancesSet><item><instanceId>i-0run</instanceId><instanceType>g5.xlarge</instanceType>"
    "<placement><availabilityZone>us-east-1a</availabilityZone></placement><instanceLifecycle>"
    "spot</instanceLifecycle></item></instancesSet></RunInstancesResponse>";

/* With a launch template, a spot offer launches as an instant fleet of its one pool: the zone
 * (no subnet), its max price, a spot capacity of 1 and none on demand, the token as ClientToken
 * and tag; an on-demand offer with a subnet likewise, the other way round. */
static void launch__instant_fleet_of_the_offers_pool(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "";

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 200, FLEET("", FLEET_INSTANCE("g5.xlarge", "i-0spot", "spot")));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-1", id), 0);
    assert_string_equal(id, "i-0spot");
#define P(i, name) fake_ec2_param(f->fake, i, name)
#define O "LaunchTemplateConfigs.1.Overrides.1."
    assert_string_equal(P(0, "Action"), "CreateFleet");
    assert_string_equal(P(0, "Type"), "instant");
    assert_string_equal(P(0, "ClientToken"), "tok-1");
    assert_string_equal(
        P(0, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"), "lt-0abc");
    assert_int_equal(fake_ec2_count_params(f->fake, 0, "LaunchTemplateConfigs.1.Overrides.2."), 0);
    assert_string_equal(P(0, O "InstanceType"), "g5.xlarge");
    assert_string_equal(P(0, O "AvailabilityZone"), "us-east-1a");
    assert_null(P(0, O "SubnetId"));
    assert_string_equal(P(0, O "MaxPrice"), "0.900000");
    assert_string_equal(P(0, "TargetCapacitySpecification.SpotTargetCapacity"), "1");
    assert_string_equal(P(0, "TargetCapacitySpecification.OnDemandTargetCapacity"), "0");
    assert_string_equal(P(0, "TargetCapacitySpecification.DefaultTargetCapacityType"), "spot");
    assert_string_equal(P(0, "TagSpecification.1.Tag.1.Value"), CLUSTER);
    assert_string_equal(P(0, "TagSpecification.1.Tag.2.Value"), "tok-1");

    fake_ec2_push(f->fake, 200, FLEET("", FLEET_INSTANCE("g4dn.12xlarge", "i-0od", "on-demand")));
    assert_int_equal(cloud_launch(&f->c, G4_OD, CLUSTER, "tok-2", id), 0);
    assert_string_equal(id, "i-0od");
    assert_string_equal(P(1, O "SubnetId"), "subnet-0b");
    assert_null(P(1, O "AvailabilityZone"));
    assert_null(P(1, O "MaxPrice"));
    assert_string_equal(P(1, "TargetCapacitySpecification.SpotTargetCapacity"), "0");
    assert_string_equal(P(1, "TargetCapacitySpecification.OnDemandTargetCapacity"), "1");
    assert_string_equal(P(1, "TargetCapacitySpecification.DefaultTargetCapacityType"), "on-demand");
    assert_int_equal(fake_ec2_requests(f->fake), 2);
}

/* A fleet that started nothing says why in its errors: insufficient capacity is ERR_CAPACITY,
 * the vCPU and spot-count limits are ERR_QUOTA (even after another pool's unknown code), an
 * unknown code alone is ERR_UNKNOWN, and an empty fleet without errors is ERR_AGAIN. No instance
 * id is written. */
static void launch__fleet_errors_are_the_pools_codes(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "untouched";

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(
        f->fake, 200,
        FLEET(FLEET_ERROR("g5.xlarge", "us-east-1a", "spot", "InsufficientInstanceCapacity"), ""));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-1", id), ERR_CAPACITY);
    fake_ec2_push(
        f->fake, 200,
        FLEET(FLEET_ERROR("g4dn.12xlarge", "us-east-1b", "on-demand", "VcpuLimitExceeded"), ""));
    assert_int_equal(cloud_launch(&f->c, G4_OD, CLUSTER, "tok-2", id), ERR_QUOTA);
    fake_ec2_push(f->fake, 200,
                  FLEET(FLEET_ERROR("g5.xlarge", "us-east-1a", "spot", "SomethingNew") FLEET_ERROR(
                            "g5.xlarge", "us-east-1a", "spot", "MaxSpotInstanceCountExceeded"),
                        ""));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-3", id), ERR_QUOTA);
    fake_ec2_push(f->fake, 200,
                  FLEET(FLEET_ERROR("g5.xlarge", "us-east-1a", "spot", "SomethingNew"), ""));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-4", id), ERR_UNKNOWN);
    fake_ec2_push(f->fake, 200, FLEET("", ""));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-5", id), ERR_AGAIN);
    assert_string_equal(id, "untouched");
    assert_int_equal(fake_ec2_requests(f->fake), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(P(i, "Action"), "CreateFleet");
}

/* When CreateFleet itself is refused (not authorised), the same launch goes by RunInstances with
 * the same token and the template; a pool without capacity then is ERR_CAPACITY. Without a
 * template (an image id), RunInstances from the start. */
static void launch__run_instances_when_the_fleet_is_refused(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "";

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 403,
                  "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are "
                  "not authorized to perform this operation.</Message></Error></Errors>"
                  "<RequestID>r-denied</RequestID></Response>");
    fake_ec2_push(f->fake, 200, run_ok);
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-1", id), 0);
    assert_string_equal(id, "i-0run");
    assert_string_equal(P(0, "Action"), "CreateFleet");
    assert_string_equal(P(1, "Action"), "RunInstances");
    assert_string_equal(P(1, "ClientToken"), "tok-1");
    assert_string_equal(P(1, "LaunchTemplate.LaunchTemplateId"), "lt-0abc");
    assert_string_equal(P(1, "InstanceMarketOptions.MarketType"), "spot");
    /* shut down from inside, a worker is terminated (not left stopped, its volume billed) */
    assert_non_null(P(1, "InstanceInitiatedShutdownBehavior"));
    assert_string_equal(P(1, "InstanceInitiatedShutdownBehavior"), "terminate");
    assert_null(P(0, "InstanceInitiatedShutdownBehavior")); /* CreateFleet: the template's */

    fake_ec2_push(f->fake, 400,
                  "<Response><Errors><Error><Code>InvalidAction</Code><Message>CreateFleet is not "
                  "valid for this web service.</Message></Error></Errors><RequestID>r-no-fleet"
                  "</RequestID></Response>");
    fake_ec2_push(f->fake, 500,
                  "<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code><Message>"
                  "We currently do not have sufficient g5.xlarge capacity</Message></Error>"
                  "</Errors><RequestID>r-ice</RequestID></Response>");
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-2", id), ERR_CAPACITY);
    assert_string_equal(P(3, "Action"), "RunInstances");
    assert_string_equal(id, "i-0run");
    cloud_free(&f->c);

    make(f, "image_id: ami-0123");
    fake_ec2_push(f->fake, 200, run_ok);
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-3", id), 0);
    assert_string_equal(P(4, "Action"), "RunInstances");
    assert_string_equal(P(4, "ImageId"), "ami-0123");
    assert_non_null(P(4, "InstanceInitiatedShutdownBehavior"));
    assert_string_equal(P(4, "InstanceInitiatedShutdownBehavior"), "terminate");
    assert_int_equal(fake_ec2_requests(f->fake), 5);
#undef O
#undef P
}

#define EC2_ERROR(code, message)                                                   \
    "<Response><Errors><Error><Code>" code "</Code><Message>" message "</Message>" \
    "</Error></Errors><RequestID>r-e</RequestID></Response>"
#define EC2_REFUSAL(code, id)                                                                      \
    "<Response><Errors><Error><Code>" code "</Code><Message>The " code " does not exist</Message>" \
    "</Error></Errors><RequestID>" id "</RequestID></Response>"

/* A launch naming something EC2 does not know (a subnet, an image, a launch template: a
 * *.NotFound code, from CreateFleet, its errors or RunInstances) or refused by a 4xx answer that
 * is not an EC2 document is refused, ERR_INVAL: nothing was made, and the caller gives the launch
 * up and holds the offer (ERR_NOENT would leave it asked again every tick). CreateFleet's
 * not-found is not asked again of RunInstances. A 200 that cannot be read is not a refusal: the
 * instance may exist. */
static void launch__not_found_is_refused(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "untouched";
    int rc;

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 400, EC2_REFUSAL("InvalidSubnetID.NotFound", "r-subnet"));
    assert_int_equal(cloud_launch(&f->c, G4_OD, CLUSTER, "tok-1", id), ERR_INVAL);
    fake_ec2_push(f->fake, 400, EC2_REFUSAL("InvalidLaunchTemplateId.NotFound", "r-lt"));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-2", id), ERR_INVAL);
    fake_ec2_push(
        f->fake, 200,
        FLEET(FLEET_ERROR("g5.xlarge", "us-east-1a", "spot", "InvalidAMIID.NotFound"), ""));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-3", id), ERR_INVAL);
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(fake_ec2_param(f->fake, i, "Action"), "CreateFleet");
    cloud_free(&f->c);

    make(f, "image_id: ami-0123");
    fake_ec2_push(f->fake, 400, EC2_REFUSAL("InvalidAMIID.NotFound", "r-ami"));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-4", id), ERR_INVAL);
    fake_ec2_push(f->fake, 403, "<html>Forbidden by the proxy</html>");
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-5", id), ERR_INVAL);
    fake_ec2_push(f->fake, 200, "<RunInstancesResponse " NS "><requestId>r-cut");
    rc = cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-6", id);
    assert_true(rc == ERR_PARSE || rc == ERR_IO);
    assert_string_equal(id, "untouched");
    assert_int_equal(fake_ec2_requests(f->fake), 6);
}

/* Everything the process wrote on stderr while fn(f) ran. */
static char *stderr_of(void (*fn)(struct fixture *), struct fixture *f)
{
    FILE *tmp = tmpfile();
    int saved = dup(2);
    long n;
    char *text;

    assert_non_null(tmp);
    assert_true(saved >= 0);
    fflush(stderr);
    assert_true(dup2(fileno(tmp), 2) >= 0);
    fn(f);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    n = ftell(tmp);
    text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    rewind(tmp);
    assert_int_equal(fread(text, 1, (size_t)n, tmp), (size_t)n);
    fclose(tmp);
    return text;
}

static void refused_launch_and_list(struct fixture *f)
{
    struct cloud_instance *l = NULL;
    char id[CLOUD_ID_MAX];
    size_t n = 0;

    fake_ec2_push(f->fake, 400, EC2_REFUSAL("InvalidSubnetID.NotFound", "r-subnet-404"));
    assert_int_equal(cloud_launch(&f->c, G4_OD, CLUSTER, "tok-1", id), ERR_INVAL);
    fake_ec2_push(f->fake, 403, EC2_REFUSAL("UnauthorizedOperation", "r-denied-403"));
    assert_int_equal(cloud_list(&f->c, CLUSTER, &l, &n), ERR_INVAL);
}

/* A failed EC2 call is logged with AWS's error code, message and request id (what an operator
 * looks up), not only castor's class of error ("invalid argument"). */
static void calls__logged_with_code_and_request_id(void **state)
{
    struct fixture *f = *state;
    char *text;

    make(f, "launch_template: lt-0abc");
    text = stderr_of(refused_launch_and_list, f);
    if (!strstr(text, "InvalidSubnetID.NotFound") || !strstr(text, "r-subnet-404") ||
        !strstr(text, "UnauthorizedOperation") || !strstr(text, "r-denied-403"))
        fail_msg("the log does not name the codes and request ids: %s", text);
    assert_non_null(strstr(text, "ec2 CreateFleet failed"));
    free(text);
}

/* Credentials AWS refuses as expired (ExpiredToken, RequestExpired) are dropped and fetched
 * anew (here the environment's session token changed meanwhile) for one more CreateFleet with
 * the same token; never RunInstances (a second launch call). Refused again: ERR_PERM, which
 * leaves the launch pending and the offer free, not ERR_UNKNOWN (refused: the offer held). A
 * code castor does not know is not asked of RunInstances either. */
static void launch__expired_credentials_fetched_anew(void **state)
{
    struct fixture *f = *state;
    char id[CLOUD_ID_MAX] = "";

    setenv("AWS_SESSION_TOKEN", "session-1", 1);
    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 200, FLEET("", FLEET_INSTANCE("g5.xlarge", "i-@TOKEN@", "spot")));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-1", id), 0);
    assert_string_equal(id, "i-session-1");
    setenv("AWS_SESSION_TOKEN", "session-2", 1); /* the cached credentials stay in use */
    fake_ec2_push(f->fake, 400, EC2_ERROR("ExpiredToken", "The security token is expired"));
    fake_ec2_push(f->fake, 200, FLEET("", FLEET_INSTANCE("g5.xlarge", "i-@TOKEN@", "spot")));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-2", id), 0);
    assert_string_equal(id, "i-session-2");
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    assert_string_equal(fake_ec2_param(f->fake, 1, "ClientToken"), "tok-2");
    assert_string_equal(fake_ec2_param(f->fake, 2, "ClientToken"), "tok-2");

    fake_ec2_push(f->fake, 400, EC2_ERROR("RequestExpired", "Request has expired."));
    fake_ec2_push(f->fake, 400, EC2_ERROR("RequestExpired", "Request has expired."));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-3", id), ERR_PERM);
    fake_ec2_push(f->fake, 400, EC2_ERROR("SomethingNew", "new"));
    assert_int_equal(cloud_launch(&f->c, G5_SPOT, CLUSTER, "tok-4", id), ERR_UNKNOWN);
    assert_int_equal(fake_ec2_requests(f->fake), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(fake_ec2_param(f->fake, i, "Action"), "CreateFleet");
    unsetenv("AWS_SESSION_TOKEN");
}

/* A fake Price List API, and the cloud made over both fakes from a section with the static
 * table, that API and extra (its line, kept in line for another make). */
static struct fake_ec2 *with_price_list(struct fixture *f, const char *extra, char *line,
                                        size_t size)
{
    struct fake_ec2 *pricing = fake_ec2_start(AKID, SECRET, "us-east-1");

    assert_non_null(pricing);
    fake_ec2_set_pricing(pricing);
    snprintf(line, size, "image_id: ami-1\n  prices: %s/aws-prices.yaml\n  pricing_endpoint: %s%s",
             CASTOR_CONFDIR, fake_ec2_url(pricing), extra);
    make(f, line);
    return pricing;
}

/* On-demand offers are priced by the Price List API (the region's code in the filters) and the
 * price is cached: a second look asks EC2 for spot prices again but not the API. When the API
 * refuses, the static table's price serves, and the API is not asked again at once. */
static void offers__on_demand_from_the_price_list(void **state)
{
    struct fixture *f = *state;
    char line[512];
    struct fake_ec2 *pricing = with_price_list(f, "", line, sizeof(line));
    struct cloud_offer *o = NULL;
    size_t n = 0;

    fake_ec2_push(pricing, 200, G4_PRICE_LIST);
    for (int round = 0; round < 2; round++) {
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the last hours */
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the spot offer still without one: all */
        assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(o[1].name, G4_OD);
        assert_float_equal(o[1].price, 3.5, 1e-12);       /* not the table's 3.912 */
        assert_true(isnan(o[0].price));                   /* spot, with no price history */
        assert_float_equal(o[0].max_price, 0.9, 0);       /* the spot offer's bid, as configured */
        assert_float_equal(o[1].max_price, 0, 0);         /* on-demand bids nothing */
        assert_float_equal(o[0].reclaim_free_s, 3600, 0); /* EC2: its first hour unbilled */
        assert_float_equal(o[1].reclaim_free_s, 0, 0);
        free(o);
    }
    assert_int_equal(fake_ec2_requests(pricing), 1);
    assert_int_equal(fake_ec2_requests(f->fake), 4);
    assert_non_null(strstr(fake_ec2_body(pricing, 0), "\"g4dn.12xlarge\""));
    assert_non_null(strstr(fake_ec2_body(pricing, 0), "\"us-east-1\""));
    cloud_free(&f->c);

    make(f, line);
    fake_ec2_push(pricing, 400, "{\"__type\":\"AccessDeniedException\",\"message\":\"no\"}");
    for (int round = 0; round < 2; round++) {
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the last hours */
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the spot offer still without one: all */
        assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
        assert_float_equal(o[1].price, 3.912, 1e-12);
        free(o);
    }
    assert_int_equal(fake_ec2_requests(pricing), 2);
    assert_int_equal(fake_ec2_auth_failures(pricing), 0);
    assert_int_equal(fake_ec2_pending(pricing), 0);
    fake_ec2_stop(pricing);
}

/* With the Price List API, the root volume is priced by it ($0.096 a GB-month here, not the
 * table's $0.08): 200 GB, $0.0263/h, on the API's $3.50 on-demand; asked once, then cached. */
static void offers__the_root_volume_from_the_price_list(void **state)
{
    struct fixture *f = *state;
    char line[512];
    struct fake_ec2 *pricing = with_price_list(f, "\n  volume_gb: 200", line, sizeof(line));
    struct cloud_offer *o = NULL;
    size_t n = 0;

    fake_ec2_push(pricing, 200, GP3_PRICE_LIST);
    fake_ec2_push(pricing, 200, G4_PRICE_LIST);
    for (int round = 0; round < 2; round++) {
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the last hours */
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the spot offer still without one: all */
        assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
        assert_float_equal(o[1].storage, 200 * 0.096 / 730, 1e-12);
        assert_float_equal(o[1].price, 3.5 + 200 * 0.096 / 730, 1e-12);
        free(o);
    }
    assert_int_equal(fake_ec2_requests(pricing), 2);
    assert_non_null(strstr(fake_ec2_body(pricing, 0), "\"volumeApiName\""));
    assert_int_equal(fake_ec2_pending(pricing), 0);
    cloud_free(&f->c);
    fake_ec2_stop(pricing);
}

/* A worker's root volume is in its node's price: 200 GB of gp3 at the table's $0.08 a GB-month
 * over 730 hours, $0.0219/h, on the table's $3.912 on-demand (the Price List not asked); a spot
 * offer without a price stays unknown. gp2 ($0.10) when volume_type says so; a type the table
 * does not price counts nothing. */
static void offers__the_root_volume_in_the_price(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *extra;
        double storage;
    } cases[] = {
        {"", 200 * 0.08 / 730},
        {"\n  volume_type: gp2", 200 * 0.10 / 730},
        {"\n  volume_type: io2", 0},
    };
    struct cloud_offer *o = NULL;
    char line[512];
    size_t n = 0;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line),
                 "image_id: ami-1\n  prices: %s/aws-prices.yaml\n  pricing: false\n"
                 "  volume_gb: 200%s",
                 CASTOR_CONFDIR, cases[i].extra);
        make(f, line);
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the last hours */
        fake_ec2_push(f->fake, 200, NO_SPOT); /* the spot offer still without one: all */
        assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
        assert_int_equal(n, 2);
        assert_float_equal(o[1].storage, cases[i].storage, 1e-12);
        assert_float_equal(o[1].price, 3.912 + cases[i].storage, 1e-12);
        assert_true(isnan(o[0].price));
        free(o);
        cloud_free(&f->c);
    }
}

/* DescribeSpotPriceHistory answers: one price of g5.xlarge in us-east-1a at when. */
#define SPOT_PRICE(price, when)                                                                \
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-p</requestId><spotPriceHistorySet>" \
    "<item><instanceType>g5.xlarge</instanceType><productDescription>Linux/UNIX"               \
    "</productDescription><spotPrice>" price "</spotPrice><timestamp>" when                    \
    "</timestamp><availabilityZone>us-east-1a</availabilityZone></item>"                       \
    "</spotPriceHistorySet></DescribeSpotPriceHistoryResponse>"

/* Spot prices are asked for the last 3 hours only (StartTime; without one EC2 pages through up
 * to 90 days of history): EC2 adds the price in effect at the start, whose time is older, and it
 * is the offer's price; one request. Should an offer have no price in that answer, its type is
 * asked again without a StartTime. */
static void offers__spot_prices_of_the_last_hours(void **state)
{
    struct fixture *f = *state;
    struct cloud_offer *o = NULL;
    int64_t start = 0, now = (int64_t)time(NULL);
    size_t n = 0;

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 200, SPOT_PRICE("0.412300", "2024-01-01T00:00:00.000Z"));
    assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
    assert_string_equal(o[0].name, G5_SPOT);
    assert_float_equal(o[0].price, 0.4123, 1e-12);
    free(o);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    assert_string_equal(fake_ec2_param(f->fake, 0, "Action"), "DescribeSpotPriceHistory");
    assert_string_equal(fake_ec2_param(f->fake, 0, "InstanceType.1"), "g5.xlarge");
    assert_non_null(fake_ec2_param(f->fake, 0, "StartTime"));
    assert_int_equal(timestamp_parse_iso8601(fake_ec2_param(f->fake, 0, "StartTime"), &start), 0);
    assert_true(start >= now - 3 * 3600 - 60 && start <= now - 3 * 3600 + 60);

    /* none in the window's answer: the type again, all its history */
    fake_ec2_push(f->fake, 200, NO_SPOT);
    fake_ec2_push(f->fake, 200, SPOT_PRICE("0.390000", "2023-12-01T00:00:00.000Z"));
    assert_int_equal(cloud_offers(&f->c, &o, &n), 0);
    assert_float_equal(o[0].price, 0.39, 1e-12);
    free(o);
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    assert_non_null(fake_ec2_param(f->fake, 1, "StartTime"));
    assert_null(fake_ec2_param(f->fake, 2, "StartTime"));
    assert_string_equal(fake_ec2_param(f->fake, 2, "InstanceType.1"), "g5.xlarge");
    assert_null(fake_ec2_param(f->fake, 2, "InstanceType.2"));
}

/* One instance of the cluster as DescribeInstances tells it: id in state (name and code). */
#define INSTANCE(id, state, code)                                                         \
    "<item><instanceId>" id "</instanceId><instanceType>g4dn.12xlarge</instanceType>"     \
    "<instanceState><code>" code "</code><name>" state "</name></instanceState>"          \
    "<placement><availabilityZone>us-east-1b</availabilityZone></placement>"              \
    "<launchTime>2024-01-01T00:00:00.000Z</launchTime><tagSet><item><key>castor:cluster"  \
    "</key><value>alpha</value></item><item><key>castor:launch-token</key><value>tok-" id \
    "</value></item></tagSet></item>"
#define DESCRIBE(items)                                                                  \
    "<DescribeInstancesResponse " NS "><requestId>r-d</requestId><reservationSet><item>" \
    "<reservationId>r-0</reservationId><instancesSet>" items "</instancesSet></item>"    \
    "</reservationSet></DescribeInstancesResponse>"
#define TERMINATED(id, was, code)                                                       \
    "<TerminateInstancesResponse " NS "><requestId>r-t</requestId><instancesSet><item>" \
    "<instanceId>" id "</instanceId><currentState><code>32</code><name>shutting-down"   \
    "</name></currentState><previousState><code>" code "</code><name>" was "</name>"    \
    "</previousState></item></instancesSet></TerminateInstancesResponse>"

/* A stopped or stopping instance of the cluster (shut down from inside with the default
 * behaviour, or stopped by EC2 for a retirement) is listed gone and terminated by the list: a
 * stopped instance keeps its volume, billed, and can be started again. A failed termination
 * leaves the list as it is (tried again at the next). */
static void list__stopped_instances_terminated(void **state)
{
    struct fixture *f = *state;
    struct cloud_instance *l = NULL;
    size_t n = 0;

    make(f, "launch_template: lt-0abc");
    fake_ec2_push(f->fake, 200,
                  DESCRIBE(INSTANCE("i-0run", "running", "16") INSTANCE("i-0off", "stopped", "80")
                               INSTANCE("i-0halt", "stopping", "64")
                                   INSTANCE("i-0gone", "terminated", "48")));
    fake_ec2_push(f->fake, 200, TERMINATED("i-0off", "stopped", "80"));
    assert_int_equal(cloud_list(&f->c, CLUSTER, &l, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(l[0].state, CLOUD_RUNNING);
    assert_int_equal(l[1].state, CLOUD_GONE);
    assert_int_equal(l[2].state, CLOUD_GONE);
    assert_int_equal(l[3].state, CLOUD_GONE);
    free(l);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_string_equal(fake_ec2_param(f->fake, 1, "Action"), "TerminateInstances");
    assert_string_equal(fake_ec2_param(f->fake, 1, "InstanceId.1"), "i-0off");
    assert_string_equal(fake_ec2_param(f->fake, 1, "InstanceId.2"), "i-0halt");
    assert_int_equal(fake_ec2_count_params(f->fake, 1, "InstanceId."), 2);

    fake_ec2_push(f->fake, 200, DESCRIBE(INSTANCE("i-0off", "stopped", "80")));
    fake_ec2_push(f->fake, 403, EC2_ERROR("UnauthorizedOperation", "not authorized"));
    assert_int_equal(cloud_list(&f->c, CLUSTER, &l, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(l[0].state, CLOUD_GONE);
    free(l);
    /* none stopped: no termination asked */
    fake_ec2_push(f->fake, 200, DESCRIBE(INSTANCE("i-0run", "running", "16")));
    assert_int_equal(cloud_list(&f->c, CLUSTER, &l, &n), 0);
    free(l);
    assert_int_equal(fake_ec2_requests(f->fake), 5);
}

/* A termination EC2 refuses, or answers with a code castor does not know, is a failure (ERR_PERM,
 * ERR_IO: the caller tries again), never ERR_UNKNOWN, which says the cluster has no such
 * instance (and which the callers take as done): that only for an id the cluster's instances do
 * not hold. One already terminated is 0. */
static void terminate__refusals_are_failures(void **state)
{
    struct fixture *f = *state;
    static const struct {
        int describe_status;
        const char *describe;
        int terminate_status; /* 0: not asked */
        const char *terminate;
        int err;
        int twice; /* 1: the describe answer comes again (credentials fetched anew) */
    } cases[] = {
        {200, DESCRIBE(INSTANCE("i-0run", "running", "16")), 400,
         EC2_ERROR("OperationNotPermitted", "The instance 'i-0run' may not be terminated. Modify "
                                            "its 'disableApiTermination' instance attribute and "
                                            "try again."),
         ERR_IO, 0},
        {200, DESCRIBE(INSTANCE("i-0run", "running", "16")), 403,
         EC2_ERROR("UnauthorizedOperation", "You are not authorized to perform this operation."),
         ERR_PERM, 0},
        {200, DESCRIBE(INSTANCE("i-0run", "stopped", "80")), 400,
         EC2_ERROR("InvalidInstanceID.NotFound", "The instance ID 'i-0run' does not exist"), ERR_IO,
         0},
        {400, EC2_ERROR("ExpiredToken", "The security token included in the request is expired"), 0,
         NULL, ERR_PERM, 1},
        {400, EC2_ERROR("RequestExpired", "Request has expired."), 0, NULL, ERR_PERM, 1},
        {401,
         EC2_ERROR("AuthFailure", "AWS was not able to validate the provided access "
                                  "credentials"),
         0, NULL, ERR_PERM, 0},
        {200, DESCRIBE(INSTANCE("i-0other", "running", "16")), 0, NULL, ERR_UNKNOWN, 0},
        {200, DESCRIBE(INSTANCE("i-0run", "terminated", "48")), 0, NULL, 0, 0},
        {200, DESCRIBE(INSTANCE("i-0run", "running", "16")), 200,
         TERMINATED("i-0run", "running", "16"), 0, 0},
    };
    size_t asked = 0;

    make(f, "launch_template: lt-0abc");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc;

        fake_ec2_push(f->fake, cases[i].describe_status, cases[i].describe);
        if (cases[i].twice)
            fake_ec2_push(f->fake, cases[i].describe_status, cases[i].describe);
        if (cases[i].terminate_status)
            fake_ec2_push(f->fake, cases[i].terminate_status, cases[i].terminate);
        rc = cloud_terminate(&f->c, CLUSTER, "i-0run");
        if (rc != cases[i].err)
            fail_msg("case %zu: %d, not %d", i, rc, cases[i].err);
        asked += (cases[i].terminate_status ? 2 : 1) + (size_t)cases[i].twice;
        assert_int_equal(fake_ec2_requests(f->fake), asked);
        assert_string_equal(fake_ec2_param(f->fake, asked - 1, "Action"),
                            cases[i].terminate_status ? "TerminateInstances" : "DescribeInstances");
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(launch__instant_fleet_of_the_offers_pool),
        T(launch__fleet_errors_are_the_pools_codes),
        T(launch__run_instances_when_the_fleet_is_refused),
        T(launch__not_found_is_refused),
        T(calls__logged_with_code_and_request_id),
        T(launch__expired_credentials_fetched_anew),
        T(offers__on_demand_from_the_price_list),
        T(offers__the_root_volume_in_the_price),
        T(offers__the_root_volume_from_the_price_list),
        T(offers__spot_prices_of_the_last_hours),
        T(list__stopped_instances_terminated),
        T(terminate__refusals_are_failures),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
