/* test_ec2.c: the EC2 client against the strict fake endpoint (tests/providers/fake_ec2.c): the
 * requests it sends, the answers it reads, and its behaviour on every failure moto cannot
 * produce (capacity, quota, throttling, 5xx, timeouts, partial fleets, truncated or malformed
 * XML, unknown codes, a wrong secret). Every log line and error message of the whole run is
 * captured and searched for the secret and the session token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "providers/aws/ec2.h"
#include "providers/fake_ec2.h"
#include "support/hooks.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define TOKEN "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
#define REGION "us-east-1"
#define NOW 1700000000

#define NS "xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\""

struct fixture {
    struct fake_ec2 *fake;
    struct aws_credential_source *creds;
    struct ec2_client *client;
    struct hooks h; /* the clock stays at NOW */
};

static struct ec2_config config(struct fixture *f, uint64_t seed)
{
    struct ec2_config cfg = {
        .region = REGION,
        .endpoint = fake_ec2_url(f->fake),
        .timeout_ms = 300,
        .max_attempts = 4,
        .backoff_base_ms = 100,
        .backoff_cap_ms = 1000,
        .seed = seed,
        .credentials = f->creds,
        .clock = hooks_clock,
        .sleep_ms = hooks_sleep,
        .log = hooks_log,
        .hook_arg = &f->h,
    };

    return cfg;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct ec2_config cfg;

