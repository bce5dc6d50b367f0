// Structural tag -> Grammar. Each format object becomes an expression of the
// IR; schemas and GBNF grammars are converted on their own and their rules
// imported under a prefix. The unlimited formats (any_text, triggered_tags,
// dispatch and their token-level forms) exclude the end of the nearest
// enclosing `tag` of their level, so that the end delimiter ends them.
#include "grammask/structural_tag.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "regex/char_dfa.h"
#include "regex/code_point_set.h"
#include "regex/ecma_regex.h"
#include "schema/formats.h"
#include "schema/json_text.h"
#include "schema/refusal.h"

namespace grammask {

namespace {

using Json = internal::schema::Json;

// Whether `value` is the string `text`. (Comparing a Json with a string
// literal builds a Json, whose possible throw inside noexcept operators
// would call std::terminate.)
bool is_string_equal(const Json& value, std::string_view text) {
  return value.is_string() && value.get_ref<const std::string&>() == text;
}

// What the nearest enclosing `tag` ends with, at each level.
struct Ends {
  std::vector<std::u32string> strings;  // text ends (all non-empty), or none
  std::vector<Expr> tokens;             // a token end, as a plain token item
};

class TagConverter {
 public:
  TagConverter(const StructuralTagOptions& options, std::vector<std::string>* warnings)
      : options_(options), warnings_(warnings) {}

  Result<Grammar> convert(const Json& document) {
    const Json* format = &document;
    std::string path;
    if (document.is_object() && document.contains("type") &&
        is_string_equal(document["type"], "structural_tag")) {
      auto found = document.find("format");
      if (found == document.end()) return fail_invalid("", "a structural tag needs \"format\"");
      format = &*found;
      path = "/format";
    }
    grammar_.add_rule("root", Expr::sequence({}));
    Result<Expr> root = build(*format, path, Ends{}, 0);
    if (!root.ok()) return root.status();
    grammar_.mutable_rules()[0].body = std::move(root).value();
    if (Status s = grammar_.validate(); !s.ok()) return s;
    return std::move(grammar_);
  }

 private:
  // --- errors ---------------------------------------------------------------

  static Status error(ErrorCode code, const std::string& path, const std::string& what) {
    return Status(code,
                  "structural tag at " + (path.empty() ? std::string("/") : path) + ": " + what);
  }
  static Status fail_invalid(const std::string& path, const std::string& what) {
    return error(ErrorCode::kInvalidArgument, path, what);
  }
  static Status fail_unsupported(const std::string& path, const std::string& what) {
    return error(ErrorCode::kUnsupported, path, what);
  }

  // --- fields ---------------------------------------------------------------

  static Status field(const Json& object, const std::string& path, const char* name,
                      const Json** out) {
    auto found = object.find(name);
    if (found == object.end())
      return fail_invalid(path, std::string("missing field \"") + name + "\"");
    *out = &*found;
    return Status();
  }

  static Status string_field(const Json& object, const std::string& path, const char* name,
                             std::u32string* out) {
    const Json* value = nullptr;
    if (Status s = field(object, path, name, &value); !s.ok()) return s;
    if (!value->is_string())
      return fail_invalid(path + "/" + name, std::string("\"") + name + "\" must be a string");
    utf8::decode_all(value->get_ref<const std::string&>(), out);
    return Status();
  }

  static Status bool_field(const Json& object, const std::string& path, const char* name,
                           bool fallback, bool* out) {
    auto found = object.find(name);
    *out = fallback;
    if (found == object.end()) return Status();
    if (!found->is_boolean())
      return fail_invalid(path + "/" + name, std::string("\"") + name + "\" must be a boolean");
    *out = found->get<bool>();
    return Status();
  }

  // The array field `name` (null when absent and not required), `what` its
  // elements for the error.
  static Status array_field(const Json& object, const std::string& path, const char* name,
                            bool required, const char* what, const Json** out) {
    *out = nullptr;
    auto found = object.find(name);
    if (found == object.end()) {
      if (required) return fail_invalid(path, std::string("missing field \"") + name + "\"");
      return Status();
    }
    if (!found->is_array()) {
      return fail_invalid(path + "/" + name,
                          std::string("\"") + name + "\" must be an array of " + what);
    }
    *out = &*found;
    return Status();
  }

  // A string list (absent: empty); each string non-empty.
  static Status strings_field(const Json& object, const std::string& path, const char* name,
                              bool required, std::vector<std::u32string>* out) {
    out->clear();
    const Json* found = nullptr;
    if (Status s = array_field(object, path, name, required, "strings", &found); !s.ok()) return s;
    if (found == nullptr) return Status();
    const std::string at = path + "/" + name;
    for (size_t i = 0; i < found->size(); ++i) {
      const Json& item = (*found)[i];
      if (!item.is_string() || item.get_ref<const std::string&>().empty()) {
        return fail_invalid(at + "/" + std::to_string(i), "expected a non-empty string");
      }
      std::u32string text;
      utf8::decode_all(item.get_ref<const std::string&>(), &text);
      out->push_back(std::move(text));
    }
    return Status();
  }

  // An optional non-negative integer bound; absent or null: unbounded.
  Status bound_field(const Json& object, const std::string& path, const char* name,
                     uint32_t* out) const {
    *out = kUnbounded;
    auto found = object.find(name);
    if (found == object.end() || found->is_null()) return Status();
    const std::string at = path + "/" + name;
    if (!found->is_number_integer() || found->get<int64_t>() < 0)
      return fail_invalid(at, std::string("\"") + name + "\" must be a non-negative integer");
    if (found->get<int64_t>() > options_.max_repeat) {
      return error(ErrorCode::kLimitExceeded, at,
                   std::to_string(found->get<int64_t>()) + " is above StructuralTagOptions::" +
                       "max_repeat (" + std::to_string(options_.max_repeat) + ")");
    }
    *out = static_cast<uint32_t>(found->get<int64_t>());
    return Status();
  }

  // --- helpers --------------------------------------------------------------

  static Expr text(const std::u32string& s) {
    return s.empty() ? Expr::sequence({}) : Expr::literal_text(s);
  }

  // Free text that contains none of `excluded` (empty strings ignored).
  static Expr free_text(std::vector<std::u32string> excluded) {
    excluded.erase(std::remove(excluded.begin(), excluded.end(), std::u32string()), excluded.end());
    std::sort(excluded.begin(), excluded.end());
    excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
    if (excluded.empty()) return Expr::repeat(Expr::any_char(), 0, kUnbounded);
    return Expr::text_excluding(std::move(excluded));
  }

  // Any run of tokens but `excluded`.
  static Expr free_tokens(std::vector<Expr> excluded) {
    return Expr::repeat(Expr::tokens_except(std::move(excluded)), 0, kUnbounded);
  }

  // One of `options`. Free text and tag lists used twice are copied, not
  // given rules of their own: lowering then keeps them in the caller's
  // automaton, whose states a mask can walk as a plain DFA. What is copied
  // is small; schemas and grammars are rule references.
  static Expr one_of(std::vector<Expr> options) {
    return options.size() == 1 ? std::move(options[0]) : Expr::alternation(std::move(options));
  }

  static void append(std::vector<std::u32string>& to, const std::vector<std::u32string>& from) {
    to.insert(to.end(), from.begin(), from.end());
  }

  // Imports `sub`'s rules under a fresh prefix; returns a reference to its
  // root. A rule whose body equals an imported one's, once both refer to the
  // same rules, is shared: the schemas of many tools use the same string,
  // number and whitespace rules, which then are lowered once.
  Expr import(const Grammar& sub, const std::string& kind, const std::string& root) {
    const std::string prefix = kind + std::to_string(next_name_++) + "-";
    const uint32_t n = static_cast<uint32_t>(sub.rules().size());
    constexpr uint32_t kUnmapped = UINT32_MAX;
    std::vector<uint32_t> mapped(n, kUnmapped);
    // Each rule's references, and who refers to whom, for a bottom-up order.
    std::vector<std::vector<uint32_t>> callers(n);
    std::vector<uint32_t> waiting(n, 0);  // distinct rules referred to, not yet mapped
    auto collect = [&](const Expr& e, std::vector<uint32_t>& out, auto&& self) -> void {
      if (e.kind == Expr::Kind::kRuleRef) out.push_back(e.rule);
      for (const Expr& child : e.children) self(child, out, self);
    };
    std::vector<uint32_t> queue;
    for (uint32_t i = 0; i < n; ++i) {
      std::vector<uint32_t> refs;
      collect(sub.rules()[i].body, refs, collect);
      std::sort(refs.begin(), refs.end());
      refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
      waiting[i] = static_cast<uint32_t>(refs.size());
      for (uint32_t r : refs) callers[r].push_back(i);
      if (refs.empty()) queue.push_back(i);
    }
    auto remap = [&](Expr& e, auto&& self) -> void {
      if (e.kind == Expr::Kind::kRuleRef) e.rule = mapped[e.rule];
      for (Expr& child : e.children) self(child, self);
    };
    // Rules whose references are all mapped, bottom-up, shared when equal.
    for (size_t q = 0; q < queue.size(); ++q) {
      const uint32_t i = queue[q];
      Expr body = sub.rules()[i].body;
      remap(body, remap);
      auto [it, added] = imported_.emplace(to_gbnf(body, grammar_), 0);
      if (added) {
        it->second =
            grammar_.add_rule(prefix + sub.rules()[i].name, std::move(body), sub.rules()[i].where);
      }
      mapped[i] = it->second;
      for (uint32_t caller : callers[i])
        if (--waiting[caller] == 0) queue.push_back(caller);
    }
    // The rest (cycles) are copied as they are.
    std::vector<uint32_t> rest;
    for (uint32_t i = 0; i < n; ++i) {
      if (mapped[i] != kUnmapped) continue;
      mapped[i] =
          grammar_.add_rule(prefix + sub.rules()[i].name, Expr::sequence({}), sub.rules()[i].where);
      rest.push_back(i);
    }
    for (uint32_t i : rest) {
      Expr body = sub.rules()[i].body;
      remap(body, remap);
      grammar_.mutable_rules()[mapped[i]].body = std::move(body);
    }
    return Expr::rule_ref(mapped[static_cast<uint32_t>(sub.find_rule(root))]);
  }

