# Decides GCNPART_HAVE_CUDA from GCNPART_CUDA (AUTO | ON | OFF) and whether a CUDA compiler exists, and enables the
# CUDA language when it is used. Without CUDA the kernels' .cu files, the cuBLAS / cuSPARSE / NCCL users and the GPU
# tests are left out; `--device cuda` then fails with "this build has no CUDA" (gcnpart::NoCudaBuild).
string(TOUPPER "${GCNPART_CUDA}" gcnpart_cuda_mode)
if(NOT gcnpart_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "GCNPART_CUDA must be AUTO, ON or OFF, got '${GCNPART_CUDA}'")
endif()

set(GCNPART_HAVE_CUDA OFF)
# The presets name the CUDA compiler and its launcher for every build; a CPU-only one reads them here only, so that
# CMake does not warn that they were not used.
set(gcnpart_cuda_settings "${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_LAUNCHER} ${CMAKE_CUDA_ARCHITECTURES}")
if(NOT gcnpart_cuda_mode STREQUAL "OFF")
  # The presets name /usr/local/cuda/bin/nvcc; where that is absent, look for nvcc elsewhere (PATH, CUDACXX).
  if(CMAKE_CUDA_COMPILER AND NOT EXISTS "${CMAKE_CUDA_COMPILER}")
    unset(CMAKE_CUDA_COMPILER CACHE)
    unset(CMAKE_CUDA_COMPILER)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(GCNPART_HAVE_CUDA ON)
  elseif(gcnpart_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "GCNPART_CUDA=ON but no CUDA compiler (nvcc) was found: install the CUDA toolkit (13.x) at "
                        "/usr/local/cuda, or configure with -DGCNPART_CUDA=AUTO or OFF for a CPU-only gcnpart")
  endif()
endif()

if(GCNPART_HAVE_CUDA)
  message(STATUS "gcnpart: CUDA compiler ${CMAKE_CUDA_COMPILER}: building the CPU and the CUDA code")
elseif(gcnpart_cuda_mode STREQUAL "OFF")
  message(NOTICE "gcnpart: GCNPART_CUDA=OFF: building a CPU-only gcnpart (--device cpu only)")
else()
  message(NOTICE "gcnpart: no CUDA compiler (nvcc) found: building a CPU-only gcnpart (--device cpu only; install "
                 "the CUDA toolkit and reconfigure for GPUs)")
endif()
