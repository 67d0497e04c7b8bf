# Decides whether the GPU code is compiled, and for which vendor. Sets RCCLX_HAVE_GPU, and
# RCCLX_HAVE_CUDA or RCCLX_HAVE_HIP; the CUDA build enables the CUDA language. Defines
# rcclx_link_gpu_runtime(<target>): the static CUDA runtime (it loads the driver lazily, so the
# libraries still load on machines without a GPU driver), or libamdhip64 in the HIP build
# (RCCLX_GPU_BACKEND=HIP, cmake/RcclxHip.cmake), whose .cu files it also marks as HIP sources.
set(RCCLX_HAVE_CUDA OFF)
set(RCCLX_HAVE_HIP OFF)
set(RCCLX_HAVE_GPU OFF)
if(RCCLX_GPU_BACKEND STREQUAL "HIP")
  rcclx_hip_enable()
elseif(RCCLX_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES "${RCCLX_CUDA_ARCHITECTURES}")
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(RCCLX_HAVE_CUDA ON)
    set(RCCLX_HAVE_GPU ON)
    message(STATUS "RCCLX: GPU code enabled for CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    message(STATUS "RCCLX: no CUDA compiler found, building the CPU-only libraries")
  endif()
else()
  message(STATUS "RCCLX: GPU code disabled (RCCLX_WITH_CUDA=OFF)")
endif()

function(rcclx_link_gpu_runtime target)
  if(RCCLX_HAVE_CUDA)
    target_link_libraries(${target} PRIVATE CUDA::cudart_static)
    target_compile_definitions(${target} PUBLIC RCCLX_HAVE_CUDA=1 RCCLX_HAVE_GPU=1)
  elseif(RCCLX_HAVE_HIP)
    target_link_libraries(${target} PRIVATE "${RCCLX_AMDHIP64}")
    # __HIP_PLATFORM_AMD__: what the HIP headers need in host files compiled as plain C++.
    target_compile_definitions(${target} PUBLIC RCCLX_HAVE_HIP=1 RCCLX_HAVE_GPU=1
      __HIP_PLATFORM_AMD__=1)
    rcclx_hip_sources(${target})
  endif()
endfunction()