  // A token named by id or by text; `path` locates it.
  Result<Expr> token_item(const Json& value, const std::string& path) {
    const Vocabulary* vocabulary = options_.vocabulary;
    if (value.is_number_integer()) {
      const int64_t id = value.get<int64_t>();
      if (id < 0 || id > int64_t{UINT32_MAX})
        return fail_invalid(path, "token id " + std::to_string(id) + " out of range");
      if (vocabulary != nullptr && static_cast<uint64_t>(id) >= vocabulary->size()) {
        return fail_invalid(path, "token id " + std::to_string(id) +
                                      " out of range (the vocabulary has " +
                                      std::to_string(vocabulary->size()) + " tokens)");
      }
      return Expr::token_id(static_cast<uint32_t>(id));
    }
    if (!value.is_string() || value.get_ref<const std::string&>().empty())
      return fail_invalid(path, "a token is an id or a non-empty token text");
    const std::string& name = value.get_ref<const std::string&>();
    std::u32string code_points;
    utf8::decode_all(name, &code_points);
    const bool writable = name.size() >= 3 && name.front() == '<' && name.back() == '>' &&
                          name.find('>') == name.size() - 1 && name[1] != '[' &&
                          name.find('\n') == std::string::npos &&
                          name.find('\r') == std::string::npos;
    if (vocabulary == nullptr) {
      if (writable) return Expr::token_text(std::move(code_points));
      return fail_invalid(
          path, "token \"" + name + "\" is not of the form <...>: resolving it needs a vocabulary");
    }
    if (ids_by_text_.empty()) {  // built once per conversion, on the first name
      for (uint32_t id = 0; id < vocabulary->size(); ++id) {
        if (vocabulary->kind(id) != TokenKind::kUnused && !vocabulary->token_bytes(id).empty())
          ids_by_text_[vocabulary->token_bytes(id)].push_back(id);
      }
    }
    auto found = ids_by_text_.find(name);
    if (found == ids_by_text_.end())
      return fail_invalid(path, "no token of the vocabulary is \"" + name + "\"");
    std::vector<Expr> ids;
    for (uint32_t id : found->second) ids.push_back(Expr::token_id(id));
    if (writable) return Expr::token_text(std::move(code_points));
    if (ids.size() == 1) return std::move(ids[0]);
    return Expr::alternation(std::move(ids));
  }

  // Token items for a list of ids/names (a set's members are plain items).
  Status token_list(const Json& object, const std::string& path, const char* name, bool required,
                    std::vector<Expr>* out) {
    out->clear();
    const Json* found = nullptr;
    if (Status s = array_field(object, path, name, required, "tokens", &found); !s.ok()) return s;
    if (found == nullptr) return Status();
    const std::string at = path + "/" + name;
    for (size_t i = 0; i < found->size(); ++i) {
      Result<Expr> item = token_item((*found)[i], at + "/" + std::to_string(i));
      if (!item.ok()) return item.status();
      append_token(std::move(item).value(), out);
    }
    return Status();
  }

  // Adds a token item (or the ids of an alternation of them) to a set.
  static void append_token(Expr item, std::vector<Expr>* out) {
    if (item.kind == Expr::Kind::kAlternation) {
      for (Expr& child : item.children) out->push_back(std::move(child));
    } else {
      out->push_back(std::move(item));
    }
  }

  // --- formats --------------------------------------------------------------

  Result<Expr> build(const Json& format, const std::string& path, const Ends& ends,
                     uint32_t depth) {
    if (depth >= options_.max_depth) {
      return error(ErrorCode::kLimitExceeded, path,
                   "format objects nested deeper than StructuralTagOptions::max_depth (" +
                       std::to_string(options_.max_depth) + ")");
    }
    if (!format.is_object()) return fail_invalid(path, "a format must be a JSON object");
    auto type_it = format.find("type");
    if (type_it == format.end() || !type_it->is_string())
      return fail_invalid(path, "a format needs a string \"type\"");
    const std::string& type = type_it->get_ref<const std::string&>();
    if (type == "const_string") return const_string(format, path);
    if (type == "json_schema") return json_schema(format, path, ends);
    if (type == "grammar") return gbnf_grammar(format, path);
    if (type == "regex") return regex(format, path);
    if (type == "any_text") return any_text(format, path, ends);
    if (type == "sequence" || type == "or") return elements(format, path, ends, depth, type);
    if (type == "optional" || type == "plus" || type == "star" || type == "repeat")
      return repetition(format, path, ends, depth, type);
    if (type == "tag") return tag(format, path, depth);
    if (type == "triggered_tags") return triggered_tags(format, path, ends, depth);
    if (type == "tags_with_separator") return tags_with_separator(format, path, depth);
    if (type == "dispatch") return dispatch(format, path, ends, depth);
    if (type == "token") {
      const Json* token = nullptr;
      if (Status s = field(format, path, "token", &token); !s.ok()) return s;
      return token_item(*token, path + "/token");
    }
    if (type == "exclude_token" || type == "any_tokens") return token_run(format, path, ends, type);
    if (type == "token_triggered_tags") return token_triggered_tags(format, path, ends, depth);
    if (type == "token_dispatch") return token_dispatch(format, path, ends, depth);
    if (type == "structural_tag") return fail_invalid(path, "\"structural_tag\" only at the top");
    return fail_invalid(path + "/type", "unknown format type \"" + type + "\"");
  }

  Result<Expr> const_string(const Json& format, const std::string& path) {
    std::u32string value;
    if (Status s = string_field(format, path, "value", &value); !s.ok()) return s;
    return text(value);
  }

  Result<Expr> json_schema(const Json& format, const std::string& path, const Ends& ends) {
    const Json* schema = nullptr;
    if (Status s = field(format, path, "json_schema", &schema); !s.ok()) return s;
    if (!schema->is_object() && !schema->is_boolean())
      return fail_invalid(path + "/json_schema", "\"json_schema\" must be an object or a boolean");
    auto style = format.find("style");
    if (style != format.end()) {
      if (!style->is_string()) return fail_invalid(path + "/style", "\"style\" must be a string");
      for (const XmlStyle& xml_style : xml_styles()) {
        if (is_string_equal(*style, xml_style.name))
          return xml_arguments(xml_style, format, path, *schema, ends);
      }
      if (!is_string_equal(*style, "json")) {
        return fail_unsupported(path + "/style",
                                "style \"" + style->get<std::string>() +
                                    "\" is not supported (only \"json\", \"qwen_xml\", "
                                    "\"minimax_xml\", \"deepseek_xml\" and \"glm_xml\")");
      }
    }
    JsonSchemaOptions schema_options = options_.json_schema;
    bool any_order = false;
    if (Status s = bool_field(format, path, "any_order", false, &any_order); !s.ok()) return s;
    if (any_order) schema_options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
    return convert_schema(*schema, path + "/json_schema", schema_options);
  }

  // The converter's grammar of `schema`, imported; errors and warnings are
  // prefixed by `at`.
  Result<Expr> convert_schema(const Json& schema, const std::string& at,
                              const JsonSchemaOptions& schema_options) {
    std::vector<std::string> schema_warnings;
    Result<Grammar> sub = json_schema_to_grammar(schema.dump(), schema_options, &schema_warnings);
    if (warnings_ != nullptr) {
      for (const std::string& warning : schema_warnings)
        warnings_->push_back("structural tag at " + at + ": " + warning);
    }
    if (!sub.ok()) {
      return Status(sub.status().code(), "structural tag at " + at + ": " + sub.status().message());
    }
    return import(*sub, "schema", "root");
  }

  // --- XML argument styles ---------------------------------------------------
  //
  // How a model's chat template writes a tool's arguments, one parameter
  // after another: `before_name` NAME `raw_open` VALUE `close` where VALUE
  // is raw text (a string), `json_open` instead where it is JSON text (the
  // two differ only in DeepSeek's string attribute). docs/tool-calling.md
  // cites each template.
  struct XmlStyle {
    const char* name;
    std::u32string before_name;
    std::u32string raw_open;
    std::u32string json_open;
    std::u32string close;
    std::u32string separator;   // between two parameters
    std::u32string terminator;  // after every parameter
    std::u32string when_empty;  // the whole text when no parameter is written
    char name_excludes;         // a character no parameter name may hold
    // Where the model's parser ends a raw value; the enclosing tag's ends
    // are added.
    std::vector<std::u32string> value_stops;
  };