    if (!f)
        return -1;
    f->h.now = NOW;
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    unsetenv("AWS_PROFILE");
    f->fake = fake_ec2_start(AKID, SECRET, REGION);
    if (!f->fake || aws_credential_source_new(&cc, &f->creds) < 0)
        return -1;
    cfg = config(f, 42);
    if (ec2_client_new(&cfg, &f->client, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    /* every scripted reply was used: no test passes by leaving the script unread */
    assert_int_equal(fake_ec2_pending(f->fake), 0);
    ec2_client_free(f->client);
    aws_credential_source_free(f->creds);
    fake_ec2_stop(f->fake);
    free(f);
    return 0;
}

/* Keep e's text for the final secret check. */
static void keep(const struct error *e)
{
    char buf[700];

    hooks_capture(err_format(e, buf, sizeof(buf)));
}

static const char types_page1[] =
    "<DescribeInstanceTypesResponse " NS "><requestId>r-types-1</requestId><instanceTypeSet>"
    "<item><instanceType>p4d.24xlarge</instanceType><vCpuInfo><defaultVCpus>96</defaultVCpus>"
    "</vCpuInfo><memoryInfo><sizeInMiB>1179648</sizeInMiB></memoryInfo><gpuInfo><gpus><item>"
    "<name>A100</name><manufacturer>NVIDIA</manufacturer><count>8</count><memoryInfo>"
    "<sizeInMiB>40960</sizeInMiB></memoryInfo></item></gpus><totalGpuMemoryInMiB>327680"
    "</totalGpuMemoryInMiB></gpuInfo></item>"
    "<item><instanceType>m5.large</instanceType><vCpuInfo><defaultVCpus>2</defaultVCpus>"
    "</vCpuInfo><memoryInfo><sizeInMiB>8192</sizeInMiB></memoryInfo></item>"
    "</instanceTypeSet><nextToken>page+2/=</nextToken></DescribeInstanceTypesResponse>";

static const char types_page2[] =
    "<DescribeInstanceTypesResponse " NS "><requestId>r-types-2</requestId><instanceTypeSet>"
    "<item><instanceType>g5.12xlarge</instanceType><vCpuInfo><defaultVCpus>48</defaultVCpus>"
    "</vCpuInfo><memoryInfo><sizeInMiB>196608</sizeInMiB></memoryInfo><gpuInfo><gpus><item>"
    "<name>A10G</name><manufacturer>NVIDIA</manufacturer><count>4</count><memoryInfo>"
    "<sizeInMiB>24576</sizeInMiB></memoryInfo></item></gpus></gpuInfo></item>"
    "</instanceTypeSet></DescribeInstanceTypesResponse>";

/* Two pages: the second request carries the first page's token (decoded as sent) and MaxResults;
 * GPUs are counted and their memory summed. Every request was signed with the session token. */
static void describe_instance_types__pages_and_gpus(void **state)
{
    struct fixture *f = *state;
    struct ec2_config cfg = config(f, 1);
    struct ec2_client *c = NULL;
    struct ec2_instance_type *t = NULL;
    size_t n = 0;

    cfg.page_size = 2;
    assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
    fake_ec2_push(f->fake, 200, types_page1);
    fake_ec2_push(f->fake, 200, types_page2);
    assert_int_equal(ec2_describe_instance_types(c, NULL, 0, &t, &n, NULL), 0);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].name, "p4d.24xlarge");
    assert_int_equal(t[0].vcpus, 96);
    assert_int_equal(t[0].gpus, 8);
    assert_int_equal(t[0].gpu_memory_mib, 8 * 40960);
    assert_string_equal(t[0].gpu_name, "A100");
    assert_string_equal(t[0].gpu_maker, "NVIDIA");
    assert_int_equal(t[1].gpus, 0);
    assert_string_equal(t[1].gpu_name, "");
    assert_int_equal(t[2].gpus, 4);
    assert_int_equal(t[2].gpu_memory_mib, 4 * 24576);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_int_equal(fake_ec2_auth_failures(f->fake), 0);
    assert_string_equal(fake_ec2_param(f->fake, 0, "Action"), "DescribeInstanceTypes");
    assert_string_equal(fake_ec2_param(f->fake, 0, "MaxResults"), "2");
    assert_null(fake_ec2_param(f->fake, 0, "NextToken"));
    assert_string_equal(fake_ec2_param(f->fake, 1, "NextToken"), "page+2/=");
    free(t);
    /* named types: InstanceType.N, no MaxResults (EC2 refuses the two together) */
    fake_ec2_push(f->fake, 200, types_page2);
    {
        const char *names[] = {"g5.12xlarge"};

        assert_int_equal(ec2_describe_instance_types(c, names, 1, &t, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(fake_ec2_param(f->fake, 2, "InstanceType.1"), "g5.12xlarge");
        assert_null(fake_ec2_param(f->fake, 2, "MaxResults"));
        free(t);
    }
    ec2_client_free(c);
}

static const char prices_page1[] =
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-price-1</requestId>"
    "<spotPriceHistorySet><item><instanceType>p4d.24xlarge</instanceType><productDescription>"
    "Linux/UNIX</productDescription><spotPrice>9.832100</spotPrice><timestamp>"
    "2023-11-14T22:10:00.000Z</timestamp><availabilityZone>us-east-1a</availabilityZone></item>"
    "</spotPriceHistorySet><nextToken>p2</nextToken></DescribeSpotPriceHistoryResponse>";

static const char prices_page2[] =
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-price-2</requestId>"
    "<spotPriceHistorySet><item><instanceType>p4d.24xlarge</instanceType><spotPrice>10.5"
    "</spotPrice><timestamp>2023-11-14T21:00:00Z</timestamp><availabilityZone>us-east-1b"
    "</availabilityZone></item></spotPriceHistorySet><nextToken/>"
    "</DescribeSpotPriceHistoryResponse>";

static const char prices_bad[] =
    "<DescribeSpotPriceHistoryResponse " NS "><requestId>r-price-bad</requestId>"
    "<spotPriceHistorySet><item><instanceType>p4d.24xlarge</instanceType><spotPrice>9,83"
    "</spotPrice><timestamp>2023-11-14T21:00:00Z</timestamp><availabilityZone>us-east-1b"
    "</availabilityZone></item></spotPriceHistorySet></DescribeSpotPriceHistoryResponse>";

/* Prices over two pages (an empty nextToken ends the walk), the Linux product and the start
 * time sent; a price that does not parse is ERR_PARSE naming the call and the request id. */
static void describe_spot_prices__pages_and_bad_price(void **state)
{
    struct fixture *f = *state;
    const char *names[] = {"p4d.24xlarge"};
    struct ec2_spot_price *p = NULL;
    struct error e = {0};
    size_t n = 0;

    fake_ec2_push(f->fake, 200, prices_page1);
    fake_ec2_push(f->fake, 200, prices_page2);
    assert_int_equal(ec2_describe_spot_prices(f->client, names, 1, NOW - 3600, &p, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(p[0].zone, "us-east-1a");
    assert_true(p[0].price > 9.8320 && p[0].price < 9.8322);
    assert_int_equal(p[0].time, 1700000000 - 200);
    assert_true(p[1].price == 10.5);
    assert_string_equal(fake_ec2_param(f->fake, 0, "ProductDescription.1"), "Linux/UNIX");
    assert_string_equal(fake_ec2_param(f->fake, 0, "StartTime"), "2023-11-14T21:13:20Z");
    assert_string_equal(fake_ec2_param(f->fake, 1, "NextToken"), "p2");
    free(p);
    p = NULL;
    fake_ec2_push(f->fake, 200, prices_bad);
    assert_int_equal(ec2_describe_spot_prices(f->client, names, 1, 0, &p, &n, &e), ERR_PARSE);
    keep(&e);
    assert_null(p);
    assert_string_equal(e.file, "ec2 DescribeSpotPriceHistory");
    assert_non_null(strstr(e.msg, "9,83"));
    assert_non_null(strstr(e.msg, "r-price-bad"));
    /* logged too, with the request id */
    assert_non_null(strstr(f->h.last_log, "ec2 DescribeSpotPriceHistory failed"));
    assert_non_null(strstr(f->h.last_log, "r-price-bad"));
}

static const char fleet_partial[] =
    "<CreateFleetResponse " NS "><requestId>r-fleet</requestId><fleetId>fleet-123</fleetId>"
    "<errorSet><item><launchTemplateAndOverrides><launchTemplateSpecification><launchTemplateId>"
    "lt-1</launchTemplateId><version>1</version></launchTemplateSpecification><overrides>"
    "<instanceType>p4d.24xlarge</instanceType><subnetId>subnet-a</subnetId></overrides>"
    "</launchTemplateAndOverrides><lifecycle>spot</lifecycle><errorCode>"
    "InsufficientInstanceCapacity</errorCode><errorMessage>We currently do not have sufficient "
    "p4d.24xlarge capacity in the Availability Zone you requested</errorMessage></item>"
    "<item><launchTemplateAndOverrides><overrides><instanceType>p5.48xlarge</instanceType>"
    "<availabilityZone>us-east-1c</availabilityZone></overrides></launchTemplateAndOverrides>"
    "<lifecycle>on-demand</lifecycle><errorCode>VcpuLimitExceeded</errorCode><errorMessage>You "
    "have requested more vCPU capacity than your current vCPU limit</errorMessage></item>"
    "</errorSet><fleetInstanceSet><item><launchTemplateAndOverrides><overrides><instanceType>"
    "g5.12xlarge</instanceType><subnetId>subnet-b</subnetId></overrides>"
    "</launchTemplateAndOverrides><lifecycle>spot</lifecycle><instanceIds><item>i-0aaa</item>"
    "<item>i-0bbb</item></instanceIds><instanceType>g5.12xlarge</instanceType></item>"
    "</fleetInstanceSet></CreateFleetResponse>";

static const struct ec2_override overrides[] = {
    {"p4d.24xlarge", "subnet-a", "us-east-1a", 0},
    {"g5.12xlarge", "subnet-b", "us-east-1b", 6.5},
    {"p5.48xlarge", NULL, "us-east-1c", 0},
};

static const struct ec2_fleet_request fleet_req = {
    .launch_template_id = "lt-1",
    .overrides = overrides,
    .n_overrides = 3,
    .on_demand = 1,
    .spot = 2,
    .cluster_id = "castor-test",
    .launch_token = "launch-7f3a",
};

/* The request: an instant fleet, price-capacity-optimized spot, one override per pool (subnet,
 * or zone without one; a max price only where given), the capacities, the ClientToken and the
 * cluster and token tags on the instances. */
static void create_fleet__request_shape(void **state)
{
    struct fixture *f = *state;
    struct ec2_fleet_result r = {0};
    const char *k = "LaunchTemplateConfigs.1.";
    char key[128];

    fake_ec2_push(f->fake, 200, fleet_partial);
    assert_int_equal(ec2_create_fleet(f->client, &fleet_req, &r, NULL), 0);
    ec2_fleet_result_free(&r);
#define P(name) fake_ec2_param(f->fake, 0, name)
    assert_string_equal(P("Action"), "CreateFleet");
    assert_string_equal(P("Type"), "instant");
    assert_string_equal(P("ClientToken"), "launch-7f3a");
    assert_string_equal(P("SpotOptions.AllocationStrategy"), "price-capacity-optimized");
    assert_string_equal(P("TargetCapacitySpecification.TotalTargetCapacity"), "3");
    assert_string_equal(P("TargetCapacitySpecification.OnDemandTargetCapacity"), "1");
    assert_string_equal(P("TargetCapacitySpecification.SpotTargetCapacity"), "2");
    assert_string_equal(P("TargetCapacitySpecification.DefaultTargetCapacityType"), "spot");
    snprintf(key, sizeof(key), "%sLaunchTemplateSpecification.LaunchTemplateId", k);
    assert_string_equal(P(key), "lt-1");
    snprintf(key, sizeof(key), "%sLaunchTemplateSpecification.Version", k);
    assert_string_equal(P(key), "$Default");
    assert_int_equal(fake_ec2_count_params(f->fake, 0, "LaunchTemplateConfigs.1.Overrides."), 7);
    assert_string_equal(P("LaunchTemplateConfigs.1.Overrides.1.SubnetId"), "subnet-a");
    assert_null(P("LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"));
    assert_string_equal(P("LaunchTemplateConfigs.1.Overrides.2.MaxPrice"), "6.500000");
    assert_string_equal(P("LaunchTemplateConfigs.1.Overrides.3.AvailabilityZone"), "us-east-1c");
    assert_string_equal(P("TagSpecification.1.ResourceType"), "instance");
    assert_string_equal(P("TagSpecification.1.Tag.1.Key"), "castor:cluster");
    assert_string_equal(P("TagSpecification.1.Tag.1.Value"), "castor-test");
    assert_string_equal(P("TagSpecification.1.Tag.2.Key"), "castor:launch-token");
    assert_string_equal(P("TagSpecification.1.Tag.2.Value"), "launch-7f3a");
#undef P
}

/* Partial success is success: the instances started and, per pool that failed, its (type, zone,
 * market), AWS's code and castor's: capacity for ICE (its zone found through its subnet), quota
 * for the vCPU limit. */
static void create_fleet__partial_success(void **state)
{
    struct fixture *f = *state;
    struct ec2_fleet_result r = {0};

    fake_ec2_push(f->fake, 200, fleet_partial);
    assert_int_equal(ec2_create_fleet(f->client, &fleet_req, &r, NULL), 0);
    assert_string_equal(r.fleet_id, "fleet-123");
    assert_int_equal(r.n_instances, 2);
    assert_string_equal(r.instances[0].id, "i-0aaa");
    assert_string_equal(r.instances[1].id, "i-0bbb");
    assert_string_equal(r.instances[1].type, "g5.12xlarge");
    assert_string_equal(r.instances[1].zone, "us-east-1b");
    assert_int_equal(r.instances[1].market, EC2_SPOT);
    assert_int_equal(r.n_errors, 2);
    assert_int_equal(r.errors[0].err, ERR_CAPACITY);
    assert_string_equal(r.errors[0].type, "p4d.24xlarge");
    assert_string_equal(r.errors[0].zone, "us-east-1a");
    assert_int_equal(r.errors[0].market, EC2_SPOT);
    assert_string_equal(r.errors[0].code, "InsufficientInstanceCapacity");
    assert_int_equal(r.errors[1].err, ERR_QUOTA);
    assert_string_equal(r.errors[1].zone, "us-east-1c");
    assert_int_equal(r.errors[1].market, EC2_ON_DEMAND);
    ec2_fleet_result_free(&r);
    assert_null(r.instances);
}

static const char fleet_none[] =
    "<CreateFleetResponse " NS "><requestId>r-fleet-none</requestId><fleetId>fleet-0</fleetId>"
    "<errorSet><item><launchTemplateAndOverrides><overrides><instanceType>p4d.24xlarge"
    "</instanceType><subnetId>subnet-a</subnetId></overrides></launchTemplateAndOverrides>"
    "<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>"
    "<errorMessage>no p4d.24xlarge capacity</errorMessage></item><item>"
    "<launchTemplateAndOverrides><overrides><instanceType>g5.12xlarge</instanceType><subnetId>"
    "subnet-b</subnetId></overrides></launchTemplateAndOverrides><lifecycle>spot</lifecycle>"
    "<errorCode>MaxSpotInstanceCountExceeded</errorCode><errorMessage>Max spot instance count "
    "exceeded</errorMessage></item><item><launchTemplateAndOverrides><overrides><instanceType>"
    "p5.48xlarge</instanceType><availabilityZone>us-east-1c</availabilityZone></overrides>"
    "</launchTemplateAndOverrides><lifecycle>on-demand</lifecycle><errorCode>BrandNewCode"
    "</errorCode></item></errorSet><fleetInstanceSet/></CreateFleetResponse>";

/* A fleet that started nothing is still an answer: 0 instances and one error per pool (capacity,
 * quota, and ERR_UNKNOWN for a code castor does not know), each pool logged with the request
 * id. An error item without its errorCode is ERR_PARSE naming the call and the request id. */
static void create_fleet__all_errors(void **state)
{
    struct fixture *f = *state;
    struct ec2_fleet_result r = {0};
    struct error e = {0};
    int logs;

    fake_ec2_push(f->fake, 200, fleet_none);
    logs = f->h.n_logs;
    assert_int_equal(ec2_create_fleet(f->client, &fleet_req, &r, &e), 0);
    assert_int_equal(r.n_instances, 0);
    assert_int_equal(r.n_errors, 3);
    assert_int_equal(r.errors[0].err, ERR_CAPACITY);
    assert_string_equal(r.errors[0].zone, "us-east-1a");
    assert_int_equal(r.errors[1].err, ERR_QUOTA);
    assert_string_equal(r.errors[1].type, "g5.12xlarge");
    assert_int_equal(r.errors[1].market, EC2_SPOT);
    assert_int_equal(r.errors[2].err, ERR_UNKNOWN);
    assert_string_equal(r.errors[2].code, "BrandNewCode");
    assert_string_equal(r.errors[2].message, "");
    ec2_fleet_result_free(&r);
    assert_int_equal(f->h.n_logs, logs + 3);
    assert_non_null(strstr(f->h.last_log, "(p5.48xlarge, us-east-1c, on-demand)"));
    assert_non_null(strstr(f->h.last_log, "BrandNewCode"));
    assert_non_null(strstr(f->h.last_log, "r-fleet-none"));

    fake_ec2_push(f->fake, 200,
                  "<CreateFleetResponse " NS "><requestId>r-fleet-bad</requestId><errorSet><item>"
                  "<lifecycle>spot</lifecycle></item></errorSet></CreateFleetResponse>");
    assert_int_equal(ec2_create_fleet(f->client, &fleet_req, &r, &e), ERR_PARSE);
    keep(&e);
    assert_string_equal(e.file, "ec2 CreateFleet");
    assert_non_null(strstr(e.msg, "an error item without its fields"));
    assert_non_null(strstr(e.msg, "r-fleet-bad"));
    assert_null(r.errors);
}

static const char ice_500[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>"
    "InsufficientInstanceCapacity</Code><Message>We currently do not have sufficient p4d.24xlarge "
    "capacity in the Availability Zone you requested (us-east-1a).</Message></Error></Errors>"
    "<RequestID>r-ice</RequestID></Response>";

static const struct ec2_run_request run_req = {
    .launch_template_id = "lt-1",
    .instance_type = "p4d.24xlarge",
    .zone = "us-east-1a",
    .count = 2,
    .market = EC2_SPOT,
    .cluster_id = "castor-test",
    .launch_token = "launch-run-1",
};

/* RunInstances: ICE (EC2 sends it as a 500) is ERR_CAPACITY at once, not retried, with the pool
 * and the request id in the message; the spot options and zone were sent. */
static void run_instances__insufficient_capacity(void **state)
{
    struct fixture *f = *state;
    struct ec2_launched *l = NULL;
    struct error e = {0};
    size_t n = 0;

    fake_ec2_push(f->fake, 500, ice_500);
    assert_int_equal(ec2_run_instances(f->client, &run_req, &l, &n, &e), ERR_CAPACITY);
    keep(&e);
    assert_null(l);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    assert_int_equal(f->h.n_sleeps, 0);
    assert_non_null(strstr(e.msg, "(p4d.24xlarge, us-east-1a, spot)"));
    assert_non_null(strstr(e.msg, "InsufficientInstanceCapacity"));
    assert_non_null(strstr(e.msg, "r-ice"));
    assert_string_equal(fake_ec2_param(f->fake, 0, "InstanceMarketOptions.MarketType"), "spot");
    assert_string_equal(fake_ec2_param(f->fake, 0, "Placement.AvailabilityZone"), "us-east-1a");
    assert_string_equal(fake_ec2_param(f->fake, 0, "MaxCount"), "2");
    assert_string_equal(fake_ec2_param(f->fake, 0, "MinCount"), "1");
    assert_string_equal(fake_ec2_param(f->fake, 0, "ClientToken"), "launch-run-1");
}

/* Quotas: VcpuLimitExceeded and MaxSpotInstanceCountExceeded are ERR_QUOTA, not retried. */
static void run_instances__quota(void **state)
{
    struct fixture *f = *state;
    const char *codes[] = {"VcpuLimitExceeded", "MaxSpotInstanceCountExceeded"};
    struct ec2_launched *l = NULL;
    size_t n = 0;

    for (int i = 0; i < 2; i++) {
        char body[512];
        struct error e = {0};

        snprintf(body, sizeof(body),
                 "<Response><Errors><Error><Code>%s</Code><Message>limit</Message></Error>"
                 "</Errors><RequestID>r-quota-%d</RequestID></Response>",
                 codes[i], i);
        fake_ec2_push(f->fake, 400, body);
        assert_int_equal(ec2_run_instances(f->client, &run_req, &l, &n, &e), ERR_QUOTA);
        keep(&e);
        assert_non_null(strstr(e.msg, codes[i]));
        assert_non_null(strstr(e.msg, "spot"));
    }
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_int_equal(f->h.n_sleeps, 0);
}

static const char throttled[] =
    "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded."
    "</Message></Error></Errors><RequestID>r-throttle</RequestID></Response>";

/* Throttling twice, then success: three requests with the same ClientToken (the retry launches
 * nothing twice), two waits within the full-jitter bounds (100 then 200 ms at most), a log
 * line per retry with the request id, and the fleet read from the third answer. */
static void create_fleet__throttled_then_succeeds(void **state)
{
    struct fixture *f = *state;
    struct ec2_fleet_result r = {0};

    fake_ec2_push(f->fake, 503, throttled);
    fake_ec2_push(f->fake, 503, throttled);
    fake_ec2_push(f->fake, 200, fleet_partial);
    assert_int_equal(ec2_create_fleet(f->client, &fleet_req, &r, NULL), 0);
    assert_int_equal(r.n_instances, 2);
    ec2_fleet_result_free(&r);
    assert_int_equal(fake_ec2_requests(f->fake), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(fake_ec2_param(f->fake, i, "ClientToken"), "launch-7f3a");
    assert_int_equal(f->h.n_sleeps, 2);
    assert_true(f->h.sleeps[0] >= 0 && f->h.sleeps[0] <= 100);
    assert_true(f->h.sleeps[1] >= 0 && f->h.sleeps[1] <= 200);
    /* a line per retry, then one per pool of the fleet that could not serve */
    assert_int_equal(f->h.n_logs, 4);
    assert_non_null(strstr(hooks_captured(), "RequestLimitExceeded"));
    assert_non_null(strstr(hooks_captured(), "r-throttle"));
    assert_non_null(strstr(f->h.last_log, "VcpuLimitExceeded"));
}

/* A 500 InternalError and a 502 with an HTML page (no EC2 document), then success. */
static void call__server_errors_then_success(void **state)
{
    struct fixture *f = *state;
    struct ec2_instance_type *t = NULL;
    size_t n = 0;

    fake_ec2_push(f->fake, 500,
                  "<Response><Errors><Error><Code>InternalError</Code><Message>An internal error "
                  "has occurred</Message></Error></Errors><RequestID>r-500</RequestID></Response>");
    fake_ec2_push(f->fake, 502, "<html><body>Bad Gateway</body></html>");
    fake_ec2_push(f->fake, 200, types_page2);
    assert_int_equal(ec2_describe_instance_types(f->client, NULL, 0, &t, &n, NULL), 0);
    assert_int_equal(n, 1);
    free(t);
    assert_int_equal(f->h.n_sleeps, 2);
    assert_non_null(strstr(f->h.last_log, "HTTP 502"));
}

/* Always throttled: ERR_AGAIN after max_attempts (4 requests, 3 waits), saying so; the waits
 * are a function of the seed (a second client with the same seed waits the same), grow in their
 * bound and never pass the cap. */
static void call__gives_up_after_max_attempts(void **state)
{
    struct fixture *f = *state;
    struct ec2_config cfg = config(f, 42);
    struct ec2_client *c = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};
    long first[3];

    for (int i = 0; i < 4; i++)
        fake_ec2_push(f->fake, 503, throttled);
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_AGAIN);
    keep(&e);
    assert_null(doc);
    assert_int_equal(fake_ec2_requests(f->fake), 4);
    assert_int_equal(f->h.n_sleeps, 3);
    assert_non_null(strstr(e.msg, "gave up after 4 attempts"));
    assert_non_null(strstr(e.msg, "r-throttle"));
    memcpy(first, f->h.sleeps, sizeof(first));
    for (int i = 0; i < 3; i++)
        assert_true(first[i] <= (100L << i));
    f->h.n_sleeps = 0;
    assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
    for (int i = 0; i < 4; i++)
        fake_ec2_push(f->fake, 503, throttled);
    assert_int_equal(ec2_call(c, "DescribeInstances", NULL, &doc, &e), ERR_AGAIN);
    assert_memory_equal(first, f->h.sleeps, sizeof(first));
    ec2_client_free(c);
}

/* The cap bounds every wait however many attempts: base 100 ms, cap 150 ms, 8 attempts. */
static void call__backoff_capped(void **state)
{
    struct fixture *f = *state;
    struct ec2_config cfg = config(f, 7);
    struct ec2_client *c = NULL;
    struct xml_doc *doc = NULL;
    long most = 0;

    cfg.max_attempts = 8;
    cfg.backoff_cap_ms = 150;
    assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
    for (int i = 0; i < 8; i++)
        fake_ec2_push(f->fake, 503, throttled);
    assert_int_equal(ec2_call(c, "DescribeInstances", NULL, &doc, NULL), ERR_AGAIN);
    assert_int_equal(f->h.n_sleeps, 7);
    for (int i = 0; i < 7; i++) {
        assert_true(f->h.sleeps[i] >= 0 && f->h.sleeps[i] <= 150);
        most = f->h.sleeps[i] > most ? f->h.sleeps[i] : most;
    }
    /* full jitter is spread out, not stuck at zero or at the cap */
    assert_true(most > 0);
    ec2_client_free(c);
}

/* A request that is never answered times out (300 ms) and is retried; when every attempt times
 * out, ERR_IO saying it timed out. */
static void call__timeout_then_success_then_io_error(void **state)
{
    struct fixture *f = *state;
    struct ec2_instance_type *t = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};
    size_t n = 0;

    fake_ec2_push_hang(f->fake);
    fake_ec2_push(f->fake, 200, types_page2);
    assert_int_equal(ec2_describe_instance_types(f->client, NULL, 0, &t, &n, NULL), 0);
    assert_int_equal(n, 1);
    free(t);
    assert_int_equal(f->h.n_sleeps, 1);
    assert_non_null(strstr(f->h.last_log, "timed out"));
    for (int i = 0; i < 4; i++)
        fake_ec2_push_hang(f->fake);
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_IO);
    keep(&e);
    assert_non_null(strstr(e.msg, "timed out after 300 ms"));
    assert_int_equal(fake_ec2_requests(f->fake), 6);
}

/* A complete HTTP answer whose XML is cut: ERR_PARSE naming the call, not retried. An answer
 * cut short of its Content-Length: a transport failure, retried. */
static void call__truncated_xml(void **state)
{
    struct fixture *f = *state;
    char half[sizeof(types_page1)];
    struct ec2_instance_type *t = NULL;
    struct error e = {0};
    size_t n = 0;

    memcpy(half, types_page1, sizeof(types_page1) / 2);
    half[sizeof(types_page1) / 2] = '\0';
    fake_ec2_push(f->fake, 200, half);
    assert_int_equal(ec2_describe_instance_types(f->client, NULL, 0, &t, &n, &e), ERR_PARSE);
    keep(&e);
    assert_string_equal(e.file, "ec2 DescribeInstanceTypes");
    assert_non_null(strstr(e.msg, "not XML"));
    assert_non_null(strstr(e.msg, "(request id r-types-1)")); /* found in what came */
    assert_int_equal(f->h.n_sleeps, 0);
    fake_ec2_push_cut(f->fake, types_page2, 40);
    fake_ec2_push(f->fake, 200, types_page2);
    assert_int_equal(ec2_describe_instance_types(f->client, NULL, 0, &t, &n, &e), 0);
    assert_int_equal(n, 1);
    free(t);
    assert_int_equal(f->h.n_sleeps, 1);
}

/* An error code castor does not know: ERR_UNKNOWN with the code, message and request id, at
 * once. */
static void call__unknown_error_code(void **state)
{
    struct fixture *f = *state;
    struct xml_doc *doc = NULL;
    struct error e = {0};

    fake_ec2_push(f->fake, 400,
                  "<Response><Errors><Error><Code>FancyNewError</Code><Message>something new"
                  "</Message></Error></Errors><RequestID>r-new</RequestID></Response>");
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_UNKNOWN);
    keep(&e);
    assert_string_equal(e.file, "ec2 DescribeInstances");
    assert_non_null(strstr(e.msg, "FancyNewError"));
    assert_non_null(strstr(e.msg, "something new"));
    assert_non_null(strstr(e.msg, "r-new"));
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    assert_int_equal(f->h.n_logs, 1);
    assert_non_null(strstr(f->h.last_log, "r-new"));
}

/* Malformed answers, each a clear error for its call: an unexpected root element, a 400 that is
 * not an EC2 document (a refusal, ERR_INVAL: nothing was done), an instance without its id
 * (naming the request id), a launch time that does not parse. */
static void call__malformed_answers(void **state)
{
    struct fixture *f = *state;
    struct ec2_instance *in = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};
    size_t n = 0;

