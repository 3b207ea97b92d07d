#include "output/Hdf5.hpp"

namespace fabscope::output {

void writeAttribute(hid_t id, const std::string& name, const AttributeValue& value) {
  if (H5Aexists(id, name.c_str()) > 0) checkH5(H5Adelete(id, name.c_str()), "delete attribute " + name);
  H5Space scalar(H5Screate(H5S_SCALAR), "H5Screate");
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    H5Attribute a(H5Acreate2(id, name.c_str(), H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                  "create attribute");
    checkH5(H5Awrite(a.get(), H5T_NATIVE_INT64, i), "write attribute " + name);
  } else if (const auto* d = std::get_if<double>(&value)) {
    H5Attribute a(H5Acreate2(id, name.c_str(), H5T_IEEE_F64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                  "create attribute");
    checkH5(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, d), "write attribute " + name);
  } else {
    const auto& s = std::get<std::string>(value);
    H5Type type(H5Tcopy(H5T_C_S1), "H5Tcopy");
    checkH5(H5Tset_size(type.get(), H5T_VARIABLE), "H5Tset_size");
    checkH5(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset");
    H5Attribute a(H5Acreate2(id, name.c_str(), type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT), "create attribute");
    const char* text = s.c_str();
    checkH5(H5Awrite(a.get(), type.get(), &text), "write attribute " + name);
  }
}

H5Type fixedStringType(std::size_t bytes) {
  H5Type type(H5Tcopy(H5T_C_S1), "H5Tcopy");
  checkH5(H5Tset_size(type.get(), bytes), "H5Tset_size");
  checkH5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return type;
}

void quietHdf5ErrorStack() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

}  // namespace fabscope::output