  static const std::vector<XmlStyle>& xml_styles() {
    static const std::vector<XmlStyle> kStyles = {
        // Qwen3-Coder: parameters joined by "\n" (its template writes each one
        // followed by "\n"; XGrammar's tags end with "\n</function>", which
        // supplies the last); qwen3coder_tool_parser.py ends a value at
        // `</parameter>`, or before `<parameter=` or `</function>`.
        {"qwen_xml",
         U"<parameter=",
         U">\n",
         U">\n",
         U"\n</parameter>",
         U"\n",
         U"",
         U"",
         '>',
         {U"</parameter>", U"<parameter=", U"</function>"}},
        // MiniMax-M2: every parameter followed by "\n".
        {"minimax_xml",
         U"<parameter name=\"",
         U"\">",
         U"\">",
         U"</parameter>",
         U"",
         U"\n",
         U"",
         '"',
         {U"</parameter>", U"<parameter name=", U"</invoke>"}},
        // DeepSeek-V3.2: parameters joined by "\n" between the invoke's
        // "\n"s, which makes every one followed by "\n" after the tag's
        // begin; no parameter leaves the blank line.
        {"deepseek_xml",
         U"<\uFF5CDSML\uFF5Cparameter name=\"",
         U"\" string=\"true\">",
         U"\" string=\"false\">",
         U"</\uFF5CDSML\uFF5Cparameter>",
         U"",
         U"\n",
         U"\n",
         '"',
         {U"</\uFF5CDSML\uFF5Cparameter>", U"<\uFF5CDSML\uFF5Cparameter",
          U"</\uFF5CDSML\uFF5Cinvoke>"}},
        // GLM-4.7 and GLM-5: key and value tags with nothing between.
        {"glm_xml",
         U"<arg_key>",
         U"</arg_key><arg_value>",
         U"</arg_key><arg_value>",
         U"</arg_value>",
         U"",
         U"",
         U"",
         '<',
         {U"</arg_value>", U"<arg_key>", U"</tool_call>"}},
    };
    return kStyles;
  }

  // The style's value stops and the enclosing tag's ends.
  static std::vector<std::u32string> xml_value_stops(const XmlStyle& style, const Ends& ends) {
    std::vector<std::u32string> stops = style.value_stops;
    append(stops, ends.strings);
    std::sort(stops.begin(), stops.end());
    stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
    // A stop that contains another one excludes nothing more.
    std::vector<std::u32string> kept;
    for (const std::u32string& stop : stops) {
      const bool covered = std::any_of(stops.begin(), stops.end(), [&](const std::u32string& o) {
        return o.size() < stop.size() && stop.find(o) != std::u32string::npos;
      });
      if (!covered) kept.push_back(stop);
    }
    return kept;
  }

  // `item` after the style's separator.
  static Expr separated(const XmlStyle& style, const Expr& item) {
    if (style.separator.empty()) return item;
    return Expr::sequence({Expr::literal_text(style.separator), item});
  }

  // The definition that `schema` only refers to (pydantic's enums and
  // models: `$ref` into the root's $defs or definitions, with annotations
  // at most), followed up to `depth_left` times; else `schema` itself.
  static const Json& referred_definition(const Json& schema, const Json& root,
                                         int depth_left = 32) {
    const Json* node = &schema;
    for (; depth_left > 0; --depth_left) {
      if (!node->is_object() || !node->contains("$ref")) break;
      const Json& ref = (*node)["$ref"];
      if (!ref.is_string() || !std::all_of(node->items().begin(), node->items().end(), [](auto kv) {
            return kv.key() == "$ref" || is_annotation(kv.key());
          }))
        break;
      const std::string& target = ref.get_ref<const std::string&>();
      if (target.rfind("#/$defs/", 0) != 0 && target.rfind("#/definitions/", 0) != 0) break;
      try {
        const Json::json_pointer pointer(target.substr(1));
        if (!root.contains(pointer)) break;
        node = &root.at(pointer);
      } catch (const std::exception&) {
        break;
      }
    }
    return *node;
  }

  // Whether `schema` admits strings only: `"type": "string"`, or no type
  // and an enum or const of strings.
  static bool is_string_schema(const Json& schema) {
    if (!schema.is_object()) return false;
    auto type = schema.find("type");
    if (type != schema.end()) return is_string_equal(*type, "string");
    auto values = schema.find("enum");
    auto constant = schema.find("const");
    return (values != schema.end() && values->is_array() && !values->empty() &&
            std::all_of(values->begin(), values->end(),
                        [](const Json& v) { return v.is_string(); })) ||
           (constant != schema.end() && constant->is_string());
  }

  static bool is_annotation(const std::string& key) {
    static const char* const kAnnotations[] = {"title",    "description", "default",  "examples",
                                               "$comment", "deprecated",  "readOnly", "writeOnly",
                                               "$schema",  "$id"};
    return std::any_of(std::begin(kAnnotations), std::end(kAnnotations),
                       [&](const char* a) { return key == a; });
  }

  // Whether a value of `schema` may be a JSON string: false only when it
  // surely cannot (its types, enum or const, or every branch of anyOf or
  // oneOf, exclude strings; or one allOf branch does). Local references
  // are followed. `budget` bounds the schemas visited (references can make
  // the walk exponential); past it, the answer is "may".
  static bool may_be_string(const Json& schema, const Json& root, int depth, int& budget) {
    if (depth > 32 || --budget < 0) return true;
    if (schema.is_boolean()) return schema.get<bool>();
    if (!schema.is_object()) return true;
    auto type = schema.find("type");
    if (type != schema.end()) {
      if (type->is_string() && !is_string_equal(*type, "string")) return false;
      if (type->is_array() && std::none_of(type->begin(), type->end(), [](const Json& t) {
            return is_string_equal(t, "string");
          })) {
        return false;
      }
    }
    auto values = schema.find("enum");
    if (values != schema.end() && values->is_array() &&
        std::none_of(values->begin(), values->end(), [](const Json& v) { return v.is_string(); })) {
      return false;
    }
    auto constant = schema.find("const");
    if (constant != schema.end() && !constant->is_string()) return false;
    for (const char* key : {"anyOf", "oneOf"}) {
      auto branches = schema.find(key);
      if (branches != schema.end() && branches->is_array() && !branches->empty() &&
          std::none_of(branches->begin(), branches->end(),
                       [&](const Json& b) { return may_be_string(b, root, depth + 1, budget); })) {
        return false;
      }
    }
    auto all = schema.find("allOf");
    if (all != schema.end() && all->is_array() &&
        std::any_of(all->begin(), all->end(),
                    [&](const Json& b) { return !may_be_string(b, root, depth + 1, budget); })) {
      return false;
    }
    auto ref = schema.find("$ref");
    if (ref != schema.end() && ref->is_string()) {
      const std::string& target = ref->get_ref<const std::string&>();
      if (target.empty() || target[0] != '#') return true;
      try {
        const Json::json_pointer pointer(target.substr(1));
        if (!root.contains(pointer)) return true;
        return may_be_string(root.at(pointer), root, depth + 1, budget);
      } catch (const std::exception&) {
        return true;
      }
    }
    return true;
  }

  // Whether every $ref, $dynamicRef and $recursiveRef in `value` leads into
  // the root's $defs or definitions.
  static bool references_stay_in_definitions(const Json& value) {
    if (value.is_array()) {
      return std::all_of(value.begin(), value.end(),
                         [](const Json& item) { return references_stay_in_definitions(item); });
    }
    if (!value.is_object()) return true;
    for (const auto& kv : value.items()) {
      if (kv.key() == "$ref" || kv.key() == "$dynamicRef" || kv.key() == "$recursiveRef") {
        if (!kv.value().is_string()) return false;
        const std::string& target = kv.value().get_ref<const std::string&>();
        if (target.rfind("#/$defs/", 0) != 0 && target.rfind("#/definitions/", 0) != 0)
          return false;
      }
      if (!references_stay_in_definitions(kv.value())) return false;
    }
    return true;
  }

  // A grammar of the strings a code-point DFA accepts: one rule per state.
  Expr dfa_expr(const internal::CharDfa& dfa, const std::string& name) {
    const auto first = static_cast<uint32_t>(grammar_.rules().size());
    for (size_t i = 0; i < dfa.states.size(); ++i)
      grammar_.add_rule(name + "-" + std::to_string(i), Expr::sequence({}));
    for (size_t i = 0; i < dfa.states.size(); ++i) {
      std::vector<Expr> options;
      for (const internal::CharDfa::Edge& edge : dfa.states[i].edges) {
        options.push_back(Expr::sequence(
            {Expr::char_class(edge.chars, false), Expr::rule_ref(first + edge.target)}));
      }
      if (dfa.states[i].label != 0) options.push_back(Expr::sequence({}));
      grammar_.mutable_rules()[first + i].body = one_of(std::move(options));
    }
    return Expr::rule_ref(first);
  }

  static std::string regex_literal(const std::u32string& text) {
    std::string out;
    for (char32_t c : text) {
      if (c < 0x80 && std::string_view("^$\\.*+?()[]{}|/").find(static_cast<char>(c)) !=
                          std::string_view::npos) {
        out += '\\';
      }
      utf8::append(out, static_cast<uint32_t>(c));
    }
    return out;
  }

