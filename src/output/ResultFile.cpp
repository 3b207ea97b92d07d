#include "output/ResultFile.hpp"

#include <sys/statvfs.h>

#include <cstring>
#include <filesystem>

#include "fabscope/BuildConfig.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/Watchdog.hpp"

namespace fabscope::output {
namespace {

// Attribute sets travel from rank 0 as text: type tag, name, value per line
// group, so every rank passes identical values to collective HDF5 calls.
std::string encode(const Attributes& attributes) {
  std::string out;
  for (const auto& [name, value] : attributes) {
    std::string payload;
    char tag = 's';
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      tag = 'i';
      payload = std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&value)) {
      tag = 'd';
      payload.resize(sizeof(double));
      std::memcpy(payload.data(), d, sizeof(double));
    } else {
      payload = std::get<std::string>(value);
    }
    out += tag;
    out += std::to_string(name.size()) + ":" + name + std::to_string(payload.size()) + ":" + payload;
  }
  return out;
}

Attributes decode(const std::string& text) {
  Attributes out;
  std::size_t pos = 0;
  auto field = [&] {
    const auto colon = text.find(':', pos);
    const auto length = std::stoul(text.substr(pos, colon - pos));
    std::string value = text.substr(colon + 1, length);
    pos = colon + 1 + length;
    return value;
  };
  while (pos < text.size()) {
    const char tag = text[pos++];
    std::string name = field();
    std::string payload = field();
    if (tag == 'i')
      out.emplace_back(name, static_cast<std::int64_t>(std::stoll(payload)));
    else if (tag == 'd') {
      double d = 0;
      std::memcpy(&d, payload.data(), sizeof d);
      out.emplace_back(name, d);
    } else
      out.emplace_back(name, payload);
  }
  return out;
}

// Bytes the file system holding `path` can still take, or -1 if unknown.
std::int64_t freeBytesNear(const std::string& path) {
  auto folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  struct statvfs fs {};
  if (statvfs(folder.c_str(), &fs) != 0) return -1;
  return static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
}

// Room for a table's object header, its attributes and HDF5's free-space
// bookkeeping beyond the raw rows.
constexpr std::int64_t metadataMarginBytes = 256 * 1024;

}  // namespace

// auto is gathered to rank 0 even where HDF5 is parallel: a process that has
// opened a file through MPI-IO measures MPI slower for the rest of its life
// (Open MPI 4.1.6, GPU machine, 2026-12-02: the 8-byte blocking ping-pong 7 %
// slower, closing the file does not undo it), and on one node the gathered write
// was also the faster one (docs/benchmarks.md, "Result file: gathered against
// parallel writes"). Rank 0 gathers an instance's samples for its statistics anyway.
WriteMode resolveWriteMode(const std::string& requested) {
  if (requested == "parallel") {
    if (!FABSCOPE_HDF5_PARALLEL)
      throw UsageError("hdf5=parallel was requested but this build's HDF5 library is serial; use hdf5=serial or auto");
    return WriteMode::parallel;
  }
  return WriteMode::serialGather;
}

const char* writeModeName(WriteMode mode) { return mode == WriteMode::parallel ? "parallel" : "serial-gather"; }

ResultFile::ResultFile(const std::string& path, const std::string& requested, const runtime::Communicator& comm,
                       const runtime::Deadline& deadline)
    : path_(path), comm_(&comm), mode_(resolveWriteMode(requested)) {
  // With parallel HDF5 the create is collective, inside MPI-IO: watched.
  const runtime::watchdog::Watch watch("every rank to create the result file", deadline.at(),
                                       runtime::watchdog::everyRank);
  quietHdf5ErrorStack();
  H5Plist fapl(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
  // Dense attribute storage: scenario texts may exceed 64 KiB.
  checkH5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
#if FABSCOPE_HDF5_PARALLEL
  if (mode_ == WriteMode::parallel)
    checkH5(H5Pset_fapl_mpio(fapl.get(), comm_->handle(), MPI_INFO_NULL), "H5Pset_fapl_mpio");
#endif
  int ok = 1;
  if (holdsFile()) {
    // Exclusive: a file or link that appeared at the path since the command
    // line's checks makes the create fail; nothing is written through it.
    const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get());
    ok = id >= 0;
    if (ok) file_ = H5File(id, "H5Fcreate");
  }
  if (mode_ == WriteMode::serialGather) {
    std::int64_t flag = ok;
    comm_->broadcast(&flag, sizeof flag, 0, deadline);
    ok = static_cast<int>(flag);
  }
  if (!ok)
    throw RuntimeFailure("cannot create the result file '" + path +
                         "' (it is created exclusively: a file or link put there after the checks is never written "
                         "through; otherwise, is its folder writable?)");
}

