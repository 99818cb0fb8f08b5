# network.tf: the firewall rules. The controller's API admits the workers' service account and
# the listed admin networks only; the workers admit each other (distributed training).

resource "google_compute_firewall" "api_from_workers" {
  project                 = var.project_id
  name                    = "${local.name}-api-workers"
  network                 = var.network
  description             = "castor API from the workers"
  direction               = "INGRESS"
  source_service_accounts = [google_service_account.worker.email]
  target_service_accounts = [google_service_account.controller.email]
  allow {
    protocol = "tcp"
    ports    = [tostring(var.api_port)]
  }
}

resource "google_compute_firewall" "api_from_admins" {
  count                   = length(var.admin_cidrs) > 0 ? 1 : 0
  project                 = var.project_id
  name                    = "${local.name}-api-admins"
  network                 = var.network
  description             = "castor API from the admin networks"
  direction               = "INGRESS"
  source_ranges           = var.admin_cidrs
  target_service_accounts = [google_service_account.controller.email]
  allow {
    protocol = "tcp"
    ports    = [tostring(var.api_port)]
  }
}

resource "google_compute_firewall" "workers_to_workers" {
  project                 = var.project_id
  name                    = "${local.name}-workers"
  network                 = var.network
  description             = "castor workers of one cluster to each other (distributed training)"
  direction               = "INGRESS"
  source_service_accounts = [google_service_account.worker.email]
  target_service_accounts = [google_service_account.worker.email]
  allow {
    protocol = "tcp"
  }
  allow {
    protocol = "udp"
  }
}
