#pragma once
// `kind: reference`: an external benchmark run on the pair
// of ranks a fabscope test would use, so its figures stand next to
// fabscope's: ucx_perftest, OSU (osu_latency, osu_bw), perftest (ib_write_bw,
// ib_read_lat, ib_send_lat), nccl-tests (all_reduce_perf, alltoall_perf); each
// a plug-in (ReferenceTool.hpp). Its scenario keys, read and checked once at
// load, and ucx_perftest's command lines.
#include <cstdint>
#include <string>
#include <vector>

#include "scenario/Scenario.hpp"

namespace fabscope::scenario {
struct TestSource;
}

namespace fabscope::suite::reference {

struct ReferenceConfig final : scenario::KindConfig {
  std::string tool = "ucx_perftest";  // which benchmark (ReferenceTool.hpp's plug-in)
  std::string program;                // the executable: `program`, else `tool` looked up on PATH
  std::string test = "tag_lat";       // ucx_perftest -t ("" for tools without a `test`)
  std::string tls;                    // ucx_perftest: UCX_TLS for both sides; "" = inherited
  std::string device;                 // perftest -d (an RDMA device); "" = perftest's choice
  int gidIndex = -1;                  // perftest -x (RoCE GID index); -1 = perftest's choice
  std::string launcher = "mpirun";    // OSU, nccl-tests: the (Open MPI) mpirun that starts them
  int port = 0;                       // client-server tools: the server's port; 0 = a free one
  int iterations = 0;                 // the test's iterations (-n / -i)
  int warmup = 0;                     // the test's warmup (-w / -x), where the tool has one
  bool latency() const;               // the tool's figure is a time (else a bandwidth)
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
