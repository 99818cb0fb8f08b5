# iam.tf: docs/gcp.md's minimal role for the controller, split in two: what reads (list, get,
# operations, the boot disk and its image, the subnetwork, the quotas) without a condition, and
# what creates, changes or deletes instances only for instances named castor-* (IAM conditions
# cannot read labels; castor names every instance castor-<hash>). The controller may act as the
# workers' service account only, not as any other.

resource "google_project_iam_custom_role" "controller_read" {
  project     = var.project_id
  role_id     = "castorRead_${replace(var.cluster_id, "-", "_")}"
  title       = "castor ${var.cluster_id}: list and read instances"
  description = "castor's controller: list, get, operations, boot disks and images, the subnetwork, quotas"
  permissions = [
    "compute.instances.get",
    "compute.instances.list",
    "compute.zoneOperations.get",
    "compute.disks.create",
    "compute.images.useReadOnly", # the boot image, when worker_image is in this project
    "compute.subnetworks.use",
    "compute.regions.get",  # the regional quotas (GPUs, CPUs) of the offers' regions
    "compute.projects.get", # the project-wide quotas (GPUS_ALL_REGIONS, CPUS_ALL_REGIONS)
  ]
}

resource "google_project_iam_custom_role" "controller_launch" {
  project     = var.project_id
  role_id     = "castorLaunch_${replace(var.cluster_id, "-", "_")}"
  title       = "castor ${var.cluster_id}: create and delete castor-* instances"
  description = "castor's controller: instances.create, delete and the set* it needs at creation"
  permissions = [
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
  ]
}

resource "google_project_iam_member" "controller_read" {
  project = var.project_id
  role    = google_project_iam_custom_role.controller_read.id
  member  = "serviceAccount:${google_service_account.controller.email}"
}

resource "google_project_iam_member" "controller_launch" {
  project = var.project_id
  role    = google_project_iam_custom_role.controller_launch.id
  member  = "serviceAccount:${google_service_account.controller.email}"
  condition {
    title       = "castor instances only"
    description = "instances whose name starts with castor- (castor names every instance castor-<hash>; the controller is castorctl-<id>, which this does not match)"
    expression  = "resource.name.extract(\"/instances/{name}\").startsWith(\"castor-\")"
  }
}

# The controller launches workers that run as the workers' account: actAs on that account only.
resource "google_service_account_iam_member" "controller_acts_as_worker" {
  service_account_id = google_service_account.worker.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.controller.email}"
}
