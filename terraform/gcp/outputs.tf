# outputs.tf: what a person needs after `terraform apply`.

output "api_url" {
  description = "The controller's API at its internal address, as the workers and the admin networks reach it (set CASTOR_URL to it)."
  value       = local.api_url
}

output "public_api_url" {
  description = "The controller's API at its external address (controller_public_ip = true), else null."
  value       = var.controller_public_ip ? "http://${google_compute_address.controller_public[0].address}:${var.api_port}" : null
}

output "admin_token_secret" {
  description = "The Secret Manager secret holding the user (admin) token; the controller adds its version at first boot."
  value       = google_secret_manager_secret.token["user"].id
}

output "admin_token_command" {
  description = "The command that prints the admin token (for CASTOR_USER_TOKEN)."
  value       = "gcloud secrets versions access latest --project ${var.project_id} --secret ${local.secrets["user"]}"
}

output "controller_instance" {
  description = "The controller VM, castorctl-<cluster_id> (a shell: gcloud compute ssh --tunnel-through-iap, given a firewall rule admitting IAP's 35.235.240.0/20 on port 22, which the module does not make)."
  value       = google_compute_instance.controller.name
}

output "state_disk" {
  description = "The persistent disk with castor's state; it outlives the controller VM."
  value       = google_compute_disk.state.id
}

output "worker_instance_template" {
  description = "The workers' instance template (for starting a worker by hand)."
  value       = google_compute_instance_template.worker.self_link
}

output "worker_service_account" {
  description = "The workers' service account (the only source the API firewall admits besides admin_cidrs)."
  value       = google_service_account.worker.email
}

output "castor_config" {
  description = "The castor.yaml the controller runs (no secret in it)."
  value       = local.castor_yaml
}