    fake_ec2_push(f->fake, 200, "<SomethingElse><requestId>r-odd</requestId></SomethingElse>");
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_PARSE);
    keep(&e);
    assert_non_null(strstr(e.msg, "SomethingElse"));
    assert_non_null(strstr(e.msg, "r-odd"));
    fake_ec2_push(f->fake, 400, "<html>no</html>");
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "HTTP 400"));
    assert_non_null(strstr(e.msg, "(request id (none))"));
    fake_ec2_push(f->fake, 200,
                  "<DescribeInstancesResponse " NS "><requestId>r-noid</requestId><reservationSet>"
                  "<item><instancesSet><item><instanceType>m5.large</instanceType><instanceState>"
                  "<name>running</name></instanceState></item></instancesSet></item>"
                  "</reservationSet></DescribeInstancesResponse>");
    assert_int_equal(ec2_describe_cluster(f->client, "castor-test", &in, &n, &e), ERR_PARSE);
    keep(&e);
    assert_null(in);
    assert_string_equal(e.file, "ec2 DescribeInstances");
    assert_non_null(strstr(e.msg, "r-noid"));
    fake_ec2_push(f->fake, 200,
                  "<DescribeInstancesResponse " NS "><requestId>r-time</requestId><reservationSet>"
                  "<item><instancesSet><item><instanceId>i-1</instanceId><instanceType>m5.large"
                  "</instanceType><instanceState><name>running</name></instanceState><launchTime>"
                  "yesterday</launchTime></item></instancesSet></item></reservationSet>"
                  "</DescribeInstancesResponse>");
    assert_int_equal(ec2_describe_cluster(f->client, "castor-test", &in, &n, &e), ERR_PARSE);
    assert_non_null(strstr(e.msg, "launchTime"));
}

