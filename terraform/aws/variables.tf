# variables.tf: the module's inputs. Every variable has a type and a description; the ones that
# can be wrong in a way Terraform would not notice have validation blocks.

variable "cluster_id" {
  description = "The castor cluster's id: every instance castor launches is tagged castor:cluster=<id>, and the IAM policy lets castor terminate only instances with this tag (the controller instance is tagged castor:controller=<id>, so castor cannot terminate it). 1 to 40 of letters, digits, '.', '_', '-', starting with a letter or digit."
  type        = string
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$", var.cluster_id))
    error_message = "cluster_id must be 1 to 40 letters, digits, '.', '_' or '-', starting with a letter or digit."
  }
}

variable "region" {
  description = "The AWS region, e.g. us-east-1 (the provider's region must be the same)."
  type        = string
  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as us-east-1."
  }
}

variable "vpc_id" {
  description = "The VPC of the controller and the workers."
  type        = string
  validation {
    condition     = can(regex("^vpc-[0-9a-f]{8,17}$", var.vpc_id))
    error_message = "vpc_id must be a VPC id (vpc-...)."
  }
}

variable "controller_subnet_id" {
  description = "The subnet of the controller instance; its state volume is made in this subnet's availability zone."
  type        = string
  validation {
    condition     = can(regex("^subnet-[0-9a-f]{8,17}$", var.controller_subnet_id))
    error_message = "controller_subnet_id must be a subnet id (subnet-...)."
  }
}

variable "zones" {
  description = "Where workers may run: availability zone => the subnet of the workers in that zone. Every (instance type, zone) pair is one offer castor may rent."
  type        = map(string)
  validation {
    condition     = length(var.zones) > 0
    error_message = "zones must name at least one availability zone (zone => subnet id)."
  }
  validation {
    condition     = alltrue([for z, s in var.zones : can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$", z)) && can(regex("^subnet-[0-9a-f]{8,17}$", s))])
    error_message = "zones maps availability zones (us-east-1a) to subnet ids (subnet-...)."
  }
}

variable "instance_types" {
  description = "The GPU instance types castor may rent: instance_type, gpus per instance (1 to 64), market (spot or on-demand; default spot), max_price ($/h, spot only; null: up to the on-demand price)."
  type = list(object({
    instance_type = string
    gpus          = number
    market        = optional(string, "spot")
    max_price     = optional(number)
  }))
  default = [{ instance_type = "g5.xlarge", gpus = 1 }]
  validation {
    condition     = length(var.instance_types) > 0
    error_message = "instance_types must list at least one instance type."
  }
  validation {
    condition     = alltrue([for t in var.instance_types : t.gpus >= 1 && t.gpus <= 64 && floor(t.gpus) == t.gpus && contains(["spot", "on-demand"], t.market) && coalesce(t.max_price, 1) > 0])
    error_message = "each instance type needs gpus a whole number from 1 to 64, market spot or on-demand, and max_price (if given) above zero."
  }
  validation {
    condition     = alltrue([for i, a in var.instance_types : alltrue([for j, b in var.instance_types : i == j || a.instance_type != b.instance_type || a.market != b.market])])
    error_message = "instance_types must not list an instance type twice in one market: each pair is one castor offer per zone, and castor refuses an offer listed twice."
  }
  validation {
    condition     = length(var.instance_types) * length(var.zones) <= 64
    error_message = "castor takes at most 64 offers: instance_types times zones must be 64 or fewer."
  }
}

variable "worker_ami_id" {
  description = "The workers' image: a GPU image with the NVIDIA driver, cloud-init and the AWS CLI (an AWS Deep Learning Base AMI, for example)."
  type        = string
  validation {
    condition     = can(regex("^ami-[0-9a-f]{8,17}$", var.worker_ami_id))
    error_message = "worker_ami_id must be an AMI id (ami-...)."
  }
}

variable "controller_ami_id" {
  description = "The controller's image (Debian 12 or Ubuntu 22.04+ with cloud-init and the AWS CLI). null: the latest Debian 12 AMI from its public SSM parameter."
  type        = string
  default     = null
  validation {
    condition     = var.controller_ami_id == null || can(regex("^ami-[0-9a-f]{8,17}$", var.controller_ami_id))
    error_message = "controller_ami_id must be null or an AMI id (ami-...)."
  }
}

variable "controller_instance_type" {
  description = "The controller's instance type (castor needs little: one core, 1 GiB)."
  type        = string
  default     = "t3.small"
}

variable "castor_package_url" {
  description = "An https URL of a castor tarball (bin/castor, bin/castor-node, share/castor/*) that the controller and the workers install into /usr/local at first boot (terraform/README.md says how to make one)."
  type        = string
  validation {
    condition     = can(regex("^https://[^/]+/.+", var.castor_package_url))
    error_message = "castor_package_url must be an https:// URL."
  }
}

variable "castor_package_sha256" {
  description = "The SHA-256 of the tarball at castor_package_url (64 hex digits); an instance refuses a tarball that does not match."
  type        = string
  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.castor_package_sha256))
    error_message = "castor_package_sha256 must be 64 lowercase hex digits."
  }
}

