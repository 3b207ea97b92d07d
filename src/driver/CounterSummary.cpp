#include "driver/CounterSummary.hpp"

#include <algorithm>
#include <map>

#include "inventory/Counters.hpp"

namespace fabscope::driver {
namespace {

std::string textOf(const char* field, std::size_t size) { return std::string(field, strnlen(field, size)); }

}  // namespace

std::vector<CounterNote> movedKnownCounters(std::span<const output::CounterRecord> rows,
                                            const std::vector<std::string>& hostOfRank) {
  std::map<std::string, CounterNote> byName;
  for (const auto& row : rows) {
    const std::string name = textOf(row.name, sizeof row.name);
    if (row.delta <= 0 || !inventory::isKnownCounter(name)) continue;
    auto& note = byName[name];
    note.name = name;
    note.total += row.delta;
    ++note.hosts;
    if (row.delta > note.largest) {
      note.largest = row.delta;
      const auto rank = static_cast<std::size_t>(row.rank);
      const std::string host = rank < hostOfRank.size() ? hostOfRank[rank] : "rank " + std::to_string(row.rank);
      note.largestWhere = host + " " + textOf(row.source, sizeof row.source);
    }
  }
  std::vector<CounterNote> notes;
  for (auto& [name, note] : byName) notes.push_back(std::move(note));
  std::stable_sort(notes.begin(), notes.end(),
                   [](const CounterNote& a, const CounterNote& b) { return a.total > b.total; });
  return notes;
}

std::string describeCounterNotes(const std::vector<CounterNote>& notes, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < notes.size() && i < limit; ++i) {
    const auto& n = notes[i];
    out += (out.empty() ? "" : ", ") + n.name + " +" + std::to_string(n.total);
    if (n.hosts > 1)
      out += " (largest " + n.largestWhere + " +" + std::to_string(n.largest) + " of " + std::to_string(n.hosts) +
             " readers)";
    else
      out += " (" + n.largestWhere + ")";
  }
  if (notes.size() > limit) out += " and " + std::to_string(notes.size() - limit) + " more";
  return out;
}

std::string counterMeaning(const std::string& name) {
  for (const auto& known : inventory::knownCounters())
    if (known.name == name) return std::string(known.meaning);
  return "";
}

}  // namespace fabscope::driver
