#include "inventory/JsonWriter.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace fabscope::inventory {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], 0 if invalid.
std::size_t utf8SequenceLength(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  std::uint32_t codepoint = 0;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    codepoint = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    codepoint = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    codepoint = lead & 0x07;
  } else
    return 0;
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    codepoint = (codepoint << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  static const std::uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (codepoint < minimum[length] || codepoint > 0x10FFFF || (codepoint >= 0xD800 && codepoint <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

std::string jsonQuote(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        quoted += "\\\"";
        ++i;
        continue;
      case '\\':
        quoted += "\\\\";
        ++i;
        continue;
      case '\b':
        quoted += "\\b";
        ++i;
        continue;
      case '\f':
        quoted += "\\f";
        ++i;
        continue;
      case '\n':
        quoted += "\\n";
        ++i;
        continue;
      case '\r':
        quoted += "\\r";
        ++i;
        continue;
      case '\t':
        quoted += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      static const char hex[] = "0123456789abcdef";
      quoted += "\\u00";
      quoted.push_back(hex[c >> 4]);
      quoted.push_back(hex[c & 0xF]);
      ++i;
      continue;
    }
    std::size_t length = utf8SequenceLength(text, i);
    if (length == 0) {
      quoted += "\\ufffd";
      ++i;
      continue;
    }
    quoted.append(text.substr(i, length));
    i += length;
  }
  quoted.push_back('"');
  return quoted;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::beforeValue() {
  if (stack_.empty()) {
    if (rootWritten_) throw std::logic_error("JsonWriter: a second value at the top level");
    rootWritten_ = true;
    return;
  }
  Level& level = stack_.back();
  if (level.isObject) {
    if (!keyPending_) throw std::logic_error("JsonWriter: a value inside an object needs a key first");
    keyPending_ = false;
    return;
  }
  if (level.items++ > 0) out_.push_back(',');
  newline();
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().isObject) throw std::logic_error("JsonWriter: key outside an object");
  if (keyPending_) throw std::logic_error("JsonWriter: two keys without a value");
  if (stack_.back().items++ > 0) out_.push_back(',');
  newline();
  out_ += jsonQuote(name);
  out_ += indent_ > 0 ? ": " : ":";
  keyPending_ = true;
  return *this;
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  out_.push_back('{');
  stack_.push_back({true});
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  out_.push_back('[');
  stack_.push_back({false});
  return *this;
}

void JsonWriter::close(bool isObject) {
  if (stack_.empty() || stack_.back().isObject != isObject)
    throw std::logic_error(isObject ? "JsonWriter: endObject without an open object"
                                    : "JsonWriter: endArray without an open array");
  if (keyPending_) throw std::logic_error("JsonWriter: key without a value");
  const bool hadItems = stack_.back().items > 0;
  stack_.pop_back();
  if (hadItems) newline();
  out_.push_back(isObject ? '}' : ']');
}

JsonWriter& JsonWriter::endObject() {
  close(true);
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  close(false);
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  beforeValue();
  out_ += jsonQuote(text);
  return *this;
}

JsonWriter& JsonWriter::value(long long number) {
  beforeValue();
  out_ += std::to_string(number);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  beforeValue();
  if (!std::isfinite(number)) {
    out_ += "null";
    return *this;
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, number);
  out_.append(buffer, ec == std::errc() ? end : buffer);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  beforeValue();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::nullValue() {
  beforeValue();
  out_ += "null";
  return *this;
}

std::string JsonWriter::str() const {
  if (!stack_.empty()) throw std::logic_error("JsonWriter: document has unclosed containers");
  return out_;
}

}  // namespace fabscope::inventory
