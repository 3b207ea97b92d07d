#include "transport/TransportFactory.hpp"

#include "fabscope/BuildConfig.hpp"
#include "transport/MpiTransport.hpp"

namespace fabscope::transport {

std::map<std::string, std::string> transportAvailability() {
  return {
      {"mpi", ""},
      {"ucx", FABSCOPE_HAVE_UCX ? "the UCX transport is not implemented yet" : "built without UCX"},
      {"verbs", FABSCOPE_HAVE_VERBS ? "the libibverbs transport is not implemented yet" : "built without libibverbs"},
      {"nccl", FABSCOPE_HAVE_NCCL ? "the NCCL data path is not implemented yet" : "built without CUDA/NCCL"},
  };
}

std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world,
                                         const runtime::Deadline& deadline) {
  if (name == "mpi") return std::make_unique<MpiTransport>(world, deadline);
  const auto why = transportAvailability();
  const auto it = why.find(name);
  throw UsageError("transport '" + name + "' cannot be opened: " + (it == why.end() ? "unknown transport" : it->second));
}

}  // namespace fabscope::transport
