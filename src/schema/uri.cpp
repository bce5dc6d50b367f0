#include "schema/uri.h"

#include <cctype>
#include <vector>

namespace grammask::internal::schema {

namespace {

struct UriParts {
  std::string scheme, authority, path, query;
  bool has_authority = false;
};

UriParts split_uri(const std::string& uri) {
  UriParts parts;
  std::string rest = uri;
  size_t hash = rest.find('#');
  if (hash != std::string::npos) rest = rest.substr(0, hash);
  size_t colon = rest.find(':');
  size_t slash = rest.find('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon < slash) && colon > 0) {
    parts.scheme = rest.substr(0, colon);
    rest = rest.substr(colon + 1);
  }
  if (rest.rfind("//", 0) == 0) {
    parts.has_authority = true;
    size_t end = rest.find_first_of("/?", 2);
    parts.authority = rest.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    rest = end == std::string::npos ? "" : rest.substr(end);
  }
  size_t question = rest.find('?');
  if (question != std::string::npos) {
    parts.query = rest.substr(question);
    rest = rest.substr(0, question);
  }
  parts.path = rest;
  return parts;
}

std::string remove_dot_segments(const std::string& path) {
  std::vector<std::string> output;
  bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string> segments;
  std::string current;
  for (char c : path) {
    if (c == '/') {
      segments.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  segments.push_back(current);
  for (size_t k = absolute ? 1 : 0; k < segments.size(); ++k) {
    const std::string& s = segments[k];
    if (s == ".") {
      if (k + 1 == segments.size()) output.push_back("");
    } else if (s == "..") {
      if (!output.empty()) output.pop_back();
      if (k + 1 == segments.size()) output.push_back("");
    } else {
      output.push_back(s);
    }
  }
  std::string result = absolute ? "/" : "";
  for (size_t k = 0; k < output.size(); ++k) result += (k ? "/" : "") + output[k];
  return result;
}

std::string join_uri(const UriParts& parts) {
  std::string out;
  if (!parts.scheme.empty()) out += parts.scheme + ":";
  if (parts.has_authority) out += "//" + parts.authority;
  out += parts.path + parts.query;
  return out;
}

bool has_scheme(const std::string& ref) {
  size_t colon = ref.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = ref[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) ||
              (i > 0 &&
               (std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string resolve_uri(const std::string& base, const std::string& ref) {
  std::string fragment;
  std::string reference = ref;
  size_t hash = reference.find('#');
  if (hash != std::string::npos) {
    fragment = reference.substr(hash);
    reference = reference.substr(0, hash);
  }
  std::string base_no_fragment = base.substr(0, base.find('#'));
  if (reference.empty()) return base_no_fragment + fragment;
  if (has_scheme(reference)) {
    UriParts parts = split_uri(reference);
    if (parts.has_authority || (!parts.path.empty() && parts.path[0] == '/'))
      parts.path = remove_dot_segments(parts.path);
    return join_uri(parts) + fragment;
  }
  UriParts base_parts = split_uri(base_no_fragment);
  UriParts result;
  result.scheme = base_parts.scheme;
  if (reference.rfind("//", 0) == 0) {
    UriParts parts = split_uri(reference);
    parts.scheme = base_parts.scheme;
    parts.path = remove_dot_segments(parts.path);
    return join_uri(parts) + fragment;
  }
  result.has_authority = base_parts.has_authority;
  result.authority = base_parts.authority;
  UriParts ref_parts = split_uri(reference);
  if (!ref_parts.path.empty() && ref_parts.path[0] == '/') {
    result.path = remove_dot_segments(ref_parts.path);
  } else if (ref_parts.path.empty()) {
    result.path = base_parts.path;
  } else {
    std::string merged;
    if (base_parts.has_authority && base_parts.path.empty()) {
      merged = "/" + ref_parts.path;
    } else {
      size_t last = base_parts.path.rfind('/');
      merged =
          (last == std::string::npos ? "" : base_parts.path.substr(0, last + 1)) + ref_parts.path;
    }
    result.path = remove_dot_segments(merged);
  }
  result.query = ref_parts.query;
  return join_uri(result) + fragment;
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace grammask::internal::schema
