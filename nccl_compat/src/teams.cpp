// The host team calls of NCCL's device API (nccl_device/core.h): the world, LSA, rail and CFT
// teams of a communicator and the rank conversions, answered as ncclCommQueryProperties
// reports the communicator: no kernel reaches a peer's memory, so every rank is its own LSA
// team (and its own CFT team), and the rail team is the world.
//
// These calls return a team or a rank, not an ncclResult_t: a failure returns kNoTeam or -1
// and leaves its message in ncclGetLastError, through the same boundary as every entry point.
#include <sstream>
#include <string>

#include "api.hpp"
#include "comm.hpp"
#include "nccl_device.h"

namespace rcclx::nccl {
namespace {

/// What a team call returns when it cannot answer.
constexpr ncclTeam_t kNoTeam{0, -1, 0};

/// The team of `size` ranks holding this one at `index`, consecutive in the world.
ncclTeam_t team(int size, int index) {
  ncclTeam_t t{};
  t.nRanks = size;
  t.rank = index;
  t.stride = 1;
  return t;
}

std::string describe(const ncclTeam_t& t) {
  std::ostringstream s;
  s << "{nRanks " << t.nRanks << ", rank " << t.rank << ", stride " << t.stride << "}";
  return s.str();
}

/// The world rank of member `rank` of `t`, a team of the calling rank (checked: the caller's
/// own place in it, the member and the world rank it names all in range).
int worldRank(const ncclComm& c, const ncclTeam_t& t, int rank) {
  CTRAN_CHECK(t.nRanks > 0 && t.rank >= 0 && t.rank < t.nRanks, ctran::InvalidArgument, "team ",
              describe(t), " is not a team of this rank (its rank is outside 0..nRanks-1)");
  CTRAN_CHECK(rank >= 0 && rank < t.nRanks, ctran::InvalidArgument, "rank ", rank,
              " is not a member of team ", describe(t), " (0..", t.nRanks - 1, ")");
  const long long world = c.rank + static_cast<long long>(rank - t.rank) * t.stride;
  CTRAN_CHECK(world >= 0 && world < c.nranks, ctran::InvalidArgument, "rank ", rank, " of team ",
              describe(t), " would be world rank ", world, ", outside the communicator's 0..",
              c.nranks - 1, " (this rank is ", c.rank, ")");
  return static_cast<int>(world);
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::answer;
using rcclx::nccl::kNoTeam;
using rcclx::nccl::readyHandle;

NCCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  return answer("ncclTeamWorld", kNoTeam, [&] {
    const ncclComm& c = readyHandle(comm);
    return rcclx::nccl::team(c.nranks, c.rank);
  });
}

NCCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  return answer("ncclTeamLsa", kNoTeam, [&] {
    readyHandle(comm);
    return rcclx::nccl::team(1, 0);
  });
}

NCCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  // The rank at this one's place in every LSA team of one rank: every rank.
  return answer("ncclTeamRail", kNoTeam, [&] {
    const ncclComm& c = readyHandle(comm);
    return ncclTeamOuterFactor(rcclx::nccl::team(c.nranks, c.rank), 1);
  });
}

NCCL_API(ncclTeam_t, ncclTeamCft, ncclComm_t comm, ncclCftTeamMode_t mode);
ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode) {
  return answer("ncclTeamCft", kNoTeam, [&] {
    readyHandle(comm);
    CTRAN_CHECK(mode == NCCL_CFT_TEAM_FLAT || mode == NCCL_CFT_TEAM_HIER_MULTIMEM ||
                    mode == NCCL_CFT_TEAM_HIER_LSA,
                ctran::InvalidArgument, "mode ", static_cast<int>(mode),
                " is not an ncclCftTeamMode_t (NCCL_CFT_TEAM_FLAT, _HIER_MULTIMEM, _HIER_LSA)");
    // Without a collective fabric transport every one of its teams is the rank alone.
    return rcclx::nccl::team(1, 0);
  });
}

NCCL_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t comm);
ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm) {
  return answer("ncclTeamCftMultimem", kNoTeam, [&] {
    readyHandle(comm);
    return rcclx::nccl::team(1, 0);
  });
}

NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  return answer("ncclTeamRankToWorld", -1,
                [&] { return rcclx::nccl::worldRank(readyHandle(comm), team, rank); });
}

NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  return answer("ncclTeamRankToLsa", -1, [&] {
    const ncclComm& c = readyHandle(comm);
    const int world = rcclx::nccl::worldRank(c, team, rank);
    CTRAN_CHECK(world == c.rank, ctran::InvalidArgument, "rank ", rank, " of team ",
                rcclx::nccl::describe(team), " is world rank ", world,
                ", outside this rank's LSA team, which is this rank (", c.rank,
                ") alone: no kernel reaches a peer's memory (ncclCommQueryProperties reports "
                "nLsaTeams = nRanks)");
    return 0;
  });
}