  // The raw text of a string value: none of `stops`, and the string
  // keywords of `schema` (pattern, minLength, maxLength, enum, const,
  // format), checked on the raw text. Other keywords are refused.
  Result<Expr> raw_string(const XmlStyle& style, const Json& schema, const std::string& at,
                          const std::vector<std::u32string>& stops) {
    using internal::CharDfa;
    const bool constrained = schema.is_object() &&
                             std::any_of(schema.items().begin(), schema.items().end(), [](auto kv) {
                               return kv.key() == "pattern" || kv.key() == "minLength" ||
                                      kv.key() == "maxLength" || kv.key() == "enum" ||
                                      kv.key() == "const" || kv.key() == "format";
                             });
    if (schema.is_object()) {
      for (const auto& kv : schema.items()) {
        const std::string& key = kv.key();
        if (is_annotation(key) || key == "type" || key == "pattern" || key == "minLength" ||
            key == "maxLength" || key == "enum" || key == "const" || key == "format") {
          continue;
        }
        return fail_unsupported(at + "/" + internal::schema::escape_pointer_token(key),
                                "keyword \"" + key +
                                    "\" is not supported on a raw string value "
                                    "of style \"" +
                                    style.name + "\"");
      }
    }
    if (!constrained) return free_text(stops);
    std::string alternatives;
    for (const std::u32string& stop : stops) {
      if (!alternatives.empty()) alternatives += '|';
      alternatives += regex_literal(stop);
    }
    Result<internal::RegexNode> stop_regex = internal::parse_ecma_regex(alternatives);
    if (!stop_regex.ok()) return Status(stop_regex.status().code(), stop_regex.status().message());
    Result<CharDfa> contains_stop = internal::dfa_from_regex(*stop_regex);
    if (!contains_stop.ok())
      return error(contains_stop.status().code(), at, contains_stop.status().message());
    CharDfa dfa = internal::dfa_minimize(internal::dfa_complement(*contains_stop),
                                         [](uint32_t label) { return label != 0; });
    // A length bound multiplies the states by the bound, as for the JSON
    // Schema converter's string automata.
    constexpr size_t kLengthStates = size_t{1} << 15;
    auto narrow = [&](const std::string& keyword, Result<CharDfa> other,
                      size_t budget = internal::kDefaultDfaStates) -> Status {
      if (!other.ok()) {
        return error(other.status().code(), at + "/" + keyword, other.status().message());
      }
      Result<CharDfa> both = internal::dfa_intersection(dfa, *other, budget);
      if (!both.ok()) {
        return error(both.status().code(), at + "/" + keyword,
                     both.status().message() +
                         " (the raw text with the parameter delimiters "
                         "excluded)");
      }
      dfa = std::move(both).value();
      return Status();
    };
    auto pattern_dfa = [&](const std::string& text, bool whole) -> Result<CharDfa> {
      Result<internal::RegexNode> parsed = internal::parse_ecma_regex(text);
      if (!parsed.ok()) return parsed.status();
      if (whole) return internal::dfa_from_whole_regex(*parsed, internal::kDefaultDfaStates);
      return internal::dfa_from_regex(*parsed);
    };
    auto pattern = schema.find("pattern");
    if (pattern != schema.end()) {
      if (!pattern->is_string())
        return fail_invalid(at + "/pattern", "\"pattern\" must be a string");
      if (Status s = narrow("pattern", pattern_dfa(pattern->get<std::string>(), false)); !s.ok())
        return s;
    }
    auto format_it = schema.find("format");
    if (format_it != schema.end() && options_.json_schema.assert_formats) {
      if (!format_it->is_string())
        return fail_invalid(at + "/format", "\"format\" must be a string");
      const std::string name = format_it->get<std::string>();
      internal::FormatLookup lookup = internal::format_pattern(name);
      if (!lookup.known || !lookup.supported) {
        return fail_unsupported(at + "/format",
                                "format \"" + name + "\" cannot be enforced exactly");
      }
      if (!lookup.narrowed.empty() && warnings_ != nullptr) {
        warnings_->push_back("structural tag at " + at + "/format: format \"" + name +
                             "\" accepts only " + lookup.narrowed);
      }
      if (Status s = narrow("format", pattern_dfa(lookup.pattern, true)); !s.ok()) return s;
    }
    for (const char* keyword : {"enum", "const"}) {
      auto found = schema.find(keyword);
      if (found == schema.end()) continue;
      std::vector<std::string> words;
      const bool list = keyword[0] == 'e';
      if (list && !found->is_array())
        return fail_invalid(at + "/enum", "\"enum\" must be an array");
      for (const Json& value : list ? *found : Json::array({*found})) {
        if (!value.is_string()) {
          return fail_unsupported(at + "/" + keyword, std::string("the values of \"") + keyword +
                                                          "\" on a raw string must be strings");
        }
        words.push_back(value.get<std::string>());
      }
      if (Status s = narrow(keyword, internal::dfa_words(words)); !s.ok()) return s;
    }
    uint64_t min_length = 0;
    std::optional<uint64_t> max_length;
    for (const char* keyword : {"minLength", "maxLength"}) {
      auto found = schema.find(keyword);
      if (found == schema.end()) continue;
      if (!found->is_number_integer() || found->get<int64_t>() < 0) {
        return fail_invalid(at + "/" + keyword,
                            std::string("\"") + keyword + "\" must be a non-negative integer");
      }
      (keyword[1] == 'i' ? min_length : max_length.emplace()) = found->get<uint64_t>();
    }
    if (max_length &&
        static_cast<double>(dfa.states.size()) * static_cast<double>(*max_length + 1) >
            static_cast<double>(kLengthStates)) {
      return fail_unsupported(at + "/maxLength",
                              "the raw text's " + std::to_string(dfa.states.size()) +
                                  " automaton states times the length bound are more than " +
                                  std::to_string(kLengthStates));
    }
    if (min_length > 0 || max_length) {
      if (Status s =
              narrow(max_length ? "maxLength" : "minLength",
                     internal::dfa_length(min_length, max_length, kLengthStates), kLengthStates);
          !s.ok())
        return s;
    }
    // About how many byte-automaton states lowering makes of the automaton
    // (each code-point range becomes UTF-8 byte sequences); past the JSON
    // Schema converter's bound for its string automata, refused.
    constexpr size_t kMaxLoweredCost = 300000;
    size_t cost = 0;
    for (const CharDfa::State& state : dfa.states) {
      cost += 1;
      for (const CharDfa::Edge& edge : state.edges) {
        for (const CodePointRange& range : edge.chars) {
          cost += 1;
          if (range.last >= 0x80) cost += 2;
          if (range.last >= 0x800) cost += 3;
          if (range.last >= 0x10000) cost += 4;
        }
      }
    }
    if (cost > kMaxLoweredCost) {
      const char* keyword = schema.contains("maxLength") ? "maxLength" : "pattern";
      return fail_unsupported(at + "/" + keyword,
                              "the raw text's automaton (" + std::to_string(dfa.states.size()) +
                                  " states) would lower past " + std::to_string(kMaxLoweredCost) +
                                  " byte states");
    }
    if (dfa.states.empty() || (dfa.states[0].label == 0 && dfa.states[0].edges.empty())) {
      return fail_invalid(at,
                          "no raw text satisfies the string keywords (values may not contain "
                          "the parameter delimiters)");
    }
    // One rule per state: all raw-text automata together stay within the
    // converter's bound on rules.
    raw_text_states_ += dfa.states.size();
    if (raw_text_states_ > options_.json_schema.max_rules) {
      return error(ErrorCode::kLimitExceeded, at,
                   std::string("the raw-text automata of style \"") + style.name +
                       "\" need more than "
                       "JsonSchemaOptions::max_rules (" +
                       std::to_string(options_.json_schema.max_rules) + ") rules");
    }
    return dfa_expr(dfa, "xml" + std::to_string(next_name_++) + "-str");
  }

  // One parameter's value: raw text for a string schema (or one that
  // accepts anything), JSON text where no value can be a string. `raw`
  // says which.
  Result<Expr> xml_value(const XmlStyle& style, const Json& written, const Json& root,
                         const std::string& at, const std::vector<std::u32string>& stops, bool* raw,
                         std::optional<Expr>* json_too) {
    *raw = true;
    const Json& schema = referred_definition(written, root);
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return free_text(stops);
      return fail_unsupported(at, "a parameter whose schema is false cannot be written");
    }
    if (!schema.is_object()) return fail_invalid(at, "a schema must be an object or a boolean");
    const bool annotations_only = std::all_of(schema.items().begin(), schema.items().end(),
                                              [](auto kv) { return is_annotation(kv.key()); });
    if (annotations_only) return free_text(stops);
    if (is_string_schema(schema)) return raw_string(style, schema, at, stops);
    int budget = 10000;
    std::vector<Json> string_parts;
    if (may_be_string(schema, root, 0, budget)) {
      // A style that marks raw strings (DeepSeek's string="true") reads
      // such a value either way: a string raw where its schema's string
      // part can be told apart, any valid value as JSON text.
      const bool marked = style.raw_open != style.json_open;
      if (!marked || json_too == nullptr || !string_part(schema, root, string_parts)) {
        return fail_unsupported(at, std::string("a value that may be a string or another type is "
                                                "ambiguous in style \"") +
                                        style.name +
                                        "\" (a string is raw text, other values JSON text)");
      }
    }
    // Converted on its own with the root's definitions: references then
    // mean what they mean in the tool's schema only where they lead into
    // those definitions.
    for (const char* key : {"$defs", "definitions", "$id"}) {
      if (schema.contains(key)) {
        return fail_unsupported(at + "/" + key,
                                std::string("\"") + key +
                                    "\" on a parameter's schema is not supported with style \"" +
                                    style.name + "\"");
      }
    }
    Json document = schema;
    for (const char* key : {"$defs", "definitions", "$schema"}) {
      if (root.contains(key)) document[key] = root[key];
    }
    if (!references_stay_in_definitions(document)) {
      return fail_unsupported(at,
                              "a reference other than \"#/$defs/...\" or "
                              "\"#/definitions/...\" is not supported in a parameter's "
                              "schema with style \"" +
                                  std::string(style.name) + "\"");
    }
    JsonSchemaOptions schema_options = options_.json_schema;
    schema_options.property_order = JsonSchemaOptions::PropertyOrder::kSchema;
    Result<Expr> json = convert_schema(document, at, schema_options);
    if (!json.ok() || string_parts.empty()) {
      *raw = false;
      return json;
    }
    std::vector<Expr> raw_texts;
    for (const Json& part : string_parts) {
      Result<Expr> text = raw_string(style, part, at, stops);
      if (!text.ok()) return text;
      raw_texts.push_back(std::move(text).value());
    }
    *json_too = std::move(json).value();
    return one_of(std::move(raw_texts));
  }

