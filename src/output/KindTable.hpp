#pragma once
// A kind's own table under /tests/NNNN (docs/file-format.md): its name, the
// layout of its rows (output/RecordLayout.hpp) and the rows as bytes. The kind
// owns its record type; the recorder writes any table from its layout, so a new
// table type touches nothing here.
#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::output {

class KindTable {
 public:
  // A table of `Record` rows named `name` (the dataset under the instance's group).
  template <typename Record>
  static KindTable of(std::string name, std::span<const Record> rows = {}) {
    KindTable table(std::move(name), layoutOf<Record>());
    table.append(rows);
    return table;
  }
  template <typename Record>
  static KindTable of(std::string name, const std::vector<Record>& rows) {
    return of<Record>(std::move(name), std::span<const Record>(rows));
  }

  const std::string& name() const noexcept { return name_; }
  const RecordLayout& layout() const noexcept { return *layout_; }
  std::size_t rowCount() const noexcept { return bytes_.size() / layout_->rowBytes; }
  std::span<const std::byte> bytes() const noexcept { return bytes_; }

  template <typename Record>
  void append(std::span<const Record> rows) {
    requireLayout(layoutOf<Record>());
    const auto* first = reinterpret_cast<const std::byte*>(rows.data());
    bytes_.insert(bytes_.end(), first, first + rows.size_bytes());
  }
  // Rows of another table of the same layout (one rank's rows of a declared table).
  void append(const KindTable& other) {
    requireLayout(other.layout());
    bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
  }
  // The rows as `Record`s (copied: the bytes carry no alignment promise).
  template <typename Record>
  std::vector<Record> rowsAs() const {
    requireLayout(layoutOf<Record>());
    std::vector<Record> rows(rowCount());
    if (!rows.empty()) std::memcpy(rows.data(), bytes_.data(), bytes_.size());
    return rows;
  }

 private:
  KindTable(std::string name, const RecordLayout& layout) : name_(std::move(name)), layout_(&layout) {}
  void requireLayout(const RecordLayout& layout) const {
    if (&layout != layout_) throw std::logic_error("kind table '" + name_ + "': rows of another record type");
  }
  std::string name_;
  const RecordLayout* layout_;
  std::vector<std::byte> bytes_;
};

}  // namespace fabscope::output
