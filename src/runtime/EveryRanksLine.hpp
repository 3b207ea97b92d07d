#pragma once
// One line of text from every rank, on every rank: for the small facts each
// rank knows of itself (its host, its site, its machine's load) that every
// rank then needs.
#include <string>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::runtime {

// Collective: `line` (no newline in it) from every rank, in rank order,
// gathered to rank 0 and broadcast from there, each step bounded by `deadline`.
std::vector<std::string> everyRanksLine(const Communicator& comm, const std::string& line, const Deadline& deadline);

// Collective: every rank's non-empty `problem`, in rank order, joined with
// "; " ("" when no rank has one), the same text on every rank.
std::string everyRanksProblems(const Communicator& comm, const std::string& problem, const Deadline& deadline);

}  // namespace fabscope::runtime
