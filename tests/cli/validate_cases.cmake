# validate_cases.cmake: `castor validate` on good and bad configurations, job files and workers'
# cloud-init user-data (tests/cli/validate/): "FILE: ok", or file:line:column and the reason.

set(VD "${CMAKE_CURRENT_SOURCE_DIR}/cli/validate")

castor_cli_test(validate_example 0 "castor.yaml: ok" validate ${CMAKE_SOURCE_DIR}/config/castor.yaml)
castor_cli_test(validate_aws 0 "config-aws.yaml: ok" validate ${VD}/config-aws.yaml)
castor_cli_test(validate_gcp 0 "config-gcp.yaml: ok" validate ${VD}/config-gcp.yaml)
castor_cli_test(validate_aws_bad_key 2 "config-aws-bad-key.yaml:6:3: unknown key \"cloud.launch_templat\" (did you mean \"cloud.launch_template\"?)"
  validate ${VD}/config-aws.yaml ${VD}/config-aws-bad-key.yaml)
castor_cli_test(validate_aws_no_prices 1 "config-aws-no-prices.yaml:7:11: cloud.prices:"
  validate ${VD}/config-aws-no-prices.yaml)
castor_cli_test(validate_bad_cluster 2 "config-bad-cluster.yaml:2:10: cluster:"
  validate ${VD}/config-bad-cluster.yaml)
castor_cli_test(validate_fake_offer 2 "config-fake-offer.yaml:12:10: fleet.offer: the fake cloud has no offer fake.8gpu/spot"
  validate ${VD}/config-fake-offer.yaml)
castor_cli_test(validate_gcp_bad_count 2 "config-gcp-bad-count.yaml:10:26: cloud.offers[0].accelerator_count: 99 is outside [1, 16]"
  validate ${VD}/config-gcp-bad-count.yaml)
castor_cli_test(validate_tokens_missing 1 "no-such-node.token: cannot open"
  validate ${VD}/config-tokens-missing.yaml)
castor_cli_test(validate_missing 1 "no-such.yaml: cannot open" validate ${VD}/no-such.yaml)
castor_cli_test(validate_job 0 "job-good.yaml: ok" validate --kind job ${VD}/job-good.yaml)
castor_cli_test(validate_job_bad 2 "job-bad.yaml:5:17: max_batch_size: 16 is outside"
  validate --kind job ${VD}/job-bad.yaml)
castor_cli_test(validate_job_bad_family 2 "job-bad-family.yaml:8:9: family: letters, digits, '.', '_', ':', '/' or '-'"
  validate --kind job ${VD}/job-bad-family.yaml)
# a deadline without samples is valid, with a warning at the deadline: nothing to plan it from
castor_cli_test(validate_job_deadline_no_samples 0
  "job-deadline-no-samples.yaml:8:11: warning: deadline: a deadline without samples"
  validate --kind job ${VD}/job-deadline-no-samples.yaml)
castor_cli_test(validate_bad_kind 2 "--kind takes config, job or cloud-init" validate --kind yaml ${VD}/job-good.yaml)
castor_cli_test(validate_no_file 2 "a file is required" validate --cloud-init)

castor_cli_test(validate_worker 0 "worker-good.yaml: ok" validate --cloud-init ${VD}/worker-good.yaml)
castor_cli_test(validate_worker_header 2 "worker-no-header.yaml:1:1: the first line must be #cloud-config"
  validate --cloud-init ${VD}/worker-no-header.yaml)
castor_cli_test(validate_worker_token 2 "worker-literal-token.yaml:17:14: CASTOR_NODE_TOKEN: a token in the user-data"
  validate --cloud-init ${VD}/worker-literal-token.yaml)
castor_cli_test(validate_worker_fixed_id 2 "worker-fixed-id.yaml:16:14: CASTOR_INSTANCE_ID: every worker boots from this user-data"
  validate --cloud-init ${VD}/worker-fixed-id.yaml)
castor_cli_test(validate_worker_no_url 2 "CASTOR_URL is not set for castor-node"
  validate --cloud-init ${VD}/worker-no-url.yaml)
castor_cli_test(validate_worker_bad_url 2 "worker-bad-url.yaml:15:14: CASTOR_URL: expected an http:// or https:// URL"
  validate --cloud-init ${VD}/worker-bad-url.yaml)
castor_cli_test(validate_worker_not_started 2 "worker-not-started.yaml:28:3: runcmd does not start castor-node"
  validate --cloud-init ${VD}/worker-not-started.yaml)
castor_cli_test(validate_worker_syntax 2 "worker-syntax.yaml:29:5: YAML syntax"
  validate --cloud-init ${VD}/worker-syntax.yaml)
castor_cli_test(validate_worker_no_exec 2 "the unit's start script does not exec castor-node"
  validate --cloud-init ${VD}/worker-no-exec.yaml)
castor_cli_test(validate_worker_token_unwritten 2 "worker-token-unwritten.yaml:16:14: CASTOR_NODE_TOKEN_FILE: nothing writes /run/castor-node/node.token at boot"
  validate --cloud-init ${VD}/worker-token-unwritten.yaml)

# A startup script (terraform/gcp's workers): the files are its here-documents. The bad ones are
# the good one with one sed expression applied (tests/cli/expect_variant.sh).
set(VARIANT "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_variant.sh")
function(castor_variant_test name good expr status text)
  add_test(NAME cli_${name} COMMAND ${VARIANT} ${good} ${expr}
    ${CMAKE_CURRENT_BINARY_DIR}/${name}.sh ${status} ${text} -- $<TARGET_FILE:castor> ${ARGN})
endfunction()

castor_cli_test(validate_worker_script 0 "worker-script.sh: ok" validate --cloud-init ${VD}/worker-script.sh)
castor_variant_test(validate_worker_script_fixed_id ${VD}/worker-script.sh
  "s|^export CASTOR_INSTANCE_ID=.*|export CASTOR_INSTANCE_ID=us-central1-a/castor-1|" 2
  "validate_worker_script_fixed_id.sh:13:8: CASTOR_INSTANCE_ID: every worker boots"
  validate --cloud-init @FILE@)
castor_variant_test(validate_worker_script_not_started ${VD}/worker-script.sh
  "/enable --now castor-node/d" 2
  "validate_worker_script_not_started.sh:1:1: the script does not start castor-node"
  validate --cloud-init @FILE@)
castor_variant_test(validate_worker_script_open_heredoc ${VD}/worker-script.sh "/^END$/d" 2
  "validate_worker_script_open_heredoc.sh:5:1: the here-document for /usr/local/sbin/castor-node-start has no end line END"
  validate --cloud-init @FILE@)
castor_variant_test(validate_worker_script_literal_token ${VD}/worker-script.sh
  "s|^export CASTOR_NODE_TOKEN_FILE=.*|export CASTOR_NODE_TOKEN=abcdef0123456789abcdef0123456789|" 2
  "validate_worker_script_literal_token.sh:14:8: CASTOR_NODE_TOKEN: a token in the user-data"
  validate --cloud-init @FILE@)
