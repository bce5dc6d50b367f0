#include "schema/json_text.h"

#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schema/refusal.h"

namespace grammask::internal::schema {

namespace {

// Parses JSON text into an ordered_json through nlohmann's SAX interface:
// the same tree as Json::parse, built faster (members are collected and
// moved into each object once, instead of inserted one by one with a
// duplicate search and copies of the keys on growth). A key written twice
// keeps its first position and its last value, as Json::parse does.
// Throws std::invalid_argument with the parser's message on bad JSON.
class TreeBuilder {
 public:
  bool null() { return put(Json(nullptr)); }
  bool boolean(bool value) { return put(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return put(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) { return put(Json(value)); }
  bool number_float(Json::number_float_t value, const std::string&) { return put(Json(value)); }
  bool string(std::string& value) { return put(Json(std::move(value))); }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    frames_.emplace_back();
    frames_.back().object = true;
    return true;
  }
  bool key(std::string& name) {
    frames_.back().keys.push_back(std::move(name));
    return true;
  }
  bool end_object() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    Json object(Json::value_t::object);
    // The vector under the ordered map (its operator[] takes keys).
    Json::object_t::Container& members = object.get_ref<Json::object_t&>();
    members.reserve(frame.keys.size());
    const size_t n = frame.keys.size();
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < n; ++i) {
      // Duplicates are rare: looked for pairwise in small objects.
      size_t existing = SIZE_MAX;
      if (n <= 16) {
        for (size_t j = 0; j < members.size(); ++j)
          if (members[j].first == frame.keys[i]) existing = j;
      } else {
        auto found = seen.find(frame.keys[i]);
        if (found != seen.end()) existing = found->second;
      }
      if (existing != SIZE_MAX) {
        members[existing].second = std::move(frame.values[i]);
        continue;
      }
      members.emplace_back(std::move(frame.keys[i]), std::move(frame.values[i]));
      if (n > 16) seen.emplace(members.back().first, members.size() - 1);
    }
    return put(std::move(object));
  }
  bool start_array(std::size_t) {
    frames_.emplace_back();
    return true;
  }
  bool end_array() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    Json array(Json::value_t::array);
    array.get_ref<Json::array_t&>() = std::move(frame.values);
    return put(std::move(array));
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) {
    error_ = error.what();
    return false;
  }

  static Json parse(std::string_view text) {
    TreeBuilder builder;
    if (!Json::sax_parse(text.begin(), text.end(), &builder) || !builder.done_)
      throw std::invalid_argument(builder.error_.empty() ? "incomplete JSON" : builder.error_);
    return std::move(builder.root_);
  }

 private:
  struct Frame {
    bool object = false;
    std::vector<std::string> keys;
    std::vector<Json> values;
  };
  bool put(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      done_ = true;
    } else {
      frames_.back().values.push_back(std::move(value));
    }
    return true;
  }
  std::vector<Frame> frames_;
  // From nullptr, the noexcept constructor: TreeBuilder() stays noexcept.
  Json root_{nullptr};
  bool done_ = false;
  std::string error_;
};

}  // namespace

Json parse_json(std::string_view text) {
  return TreeBuilder::parse(text);
}

std::optional<std::string> too_deep_at(std::string_view text, uint32_t limit) {
  // Nearly always within the limit: first only the depth, without keys.
  {
    bool in_string = false;
    size_t depth = 0;
    bool over = false;
    for (size_t i = 0; i < text.size() && !over; ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        over = ++depth > limit;
      } else if ((c == '}' || c == ']') && depth > 0) {
        --depth;
      }
    }
    if (!over) return std::nullopt;
  }
  struct Frame {
    bool array;
    size_t index = 0;
    std::string key;
  };
  std::vector<Frame> frames;
  bool in_string = false, expect_key = false;
  std::string string;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        if (i + 1 < text.size()) string.push_back(text[++i]);
      } else if (c == '"') {
        in_string = false;
        if (expect_key && !frames.empty() && !frames.back().array) frames.back().key = string;
        expect_key = false;
      } else {
        string.push_back(c);
      }
    } else if (c == '"') {
      in_string = true;
      string.clear();
    } else if (c == '{' || c == '[') {
      frames.push_back(Frame{c == '[', 0, ""});
      expect_key = c == '{';
      if (frames.size() > limit) {
        std::string pointer;
        for (size_t f = 0; f + 1 < frames.size(); ++f)
          pointer += "/" + (frames[f].array ? std::to_string(frames[f].index)
                                            : escape_pointer_token(frames[f].key));
        return pointer;
      }
    } else if (c == '}' || c == ']') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',' && !frames.empty()) {
      if (frames.back().array)
        ++frames.back().index;
      else
        expect_key = true;
    }
  }
  return std::nullopt;
}

}  // namespace grammask::internal::schema
