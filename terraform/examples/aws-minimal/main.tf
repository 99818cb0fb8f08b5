# aws-minimal: one zone, one spot GPU type, the API reachable from the workers and one admin
# network. terraform/README.md walks through it.

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

variable "subnet_id" {
  description = "A private subnet in us-east-1a for the controller and the workers (with a NAT gateway for their way out)."
  type        = string
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

variable "admin_cidr" {
  description = "The network the castor client runs in (a VPN's, a bastion's)."
  type        = string
  default     = "10.0.0.0/16"
}

provider "aws" {
  region = var.region
}

module "castor" {
  source = "../../aws"

  # the API without TLS on the VPC's network (tokens in clear text): the explicit opt-in
  api_plain_http        = true
  cluster_id            = "castor-min"
  region                = var.region
  vpc_id                = var.vpc_id
  controller_subnet_id  = var.subnet_id
  zones                 = { "${var.region}a" = var.subnet_id }
  instance_types        = [{ instance_type = "g5.xlarge", gpus = 1 }]
  worker_ami_id         = var.worker_ami_id
  castor_package_url    = var.castor_package_url
  castor_package_sha256 = var.castor_package_sha256
  admin_cidrs           = [var.admin_cidr]
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

output "controller_instance_id" {
  description = "The controller instance (stop it before castor teardown: terraform/README.md)."
  value       = module.castor.controller_instance_id
}

output "castor_config" {
  description = "The castor.yaml the controller runs (for castor teardown -c on an admin machine)."
  value       = module.castor.castor_config
}
