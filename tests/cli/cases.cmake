# cases.cmake: the castor command on good and bad input: exit status and the message a person sees.

set(EXPECT "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.sh")
set(BAD "${CASTOR_TEST_DATA}/profiles")
set(GOOD "${CMAKE_SOURCE_DIR}/data/profiles")

function(castor_cli_test name status text)
  add_test(NAME cli_${name} COMMAND ${EXPECT} ${status} ${text} -- $<TARGET_FILE:castor> ${ARGN})
endfunction()

castor_cli_test(default 0 "castor against fixed-on-demand: dollars")
castor_cli_test(model_list 0 "pollux" model list)
castor_cli_test(fit_cifar10 0 "alpha_c" model fit ${GOOD}/cifar10)
castor_cli_test(fit_json 0 "\"params\"" model fit ${GOOD}/bert --json --model pollux)
castor_cli_test(fit_extrapolation 0 "rows not fitted" model fit ${GOOD}/ncf --train placements)
castor_cli_test(unknown_command 2 "unknown command" frobnicate)
castor_cli_test(unknown_model 2 "unknown throughput model" model fit ${GOOD}/bert --model nope)
castor_cli_test(bad_train 2 "--train takes" model fit ${GOOD}/bert --train some)
castor_cli_test(missing_dir 1 "no_such_dir/placements.csv: cannot open" model fit ${BAD}/no_such_dir)
castor_cli_test(empty_profile 1 "placements.csv:1: a header and no rows" model fit ${BAD}/empty)
castor_cli_test(empty_file 1 "placements.csv: the file is empty" model fit ${BAD}/empty_file)
castor_cli_test(missing_column 1 "placements.csv:1:1: missing column \"sync_time\"" model fit ${BAD}/missing_column)
castor_cli_test(truncated 1 "placements.csv:4:5: expected 4 fields as in the header, found 2 (truncated row?)" model fit ${BAD}/truncated)
castor_cli_test(negative_time 1 "placements.csv:3:6: step_time: must be a positive number of seconds, found -0.05" model fit ${BAD}/negative_time)
castor_cli_test(non_numeric 1 "placements.csv:3:13: sync_time: expected a number, found \"fast\"" model fit ${BAD}/non_numeric)
castor_cli_test(bad_placement 1 "placements.csv:3:2: placement: expected digits 1-9 (GPUs per node), found '0'" model fit ${BAD}/bad_placement)
castor_cli_test(sync_over_step 1 "placements.csv:2:13: sync_time: must be in [0, step_time)" model fit ${BAD}/sync_over_step)
castor_cli_test(bad_scalability 1 "scalability.csv:3:1: num_nodes: expected a whole number, found \"2.5\"" model fit ${BAD}/bad_scalability)
castor_cli_test(replicas_below_nodes 1 "scalability.csv:2:3: num_replicas: 4 is outside [6, 65536]" model fit ${BAD}/replicas_below_nodes)
castor_cli_test(nan_time 1 "placements.csv:2:6: step_time: \"nan\" is not a finite number" model fit ${BAD}/nan_time)

# castor simulate --config: a good file, the command line over the file, and a bad
# file of each kind, reported as file:line:column with exit status 2 before anything runs.
set(CONF "${CASTOR_TEST_DATA}/config")
set(TINY "${CASTOR_TEST_DATA}/workloads/tiny.csv")
castor_cli_test(config_good 0 "tiny tiresias: average JCT"
  simulate --config ${CONF}/good.yaml --out ${CMAKE_CURRENT_BINARY_DIR}/config-good.json)
castor_cli_test(config_override 0 "tiny optimus: average JCT"
  simulate --policy optimus --config ${CONF}/good.yaml --quiet --out ${CMAKE_CURRENT_BINARY_DIR}/config-override.json)
castor_cli_test(config_example 0 "tiny tiresias: average JCT"
  simulate --config ${CMAKE_SOURCE_DIR}/config/simulate.yaml --quiet)
castor_cli_test(config_empty 0 "tiny pollux: average JCT"
  simulate --config ${CONF}/empty.yaml --workload ${TINY} --policy pollux --nodes 2 --quiet)
castor_cli_test(config_empty_needs_policy 2 "--workload and --policy are required"
  simulate --config ${CONF}/empty.yaml --workload ${TINY})
castor_cli_test(config_help 0 "restart_penalty: S" simulate --config ${CONF}/syntax.yaml --help)
castor_cli_test(config_twice 2 "--config given twice"
  simulate --config ${CONF}/good.yaml --config ${CONF}/good.yaml)
