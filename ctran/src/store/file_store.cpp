// FileStore: one file per key in a shared directory; writes are atomic renames, add() holds
// an flock on the key's lock file.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ctran/checks.hpp"
#include "ctran/store.hpp"

namespace ctran {
namespace {

// Keys may contain '/', which must not create directories: escape to a flat file name.
std::string escapeKey(const std::string& key) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool readFile(const std::string& path, Bytes* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

void writeFileAtomically(const std::string& path, const Bytes& value) {
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(reinterpret_cast<uintptr_t>(&value));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    CTRAN_CHECK(f.good(), SystemError, "cannot write store file ", tmp, ": ", std::strerror(errno));
    f.write(reinterpret_cast<const char*>(value.data()),
            static_cast<std::streamsize>(value.size()));
  }
  CTRAN_SYSCHECK(::rename(tmp.c_str(), path.c_str()), strCat("rename ", tmp, " -> ", path));
}

}  // namespace

FileStore::FileStore(std::string directory) : dir_(std::move(directory)) {
  CTRAN_CHECK(!dir_.empty(), InvalidArgument, "FileStore: directory is empty");
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    throwSystemError(strCat("FileStore: cannot create directory '", dir_, "'"), errno);
  }
}

std::string FileStore::pathOf(const std::string& key) const { return dir_ + "/" + escapeKey(key); }

void FileStore::set(const std::string& key, const Bytes& value) {
  writeFileAtomically(pathOf(key), value);
}

Bytes FileStore::get(const std::string& key, const Deadline& deadline) {
  Bytes out;
  std::string path = pathOf(key);
  waitUntil([&] { return readFile(path, &out); }, deadline,
            [&] { return strCat("store key '", key, "' in ", dir_); });
  return out;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::string path = pathOf(key);
  std::string lockPath = path + ".lock";
  int fd = ::open(lockPath.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  CTRAN_SYSCHECK(fd, strCat("open ", lockPath));
  if (::flock(fd, LOCK_EX) != 0) {
    int err = errno;
    ::close(fd);
    throwSystemError(strCat("flock ", lockPath), err);
  }
  int64_t sum = delta;
  try {
    Bytes cur;
    if (readFile(path, &cur) && cur.size() == 8) {
      int64_t old;
      std::memcpy(&old, cur.data(), 8);
      sum += old;
    }
    Bytes next(8);
    std::memcpy(next.data(), &sum, 8);
    writeFileAtomically(path, next);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // releases the lock
  return sum;
}

bool FileStore::check(const std::string& key) { return ::access(pathOf(key).c_str(), F_OK) == 0; }

void FileStore::erase(const std::string& key) { ::unlink(pathOf(key).c_str()); }

}  // namespace ctran
