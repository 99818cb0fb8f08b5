# secrets.tf: the API tokens in Secret Manager. Terraform makes the empty secrets and who may read
# them; the controller adds each token's first version at its first boot.

resource "google_secret_manager_secret" "token" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = each.value
  labels    = local.labels
  replication {
    auto {}
  }
}

# The controller makes and reads every token.
resource "google_secret_manager_secret_iam_member" "controller_access" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = google_secret_manager_secret.token[each.key].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.controller.email}"
}

resource "google_secret_manager_secret_iam_member" "controller_add" {
  for_each  = local.secrets
  project   = var.project_id
  secret_id = google_secret_manager_secret.token[each.key].secret_id
  role      = "roles/secretmanager.secretVersionAdder"
  member    = "serviceAccount:${google_service_account.controller.email}"
}

# The workers read the node token only: each job's replicas get the job's own token from its
# assignment, so the shared job token stays on the controller.
resource "google_secret_manager_secret_iam_member" "worker_access" {
  for_each  = toset(["node"])
  project   = var.project_id
  secret_id = google_secret_manager_secret.token[each.key].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.worker.email}"
}
