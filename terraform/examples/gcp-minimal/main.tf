# gcp-minimal: one zone, one spot G2 type (one L4), the API reachable from the workers and one
# admin network. terraform/README.md walks through it.

terraform {
  required_version = ">= 1.9.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
  }
}

variable "project_id" {
  description = "The Google Cloud project."
  type        = string
}

variable "worker_image" {
  description = "A GPU image with the NVIDIA driver, curl and python3."
  type        = string
}

variable "castor_package_url" {
  description = "The castor tarball's https URL."
  type        = string
}

variable "castor_package_sha256" {
  description = "The tarball's SHA-256."
  type        = string
}

provider "google" {
  project = var.project_id
  region  = "us-central1"
}

module "castor" {
  source = "../../gcp"

  # the API without TLS on the VPC's network (tokens in clear text): the explicit opt-in
  api_plain_http        = true
  cluster_id            = "castor-min"
  project_id            = var.project_id
  region                = "us-central1"
  zones                 = ["us-central1-a"]
  machine_types         = [{ machine_type = "g2-standard-4" }]
  worker_image          = var.worker_image
  castor_package_url    = var.castor_package_url
  castor_package_sha256 = var.castor_package_sha256
  admin_cidrs           = ["10.128.0.0/9"]
  max_nodes             = 4
}

output "api_url" {
  description = "Set CASTOR_URL to this."
  value       = module.castor.api_url
}

output "admin_token_command" {
  description = "Run this for CASTOR_USER_TOKEN."
  value       = module.castor.admin_token_command
}

output "castor_config" {
  description = "The castor.yaml the controller runs (for castor teardown -c on an admin machine)."
  value       = module.castor.castor_config
}
