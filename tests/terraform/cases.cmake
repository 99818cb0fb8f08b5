# cases.cmake: terraform/ checked without a cloud (tests/terraform/check_terraform.py under
# .venv-iac, made by scripts/iac-venv; without it the tests are skipped, or fail when CI is set).

set(IAC_RUN "${CMAKE_CURRENT_SOURCE_DIR}/terraform/run.sh" "${CMAKE_SOURCE_DIR}")
set(IAC_FIX "${CMAKE_CURRENT_SOURCE_DIR}/terraform/fixtures")

function(castor_iac_test name)
  add_test(NAME iac_${name} COMMAND ${IAC_RUN} ${ARGN})
  set_tests_properties(iac_${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

castor_iac_test(templates --only templates --castor $<TARGET_FILE:castor>)
if(CASTOR_SANITIZE)
  return() # the rest does not run castor: once, in the plain build, is enough
endif()
castor_iac_test(checker_parts --unittest)
castor_iac_test(structure --only structure)
castor_iac_test(validations --only validations)
castor_iac_test(checkov --only checkov)
castor_iac_test(fmt --only fmt)

# The checker itself on small modules: one good, each other with one kind of fault.
castor_iac_test(fixture_good --expect 0 "0 fault(s)" ${IAC_FIX}/good)
castor_iac_test(fixture_undeclared_var --expect 1 "var.zones: no such variable is declared"
  ${IAC_FIX}/undeclared-var)
castor_iac_test(fixture_missing_source --expect 1 "source ./no-such-module: no module at"
  ${IAC_FIX}/missing-source)
castor_iac_test(fixture_bad_output_resource --expect 1 "output id: null_resource.two: no such resource"
  ${IAC_FIX}/bad-output)
castor_iac_test(fixture_bad_output_local --expect 1 "output local: local.nothing: no such local value"
  ${IAC_FIX}/bad-output)
castor_iac_test(fixture_bad_output_module --expect 1 "module.child.colour: the module has no output colour"
  ${IAC_FIX}/bad-output)
castor_iac_test(fixture_template_var --expect 1 "the template reads zones, which is not passed"
  ${IAC_FIX}/template-vars)
castor_iac_test(fixture_template_missing --expect 1 "no-such.tftpl does not exist"
  ${IAC_FIX}/template-vars)
castor_iac_test(fixture_module_unknown_arg --expect 1 "colour: the module at"
  ${IAC_FIX}/module-args)
castor_iac_test(fixture_module_required_arg --expect 1 "the required variable size of"
  ${IAC_FIX}/module-args)
# castor takes an instance with the cluster's tag or label for one of its own, and terminates one
# it did not launch: never on the controller; nor a controller name the launch role may delete
castor_iac_test(fixture_controller_cluster_tag --expect 1
  "aws_instance.controller: its tags carry the cluster's castor:cluster" ${IAC_FIX}/controller-tag)
castor_iac_test(fixture_controller_name_condition --expect 1
  "matches google_project_iam_member.launch's condition startsWith(\"castor-\")" ${IAC_FIX}/controller-tag)
