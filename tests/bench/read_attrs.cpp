// Prints numeric attributes of one test of a result file, for the benchmark
// scripts on machines whose Python has no h5py (the GPU machine).
// usage: fabscope_read_attrs FILE TEST_NAME ATTR [ATTR...]   -> values on one line (nan if absent)
//        fabscope_read_attrs --lines FILE TEST_NAME ATTR...   -> one "ATTR: value" line each, text attributes too
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

std::string stringAttribute(hid_t group, const char* name) {
  if (H5Aexists(group, name) <= 0) return {};
  const hid_t a = H5Aopen(group, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  std::string out;
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;  // read in the file's own string type (its character set included)
    if (H5Aread(a, type, &text) >= 0 && text) out = text;
    if (text) H5free_memory(text);
  } else {
    const std::size_t size = H5Tget_size(type);
    std::string buffer(size, '\0');
    if (H5Aread(a, type, buffer.data()) >= 0) out = buffer.c_str();
  }
  H5Tclose(type);
  H5Aclose(a);
  return out;
}

double numberAttribute(hid_t group, const char* name) {
  if (H5Aexists(group, name) <= 0) return std::nan("");
  const hid_t a = H5Aopen(group, name, H5P_DEFAULT);
  double value = std::nan("");
  if (H5Aread(a, H5T_NATIVE_DOUBLE, &value) < 0) value = std::nan("");
  H5Aclose(a);
  return value;
}

bool isText(hid_t group, const char* name) {
  if (H5Aexists(group, name) <= 0) return false;
  const hid_t a = H5Aopen(group, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  const bool text = H5Tget_class(type) == H5T_STRING;
  H5Tclose(type);
  H5Aclose(a);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const bool lines = argc > 1 && std::strcmp(argv[1], "--lines") == 0;
  if (lines) {
    --argc;
    ++argv;
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s [--lines] FILE TEST_NAME ATTR [ATTR...]\n", argv[0]);
    return 2;
  }
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    std::fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[1]);
    return 1;
  }
  for (int index = 0;; ++index) {
    char path[32];
    std::snprintf(path, sizeof path, "/tests/%04d", index);
    if (H5Lexists(file, path, H5P_DEFAULT) <= 0) break;
    const hid_t group = H5Gopen2(file, path, H5P_DEFAULT);
    if (stringAttribute(group, "name") == argv[2]) {
      if (lines) {
        for (int i = 3; i < argc; ++i)
          if (isText(group, argv[i]))
            std::printf("%s: %s\n", argv[i], stringAttribute(group, argv[i]).c_str());
          else
            std::printf("%s: %.6g\n", argv[i], numberAttribute(group, argv[i]));
      } else {
        for (int i = 3; i < argc; ++i) std::printf("%s%.6g", i > 3 ? " " : "", numberAttribute(group, argv[i]));
        std::printf("\n");
      }
      H5Gclose(group);
      H5Fclose(file);
      return 0;
    }
    H5Gclose(group);
  }
  std::fprintf(stderr, "%s: %s has no test named %s\n", argv[0], argv[1], argv[2]);
  H5Fclose(file);
  return 1;
}