ResultFile::~ResultFile() = default;

void ResultFile::createGroup(const std::string& path) {
  if (!holdsFile()) return;
  const runtime::watchdog::Watch watch("a group of the result file to be created",
                                       runtime::watchdog::secondsFromNow(stepSeconds_),
                                       collective() ? runtime::watchdog::everyRank : runtime::watchdog::noPeer);
  H5Group g(H5Gcreate2(file_.get(), path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            ("H5Gcreate " + path).c_str());
}

void ResultFile::setAttributes(const std::string& objectPath, const Attributes& attributes,
                               const runtime::Deadline& deadline) {
  // Parallel HDF5 writes attributes collectively, inside MPI-IO: watched.
  const runtime::watchdog::Watch watch("attributes of the result file to be written", deadline.at(),
                                       collective() ? runtime::watchdog::everyRank : runtime::watchdog::noPeer);
  Attributes agreed = attributes;
  if (collective()) agreed = decode(comm_->broadcastString(encode(attributes), 0, deadline));
  if (!holdsFile()) return;
  const hid_t object = H5Oopen(file_.get(), objectPath.c_str(), H5P_DEFAULT);
  if (object < 0) throw RuntimeFailure("HDF5: cannot open " + objectPath + " in " + path_);
  try {
    for (const auto& [name, value] : agreed) writeAttribute(object, name, value);
  } catch (...) {
    H5Oclose(object);
    throw;
  }
  H5Oclose(object);
}

void ResultFile::writeRows(const std::string& path, hid_t type, std::size_t rowBytes, std::span<const std::byte> myRows,
                           const runtime::Deadline& deadline) {
  const auto myCount = static_cast<std::int64_t>(myRows.size() / rowBytes);
  // The collective create and write happen inside MPI-IO: watched.
  const runtime::watchdog::Watch watch("a table of the result file to be written", deadline.at(),
                                       collective() ? runtime::watchdog::everyRank : runtime::watchdog::noPeer);
  if (collective()) {
    const auto counts = comm_->allgather(myCount, deadline);
    std::int64_t total = 0, offset = 0;
    for (int r = 0; r < comm_->size(); ++r) {
      if (r < comm_->rank()) offset += counts[static_cast<std::size_t>(r)];
      total += counts[static_cast<std::size_t>(r)];
    }
    // Rank 0's view of the free space decides for everyone: all ranks must
    // leave the collective write together.
    std::int64_t freeBytes = comm_->rank() == 0 ? freeBytesNear(path_) : 0;
    comm_->broadcast(&freeBytes, sizeof freeBytes, 0, deadline);
    requireSpace(path, total * static_cast<std::int64_t>(rowBytes), freeBytes);
    const hsize_t dims[1] = {static_cast<hsize_t>(total)};
    H5Space fileSpace(H5Screate_simple(1, dims, nullptr), "H5Screate_simple");
    H5Dataset ds(H5Dcreate2(file_.get(), path.c_str(), type, fileSpace.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 ("H5Dcreate " + path).c_str());
    const hsize_t start[1] = {static_cast<hsize_t>(offset)};
    const hsize_t count[1] = {static_cast<hsize_t>(myCount)};
    H5Space memSpace(H5Screate_simple(1, count, nullptr), "H5Screate_simple");
    if (myCount > 0) {
      checkH5(H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
              "H5Sselect_hyperslab");
    } else {
      checkH5(H5Sselect_none(fileSpace.get()), "H5Sselect_none");
      checkH5(H5Sselect_none(memSpace.get()), "H5Sselect_none");
    }
    H5Plist dxpl(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(transfer)");
#if FABSCOPE_HDF5_PARALLEL
    checkH5(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
#endif
    if (total > 0)
      checkH5(H5Dwrite(ds.get(), type, memSpace.get(), fileSpace.get(), dxpl.get(), myRows.data()),
              "collective write of " + path);
    return;
  }
  std::vector<int> counts;
  std::vector<std::byte> gathered;
  if (!alone_) gathered = comm_->gatherBytes(myRows, 0, counts, deadline);
  const std::span<const std::byte> all = alone_ ? myRows : std::span<const std::byte>(gathered);
  if (comm_->rank() != 0) return;
  requireSpace(path, static_cast<std::int64_t>(all.size()), freeBytesNear(path_));
  const hsize_t dims[1] = {static_cast<hsize_t>(all.size() / rowBytes)};
  H5Space space(H5Screate_simple(1, dims, nullptr), "H5Screate_simple");
  H5Dataset ds(H5Dcreate2(file_.get(), path.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               ("H5Dcreate " + path).c_str());
  if (dims[0] > 0) checkH5(H5Dwrite(ds.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()), "write of " + path);
}

// A full disk must stop the run before HDF5 writes into it: Open MPI 4.1's
// MPI-IO (OMPIO) reports a failed pwritev on stderr yet returns success, and
// HDF5 then records an end of file beyond the bytes on disk, after which the
// whole file, earlier tests included, no longer opens ("truncated file").
// Checking first keeps every instance written so far readable.
void ResultFile::requireSpace(const std::string& table, std::int64_t bytes, std::int64_t freeBytes) const {
  if (freeBytes < 0) return;  // unknown: nothing to decide on
  if (bytes + bytes / 8 + metadataMarginBytes <= freeBytes) return;
  throw RuntimeFailure("HDF5: writing " + table + " (" + std::to_string(bytes) + " bytes) to " + path_ +
                       " failed: only " + std::to_string(freeBytes) +
                       " bytes are free on its file system (disk full?); nothing of this table was written");
}

void ResultFile::writeMatrix(const std::string& path, std::span<const double> rank0Values, std::size_t rows,
                             std::size_t cols) {
  if (!holdsFile()) return;
  // Collective in parallel HDF5 (create and write, inside MPI-IO): watched, as every other step.
  const runtime::watchdog::Watch watch("the pair matrix of the result file to be written",
                                       runtime::watchdog::secondsFromNow(stepSeconds_),
                                       collective() ? runtime::watchdog::everyRank : runtime::watchdog::noPeer);
  const hsize_t dims[2] = {rows, cols};
  H5Space space(H5Screate_simple(2, dims, nullptr), "H5Screate_simple");
  H5Dataset ds(
      H5Dcreate2(file_.get(), path.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      ("H5Dcreate " + path).c_str());
  // In parallel mode only rank 0 contributes data; the others select nothing.
  H5Space fileSpace(H5Dget_space(ds.get()), "H5Dget_space");
  H5Space memSpace(H5Screate_simple(2, dims, nullptr), "H5Screate_simple");
  if (comm_->rank() != 0) {
    checkH5(H5Sselect_none(fileSpace.get()), "H5Sselect_none");
    checkH5(H5Sselect_none(memSpace.get()), "H5Sselect_none");
  }
  H5Plist dxpl(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(transfer)");
#if FABSCOPE_HDF5_PARALLEL
  if (collective()) checkH5(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
#endif
  static const double none = 0;
  checkH5(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, memSpace.get(), fileSpace.get(), dxpl.get(),
                   comm_->rank() == 0 ? rank0Values.data() : &none),
          "write of " + path);
}

void ResultFile::switchCommunicator(const runtime::Communicator& survivors) {
  if (mode_ == WriteMode::parallel)
    throw RuntimeFailure(
        "ranks were lost while the result file is written with parallel HDF5; "
        "fault drills need hdf5=serial (the runner chooses it for them)");
  if (comm_->rank() == 0 && survivors.rank() != 0)
    throw RuntimeFailure("rank 0 must survive a fault drill: it holds the result file");
  comm_ = &survivors;
}

void ResultFile::continueAlone() {
  if (comm_->rank() != 0) throw RuntimeFailure("only rank 0 may go on alone with the result file");
  if (alone_) return;
  if (mode_ == WriteMode::parallel) {
    (void)file_.release();
    H5Plist fapl(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
    checkH5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), "H5Pset_libver_bounds");
    checkH5(H5Pset_fapl_sec2(fapl.get()), "H5Pset_fapl_sec2");
    file_ = H5File(H5Fopen(path_.c_str(), H5F_ACC_RDWR, fapl.get()),
                   ("reopening " + path_ + " without MPI-IO after ranks were lost").c_str());
  }
  alone_ = true;
}

void ResultFile::flush() {
  if (!holdsFile()) return;
  const runtime::watchdog::Watch watch("the result file to be flushed", runtime::watchdog::secondsFromNow(stepSeconds_),
                                       collective() ? runtime::watchdog::everyRank : runtime::watchdog::noPeer);
  checkH5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush of " + path_);
}

}  // namespace fabscope::output
