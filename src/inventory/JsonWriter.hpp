#pragma once
// A small streaming JSON writer (RFC 8259): correct string escaping, invalid
// UTF-8 replaced by U+FFFD, non-finite numbers written as null. Misuse (a value
// without a key inside an object, unbalanced ends) throws std::logic_error.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabscope::inventory {

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(long long number);
  JsonWriter& value(int number) { return value(static_cast<long long>(number)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& nullValue();

  // The document; throws std::logic_error while containers are still open.
  std::string str() const;

 private:
  struct Level {
    bool isObject;
    int items = 0;
  };
  void beforeValue();
  void newline();
  void close(bool isObject);

  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool keyPending_ = false;
  bool rootWritten_ = false;
};

// The quoted, escaped JSON string for `text`.
std::string jsonQuote(std::string_view text);

}  // namespace fabscope::inventory