castor_cli_test(config_missing 2 "no_such.yaml: cannot open: No such file or directory"
  simulate --config ${CONF}/no_such.yaml)
castor_cli_test(config_syntax 2 "syntax.yaml:4:9: YAML syntax: did not find expected ',' or '}' (while parsing a flow mapping at line 3, column 10)"
  simulate --config ${CONF}/syntax.yaml)
castor_cli_test(config_tab 2 "tab.yaml:3:1: YAML syntax: found character that cannot start any token"
  simulate --config ${CONF}/tab.yaml)
castor_cli_test(config_unknown_key 2 "unknown_key.yaml:3:1: unknown key \"polcy\" (did you mean \"policy\"?)"
  simulate --config ${CONF}/unknown_key.yaml --workload ${TINY} --policy tiresias)
castor_cli_test(config_unknown_nested_key 2 "unknown_nested_key.yaml:4:3: unknown key \"cluster.gpus\" (known keys of cluster: nodes, gpus_per_node)"
  simulate --config ${CONF}/unknown_nested_key.yaml)
castor_cli_test(config_duplicate_key 2 "duplicate_key.yaml:4:1: duplicate key \"seed\" (first on line 2)"
  simulate --config ${CONF}/duplicate_key.yaml)
castor_cli_test(config_wrong_type 2 "wrong_type.yaml:3:10: cluster.nodes: expected a whole number, found \"four\""
  simulate --config ${CONF}/wrong_type.yaml)
castor_cli_test(config_quoted_number 2 "quoted_number.yaml:2:11: interval: expected a whole number, found the quoted text \"60\""
  simulate --config ${CONF}/quoted_number.yaml)
castor_cli_test(config_out_of_range 2 "out_of_range.yaml:3:15: interference: 1.5 is outside [0, 0.99]"
  simulate --config ${CONF}/out_of_range.yaml --workload ${TINY})
castor_cli_test(config_restart_penalty 2 "restart_penalty.yaml:4:20: pollux.restart_penalty: 0 is outside [1, 3600]"
  simulate --config ${CONF}/restart_penalty.yaml)
castor_cli_test(config_unknown_policy 2 "unknown_policy.yaml:3:9: policy: unknown value \"fifo\" (one of pollux, optimus, tiresias"
  simulate --config ${CONF}/unknown_policy.yaml)
castor_cli_test(config_unknown_model 2 "unknown_model.yaml:2:13: tput_model: unknown value \"amdahl\" (one of castor, pollux)"
  simulate --config ${CONF}/unknown_model.yaml)
castor_cli_test(config_job_lengths 2 "job_lengths.yaml:2:14: job_lengths: unknown value \"maybe\" (one of declared, unknown)"
  simulate --config ${CONF}/job_lengths.yaml)
castor_cli_test(job_lengths_bad 2 "--job-lengths: bad value \"maybe\""
  simulate --workload ${TINY} --policy castor --job-lengths maybe)
castor_cli_test(job_lengths_unknown 0 "tiny castor: average JCT"
  simulate --workload ${TINY} --policy castor --job-lengths unknown --quiet)
castor_cli_test(config_families 2 "families.yaml:2:11: families: unknown value \"sometimes\" (one of auto, on, off)"
  simulate --config ${CONF}/families.yaml)
castor_cli_test(families_bad 2 "--families: bad value \"maybe\""
  simulate --workload ${TINY} --policy castor --families maybe)
castor_cli_test(families_on_pollux 0 "tiny pollux: average JCT"
  simulate --workload ${TINY} --policy pollux --families on --quiet)
castor_cli_test(config_not_mapping 2 "not_mapping.yaml:2:1: the document: expected a mapping (key: value lines), found a list"
  simulate --config ${CONF}/not_mapping.yaml)
castor_cli_test(config_section_not_mapping 2 "section_not_mapping.yaml:2:10: cluster: expected a mapping (key: value lines), found \"8\""
  simulate --config ${CONF}/section_not_mapping.yaml)
castor_cli_test(config_report_list 2 "report_list.yaml:2:9: report: expected text, found a list"
  simulate --config ${CONF}/report_list.yaml)

