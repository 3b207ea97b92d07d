#include "inventory/SysfsFiles.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

namespace fabscope::inventory {
namespace fs = std::filesystem;

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<std::string> readSmallFile(const fs::path& file, std::size_t maxBytes) {
  FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string content(maxBytes, '\0');
  std::size_t filled = 0;
  while (filled < maxBytes) {
    ssize_t got = ::read(fd.get(), content.data() + filled, maxBytes - filled);
    if (got < 0) return std::nullopt;  // EINVAL from e.g. speed of a down interface
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  content.resize(filled);
  return content;
}

std::string trim(const std::string& text) {
  auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  auto begin = std::find_if(text.begin(), text.end(), notSpace);
  auto end = std::find_if(text.rbegin(), text.rend(), notSpace).base();
  return begin < end ? std::string(begin, end) : std::string();
}

std::optional<std::string> readTrimmedLine(const fs::path& file) {
  auto content = readSmallFile(file, 4096);
  if (!content) return std::nullopt;
  auto newline = content->find('\n');
  return trim(newline == std::string::npos ? *content : content->substr(0, newline));
}

std::optional<long long> parseInteger(const std::string& text) {
  std::string digits = trim(text);
  if (digits.empty()) return std::nullopt;
  long long value = 0;
  const char* begin = digits.data();
  const char* end = digits.data() + digits.size();
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    begin += 2;
    base = 16;
  }
  auto [ptr, ec] = std::from_chars(begin, end, value, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<long long> readInteger(const fs::path& file) {
  auto line = readTrimmedLine(file);
  if (!line) return std::nullopt;
  return parseInteger(*line);
}

std::vector<std::string> listDirectory(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string linkTargetName(const fs::path& link) {
  std::error_code ec;
  fs::path target = fs::read_symlink(link, ec);
  if (ec) return {};
  // "../../../bus/pci/drivers/mlx5_core/" would give an empty filename.
  while (!target.empty() && target.filename().empty()) target = target.parent_path();
  return target.filename().string();
}

std::string resolvedDevicePath(const fs::path& link, const fs::path& sysRoot) {
  std::error_code ec;
  fs::path resolved = fs::canonical(link, ec);
  if (ec) return {};
  fs::path root = fs::canonical(sysRoot, ec);
  if (ec) return {};
  fs::path relative = resolved.lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") return {};
  return relative.generic_string();
}

bool isPciAddress(const std::string& text) {
  // dddd:bb:dd.f, all hex; the domain may be longer than 4 digits on some VMs.
  auto firstColon = text.find(':');
  if (firstColon == std::string::npos || firstColon < 4) return false;
  if (text.size() != firstColon + 8) return false;
  for (std::size_t i = 0; i < firstColon; ++i)
    if (!isHex(text[i])) return false;
  const std::string rest = text.substr(firstColon);  // ":bb:dd.f"
  return rest[0] == ':' && isHex(rest[1]) && isHex(rest[2]) && rest[3] == ':' && isHex(rest[4]) && isHex(rest[5]) &&
         rest[6] == '.' && isHex(rest[7]);
}

std::string lastPciAddress(const std::string& devicePath) {
  std::string found;
  for (const auto& part : fs::path(devicePath)) {
    if (isPciAddress(part.string())) found = part.string();
  }
  return found;
}

std::string normalisePciAddress(const std::string& text) {
  std::string lower = trim(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // "3b:00.0" has no domain.
  if (lower.size() == 7) lower = "0000:" + lower;
  auto firstColon = lower.find(':');
  if (firstColon != std::string::npos && firstColon > 4) {
    // CUDA prints an 8 digit domain: keep the 4 digits sysfs uses when the rest are zeros.
    std::string domain = lower.substr(0, firstColon);
    std::string head = domain.substr(0, domain.size() - 4);
    if (head.find_first_not_of('0') == std::string::npos) lower = lower.substr(firstColon - 4);
  }
  return isPciAddress(lower) ? lower : std::string();
}

}  // namespace fabscope::inventory
