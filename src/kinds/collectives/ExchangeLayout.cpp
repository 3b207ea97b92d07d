#include "kinds/collectives/ExchangeLayout.hpp"

#include <climits>
#include <string>

#include "runtime/Errors.hpp"

namespace fabscope::suite {

ExchangeLayout ExchangeLayout::of(const std::vector<std::int64_t>& sendItems,
                                  const std::vector<std::int64_t>& recvItems, std::int64_t itemBytes) {
  ExchangeLayout l;
  auto fill = [&](const std::vector<std::int64_t>& items, std::vector<std::int64_t>& counts,
                  std::vector<std::int64_t>& displs, std::int64_t& total) {
    for (const auto k : items) {
      counts.push_back(k * itemBytes);
      displs.push_back(total);
      total += k * itemBytes;
    }
  };
  fill(sendItems, l.sendCounts, l.sendDispls, l.sendBytes);
  fill(recvItems, l.recvCounts, l.recvDispls, l.recvBytes);
  return l;
}

MpiExchangeCounts MpiExchangeCounts::of(const ExchangeLayout& layout) {
  auto narrow = [](const std::vector<std::int64_t>& v, std::vector<int>& out) {
    for (const auto x : v) {
      if (x > INT_MAX)
        throw UsageError("alltoall: " + std::to_string(x) +
                         " bytes in one rank's block or offset is beyond what MPI_Alltoallv counts in int; use "
                         "fewer tokens per rank");
      out.push_back(static_cast<int>(x));
    }
  };
  MpiExchangeCounts m;
  narrow(layout.sendCounts, m.sendCounts);
  narrow(layout.sendDispls, m.sendDispls);
  narrow(layout.recvCounts, m.recvCounts);
  narrow(layout.recvDispls, m.recvDispls);
  return m;
}

}  // namespace fabscope::suite
