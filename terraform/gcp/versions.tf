# versions.tf: the Terraform and provider versions this module is written for. Terraform 1.9 or
# later: the validation blocks of variables.tf refer to other variables.
terraform {
  required_version = ">= 1.9.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
  }
}
