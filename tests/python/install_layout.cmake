# cmake -P: installs BUILD_DIR into a scratch DESTDIR, checks that PREFIX/PYDIR is on the
# sys.path of PYTHON (Debian's /usr/bin/python3), and imports riseml and riseml.torch from the
# staged copy alone (nothing from the build or source tree).
set(stage ${BUILD_DIR}/python-install-test)
file(REMOVE_RECURSE ${stage})
execute_process(COMMAND ${CMAKE_COMMAND} -E env DESTDIR=${stage} ${CMAKE_COMMAND} --install ${BUILD_DIR}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
set(dir ${PREFIX}/${PYDIR})
execute_process(COMMAND ${PYTHON} -c "import sys; sys.exit(0 if '${dir}' in sys.path else 1)"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${dir} is not on the sys.path of ${PYTHON}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${stage}${dir}
                ${PYTHON} -c "import riseml, riseml.torch, os; print(os.path.dirname(riseml.__file__)); riseml.init(); assert riseml.size() == 1"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                WORKING_DIRECTORY /)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^${stage}${dir}/riseml")
  message(FATAL_ERROR "import from the installed tree failed (${rc}): ${out} ${err}")
endif()
message(STATUS "installed to ${dir}: ok")
