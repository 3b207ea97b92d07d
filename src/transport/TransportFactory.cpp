#include "transport/TransportFactory.hpp"

#include "fabscope/BuildConfig.hpp"
#include "transport/MpiTransport.hpp"
#if FABSCOPE_HAVE_UCX
#include "transport/UcxTransport.hpp"
#endif
#if FABSCOPE_HAVE_VERBS
#include "transport/VerbsTransport.hpp"
#endif
#if FABSCOPE_HAVE_NCCL
#include "transport/NcclTransport.hpp"
#endif

namespace fabscope::transport {

std::map<std::string, std::string> transportAvailability() {
  return {
      {"mpi", ""},
      {"ucx", FABSCOPE_HAVE_UCX ? "" : "built without UCX"},
      {"verbs", FABSCOPE_HAVE_VERBS ? "" : "built without libibverbs"},
      {"nccl", FABSCOPE_HAVE_NCCL ? "" : "built without CUDA/NCCL"},
  };
}

TransportCapabilities transportCapabilities(const std::string& name) {
  if (name == "mpi") return {};
  if (name == "ucx") return {.deviceMemory = false, .inOrder = false, .put = true, .get = true};
  if (name == "verbs") return {.deviceMemory = false, .inOrder = false, .put = true, .get = true};
  if (name == "nccl") return {.deviceMemory = true, .inOrder = true, .put = false, .get = false};
  throw UsageError("unknown transport '" + name + "'");
}

std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const TransportTuning& tuning, const runtime::Deadline& deadline) {
  (void)localRank;
  (void)tuning;  // used by verbs only, which may not be built
  if (name == "mpi") return std::make_unique<MpiTransport>(world, deadline);
#if FABSCOPE_HAVE_UCX
  if (name == "ucx") return std::make_unique<UcxTransport>(world, deadline);
#endif
#if FABSCOPE_HAVE_NCCL
  if (name == "nccl") return std::make_unique<NcclTransport>(world, localRank, deadline);
#endif
#if FABSCOPE_HAVE_VERBS
  if (name == "verbs") return std::make_unique<VerbsTransport>(world, tuning, deadline);
#endif
  const auto why = transportAvailability();
  const auto it = why.find(name);
  throw UsageError("transport '" + name + "' cannot be opened: " + (it == why.end() ? "unknown transport" : it->second));
}

}  // namespace fabscope::transport
