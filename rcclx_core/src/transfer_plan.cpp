// Implementation of transfer_plan.hpp.
#include "transfer_plan.hpp"

namespace rcclx {
namespace {

const char* at(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }
char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

void send(Exchange& x, int peer, const void* src, size_t bytes) {
  x.push_back({Transfer::kSend, peer, src, nullptr, bytes});
}
void recv(Exchange& x, int peer, void* dst, size_t bytes) {
  x.push_back({Transfer::kRecv, peer, nullptr, dst, bytes});
}
void self(Exchange& x, int rank, const void* src, void* dst, size_t bytes) {
  x.push_back({Transfer::kSelf, rank, src, dst, bytes});
}

}  // namespace

Exchange allToAllVExchange(int rank, int nranks, const void* send_,
                           const std::vector<size_t>& sendCounts,
                           const std::vector<size_t>& sendDispls, void* recv_,
                           const std::vector<size_t>& recvCounts,
                           const std::vector<size_t>& recvDispls, size_t elem) {
  Exchange x;
  x.reserve(2 * static_cast<size_t>(nranks));
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) send(x, p, at(send_, sendDispls[p] * elem), sendCounts[p] * elem);
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) recv(x, p, at(recv_, recvDispls[p] * elem), recvCounts[p] * elem);
  }
  self(x, rank, at(send_, sendDispls[rank] * elem), at(recv_, recvDispls[rank] * elem),
       sendCounts[rank] * elem);
  return x;
}

Exchange allGatherVExchange(int rank, int nranks, const void* send_, void* recv_,
                            const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                            size_t elem) {
  Exchange x;
  x.reserve(2 * static_cast<size_t>(nranks));
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) send(x, p, send_, counts[rank] * elem);
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) recv(x, p, at(recv_, displs[p] * elem), counts[p] * elem);
  }
  self(x, rank, send_, at(recv_, displs[rank] * elem), counts[rank] * elem);
  return x;
}

Exchange gatherExchange(int rank, int nranks, int root, const void* send_, void* recv_,
                        size_t bytes) {
  Exchange x;
  if (rank != root) {
    send(x, root, send_, bytes);
    return x;
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) recv(x, p, at(recv_, p * bytes), bytes);
  }
  self(x, rank, send_, at(recv_, rank * bytes), bytes);
  return x;
}

Exchange scatterExchange(int rank, int nranks, int root, const void* send_, void* recv_,
                         size_t bytes) {
  Exchange x;
  if (rank != root) {
    recv(x, root, recv_, bytes);
    return x;
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) send(x, p, at(send_, p * bytes), bytes);
  }
  self(x, rank, at(send_, rank * bytes), recv_, bytes);
  return x;
}

Exchange broadcastExchange(int rank, int nranks, int root, const void* send_, void* recv_,
                           size_t bytes) {
  Exchange x;
  if (rank != root) {
    recv(x, root, recv_, bytes);
    return x;
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) send(x, p, send_, bytes);
  }
  self(x, rank, send_, recv_, bytes);
  return x;
}

Exchange barrierExchange(int rank, int nranks) {
  Exchange x;
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) x.push_back({Transfer::kSend, p, nullptr, nullptr, 0, true});
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) x.push_back({Transfer::kRecv, p, nullptr, nullptr, 0, true});
  }
  return x;
}

}  // namespace rcclx