# castor run and the client commands: usage and the failures a person meets first (the daemon
# itself: tests/control/test_daemon.c).
castor_cli_test(run_no_config 2 "a configuration is required (-c FILE)" run)
castor_cli_test(run_missing_config 1 "no-such.yaml: cannot open" run -c ${CONF}/no-such.yaml)
castor_cli_test(run_bad_config 2 "unknown_key.yaml:" run -c ${CONF}/unknown_key.yaml)
castor_cli_test(teardown_no_config 2 "a configuration is required (-c FILE)" teardown --yes)
castor_cli_test(teardown_bad_config 2 "unknown_key.yaml:" teardown -c ${CONF}/unknown_key.yaml)
castor_cli_test(teardown_bad_argument 2 "unexpected argument \"--force\"" teardown --force)
castor_cli_test(backup_no_config 2 "a configuration is required (-c FILE)" backup out.db)
castor_cli_test(backup_no_out 2 "where to? (OUT)" backup -c ${CONF}/unknown_key.yaml)
castor_cli_test(backup_bad_config 2 "unknown_key.yaml:" backup -c ${CONF}/unknown_key.yaml out.db)
castor_cli_test(client_no_token 1 "no token: set CASTOR_USER_TOKEN or CASTOR_TOKEN_FILE" status)
castor_cli_test(client_unreachable 1 "cannot reach the controller at http://127.0.0.1:1" jobs)
castor_cli_test(client_bad_name 2 "is not a job name" cancel "a/b")
castor_cli_test(client_submit_no_file 2 "a job file is required" submit)
castor_cli_test(client_down_no_node 2 "a node's instance id is required" down)
castor_cli_test(client_down_bad_node 2 "\"a b\" is not a node name" down "a b")
set_tests_properties(cli_client_no_token PROPERTIES ENVIRONMENT
  "CASTOR_USER_TOKEN=;CASTOR_TOKEN_FILE=")
set_tests_properties(cli_client_unreachable cli_client_bad_name cli_client_down_bad_node PROPERTIES ENVIRONMENT
  "CASTOR_URL=http://127.0.0.1:1;CASTOR_USER_TOKEN=user-token-0123456789abcdef")

# castor check: what the configuration's cloud would let castor rent (the fake world, whose
# quotas refuse launches as a cloud's do): offers, prices, the room the quotas leave each, and
# whether castor can launch anything (exit 0) or nothing (1).
set(CHECK "${CMAKE_CURRENT_SOURCE_DIR}/cli/check")
castor_cli_test(check_spot_quota_zero 0 "castor can launch 1 of the 2 offers"
  check -c ${CHECK}/spot-quota-zero.yaml)
castor_cli_test(check_binding_quota 0
  "spot-vcpus \"spot-vcpus (fake)\": 0 of 0 vCPUs held, 48 a node"
  check -c ${CHECK}/spot-quota-zero.yaml)
castor_cli_test(check_room 0 "\"room\": 2" check -c ${CHECK}/spot-quota-zero.yaml --json)
castor_cli_test(check_no_room 1 "castor can launch none of the 2 offers" check -c ${CHECK}/no-room.yaml)
castor_cli_test(check_fixed_no_room 1 "the fixed fleet launches g4/spot only: its quotas leave it no room"
  check -c ${CHECK}/fixed-no-room.yaml)
castor_cli_test(check_fixed_no_offer 1 "fleet.offer g5/on-demand is not among the fake cloud's offers"
  check -c ${CHECK}/fixed-no-offer.yaml)
castor_cli_test(check_no_config 2 "a configuration is required (-c FILE)" check)
castor_cli_test(check_bad_config 2 "unknown_key.yaml:2:1: unknown key" check -c ${CONF}/unknown_key.yaml)
castor_cli_test(check_bad_argument 2 "unexpected argument \"--launch\"" check --launch)
castor_cli_test(check_discount 0 "the cloud's price less the configuration's 30%"
  check -c ${CHECK}/discounts.yaml)
castor_cli_test(check_price 0 "\"price\": 2.7384" check -c ${CHECK}/discounts.yaml --json)
castor_cli_test(check_unknown_offer 0
  "warning: offers: g4/ondemand is not an offer of the fake cloud"
  check -c ${CHECK}/unknown-offer.yaml)
castor_cli_test(check_ask 1 "16 nodes (max_nodes) take 768 more: ask the cloud for 864"
  check -c ${CHECK}/no-room.yaml)
castor_cli_test(check_ask_aws 1
  "request-service-quota-increase --region us-east-1 --service-code ec2 --quota-code L-3819A6DF --desired-value 384"
  check -c ${CHECK}/aws-named-quota.yaml)
castor_cli_test(check_max_price 0 "above its max_price $1.2000: none launched"
  check -c ${CHECK}/max-price.yaml)
castor_cli_test(check_max_price_count 0 "castor can launch 1 of the 2 offers"
  check -c ${CHECK}/max-price.yaml)