  // The string-only schemas whose union is what `schema` accepts of
  // strings, for a schema that may be a string or another type: a `type`
  // list with "string" (its string keywords kept), or an anyOf (a oneOf:
  // one such branch) whose branches that may be strings are string
  // schemas. False where that cannot be told.
  static bool string_part(const Json& schema, const Json& root, std::vector<Json>& parts) {
    static const char* const kStringKeys[] = {"pattern", "minLength", "maxLength", "format"};
    static const char* const kOtherTypeKeys[] = {"minimum",
                                                 "maximum",
                                                 "exclusiveMinimum",
                                                 "exclusiveMaximum",
                                                 "multipleOf",
                                                 "items",
                                                 "minItems",
                                                 "maxItems",
                                                 "properties",
                                                 "required",
                                                 "additionalProperties",
                                                 "minProperties",
                                                 "maxProperties",
                                                 "prefixItems"};
    auto listed = [](const auto& list, const std::string& key) {
      return std::any_of(std::begin(list), std::end(list), [&](const char* k) { return key == k; });
    };
    if (!schema.is_object()) return false;
    auto type = schema.find("type");
    const char* combinator = schema.contains("anyOf") ? "anyOf" : "oneOf";
    if (type != schema.end() && type->is_array() && !schema.contains("anyOf") &&
        !schema.contains("oneOf")) {
      Json part = Json::object();
      part["type"] = "string";
      for (const auto& kv : schema.items()) {
        const std::string& key = kv.key();
        if (key == "type" || is_annotation(key) || listed(kOtherTypeKeys, key)) continue;
        if (listed(kStringKeys, key)) {
          part[key] = kv.value();
        } else if (key == "enum" && kv.value().is_array()) {
          Json strings = Json::array();
          for (const Json& v : kv.value())
            if (v.is_string()) strings.push_back(v);
          part["enum"] = strings;
        } else if (key == "const" && kv.value().is_string()) {
          part["const"] = kv.value();
        } else {
          return false;
        }
      }
      parts.push_back(std::move(part));
      return true;
    }
    auto branches = schema.find(combinator);
    if (branches == schema.end() || !branches->is_array() || type != schema.end()) return false;
    for (const auto& kv : schema.items())
      if (kv.key() != combinator && !is_annotation(kv.key())) return false;
    for (const Json& branch : *branches) {
      const Json& resolved = referred_definition(branch, root);
      int budget = 10000;
      if (!may_be_string(resolved, root, 0, budget)) continue;
      if (!is_string_schema(resolved)) return false;
      parts.push_back(resolved);
    }
    return !parts.empty() && (combinator[0] == 'a' || parts.size() == 1);
  }

  // Parameters in any order, exactly: one AnyOrder(...) call
  // (JsonSchemaOptions::any_order_calls) where it can say the same; else
  // spelled out, one rule per set of declared parameters written, each of
  // them at most once, the needed ones before the end, undeclared ones
  // (`extra`) anywhere; none when that passes any_order_max_alternatives
  // (k * 2^(k-1) alternatives for k parameters, 2^k more with undeclared
  // ones).
  std::optional<Expr> xml_any_order(const std::vector<Expr>& items, const std::vector<bool>& needed,
                                    const std::optional<Expr>& extra, const XmlStyle& style,
                                    bool nonempty, const std::string& prefix) {
    const size_t n = items.size();
    const double alternatives = static_cast<double>(n) * std::ldexp(1.0, static_cast<int>(n) - 1) +
                                (extra ? std::ldexp(1.0, static_cast<int>(n)) : 0.0);
    // (The call matches no parameter at all when none is needed.)
    const bool some_needed = std::find(needed.begin(), needed.end(), true) != needed.end();
    const bool call = options_.json_schema.any_order_calls && n + (extra ? 1 : 0) >= 2 &&
                      n <= kMaxAnyOrderMembers && (!nonempty || some_needed);
    if (call) {
      std::vector<Expr> members;
      for (size_t i = 0; i < n; ++i)
        members.push_back(needed[i] ? items[i] : Expr::repeat(items[i], 0, 1));
      if (extra) members.push_back(Expr::repeat(*extra, 0, kUnbounded));
      Expr separator =
          style.separator.empty() ? Expr::sequence({}) : Expr::literal_text(style.separator);
      return Expr::any_order(std::move(separator), std::move(members));
    }
    if (n > 24 || alternatives > options_.json_schema.any_order_max_alternatives)
      return std::nullopt;
    uint32_t needed_set = 0;
    for (size_t i = 0; i < n; ++i)
      if (needed[i]) needed_set |= uint32_t{1} << i;
    const auto base = static_cast<uint32_t>(grammar_.rules().size());
    const uint32_t sets = uint32_t{1} << n;
    for (uint32_t set = 0; set < sets; ++set)
      grammar_.add_rule(prefix + "any-" + std::to_string(set), Expr::sequence({}));
    const auto start = static_cast<uint32_t>(grammar_.rules().size());
    grammar_.add_rule(prefix + "any-start", Expr::sequence({}));
    // After `set` was written (`started`: something was, so a separator
    // comes before the next parameter).
    auto body = [&](uint32_t set, bool started) {
      auto next = [&](const Expr& item) { return started ? separated(style, item) : item; };
      std::vector<Expr> options;
      if ((set & needed_set) == needed_set && (started || !nonempty))
        options.push_back(Expr::sequence({}));
      for (size_t i = 0; i < n; ++i) {
        const uint32_t bit = uint32_t{1} << i;
        if ((set & bit) == 0)
          options.push_back(Expr::sequence({next(items[i]), Expr::rule_ref(base + (set | bit))}));
      }
      if (extra) options.push_back(Expr::sequence({next(*extra), Expr::rule_ref(base + set)}));
      return one_of(std::move(options));
    };
    for (uint32_t set = 0; set < sets; ++set)
      grammar_.mutable_rules()[base + set].body = body(set, true);
    grammar_.mutable_rules()[start].body = body(0, false);
    return Expr::rule_ref(start);
  }

