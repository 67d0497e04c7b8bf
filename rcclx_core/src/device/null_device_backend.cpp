// The device back-end of a build without GPU code: creating one fails, naming why.
#include "ctran/checks.hpp"
#include "device/device_backend.hpp"

namespace rcclx {

std::unique_ptr<DeviceBackend> DeviceBackend::create(ctran::PeerGroup&, const Settings&, int device,
                                                     HostBackend&) {
  throw ctran::CudaError(ctran::strCat("communicator: device ", device,
                                       " requested, but this build has no GPU code (built "
                                       "without a CUDA compiler)"));
}

}  // namespace rcclx
