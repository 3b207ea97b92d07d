#include "kinds/reference/ReferenceConfig.hpp"

#include <unistd.h>

#include <cstdlib>

#include "kinds/Kind.hpp"
#include "scenario/TestSource.hpp"

namespace fabscope::suite::reference {

const std::vector<std::string>& ucxPerftestTests() {
  // The UCP tests between two processes; *_lat are ping-pong (one-way latency),
  // *_bw stream one way (overhead per message and bandwidth).
  static const std::vector<std::string> tests = {"tag_lat", "tag_bw", "ucp_put_lat", "ucp_put_bw", "ucp_get",
                                                 "stream_lat", "stream_bw"};
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
  c.tool = p.choice("tool", {"ucx_perftest"}, "ucx_perftest");
  c.program = p.has("program") ? scalarOf(p, source, "program", spec.name) : c.tool;
  c.test = p.choice("test", ucxPerftestTests(), "tag_lat");
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
  std::vector<std::string> args = {program, serverAddress, "-p", std::to_string(port), "-t", c.test,
                                   "-s", std::to_string(bytes), "-n", std::to_string(c.iterations)};
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
