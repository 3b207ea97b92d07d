#pragma once
// The matrix, one instance at a time, each through an InstanceExecutor over
// its transport (one per name, opened when a test first needs it); a
// follow-up (a serial retest) runs right after the instance it follows. After
// a fault drill lost ranks, or after more than maxRecoveries missed
// deadlines, the rest is recorded as not run.
#include <string>
#include <vector>

#include "driver/Planning.hpp"
#include "driver/RankLoss.hpp"
#include "driver/RunState.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"

namespace fabscope::driver {

class MatrixLoop {
 public:
  MatrixLoop(RunState& run, RankLoss& losses, output::ResultFile& file, output::Recorder& recorder)
      : run_(run), losses_(losses), file_(file), recorder_(recorder) {}
  // Runs `planned` in order; returns the exit code (0, or 1 when an instance did not pass).
  int run(std::vector<PlannedInstance> planned);

 private:
  // Recorded as not run, and counted in the summary.
  void skipInstance(int index, const PlannedInstance& planned, const std::string& why);
  bool stoppedRunning() const;
  std::string whyStopped() const;
  std::string transportNameOf(const PlannedInstance& planned) const;

  RunState& run_;
  RankLoss& losses_;
  output::ResultFile& file_;
  output::Recorder& recorder_;
};

}  // namespace fabscope::driver
