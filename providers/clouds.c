/* clouds.c: the registry of the clouds built into castor, chosen by name (`world:` in the
 * configuration). A cloud adds its line here and declares its constructor in cloud.h. */
#include <stdio.h>
#include <string.h>

#include "providers/cloud.h"

const struct cloud_entry cloud_registry[] = {
    {"fake", cloud_fake_new}, /* providers/fake.c: instances in memory or a file (tests, trials) */
    {"local", cloud_local_from_conf}, /* providers/local_conf.c: castor-node processes here */
    {"aws", cloud_aws_from_conf},     /* providers/aws/cloud_aws.c: EC2 */
    {"gcp", cloud_gcp_from_conf},     /* providers/gcp/cloud_gcp_conf.c: Compute Engine */
    {NULL, NULL},
};

cloud_new_fn cloud_find(const char *name)
{
    for (size_t i = 0; name && cloud_registry[i].name; i++)
        if (strcmp(cloud_registry[i].name, name) == 0)
            return cloud_registry[i].create;
    return NULL;
}

int cloud_new(const char *name, const struct conf_node *section, const char *base_dir,
              const struct cloud_host *host, struct cloud *out, struct error *e)
{
    cloud_new_fn create = cloud_find(name);
    char built[256] = "";
    size_t len = 0;

    if (create)
        return create(section, base_dir, host, out, e);
    for (size_t i = 0; cloud_registry[i].name && len < sizeof(built); i++)
        len += (size_t)snprintf(built + len, sizeof(built) - len, "%s%s", i ? ", " : "",
                                cloud_registry[i].name);
    return err_set(e, ERR_UNKNOWN, "", 0, 0,
                   "the world %.64s is not built into this castor (built: %s)",
                   name ? name : "(none)", built);
}
