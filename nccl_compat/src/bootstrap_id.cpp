// ncclGetUniqueId and the bootstrap of a new communicator from its id (see bootstrap_id.hpp).
#include "bootstrap_id.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "api.hpp"
#include "ctran/logging.hpp"
#include "ctran/store.hpp"

namespace rcclx::nccl {
namespace {

// An id made from NCCL_COMM_ID: this magic, then "host:port" NUL-terminated.
constexpr char kEnvIdMagic[8] = {'R', 'C', 'C', 'L', 'X', 'E', 'N', 'V'};

bool isEnvId(const ncclUniqueId& id) {
  return std::memcmp(id.internal, kEnvIdMagic, sizeof(kEnvIdMagic)) == 0;
}

std::pair<std::string, int> parseHostPort(const std::string& s) {
  const size_t colon = s.rfind(':');
  int port = 0;
  if (colon != std::string::npos && colon > 0) port = std::atoi(s.c_str() + colon + 1);
  CTRAN_CHECK(port > 0 && port < 65536, ctran::InvalidArgument, "NCCL_COMM_ID='", s,
              "' is not host:port");
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {host, port};
}

// One NCCL_COMM_ID address may serve several communicators of a job, one after another: each
// takes the next generation's key prefix (every process creates them in the same order).
std::mutex gEnvMu;
std::map<std::string, int> gGenerations;
std::map<int, std::shared_ptr<ctran::TcpStoreServer>> gServers;  // rank 0's, by port

std::unique_ptr<ctran::Bootstrap> joinByEnv(const std::string& address, int rank, int nranks,
                                            std::shared_ptr<void>* keepAlive) {
  const auto [host, port] = parseHostPort(address);
  int generation = 0;
  std::shared_ptr<ctran::TcpStoreServer> server;
  // The address names no secret: RCCLX_JOB_SECRET, when set, guards the store (see
  // Bootstrap::fromEnv, which this mirrors); the server listens on the address's interface.
  const ctran::JobSecret secret = ctran::JobSecret::fromKnob();
  {
    std::lock_guard<std::mutex> lock(gEnvMu);
    generation = gGenerations[address]++;
    if (rank == 0) {
      auto& s = gServers[port];
      if (!s) s = std::make_shared<ctran::TcpStoreServer>(port, host, secret);
      server = s;
    }
  }
  auto store = std::make_shared<ctran::TcpStore>(host, port, ctran::Deadline::after(), secret);
  auto boot = std::make_unique<ctran::Bootstrap>(
      store, rank, nranks, ctran::strCat("nccl_comm_id/", generation),
      secret.empty() ? std::nullopt : std::optional<ctran::JobSecret>(secret));
  *keepAlive = server;
  CTRAN_INFO("bootstrap: rank ", rank, "/", nranks, " joined through NCCL_COMM_ID=", address,
             " (communicator ", generation, " of that address)");
  return boot;
}

}  // namespace

ncclUniqueId makeUniqueId() {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  const char* env = std::getenv("NCCL_COMM_ID");
  if (env != nullptr && *env != '\0') {
    parseHostPort(env);  // a malformed value fails here, on the rank that made the id
    const size_t n = std::strlen(env);
    CTRAN_CHECK(n + sizeof(kEnvIdMagic) < sizeof(id.internal), ctran::InvalidArgument,
                "NCCL_COMM_ID='", env, "' is too long for a unique id");
    std::memcpy(id.internal, kEnvIdMagic, sizeof(kEnvIdMagic));
    std::memcpy(id.internal + sizeof(kEnvIdMagic), env, n);
    return id;
  }
  const ctran::UniqueId cid = ctran::createUniqueId();
  std::memcpy(id.internal, cid.bytes.data(), sizeof(id.internal));
  return id;
}

void releaseUnjoinedId(const ncclUniqueId& id) {
  if (isEnvId(id)) return;  // rank 0's store of an NCCL_COMM_ID address serves the whole job
  ctran::UniqueId cid;
  std::memcpy(cid.bytes.data(), id.internal, sizeof(id.internal));
  ctran::releaseUniqueId(cid);
}

std::unique_ptr<ctran::Bootstrap> joinGroup(const ncclUniqueId& id, int rank, int nranks,
                                            std::shared_ptr<void>* keepAlive) {
  if (isEnvId(id)) {
    const char* at = id.internal + sizeof(kEnvIdMagic);
    const std::string address(at, strnlen(at, sizeof(id.internal) - sizeof(kEnvIdMagic)));
    // The address was valid where the id was made: a bad one here means corrupt id bytes.
    try {
      parseHostPort(address);
    } catch (const ctran::InvalidArgument& e) {
      throw ctran::InvalidArgument(
          ctran::strCat("commId: an id made from NCCL_COMM_ID holds a bad address: ", e.what()));
    }
    return joinByEnv(address, rank, nranks, keepAlive);
  }
  ctran::UniqueId cid;
  std::memcpy(cid.bytes.data(), id.internal, sizeof(id.internal));
  // Checked here so that the caller's message names the parameter the bytes came in.
  try {
    ctran::describeUniqueId(cid);
  } catch (const ctran::InvalidArgument& e) {
    throw ctran::InvalidArgument(ctran::strCat("commId: ", e.what()));
  }
  return ctran::Bootstrap::fromUniqueId(cid, rank, nranks);
}

}  // namespace rcclx::nccl
