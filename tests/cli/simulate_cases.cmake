# simulate_cases.cmake: `castor simulate` end to end on a 10-job trace under each policy, and on
# bad input: exit status and the message a person sees.

set(TEN "${CASTOR_TEST_DATA}/workloads/ten.csv")
set(WBAD "${CASTOR_TEST_DATA}/workloads_bad")
set(EXPECT_FILE "${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_file.sh")

foreach(policy pollux optimus tiresias castor)
  castor_cli_test(simulate_ten_${policy} 0 "ten ${policy}: average JCT"
    simulate --workload ${TEN} --policy ${policy})
endforeach()
add_test(NAME cli_simulate_summary_json COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/ten-summary.json "\"avgs\""
  -- $<TARGET_FILE:castor> simulate --workload ${TEN} --policy tiresias --quiet
  --out ${CMAKE_CURRENT_BINARY_DIR}/ten-summary.json)
castor_cli_test(simulate_unknown_model 1 "unknown_app.csv:3:6: application: unknown model \"resnet9000\""
  simulate --workload ${WBAD}/unknown_app.csv --policy pollux)
castor_cli_test(simulate_unsorted 1 "unsorted.csv:3:3: time: the trace must be sorted by time"
  simulate --workload ${WBAD}/unsorted.csv --policy optimus)
castor_cli_test(simulate_negative_time 1 "negative.csv:2:3: time: a submission time cannot be negative"
  simulate --workload ${WBAD}/negative.csv --policy tiresias)
castor_cli_test(simulate_no_jobs 1 "empty.csv:1: a header and no rows"
  simulate --workload ${WBAD}/empty.csv --policy pollux)
castor_cli_test(simulate_missing_profiles 1 "no profiles found"
  simulate --workload ${TEN} --policy pollux --profiles ${CASTOR_TEST_DATA}/no_such_profiles)
castor_cli_test(simulate_missing_validation 1 "profiles_novalidation/cifar10: no validation-<batch size>.csv files"
  simulate --workload ${CASTOR_TEST_DATA}/workloads/one_cifar10.csv --policy pollux --profiles ${CASTOR_TEST_DATA}/profiles_novalidation)
castor_cli_test(simulate_no_nodes 2 "--nodes: bad value \"0\""
  simulate --workload ${TEN} --policy pollux --nodes 0)
castor_cli_test(simulate_unknown_policy 2 "unknown policy \"fifo\""
  simulate --workload ${TEN} --policy fifo)
castor_cli_test(simulate_missing_workload 1 "no_such.csv: no such file or folder"
  simulate --workload ${WBAD}/no_such.csv --policy pollux)
castor_cli_test(simulate_batch_outside_profile 1 "ncf_small_batch.csv:3: job ncf-1: batch_size 128 is outside what ncf was measured at [256, 32768]"
  simulate --workload ${WBAD}/ncf_small_batch.csv --policy tiresias)
# a gang scheduler gives NCF the two GPUs the trace asks for (the one-GPU limit is Pollux's and
# Optimus's setting, not the trace's)
castor_cli_test(simulate_tiresias_gang_of_two 0 "ncf_two_gpus tiresias: average JCT"
  simulate --workload ${CASTOR_TEST_DATA}/workloads/ncf_two_gpus.csv --policy tiresias)
# several policies in one run: one report that compares them (with the JCT distributions)
add_test(NAME cli_simulate_compare_report COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/ten-compare.html "ten — tiresias"
  -- $<TARGET_FILE:castor> simulate --workload ${TEN} --policy pollux,optimus,tiresias --quiet
  --report ${CMAKE_CURRENT_BINARY_DIR}/ten-compare.html)
add_test(NAME cli_simulate_compare_summary COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/ten-compare.json "\"optimus\": {"
  -- $<TARGET_FILE:castor> simulate --workload ${TEN} --policy pollux,optimus --quiet
  --out ${CMAKE_CURRENT_BINARY_DIR}/ten-compare.json)
castor_cli_test(simulate_unknown_policy_in_list 2 "unknown policy \"fifo\""
  simulate --workload ${TEN} --policy pollux,fifo)
# the scheduler benchmark on a small size (the real sizes are for bench runs, not tests)
add_test(NAME cli_bench_sched_json COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/sched.json "\"reference_fitness\""
  -- $<TARGET_FILE:castor> bench sched --policy pollux --size 4:4:6 --inputs 2
  --json ${CMAKE_CURRENT_BINARY_DIR}/sched.json)
castor_cli_test(bench_sched_bad_size 2 "--size takes NODES:GPUS:JOBS" bench sched --size 4x4)
castor_cli_test(bench_sched_unknown_policy 2 "unknown policy \"fifo\"" bench sched --policy fifo)

