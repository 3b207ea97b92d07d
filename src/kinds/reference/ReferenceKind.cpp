// kind: reference: runs an external benchmark on the ranks a
// fabscope test would use and records its command, version and figures, to be
// read next to fabscope's own (analysis summary, accept's reference_ratio_max).
// The tools are plug-ins (ReferenceTool.hpp), launched one of two ways:
// client-server (ucx_perftest, perftest): group rank 1 starts the server, group
// rank 0 the client against the server's host address (loopback when both
// share a host); mpirun (OSU, nccl-tests, MPI programs that cannot borrow
// fabscope's ranks): group rank 0 runs `mpirun -np N --host ...` on the hosts
// of the group's first N ranks. Every wait is bounded by the test's timeout; a
// tool still running then is killed. A tool that is not installed makes the
// instance `skipped`, naming why.
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "kinds/Kind.hpp"
#include "kinds/api/ApiTraffic.hpp"
#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"
#include "runtime/ChildProcess.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/EveryRanksLine.hpp"
#include "runtime/Mpi.hpp"
#include "scenario/Units.hpp"

extern char** environ;

namespace fabscope::suite {
namespace {

using reference::ReferenceConfig;
using reference::ReferenceFigures;
using reference::ReferenceTool;
using runtime::ChildProcess;

// The variables an MPI launcher gives its ranks: a second mpirun started from a
// rank would take itself for one of them ("mpirun does not support recursive
// calls"). The user's own OMPI_MCA_* settings and OMPI_ALLOW_RUN_AS_ROOT* stay.
std::vector<std::string> launcherVariables() {
  std::vector<std::string> names;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
    const bool launcher = starts("PMIX_") || starts("OMPI_MCA_orte_") || starts("OMPI_MCA_ess") ||
                          starts("OMPI_MCA_pmix") || name == "OMPI_MCA_initial_wdir" ||
                          name == "OMPI_MCA_shmem_RUNTIME_QUERY_hint" ||
                          (starts("OMPI_") && !starts("OMPI_MCA_") && !starts("OMPI_ALLOW_"));
    if (launcher) names.push_back(name);
  }
  return names;
}

// "a:2,b:1": the hosts of `ranks` world ranks in order, with how many each runs.
std::string hostList(const std::vector<std::string>& hostOfRank, const std::vector<int>& ranks) {
  std::vector<std::pair<std::string, int>> counts;
  for (int r : ranks) {
    const auto& host = hostOfRank[static_cast<std::size_t>(r)];
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == host; });
    if (it == counts.end())
      counts.emplace_back(host, 1);
    else
      ++it->second;
  }
  std::string text;
  for (const auto& [host, n] : counts) text += (text.empty() ? "" : ",") + host + ":" + std::to_string(n);
  return text;
}

// True once a socket listens on `port` (/proc/net/tcp and tcp6, state 0A):
// looking instead of connecting, since ucx_perftest's server takes the first
// connection as its client's.
bool listeningOn(int port) {
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, ":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, wanted) == 0) return true;
    }
  }
  return false;
}