/* Credentials AWS refuses as expired (or a clock it finds off) are fetched anew and the call is
 * asked again, once: then it succeeds, or it is ERR_PERM naming AWS's code and request id (not
 * ERR_UNKNOWN, which a launch would take for a refusal of the offer). */
static void call__expired_credentials_asked_again_once(void **state)
{
    static const char *const codes[] = {"ExpiredToken", "RequestExpired", "InvalidClientTokenId",
                                        "ExpiredTokenException"};
    struct fixture *f = *state;
    struct xml_doc *doc = NULL;
    struct error e = {0};
    char expired[256];
    size_t asked = 0;

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        snprintf(expired, sizeof(expired),
                 "<Response><Errors><Error><Code>%s</Code><Message>The security token included "
                 "in the request is expired</Message></Error></Errors><RequestID>r-exp</RequestID>"
                 "</Response>",
                 codes[i]);
        fake_ec2_push(f->fake, i == 0 ? 400 : 403, expired);
        fake_ec2_push(f->fake, 200,
                      "<DescribeInstancesResponse " NS "><requestId>r-ok</requestId>"
                      "<reservationSet/></DescribeInstancesResponse>");
        assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), 0);
        xml_free(doc);
        doc = NULL;
        assert_non_null(strstr(f->h.last_log, "credentials refused"));
        assert_non_null(strstr(f->h.last_log, codes[i]));
        fake_ec2_push(f->fake, 400, expired);
        fake_ec2_push(f->fake, 400, expired);
        assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_PERM);
        keep(&e);
        assert_non_null(strstr(e.msg, codes[i]));
        assert_non_null(strstr(e.msg, "r-exp"));
        asked += 4;
        assert_int_equal(fake_ec2_requests(f->fake), asked);
    }
}

