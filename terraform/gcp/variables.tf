# variables.tf: the module's inputs. Every variable has a type and a description; the ones that
# can be wrong in a way Terraform would not notice have validation blocks.

variable "cluster_id" {
  description = "The castor cluster's id: every instance castor launches carries the label castor-cluster=<id>, and the module's resource names contain it. 1 to 30 of lowercase letters, digits and '-', starting with a letter and not ending with '-'."
  type        = string
  validation {
    condition     = can(regex("^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$", var.cluster_id))
    error_message = "cluster_id must be 1 to 30 lowercase letters, digits and '-', starting with a letter and not ending with '-' (it is a label value and part of resource names)."
  }
}

variable "project_id" {
  description = "The Google Cloud project."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project id (6 to 30 lowercase letters, digits and hyphens)."
  }
}

variable "region" {
  description = "The region of the controller and the workers' subnetwork, e.g. us-central1."
  type        = string
  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]$", var.region))
    error_message = "region must be a Compute Engine region such as us-central1."
  }
}

variable "zones" {
  description = "The zones of var.region where workers may run; every (machine type, zone) pair is one offer. The controller runs in the first."
  type        = list(string)
  validation {
    condition     = length(var.zones) > 0
    error_message = "zones must name at least one zone."
  }
  validation {
    condition     = alltrue([for z in var.zones : startswith(z, "${var.region}-") && can(regex("^[a-z]+-[a-z]+[0-9]-[a-z]$", z))])
    error_message = "every zone must be a zone of var.region (us-central1-a for us-central1)."
  }
}

variable "network" {
  description = "The VPC network's name."
  type        = string
  default     = "default"
}

variable "subnetwork" {
  description = "The subnetwork (in var.region) of the controller and the workers. Workers have no external address: give it Cloud NAT (or Private Google Access and a package mirror)."
  type        = string
  default     = "default"
}

variable "machine_types" {
  description = "What castor may rent: machine_type; for N1 types the attached GPU as accelerator_type and accelerator_count (1 to 16); spot (default true). A2, A3 and G2 types come with their GPUs."
  type = list(object({
    machine_type      = string
    accelerator_type  = optional(string)
    accelerator_count = optional(number, 1)
    spot              = optional(bool, true)
  }))
  default = [{ machine_type = "g2-standard-4" }]
  validation {
    condition     = length(var.machine_types) > 0
    error_message = "machine_types must list at least one machine type."
  }
  validation {
    condition     = alltrue([for m in var.machine_types : m.accelerator_type == null || (startswith(m.machine_type, "n1-") && m.accelerator_count >= 1 && m.accelerator_count <= 16)])
    error_message = "accelerator_type is for N1 machine types only, with accelerator_count from 1 to 16."
  }
  validation {
    condition     = alltrue([for i, a in var.machine_types : alltrue([for j, b in var.machine_types : i == j || a.machine_type != b.machine_type || a.spot != b.spot || a.accelerator_type != b.accelerator_type || (a.accelerator_type != null && a.accelerator_count != b.accelerator_count)])])
    error_message = "machine_types must not list a machine type twice with the same GPUs (accelerator_type and accelerator_count) and spot: each is one castor offer per zone, and castor refuses an offer listed twice."
  }
  validation {
    condition     = length(var.machine_types) * length(var.zones) <= 64
    error_message = "castor takes at most 64 offers: machine_types times zones must be 64 or fewer."
  }
}

variable "worker_image" {
  description = "The workers' boot image: a GPU image with the NVIDIA driver, curl and python3, on Debian 12 or Ubuntu 22.04 or later (castor-node needs glibc 2.34 and libcrypto.so.3; Debian 11 images lack them), e.g. the Deep Learning VM family projects/deeplearning-platform-release/global/images/family/common-cu129-ubuntu-2204-nvidia-580. An image in this project the module lets the controller use; a private one in another project needs roles/compute.imageUser there for the controller's service account."
  type        = string
  validation {
    condition     = can(regex("^(projects/[^/]+/global/images/|https://)", var.worker_image))
    error_message = "worker_image must be an image path such as projects/PROJECT/global/images/family/FAMILY."
  }
}

