# outputs.tf: what a person needs after `terraform apply`.

output "api_url" {
  description = "The controller's API as the workers and the admin networks reach it (set CASTOR_URL to it)."
  value       = local.api_url
}

output "public_api_url" {
  description = "The controller's API at its public address (controller_public_ip = true), else null."
  value       = var.controller_public_ip ? "http://${aws_eip.controller[0].public_ip}:${var.api_port}" : null
}

output "admin_token_parameter" {
  description = "The SSM Parameter Store SecureString holding the user (admin) token; the controller writes it at its first boot."
  value       = "${local.token_prefix}/user-token"
}

output "admin_token_command" {
  description = "The command that prints the admin token (for CASTOR_USER_TOKEN)."
  value       = "aws ssm get-parameter --region ${var.region} --with-decryption --name ${local.token_prefix}/user-token --query Parameter.Value --output text"
}

output "controller_instance_id" {
  description = "The controller instance. The module gives it no shell access (no SSH key, no SSM Session Manager permissions): stop castor by stopping it (aws ec2 stop-instances --instance-ids), then run castor teardown from an admin machine (terraform/README.md)."
  value       = aws_instance.controller.id
}

output "state_volume_id" {
  description = "The encrypted EBS volume with castor's state; it outlives the controller instance."
  value       = aws_ebs_volume.state.id
}

output "launch_template_id" {
  description = "The workers' launch template (castor's cloud.launch_template)."
  value       = aws_launch_template.worker.id
}

output "worker_security_group_id" {
  description = "The workers' security group (the only group the API admits besides admin_cidrs)."
  value       = aws_security_group.worker.id
}

output "castor_config" {
  description = "The castor.yaml the controller runs (no secret in it); saved to a file, it is what castor teardown -c takes on an admin machine."
  value       = local.castor_yaml
}
