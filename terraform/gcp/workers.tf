# workers.tf: an instance template for workers, the same VM castor's gcp world creates
# (instances.insert from castor.yaml's cloud.instance: image, disk, subnetwork, service account,
# this startup script). castor itself does not launch from a template; this one is for starting a
# worker by hand (`gcloud compute instances create castor-manual-1 --source-instance-template=...`)
# and for the reader to see what a worker is.

resource "google_compute_instance_template" "worker" {
  project      = var.project_id
  name_prefix  = "${local.name}-worker-"
  description  = "castor ${var.cluster_id}: a GPU worker running castor-node"
  machine_type = var.machine_types[0].machine_type
  labels       = local.template_labels # not castor-cluster: castor would delete a worker started from it by hand
  disk {
    source_image = var.worker_image
    disk_size_gb = var.worker_disk_gb
    disk_type    = var.worker_disk_type
    boot         = true
    auto_delete  = true
  }
  dynamic "guest_accelerator" {
    for_each = var.machine_types[0].accelerator_type == null ? [] : [var.machine_types[0]]
    content {
      type  = guest_accelerator.value.accelerator_type
      count = guest_accelerator.value.accelerator_count
    }
  }
  network_interface {
    subnetwork = "projects/${var.project_id}/regions/${var.region}/subnetworks/${var.subnetwork}"
  }
  service_account {
    email  = google_service_account.worker.email
    scopes = ["cloud-platform"]
  }
  scheduling {
    provisioning_model          = var.machine_types[0].spot ? "SPOT" : "STANDARD"
    preemptible                 = var.machine_types[0].spot
    automatic_restart           = !var.machine_types[0].spot
    on_host_maintenance         = "TERMINATE"
    instance_termination_action = var.machine_types[0].spot ? "DELETE" : null
  }
  shielded_instance_config {
    enable_secure_boot          = false # the NVIDIA driver's modules are not signed for secure boot on every image
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }
  metadata = {
    block-project-ssh-keys = "true"
    enable-oslogin         = "TRUE"
    serial-port-enable     = "false"
    startup-script         = local.worker_script
  }
  lifecycle {
    create_before_destroy = true
  }
}
