// HDF5 write-then-read round trip of the result file writer, in both modes,
// on a single-rank communicator.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <unistd.h>
#include <fstream>
#include "MpiForTests.hpp"
#include "fabscope/BuildConfig.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"
#include "runtime/Errors.hpp"

using namespace fabscope;

namespace {

std::string readStringAttribute(hid_t object, const char* name) {
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  char* text = nullptr;
  const hid_t memType = H5Tcopy(H5T_C_S1);
  H5Tset_size(memType, H5T_VARIABLE);
  H5Tset_cset(memType, H5T_CSET_UTF8);
  H5Aread(a, memType, &text);
  std::string out = text ? text : "";
  H5free_memory(text);
  H5Tclose(memType);
  H5Tclose(type);
  H5Aclose(a);
  return out;
}

std::int64_t readIntAttribute(hid_t object, const char* name) {
  std::int64_t v = -99;
  const hid_t a = H5Aopen(object, name, H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  return v;
}

void roundTrip(const std::string& mode) {
  fabscope::testing::ensureMpi();
  const runtime::Communicator self(MPI_COMM_SELF);
  const auto path = (std::filesystem::temp_directory_path() / ("fabscope-roundtrip-" + mode + ".h5")).string();
  const auto deadline = runtime::Deadline::afterSeconds(30);
  std::filesystem::remove(path);  // created exclusively: a file left by an earlier run is refused
  std::vector<output::SampleRecord> rows;
  for (int i = 0; i < 1000; ++i) rows.push_back({0, i, 1, 4096, 1000 + i, 2000 + 3 * i, i % 3 == 0 ? 1u : 0u});
  {
    output::ResultFile file(path, mode, self, deadline);
    file.setAttributes("/", {{"format", std::string("fabscope")}, {"complete", std::int64_t{0}}}, deadline);
    file.createGroup("/tests");
    file.createGroup("/tests/0000");
    file.writeTable<output::SampleRecord>("/tests/0000/samples", rows, deadline);
    const std::vector<double> m = {std::nan(""), 2.5, 3.5, std::nan("")};
    file.writeMatrix("/tests/0000/pair_matrix", m, 2, 2);
    // Attributes are replaced, not duplicated (complete goes 0 -> 1 at the end of a run).
    file.setAttributes("/", {{"complete", std::int64_t{1}}, {"note", std::string("é ünïcode")}}, deadline);
    file.flush();
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_EQ(readStringAttribute(f, "format"), "fabscope");
  EXPECT_EQ(readIntAttribute(f, "complete"), 1);
  EXPECT_EQ(readStringAttribute(f, "note"), "é ünïcode");
  const hid_t ds = H5Dopen2(f, "/tests/0000/samples", H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  ASSERT_EQ(n, rows.size());
  std::vector<output::SampleRecord> back(n);
  auto type = output::compoundTypeOf<output::SampleRecord>();
  ASSERT_GE(H5Dread(ds, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data()), 0);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(back[i].iter, rows[i].iter);
    EXPECT_EQ(back[i].t_done_ns, rows[i].t_done_ns);
    EXPECT_EQ(back[i].flags, rows[i].flags);
  }
  double m[4];
  const hid_t mds = H5Dopen2(f, "/tests/0000/pair_matrix", H5P_DEFAULT);
  H5Dread(mds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m);
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_DOUBLE_EQ(m[1], 2.5);
  H5Dclose(mds);
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(f);
  std::filesystem::remove(path);
}

}  // namespace

TEST(ResultFile, RoundTripGatheredToRankZero) { roundTrip("serial"); }

// A transport's scenario settings land in /transports/<name> with their
// origins, and its facts after use join them in the same group. (A ResultFile
// test: it starts MPI, whose components leak at exit, so the sanitizer stage
// runs this suite without the leak check.)
TEST(ResultFile, TransportSettingsWithTheirOriginsAndFactsInOneGroup) {
  fabscope::testing::ensureMpi();
  const runtime::Communicator self(MPI_COMM_SELF);
  const auto path = (std::filesystem::temp_directory_path() / "fabscope-transport-settings.h5").string();
  std::filesystem::remove(path);
  {
    output::ResultFile file(path, "serial", self, runtime::Deadline::afterSeconds(30));
    output::Recorder recorder(file);
    recorder.transportSettings("mpi", {{"wait", "blocking", "run.yaml:3:21"}});
    recorder.transportSettings("verbs", {});  // nothing given: no group
    recorder.transport("mpi", {{"mpi_wait", std::string("blocking (MPI_Wait)")}});
    file.flush();
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t g = H5Gopen2(f, "/transports/mpi", H5P_DEFAULT);
  ASSERT_GE(g, 0);
  EXPECT_EQ(readStringAttribute(g, "setting_wait"), "blocking");
  EXPECT_EQ(readStringAttribute(g, "setting_wait_from"), "run.yaml:3:21");
  EXPECT_EQ(readStringAttribute(g, "mpi_wait"), "blocking (MPI_Wait)");
  EXPECT_EQ(H5Lexists(f, "/transports/verbs", H5P_DEFAULT), 0);
  H5Gclose(g);
  H5Fclose(f);
  std::filesystem::remove(path);
}

// auto never opens MPI-IO (it would slow every later MPI measurement of the
// process): gathered to rank 0 whatever the build; parallel only when asked.
TEST(ResultFile, AutoIsGatheredToRankZeroEvenWithParallelHdf5) {
  EXPECT_EQ(output::resolveWriteMode("auto"), output::WriteMode::serialGather);
  EXPECT_EQ(output::resolveWriteMode("serial"), output::WriteMode::serialGather);
  if (FABSCOPE_HDF5_PARALLEL)
    EXPECT_EQ(output::resolveWriteMode("parallel"), output::WriteMode::parallel);
  else
    EXPECT_THROW(output::resolveWriteMode("parallel"), UsageError);
}

TEST(ResultFile, RoundTripParallelHdf5) {
  if (!FABSCOPE_HDF5_PARALLEL) GTEST_SKIP() << "this build's HDF5 is serial";
  roundTrip("parallel");
}

// A link (or file) planted at the path after the command line's checks is
// never written through: the create is exclusive, and the target is untouched.
TEST(ResultFile, NeverWritesThroughAPlantedLink) {
  fabscope::testing::ensureMpi();
  const runtime::Communicator self(MPI_COMM_SELF);
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("fabscope-link-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto target = dir / "victim.txt", link = dir / "result.h5";
  { std::ofstream(target) << "precious"; }
  fs::create_symlink(target, link);
  for (const char* mode : {"serial", "parallel"}) {
    if (std::string(mode) == "parallel" && !FABSCOPE_HDF5_PARALLEL) continue;
    EXPECT_THROW(output::ResultFile(link.string(), mode, self, runtime::Deadline::afterSeconds(5)), RuntimeFailure)
        << mode;
    std::ifstream in(target);
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "precious") << mode;
  }
  fs::remove(link);
  fs::create_symlink(dir / "dangling.h5", link);  // a dangling link is not followed either
  for (const char* mode : {"serial", "parallel"}) {
    if (std::string(mode) == "parallel" && !FABSCOPE_HDF5_PARALLEL) continue;
    EXPECT_THROW(output::ResultFile(link.string(), mode, self, runtime::Deadline::afterSeconds(5)), RuntimeFailure)
        << mode;
    EXPECT_FALSE(fs::exists(dir / "dangling.h5")) << mode;
  }
  fs::remove_all(dir);
}

TEST(ResultFile, UnwritableFolderIsARuntimeFailure) {
  fabscope::testing::ensureMpi();
  const runtime::Communicator self(MPI_COMM_SELF);
  EXPECT_THROW(output::ResultFile("/nonexistent/folder/x.h5", "serial", self, runtime::Deadline::afterSeconds(5)),
               RuntimeFailure);
}
