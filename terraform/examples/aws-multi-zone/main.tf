# aws-multi-zone: three zones, spot and on-demand types of one and four GPUs, a budget of $40/h:
# castor rents where capacity and price are best and fails over when a zone runs out.

terraform {
  required_version = ">= 1.9.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.60"
    }
  }
}

variable "region" {
  description = "The AWS region."
  type        = string
  default     = "us-east-1"
}

variable "vpc_id" {
  description = "The VPC."
  type        = string
}

variable "subnets" {
  description = "Availability zone => private subnet of the workers (the controller runs in the first)."
  type        = map(string)
}

variable "worker_ami_id" {
  description = "A GPU image with the NVIDIA driver, cloud-init and the AWS CLI."
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

variable "admin_cidrs" {
  description = "The networks the castor client runs in."
  type        = list(string)
  default     = ["10.0.0.0/16"]
}

provider "aws" {
  region = var.region
}

module "castor" {
  source = "../../aws"

  # the API without TLS on the VPC's network (tokens in clear text): the explicit opt-in
  api_plain_http       = true
  cluster_id           = "castor-prod"
  region               = var.region
  vpc_id               = var.vpc_id
  controller_subnet_id = values(var.subnets)[0]
  zones                = var.subnets
  instance_types = [
    { instance_type = "g5.xlarge", gpus = 1 },
    { instance_type = "g5.12xlarge", gpus = 4 },
    { instance_type = "g5.12xlarge", gpus = 4, market = "on-demand" },
  ]
  worker_ami_id         = var.worker_ami_id
  castor_package_url    = var.castor_package_url
  castor_package_sha256 = var.castor_package_sha256
  admin_cidrs           = var.admin_cidrs
  budget_per_hour       = 40
  max_nodes             = 32
  tags                  = { team = "ml-platform" }
}

output "api_url" {
  description = "Set CASTOR_URL to this."
  value       = module.castor.api_url
}

output "admin_token_command" {
  description = "Run this for CASTOR_USER_TOKEN."
  value       = module.castor.admin_token_command
}

output "controller_instance_id" {
  description = "The controller instance (stop it before castor teardown: terraform/README.md)."
  value       = module.castor.controller_instance_id
}

output "castor_config" {
  description = "The castor.yaml the controller runs (for castor teardown -c on an admin machine)."
  value       = module.castor.castor_config
}
