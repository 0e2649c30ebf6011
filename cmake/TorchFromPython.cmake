# torch as the Python interpreter the binding is built for sees it (PYTHON_EXECUTABLE): the
# torch a user pip-installed into a venv or conda env, or Debian's python3-torch. Its headers
# and libraries come from torch itself (torch.utils.cpp_extension), not from TorchConfig.cmake,
# which on a machine with Debian's libtorch-dev mixes that libtorch into a pip torch's build.
#
# Defines, when that Python imports torch:
#   riseml::torch         torch's C++ API (c10, torch_cpu, torch), with torch's C++ ABI flag
#   riseml::torch_python  + libtorch_python (the ProcessGroup/Store types torch registers)
#   riseml::torch_cuda    + c10_cuda, torch_cuda (only for a CUDA build of torch)
#   RISEML_TORCH_FOUND, RISEML_TORCH_VERSION (2.15.0), RISEML_TORCH_CUDA (ON/OFF)
#   RISEML_TORCH_NCCL_LIBRARY, RISEML_TORCH_CUDART_LIBRARY: the libnccl.so.2 and libcudart a
#     CUDA wheel loads (pip's nvidia-* packages), empty otherwise: riseml's GPU parts use the
#     same ones (allreduce/cuda), as a process can hold only one libnccl.so.2.
# and a clear message when torch is missing, too old, or built with the other C++ ABI.
set(RISEML_TORCH_FOUND OFF)
set(RISEML_TORCH_CUDA OFF)
execute_process(
  COMMAND ${PYTHON_EXECUTABLE} -c [=[
import os, torch, torch.utils.cpp_extension as e
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
print(torch.__version__.split("+")[0])
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("|".join(p for p in e.include_paths() if os.path.isdir(p)))
print(lib)
print(int(torch.version.cuda is not None and os.path.exists(os.path.join(lib, "libc10_cuda.so"))))
# The NCCL and CUDA runtime a CUDA wheel brings (pip's nvidia-* packages), if any.
import glob, site
found = lambda pattern: sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", pattern)))
print((found("nccl/lib/libnccl.so.2") or [""])[0])
print((found("*/lib/libcudart.so.*") or [""])[0])
]=]
  RESULT_VARIABLE torch_rc OUTPUT_VARIABLE torch_out ERROR_VARIABLE torch_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT torch_rc EQUAL 0)
  string(REGEX REPLACE ".*\n([^\n]+)\n?$" "\\1" torch_err "${torch_err}")
  if(SKBUILD)
    # pip: building without the backend would hide the cause from the user.
    message(FATAL_ERROR "riseml: ${PYTHON_EXECUTABLE} cannot import torch (${torch_err}). Install "
                        "torch first and build with the env's torch: pip install "
                        "--no-build-isolation . (or build without the torch.distributed backend: "
                        "pip install . -Ccmake.define.RISEML_TORCH=OFF)")
  endif()
  message(WARNING "torch not found by ${PYTHON_EXECUTABLE} (${torch_err}): the torch.distributed "
                  "backend is skipped. Build for a Python that has torch: "
                  "-DPYTHON_EXECUTABLE=/path/to/venv/bin/python (see contrib/python-venv.sh)")
  return()
endif()
# One field per line; the include directories (there are several) are joined with '|'.
string(REPLACE "\n" ";" torch_out "${torch_out}")
list(GET torch_out 0 RISEML_TORCH_VERSION)
list(GET torch_out 1 torch_abi)
list(GET torch_out 2 torch_includes)
list(GET torch_out 3 torch_lib)
list(GET torch_out 4 torch_cuda)
list(LENGTH torch_out torch_fields)
set(RISEML_TORCH_NCCL_LIBRARY "")
set(RISEML_TORCH_CUDART_LIBRARY "")
if(torch_fields GREATER 6)
  list(GET torch_out 5 RISEML_TORCH_NCCL_LIBRARY)
  list(GET torch_out 6 RISEML_TORCH_CUDART_LIBRARY)
endif()
string(REPLACE "|" ";" torch_includes "${torch_includes}")

if(RISEML_TORCH_VERSION VERSION_LESS 1.13)
  message(WARNING "torch ${RISEML_TORCH_VERSION} (${PYTHON_EXECUTABLE}) is too old for the riseml "
                  "backend: it needs torch 1.13 (Debian 12) or 2.x; pip install 'torch>=2.6'")
  return()
endif()
if(NOT torch_abi EQUAL 1)
  # riseml's libraries (and Debian's C++ libraries they use) are built with the C++11 ABI; a
  # torch built without it cannot share std::string with them.
  message(FATAL_ERROR "torch ${RISEML_TORCH_VERSION} (${PYTHON_EXECUTABLE}) was built with the old "
                      "C++ ABI (_GLIBCXX_USE_CXX11_ABI=0), riseml with the C++11 ABI. Use torch "
                      ">= 2.6 from PyPI (its wheels use the C++11 ABI), or build without the torch "
                      "backend: -DRISEML_TORCH=OFF")
endif()

foreach(name c10 torch_cpu torch torch_python c10_cuda torch_cuda)
  set(torch_${name}_library ${torch_lib}/lib${name}.so)
endforeach()
foreach(name c10 torch_cpu torch torch_python)
  if(NOT EXISTS ${torch_${name}_library})
    message(WARNING "torch ${RISEML_TORCH_VERSION}: ${torch_${name}_library} is missing; the "
                    "torch.distributed backend is skipped")
    return()
  endif()
endforeach()

add_library(riseml_torch_cxx INTERFACE)
add_library(riseml::torch ALIAS riseml_torch_cxx)
# torch's headers are not warning-clean under -Wextra: system headers here.
target_include_directories(riseml_torch_cxx SYSTEM INTERFACE ${torch_includes})
target_link_libraries(riseml_torch_cxx INTERFACE
  ${torch_c10_library} ${torch_torch_cpu_library} ${torch_torch_library})
string(REPLACE "." ";" torch_version_parts "${RISEML_TORCH_VERSION}")
list(GET torch_version_parts 0 torch_major)
list(GET torch_version_parts 1 torch_minor)
target_compile_definitions(riseml_torch_cxx INTERFACE _GLIBCXX_USE_CXX11_ABI=1
  RISEML_TORCH_MAJOR=${torch_major} RISEML_TORCH_MINOR=${torch_minor})
# The libraries find each other (and, for pip's CUDA build, the nvidia-* packages) through their
# own RUNPATH; ours only needs torch's lib directory.
set_target_properties(riseml_torch_cxx PROPERTIES INTERFACE_LINK_DIRECTORIES ${torch_lib})

add_library(riseml_torch_python INTERFACE)
add_library(riseml::torch_python ALIAS riseml_torch_python)
target_link_libraries(riseml_torch_python INTERFACE riseml_torch_cxx ${torch_torch_python_library})

if(torch_cuda AND EXISTS ${torch_torch_cuda_library})
  set(RISEML_TORCH_CUDA ON)
  add_library(riseml_torch_cuda INTERFACE)
  add_library(riseml::torch_cuda ALIAS riseml_torch_cuda)
  target_link_libraries(riseml_torch_cuda INTERFACE riseml_torch_cxx
    ${torch_c10_cuda_library} ${torch_torch_cuda_library})
endif()
set(RISEML_TORCH_LIBRARY_DIR ${torch_lib})
set(RISEML_TORCH_FOUND ON)
message(STATUS "torch ${RISEML_TORCH_VERSION} from ${PYTHON_EXECUTABLE} (CUDA build: ${RISEML_TORCH_CUDA})")