/* A client holding a wrong secret: the fake's verifier refuses it (AuthFailure), and castor
 * reports ERR_INVAL without retrying; the right secret passes the same verifier. */
static void call__wrong_secret_refused(void **state)
{
    struct fixture *f = *state;
    struct aws_credential_config cc = {.imds_disabled = 1, .credentials_file = "/nonexistent"};
    struct aws_credential_source *wrong = NULL;
    struct ec2_config cfg = config(f, 3);
    struct ec2_client *c = NULL;
    struct xml_doc *doc = NULL;
    struct error e = {0};

    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-at-all", 1);
    assert_int_equal(aws_credential_source_new(&cc, &wrong), 0);
    cfg.credentials = wrong;
    assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
    assert_int_equal(ec2_call(c, "DescribeInstances", NULL, &doc, &e), ERR_INVAL);
    keep(&e);
    assert_non_null(strstr(e.msg, "AuthFailure"));
    assert_int_equal(fake_ec2_auth_failures(f->fake), 1);
    assert_int_equal(fake_ec2_requests(f->fake), 1);
    ec2_client_free(c);
    aws_credential_source_free(wrong);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
}

/* A server that echoes the session token in its error message: castor's message and log line
 * carry stars instead. */
static void call__echoed_token_is_scrubbed(void **state)
{
    struct fixture *f = *state;
    struct xml_doc *doc = NULL;
    struct error e = {0};

    fake_ec2_push(f->fake, 400,
                  "<Response><Errors><Error><Code>InvalidParameterValue</Code><Message>token "
                  "@TOKEN@ is odd</Message></Error></Errors><RequestID>r-echo</RequestID>"
                  "</Response>");
    assert_int_equal(ec2_call(f->client, "DescribeInstances", NULL, &doc, &e), ERR_INVAL);
    keep(&e);
    assert_null(strstr(e.msg, TOKEN));
    assert_non_null(strstr(e.msg, "token ****"));
    assert_null(strstr(f->h.last_log, TOKEN));
}

