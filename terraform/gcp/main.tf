# main.tf: castor's controller on Compute Engine: the VM running `castor run` under systemd (its
# configuration rendered from the module's variables), its SQLite state on a persistent disk that
# outlives the VM, and its service account.

locals {
  name = "castor-${var.cluster_id}"
  # castor lists its cluster's instances by the castor-cluster label and deletes any that no
  # launch of its own explains (a stray): that label goes on what is not a VM (the state disk, the
  # secrets), and castor puts it on the workers it creates itself. Never on the controller (it gets
  # castor-controller) nor on the instance template (a worker started by hand from it is not one
  # castor launched).
  labels            = merge(var.labels, { "castor-cluster" = var.cluster_id })
  controller_labels = merge(var.labels, { "castor-controller" = var.cluster_id })
  template_labels   = merge(var.labels, { "castor-template" = var.cluster_id })
  # not castor-*: the launch role's condition (iam.tf) lets castor delete instances named castor-*,
  # and must not match the controller
  controller_name = "castorctl-${var.cluster_id}"
  # the tokens live in Secret Manager: the controller adds their first versions at its first
  # boot and the workers read theirs at boot; Terraform never sees their values
  secrets = { for r in ["node", "job", "user"] : r => "${local.name}-${r}-token" }
  api_url = "http://${google_compute_address.controller.address}:${var.api_port}"
  offers = flatten([for m in var.machine_types : [for z in var.zones : {
    machine_type      = m.machine_type
    zone              = z
    spot              = m.spot
    accelerator_type  = m.accelerator_type == null ? "" : m.accelerator_type
    accelerator_count = m.accelerator_count
  }]])
  worker_script = templatefile("${path.module}/templates/worker-startup.sh.tftpl", {
    api_url        = local.api_url
    project        = var.project_id
    node_secret    = local.secrets["node"]
    package_url    = var.castor_package_url
    package_sha256 = var.castor_package_sha256
    job_user       = var.worker_job_user
    job_uids       = var.worker_job_user == "" ? "" : var.worker_job_uids
  })
  castor_yaml = templatefile("${path.module}/templates/castor.yaml.tftpl", {
    cluster         = var.cluster_id
    project         = var.project_id
    prices_file     = "/usr/local/share/castor/gcp-prices.yaml"
    offers          = local.offers
    image           = var.worker_image
    disk_gb         = var.worker_disk_gb
    disk_type       = var.worker_disk_type
    network         = "projects/${var.project_id}/global/networks/${var.network}"
    subnetwork      = "projects/${var.project_id}/regions/${var.region}/subnetworks/${var.subnetwork}"
    service_account = google_service_account.worker.email
    startup_script  = indent(6, local.worker_script)
    interval        = var.interval
    api_port        = var.api_port
    plain_http      = var.api_plain_http
    policy          = var.policy
    budget          = var.budget_per_hour
    value           = var.value_per_job_hour
    discount        = var.on_demand_discount
    max_nodes       = var.max_nodes
    attest          = var.worker_attestation
    api_url         = local.api_url
  })
}

resource "google_service_account" "controller" {
  project      = var.project_id
  account_id   = "castor-ctl-${substr(sha1(var.cluster_id), 0, 12)}" # 6 to 30 characters, whatever the id
  display_name = "castor ${var.cluster_id}: the controller"
}

resource "google_service_account" "worker" {
  project      = var.project_id
  account_id   = "castor-node-${substr(sha1(var.cluster_id), 0, 12)}"
  display_name = "castor ${var.cluster_id}: GPU workers"
}

# A fixed internal address: the workers' CASTOR_URL survives a replaced controller.
resource "google_compute_address" "controller" {
  project      = var.project_id
  name         = "${local.name}-controller"
  region       = var.region
  subnetwork   = "projects/${var.project_id}/regions/${var.region}/subnetworks/${var.subnetwork}"
  address_type = "INTERNAL"
}

resource "google_compute_address" "controller_public" {
  count   = var.controller_public_ip ? 1 : 0
  project = var.project_id
  name    = "${local.name}-ctl-public"
  region  = var.region
}

# The state: its own disk, so that a replaced controller finds the state where the last one left
# it. prevent_destroy: `terraform destroy` stops here; terraform/README.md says how to keep or
# delete it on purpose. Encrypted at rest by Google (Google-managed keys).
resource "google_compute_disk" "state" {
  #checkov:skip=CKV_GCP_37:encrypted at rest by Google; a customer-supplied key would have to be given at every start, which an unattended controller cannot do
  project = var.project_id
  name    = "${local.name}-state"
  zone    = var.zones[0]
  type    = "pd-balanced"
  size    = var.state_disk_gb
  labels  = local.labels
  lifecycle {
    prevent_destroy = true
  }
}

resource "google_compute_instance" "controller" {
  #checkov:skip=CKV_GCP_38:encrypted at rest by Google; a customer-supplied key would have to be given at every start, which an unattended controller cannot do
  #checkov:skip=CKV_GCP_40:an external address only with controller_public_ip = true (default false), for admin networks outside the VPC
  project                   = var.project_id
  name                      = local.controller_name
  zone                      = var.zones[0]
  machine_type              = var.controller_machine_type
  labels                    = local.controller_labels
  allow_stopping_for_update = true
  boot_disk {
    initialize_params {
      image = var.controller_image
      size  = 20
    }
  }
  network_interface {
    subnetwork = "projects/${var.project_id}/regions/${var.region}/subnetworks/${var.subnetwork}"
    network_ip = google_compute_address.controller.address
    dynamic "access_config" {
      for_each = var.controller_public_ip ? [1] : []
      content {
        nat_ip = google_compute_address.controller_public[0].address
      }
    }
  }
  service_account {
    email  = google_service_account.controller.email
    scopes = ["cloud-platform"]
  }
  shielded_instance_config {
    enable_secure_boot          = true
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }
  metadata = {
    block-project-ssh-keys = "true"
    enable-oslogin         = "TRUE"
    serial-port-enable     = "false"
  }
  # metadata_startup_script, not metadata's startup-script: the provider updates metadata in place
  # (the script would run only at the next boot), while a change here replaces the VM, as a change
  # of the configuration must (the new VM runs the new script, docs/terraform.md)
  metadata_startup_script = templatefile("${path.module}/templates/controller-startup.sh.tftpl", {
    castor_yaml    = local.castor_yaml
    castor_service = file("${path.module}/../../config/castor.service")
    package_url    = var.castor_package_url
    package_sha256 = var.castor_package_sha256
    project        = var.project_id
    node_secret    = local.secrets["node"]
    job_secret     = local.secrets["job"]
    user_secret    = local.secrets["user"]
  })
  lifecycle {
    ignore_changes = [attached_disk]
  }
}

resource "google_compute_attached_disk" "state" {
  project     = var.project_id
  disk        = google_compute_disk.state.id
  instance    = google_compute_instance.controller.id
  device_name = "castor-state"
}