  // The arguments of `schema` as `style` writes them: declared properties
  // in schema order (any order with the format's `any_order`, up to the
  // converter's bound), each at most once, required ones present,
  // undeclared ones (where allowed) anywhere among them.
  Result<Expr> xml_arguments(const XmlStyle& style, const Json& format, const std::string& path,
                             const Json& schema, const Ends& ends) {
    const std::string at = path + "/json_schema";
    const std::string quoted = std::string("\"") + style.name + "\"";
    bool any_order = false;
    if (Status s = bool_field(format, path, "any_order", false, &any_order); !s.ok()) return s;
    if (!schema.is_object()) {
      return fail_unsupported(at,
                              "style " + quoted + " needs an object schema with \"properties\"");
    }
    const Json* properties = nullptr;
    const Json* required = nullptr;
    bool additional = options_.json_schema.additional_properties_default;
    bool nonempty = false;  // minProperties 1
    for (const auto& kv : schema.items()) {
      const std::string& key = kv.key();
      const std::string key_at = at + "/" + internal::schema::escape_pointer_token(key);
      if (key == "type") {
        if (!is_string_equal(kv.value(), "object"))
          return fail_unsupported(key_at, "style " + quoted + " needs \"type\": \"object\"");
      } else if (key == "properties") {
        if (!kv.value().is_object())
          return fail_invalid(key_at, "\"properties\" must be an object");
        properties = &kv.value();
      } else if (key == "required") {
        if (!kv.value().is_array())
          return fail_invalid(key_at, "\"required\" must be an array of strings");
        required = &kv.value();
      } else if (key == "additionalProperties") {
        const Json& value = kv.value();
        const bool anything =
            value.is_object() && std::all_of(value.items().begin(), value.items().end(),
                                             [](auto item) { return is_annotation(item.key()); });
        if (value.is_boolean()) {
          additional = value.get<bool>();
        } else if (anything) {
          additional = true;
        } else {
          return fail_unsupported(key_at,
                                  "an additionalProperties schema is not supported with "
                                  "style " +
                                      quoted + " (only true or false)");
        }
      } else if (key == "minProperties") {
        // 0 or 1: "at least one parameter" is the choice of the first one.
        const Json& value = kv.value();
        if (!value.is_number_integer() || value.get<int64_t>() < 0)
          return fail_invalid(key_at, "\"minProperties\" must be a non-negative integer");
        if (value.get<int64_t>() > 1) {
          return fail_unsupported(key_at,
                                  "minProperties above 1 is not supported with style " + quoted);
        }
        nonempty = value.get<int64_t>() == 1;
      } else if (!is_annotation(key) && key != "$defs" && key != "definitions") {
        return fail_unsupported(key_at,
                                "keyword \"" + key + "\" is not supported with style " + quoted);
      }
    }
    std::vector<std::string> names;
    std::vector<bool> needed;
    if (properties != nullptr) {
      for (const auto& kv : properties->items()) {
        if (kv.key().empty() || kv.key().find(style.name_excludes) != std::string::npos) {
          return fail_unsupported(
              at + "/properties/" + internal::schema::escape_pointer_token(kv.key()),
              std::string("a parameter name must be non-empty and without '") +
                  style.name_excludes + "' in style " + quoted);
        }
        names.push_back(kv.key());
        needed.push_back(false);
      }
    }
    if (required != nullptr) {
      for (size_t i = 0; i < required->size(); ++i) {
        const Json& name = (*required)[i];
        const std::string item_at = at + "/required/" + std::to_string(i);
        if (!name.is_string()) return fail_invalid(item_at, "expected a string");
        auto found = std::find(names.begin(), names.end(), name.get<std::string>());
        if (found == names.end()) {
          return fail_unsupported(item_at, "required parameter \"" + name.get<std::string>() +
                                               "\" is not in \"properties\"");
        }
        needed[static_cast<size_t>(found - names.begin())] = true;
      }
    }
    const bool can_write = !names.empty() || additional;
    if (nonempty && !can_write)
      return fail_invalid(at + "/minProperties", "no parameter can be written");
    const bool may_be_empty =
        !nonempty && std::none_of(needed.begin(), needed.end(), [](bool b) { return b; });
    if (!can_write) return text(style.when_empty);
    // A style that writes something for no parameters: build the nonempty
    // arguments, and add that text as the other choice.
    const bool empty_text = may_be_empty && !style.when_empty.empty();
    if (empty_text) nonempty = true;
    const std::vector<std::u32string> stops = xml_value_stops(style, ends);
    auto parameter = [&style](Expr name, Expr value, bool raw) {
      std::vector<Expr> parts = {Expr::literal_text(style.before_name), std::move(name),
                                 Expr::literal_text(raw ? style.raw_open : style.json_open),
                                 std::move(value), Expr::literal_text(style.close)};
      if (!style.terminator.empty()) parts.push_back(Expr::literal_text(style.terminator));
      return Expr::sequence(std::move(parts));
    };
    std::vector<Expr> items;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string value_at =
          at + "/properties/" + internal::schema::escape_pointer_token(names[i]);
      bool raw = true;
      std::optional<Expr> json_too;
      Result<Expr> value =
          xml_value(style, (*properties)[names[i]], schema, value_at, stops, &raw, &json_too);
      if (!value.ok()) return value;
      std::u32string name;
      utf8::decode_all(names[i], &name);
      Expr item = parameter(Expr::literal_text(name), std::move(value).value(), raw);
      if (json_too) {
        item = Expr::alternation(
            {std::move(item), parameter(Expr::literal_text(name), std::move(*json_too), false)});
      }
      items.push_back(std::move(item));
    }
    const std::string prefix = "xml" + std::to_string(next_name_++) + "-";
    std::optional<Expr> extra;
    if (additional) {
      // An undeclared name: an identifier (as XGrammar writes them) that is
      // not a declared name; its value any raw text.
      Result<internal::RegexNode> identifier = internal::parse_ecma_regex("[A-Za-z_][A-Za-z0-9_]*");
      if (!identifier.ok()) return identifier.status();
      Result<internal::CharDfa> identifiers =
          internal::dfa_from_whole_regex(*identifier, internal::kDefaultDfaStates);
      if (!identifiers.ok()) return identifiers.status();
      Result<internal::CharDfa> undeclared = internal::dfa_intersection(
          *identifiers, internal::dfa_complement(internal::dfa_words(names)));
      if (!undeclared.ok())
        return error(undeclared.status().code(), at, undeclared.status().message());
      extra = parameter(dfa_expr(*undeclared, prefix + "name"), free_text(stops), true);
    }
    if (any_order) {
      std::optional<Expr> unordered = xml_any_order(items, needed, extra, style, nonempty, prefix);
      if (unordered) {
        if (!empty_text) return std::move(*unordered);
        return Expr::alternation({std::move(*unordered), text(style.when_empty)});
      }
      if (warnings_ != nullptr) {
        warnings_->push_back("structural tag at " + at +
                             ": parameters in schema order, not in any order: that takes more "
                             "than " +
                             std::to_string(options_.json_schema.any_order_max_alternatives) +
                             " alternatives (JsonSchemaOptions::any_order_max_alternatives), and "
                             "AnyOrder(...) cannot say it (it is off, or there are more than " +
                             std::to_string(kMaxAnyOrderMembers) +
                             " parameters, or at least one is needed and none is required)");
      }
    }
    // rest_i: what may follow once something is written, from item i on;
    // first_i: the first item written being declared item i or later.
    const size_t n = items.size();
    const auto rest = static_cast<uint32_t>(grammar_.rules().size());
    for (size_t i = 0; i <= n; ++i)
      grammar_.add_rule(prefix + "rest-" + std::to_string(i), Expr::sequence({}));
    const auto first = static_cast<uint32_t>(grammar_.rules().size());
    for (size_t i = 0; i <= n; ++i)
      grammar_.add_rule(prefix + "first-" + std::to_string(i), Expr::sequence({}));
    auto extras = [&]() {
      return extra ? Expr::repeat(separated(style, *extra), 0, kUnbounded) : Expr::sequence({});
    };
    for (size_t i = 0; i < n; ++i) {
      Expr next = separated(style, items[i]);
      if (!needed[i]) next = Expr::repeat(std::move(next), 0, 1);
      const auto index = static_cast<uint32_t>(i);
      grammar_.mutable_rules()[rest + i].body =
          Expr::sequence({extras(), std::move(next), Expr::rule_ref(rest + index + 1)});
      std::vector<Expr> options = {Expr::sequence({items[i], Expr::rule_ref(rest + index + 1)})};
      if (!needed[i] && (i + 1 < n || !nonempty))
        options.push_back(Expr::rule_ref(first + index + 1));
      grammar_.mutable_rules()[first + i].body = one_of(std::move(options));
    }
    grammar_.mutable_rules()[rest + n].body = extras();
    Expr arguments = Expr::rule_ref(first);
    if (extra) {
      Expr extra_first = Expr::sequence({*extra, Expr::rule_ref(rest)});
      arguments = n == 0 && nonempty
                      ? std::move(extra_first)
                      : Expr::alternation({std::move(extra_first), Expr::rule_ref(first)});
    }
    if (!empty_text) return arguments;
    return Expr::alternation({std::move(arguments), text(style.when_empty)});
  }

  Result<Expr> gbnf_grammar(const Json& format, const std::string& path) {
    const Json* text = nullptr;
    if (Status s = field(format, path, "grammar", &text); !s.ok()) return s;
    if (!text->is_string()) return fail_invalid(path + "/grammar", "\"grammar\" must be a string");
    GbnfOptions gbnf = options_.gbnf;
    gbnf.root = "root";
    Result<Grammar> sub = parse_gbnf(text->get_ref<const std::string&>(), gbnf);
    if (!sub.ok()) {
      const SourceLocation& at = sub.status().where();
      std::string where;
      if (at.line > 0) where = std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
      return Status(sub.status().code(),
                    "structural tag at " + path + "/grammar: " + where + sub.status().message());
    }
    return import(*sub, "grammar", "root");
  }

  Result<Expr> regex(const Json& format, const std::string& path) {
    const Json* pattern = nullptr;
    if (Status s = field(format, path, "pattern", &pattern); !s.ok()) return s;
    if (!pattern->is_string())
      return fail_invalid(path + "/pattern", "\"pattern\" must be a string");
    const std::string& text = pattern->get_ref<const std::string&>();
    Result<internal::RegexNode> parsed = internal::parse_ecma_regex(text);
    if (!parsed.ok()) {
      return Status(parsed.status().code(),
                    "structural tag at " + path + "/pattern: " + parsed.status().message());
    }
    std::u32string code_points;
    utf8::decode_all(text, &code_points);
    return Expr::regex(std::move(code_points));
  }

  Result<Expr> any_text(const Json& format, const std::string& path, const Ends& ends) {
    std::vector<std::u32string> excluded;
    if (Status s = strings_field(format, path, "excludes", false, &excluded); !s.ok()) return s;
    uint32_t max_tokens = kUnbounded;
    if (Status s = bound_field(format, path, "max_tokens", &max_tokens); !s.ok()) return s;
    if (max_tokens != kUnbounded) {
      return fail_unsupported(path + "/max_tokens",
                              "a budget of tokens over text is not enforced by a grammar");
    }
    uint32_t max_chars = kUnbounded;
    if (Status s = bound_field(format, path, "max_chars", &max_chars); !s.ok()) return s;
    append(excluded, ends.strings);
    if (max_chars != kUnbounded) {
      if (!excluded.empty()) {
        return fail_unsupported(path + "/max_chars",
                                "max_chars together with excluded strings (or an enclosing "
                                "tag's end) is not supported");
      }
      return Expr::repeat(Expr::any_char(), 0, max_chars);
    }
    return free_text(std::move(excluded));
  }