variable "admin_cidrs" {
  description = "Networks allowed to reach the controller's API (the castor client, dashboards) besides the workers. 0.0.0.0/0 or ::/0 needs allow_public_admin = true."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for c in var.admin_cidrs : can(cidrhost(c, 0))])
    error_message = "admin_cidrs must be CIDR blocks such as 10.0.0.0/16."
  }
  validation {
    condition     = var.allow_public_admin || !anytrue([for c in var.admin_cidrs : endswith(c, "/0")])
    error_message = "admin_cidrs opens the API to the whole internet (a /0 block); set allow_public_admin = true if that is really meant."
  }
}

variable "allow_public_admin" {
  description = "The explicit opt-in for an admin CIDR of 0.0.0.0/0 or ::/0 (the API is then reachable from anywhere, guarded by its bearer tokens only)."
  type        = bool
  default     = false
}

variable "api_plain_http" {
  description = "The explicit opt-in to serving the controller's API over plain HTTP (this module does not set up TLS for it yet): the workers' and the admins' tokens then cross the network in clear text, so keep admin_cidrs private or put a TLS proxy in front (docs/security.md, docs/terraform.md)."
  type        = bool
  default     = false
  validation {
    condition     = var.api_plain_http
    error_message = "This module serves the API without TLS: set api_plain_http = true to accept plain HTTP on the controller's network (tokens in clear text), or terminate TLS in front of it."
  }
}

variable "controller_public_ip" {
  description = "Give the controller a public address (for admin CIDRs outside the VPC). Default: private only."
  type        = bool
  default     = false
}

variable "api_port" {
  description = "The controller's API port."
  type        = number
  default     = 8470
  validation {
    condition     = var.api_port >= 1 && var.api_port <= 65535 && floor(var.api_port) == var.api_port
    error_message = "api_port must be a whole number from 1 to 65535."
  }
}

variable "budget_per_hour" {
  description = "The fleet's budget in $/h: castor's planner then buys the most goodput for at most this much (mode budget). 0: no budget; the planner adds a GPU while the job-hours it saves, at value_per_job_hour, pay for it (mode efficiency)."
  type        = number
  default     = 0
  validation {
    condition     = var.budget_per_hour >= 0 && var.budget_per_hour <= 10000000
    error_message = "budget_per_hour must be from 0 (no budget) to 1e7 $/h; a budget below zero makes no sense."
  }
}

variable "value_per_job_hour" {
  description = "Mode efficiency: what an hour of a job's completion time is worth, in $ (0.001 to 1e6)."
  type        = number
  default     = 1.2
  validation {
    condition     = var.value_per_job_hour >= 0.001 && var.value_per_job_hour <= 1000000
    error_message = "value_per_job_hour must be from 0.001 to 1e6."
  }
}

variable "on_demand_discount" {
  description = "The fraction castor takes off the cloud's on-demand list prices when it plans and counts costs (a Savings Plan or an Enterprise Discount Program; 0 to 0.99, e.g. 0.28). 0: the list prices."
  type        = number
  default     = 0
  validation {
    condition     = var.on_demand_discount >= 0 && var.on_demand_discount <= 0.99
    error_message = "on_demand_discount must be from 0 to 0.99."
  }
}

variable "max_nodes" {
  description = "The most worker instances castor holds at once (1 to 4096)."
  type        = number
  default     = 16
  validation {
    condition     = var.max_nodes >= 1 && var.max_nodes <= 4096 && floor(var.max_nodes) == var.max_nodes
    error_message = "max_nodes must be a whole number from 1 to 4096."
  }
}

variable "policy" {
  description = "The allocation policy: pollux, castor, optimus or tiresias (docs/scheduler.md)."
  type        = string
  default     = "pollux"
  validation {
    condition     = contains(["pollux", "castor", "optimus", "tiresias"], var.policy)
    error_message = "policy must be pollux, castor, optimus or tiresias."
  }
}

