// What a launcher sets per job or per rank is not recorded in the inventory (so it can
// never raise a consistency flag); real configuration is kept. The compiled list is
// the analysis package's file, line for line.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "inventory/FabricEnvironment.hpp"
#include "inventory/LauncherVariables.hpp"

namespace fabscope::inventory {
namespace {

TEST(LauncherVariables, PerJobAndPerRankValuesAreNotRecorded) {
  const std::vector<std::string> environment = {
      "OMPI_COMM_WORLD_RANK=3",
      "OMPI_COMM_WORLD_LOCAL_RANK=0",
      "OMPI_ARGV=run --scenario x.yaml",
      "OMPI_FILE_LOCATION=/tmp/ompi.fm2.0/pid.4242/1/3",
      "OMPI_MCA_orte_hnp_uri=1234.0;tcp://198.18.50.1:41234",
      "OMPI_MCA_orte_local_daemon_uri=1234.1;tcp://198.18.50.12:45001",
      "OMPI_MCA_orte_top_session_dir=/tmp/ompi.fm2.0",
      "OMPI_MCA_orte_jobfam_session_dir=/tmp/ompi.fm2.0/pid.4242",
      "OMPI_MCA_ess_base_jobid=80871425",
      "OMPI_MCA_ess_base_vpid=3",
      "PMIX_RANK=3",
      "PMIX_SERVER_URI41=pmix-server.4242;tcp4://127.0.0.1:41000",
      "SLURM_JOB_ID=4711",
      "SLURM_PROCID=3",
      "SLURM_NODELIST=fm[0-3]",
      // real configuration: kept
      "OMPI_MCA_btl=tcp,self",
      "OMPI_MCA_btl_tcp_if_include=198.18.50.0/24",
      "OMPI_MCA_mpi_yield_when_idle=1",
      "UCX_TLS=tcp,self",
      "NCCL_IB_HCA=mlx5_0",
      "SLURM_MPI_TYPE=pmix",
      "CUDA_VISIBLE_DEVICES=0",
      "FABSCOPE_EMULATED_RECEIVE_RATE=1Gbit",
      // not configuration of the fabric: left out
      "FABSCOPE_FABRIC=emulated",
      "HOME=/root",
  };
  const auto kept = fabricEnvironment(environment);
  std::vector<std::string> names;
  for (const auto& [name, value] : kept) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES", "FABSCOPE_EMULATED_RECEIVE_RATE", "NCCL_IB_HCA",
                                             "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_include",
                                             "OMPI_MCA_mpi_yield_when_idle", "SLURM_MPI_TYPE", "UCX_TLS"}));
  EXPECT_TRUE(isLauncherVariable("OMPI_COMM_WORLD_SIZE"));
  EXPECT_TRUE(isLauncherVariable("PMIX_NAMESPACE"));
  EXPECT_FALSE(isLauncherVariable("OMPI_MCA_pml"));
  EXPECT_FALSE(isLauncherVariable("NCCL_SOCKET_IFNAME"));
}

TEST(LauncherVariables, CompiledListIsTheAnalysisFile) {
  std::ifstream in(std::string(FABSCOPE_SOURCE_DIR) + "/analysis/fabscope_analysis/data/launcher-variables.txt");
  ASSERT_TRUE(in) << "cannot read analysis/fabscope_analysis/data/launcher-variables.txt";
  std::vector<std::string> fromFile;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    fromFile.push_back(line.substr(first, last - first + 1));
  }
  const std::vector<std::string> compiled(kLauncherVariablePatterns.begin(), kLauncherVariablePatterns.end());
  EXPECT_EQ(compiled, fromFile) << "rebuild: the generated header is stale";
  EXPECT_GT(compiled.size(), 20u);
}

}  // namespace
}  // namespace fabscope::inventory
