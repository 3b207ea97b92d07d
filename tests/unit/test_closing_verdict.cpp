// The run's closing verdict starts the analysis as a program and its arguments:
// a result path full of shell syntax reaches it as one argument and runs nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/ClosingVerdict.hpp"

namespace fabscope {
namespace {

// A scratch folder as the working directory, with a stand-in for python3 that
// writes the arguments it got (one a line) and its PYTHONPATH next to itself and
// prints a verdict; the environment and the working directory restored after.
class ClosingVerdictArgv : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fabscope-verdict-argv.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    char here[PATH_MAX];
    ASSERT_NE(getcwd(here, sizeof here), nullptr);
    oldCwd_ = here;
    ASSERT_EQ(chdir(dir_.c_str()), 0);
    fake_ = dir_ + "/fake-python";
    std::ofstream(fake_) << "#!/bin/sh\n"
                            "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\n"
                            "printf '%s\\n' \"$PYTHONPATH\" > \"$(dirname \"$0\")/pythonpath\"\n"
                            "echo 'verdict: PASS (stand-in)'\n";
    ASSERT_EQ(chmod(fake_.c_str(), 0755), 0);
    for (const char* name : {"FABSCOPE_PYTHON", "FABSCOPE_ANALYSIS_DIR"})
      if (const char* v = std::getenv(name)) saved_.push_back({name, v});
    setenv("FABSCOPE_PYTHON", fake_.c_str(), 1);
    setenv("FABSCOPE_ANALYSIS_DIR", (dir_ + "/analysis dir").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FABSCOPE_PYTHON");
    unsetenv("FABSCOPE_ANALYSIS_DIR");
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    (void)!chdir(oldCwd_.c_str());
    (void)!std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::vector<std::string> linesOf(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  bool exists(const std::string& name) const { return access((dir_ + "/" + name).c_str(), F_OK) == 0; }

  std::string dir_, oldCwd_, fake_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(ClosingVerdictArgv, HostilePathIsOneArgumentAndRunsNothing) {
  for (const std::string hostile : {"/tmp/x/r;touch PWNED;.h5", "/tmp/x/r$(touch PWNED).h5", "/tmp/x/r`touch PWNED`.h5",
                                    "/tmp/x/it's;touch PWNED;'.h5", "/tmp/x/r\ntouch PWNED\n.h5"}) {
    SCOPED_TRACE(hostile);
    EXPECT_EQ(cli::closingVerdict(hostile, 20), "verdict: PASS (stand-in)");
    EXPECT_FALSE(exists("PWNED")) << "a shell ran the path's command";
    std::vector<std::string> expected = {"-m", "fabscope_analysis", "verdict"};
    std::istringstream words(hostile);  // the path's own lines, as the stand-in wrote them
    for (std::string line; std::getline(words, line);) expected.push_back(line);
    expected.push_back("--brief");
    EXPECT_EQ(linesOf("args"), expected);
  }
  EXPECT_EQ(linesOf("pythonpath").at(0).rfind(dir_ + "/analysis dir", 0), 0u) << linesOf("pythonpath").at(0);
}

TEST_F(ClosingVerdictArgv, NoPythonSaysSoWithAPastableCommand) {
  setenv("FABSCOPE_PYTHON", (dir_ + "/no such python").c_str(), 1);
  const std::string line = cli::closingVerdict("/tmp/x/r;touch PWNED;.h5", 20);
  EXPECT_EQ(
      line.rfind("verdict: not computed here (python3 -m fabscope_analysis: cannot start " + dir_ + "/no such python",
                 0),
      0u)
      << line;
  const std::string hint = "; get it with: python3 -m fabscope_analysis verdict '/tmp/x/r;touch PWNED;.h5'";
  ASSERT_GE(line.size(), hint.size()) << line;
  EXPECT_EQ(line.substr(line.size() - hint.size()), hint) << line;
  EXPECT_FALSE(exists("PWNED"));
}

}  // namespace
}  // namespace fabscope
