#pragma once
// `kind: reference` (issue 21 item 5): an external benchmark run on the pair
// of ranks a fabscope test would use, so its figures stand next to
// fabscope's. Today: ucx_perftest (Debian's ucx-utils). Its scenario keys,
// read and checked once at load, and the command lines built from them.
#include <cstdint>
#include <string>
#include <vector>

#include "scenario/Scenario.hpp"

namespace fabscope::scenario {
struct TestSource;
}

namespace fabscope::suite::reference {

struct ReferenceConfig final : scenario::KindConfig {
  std::string tool = "ucx_perftest";  // which benchmark (its output parser)
  std::string program;                // the executable: `program`, else `tool` looked up on PATH
  std::string test = "tag_lat";       // ucx_perftest -t
  std::string tls;                    // UCX_TLS for both sides; "" = inherited from the environment
  int port = 0;                       // the server's port; 0 = a free one chosen at run time
  int iterations = 0;                 // -n (the test's iterations)
  int warmup = 0;                     // -w (the test's warmup)
  bool latency() const { return test.size() > 4 && test.compare(test.size() - 4, 4, "_lat") == 0; }
};

// ucx_perftest's tests this kind accepts, and what each measures.
const std::vector<std::string>& ucxPerftestTests();

// The kind's parse step (at load). Throws scenario::ScenarioError "file:line:column: message".
ReferenceConfig readReferenceConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);

// The argument vectors (argv[0] = the program) of the two sides.
std::vector<std::string> ucxPerftestServerArgs(const ReferenceConfig& c, const std::string& program, int port);
std::vector<std::string> ucxPerftestClientArgs(const ReferenceConfig& c, const std::string& program,
                                               const std::string& serverAddress, int port, std::int64_t bytes);
// "UCX_TLS=shm,self ucx_perftest 127.0.0.1 -p 4000 ..." as recorded (the
// environment prefix only when the kind sets UCX_TLS).
std::string commandText(const std::vector<std::string>& args, const std::string& tls);

// The executable `name` resolves to: itself when it holds a '/', else the
// first executable file of that name on PATH; "" when there is none.
std::string resolveProgram(const std::string& name);

}  // namespace fabscope::suite::reference
