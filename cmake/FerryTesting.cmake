# Test helpers shared by every test folder.

# ferry_add_unit_test(<name> SOURCES <files...> LIBS <targets...> [LABELS <extra labels...>])
# A GoogleTest executable; every test case becomes a CTest test labelled `unit` plus LABELS.
function(ferry_add_unit_test name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} GTest::gtest_main GTest::gmock ferry_warnings)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR})
  set(labels unit ${A_LABELS})
  # gtest_discover_tests flattens list-valued PROPERTIES, so labels are set by a second include
  # file that runs after the discovered tests are defined (it reads the <target>_TESTS list).
  gtest_discover_tests(${name} TEST_LIST ${name}_TESTS PROPERTIES TIMEOUT 120 DISCOVERY_TIMEOUT 60)
  set(label_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
  file(WRITE ${label_file}
    "if(${name}_TESTS)\n  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${labels}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${label_file})
endfunction()

# ferry_add_fuzz_target(<name> SOURCES <files...> LIBS <targets...> CORPUS <folder>)
# With FERRY_FUZZ (clang): a libFuzzer binary `<name>` (run it as `build/fuzz/.../<name> CORPUS`).
# Otherwise: the same LLVMFuzzerTestOneInput linked with a replay driver that feeds it every file
# of CORPUS, registered as a CTest test labelled `unit;fuzz` so the corpus is checked on every run.
function(ferry_add_fuzz_target name)
  cmake_parse_arguments(A "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS} ferry_warnings)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR})
  if(FERRY_FUZZ)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    target_sources(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/fuzz/replay_main.cc)
    add_test(NAME ${name}_corpus COMMAND ${name} ${A_CORPUS})
    set_tests_properties(${name}_corpus PROPERTIES LABELS "unit;fuzz" TIMEOUT 300)
  endif()
endfunction()

# ferry_add_python_test(<name> <script> LABELS <labels...> [ARGS <args...>] [TIMEOUT <s>])
# A Python (standard library only) test of the real `ferry` binary ($FERRY_BIN), run from the
# script's folder, labelled exactly LABELS; the folders wrap it to add their own label.
function(ferry_add_python_test name script)
  cmake_parse_arguments(A "" "TIMEOUT" "LABELS;ARGS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME ${name}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/${script} ${A_ARGS}
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES
    LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
    ENVIRONMENT "FERRY_BIN=$<TARGET_FILE:ferry>;PYTHONDONTWRITEBYTECODE=1")
endfunction()
