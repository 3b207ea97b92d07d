#include "inventory/SoftwareVersions.hpp"

#include <sys/utsname.h>

#include <sstream>

#include "fabscope/BuildConfig.hpp"
#include "inventory/SysfsFiles.hpp"

#if FABSCOPE_HAVE_UCX
#include <ucp/api/ucp.h>
#endif
#if FABSCOPE_HAVE_NCCL
#include <nccl.h>
#endif

namespace fabscope::inventory {

std::string readOsPrettyName(const std::filesystem::path& osReleasePath) {
  auto content = readSmallFile(osReleasePath);
  if (!content) return {};
  std::istringstream lines(*content);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string value = trim(line.substr(12));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    return value;
  }
  return {};
}

std::string formatNcclVersion(int code) {
  if (code <= 0) return {};
  // Before 2.9 the code was major*1000 + minor*100 + patch.
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

SoftwareVersions readSoftwareVersions(const std::string& mpiLibraryVersion, const std::filesystem::path& sysRoot,
                                      const std::filesystem::path& osReleasePath) {
  SoftwareVersions versions;
  versions.fabscope = FABSCOPE_VERSION;
  // Open MPI's text runs over several lines; the first names the version.
  versions.mpi = trim(mpiLibraryVersion.substr(0, mpiLibraryVersion.find('\n')));
#if FABSCOPE_HAVE_UCX
  versions.ucx = ucp_get_version_string();
#endif
#if FABSCOPE_HAVE_NCCL
  int ncclCode = 0;
  if (ncclGetVersion(&ncclCode) == ncclSuccess) versions.nccl = formatNcclVersion(ncclCode);
#endif
  versions.nvidiaDriver = readTrimmedLine(sysRoot / "module" / "nvidia" / "version").value_or("");
  utsname uts{};
  if (uname(&uts) == 0) {
    versions.kernel = uts.release;
    versions.kernelBuild = uts.version;
  }
  versions.os = readOsPrettyName(osReleasePath);
  return versions;
}

}  // namespace fabscope::inventory
