// kind: reference (issue 21 item 5): runs an external benchmark on the pair
// of ranks a fabscope test would use and records its command, version and
// figures, to be read next to fabscope's own (analysis summary, accept's
// reference_ratio_max). Today the tool is ucx_perftest: group rank 1 starts
// the server, group rank 0 the client against the server's host address
// (loopback when both share a host). Every wait is bounded by the test's
// timeout; a tool still running then is killed. A tool that is not installed
// makes the instance `skipped`, naming why.
#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "kinds/KindFactories.hpp"
#include "kinds/api/ApiTraffic.hpp"
#include "kinds/reference/ChildProcess.hpp"
#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/UcxPerftestOutput.hpp"
#include "runtime/EveryRanksLine.hpp"
#include "scenario/Units.hpp"

namespace fabscope::suite {
namespace {

using reference::ChildProcess;
using reference::ReferenceConfig;

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

// How long a server may take to end after its client did.
constexpr double serverGraceSeconds = 10;

// One instance's pair: the client on group rank 0, the server on group rank 1.
struct ReferencePair {
  RunContext& ctx;
  const ReferenceConfig& c;
  int me;                                // group rank
  std::string program;                   // resolved on ranks 0 and 1
  std::vector<std::string> environment;  // UCX_TLS when the test names it
  std::string who(int groupRank) const {
    const auto& hosts = ctx.identity.hostOfRank;
    const int world = ctx.participants[static_cast<std::size_t>(groupRank)];
    return "rank " + std::to_string(world) + " (" + hosts[static_cast<std::size_t>(world)] + ")";
  }
};

// Why this rank cannot run the tool ("" when it can, or takes no part).
std::string missingProgram(const ReferencePair& pair) {
  const auto& c = pair.c;
  if (pair.me > 1 || !pair.program.empty()) return {};
  return pair.who(pair.me) + ": " +
         (c.program.find('/') != std::string::npos
              ? c.program + " is not an executable file"
              : c.program + " not found on PATH (" + c.tool + " comes with UCX: Debian's ucx-utils)");
}

// Where the server listens and how it was started, as group rank 1 says it.
struct ServerPlace {
  std::string address;
  int port = 0;
  std::string command;
};

// Group rank 1: starts the server and waits, bounded, until it listens.
// Returns "ADDRESS PORT COMMAND", or "!" and why it could not.
std::string startServer(const ReferencePair& pair, ChildProcess& server) {
  const auto& c = pair.c;
  const auto& ctx = pair.ctx;
  const auto& hosts = ctx.identity.hostOfRank;
  try {
    const int port = c.port ? c.port : freePort();
    const int peer = ctx.participants[0], self = ctx.participants[1];
    const std::string address = hosts[static_cast<std::size_t>(peer)] == hosts[static_cast<std::size_t>(self)]
                                    ? "127.0.0.1"
                                    : api::ipv4Text(api::chooseAddress("", ctx.identity.nic).ipv4);
    const auto args = reference::ucxPerftestServerArgs(c, pair.program, port);
    server.start(args, pair.environment);
    while (!listeningOn(port)) {
      if (server.exited())
        throw RuntimeFailure("the server (" + reference::commandText(args, c.tls) + ") ended with status " +
                             std::to_string(server.exitStatus()) + " before listening: " +
                             lastLines(server.output(), 400));
      if (ctx.deadline.expired())
        throw RuntimeFailure("the server (" + reference::commandText(args, c.tls) +
                             ") did not listen within the test's timeout");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return address + " " + std::to_string(port) + " " + reference::commandText(args, c.tls);
  } catch (const RuntimeFailure& e) {
    return "!" + pair.who(1) + ": " + e.what();
  }
}

ServerPlace serverPlaceOf(const std::string& serverSays) {
  ServerPlace place;
  std::istringstream said(serverSays);
  said >> place.address >> place.port;
  std::getline(said >> std::ws, place.command);
  return place;
}

// The installed UCX's version (ucx_info -v next to the tool, else on PATH),
// within a share of what the test may still take; "" when none.
std::string ucxVersion(const std::string& program, const runtime::Deadline& deadline) {
  std::string ucxInfo = program.substr(0, program.rfind('/') + 1) + "ucx_info";
  if (reference::resolveProgram(ucxInfo).empty()) ucxInfo = reference::resolveProgram("ucx_info");
  const double left = static_cast<double>(deadline.at() - runtime::monotonicNow()) / 1e9;
  return ucxInfo.empty() ? std::string()
                         : parseUcxInfoVersion(reference::runToEnd({ucxInfo, "-v"}, std::min(10.0, left / 4)));
}

// The tool's figures (NaN, 0 and "" when it gave none).
void addFigures(output::Attributes& a, const std::optional<UcxPerftestFigures>& figures) {
  const double nan = std::nan("");
  a.emplace_back("reference_time_meaning", figures ? figures->timeMeaning : std::string());
  a.emplace_back("reference_iterations", figures ? figures->iterations : std::int64_t{0});
  a.emplace_back("reference_median_us", figures ? figures->timeMedianUs : nan);
  a.emplace_back("reference_average_us", figures ? figures->timeOverallUs : nan);
  a.emplace_back("reference_bandwidth_mibps", figures ? figures->bandwidthOverallMiBps : nan);
  a.emplace_back("reference_message_rate", figures ? figures->messageRateOverall : nan);
  // fabscope's unit for bandwidth (gbps_*: bytes per nanosecond).
  a.emplace_back("reference_gbps", figures ? figures->bandwidthOverallMiBps * 1048576.0 / 1e9 : nan);
}

// Group rank 0: the client against the server, bounded by the test's
// timeout; its command, version, output and figures into `a`. Returns what
// went wrong ("" when nothing did).
std::string runClientSide(const ReferencePair& pair, const ServerPlace& server, output::Attributes& a) {
  const auto& c = pair.c;
  const auto& ctx = pair.ctx;
  const auto args = reference::ucxPerftestClientArgs(c, pair.program, server.address, server.port, ctx.instance.bytes);
  const std::string command = reference::commandText(args, c.tls);
  // The version first, within what the test may take.
  const std::string version = ucxVersion(pair.program, ctx.deadline);
  a.emplace_back("reference_version", version.empty() ? std::string("unknown (ucx_info -v gave none)") : version);
  a.emplace_back("reference_command", command);
  a.emplace_back("reference_server_command", server.command);
  a.emplace_back("reference_server", pair.who(1) + " " + server.address + ":" + std::to_string(server.port));
  ChildProcess client;
  std::optional<UcxPerftestFigures> figures;
  std::string problem;
  try {
    client.start(args, pair.environment);
    const bool ended = client.wait(ctx.deadline);
    const std::string output = client.output();
    a.emplace_back("reference_exit_status", std::int64_t{client.exitStatus()});
    a.emplace_back("reference_output", lastLines(output, 4096));
    if (!ended)
      problem = pair.who(0) + ": the client (" + command + ") did not end within the test's timeout (" +
                secondsText(ctx.instance.spec->timeoutSeconds) + "): killed";
    else if (client.exitStatus() != 0)
      problem = pair.who(0) + ": the client (" + command + ") ended with status " +
                std::to_string(client.exitStatus()) + ": " + lastLines(output, 400);
    else
      figures = parseUcxPerftestOutput(output);
  } catch (const std::exception& e) {  // start failure, output not understood
    problem = pair.who(0) + ": " + command + ": " + e.what();
  }
  addFigures(a, figures);
  return problem;
}

// Group rank 1: the server ends once its client is done; after a failed
// client it is stopped at once rather than left waiting for the test's timeout.
std::string endServer(const ReferencePair& pair, ChildProcess& server, const std::string& serverCommand,
                      const std::string& clientProblem) {
  const auto& ctx = pair.ctx;
  const auto serverEnd = clientProblem.empty()
                             ? std::min(ctx.deadline, runtime::Deadline::afterSeconds(serverGraceSeconds),
                                        [](const auto& x, const auto& y) { return x.at() < y.at(); })
                             : runtime::Deadline::afterSeconds(0);
  if (!server.wait(serverEnd)) {
    if (clientProblem.empty())
      return pair.who(1) + ": the server (" + serverCommand + ") did not end within " +
             secondsText(serverGraceSeconds) + " of its client: killed";
  } else if (server.exitStatus() != 0 && clientProblem.empty()) {
    return pair.who(1) + ": the server (" + serverCommand + ") ended with status " +
           std::to_string(server.exitStatus()) + ": " + lastLines(server.output(), 400);
  }
  return {};
}

class ReferenceKind final : public Kind {
 public:
  std::string name() const override { return "reference"; }
  std::string summary() const override {
    return "an external benchmark (ucx_perftest) on the same pair of ranks, its command, version and figures "
           "recorded to stand next to fabscope's; skipped when the tool is not installed";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"tool", "program", "test", "tls", "port"};
    // `program` names what runs as whoever runs fabscope.
    r.commandKeys = {"program"};
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
    (void)measuringRanksOf(spec, worldSize, 2);
    InstancePlan p;
    p.metric = c.latency() ? Metric::latency : Metric::bandwidth;
    p.pattern = "client-server";
    p.maxSamplesPerRank = 0;  // the tool measures; fabscope records its figures
    p.bufferBytesPerRank = 0;
    p.description = c.tool + " -t " + c.test + " -s " + std::to_string(instance.bytes) + " -n " +
                    std::to_string(c.iterations) + " over UCX_TLS=" + (c.tls.empty() ? "(environment)" : c.tls) +
                    ": client on group rank 0, server on group rank 1";
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& c = scenario::configOf<ReferenceConfig>(*ctx.instance.spec);
    const auto& group = ctx.group;
    const int me = group.rank();
    const ReferencePair pair{ctx, c, me, me <= 1 ? reference::resolveProgram(c.program) : std::string(),
                             c.tls.empty() ? std::vector<std::string>{} : std::vector<std::string>{"UCX_TLS=" + c.tls}};
    Outcome outcome;
    output::Attributes& a = outcome.attributes;
    // What the exchanges after a child's deadline may still take.
    const auto closing = runtime::Deadline(ctx.deadline.at() + static_cast<runtime::Nanoseconds>(10e9));

    // 1. Installed on both sides? Otherwise the instance is skipped, by reason.
    const std::string skipped = runtime::everyRanksProblems(group, missingProgram(pair), ctx.deadline);
    if (me == 0) a = {{"reference_tool", c.tool}, {"reference_program", pair.program.empty() ? c.program : pair.program},
                      {"reference_test", c.test}, {"reference_tls", c.tls}};
    if (!skipped.empty()) {
      outcome.skipped = c.tool + " is not installed: " + skipped;
      return outcome;
    }
    // 2. The server on group rank 1, listening before the client starts.
    ChildProcess server;
    const std::string serverSays = group.broadcastString(me == 1 ? startServer(pair, server) : "", 1, ctx.deadline);
    if (!serverSays.empty() && serverSays[0] == '!') {
      ctx.verdict.fail(serverSays.substr(1));
      return outcome;
    }
    const auto place = serverPlaceOf(serverSays);
    // 3. The client on group rank 0; both sides bounded by the test's timeout.
    std::string problem;
    if (me == 0) problem = runClientSide(pair, place, a);
    // 4. The server ends once its client is done.
    const std::string clientProblem = group.broadcastString(problem, 0, closing);
    if (me == 1) problem = endServer(pair, server, place.command, clientProblem);
    const std::string problems = runtime::everyRanksProblems(group, problem, closing);
    if (!problems.empty()) ctx.verdict.fail(problems);
    return outcome;
  }
};

}  // namespace

std::unique_ptr<Kind> makeReferenceKind() { return std::make_unique<ReferenceKind>(); }

}  // namespace fabscope::suite
