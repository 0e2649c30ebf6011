# Debian packages with CPack (`cpack -G DEB` in a build folder configured for the prefix /usr;
# contrib/packaging/build-debs.sh does all of it with Debian's compiler flags). One package per
# install component:
#   tools  -> riseml          the commands (riseml, riseml-launch, riseml-elastic, riseml-plan, riseml-bench,
#                             riseml-replay, riseml-pmix-probe), riseml-topology, the workloads
#   spank  -> riseml-spank    spank_riseml.so and a plugstack snippet under /usr/share that enables
#                             nothing until the admin links it into /etc/slurm/plugstack.conf.d
#   python -> python3-riseml  riseml and riseml.torch for Debian's python3
# The component spank_enable (the snippet in /etc/slurm/plugstack.conf.d that `cmake --install`
# puts there) is in no package. Included by the top CMakeLists.txt after the components.

set(RISEML_DEB_MAINTAINER "riseml developers <riseml@example.org>" CACHE STRING
    "Maintainer field of the .deb packages")
set(RISEML_DEB_RELEASE 1 CACHE STRING "Debian revision of the .deb packages")
option(RISEML_MAN_PAGES "Write man pages of the commands with help2man (build-debs.sh turns it on)" OFF)

set(RISEML_DEB_VERSION "${PROJECT_VERSION}-${RISEML_DEB_RELEASE}")
set(pkg_dir ${CMAKE_CURRENT_LIST_DIR})
set(pkg_out ${CMAKE_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${pkg_out})

set(CPACK_PACKAGE_NAME riseml)
set(CPACK_PACKAGE_VENDOR "riseml")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${RISEML_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${RISEML_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${RISEML_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# Each component's description: the first line is the synopsis, the rest the long description.
# tools: riseml
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME riseml)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "distributed deep learning on Slurm: job translator and launchers
riseml turns a RiseML job file (riseml.yml) into a readable sbatch script
(Horovod workers, distributed TensorFlow, parameter sweeps as job arrays)
and submits it. riseml-launch runs a PMIx job on one machine, riseml-elastic
an elastic Horovod job inside its Slurm allocation, riseml-plan
shows the placement the SPANK plugin (package riseml-spank) makes on a
node, riseml-bench and riseml-replay measure the allreduce core and the
scaling of a model's backward pass.")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "riseml-spank, python3-riseml, slurm-client")
set(components tools)

# spank: riseml-spank, tied to the Slurm it was built against (the loader refuses a plugin of
# another major.minor). slurm-wlm-basic-plugins is on every node that runs srun, sbatch or
# slurmd and always has the exact version of slurmd and slurm-client.
if(TARGET spank_riseml)
  set(slurm_version_h ${SLURM_SPANK_INCLUDE_DIR}/slurm/slurm_version.h)
  file(STRINGS ${slurm_version_h} slurm_version_line REGEX "^#define SLURM_VERSION_NUMBER ")
  if(NOT slurm_version_line MATCHES "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])")
    message(FATAL_ERROR "no SLURM_VERSION_NUMBER in ${slurm_version_h}")
  endif()
  math(EXPR slurm_major "0x${CMAKE_MATCH_1}")
  math(EXPR slurm_minor "0x${CMAKE_MATCH_2}")
  math(EXPR slurm_next_minor "${slurm_minor} + 1")
  foreach(v slurm_minor slurm_next_minor)
    if(${v} LESS 10)
      set(${v} "0${${v}}")
    endif()
  endforeach()
  set(RISEML_SLURM_SERIES "${slurm_major}.${slurm_minor}")
  set(CPACK_DEBIAN_SPANK_PACKAGE_NAME riseml-spank)
  set(CPACK_DEBIAN_SPANK_PACKAGE_SECTION admin)
  set(CPACK_DEBIAN_SPANK_PACKAGE_DEPENDS
      "riseml (= ${RISEML_DEB_VERSION}), slurm-wlm-basic-plugins (>= ${RISEML_SLURM_SERIES}), slurm-wlm-basic-plugins (<< ${slurm_major}.${slurm_next_minor})")
  set(CPACK_COMPONENT_SPANK_DESCRIPTION "SPANK plugin: topology-aware GPU, CPU and NIC binding for Slurm ${RISEML_SLURM_SERIES}
spank_riseml.so gives each task of a step run with --riseml-bind=auto its
GPUs, the nearest CPUs, memory and network cards from the node's hwloc
topology, and sets CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, OMP_NUM_THREADS and
Horovod's rank variables. Built for Slurm ${RISEML_SLURM_SERIES}.
Installing it enables nothing: link
/usr/share/riseml/plugstack.conf.d/riseml.conf into
/etc/slurm/plugstack.conf.d/ on the login and compute nodes to enable it.")
  list(APPEND components spank)
endif()

# python: python3-riseml, for the python3 the extension was built for.
if(TARGET _riseml)
  execute_process(COMMAND ${PYTHON_EXECUTABLE} -c
    "import sys; print(f'{sys.version_info[0]};{sys.version_info[1]}')"
    OUTPUT_VARIABLE pyver OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(GET pyver 0 py_major)
  list(GET pyver 1 py_minor)
  math(EXPR py_next "${py_minor} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-riseml)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "python3 (>= ${py_major}.${py_minor}~), python3 (<< ${py_major}.${py_next}), python3-numpy")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS "riseml (= ${RISEML_DEB_VERSION})")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-torch")
  # The torch.distributed backend is C++ against one torch's ABI: the package says which.
  set(riseml_deb_torch_line "")
  if(TARGET _riseml_c10d)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" torch_series "${RISEML_TORCH_VERSION}")
    set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-torch (>= ${torch_series}~)")
    set(riseml_deb_torch_line "
riseml.torch.distributed (init_process_group(\"riseml\")) is built against
torch ${RISEML_TORCH_VERSION} (python3-torch) and works with that torch only.")
  endif()
  set(CPACK_COMPONENT_PYTHON_DESCRIPTION "Horovod-style collectives for PyTorch and NumPy on Slurm (Python 3)
The riseml module and riseml.torch, a drop-in for Horovod's API
(import riseml.torch as hvd): allreduce, allgather, broadcast, alltoall,
process sets and DistributedOptimizer over riseml's ring-allreduce core
(shared memory in a node, TCP between nodes). Workers start under
srun --mpi=pmix, mpirun or riseml-launch (package riseml).${riseml_deb_torch_line}")
  configure_file(${pkg_dir}/python3-riseml.postinst ${pkg_out}/python/postinst COPYONLY)
  configure_file(${pkg_dir}/python3-riseml.prerm ${pkg_out}/python/prerm COPYONLY)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA "${pkg_out}/python/postinst;${pkg_out}/python/prerm")
  list(APPEND components python)
endif()
set(CPACK_COMPONENTS_ALL ${components})

# /usr/share/doc/PACKAGE/{copyright,changelog.Debian.gz}: in the packages only
# (EXCLUDE_FROM_ALL: a plain `cmake --install` leaves them out).
find_program(RISEML_GZIP gzip REQUIRED)
string(TIMESTAMP RISEML_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
configure_file(${pkg_dir}/changelog.in ${pkg_out}/changelog.Debian @ONLY)
execute_process(COMMAND ${RISEML_GZIP} -9nf ${pkg_out}/changelog.Debian RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${pkg_out}/changelog.Debian failed")
endif()
foreach(component ${components})
  string(TOUPPER ${component} upper)
  set(package ${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  install(FILES ${pkg_dir}/copyright ${pkg_out}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()

# pkg-config's pmix flags carry -Wl,-rpath,/usr/lib/<triplet>/pmix2/lib, which `cmake --install`
# keeps (it is a link flag, not CMake's own RPATH). Debian's libpmix2 links libpmix.so.2 into the
# multiarch folder as well, so the packaged programs need no RUNPATH (lintian: an error,
# custom-library-search-path): removed in the package's component install only.
set(riseml_runpath_files "")
foreach(target riseml-launch riseml-elastic riseml-pmix-probe riseml-bench riseml-replay riseml-plan riseml)
  if(TARGET ${target})
    list(APPEND riseml_runpath_files "${CMAKE_INSTALL_BINDIR}/$<TARGET_FILE_NAME:${target}>")
  endif()
endforeach()
install(CODE "
  foreach(f ${riseml_runpath_files})
    file(RPATH_REMOVE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${f}\")
  endforeach()" COMPONENT tools EXCLUDE_FROM_ALL)
foreach(module _riseml _riseml_c10d)
  if(TARGET ${module})
    install(CODE "
      file(RPATH_REMOVE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${RISEML_PYTHON_INSTALL_DIR}/$<TARGET_FILE_NAME:${module}>\")"
      COMPONENT python EXCLUDE_FROM_ALL)
  endif()
endforeach()

# Man pages from each command's --help (help2man), gzipped, for the commands in bin/.
if(RISEML_MAN_PAGES)
  find_program(RISEML_HELP2MAN help2man REQUIRED)
  set(man_pages "")
  set(riseml_man_riseml "translate and submit RiseML job files on Slurm")
  set(riseml_man_riseml-launch "run a PMIx job of N processes on this machine")
  set(riseml_man_riseml-elastic "run an elastic Horovod job inside its Slurm allocation")
  set(riseml_man_riseml-pmix-probe "check what a launcher tells a PMIx client")
  set(riseml_man_riseml-plan "show the task placement of spank_riseml.so for a node")
  set(riseml_man_riseml-bench "measure riseml's allreduce against Open MPI and Gloo")
  set(riseml_man_riseml-replay "replay a model's backward pass through riseml's engine")
  foreach(tool riseml riseml-launch riseml-elastic riseml-pmix-probe riseml-plan riseml-bench riseml-replay)
    if(NOT TARGET ${tool})
      continue()
    endif()
    set(man ${pkg_out}/man/${tool}.1)
    add_custom_command(OUTPUT ${man}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${pkg_out}/man
      COMMAND ${RISEML_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
              --name=${riseml_man_${tool}} --section=1 --output=${man} $<TARGET_FILE:${tool}>
      COMMAND ${RISEML_GZIP} -9nf ${man}
      DEPENDS ${tool}
      COMMENT "help2man ${tool}"
      VERBATIM)
    list(APPEND man_pages ${man}.gz)
    install(FILES ${man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
  endforeach()
  add_custom_target(riseml-man-pages ALL DEPENDS ${man_pages})
endif()

# Checked when cpack runs: packages for /usr only, from Debian's python3, and no libraries that
# come from no Debian package (the CUDA toolkit in /usr/local).
set(RISEML_CUDA_LIBRARY_CHECK "")
if(RISEML_CUDA_ENABLED)
  set(RISEML_CUDA_LIBRARY_CHECK "${RISEML_NCCL_LIBRARY}")
endif()
configure_file(${pkg_dir}/cpack_project_config.cmake.in ${pkg_out}/cpack_project_config.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${pkg_out}/cpack_project_config.cmake)
set(CPACK_GENERATOR DEB)
include(CPack)
