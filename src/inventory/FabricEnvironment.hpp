#pragma once
// The fabric-related part of an environment: NCCL_*, UCX_*, OMPI_*, SLURM_*,
// FABSCOPE_EMULATED_* (an emulated host's link rates) and CUDA_VISIBLE_DEVICES, without anything that looks like a
// secret and without what a launcher sets per job or per rank (isLauncherVariable).
#include <string>
#include <utility>
#include <vector>

namespace fabscope::inventory {

// Entries are "NAME=VALUE"; the result is sorted by name.
std::vector<std::pair<std::string, std::string>> fabricEnvironment(const std::vector<std::string>& environment);

bool isFabricVariable(const std::string& name);

// OMPI_COMM_WORLD_RANK, OMPI_MCA_orte_hnp_uri, PMIX_RANK, SLURM_JOB_ID, ...: the globs of
// analysis/fabscope_analysis/data/launcher-variables.txt, compiled in at build time.
bool isLauncherVariable(const std::string& name);

// Names containing TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, JWT, AUTH or KEY
// (case-insensitive) are never recorded.
bool looksSecret(const std::string& name);

}  // namespace fabscope::inventory
