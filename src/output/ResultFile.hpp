#pragma once
// The one shared result file of a run. Every method is collective over the
// communicator it was opened with: with parallel HDF5 every rank takes part
// in the (collective) writes; otherwise rows are gathered to rank 0, which
// alone holds the file open.
#include <map>
#include <span>
#include <string>
#include <vector>

#include "output/Hdf5.hpp"
#include "output/Records.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::output {

enum class WriteMode { parallel, serialGather };

using Attributes = std::vector<std::pair<std::string, AttributeValue>>;

class ResultFile {
 public:
  // `requested`: "auto" (= "serial": gathered to rank 0), "parallel" or "serial".
  // Truncates an existing file.
  ResultFile(const std::string& path, const std::string& requested, const runtime::Communicator& comm,
             const runtime::Deadline& deadline);
  ~ResultFile();
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  WriteMode mode() const { return mode_; }
  const std::string& path() const { return path_; }

  // The bound of one step that takes no deadline (creating a group, a flush):
  // collective with parallel HDF5, so watched by the watchdog for this long.
  void setStepSeconds(double seconds) { stepSeconds_ = seconds; }

  void createGroup(const std::string& path);
  // Attributes as rank 0 has them (other ranks' values are ignored).
  void setAttributes(const std::string& objectPath, const Attributes& attributes, const runtime::Deadline& deadline);

  template <typename Record>
  void writeTable(const std::string& path, std::span<const Record> myRows, const runtime::Deadline& deadline) {
    H5Type type = compoundTypeOf<Record>();
    writeRows(path, type.get(), sizeof(Record), std::as_bytes(myRows), deadline);
  }
  // The same for rows known by their layout alone (a kind's table).
  void writeTable(const std::string& path, const RecordLayout& layout, std::span<const std::byte> myRows,
                  const runtime::Deadline& deadline) {
    H5Type type = compoundTypeOf(layout);
    writeRows(path, type.get(), layout.rowBytes, myRows, deadline);
  }

  // A dense float64 matrix that rank 0 holds (others pass an empty span).
  void writeMatrix(const std::string& path, std::span<const double> rank0Values, std::size_t rows, std::size_t cols);

  void flush();

  // Continues on `survivors` after ranks were lost (gathered mode only).
  void switchCommunicator(const runtime::Communicator& survivors);

  // After ranks were lost without warning: rank 0 goes on alone and every
  // method becomes local to it (no collectives; other ranks must not call
  // again). With parallel HDF5 the file is reopened through the serial
  // driver: everything written so far was flushed, and the MPI-IO handle is
  // given up unclosed (closing it is collective). Rank 0 only.
  void continueAlone();
  bool alone() const { return alone_; }

 private:
  double stepSeconds_ = 30;  // the runner sets the scenario's control_timeout, else its control_grace
  void writeRows(const std::string& path, hid_t type, std::size_t rowBytes, std::span<const std::byte> myRows,
                 const runtime::Deadline& deadline);
  // Throws RuntimeFailure when `freeBytes` (>= 0) cannot take `bytes` of `table`.
  void requireSpace(const std::string& table, std::int64_t bytes, std::int64_t freeBytes) const;
  bool holdsFile() const { return (mode_ == WriteMode::parallel && !alone_) || comm_->rank() == 0; }
  bool collective() const { return mode_ == WriteMode::parallel && !alone_; }

  std::string path_;
  const runtime::Communicator* comm_;
  WriteMode mode_;
  bool alone_ = false;
  H5File file_;
};

// Which mode `requested` resolves to on this build.
WriteMode resolveWriteMode(const std::string& requested);
const char* writeModeName(WriteMode mode);

}  // namespace fabscope::output
