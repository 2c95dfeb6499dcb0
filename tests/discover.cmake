# discover.cmake - the ctests of a C test program, from the program itself.
#
#   cmake -DEXE=<program> -DOUT=<file> [-DEMULATOR="qemu-aarch64 -L ..."] -P discover.cmake
#
# Runs `EXE --ctest` (testlib.h: one line per ctest, fields separated by
# tabs: name, labels separated by commas, OMP_NUM_THREADS or "-", then the
# program's arguments)
# and writes OUT, which ctest includes: an add_test() and a
# set_tests_properties() per line. Run after every build of the program, so
# a case exists in exactly one place, the program's table of cases.
# EMULATOR: the command that runs a cross-built program (e.g. "qemu-aarch64
# -L /usr/aarch64-linux-gnu"), empty for a native build.
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
execute_process(COMMAND ${emulator} "${EXE}" --ctest OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXE} --ctest failed (${status}): its tests cannot be registered")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REPLACE "\t" ";" fields "${line}")
  list(POP_FRONT fields name label threads)
  set(command "")
  foreach(word IN LISTS emulator)
    string(APPEND command "[==[${word}]==] ")
  endforeach()
  string(APPEND command "[==[${EXE}]==]")
  foreach(arg IN LISTS fields)
    string(APPEND command " [==[${arg}]==]")
  endforeach()
  string(REPLACE "," ";" label "${label}")
  set(properties "LABELS \"${label}\" TIMEOUT 300 SKIP_RETURN_CODE 77")
  if(NOT threads STREQUAL "-")
    string(APPEND properties " ENVIRONMENT OMP_NUM_THREADS=${threads}")
  endif()
  string(APPEND script "add_test([==[${name}]==] ${command})\n"
                       "set_tests_properties([==[${name}]==] PROPERTIES ${properties})\n")
endforeach()
file(WRITE "${OUT}.tmp" "${script}")
file(RENAME "${OUT}.tmp" "${OUT}")
