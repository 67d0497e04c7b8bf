// Bindings of ctran's stores (method names follow torch.distributed.Store).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "ctran/bootstrap.hpp"
#include "ctran/store.hpp"
#include "py_store.hpp"

namespace py = pybind11;

namespace ctran::python {
namespace {

Deadline deadlineFrom(std::optional<int64_t> timeoutMs) {
  return Deadline::after(timeoutMs.value_or(-1));
}

py::bytes toPy(const Bytes& b) {
  return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}

Bytes fromPy(const py::bytes& b) {
  std::string s = b;
  return Bytes(s.begin(), s.end());
}

// None: RCCLX_JOB_SECRET (or no secret when it is unset); else exactly the secret's 16 bytes.
JobSecret secretFrom(const std::optional<py::bytes>& secret) {
  if (!secret) return JobSecret::fromKnob();
  std::string raw = *secret;
  CTRAN_CHECK(raw.size() == JobSecret::kBytes, InvalidArgument, "a job secret is ",
              JobSecret::kBytes, " bytes, got ", raw.size());
  JobSecret s;
  std::copy(raw.begin(), raw.end(), s.bytes.begin());
  return s;
}

UniqueId uniqueIdFrom(const py::bytes& b) {
  std::string s = b;
  CTRAN_CHECK(s.size() == 128, InvalidArgument, "unique id must be 128 bytes, got ", s.size());
  UniqueId id;
  std::copy(s.begin(), s.end(), id.bytes.begin());
  return id;
}

}  // namespace

void registerStore(py::module_& m) {
  py::class_<Store, std::shared_ptr<Store>>(m, "Store", "Key-value rendezvous store.")
      .def(
          "set",
          [](Store& s, const std::string& k, const py::bytes& v) {
            Bytes b = fromPy(v);
            py::gil_scoped_release nogil;
            s.set(k, b);
          },
          py::arg("key"), py::arg("value"),
          "Stores `value` under `key`, replacing any previous value.")
      .def(
          "get",
          [](Store& s, const std::string& k, std::optional<int64_t> timeoutMs) {
            Bytes b;
            {
              py::gil_scoped_release nogil;
              b = s.get(k, deadlineFrom(timeoutMs));
            }
            return toPy(b);
          },
          py::arg("key"), py::arg("timeout_ms") = py::none(),
          "Waits for `key` (RCCLX_TIMEOUT_MS unless timeout_ms is given) and returns its value.")
      .def(
          "add", &Store::add, py::arg("key"), py::arg("delta"),
          py::call_guard<py::gil_scoped_release>(),
          "Atomically adds `delta` to the integer under `key` (0 when absent) and returns the sum.")
      .def(
          "check",
          [](Store& s, const std::vector<std::string>& keys) {
            py::gil_scoped_release nogil;
            for (const auto& k : keys) {
              if (!s.check(k)) return false;
            }
            return true;
          },
          py::arg("keys"), "True when every key exists.")
      .def(
          "delete_key",
          [](Store& s, const std::string& k) {
            py::gil_scoped_release nogil;
            bool had = s.check(k);
            s.erase(k);
            return had;
          },
          py::arg("key"), "Removes `key`; True when it existed.");

  py::class_<TcpStoreServer, std::shared_ptr<TcpStoreServer>>(m, "TcpStoreServer",
                                                              "Hosts a TCP store in this process.")
      .def(py::init([](int port, const std::string& host, std::optional<py::bytes> secret) {
             return std::make_shared<TcpStoreServer>(port, host, secretFrom(secret));
           }),
           py::arg("port") = 0, py::arg("host") = "", py::arg("secret") = py::none(),
           "Listens on `host` (default every interface; RCCLX_LISTEN_ADDR overrides it) and "
           "`port` (0: any free port), admitting only clients that present `secret` (16 bytes; "
           "default RCCLX_JOB_SECRET, or none when that is unset).")
      .def_property_readonly("port", &TcpStoreServer::port, "The port it listens on.")
      .def(
          "leave_farewell",
          [](TcpStoreServer& server, const std::string& reason, bool timedOut) {
            if (timedOut) {
              server.leaveFarewell(TimeoutError(reason));
            } else {
              server.leaveFarewell(RemoteError(reason));
            }
          },
          py::arg("reason"), py::arg("timed_out") = false,
          "What the clients still waiting in a get are told when this server closes: they raise "
          "TimeoutError (timed_out) or RemoteError quoting `reason`, instead of only seeing "
          "their connection close.");

  py::class_<TcpStore, Store, std::shared_ptr<TcpStore>>(m, "TcpStore",
                                                         "A client of a TcpStoreServer.")
      .def(py::init([](const std::string& host, int port, std::optional<int64_t> timeoutMs,
                       std::optional<py::bytes> secret) {
             JobSecret s = secretFrom(secret);
             py::gil_scoped_release nogil;
             return std::make_shared<TcpStore>(host, port, deadlineFrom(timeoutMs), s);
           }),
           py::arg("host"), py::arg("port"), py::arg("timeout_ms") = py::none(),
           py::arg("secret") = py::none(),
           "Connects to the server at host:port, retrying until timeout_ms (default "
           "RCCLX_TIMEOUT_MS), and presents `secret` (as for TcpStoreServer); RemoteError when "
           "the server refuses it.");

  py::class_<FileStore, Store, std::shared_ptr<FileStore>>(
      m, "FileStore", "A store kept as files in a directory every rank can see.")
      .def(py::init<std::string>(), py::arg("directory"),
           "A store in `directory` (created if missing).")
      .def_property_readonly("directory", &FileStore::directory, "The store's directory.");

  py::class_<MemoryStore, Store, std::shared_ptr<MemoryStore>>(
      m, "MemoryStore", "A store inside one process (ranks as threads).")
      .def(py::init<>(), "An empty store.");

  py::class_<PyStore, Store, std::shared_ptr<PyStore>>(
      m, "PythonStore", "Adapts an object with torch.distributed.Store's methods.")
      .def(py::init<py::object>(), py::arg("store"),
           "Serves the store through `store`'s set, get, add, check and delete_key.");

  m.def(
      "create_unique_id",
      [] {
        UniqueId id = createUniqueId();
        return py::bytes(reinterpret_cast<const char*>(id.bytes.data()), id.bytes.size());
      },
      "Starts a bootstrap store server in this process and returns its 128-byte id.");
  m.def(
      "describe_unique_id", [](const py::bytes& b) { return describeUniqueId(uniqueIdFrom(b)); },
      py::arg("unique_id"), "The host:port a unique id names.");
  m.def(
      "unique_id_secret",
      [](const py::bytes& b) {
        JobSecret s = uniqueIdSecret(uniqueIdFrom(b));
        return py::bytes(reinterpret_cast<const char*>(s.bytes.data()), s.bytes.size());
      },
      py::arg("unique_id"),
      "The 16-byte job secret a unique id carries (what TcpStore(secret=) presents to its "
      "store).");
}

}  // namespace ctran::python
