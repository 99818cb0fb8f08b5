# network.tf: the security groups. The controller's API admits the workers' group and the listed
# admin networks only; workers admit nothing from outside (castor-node only calls out).

resource "aws_security_group" "controller" {
  name_prefix = "${local.name}-controller-"
  description = "castor ${var.cluster_id}: the controller (API from workers and admins only)"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${local.name}-controller" })
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_security_group" "worker" {
  name_prefix = "${local.name}-worker-"
  description = "castor ${var.cluster_id}: GPU workers (no inbound from outside the group)"
  vpc_id      = var.vpc_id
  tags        = merge(local.tags, { Name = "${local.name}-worker" })
  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_vpc_security_group_ingress_rule" "api_from_workers" {
  security_group_id            = aws_security_group.controller.id
  description                  = "castor API from the workers"
  referenced_security_group_id = aws_security_group.worker.id
  ip_protocol                  = "tcp"
  from_port                    = var.api_port
  to_port                      = var.api_port
}

resource "aws_vpc_security_group_ingress_rule" "api_from_admins" {
  for_each          = toset(var.admin_cidrs)
  security_group_id = aws_security_group.controller.id
  description       = "castor API from an admin network"
  cidr_ipv4         = strcontains(each.value, ":") ? null : each.value
  cidr_ipv6         = strcontains(each.value, ":") ? each.value : null
  ip_protocol       = "tcp"
  from_port         = var.api_port
  to_port           = var.api_port
}

# Out: HTTPS (the AWS APIs, the castor tarball) and HTTP (the distribution's package mirrors).
resource "aws_vpc_security_group_egress_rule" "controller_https" {
  security_group_id = aws_security_group.controller.id
  description       = "HTTPS out: AWS APIs, the castor package"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
}

resource "aws_vpc_security_group_egress_rule" "controller_http" {
  security_group_id = aws_security_group.controller.id
  description       = "HTTP out: the distribution's package mirrors"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
}

resource "aws_vpc_security_group_egress_rule" "worker_https" {
  security_group_id = aws_security_group.worker.id
  description       = "HTTPS out: SSM, the castor package, the jobs' data"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
}

resource "aws_vpc_security_group_egress_rule" "worker_http" {
  security_group_id = aws_security_group.worker.id
  description       = "HTTP out: the distribution's package mirrors"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
}

resource "aws_vpc_security_group_egress_rule" "worker_to_api" {
  security_group_id            = aws_security_group.worker.id
  description                  = "castor-node to the controller's API"
  referenced_security_group_id = aws_security_group.controller.id
  ip_protocol                  = "tcp"
  from_port                    = var.api_port
  to_port                      = var.api_port
}

# Multi-node jobs: the workers of a job talk to each other (NCCL, the master's port).
resource "aws_vpc_security_group_ingress_rule" "worker_from_workers" {
  security_group_id            = aws_security_group.worker.id
  description                  = "workers of one cluster to each other (distributed training)"
  referenced_security_group_id = aws_security_group.worker.id
  ip_protocol                  = "-1"
}

resource "aws_vpc_security_group_egress_rule" "worker_to_workers" {
  security_group_id            = aws_security_group.worker.id
  description                  = "workers of one cluster to each other (distributed training)"
  referenced_security_group_id = aws_security_group.worker.id
  ip_protocol                  = "-1"
}
