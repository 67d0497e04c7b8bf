# Finds UCX's UCP headers for ctran's ucx transport. Only the headers: libucp is loaded at run
# time (dlopen), so the libraries link against nothing of UCX and run where it is missing.
#
# Looked for, in order:
#   1. RCCLX_UCX_ROOT (CMake variable, else the environment variable): <root>/include/ucp/api;
#   2. the installed `libucx` Python package (PyPI libucx-cu12 / libucx-cu13), which ships
#      include/ and lib/ beside its __init__.py;
#   3. the system (/usr/include/ucp/api/ucp.h, Debian's libucx-dev).
# Sets RCCLX_UCX_INCLUDE_DIR (empty when none was found, or RCCLX_WITH_UCX is OFF: the ucx
# transport is then compiled out and selecting it says why).
option(RCCLX_WITH_UCX "Compile the ucx transport when UCX's headers are found" ON)
set(RCCLX_UCX_ROOT "$ENV{RCCLX_UCX_ROOT}" CACHE PATH "A UCX installation whose include/ holds ucp/api/ucp.h")

set(RCCLX_UCX_INCLUDE_DIR "")
if(RCCLX_WITH_UCX)
  set(_rcclx_ucx_hints "")
  if(RCCLX_UCX_ROOT)
    list(APPEND _rcclx_ucx_hints "${RCCLX_UCX_ROOT}/include")
  endif()
  # The interpreter that builds the package, else any python3 on PATH.
  set(_rcclx_python "${Python_EXECUTABLE}")
  if(NOT _rcclx_python)
    find_program(_rcclx_python NAMES python3 python)
  endif()
  if(_rcclx_python)
    # find_spec: locates the package without importing it (importing loads nothing, but a
    # broken install should not fail the build).
    execute_process(
      COMMAND "${_rcclx_python}" -c
        "import importlib.util as u, os; s = u.find_spec('libucx'); print(os.path.dirname(s.origin) if s and s.origin else '')"
      OUTPUT_VARIABLE _rcclx_libucx_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rcclx_libucx_dir)
      list(APPEND _rcclx_ucx_hints "${_rcclx_libucx_dir}/include")
    endif()
  endif()
  # Explicit hints first, the system's default include paths last.
  find_path(_rcclx_ucx_header ucp/api/ucp.h HINTS ${_rcclx_ucx_hints} NO_CACHE)
  if(_rcclx_ucx_header)
    set(RCCLX_UCX_INCLUDE_DIR "${_rcclx_ucx_header}")
    file(STRINGS "${_rcclx_ucx_header}/ucp/api/ucp_version.h" _rcclx_ucx_version
         REGEX "#define UCP_API_(MAJOR|MINOR)")
    message(STATUS "ucx transport: UCP headers in ${RCCLX_UCX_INCLUDE_DIR} (${_rcclx_ucx_version}); libucp is loaded at run time")
  else()
    message(STATUS "ucx transport: compiled out (no ucp/api/ucp.h in RCCLX_UCX_ROOT, the libucx Python package or the system)")
  endif()
else()
  message(STATUS "ucx transport: compiled out (RCCLX_WITH_UCX=OFF)")
endif()
