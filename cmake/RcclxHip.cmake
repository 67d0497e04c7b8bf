# The AMD build (-DRCCLX_GPU_BACKEND=HIP): the same sources as the CUDA build, compiled with
# hipcc for AMD GPUs. Included by the top-level CMakeLists.txt before project(), because it picks
# the compiler: hipcc compiles every C++ file (the .cpp files as plain C++ with the HIP headers,
# the .cu files as HIP for RCCLX_HIP_ARCHITECTURES). The compile commands run with
# HIP_PLATFORM=amd, so a machine that also has nvcc still gets AMD code.
# RcclxCuda.cmake then calls rcclx_hip_enable() to set RCCLX_HAVE_HIP / RCCLX_HAVE_GPU.

set(RCCLX_HIP_ARCHITECTURES "gfx90a" CACHE STRING
  "AMD GPU targets of the HIP build, separated by semicolons (e.g. gfx90a;gfx942)")

find_program(RCCLX_HIPCC NAMES hipcc HINTS "$ENV{ROCM_PATH}/bin" /opt/rocm/bin)
if(NOT RCCLX_HIPCC)
  message(FATAL_ERROR "RCCLX_GPU_BACKEND=HIP needs hipcc: install ROCm, or Debian's hipcc "
    "package (apt-get install hipcc), or `nox -s hip`, which installs it")
endif()
# hipcc picks nvcc over clang when HIP_PLATFORM is unset and nvcc is on the PATH.
set(ENV{HIP_PLATFORM} amd)
set(ENV{HIP_COMPILE_CXX_AS_HIP} 0)
set(CMAKE_CXX_COMPILER "${RCCLX_HIPCC}" CACHE FILEPATH "hipcc (RCCLX_GPU_BACKEND=HIP)" FORCE)
# HIP_COMPILE_CXX_AS_HIP=0: hipcc would otherwise compile every .cpp as HIP too (a device pass
# per host file); the .cu files ask for HIP themselves (rcclx_hip_sources). HCC_AMDGPU_TARGET:
# the targets, so hipcc does not probe this machine's GPUs (rocm_agent_enumerator) for them.
string(REPLACE ";" "," _rcclx_hip_targets "${RCCLX_HIP_ARCHITECTURES}")
set(_rcclx_hip_env "${CMAKE_COMMAND}" -E env HIP_PLATFORM=amd HIP_COMPILE_CXX_AS_HIP=0
  "HCC_AMDGPU_TARGET=${_rcclx_hip_targets}")
set(ENV{HCC_AMDGPU_TARGET} "${_rcclx_hip_targets}")
set(CMAKE_CXX_COMPILER_LAUNCHER ${_rcclx_hip_env})
set(CMAKE_CXX_LINKER_LAUNCHER ${_rcclx_hip_env})

# Called after project(): the HIP runtime library and the result variables.
macro(rcclx_hip_enable)
  find_library(RCCLX_AMDHIP64 amdhip64 HINTS "$ENV{ROCM_PATH}/lib" /opt/rocm/lib)
  if(NOT RCCLX_AMDHIP64)
    message(FATAL_ERROR "RCCLX_GPU_BACKEND=HIP: libamdhip64 not found (Debian: libamdhip64-dev)")
  endif()
  set(RCCLX_HAVE_HIP ON)
  set(RCCLX_HAVE_GPU ON)
  message(STATUS "RCCLX: GPU code enabled for HIP (${RCCLX_HIPCC}), AMD targets "
    "${RCCLX_HIP_ARCHITECTURES}")
endmacro()

# rcclx_hip_sources(<target>): at the end of the calling directory, marks the target's .cu
# files as HIP sources for RCCLX_HIP_ARCHITECTURES (deferred, so sources added after the call
# count too).
function(rcclx_hip_sources target)
  # A deferred call evaluates its arguments when it runs: pass the name, not the variable.
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _rcclx_hip_mark_sources [[${target}]])")
endfunction()

function(_rcclx_hip_mark_sources target)
  get_target_property(sources ${target} SOURCES)
  set(options -x hip)
  foreach(arch IN LISTS RCCLX_HIP_ARCHITECTURES)
    list(APPEND options "--offload-arch=${arch}")
  endforeach()
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.cu$")
      set_source_files_properties(${source} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "${options}")
    endif()
  endforeach()
endfunction()