  Result<Expr> elements(const Json& format, const std::string& path, const Ends& ends,
                        uint32_t depth, const std::string& type) {
    const Json* list = nullptr;
    if (Status s = field(format, path, "elements", &list); !s.ok()) return s;
    if (!list->is_array() || (type == "or" && list->empty()))
      return fail_invalid(path + "/elements", "\"elements\" must be a non-empty array");
    std::vector<Expr> parts;
    for (size_t i = 0; i < list->size(); ++i) {
      Result<Expr> part =
          build((*list)[i], path + "/elements/" + std::to_string(i), ends, depth + 1);
      if (!part.ok()) return part;
      parts.push_back(std::move(part).value());
    }
    if (parts.size() == 1) return std::move(parts[0]);
    return type == "or" ? Expr::alternation(std::move(parts)) : Expr::sequence(std::move(parts));
  }

  Result<Expr> repetition(const Json& format, const std::string& path, const Ends& ends,
                          uint32_t depth, const std::string& type) {
    const Json* content = nullptr;
    if (Status s = field(format, path, "content", &content); !s.ok()) return s;
    uint32_t min = 0;
    uint32_t max = kUnbounded;
    if (type == "optional") max = 1;
    if (type == "plus") min = 1;
    if (type == "repeat") {
      for (const char* name : {"min", "max"}) {
        const Json* value = nullptr;
        if (Status s = field(format, path, name, &value); !s.ok()) return s;
        const bool is_max = name[1] == 'a';
        if (!value->is_number_integer() || value->get<int64_t>() < (is_max ? -1 : 0)) {
          return fail_invalid(path + "/" + name,
                              is_max ? "\"max\" must be an integer >= -1 (-1: unbounded)"
                                     : "\"min\" must be a non-negative integer");
        }
        const int64_t v = value->get<int64_t>();
        if (v > options_.max_repeat) {
          return error(ErrorCode::kLimitExceeded, path + "/" + name,
                       std::to_string(v) + " is above StructuralTagOptions::max_repeat (" +
                           std::to_string(options_.max_repeat) + ")");
        }
        (is_max ? max : min) = v < 0 ? kUnbounded : static_cast<uint32_t>(v);
      }
      if (min > max) return fail_invalid(path, "\"min\" is above \"max\"");
    }
    Result<Expr> inner = build(*content, path + "/content", ends, depth + 1);
    if (!inner.ok()) return inner;
    if (min == 1 && max == 1) return inner;
    if (max == 0) return Expr::sequence({});
    return Expr::repeat(std::move(inner).value(), min, max);
  }

  // A tag's begin: a string, or a token format object (token level).
  Result<Expr> delimiter(const Json& value, const std::string& path, bool* is_token) {
    *is_token = false;
    if (value.is_string()) {
      std::u32string code_points;
      utf8::decode_all(value.get_ref<const std::string&>(), &code_points);
      return text(code_points);
    }
    auto type = value.is_object() ? value.find("type") : value.end();
    if (value.is_object() && type != value.end() && is_string_equal(*type, "token")) {
      *is_token = true;
      const Json* token = nullptr;
      if (Status s = field(value, path, "token", &token); !s.ok()) return s;
      return token_item(*token, path + "/token");
    }
    return fail_invalid(path, "expected a string or a {\"type\": \"token\"} object");
  }

  // begin + content + end. `begin_text`, when given, receives a string begin.
  Result<Expr> tag(const Json& format, const std::string& path, uint32_t depth,
                   std::u32string* begin_text = nullptr, Expr* begin_token = nullptr) {
    if (!format.is_object()) return fail_invalid(path, "a tag must be a JSON object");
    if (format.contains("type") && !is_string_equal(format["type"], "tag"))
      return fail_invalid(path + "/type", "expected a format of type \"tag\"");
    const Json* begin_value = nullptr;
    const Json* content = nullptr;
    const Json* end_value = nullptr;
    if (Status s = field(format, path, "begin", &begin_value); !s.ok()) return s;
    if (Status s = field(format, path, "content", &content); !s.ok()) return s;
    if (Status s = field(format, path, "end", &end_value); !s.ok()) return s;
    bool begin_is_token = false;
    Result<Expr> begin = delimiter(*begin_value, path + "/begin", &begin_is_token);
    if (!begin.ok()) return begin;
    if (begin_text != nullptr) {
      if (begin_is_token)
        return fail_invalid(path + "/begin", "these tags need a string \"begin\"");
      utf8::decode_all(begin_value->get_ref<const std::string&>(), begin_text);
    }
    if (begin_token != nullptr) {
      if (!begin_is_token) {
        return fail_invalid(path + "/begin", "these tags need a {\"type\": \"token\"} \"begin\"");
      }
      *begin_token = *begin;
    }
    Ends inner;
    std::vector<Expr> end_options;
    const std::string end_path = path + "/end";
    if (end_value->is_array()) {
      if (end_value->empty()) return fail_invalid(end_path, "\"end\" must not be an empty array");
      bool any_empty = false;
      for (size_t i = 0; i < end_value->size(); ++i) {
        const Json& item = (*end_value)[i];
        if (!item.is_string())
          return fail_invalid(end_path + "/" + std::to_string(i), "expected a string");
        std::u32string code_points;
        utf8::decode_all(item.get_ref<const std::string&>(), &code_points);
        any_empty |= code_points.empty();
        end_options.push_back(text(code_points));
        inner.strings.push_back(std::move(code_points));
      }
      // An empty end lets the content stop anywhere: nothing to exclude.
      if (any_empty) inner.strings.clear();
    } else {
      bool end_is_token = false;
      Result<Expr> end = delimiter(*end_value, end_path, &end_is_token);
      if (!end.ok()) return end;
      if (end_is_token) {
        append_token(*end, &inner.tokens);
      } else if (!end_value->get_ref<const std::string&>().empty()) {
        std::u32string code_points;
        utf8::decode_all(end_value->get_ref<const std::string&>(), &code_points);
        inner.strings.push_back(std::move(code_points));
      }
      end_options.push_back(std::move(end).value());
    }
    Result<Expr> body = build(*content, path + "/content", inner, depth + 1);
    if (!body.ok()) return body;
    return Expr::sequence(
        {std::move(begin).value(), std::move(body).value(), one_of(std::move(end_options))});
  }

  // The alternation of `tags`, each checked by `check` (begin text or token).
  Result<Expr> tag_list(const Json& format, const std::string& path, uint32_t depth,
                        std::vector<std::u32string>* begins, std::vector<Expr>* begin_tokens) {
    const Json* list = nullptr;
    if (Status s = field(format, path, "tags", &list); !s.ok()) return s;
    if (!list->is_array() || list->empty())
      return fail_invalid(path + "/tags", "\"tags\" must be a non-empty array of tags");
    std::vector<Expr> options;
    for (size_t i = 0; i < list->size(); ++i) {
      std::u32string begin;
      Expr begin_token;
      Result<Expr> one = tag((*list)[i], path + "/tags/" + std::to_string(i), depth + 1,
                             begins != nullptr ? &begin : nullptr,
                             begin_tokens != nullptr ? &begin_token : nullptr);
      if (!one.ok()) return one;
      if (begins != nullptr) begins->push_back(std::move(begin));
      if (begin_tokens != nullptr) begin_tokens->push_back(std::move(begin_token));
      options.push_back(std::move(one).value());
    }
    return one_of(std::move(options));
  }

  // free (tag free)*, shaped by at_least_one and stop_after_first.
  Result<Expr> dispatch_shape(const Json& format, const std::string& path, Expr free, Expr tags) {
    bool at_least_one = false;
    bool stop_after_first = false;
    if (Status s = bool_field(format, path, "at_least_one", false, &at_least_one); !s.ok())
      return s;
    if (Status s = bool_field(format, path, "stop_after_first", false, &stop_after_first); !s.ok())
      return s;
    if (stop_after_first) {
      if (at_least_one) return tags;
      return Expr::sequence({std::move(free), Expr::repeat(std::move(tags), 0, 1)});
    }
    if (at_least_one) {
      // tag (free tag)* free: no text before the first tag.
      Expr loop = Expr::repeat(Expr::sequence({free, tags}), 0, kUnbounded);
      return Expr::sequence({std::move(tags), std::move(loop), std::move(free)});
    }
    Expr loop = Expr::repeat(Expr::sequence({tags, free}), 0, kUnbounded);
    return Expr::sequence({std::move(free), std::move(loop)});
  }

  Result<Expr> triggered_tags(const Json& format, const std::string& path, const Ends& ends,
                              uint32_t depth) {
    std::vector<std::u32string> triggers;
    if (Status s = strings_field(format, path, "triggers", true, &triggers); !s.ok()) return s;
    if (triggers.empty()) return fail_invalid(path + "/triggers", "no triggers");
    std::vector<std::u32string> begins;
    Result<Expr> tags = tag_list(format, path, depth, &begins, nullptr);
    if (!tags.ok()) return tags;
    for (size_t i = 0; i < begins.size(); ++i) {
      const bool triggered = std::any_of(triggers.begin(), triggers.end(), [&](const auto& t) {
        return begins[i].compare(0, t.size(), t) == 0;
      });
      if (!triggered) {
        return fail_invalid(path + "/tags/" + std::to_string(i) + "/begin",
                            "the begin does not start with any of the triggers");
      }
    }
    std::vector<std::u32string> excluded;
    if (Status s = strings_field(format, path, "excludes", false, &excluded); !s.ok()) return s;
    append(excluded, triggers);
    append(excluded, ends.strings);
    return dispatch_shape(format, path, free_text(std::move(excluded)), std::move(tags).value());
  }

