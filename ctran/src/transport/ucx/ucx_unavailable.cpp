// The ucx transport of a build without UCX's headers (CMake found no ucp/api/ucp.h): selecting
// it fails, saying how to build it in.
#include "ctran/checks.hpp"
#include "ucx_transport.hpp"

namespace ctran {

std::string ucxUnavailableReason() {
  return "this build of ctran has no ucx transport: it was built without UCX headers (no "
         "ucp/api/ucp.h in RCCLX_UCX_ROOT, the libucx Python package or the system; install "
         "libucx-cu12 or libucx-dev, or set RCCLX_UCX_ROOT, and rebuild)";
}

std::string ucxLibraryDescription() { return ""; }

std::unique_ptr<Transport> createUcxTransport(Bootstrap&, const std::vector<int>&, GroupFailure*) {
  throw InvalidUsage(strCat("ucx transport: ", ucxUnavailableReason()));
}

}  // namespace ctran
