#pragma once
// Neighbour traffic that runs while canaries measure: incast (many to one),
// alltoall, bidirectional streams, and memory-copy load. Congestors start
// before the measurement and stop only after it, gated by two non-blocking
// barriers over all ranks of the run (never by sleeps):
//   gate 1 "load is flowing":  congestors join after their first operation
//                              completed; canaries wait for it, then measure.
//   gate 2 "measurement done": canaries join when they finished; congestors
//                              keep loading until it completes, then drain.
#include <string>
#include <vector>

#include "kinds/Roles.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::conditions {

// What a congestor did, for the instance's attributes.
struct LoadReport {
  std::int64_t bytesSent = 0;
  std::int64_t messagesSent = 0;
  double seconds = 0;
};

// Where each congestor sends for a condition. Every rank computes the same plan.
struct LoadGraph {
  std::vector<std::vector<int>> destinations;  // per world rank
  std::vector<int> sourceCount;                // messages streams arriving at each world rank
  std::string description;
};

// incast: every congestor streams to one target congestor, placed on the host
// of the last canary when possible (so the canary's receive link is the one
// that congests). alltoall: every congestor to every other. bidirectional:
// congestors paired across hosts, streaming both ways. copy: no messages.
LoadGraph planLoad(const std::string& condition, const suite::RoleAssignment& roles,
                   const std::vector<std::string>& hostOfRank);

// The congestors planLoad needs for `condition` (incast: a target and a
// sender); checked when the matrix is planned, so a run that has too few
// stops before anything is measured (exit 2), not in the middle.
int minCongestors(const std::string& condition);

class GatedLoad {
 public:
  GatedLoad(const runtime::Communicator& world, const runtime::Deadline& deadline, int localRank);

  // Canary side: wait for gate 1 before measuring, join gate 2 after.
  void canaryBeforeMeasuring();
  void canaryAfterMeasuring();
  // Ranks that neither measure nor load (under a congested condition).
  void idle();
  // Congestor side: runs `condition` until gate 2 completes.
  LoadReport congest(const std::string& condition, const LoadGraph& graph, std::int64_t messageBytes);

 private:
  LoadReport stream(const LoadGraph& graph, std::int64_t messageBytes);
  LoadReport copyMemory(std::int64_t bufferBytes);
  LoadReport copyToGpu(std::int64_t chunkBytes);
  void postGate(MPI_Request& gate);
  bool gateDone(MPI_Request& gate);
  void waitGate(MPI_Request& gate, const char* what);

  const runtime::Communicator& world_;
  runtime::Deadline deadline_;
  int localRank_;
  MPI_Comm comm_;  // private duplicate so load traffic never matches test traffic
  MPI_Request startGate_ = MPI_REQUEST_NULL;
  MPI_Request stopGate_ = MPI_REQUEST_NULL;

 public:
  ~GatedLoad();
  GatedLoad(const GatedLoad&) = delete;
  GatedLoad& operator=(const GatedLoad&) = delete;
};

}  // namespace fabscope::conditions
