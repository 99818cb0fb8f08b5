/* fuzz_ec2.c: libFuzzer target for the EC2 answers (providers/aws/ec2.c over src/util/xml.c):
 * the readers of DescribeInstanceTypes, DescribeSpotPriceHistory, CreateFleet, RunInstances,
 * DescribeInstances and of an error document, each given every input. Those readers are static
 * in ec2.c; this file includes ec2.c to reach them (a fuzzing seam: it compiles the very code
 * castor runs, so nothing is copied, and the target links no second copy of ec2.o). */
#include "providers/aws/ec2.c"

#include "fuzz/fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct ec2_override overrides[] = {
        {.instance_type = "g5.xlarge", .subnet_id = "subnet-1", .zone = "us-east-1a"}};
    struct ec2_fleet_request req = {.overrides = overrides, .n_overrides = 1};
    struct ec2_fleet_result res = {0};
    struct ec2_launched *launched = NULL;
    page_reader readers[] = {read_types, read_prices, read_cluster};
    struct xml_doc *doc = NULL;
    struct aws_error ae;
    struct error e = {0};
    size_t n = 0;

    (void)read_error((const char *)data, size, &ae);
    if (xml_parse((const char *)data, size, &doc, &e) < 0)
        return 0;
    for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
        struct list x = {0};

        (void)readers[i](&x, doc, &e);
        free(x.items);
    }
    (void)read_fleet(doc, &req, &res, &e);
    ec2_fleet_result_free(&res);
    if (read_launched(doc, &launched, &n, &e) == 0)
        free(launched);
    xml_free(doc);
    return 0;
}