# market scenarios (--scenario): the four systems compared on the ten-job trace, JSON written, and
# bad scenarios refused before anything runs, naming file:line:column
set(SCN "${CASTOR_TEST_DATA}/scenarios")
castor_cli_test(scenario_compare 0 "castor against pollux-autoscale: dollars"
  simulate --scenario ${SCN}/small.yaml --compare)
add_test(NAME cli_scenario_json COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/scenario.json "\"dollars_over_bound\""
  -- $<TARGET_FILE:castor> simulate --scenario ${SCN}/small.yaml --compare --quiet
  --json ${CMAKE_CURRENT_BINARY_DIR}/scenario.json)
# one cost bound per workload, the same for the four systems (dollars_bound: one value)
add_test(NAME cli_scenario_shared_cost_bound COMMAND sh -c
  "\"$0\" simulate --scenario \"$1\" --compare --quiet --json \"$2\" >/dev/null && test \"$(grep -o '\"dollars_bound\": [0-9.e+-]*' \"$2\" | sort -u | wc -l)\" = 1"
  $<TARGET_FILE:castor> ${SCN}/small.yaml ${CMAKE_CURRENT_BINARY_DIR}/scenario_shared_bound.json)
add_test(NAME cli_scenario_json_jct_bound COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/scenario_bound.json "\"jct_over_bound\""
  -- $<TARGET_FILE:castor> simulate --scenario ${SCN}/small.yaml --quiet
  --json ${CMAKE_CURRENT_BINARY_DIR}/scenario_bound.json)
add_test(NAME cli_scenario_json_gpu_bound COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/scenario_gpu_bound.json "\"gpu_over_bound\""
  -- $<TARGET_FILE:castor> simulate --scenario ${SCN}/small.yaml --quiet
  --json ${CMAKE_CURRENT_BINARY_DIR}/scenario_gpu_bound.json)
castor_cli_test(scenario_gpu_bound_column 0 "JCT/bnd GPU/bnd"
  simulate --scenario ${SCN}/small.yaml)
castor_cli_test(scenario_castor_alone 0 "mean            castor"
  simulate --scenario ${SCN}/small.yaml)
castor_cli_test(scenario_workload_override 0 "one_cifar10.csv"
  simulate --scenario ${SCN}/small.yaml --workload ${CASTOR_TEST_DATA}/workloads/one_cifar10.csv)
# reconfigure: restart: every new configuration of a job costs it a restart, which the JSON's
# restarts count (more than the same run's in flight)
add_test(NAME cli_scenario_reconfigure_restart COMMAND sh -c
  "sed 's|^workload: .*|workload: '\"$2\"'|' \"$1\" >\"$3.yaml\" && echo 'reconfigure: restart' >>\"$3.yaml\" && \"$0\" simulate --scenario \"$1\" --quiet --workload \"$2\" --json \"$3.a.json\" >/dev/null && \"$0\" simulate --scenario \"$3.yaml\" --quiet --json \"$3.b.json\" >/dev/null && a=$(grep -o '\"restarts\": [0-9]*' \"$3.a.json\" | grep -o '[0-9]*$') && b=$(grep -o '\"restarts\": [0-9]*' \"$3.b.json\" | grep -o '[0-9]*$') && echo \"in flight $a, restart $b\" && test \"$b\" -gt \"$a\""
  $<TARGET_FILE:castor> ${SCN}/small.yaml ${CASTOR_TEST_DATA}/workloads/ten.csv
  ${CMAKE_CURRENT_BINARY_DIR}/scenario_reconfigure)
# the deadlines a system missed, by name, time taken and deadline (an imagenet job cannot train in
# 900 s; the cifar10 job has a day)
castor_cli_test(scenario_deadline_missed 0 "missed: late ("
  simulate --scenario ${CMAKE_SOURCE_DIR}/config/scenarios/deadline.yaml
  --workload ${CASTOR_TEST_DATA}/workloads/deadline_missed.csv)
add_test(NAME cli_scenario_deadline_json COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/deadlines.json "\"job\": \"late\""
  -- $<TARGET_FILE:castor> simulate --scenario ${CMAKE_SOURCE_DIR}/config/scenarios/deadline.yaml
  --workload ${CASTOR_TEST_DATA}/workloads/deadline_missed.csv --quiet
  --json ${CMAKE_CURRENT_BINARY_DIR}/deadlines.json)
