#pragma once
// Small, non-throwing readers for sysfs/procfs style files. Every function
// answers "nothing" instead of throwing when a file is missing or unreadable:
// sysfs files come and go with drivers and some refuse reads (EINVAL).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fabscope::inventory {

// Whole file, at most maxBytes, read with one open/read/close (cheap enough for counters).
std::optional<std::string> readSmallFile(const std::filesystem::path& file, std::size_t maxBytes = 65536);

// First line without surrounding white space.
std::optional<std::string> readTrimmedLine(const std::filesystem::path& file);

std::optional<long long> readInteger(const std::filesystem::path& file);

// Entry names of a directory (files, folders and links), sorted; empty when unreadable.
std::vector<std::string> listDirectory(const std::filesystem::path& dir);

// Last component of a symbolic link's target ("mlx5_core" for .../drivers/mlx5_core).
std::string linkTargetName(const std::filesystem::path& link);

// The device folder behind `link`, resolved, relative to sysRoot
// ("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"), "" when it cannot be resolved.
std::string resolvedDevicePath(const std::filesystem::path& link, const std::filesystem::path& sysRoot);

// Last PCI address (dddd:bb:dd.f) among the components of a device path, "" if none.
std::string lastPciAddress(const std::string& devicePath);

// "00000000:3B:00.0" or "3b:00.0" -> "0000:3b:00.0"; "" when it is not a PCI address.
std::string normalisePciAddress(const std::string& text);

bool isPciAddress(const std::string& text);

std::string trim(const std::string& text);

std::optional<long long> parseInteger(const std::string& text);

}  // namespace fabscope::inventory