  Result<Expr> tags_with_separator(const Json& format, const std::string& path, uint32_t depth) {
    std::u32string separator;
    if (Status s = string_field(format, path, "separator", &separator); !s.ok()) return s;
    Result<Expr> tags = tag_list(format, path, depth, nullptr, nullptr);
    if (!tags.ok()) return tags;
    bool at_least_one = false;
    bool stop_after_first = false;
    if (Status s = bool_field(format, path, "at_least_one", false, &at_least_one); !s.ok())
      return s;
    if (Status s = bool_field(format, path, "stop_after_first", false, &stop_after_first); !s.ok())
      return s;
    Expr list = *tags;
    if (!stop_after_first && separator.empty()) {
      // TAG+: one copy of the tags' alternation, where TAG (TAG)* would
      // write two (and lower them twice).
      list = Expr::repeat(*tags, 1, kUnbounded);
    } else if (!stop_after_first) {
      list = Expr::sequence(
          {*tags, Expr::repeat(Expr::sequence({text(separator), *tags}), 0, kUnbounded)});
    }
    if (at_least_one) return list;
    return Expr::repeat(std::move(list), 0, 1);
  }

  // rules: [[key, format], ...] where `key` is read by `read_key`.
  template <typename ReadKey>
  Result<Expr> dispatch_rules(const Json& format, const std::string& path, const Ends& ends,
                              uint32_t depth, ReadKey read_key) {
    const Json* rules = nullptr;
    if (Status s = field(format, path, "rules", &rules); !s.ok()) return s;
    if (!rules->is_array() || rules->empty())
      return fail_invalid(path + "/rules", "\"rules\" must be a non-empty array");
    std::vector<Expr> options;
    for (size_t i = 0; i < rules->size(); ++i) {
      const std::string at = path + "/rules/" + std::to_string(i);
      const Json& rule = (*rules)[i];
      if (!rule.is_array() || rule.size() != 2)
        return fail_invalid(at, "a rule is a [pattern, format] pair");
      Result<Expr> key = read_key(rule[0], at + "/0");
      if (!key.ok()) return key;
      Result<Expr> body = build(rule[1], at + "/1", ends, depth + 1);
      if (!body.ok()) return body;
      options.push_back(Expr::sequence({std::move(key).value(), std::move(body).value()}));
    }
    return one_of(std::move(options));
  }

  // free (rule free)* with loop, else free (rule)?.
  static Result<Expr> loop_shape(const Json& format, const std::string& path, Expr free,
                                 Expr rules) {
    bool loop = true;
    if (Status s = bool_field(format, path, "loop", true, &loop); !s.ok()) return s;
    if (!loop) return Expr::sequence({std::move(free), Expr::repeat(std::move(rules), 0, 1)});
    Expr free_ref = free;
    return Expr::sequence(
        {free,
         Expr::repeat(Expr::sequence({std::move(rules), std::move(free_ref)}), 0, kUnbounded)});
  }

  Result<Expr> dispatch(const Json& format, const std::string& path, const Ends& ends,
                        uint32_t depth) {
    std::vector<std::u32string> patterns;
    Result<Expr> rules =
        dispatch_rules(format, path, ends, depth, [&](const Json& key, const std::string& at) {
          if (!key.is_string() || key.get_ref<const std::string&>().empty())
            return Result<Expr>(fail_invalid(at, "a pattern is a non-empty string"));
          std::u32string code_points;
          utf8::decode_all(key.get_ref<const std::string&>(), &code_points);
          patterns.push_back(code_points);
          return Result<Expr>(Expr::literal_text(std::move(code_points)));
        });
    if (!rules.ok()) return rules;
    std::vector<std::u32string> excluded;
    if (Status s = strings_field(format, path, "excludes", false, &excluded); !s.ok()) return s;
    append(excluded, patterns);
    append(excluded, ends.strings);
    return loop_shape(format, path, free_text(std::move(excluded)), std::move(rules).value());
  }

  Result<Expr> token_run(const Json& format, const std::string& path, const Ends& ends,
                         const std::string& type) {
    std::vector<Expr> excluded;
    if (Status s = token_list(format, path, "exclude_tokens", false, &excluded); !s.ok()) return s;
    excluded.insert(excluded.end(), ends.tokens.begin(), ends.tokens.end());
    if (type == "exclude_token") return Expr::tokens_except(std::move(excluded));
    uint32_t max_tokens = kUnbounded;
    if (Status s = bound_field(format, path, "max_tokens", &max_tokens); !s.ok()) return s;
    if (max_tokens == 0) return Expr::sequence({});
    return Expr::repeat(Expr::tokens_except(std::move(excluded)), 0, max_tokens);
  }

  Result<Expr> token_triggered_tags(const Json& format, const std::string& path, const Ends& ends,
                                    uint32_t depth) {
    std::vector<Expr> triggers;
    if (Status s = token_list(format, path, "trigger_tokens", true, &triggers); !s.ok()) return s;
    if (triggers.empty()) return fail_invalid(path + "/trigger_tokens", "no trigger tokens");
    std::vector<Expr> begins;
    Result<Expr> tags = tag_list(format, path, depth, nullptr, &begins);
    if (!tags.ok()) return tags;
    for (size_t i = 0; i < begins.size(); ++i) {
      std::vector<Expr> begin_ids;
      append_token(begins[i], &begin_ids);
      const bool triggered = std::all_of(begin_ids.begin(), begin_ids.end(), [&](const Expr& b) {
        return std::find(triggers.begin(), triggers.end(), b) != triggers.end();
      });
      if (!triggered) {
        return fail_invalid(path + "/tags/" + std::to_string(i) + "/begin",
                            "the begin token is not one of the trigger tokens");
      }
    }
    std::vector<Expr> excluded;
    if (Status s = token_list(format, path, "exclude_tokens", false, &excluded); !s.ok()) return s;
    excluded.insert(excluded.end(), triggers.begin(), triggers.end());
    excluded.insert(excluded.end(), ends.tokens.begin(), ends.tokens.end());
    return dispatch_shape(format, path, free_tokens(std::move(excluded)), std::move(tags).value());
  }

  Result<Expr> token_dispatch(const Json& format, const std::string& path, const Ends& ends,
                              uint32_t depth) {
    std::vector<Expr> keys;
    Result<Expr> rules =
        dispatch_rules(format, path, ends, depth, [&](const Json& key, const std::string& at) {
          Result<Expr> item = token_item(key, at);
          if (item.ok()) append_token(*item, &keys);
          return item;
        });
    if (!rules.ok()) return rules;
    std::vector<Expr> excluded;
    if (Status s = token_list(format, path, "exclude_tokens", false, &excluded); !s.ok()) return s;
    excluded.insert(excluded.end(), keys.begin(), keys.end());
    excluded.insert(excluded.end(), ends.tokens.begin(), ends.tokens.end());
    return loop_shape(format, path, free_tokens(std::move(excluded)), std::move(rules).value());
  }

  const StructuralTagOptions& options_;
  std::vector<std::string>* warnings_;
  Grammar grammar_;
  std::unordered_map<std::string, uint32_t> imported_;  // rule body (GBNF) -> rule
  std::unordered_map<std::string_view, std::vector<uint32_t>> ids_by_text_;  // token names
  uint32_t next_name_ = 1;
  size_t raw_text_states_ = 0;  // rules made for the XML styles' string automata
};

}  // namespace

Result<Grammar> structural_tag_to_grammar(std::string_view tag_json,
                                          const StructuralTagOptions& options,
                                          std::vector<std::string>* warnings) {
  if (std::optional<std::string> deep = internal::schema::too_deep_at(tag_json, 512)) {
    return Status(ErrorCode::kLimitExceeded,
                  "structural tag at " + *deep + ": JSON nested deeper than 512 levels");
  }
  Json document;
  try {
    document = internal::schema::parse_json(tag_json);
  } catch (const std::invalid_argument& e) {
    return Status(ErrorCode::kSyntax, std::string("structural tag: not JSON: ") + e.what());
  }
  return TagConverter(options, warnings).convert(document);
}

Result<std::string> structural_tag_to_gbnf(std::string_view tag_json,
                                           const StructuralTagOptions& options,
                                           std::vector<std::string>* warnings) {
  Result<Grammar> grammar = structural_tag_to_grammar(tag_json, options, warnings);
  if (!grammar.ok()) return grammar.status();
  return grammar->to_gbnf();
}

Result<CompiledGrammar> compile_structural_tag(std::string_view tag_json,
                                               const Vocabulary& vocabulary,
                                               const CompileOptions& compile_options,
                                               StructuralTagOptions tag_options) {
  tag_options.vocabulary = &vocabulary;
  Result<Grammar> grammar = structural_tag_to_grammar(tag_json, tag_options);
  if (!grammar.ok()) return grammar.status();
  CompileOptions options = compile_options;
  options.root = "root";
  return CompiledGrammar::compile(*grammar, vocabulary, options);
}

}  // namespace grammask