static const char cluster_page1[] =
    "<DescribeInstancesResponse " NS "><requestId>r-di-1</requestId><reservationSet><item>"
    "<reservationId>r-1</reservationId><instancesSet><item><instanceId>i-1</instanceId>"
    "<instanceType>p4d.24xlarge</instanceType><instanceState><code>16</code><name>running</name>"
    "</instanceState><placement><availabilityZone>us-east-1a</availabilityZone></placement>"
    "<privateIpAddress>10.0.0.5</privateIpAddress><launchTime>2023-11-14T22:00:00.000Z"
    "</launchTime><instanceLifecycle>spot</instanceLifecycle><tagSet><item><key>castor:cluster"
    "</key><value>castor-test</value></item><item><key>castor:launch-token</key><value>launch-7f3a"
    "</value></item></tagSet></item></instancesSet></item></reservationSet><nextToken>n2"
    "</nextToken></DescribeInstancesResponse>";

static const char cluster_page2[] =
    "<DescribeInstancesResponse " NS "><requestId>r-di-2</requestId><reservationSet><item>"
    "<instancesSet><item><instanceId>i-2</instanceId><instanceType>g5.12xlarge</instanceType>"
    "<instanceState><code>48</code><name>terminated</name></instanceState><stateReason><code>"
    "Server.SpotInstanceTermination</code></stateReason></item></instancesSet></item>"
    "</reservationSet></DescribeInstancesResponse>";

