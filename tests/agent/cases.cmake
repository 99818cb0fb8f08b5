# cases.cmake: libcastor's tests beyond the cmocka ones: the PyTorch example end to end against a
# real API server (test_pytorch.py) and under the local world (../e2e/test_pytorch_world.py), and a
# program built outside the tree from the installed
# header and pkg-config file (install_check.sh).

# Debian's python3-torch imports only under its own interpreter, not a pyenv python3 on PATH.
set(CASTOR_TORCH_PYTHON "/usr/bin/python3.11" CACHE FILEPATH "Python with Debian's python3-torch")
set(castor_e2e_args --build "${CMAKE_BINARY_DIR}" --source "${CMAKE_SOURCE_DIR}")
if(CASTOR_SANITIZE)
  # the replicas load a sanitized libcastor into an interpreter that is not: preload the runtimes
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
    OUTPUT_VARIABLE castor_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
    OUTPUT_VARIABLE castor_ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND castor_e2e_args --preload "${castor_asan}:${castor_ubsan}")
endif()
if(EXISTS "${CASTOR_TORCH_PYTHON}")
  add_test(NAME agent_test_pytorch COMMAND "${CASTOR_TORCH_PYTHON}"
    "${CMAKE_CURRENT_SOURCE_DIR}/agent/test_pytorch.py" ${castor_e2e_args})
else()
  add_test(NAME agent_test_pytorch COMMAND sh -c
    "echo 'test_pytorch: ${CASTOR_TORCH_PYTHON} not found'; [ -z \"$CI\" ] && exit 77; exit 1")
endif()
set_tests_properties(agent_test_pytorch PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
  DEPENDS agent_test_libcastor)

# The same example under the whole local world (tests/e2e/test_pytorch_world.py): castor run,
# castor-node processes, a preempted node.
if(EXISTS "${CASTOR_TORCH_PYTHON}")
  add_test(NAME e2e_test_pytorch_world COMMAND "${CASTOR_TORCH_PYTHON}"
    "${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_pytorch_world.py" ${castor_e2e_args})
else()
  add_test(NAME e2e_test_pytorch_world COMMAND sh -c
    "echo 'test_pytorch_world: ${CASTOR_TORCH_PYTHON} not found'; [ -z \"$CI\" ] && exit 77; exit 1")
endif()
set_tests_properties(e2e_test_pytorch_world PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
  DEPENDS agent_test_pytorch)

set(castor_install_flags "")
if(CASTOR_SANITIZE)
  set(castor_install_flags "-fsanitize=address,undefined")
endif()
add_test(NAME agent_install_pkgconfig COMMAND sh "${CMAKE_CURRENT_SOURCE_DIR}/agent/install_check.sh"
  "${CMAKE_BINARY_DIR}" "${CMAKE_SOURCE_DIR}" "${CMAKE_C_COMPILER}" "${castor_install_flags}")
