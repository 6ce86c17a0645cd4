# Script mode (cmake -P), run at build time by share/CMakeLists.txt: writes
# the man page OUTPUT of PROGRAM with help2man from its --help and --version,
# with a COMMANDS section holding the --help of each of SUBCOMMANDS
# (comma-separated), so the page documents every flag of every command.
if(NOT PROGRAM OR NOT OUTPUT OR NOT HELP2MAN)
  message(FATAL_ERROR "man_page.cmake needs -DPROGRAM=... -DOUTPUT=... -DHELP2MAN=...")
endif()
get_filename_component(name "${PROGRAM}" NAME)
set(ENV{ASAN_OPTIONS} "detect_leaks=0")  # the sanitizer build runs the programs too
set(include "${OUTPUT}.include")
file(WRITE "${include}" "")
string(REPLACE "," ";" SUBCOMMANDS "${SUBCOMMANDS}")
if(SUBCOMMANDS)
  file(APPEND "${include}" "[COMMANDS]\n")
  foreach(sub ${SUBCOMMANDS})
    execute_process(COMMAND "${PROGRAM}" ${sub} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${name} ${sub} --help failed (${rc})")
    endif()
    string(REPLACE "\\" "\\\\" text "${text}")
    file(APPEND "${include}" ".SS \"${name} ${sub}\"\n.nf\n${text}.fi\n")
  endforeach()
endif()
file(APPEND "${include}" "[SEE ALSO]\nThe README of the dfx package (share/doc/dfx/README.md).\n")
execute_process(
  COMMAND "${HELP2MAN}" --no-info --no-discard-stderr --name "${DESCRIPTION}"
          --include "${include}" --output "${OUTPUT}" "${PROGRAM}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man ${name} failed (${rc})")
endif()
