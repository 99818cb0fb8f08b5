# workers.tf: the launch template castor's RunInstances starts every worker from (castor adds the
# instance type, the zone's subnet, the market and the castor:cluster and castor:launch-token
# tags); its user-data installs and starts castor-node.

data "aws_ami" "worker" {
  most_recent = true
  filter {
    name   = "image-id"
    values = [var.worker_ami_id]
  }
}

resource "aws_launch_template" "worker" {
  name_prefix            = "${local.name}-worker-"
  description            = "castor ${var.cluster_id}: GPU workers running castor-node"
  image_id               = var.worker_ami_id
  update_default_version = true
  vpc_security_group_ids = [aws_security_group.worker.id]
  ebs_optimized          = true
  # a worker that shuts itself down is terminated, not left stopped with its volume billed
  # (castor's RunInstances says so too; CreateFleet takes it from here only)
  instance_initiated_shutdown_behavior = "terminate"
  user_data = base64encode(templatefile("${path.module}/templates/worker-init.yaml.tftpl", {
    api_url        = local.api_url
    region         = var.region
    token_prefix   = local.token_prefix
    package_url    = var.castor_package_url
    package_sha256 = var.castor_package_sha256
    job_user       = var.worker_job_user
    job_uids       = var.worker_job_user == "" ? "" : var.worker_job_uids
  }))
  iam_instance_profile {
    arn = aws_iam_instance_profile.worker.arn
  }
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
    instance_metadata_tags      = "enabled"
  }
  monitoring {
    enabled = true
  }
  block_device_mappings {
    device_name = data.aws_ami.worker.root_device_name
    ebs {
      volume_size           = var.worker_volume_gb
      volume_type           = "gp3"
      encrypted             = true
      kms_key_id            = aws_kms_key.castor.arn
      delete_on_termination = true
    }
  }
  # volumes and interfaces carry the cluster's tag too (castor tags the instance itself)
  tag_specifications {
    resource_type = "volume"
    tags          = local.tags
  }
  tag_specifications {
    resource_type = "network-interface"
    tags          = local.tags
  }
  tags = local.tags
}
