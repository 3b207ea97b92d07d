#include "kinds/reference/ReferenceConfig.hpp"

#include <unistd.h>

#include <cstdlib>

#include "kinds/Kind.hpp"
#include "kinds/reference/ReferenceTool.hpp"
#include "scenario/TestSource.hpp"

namespace fabscope::suite::reference {

bool ReferenceConfig::latency() const { return referenceTool(tool).latency(*this); }

const std::vector<std::string>& ucxPerftestTests() {
  // The UCP tests between two processes; *_lat are ping-pong (one-way latency),
  // *_bw stream one way (overhead per message and bandwidth).
  static const std::vector<std::string> tests = {"tag_lat", "tag_bw",     "ucp_put_lat", "ucp_put_bw",
                                                 "ucp_get", "stream_lat", "stream_bw"};
  return tests;
}

namespace {

std::string scalarOf(const scenario::ParamReader& p, const scenario::TestSource& source, const std::string& key,
                     const std::string& testName) {
  const YAML::Node n = source.test[key];
  if (!n.IsScalar() || n.Scalar().empty())
    p.fail(key, "'" + key + "' in test '" + testName + "' must be a non-empty word");
  return n.Scalar();
}

}  // namespace

ReferenceConfig readReferenceConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  scenario::ParamReader p(spec, source);
  ReferenceConfig c;
  c.tool = p.choice("tool", referenceToolNames(), "ucx_perftest");
  const ReferenceTool& tool = referenceTool(c.tool);
  c.program = p.has("program") ? scalarOf(p, source, "program", spec.name) : c.tool;
  // Each key belongs to the tools that use it: elsewhere it would be silently ignored.
  const auto onlyFor = [&](const std::string& key, bool applies, const std::string& whose) {
    if (p.has(key) && !applies)
      p.fail(key, "'" + key + "' in test '" + spec.name + "' applies to " + whose + ", not to " + c.tool);
  };
  const bool ucx = c.tool == "ucx_perftest";
  const bool perftest = tool.launch() == Launch::clientServer && !ucx;
  onlyFor("test", !tool.tests().empty(), "ucx_perftest (its -t)");
  onlyFor("tls", ucx, "ucx_perftest (UCX_TLS)");
  onlyFor("device", perftest, "perftest's ib_* tools (-d)");
  onlyFor("gid_index", perftest, "perftest's ib_* tools (-x)");
  onlyFor("port", tool.launch() == Launch::clientServer, "the client-server tools (ucx_perftest, perftest)");
  onlyFor("launcher", tool.launch() == Launch::mpirun, "the MPI tools (OSU, nccl-tests)");
  c.test = tool.tests().empty() ? std::string() : p.choice("test", tool.tests(), tool.defaultTest());
  if (p.has("device")) c.device = scalarOf(p, source, "device", spec.name);
  c.gidIndex = static_cast<int>(p.integer("gid_index", -1, 0, 255));
  if (p.has("launcher")) c.launcher = scalarOf(p, source, "launcher", spec.name);
  if (p.has("tls")) {
    c.tls = scalarOf(p, source, "tls", spec.name);
    // UCX_TLS is a list of transport names ("shm,self", "tcp", "^ib"): no
    // spaces or shell characters reach the child's environment.
    for (char ch : c.tls)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == ',' || ch == '_' || ch == '^' || ch == ':'))
        p.fail("tls", "'tls' in test '" + spec.name + "' is '" + c.tls +
                          "'; expected a UCX_TLS list such as shm,self or tcp (letters, digits, , _ ^ :)");
  }
  c.port = static_cast<int>(p.integer("port", 0, 0, 65535));
  c.iterations = spec.iterations;
  c.warmup = spec.warmup;
  // The tool brings its own data path: a transport or memory kind would pretend otherwise.
  if (spec.transport != "mpi" || spec.memory != "host")
    throw scenario::ScenarioError(spec.where(spec.transport != "mpi" ? "transport" : "memory") + ": test '" +
                                  spec.name + "' (reference) runs " + c.tool +
                                  " over its own data path (UCX_TLS: key 'tls') on host memory: 'transport' and "
                                  "'memory' do not apply (leave them out)");
  return c;
}

std::vector<std::string> ucxPerftestServerArgs(const ReferenceConfig&, const std::string& program, int port) {
  // The server takes every other parameter from the client.
  return {program, "-p", std::to_string(port)};
}

std::vector<std::string> ucxPerftestClientArgs(const ReferenceConfig& c, const std::string& program,
                                               const std::string& serverAddress, int port, std::int64_t bytes) {
  std::vector<std::string> args = {program, serverAddress,         "-p", std::to_string(port),        "-t", c.test,
                                   "-s",    std::to_string(bytes), "-n", std::to_string(c.iterations)};
  if (c.warmup > 0) {
    args.push_back("-w");
    args.push_back(std::to_string(c.warmup));
  }
  return args;
}

std::string commandText(const std::vector<std::string>& args, const std::string& tls) {
  std::string text = tls.empty() ? "" : "UCX_TLS=" + tls + " ";
  for (std::size_t i = 0; i < args.size(); ++i) text += (i ? " " : "") + args[i];
  return text;
}

std::string resolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    auto end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace fabscope::suite::reference
