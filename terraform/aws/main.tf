# main.tf: castor's controller on EC2: the instance running `castor run` under systemd, its
# configuration rendered from the module's variables, its SQLite state on an encrypted EBS volume
# that outlives the instance, and the KMS key that guards the volume and the API tokens.

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_subnet" "controller" {
  id = var.controller_subnet_id
}

data "aws_ssm_parameter" "debian12" {
  count = var.controller_ami_id == null ? 1 : 0
  name  = "/aws/service/debian/release/12/latest/amd64"
}

locals {
  name = "castor-${var.cluster_id}"
  # castor lists its cluster's instances by the castor:cluster tag and terminates any that no
  # launch of its own explains (a stray): that tag goes on what is not an instance, and castor puts
  # it on the workers it launches itself. Never on the controller, which carries castor:controller
  # (and which the controller's role cannot terminate: TerminateOnlyThisClustersInstances).
  tags            = merge(var.tags, { "castor:cluster" = var.cluster_id })
  controller_tags = merge(var.tags, { "castor:controller" = var.cluster_id })
  account         = data.aws_caller_identity.current.account_id
  partition       = data.aws_partition.current.partition
  # the tokens live in SSM Parameter Store as SecureStrings: the controller makes them at first
  # boot and the workers read theirs at boot; Terraform never sees their values
  token_prefix = "/castor/${var.cluster_id}"
  token_arns   = { for r in ["node", "job", "user"] : r => "arn:${local.partition}:ssm:${var.region}:${local.account}:parameter${local.token_prefix}/${r}-token" }
  api_url      = "http://${aws_network_interface.controller.private_ip}:${var.api_port}"
  # every (instance type, zone) is one offer, named by castor "<type>/<zone>/<market>"
  offers = flatten([for t in var.instance_types : [for z, s in var.zones : {
    instance_type = t.instance_type
    zone          = z
    subnet        = s
    market        = t.market
    gpus          = t.gpus
    max_price     = t.max_price == null ? "" : tostring(t.max_price)
  }]])
  castor_yaml = templatefile("${path.module}/templates/castor.yaml.tftpl", {
    cluster         = var.cluster_id
    region          = var.region
    launch_template = aws_launch_template.worker.id
    prices_file     = "/usr/local/share/castor/aws-prices.yaml"
    volume_gb       = var.worker_volume_gb
    offers          = local.offers
    interval        = var.interval
    api_port        = var.api_port
    plain_http      = var.api_plain_http
    policy          = var.policy
    budget          = var.budget_per_hour
    value           = var.value_per_job_hour
    discount        = var.on_demand_discount
    max_nodes       = var.max_nodes
    attest          = var.identity_certificate != ""
    account         = local.account
  })
}

resource "aws_kms_key" "castor" {
  description             = "castor ${var.cluster_id}: the state volume and the API tokens"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.kms.json
  tags                    = local.tags
}

resource "aws_kms_alias" "castor" {
  name          = "alias/castor-${replace(var.cluster_id, ".", "-")}" # an alias takes no '.' 
  target_key_id = aws_kms_key.castor.key_id
}

# The state: its own volume, so that a replaced controller finds the state where the last one
# left it. prevent_destroy: `terraform destroy` stops here; terraform/README.md says how to keep
# or delete it on purpose.
resource "aws_ebs_volume" "state" {
  availability_zone = data.aws_subnet.controller.availability_zone
  size              = var.state_volume_gb
  type              = "gp3"
  encrypted         = true
  kms_key_id        = aws_kms_key.castor.arn
  tags              = merge(local.tags, { Name = "${local.name}-state" })
  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_network_interface" "controller" {
  subnet_id       = var.controller_subnet_id
  security_groups = [aws_security_group.controller.id]
  description     = "castor ${var.cluster_id}: the controller's API address, stable across replacements"
  tags            = merge(local.tags, { Name = "${local.name}-controller" })
}

resource "aws_instance" "controller" {
  ami                         = var.controller_ami_id != null ? var.controller_ami_id : data.aws_ssm_parameter.debian12[0].insecure_value
  instance_type               = var.controller_instance_type
  iam_instance_profile        = aws_iam_instance_profile.controller.name
  monitoring                  = true
  ebs_optimized               = true
  user_data_replace_on_change = true
  user_data = templatefile("${path.module}/templates/controller-init.yaml.tftpl", {
    castor_yaml    = indent(6, local.castor_yaml)
    castor_service = indent(6, file("${path.module}/../../config/castor.service"))
    package_url    = var.castor_package_url
    package_sha256 = var.castor_package_sha256
    region         = var.region
    token_prefix   = local.token_prefix
    kms_key        = aws_kms_key.castor.arn
    state_volume   = replace(aws_ebs_volume.state.id, "-", "")
    identity_cert  = indent(6, trimspace(var.identity_certificate))
  })
  network_interface {
    network_interface_id = aws_network_interface.controller.id
    device_index         = 0
  }
  metadata_options {
    http_endpoint               = "enabled"
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }
  root_block_device {
    volume_size = 16
    volume_type = "gp3"
    encrypted   = true
    kms_key_id  = aws_kms_key.castor.arn
  }
  # the instance: castor:controller, never castor:cluster (locals above); its root volume is no
  # instance and keeps the cluster's tag, as the state volume does
  tags        = merge(local.controller_tags, { Name = "${local.name}-controller" })
  volume_tags = local.tags
}

resource "aws_eip" "controller" {
  #checkov:skip=CKV2_AWS_19:attached to the controller's network interface (the instance's only one), so it follows a replaced instance
  count             = var.controller_public_ip ? 1 : 0
  domain            = "vpc"
  network_interface = aws_network_interface.controller.id
  tags              = local.tags
}

resource "aws_volume_attachment" "state" {
  device_name                    = "/dev/sdf"
  volume_id                      = aws_ebs_volume.state.id
  instance_id                    = aws_instance.controller.id
  stop_instance_before_detaching = true
}