add_test(NAME cli_scenario_deadline_report COMMAND ${EXPECT_FILE}
  ${CMAKE_CURRENT_BINARY_DIR}/deadlines.html "<td>0.25 (missed)</td>"
  -- $<TARGET_FILE:castor> simulate --scenario ${CMAKE_SOURCE_DIR}/config/scenarios/deadline.yaml
  --workload ${CASTOR_TEST_DATA}/workloads/deadline_missed.csv --quiet
  --report ${CMAKE_CURRENT_BINARY_DIR}/deadlines.html)
# every shipped scenario loads and runs the four systems (on the ten-job trace, to stay short)
foreach(scn t4 heavy-preemption deadline no-notice spot-quota spot-quota-zero)
  castor_cli_test(scenario_shipped_${scn} 0 "castor against pollux-autoscale: dollars"
    simulate --scenario ${CMAKE_SOURCE_DIR}/config/scenarios/${scn}.yaml --compare
    --workload ${CASTOR_TEST_DATA}/workloads/ten.csv)
endforeach()
castor_cli_test(scenario_no_offers 2 "no_offers.yaml:2:9: the scenario needs a list of offers"
  simulate --scenario ${SCN}/no_offers.yaml)
castor_cli_test(scenario_negative_price 2 "negative_price.yaml:5:12: offers[0].price: -3.9 is outside"
  simulate --scenario ${SCN}/negative_price.yaml)
castor_cli_test(scenario_trace_removes_too_many 2 "too_many_removes.csv:4:15: removes node node3, which is not there"
  simulate --scenario ${SCN}/bad_trace.yaml)
castor_cli_test(scenario_unknown_offer 2 "unknown_offer.yaml:11:9: compare.spot: no offer is called 'spt'"
  simulate --scenario ${SCN}/unknown_offer.yaml --compare)
castor_cli_test(scenario_budget_missing 2 "budget_missing.yaml:7:3: castor: mode budget needs a budget"
  simulate --scenario ${SCN}/budget_missing.yaml)
castor_cli_test(scenario_duplicate_offer 2 "duplicate_offer.yaml:6:11: offers[1].name: offer 'od' is named twice"
  simulate --scenario ${SCN}/duplicate_offer.yaml)
castor_cli_test(scenario_typo 2 "did you mean \"offers[0].capacity\""
  simulate --scenario ${SCN}/typo.yaml)
castor_cli_test(scenario_unknown_quota_offer 2 "unknown_quota_offer.yaml:14:14: quotas[0].offers: spt is not an offer"
  simulate --scenario ${SCN}/unknown_quota_offer.yaml)
castor_cli_test(scenario_compare_needs_spot 2 "--compare needs an on-demand and a spot offer"
  simulate --scenario ${SCN}/typo_free_od_only.yaml --compare)
castor_cli_test(scenario_past_deadline 1 "past_deadline.csv:4:16: deadline: seconds after the submission, must be positive"
  simulate --scenario ${SCN}/small.yaml --workload ${WBAD}/past_deadline.csv)
castor_cli_test(scenario_families_not_bool 2 "families_not_bool.yaml:8:13: castor.families"
  simulate --scenario ${SCN}/families_not_bool.yaml)
castor_cli_test(scenario_missing_file 2 "no_such.yaml"
  simulate --scenario ${SCN}/no_such.yaml)
# --value replaces castor.value: more dollars buy a lower average JCT; out of range is refused
add_test(NAME cli_scenario_value_trade COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_value_trade.sh
  $<TARGET_FILE:castor> ${SCN}/small.yaml 0.001 1000 ${CMAKE_CURRENT_BINARY_DIR}/value-trade)
castor_cli_test(scenario_unfinished_not_compared 0
  "castor against fixed-on-demand: not compared (castor left jobs unfinished)"
  simulate --scenario ${SCN}/budget_below_node.yaml --compare --quiet)
castor_cli_test(scenario_value_out_of_range 2 "--value \"0\": dollars per job-hour, 0.001 to 1e6"
  simulate --scenario ${SCN}/small.yaml --value 0)
castor_cli_test(scenario_value_not_a_number 2 "--value \"cheap\": dollars per job-hour"
  simulate --scenario ${SCN}/small.yaml --value cheap)
# --seed replaces the scenario's seed (the market's draws): the same as the key, other dollars
# with another; not a whole number is refused
add_test(NAME cli_scenario_seed COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_seed.sh
  $<TARGET_FILE:castor> ${SCN}/small.yaml 5 6 ${CMAKE_CURRENT_BINARY_DIR}/seed)
castor_cli_test(scenario_seed_not_whole 2 "--seed \"1.5\": a whole number, 0 to 2147483647"
  simulate --scenario ${SCN}/small.yaml --seed 1.5)