// A port no socket uses now (the kernel's choice); the server binds it a moment later.
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw RuntimeFailure("socket() to choose a port for ucx_perftest failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(fd);
    throw RuntimeFailure("binding a socket to choose a port for ucx_perftest failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string secondsText(double seconds) {
  std::ostringstream out;
  out << seconds << " s";
  return out.str();
}

std::string lastLines(const std::string& text, std::size_t maxBytes) {
  if (text.size() <= maxBytes) return text;
  return "..." + text.substr(text.size() - maxBytes);
}

// Every group rank waits here until the ranks running the tool have seen it end,
// polling an MPI_Ibarrier once a millisecond and sleeping between: a spinning
// wait (fabscope's usual one) would take a CPU from the tool measuring on the
// same hosts. Bounded by `deadline`.
void awaitToolEnd(const runtime::Communicator& group, const runtime::Deadline& deadline) {
  MPI_Request request;
  runtime::checkMpi(MPI_Ibarrier(group.handle(), &request), "MPI_Ibarrier");
  for (int done = 0;;) {
    runtime::checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (deadline.expired()) deadline.fail("the reference tool's end on the ranks that run it");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// How long a server may take to end after its client did.
constexpr double serverGraceSeconds = 10;

class ReferenceKind final : public Kind {
 public:
  std::string name() const override { return "reference"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"reference_tool", text, always, "a skipped instance has only the first four"},
      {"reference_program", text},
      {"reference_test", text},
      {"reference_tls", text},
      {"reference_version", text},
      {"reference_command", text},
      {"reference_server_command", text},
      {"reference_server", text},
      {"reference_exit_status", integer},
      {"reference_output", text},
      {"reference_time_meaning", text},
      {"reference_iterations", integer},
      {"reference_median_us", real},
      {"reference_average_us", real},
      {"reference_bandwidth_mibps", real},
      {"reference_message_rate", real},
      {"reference_gbps", real},
      {"reference_busbw_gbps", real}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "an external benchmark (ucx_perftest, OSU, perftest, nccl-tests) on the same ranks, its command, "
           "version and figures recorded to stand next to fabscope's; skipped when the tool is not installed";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"tool", "program", "test", "tls", "port", "device", "gid_index", "launcher"};
    // `program` and `launcher` name what runs as whoever runs fabscope.
    r.commandKeys = {"program", "launcher"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      return std::make_shared<ReferenceConfig>(reference::readReferenceConfig(spec, source));
    };
    return r;
  }

  bool usesTransport() const override { return false; }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const auto& c = scenario::configOf<ReferenceConfig>(spec);
    const ReferenceTool& tool = reference::referenceTool(c.tool);
    const int measuring = measuringRanksOf(spec, worldSize, 2);
    InstancePlan p;
    p.metric = c.latency() ? Metric::latency : Metric::bandwidth;
    p.maxSamplesPerRank = 0;  // the tool measures; fabscope records its figures
    p.bufferBytesPerRank = 0;
    const std::string bytes = std::to_string(instance.bytes);
    if (tool.launch() == reference::Launch::clientServer) {
      p.pattern = "client-server";
      p.description = c.tool + (c.test.empty() ? "" : " -t " + c.test) + " -s " + bytes + " -n " +
                      std::to_string(c.iterations) +
                      (c.tool == "ucx_perftest" ? " over UCX_TLS=" + (c.tls.empty() ? "(environment)" : c.tls) : "") +
                      ": client on group rank 0, server on group rank 1";
    } else {
      p.pattern = "mpirun";
      p.description = c.launcher + " -np " + std::to_string(ranksOf(c, measuring)) + " " + c.tool + " (" + bytes +
                      " B, " + std::to_string(c.iterations) + " iterations) on the hosts of group ranks 0.." +
                      std::to_string(ranksOf(c, measuring) - 1) + ", launched by group rank 0";
    }
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& c = scenario::configOf<ReferenceConfig>(*ctx.instance.spec);
    const ReferenceTool& tool = reference::referenceTool(c.tool);
    const auto& group = ctx.group;
    const int me = group.rank();
    const bool mpirun = tool.launch() == reference::Launch::mpirun;
    // The ranks whose hosts run the tool: the pair, or (nccl-tests) the whole group.
    const int users = mpirun ? ranksOf(c, group.size()) : 2;
    Outcome outcome;
    output::Attributes& a = outcome.attributes;

    // 1. Installed where it runs? Otherwise the instance is skipped, by reason.
    const std::string program = me < users ? reference::resolveProgram(c.program) : std::string();
    const std::string launcher = mpirun && me == 0 ? reference::resolveProgram(c.launcher) : std::string();
    std::string missing;
    if (me < users && program.empty())
      missing = who(ctx, me) + ": " +
                (c.program.find('/') != std::string::npos
                     ? c.program + " is not an executable file"
                     : c.program + " not found on PATH (" + c.tool + " " + tool.origin() + ")");
    if (mpirun && me == 0 && launcher.empty())
      missing += (missing.empty() ? "" : "; ") + who(ctx, 0) + ": the launcher " + c.launcher +
                 (c.launcher.find('/') != std::string::npos ? " is not an executable file" : " not found on PATH");
    const std::string skipped = runtime::everyRanksProblems(group, missing, ctx.deadline);
    if (me == 0)
      a = {{"reference_tool", c.tool},
           {"reference_program", program.empty() ? c.program : program},
           {"reference_test", c.test},
           {"reference_tls", c.tls}};
    if (!skipped.empty()) {
      outcome.skipped = c.tool + " is not installed: " + skipped;
      return outcome;
    }
    if (mpirun)
      runMpirun(ctx, c, tool, program, launcher, users, a);
    else
      runClientServer(ctx, c, tool, program, a);
    return outcome;
  }

 private:
  // OSU's tools are pairs; nccl-tests run on every rank of the group.
  static int ranksOf(const ReferenceConfig& c, int groupSize) { return c.tool.rfind("osu_", 0) == 0 ? 2 : groupSize; }

  static std::string who(const RunContext& ctx, int groupRank) {
    const int world = ctx.participants[static_cast<std::size_t>(groupRank)];
    return "rank " + std::to_string(world) + " (" + ctx.identity.hostOfRank[static_cast<std::size_t>(world)] + ")";
  }

  // The version (within a quarter of what the test has left, at most 10 s), when the
  // tool has a command for it; else the run's own output names it (recordFigures).
  static void recordVersion(const RunContext& ctx, const ReferenceTool& tool, const std::string& program,
                            output::Attributes& a) {
    const auto args = tool.versionArgs(program);
    const double left = static_cast<double>(ctx.deadline.at() - runtime::monotonicNow()) / 1e9;
    const std::string version =
        args.empty() ? std::string() : tool.parseVersion(runtime::runToEnd(args, std::min(10.0, left / 4), true));
    a.emplace_back("reference_version", version);  // "" until the run's own output names it
  }

  static void recordFigures(const ReferenceConfig& c, bool parsed, const ReferenceFigures& f, output::Attributes& a) {
    const double nan = std::nan("");
    if (parsed && !f.version.empty())
      for (auto& [key, value] : a)
        if (key == "reference_version") value = f.version;
    for (auto& [key, value] : a)
      if (key == "reference_version" && std::get<std::string>(value).empty())
        value = std::string("unknown (") + (parsed ? "the tool names none" : "the run failed") + ")";
    a.emplace_back("reference_time_meaning", parsed ? f.timeMeaning : std::string());
    // A tool that does not print its iterations ran the count its command gave.
    a.emplace_back("reference_iterations", parsed ? (f.iterations ? f.iterations : std::int64_t{c.iterations}) : 0);
    a.emplace_back("reference_median_us", parsed ? f.medianUs : nan);
    a.emplace_back("reference_average_us", parsed ? f.averageUs : nan);
    a.emplace_back("reference_bandwidth_mibps", parsed ? f.bandwidthMiBps : nan);
    a.emplace_back("reference_message_rate", parsed ? f.messageRate : nan);
    a.emplace_back("reference_gbps", parsed ? f.gbps : nan);
    a.emplace_back("reference_busbw_gbps", parsed ? f.busGbps : nan);
  }

  // Runs `args` on this rank to its end or the test's deadline; the problem, "" when none.
  static std::string runChild(const RunContext& ctx, const ReferenceTool& tool, const std::vector<std::string>& args,
                              const std::string& command, const std::vector<std::string>& environment,
                              const std::vector<std::string>& unset, ReferenceFigures& figures, bool& parsed,
                              output::Attributes& a) {
    ChildProcess child;
    try {
      child.start(args, environment, unset);
      const bool ended = child.wait(ctx.deadline);
      const std::string output = child.output();
      a.emplace_back("reference_exit_status", std::int64_t{child.exitStatus()});
      a.emplace_back("reference_output", lastLines(output, 4096));
      if (!ended)
        return who(ctx, 0) + ": " + command + " did not end within the test's timeout (" +
               secondsText(ctx.instance.spec->timeoutSeconds) + "): killed";
      if (child.exitStatus() != 0)
        return who(ctx, 0) + ": " + command + " ended with status " + std::to_string(child.exitStatus()) + ": " +
               lastLines(output, 400);
      figures = tool.parse(output, ctx.instance.bytes);
      parsed = true;
    } catch (const std::exception& e) {  // start failure, output not understood
      return who(ctx, 0) + ": " + command + ": " + e.what();
    }
    return "";
  }

  static void runMpirun(RunContext& ctx, const ReferenceConfig& c, const ReferenceTool& tool,
                        const std::string& program, const std::string& launcher, int users, output::Attributes& a) {
    const auto closing = runtime::Deadline(ctx.deadline.at() + static_cast<runtime::Nanoseconds>(10e9));
    std::string problem;
    if (ctx.group.rank() == 0) {
      const std::vector<int> ranks(ctx.participants.begin(), ctx.participants.begin() + users);
      std::vector<std::string> args = {launcher, "-np", std::to_string(users), "--host",
                                       hostList(ctx.identity.hostOfRank, ranks)};
      for (auto& word : tool.programArgs(c, program, ctx.instance.bytes)) args.push_back(std::move(word));
      const std::string command = reference::commandText(args, "");
      recordVersion(ctx, tool, program, a);
      a.emplace_back("reference_command", command);
      a.emplace_back("reference_server_command", std::string());
      a.emplace_back("reference_server", std::string());
      ReferenceFigures figures;
      bool parsed = false;
      problem = runChild(ctx, tool, args, command, {}, launcherVariables(), figures, parsed, a);
      recordFigures(c, parsed, figures, a);
    }
    // The other ranks wait here (bounded, sleeping) while the tool runs on their hosts.
    awaitToolEnd(ctx.group, closing);
    const std::string problems = runtime::everyRanksProblems(ctx.group, problem, closing);
    if (!problems.empty()) ctx.verdict.fail(problems);
  }

  static void runClientServer(RunContext& ctx, const ReferenceConfig& c, const ReferenceTool& tool,
                              const std::string& program, output::Attributes& a) {
    const auto& group = ctx.group;
    const int me = group.rank();
    const auto& hosts = ctx.identity.hostOfRank;
    // What the exchanges after a child's deadline may still take.
    const auto closing = runtime::Deadline(ctx.deadline.at() + static_cast<runtime::Nanoseconds>(10e9));
    const std::vector<std::string> environment =
        c.tls.empty() ? std::vector<std::string>{} : std::vector<std::string>{"UCX_TLS=" + c.tls};

    // 2. The server on group rank 1, listening before the client starts.
    ChildProcess server;
    std::string serverSays;
    if (me == 1) {
      try {
        const int port = c.port ? c.port : freePort();
        const int peer = ctx.participants[0], self = ctx.participants[1];
        const std::string address = hosts[static_cast<std::size_t>(peer)] == hosts[static_cast<std::size_t>(self)]
                                        ? "127.0.0.1"
                                        : api::ipv4Text(api::chooseAddress("", ctx.identity.nic).ipv4);
        const auto args = tool.serverArgs(c, program, port, ctx.instance.bytes);
        server.start(args, environment);
        while (!listeningOn(port)) {
          if (server.exited())
            throw RuntimeFailure("the server (" + reference::commandText(args, c.tls) + ") ended with status " +
                                 std::to_string(server.exitStatus()) +
                                 " before listening: " + lastLines(server.output(), 400));
          if (ctx.deadline.expired())
            throw RuntimeFailure("the server (" + reference::commandText(args, c.tls) +
                                 ") did not listen within the test's timeout");
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        serverSays = address + " " + std::to_string(port) + " " + reference::commandText(args, c.tls);
      } catch (const RuntimeFailure& e) {
        serverSays = "!" + who(ctx, 1) + ": " + e.what();
      }
    }
    serverSays = group.broadcastString(serverSays, 1, ctx.deadline);
    if (!serverSays.empty() && serverSays[0] == '!') {
      ctx.verdict.fail(serverSays.substr(1));
      return;
    }
    std::istringstream said(serverSays);
    std::string address, serverCommand;
    int port = 0;
    said >> address >> port;
    std::getline(said >> std::ws, serverCommand);

    // 3. The client on group rank 0; both sides bounded by the test's timeout.
    std::string problem;
    if (me == 0) {
      const auto args = tool.clientArgs(c, program, address, port, ctx.instance.bytes);
      const std::string command = reference::commandText(args, c.tls);
      recordVersion(ctx, tool, program, a);
      a.emplace_back("reference_command", command);
      a.emplace_back("reference_server_command", serverCommand);
      a.emplace_back("reference_server", who(ctx, 1) + " " + address + ":" + std::to_string(port));
      ReferenceFigures figures;
      bool parsed = false;
      problem = runChild(ctx, tool, args, "the client (" + command + ")", environment, {}, figures, parsed, a);
      recordFigures(c, parsed, figures, a);
    }
    // 4. The server ends once its client is done; after a failed client it is
    // stopped at once rather than left waiting for the test's timeout.
    awaitToolEnd(group, closing);
    const std::string clientProblem = group.broadcastString(problem, 0, closing);
    if (me == 1) {
      const auto serverEnd = clientProblem.empty()
                                 ? std::min(ctx.deadline, runtime::Deadline::afterSeconds(serverGraceSeconds),
                                            [](const auto& x, const auto& y) { return x.at() < y.at(); })
                                 : runtime::Deadline::afterSeconds(0);
      if (!server.wait(serverEnd)) {
        if (clientProblem.empty())
          problem = who(ctx, 1) + ": the server (" + serverCommand + ") did not end within " +
                    secondsText(serverGraceSeconds) + " of its client: killed";
      } else if (server.exitStatus() != 0 && clientProblem.empty()) {
        problem = who(ctx, 1) + ": the server (" + serverCommand + ") ended with status " +
                  std::to_string(server.exitStatus()) + ": " + lastLines(server.output(), 400);
      }
    }
    const std::string problems = runtime::everyRanksProblems(group, problem, closing);
    if (!problems.empty()) ctx.verdict.fail(problems);
  }
};

}  // namespace

std::unique_ptr<Kind> makeReferenceKind() { return std::make_unique<ReferenceKind>(); }

}  // namespace fabscope::suite
