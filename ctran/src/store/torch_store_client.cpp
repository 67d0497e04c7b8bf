// TorchStoreClient: torch's TCPStore wire protocol, client side, for set / wait / get.
//
// Every request is a one-byte query type followed by its arguments in the host's byte order: a
// key is a u64 length and its bytes, a value the same, a key list a u64 count and the keys. The
// session opens with VALIDATE and a u32 magic number (no reply). WAIT is answered with one byte
// once every key exists; GET with a u64 length and the value; ADD (a key and an i64) with the
// i64 sum. torch's own clients put '/' before every key on the wire; so does this one, so that
// a key reads the same from torch.
#include "torch_store_client.hpp"

#include "ctran/checks.hpp"

namespace ctran {
namespace {

// Values of torch's QueryType and WaitResponseType that this client uses.
constexpr uint8_t kValidate = 0;
constexpr uint8_t kSet = 1;
constexpr uint8_t kGet = 3;
constexpr uint8_t kAdd = 4;
constexpr uint8_t kWait = 6;
constexpr uint8_t kStopWaiting = 0;
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
// A reply longer than this is not a value this client stored: the peer is not a torch store.
constexpr uint64_t kMaxReplyBytes = 1 << 20;

class Request {
 public:
  explicit Request(uint8_t query) { bytes_.push_back(query); }
  Request& u32(uint32_t v) { return raw(&v, sizeof v); }
  Request& u64(uint64_t v) { return raw(&v, sizeof v); }
  Request& i64(int64_t v) { return raw(&v, sizeof v); }
  Request& blob(const void* data, size_t n) { return u64(n).raw(data, n); }
  Request& key(const std::string& k) {
    const std::string onWire = "/" + k;
    return blob(onWire.data(), onWire.size());
  }
  void sendOn(Socket& s) const { s.sendAll(bytes_.data(), bytes_.size()); }

 private:
  Request& raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return *this;
  }
  Bytes bytes_;
};

}  // namespace

TorchStoreClient::TorchStoreClient(const SocketAddress& addr, const Deadline& deadline)
    : addr_(addr), socket_(Socket::connect(addr, deadline)) {
  Request(kValidate).u32(kValidationMagic).sendOn(socket_);
}

void TorchStoreClient::set(const std::string& key, const Bytes& value) {
  Request(kSet).key(key).blob(value.data(), value.size()).sendOn(socket_);
}

Bytes TorchStoreClient::get(const std::string& key, const Deadline& deadline) {
  Request(kWait).u64(1).key(key).sendOn(socket_);
  uint8_t verdict = 0xff;
  if (!socket_.recvAll(&verdict, 1, &deadline)) {
    throw RemoteError(strCat("torch store at ", addr_.str(), " closed the connection while ",
                             "this process waited for key '", key, "'"));
  }
  CTRAN_CHECK(verdict == kStopWaiting, RemoteError, "torch store at ", addr_.str(),
              " answered a wait for key '", key, "' with ", int{verdict},
              " (not a torch TCPStore?)");
  Request(kGet).key(key).sendOn(socket_);
  uint64_t length = 0;
  CTRAN_CHECK(socket_.recvAll(&length, sizeof length, &deadline), RemoteError, "torch store at ",
              addr_.str(), " closed the connection before the value of key '", key, "'");
  CTRAN_CHECK(length <= kMaxReplyBytes, RemoteError, "torch store at ", addr_.str(),
              " announced a value of ", length, " bytes for key '", key,
              "' (not a torch TCPStore?)");
  Bytes value(length);
  if (length > 0 && !socket_.recvAll(value.data(), length, &deadline)) {
    throw RemoteError(strCat("torch store at ", addr_.str(),
                             " closed the connection before the value of key '", key, "'"));
  }
  return value;
}

int64_t TorchStoreClient::add(const std::string& key, int64_t delta, const Deadline& deadline) {
  Request(kAdd).key(key).i64(delta).sendOn(socket_);
  int64_t sum = 0;
  CTRAN_CHECK(socket_.recvAll(&sum, sizeof sum, &deadline), RemoteError, "torch store at ",
              addr_.str(), " closed the connection before answering an add to key '", key, "'");
  return sum;
}

}  // namespace ctran
