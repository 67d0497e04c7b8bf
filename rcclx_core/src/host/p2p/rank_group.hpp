// RankGroup: the ranks an algorithm runs among, named by their index in the group (the ranks of
// one host, of one rail, the hosts' leaders, or the whole communicator), so one ring or chain
// serves every level of a hierarchical collective over the communicator's channels.
#pragma once

#include <utility>
#include <vector>

namespace rcclx {

class RankGroup {
 public:
  /// Every rank of a communicator of `nranks`, this one being `rank` (allocates nothing).
  static RankGroup all(int rank, int nranks) { return RankGroup(rank, nranks); }
  /// The communicator ranks `members`, in the order the algorithm walks them; this rank is
  /// members[self].
  RankGroup(std::vector<int> members, int self)
      : members_(std::move(members)), size_(static_cast<int>(members_.size())), index_(self) {}

  int size() const { return size_; }
  /// This rank's index in the group.
  int index() const { return index_; }
  /// The communicator rank of member `i`.
  int rankAt(int i) const { return members_.empty() ? i : members_[i]; }
  /// The communicator rank of the member `k` places after this one (around the ring).
  int after(int k) const { return rankAt((index_ + k % size_ + size_) % size_); }

 private:
  RankGroup(int rank, int nranks) : size_(nranks), index_(rank) {}

  std::vector<int> members_;  // empty: the identity (member i is rank i)
  int size_ = 0;
  int index_ = 0;
};

}  // namespace rcclx