variable "interval" {
  description = "Seconds between the controller's ticks (1 to 86400)."
  type        = number
  default     = 60
  validation {
    condition     = var.interval >= 1 && var.interval <= 86400 && floor(var.interval) == var.interval
    error_message = "interval must be a whole number of seconds from 1 to 86400."
  }
}

variable "state_volume_gb" {
  description = "The size of the encrypted EBS volume that keeps castor's SQLite state (it outlives the controller instance)."
  type        = number
  default     = 10
  validation {
    condition     = var.state_volume_gb >= 1 && var.state_volume_gb <= 16384
    error_message = "state_volume_gb must be from 1 to 16384."
  }
}

variable "worker_volume_gb" {
  description = "The workers' root volume size in GiB (datasets and checkpoints are the jobs' business)."
  type        = number
  default     = 200
  validation {
    condition     = var.worker_volume_gb >= 8 && var.worker_volume_gb <= 16384
    error_message = "worker_volume_gb must be from 8 to 16384."
  }
}

variable "tags" {
  description = "Tags added to every resource the module makes. castor:cluster=<cluster_id> is added to all but the controller instance, which gets castor:controller=<cluster_id> instead: castor terminates, as a stray, any instance with its cluster's tag that it did not launch. So castor:cluster cannot be given here (nor in the provider's default_tags)."
  type        = map(string)
  default     = {}
  validation {
    condition     = !contains(keys(var.tags), "castor:cluster")
    error_message = "tags must not set castor:cluster: the module adds it where it belongs, and on the controller instance castor would take it for a stray worker and terminate it."
  }
}

variable "identity_certificate" {
  description = "AWS's RSA public certificate (PEM) for var.region's instance identity document signatures (the EC2 User Guide's \"AWS public certificates for instance identity document signatures\", the RSA one). When set, the controller admits only workers that prove their instance with its signed identity document, in this account and region (api.attestation), so that the node token alone registers no made-up node (docs/security.md). Default: not asked."
  type        = string
  default     = ""
  validation {
    condition     = var.identity_certificate == "" || (strcontains(var.identity_certificate, "-----BEGIN CERTIFICATE-----") && strcontains(var.identity_certificate, "-----END CERTIFICATE-----"))
    error_message = "identity_certificate must be empty or one PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)."
  }
}

variable "worker_job_user" {
  description = "The user the jobs' replicas run as on the workers (CASTOR_NODE_RUN_AS; made at boot, home /var/lib/<user>), so that a job's code cannot read the node's token, which only root reads, nor the agent's memory or environment. A job's workdir and files must be the user's to write. \"\" runs them as root, as castor-node itself (docs/security.md)."
  type        = string
  default     = "castor-job"
  validation {
    condition     = var.worker_job_user == "" || (can(regex("^[a-z_][a-z0-9_-]{0,31}$", var.worker_job_user)) && var.worker_job_user != "root")
    error_message = "worker_job_user must be \"\" or a user name (a lower-case letter or _, then up to 31 of a-z, 0-9, _ and -), not root."
  }
}

variable "worker_job_uids" {
  description = "With worker_job_user, a range FIRST-LAST of uids no account of the worker image holds (1000000-1000999, say: above the uids systemd gives dynamic users, 61184-65519), one per job on a worker (CASTOR_NODE_RUN_AS_UIDS), so that two jobs on one worker cannot read each other's environment (their job tokens) or memory. Their files are the user's group's to read and write (umask 007: not kept apart), so that a job placed again as another uid goes on with its checkpoints; a job's workdir must be writable by that group, and HOME stays the user's, which the jobs' uids do not write (point caches at the workdir). castor-node refuses a range with an account's uid at start. \"\" (the default): every job as worker_job_user (docs/local.md)."
  type        = string
  default     = ""
  validation {
    # the comparison inside can(): a false one fails the regex, a bad number tonumber, and can
    # turns either into false (Terraform evaluates both sides of && and ||)
    condition = var.worker_job_uids == "" || (
      can(regex("^[1-9][0-9]{0,8}-[1-9][0-9]{0,8}$", var.worker_job_uids)) &&
      can(regex("^true$", tostring(
        tonumber(split("-", var.worker_job_uids)[0]) <= tonumber(split("-", var.worker_job_uids)[1]) &&
      tonumber(split("-", var.worker_job_uids)[1]) - tonumber(split("-", var.worker_job_uids)[0]) < 65536)))
    )
    error_message = "worker_job_uids must be \"\" or FIRST-LAST: uids from 1 to 999999999, the first not above the last, at most 65536 of them."
  }
}