/* The cluster's instances over two pages, filtered by its tag: state, market, zone, address,
 * launch time, launch token tag and state reason. */
static void describe_cluster__pages_and_tags(void **state)
{
    struct fixture *f = *state;
    struct ec2_instance *in = NULL;
    size_t n = 0;

    fake_ec2_push(f->fake, 200, cluster_page1);
    fake_ec2_push(f->fake, 200, cluster_page2);
    assert_int_equal(ec2_describe_cluster(f->client, "castor-test", &in, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(fake_ec2_param(f->fake, 0, "Filter.1.Name"), "tag:castor:cluster");
    assert_string_equal(fake_ec2_param(f->fake, 0, "Filter.1.Value.1"), "castor-test");
    assert_string_equal(fake_ec2_param(f->fake, 1, "NextToken"), "n2");
    assert_string_equal(in[0].id, "i-1");
    assert_string_equal(in[0].state, "running");
    assert_int_equal(in[0].market, EC2_SPOT);
    assert_string_equal(in[0].zone, "us-east-1a");
    assert_string_equal(in[0].private_ip, "10.0.0.5");
    assert_int_equal(in[0].launch_time, 1700000000 - 800);
    assert_string_equal(in[0].launch_token, "launch-7f3a");
    assert_string_equal(in[1].state, "terminated");
    assert_int_equal(in[1].market, EC2_ON_DEMAND);
    assert_string_equal(in[1].state_reason, "Server.SpotInstanceTermination");
    assert_string_equal(in[1].launch_token, "");
    free(in);
}

/* A server that answers a page with the nextToken it was asked with would be asked for pages
 * without end (10,000 of them): the second time a token comes back, the list fails, ERR_PARSE
 * naming the call and the request id, after two calls. */
static void describe_cluster__a_repeated_next_token_ends_the_walk(void **state)
{
    struct fixture *f = *state;
    struct ec2_instance *in = (void *)1;
    struct error e = {0};
    size_t n = 9;

    fake_ec2_push(f->fake, 200, cluster_page1);
    fake_ec2_push(f->fake, 200, cluster_page1); /* asked with n2, answers n2 again */
    assert_int_equal(ec2_describe_cluster(f->client, "castor-test", &in, &n, &e), ERR_PARSE);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
    assert_string_equal(fake_ec2_param(f->fake, 1, "NextToken"), "n2");
    assert_non_null(strstr(e.msg, "nextToken"));
    assert_non_null(strstr(e.msg, "r-di-1"));
    assert_true(in == (void *)1 && n == 9);
}

/* 1500 ids go out in two calls of 1000 and 500. */
static void terminate_instances__batches(void **state)
{
    struct fixture *f = *state;
    static char names[1500][16];
    const char *ids[1500];
    const char *ok = "<TerminateInstancesResponse " NS "><requestId>r-t</requestId>"
                     "<instancesSet/></TerminateInstancesResponse>";

    for (int i = 0; i < 1500; i++) {
        snprintf(names[i], sizeof(names[i]), "i-%05d", i);
        ids[i] = names[i];
    }
    fake_ec2_push(f->fake, 200, ok);
    fake_ec2_push(f->fake, 200, ok);
    assert_int_equal(ec2_terminate_instances(f->client, ids, 1500, NULL), 0);
    assert_int_equal(fake_ec2_count_params(f->fake, 0, "InstanceId."), 1000);
    assert_int_equal(fake_ec2_count_params(f->fake, 1, "InstanceId."), 500);
    assert_string_equal(fake_ec2_param(f->fake, 1, "InstanceId.500"), "i-01499");
    assert_int_equal(ec2_terminate_instances(f->client, ids, 0, NULL), 0);
    assert_int_equal(fake_ec2_requests(f->fake), 2);
}

/* The endpoint: configured, else AWS_ENDPOINT_URL_EC2, else AWS_ENDPOINT_URL, else the
 * region's; plain http and TLS verification off are refused off loopback. */
static void endpoint__precedence_and_refusals(void **state)
{
    struct fixture *f = *state;
    struct ec2_config cfg = config(f, 1);
    struct ec2_client *c = NULL;
    struct error e = {0};
    char buf[128];

    assert_int_equal(ec2_resolve_endpoint("https://a/", "https://b", "https://c", "r", buf, 128),
                     0);
    assert_string_equal(buf, "https://a");
    assert_int_equal(ec2_resolve_endpoint("", "https://b", "https://c", "r", buf, 128), 0);
    assert_string_equal(buf, "https://b");
    assert_int_equal(ec2_resolve_endpoint(NULL, NULL, "https://c", "r", buf, 128), 0);
    assert_string_equal(buf, "https://c");
    assert_int_equal(ec2_resolve_endpoint(NULL, NULL, NULL, "eu-west-1", buf, 128), 0);
    assert_string_equal(buf, "https://ec2.eu-west-1.amazonaws.com");
    assert_int_equal(ec2_resolve_endpoint(NULL, NULL, NULL, "eu-west-1", buf, 8), ERR_RANGE);
    cfg.endpoint = NULL;
    setenv("AWS_ENDPOINT_URL_EC2", "https://ec2.example.test", 1);
    assert_int_equal(ec2_client_new(&cfg, &c, NULL), 0);
    assert_string_equal(ec2_client_endpoint(c), "https://ec2.example.test");
    ec2_client_free(c);
    unsetenv("AWS_ENDPOINT_URL_EC2");
    cfg.endpoint = "http://ec2.example.test";
    assert_int_equal(ec2_client_new(&cfg, &c, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "plain http"));
    cfg.endpoint = "https://ec2.example.test";
    cfg.tls_insecure = 1;
    assert_int_equal(ec2_client_new(&cfg, &c, &e), ERR_INVAL);
    assert_non_null(strstr(e.msg, "loopback"));
    cfg.endpoint = "https://127.0.0.1:9";
    assert_int_equal(ec2_client_new(&cfg, &c, &e), 0);
    ec2_client_free(c);
}

/* The classification of AWS's codes. */
static void error_code__classes(void **state)
{
    (void)state;
    assert_int_equal(ec2_error_code("InsufficientInstanceCapacity"), ERR_CAPACITY);
    assert_int_equal(ec2_error_code("VcpuLimitExceeded"), ERR_QUOTA);
    assert_int_equal(ec2_error_code("MaxSpotInstanceCountExceeded"), ERR_QUOTA);
    assert_int_equal(ec2_error_code("RequestLimitExceeded"), 0);
    assert_int_equal(ec2_error_code("InvalidInstanceID.NotFound"), ERR_NOENT);
    assert_int_equal(ec2_error_code("InvalidParameterValue"), ERR_INVAL);
    assert_int_equal(ec2_error_code("IdempotentParameterMismatch"), ERR_CONFLICT);
    assert_int_equal(ec2_error_code("AuthFailure"), ERR_INVAL);
    assert_int_equal(ec2_error_code("ExpiredToken"), ERR_PERM);
    assert_int_equal(ec2_error_code("RequestExpired"), ERR_PERM);
    assert_int_equal(ec2_error_code("InvalidClientTokenId"), ERR_PERM);
    assert_int_equal(ec2_error_code("SomethingElse"), ERR_UNKNOWN);
    assert_int_equal(ec2_error_code(NULL), ERR_UNKNOWN);
}

/* Last: nothing the client logged or returned over the whole run holds the secret or the
 * session token (and the capture is not empty, so the search means something). */
static void logs_and_errors__never_hold_a_secret(void **state)
{
    (void)state;
    assert_true(hooks_captured_len() > 1000);
    assert_null(strstr(hooks_captured(), SECRET));
    assert_null(strstr(hooks_captured(), TOKEN));
    assert_null(strstr(hooks_captured(), "wJalrXUtnFEMI"));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(describe_instance_types__pages_and_gpus),
        T(describe_spot_prices__pages_and_bad_price),
        T(create_fleet__request_shape),
        T(create_fleet__partial_success),
        T(create_fleet__all_errors),
        T(run_instances__insufficient_capacity),
        T(run_instances__quota),
        T(create_fleet__throttled_then_succeeds),
        T(call__server_errors_then_success),
        T(call__gives_up_after_max_attempts),
        T(call__backoff_capped),
        T(call__timeout_then_success_then_io_error),
        T(call__truncated_xml),
        T(call__unknown_error_code),
        T(call__malformed_answers),
        T(call__expired_credentials_asked_again_once),
        T(call__wrong_secret_refused),
        T(call__echoed_token_is_scrubbed),
        T(describe_cluster__pages_and_tags),
        T(describe_cluster__a_repeated_next_token_ends_the_walk),
        T(terminate_instances__batches),
        T(endpoint__precedence_and_refusals),
        cmocka_unit_test(error_code__classes),
        cmocka_unit_test(logs_and_errors__never_hold_a_secret),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
