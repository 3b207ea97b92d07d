#pragma once
// Runs a validated scenario on every rank and writes the shared result file:
// a short list of named stages (Runner::run). The objects it runs them with:
// the MatrixLoop (MatrixLoop.hpp) runs the matrix instance by instance, each
// through an InstanceExecutor (InstanceExecutor.hpp) that owns the
// instance's state; RankLoss (RankLoss.hpp) ends a run that lost a rank; what
// they share is the RunState (RunState.hpp). Planning is in Planning.*, the
// attributes of an instance's group in InstanceAttributes.*.
#include <exception>
#include <vector>

#include "driver/FabricRecorder.hpp"
#include "driver/Planning.hpp"
#include "driver/RankLoss.hpp"
#include "driver/RunState.hpp"
#include "kinds/Registry.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"
#include "scenario/Matrix.hpp"

namespace fabscope::driver {

// Rank 0's result line, when the launcher asked for it (FABSCOPE_REPORT_EXIT=1):
// launch/fabscope-mpirun and launch/slurm/fabscope.sbatch read it, because in a
// fault-tolerant launch the launcher's own status does not carry the code.
void printResultLine(bool rank0, int code);

class Runner {
 public:
  Runner(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
         RunOptions options);
  // Runs `planned` (planMatrix of the runner's scenario, planned once at
  // load). Returns the exit code (0 or 1); throws RuntimeFailure when the run
  // cannot go on.
  int run(std::vector<PlannedInstance> planned);
  // True on a rank that left the run on purpose (the victim of a fault drill):
  // it must exit without MPI_Finalize.
  bool leftRun() const { return run_.leaveRun; }
  // True when transfers of a timed-out test may still be pending: MPI_Finalize
  // could wait for them forever, so the process must exit without it.
  bool transfersAbandoned() const { return run_.abandoned; }
  // How many instances missed their deadline and were recovered from (fresh
  // transports for the next one), and how many were then not run because
  // the run stopped recovering.
  int recoveries() const { return run_.recoveries; }
  int notRunAfterTimeouts() const { return run_.notRunAfterTimeouts; }
  // True after a fault drill lost ranks: MPI_Finalize would wait for them.
  bool lostRanks() const { return run_.survivors.has_value(); }
  // After a run that lost ranks: how many, and a barrier of the survivors so
  // none leaves (which makes Open MPI end the job) before rank 0 has closed
  // the result file. Bounded by `deadline`; false if it ran out.
  int lostRankCount() const { return run_.survivors ? run_.world.size() - run_.survivors->size() : 0; }
  // The world ranks a fault drill left behind (not among the survivors).
  std::vector<int> ranksLeftBehind() const;
  bool survivorsDone(const runtime::Deadline& deadline) const;

 private:
  void setUp();
  output::ResultFile openFile(const std::vector<PlannedInstance>& planned);
  void announce(const std::vector<PlannedInstance>& planned, const output::ResultFile& file) const;
  FabricVerdict writeFileHeader(output::Recorder& recorder, output::ResultFile& file);
  // The header; a rank lost or silent while it is written ends the run (RankLoss), never returns then.
  FabricVerdict writeFileHeaderOrEndAfterLoss(output::Recorder& recorder, output::ResultFile& file, RankLoss& losses);
  void writeRunHeader(output::Recorder& recorder, const output::ResultFile& file);
  void writeRanks(output::Recorder& recorder);
  // The matrix (MatrixLoop); a rank lost or a failure outside a fault drill
  // ends the run (RankLoss) and never returns.
  int runMatrixOrEndAfterLoss(std::vector<PlannedInstance> planned, output::ResultFile& file, RankLoss& losses,
                              output::Recorder& recorder);
  // A failure of the header, the matrix or the closing steps outside a fault drill
  // ends the run (RankLoss); never returns.
  [[noreturn]] void endAfterFailure(const std::exception& failure, RankLoss& losses);
  int finish(output::ResultFile& file, output::Recorder& recorder, RankLoss& losses, const FabricVerdict& fabric,
             int exitCode);

  RunState run_;
};

}  // namespace fabscope::driver