variable "controller_image" {
  description = "The controller's boot image."
  type        = string
  default     = "projects/debian-cloud/global/images/family/debian-12"
}

variable "controller_machine_type" {
  description = "The controller's machine type (castor needs little)."
  type        = string
  default     = "e2-small"
}

variable "castor_package_url" {
  description = "An https URL of a castor tarball (bin/castor, bin/castor-node, share/castor/*) that the controller and the workers install into /usr/local at first boot (terraform/README.md)."
  type        = string
  validation {
    condition     = can(regex("^https://[^/]+/.+", var.castor_package_url))
    error_message = "castor_package_url must be an https:// URL."
  }
}

variable "castor_package_sha256" {
  description = "The SHA-256 of the tarball (64 hex digits); an instance refuses a tarball that does not match."
  type        = string
  validation {
    condition     = can(regex("^[0-9a-f]{64}$", var.castor_package_sha256))
    error_message = "castor_package_sha256 must be 64 lowercase hex digits."
  }
}

variable "admin_cidrs" {
  description = "Networks allowed to reach the controller's API besides the workers. 0.0.0.0/0 or ::/0 needs allow_public_admin = true."
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
  description = "The explicit opt-in for an admin CIDR of 0.0.0.0/0 or ::/0."
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
  description = "Give the controller an external address (for admin CIDRs outside the VPC). Default: internal only."
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
  description = "The fleet's budget in $/h (castor's mode budget). 0: no budget (mode efficiency, with value_per_job_hour)."
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
  description = "The fraction castor takes off the cloud's on-demand list prices when it plans and counts costs (a committed-use or negotiated discount; 0 to 0.99, e.g. 0.28). 0: the list prices."
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

variable "state_disk_gb" {
  description = "The size of the persistent disk that keeps castor's SQLite state (it outlives the controller instance)."
  type        = number
  default     = 10
  validation {
    condition     = var.state_disk_gb >= 10 && var.state_disk_gb <= 65536
    error_message = "state_disk_gb must be from 10 to 65536."
  }
}

variable "worker_disk_gb" {
  description = "The workers' boot disk size in GB (10 to 65536)."
  type        = number
  default     = 200
  validation {
    condition     = var.worker_disk_gb >= 10 && var.worker_disk_gb <= 65536
    error_message = "worker_disk_gb must be from 10 to 65536."
  }
}

variable "worker_disk_type" {
  description = "The workers' boot disk type: pd-standard (Compute Engine's default; counted in the region's DISKS_TOTAL_GB quota), pd-balanced or pd-ssd (faster; counted in SSD_TOTAL_GB, often a few hundred GB in a new project: worker_disk_gb times the nodes must fit)."
  type        = string
  default     = "pd-standard"
  validation {
    condition     = contains(["pd-standard", "pd-balanced", "pd-ssd"], var.worker_disk_type)
    error_message = "worker_disk_type must be pd-standard, pd-balanced or pd-ssd."
  }
}

variable "labels" {
  description = "Labels added to every resource the module makes. castor-cluster=<cluster_id> is added to the state disk and the secrets, never to a VM or the instance template: castor deletes, as a stray, any instance with its cluster's label that it did not create (the controller gets castor-controller=<cluster_id>). So castor-cluster cannot be given here (nor in the provider's default_labels)."
  type        = map(string)
  default     = {}
  validation {
    condition     = !contains(keys(var.labels), "castor-cluster")
    error_message = "labels must not set castor-cluster: the module adds it where it belongs, and on the controller VM castor would take it for a stray worker and delete it."
  }
}

variable "worker_attestation" {
  description = "Admit only workers that prove their instance with its identity token signed by Google (api.attestation: the controller keeps Google's certificates fresh from googleapis.com hourly, and checks each registration's token for the controller's URL, this project and the worker's own instance), so that the node token alone registers no made-up node (docs/security.md)."
  type        = bool
  default     = true
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
