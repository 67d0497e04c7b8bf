# RCCLX_SANITIZE: the sanitizers every C/C++ target of the project is compiled and linked with,
# as -fsanitize takes them ("address,undefined", "thread"); empty (the default) for none.
# Undefined behaviour is fatal (-fno-sanitize-recover), so a test run fails on the first report.
# GPU code (nvcc, hipcc) is left as it is. `nox -s sanitize` (ASan + UBSan) and `nox -s tsan`
# build and test with it.
set(RCCLX_SANITIZE "" CACHE STRING "Sanitizers for the C/C++ code: \"\", address,undefined or thread")
if(RCCLX_SANITIZE)
  set(_rcclx_sanitize_flags "-fsanitize=${RCCLX_SANITIZE}" -fno-omit-frame-pointer)
  if(RCCLX_SANITIZE MATCHES "undefined")
    list(APPEND _rcclx_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_rcclx_sanitize_flags}>")
  add_link_options("-fsanitize=${RCCLX_SANITIZE}")
  message(STATUS "RCCLX_SANITIZE=${RCCLX_SANITIZE}: C/C++ built with ${_rcclx_sanitize_flags}")
endif()
