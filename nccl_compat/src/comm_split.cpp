// New communicators from an existing one: ncclCommSplit and ncclCommShrink.
#include <algorithm>
#include <vector>

#include "api.hpp"
#include "create.hpp"
#include "groups.hpp"

using rcclx::nccl::boundary;
using rcclx::nccl::CommUse;

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  namespace nccl = rcclx::nccl;
  return boundary(
      "ncclCommSplit",
      [&] {
        return nccl::groups::joiningGroup("ncclCommSplit", [&] {
          CTRAN_CHECK(newcomm != nullptr, ctran::InvalidArgument, "newcomm is NULL");
          *newcomm = nullptr;
          CTRAN_CHECK(color >= 0 || color == NCCL_SPLIT_NOCOLOR, ctran::InvalidArgument, "color ",
                      color, " is negative but not NCCL_SPLIT_NOCOLOR (-1)");
          nccl::CommOptions options;
          {
            // Enrolled in an open group: it may not be destroyed before the split has run.
            CommUse parent(comm);
            // Read before the collective step, so a bad config fails on this rank at once.
            options = nccl::readConfig(config, nccl::optionsOf(parent.handle()));
            if (!nccl::groups::active()) {
              auto sub = parent->split(color, key);
              if (sub) *newcomm = nccl::adoptComm(std::move(sub), options);
              return ncclSuccess;
            }
          }
          // Inside a group the split runs at the outermost ncclGroupEnd, with the group's other
          // splits and initialisations at once: one thread may split every rank it drives (one
          // per GPU), each waiting for the others.
          auto split = [comm, color, key] {
            CommUse parent(comm, false);
            return parent->split(color, key);
          };
          if (color == NCCL_SPLIT_NOCOLOR) {
            nccl::groups::deferTask([split] { split(); });
            return ncclSuccess;
          }
          return nccl::createComm(newcomm, options, [split](ncclComm&) { return split(); });
        });
      },
      comm);
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  namespace nccl = rcclx::nccl;
  return boundary(
      "ncclCommShrink",
      [&] {
        return nccl::groups::joiningGroup("ncclCommShrink", [&] {
          CTRAN_CHECK(newcomm != nullptr, ctran::InvalidArgument, "newcomm is NULL");
          *newcomm = nullptr;
          CTRAN_CHECK(shrinkFlags == NCCL_SHRINK_DEFAULT || shrinkFlags == NCCL_SHRINK_ABORT,
                      ctran::InvalidArgument, "shrinkFlags ", shrinkFlags,
                      " is neither NCCL_SHRINK_DEFAULT (0) nor NCCL_SHRINK_ABORT (1)");
          CTRAN_CHECK(excludeRanksCount >= 0, ctran::InvalidArgument, "excludeRanksCount ",
                      excludeRanksCount, " is negative");
          CTRAN_CHECK(excludeRanksCount == 0 || excludeRanksList != nullptr, ctran::InvalidArgument,
                      "excludeRanksList is NULL but excludeRanksCount is ", excludeRanksCount);
          std::vector<int> kept;
          nccl::CommOptions options;
          {
            CommUse parent(comm);  // enrolled in an open group, as for ncclCommSplit
            const int n = parent->size();
            std::vector<bool> excluded(n, false);
            for (int i = 0; i < excludeRanksCount; ++i) {
              const int r = excludeRanksList[i];
              CTRAN_CHECK(r >= 0 && r < n, ctran::InvalidArgument, "excludeRanksList[", i,
                          "] = ", r, " is out of range for a communicator of ", n, " ranks");
              CTRAN_CHECK(!excluded[r], ctran::InvalidArgument, "excludeRanksList lists rank ", r,
                          " twice");
              excluded[r] = true;
            }
            for (int r = 0; r < n; ++r)
              if (!excluded[r]) kept.push_back(r);
            CTRAN_CHECK(!kept.empty(), ctran::InvalidArgument, "excludeRanksList excludes all ", n,
                        " ranks");
            options = nccl::readConfig(config, nccl::optionsOf(parent.handle()));
            if (excluded[parent->rank()]) return ncclSuccess;  // an excluded rank joins nothing
            if (!nccl::groups::active()) {
              *newcomm = nccl::adoptComm(parent->shrink(kept), options);
              return ncclSuccess;
            }
          }
          // Inside a group: at its outermost end, with the others (as ncclCommSplit).
          return nccl::createComm(newcomm, options, [comm, kept](ncclComm&) {
            CommUse parent(comm, false);
            return parent->shrink(kept);
          });
        });
      },
      comm);
}
