#include "base/json_string.h"

#include <cstdint>
#include <cstdio>

namespace grammask::internal {

std::string json_quote(std::string_view utf8_text) {
  std::string out = "\"";
  for (char c : utf8_text) {
    auto byte = static_cast<uint8_t>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", byte);
          out += buffer;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace grammask::internal
