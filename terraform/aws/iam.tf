# iam.tf: the roles. The controller's is docs/aws.md's least-privilege policy (launch only with
# the cluster's tag, tag only at launch, terminate only what carries the cluster's tag, pass only
# the workers' role, read the EC2 quotas), plus its tokens in SSM Parameter Store. The workers' role reads the node
# token and nothing else: each job's replicas get the job's own token from its assignment, so the
# shared job token stays on the controller.

data "aws_iam_policy_document" "ec2_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

locals {
  ec2_arn = "arn:${local.partition}:ec2:${var.region}:${local.account}"
}

data "aws_iam_policy_document" "controller" {
  statement {
    sid = "ReadOnlyDiscovery"
    actions = [
      "pricing:GetProducts", # the on-demand list prices (docs/aws.md: the cloud's pricing, on by default)
      "ec2:DescribeInstanceTypes",
      "ec2:DescribeSpotPriceHistory",
      "ec2:DescribeInstances",
      "ec2:DescribeSubnets",
      "ec2:DescribeLaunchTemplates",
      "ec2:DescribeLaunchTemplateVersions",
      "ec2:DescribeImages",
    ]
    resources = ["*"] # Describe* and GetProducts take no resource-level restriction
  }
  statement {
    # the EC2 vCPU quotas castor reads up front (docs/aws.md, "Quotas"); read-only
    sid       = "ReadEC2Quotas"
    actions   = ["servicequotas:GetServiceQuota", "servicequotas:GetAWSDefaultServiceQuota"]
    resources = ["*"]
  }
  statement {
    sid       = "LaunchOnlyTaggedInstances"
    actions   = ["ec2:RunInstances", "ec2:CreateFleet"]
    resources = ["${local.ec2_arn}:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/castor:cluster"
      values   = [var.cluster_id]
    }
  }
  statement {
    sid     = "LaunchFromTheseResources"
    actions = ["ec2:RunInstances", "ec2:CreateFleet"]
    resources = concat(
      [
        "${local.ec2_arn}:launch-template/${aws_launch_template.worker.id}",
        "${local.ec2_arn}:security-group/${aws_security_group.worker.id}",
        "${local.ec2_arn}:fleet/*",
        "${local.ec2_arn}:volume/*",
        "${local.ec2_arn}:network-interface/*",
        "${local.ec2_arn}:spot-instances-request/*",
        "arn:${local.partition}:ec2:${var.region}::image/${var.worker_ami_id}",
      ],
      [for s in distinct(values(var.zones)) : "${local.ec2_arn}:subnet/${s}"],
    )
  }
  statement {
    sid       = "TagOnlyAtLaunch"
    actions   = ["ec2:CreateTags"]
    resources = ["${local.ec2_arn}:instance/*", "${local.ec2_arn}:volume/*", "${local.ec2_arn}:network-interface/*", "${local.ec2_arn}:spot-instances-request/*"]
    condition {
      test     = "StringEquals"
      variable = "ec2:CreateAction"
      values   = ["RunInstances", "CreateFleet"]
    }
  }
  statement {
    # the workers castor launched carry castor:cluster=<id>; the controller does not (it carries
    # castor:controller), and TagOnlyAtLaunch lets no one here tag it afterwards
    sid       = "TerminateOnlyThisClustersInstances"
    actions   = ["ec2:TerminateInstances"]
    resources = ["${local.ec2_arn}:instance/*"]
    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/castor:cluster"
      values   = [var.cluster_id]
    }
  }
  statement {
    sid       = "PassTheWorkerRole"
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.worker.arn]
    condition {
      test     = "StringEquals"
      variable = "iam:PassedToService"
      values   = ["ec2.amazonaws.com"]
    }
  }
  statement {
    sid       = "SpotServiceLinkedRole"
    actions   = ["iam:CreateServiceLinkedRole"]
    resources = ["arn:${local.partition}:iam::${local.account}:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"]
    condition {
      test     = "StringEquals"
      variable = "iam:AWSServiceName"
      values   = ["spot.amazonaws.com"]
    }
  }
  statement {
    sid       = "TheClustersTokens"
    actions   = ["ssm:GetParameter", "ssm:PutParameter"]
    resources = values(local.token_arns)
  }
  statement {
    sid       = "TheKeyThroughSSMAndEC2"
    actions   = ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*", "kms:DescribeKey", "kms:CreateGrant"]
    resources = [aws_kms_key.castor.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["ssm.${var.region}.amazonaws.com", "ec2.${var.region}.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "worker" {
  statement {
    sid       = "TheNodeToken"
    actions   = ["ssm:GetParameter"]
    resources = [local.token_arns["node"]]
  }
  statement {
    sid       = "DecryptThemThroughSSM"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.castor.arn]
    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["ssm.${var.region}.amazonaws.com"]
    }
  }
}

# The key's own policy: the account administers it (so that IAM policies apply); the roles use it
# through their IAM policies above.
data "aws_iam_policy_document" "kms" {
  #checkov:skip=CKV_AWS_111:a key policy's "*" is the key itself; this is AWS's default key policy (the account administers the key, IAM policies grant its use)
  #checkov:skip=CKV_AWS_356:a key policy's "*" is the key itself, not every resource
  #checkov:skip=CKV_AWS_109:the account's root administers its own key (AWS's default key policy), so that IAM policies can grant its use
  statement {
    sid       = "AccountAdministers"
    actions   = ["kms:*"]
    resources = ["*"] # in a key policy, "*" is this key
    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account}:root"]
    }
  }
}

resource "aws_iam_role" "controller" {
  name_prefix        = "castor-ctl-"
  description        = "castor ${var.cluster_id}: the controller"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "controller" {
  name   = "castor-controller"
  role   = aws_iam_role.controller.id
  policy = data.aws_iam_policy_document.controller.json
}

resource "aws_iam_instance_profile" "controller" {
  name_prefix = "castor-ctl-"
  role        = aws_iam_role.controller.name
  tags        = local.tags
}

resource "aws_iam_role" "worker" {
  name_prefix        = "castor-node-"
  description        = "castor ${var.cluster_id}: GPU workers"
  assume_role_policy = data.aws_iam_policy_document.ec2_assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "worker" {
  name   = "castor-worker"
  role   = aws_iam_role.worker.id
  policy = data.aws_iam_policy_document.worker.json
}

resource "aws_iam_instance_profile" "worker" {
  name_prefix = "castor-node-"
  role        = aws_iam_role.worker.name
  tags        = local.tags
}
