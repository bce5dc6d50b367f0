#include "schema/document.h"

#include <exception>
#include <optional>

#include "schema/json_text.h"
#include "schema/refusal.h"
#include "schema/uri.h"

namespace grammask::internal::schema {

void Document::index() {
  Draft draft = options_.default_draft;
  if (root_.is_object()) {
    auto schema = root_.find("$schema");
    if (schema != root_.end() && schema->is_string())
      draft = draft_from_uri(schema->get<std::string>(), draft);
  }
  walk(root_, "", "", draft, 0, &root_);
  if (resources_.find("") == resources_.end()) resources_[""] = &root_;
  roots_.push_back(&root_);
  load_referenced_documents();
  for (const auto& [name, count] : dynamic_anchors_)
    if (count > 1) dynamic_ = true;
  if (dynamic_) index_resources();
}

const Json* Document::start() {
  if (!dynamic_) return &root_;
  return copy_of(&root_, extend(scope_id({}), &root_), "");
}

const NodeInfo& Document::info(const Json* node) const {
  static const NodeInfo kSynthetic;
  auto it = info_.find(node);
  return it == info_.end() ? kSynthetic : it->second;
}

const Json* Document::resolve(const Json* from, const std::string& keyword,
                              const std::string& ref) {
  const Json* target = resolve_static(from, keyword, ref);
  if (!dynamic_) return target;
  const NodeInfo& where = info(from);
  if (where.scope < 0)
    refuse(keyword, where.pointer, "reference from a schema outside the dynamic scopes");
  if (keyword == "$dynamicRef") {
    size_t hash = ref.find('#');
    std::string name = hash == std::string::npos ? "" : percent_decode(ref.substr(hash + 1));
    auto anchor = target->is_object() ? target->find("$dynamicAnchor") : target->end();
    if (!name.empty() && name[0] != '/' && anchor != target->end() && anchor->is_string() &&
        anchor->get<std::string>() == name) {
      const auto& bindings = scopes_[where.scope];
      auto bound = bindings.find(name);
      if (bound != bindings.end()) target = bound->second;
    }
  }
  return copy_of(target, extend(where.scope, resource_of_.at(target)), where.pointer);
}

const Json* Document::resolve_static(const Json* from, const std::string& keyword,
                                     const std::string& ref) {
  const NodeInfo& where = info(from);
  std::string target = resolve_uri(where.base, ref);
  size_t hash = target.find('#');
  std::string document = target.substr(0, hash);
  std::string fragment = hash == std::string::npos ? "" : percent_decode(target.substr(hash + 1));
  auto resource = resources_.find(document);
  if (resource == resources_.end()) {
    auto failed = unavailable_.find(document);
    refuse(keyword, where.pointer,
           "reference \"" + ref + "\" leaves the document (" + target + ")" +
               (failed != unavailable_.end() && !failed->second.empty()
                    ? ": " + failed->second
                    : std::string(" and no such document was supplied")));
  }
  if (fragment.empty()) return resource->second;
  if (fragment[0] == '/') {
    const Json* node = resource->second;
    NodeInfo node_info = info(node);
    size_t start = 1;
    while (true) {
      size_t end = fragment.find('/', start);
      std::string token =
          fragment.substr(start, end == std::string::npos ? std::string::npos : end - start);
      std::string unescaped;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() &&
            (token[i + 1] == '0' || token[i + 1] == '1')) {
          unescaped.push_back(token[i + 1] == '0' ? '~' : '/');
          ++i;
        } else {
          unescaped.push_back(token[i]);
        }
      }
      if (node->is_object()) {
        auto it = node->find(unescaped);
        if (it == node->end())
          refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
        node = &*it;
      } else if (node->is_array()) {
        size_t index = 0;
        if (unescaped.empty() || unescaped.find_first_not_of("0123456789") != std::string::npos)
          refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
        index = std::stoul(unescaped);
        if (index >= node->size())
          refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
        node = &(*node)[index];
      } else {
        refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
      }
      node_info.pointer += "/" + escape_pointer_token(unescaped);
      if (info_.find(node) != info_.end()) node_info = info_.at(node);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    if (info_.find(node) == info_.end()) info_[node] = node_info;
    return node;
  }
  auto anchor = resources_.find(document + "#" + fragment);
  if (anchor == resources_.end())
    refuse(keyword, where.pointer, "reference \"" + ref + "\": no such anchor");
  return anchor->second;
}

void Document::load_referenced_documents() {
  for (size_t i = 0; i < references_.size(); ++i) {
    const auto [node, keyword] = references_[i];
    auto value = node->find(keyword);
    if (value == node->end() || !value->is_string()) continue;
    const NodeInfo& where = info(node);
    std::string target = resolve_uri(where.base, value->get<std::string>());
    std::string uri = target.substr(0, target.find('#'));
    if (resources_.count(uri) || unavailable_.count(uri)) continue;
    std::optional<std::string> text;
    auto supplied = options_.documents.find(uri);
    if (supplied != options_.documents.end())
      text = supplied->second;
    else if (options_.fetch_document)
      text = options_.fetch_document(uri);
    if (!text) {
      unavailable_[uri] = "";
      continue;
    }
    if (documents_.size() >= options_.max_documents)
      refuse(keyword, where.pointer,
             "reference to \"" + uri + "\" needs more than max_documents (" +
                 std::to_string(options_.max_documents) + ") other documents",
             ErrorCode::kLimitExceeded);
    if (too_deep_at(*text, options_.max_schema_depth * 2 + 2)) {
      unavailable_[uri] = "the document nests deeper than max_schema_depth (" +
                          std::to_string(options_.max_schema_depth) + ")";
      continue;
    }
    Json parsed;
    try {
      parsed = parse_json(*text);
    } catch (const std::exception& e) {
      unavailable_[uri] = std::string("the document is not valid JSON: ") + e.what();
      continue;
    }
    if (!parsed.is_object() && !parsed.is_boolean()) {
      unavailable_[uri] = "the document is not a schema (an object or a boolean)";
      continue;
    }
    documents_.push_back(std::move(parsed));
    const Json& document = documents_.back();
    Draft draft = where.draft;
    if (document.is_object()) {
      auto schema = document.find("$schema");
      if (schema != document.end() && schema->is_string())
        draft = draft_from_uri(schema->get<std::string>(), draft);
    }
    resources_[uri] = &document;
    roots_.push_back(&document);
    walk(document, uri + "#", uri, draft, 0, &document);
  }
}

void Document::walk(const Json& node, const std::string& pointer, std::string base, Draft draft,
                    uint32_t depth, const Json* resource) {
  if (depth > options_.max_schema_depth)
    fail(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                        std::to_string(options_.max_schema_depth) + ") at " +
                                        display_pointer(pointer));
  if (!node.is_object()) {
    info_[&node] = NodeInfo{pointer, base, draft};
    return;
  }
  // `$schema` names the dialect of a schema resource: a document's root
  // (read before the walk) or a node the enclosing dialect identifies. In
  // any other subschema it changes nothing, as in python-jsonschema (a
  // draft-04 `$schema` beside `id` under a root without one leaves `id`
  // unread and `$ref`s resolving against the root). The identifier is
  // read as the enclosing dialect reads it.
  const char* identifier = draft == Draft::kDraft4 ? "id" : "$id";
  auto schema = node.find("$schema");
  if (schema != node.end() && schema->is_string() && depth > 0) {
    auto named = node.find(identifier);
    if (named != node.end() && named->is_string() && !named->get<std::string>().empty() &&
        named->get<std::string>()[0] != '#')
      draft = draft_from_uri(schema->get<std::string>(), draft);
  }
  bool ref_hides_siblings = legacy(draft) && node.contains("$ref");
  auto id = node.find(identifier);
  if (id != node.end() && id->is_string() && !ref_hides_siblings) {
    std::string text = id->get<std::string>();
    if (legacy(draft) && !text.empty() && text[0] == '#') {
      resources_[base.substr(0, base.find('#')) + text] = &node;
    } else {
      base = resolve_uri(base, text);
      std::string document = base.substr(0, base.find('#'));
      base = document;
      resources_[document] = &node;
      resource_roots_.insert(&node);
      resource = &node;
    }
  }
  info_[&node] = NodeInfo{pointer, base, draft};
  for (const char* anchor_keyword : {"$anchor", "$dynamicAnchor"}) {
    auto anchor = node.find(anchor_keyword);
    if (anchor != node.end() && anchor->is_string()) {
      resources_[base + "#" + anchor->get<std::string>()] = &node;
      if (std::string(anchor_keyword) == "$dynamicAnchor") {
        ++dynamic_anchors_[anchor->get<std::string>()];
        resource_anchors_[resource].emplace_back(anchor->get<std::string>(), &node);
      }
    }
  }
  for (const char* reference : {"$ref", "$dynamicRef", "$recursiveRef"})
    if (node.contains(reference)) references_.emplace_back(&node, reference);
  if (node.contains("unevaluatedItems") || node.contains("unevaluatedProperties"))
    has_unevaluated_ = true;
  auto recursive = node.find("$recursiveAnchor");
  if (recursive != node.end() && recursive->is_boolean() && recursive->get<bool>())
    has_recursive_anchor_ = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& key = it.key();
    const bool map = schema_map_keywords().count(key) || (key == "dependencies" && it->is_object());
    const bool array = !map && schema_array_keywords().count(key) && it->is_array();
    if (!map && !array && !schema_keywords().count(key)) continue;
    std::string child_pointer = pointer + "/" + escape_pointer_token(key);
    if (map) {
      if (!it->is_object()) continue;
      info_[&*it] = NodeInfo{child_pointer, base, draft};
      for (auto member = it->begin(); member != it->end(); ++member) {
        if (key == "dependencies" && member->is_array()) continue;
        walk(*member, child_pointer + "/" + escape_pointer_token(member.key()), base, draft,
             depth + 1, resource);
      }
    } else if (array) {
      info_[&*it] = NodeInfo{child_pointer, base, draft};
      for (size_t i = 0; i < it->size(); ++i)
        walk((*it)[i], child_pointer + "/" + std::to_string(i), base, draft, depth + 1, resource);
    } else if (schema_keywords().count(key)) {
      walk(*it, child_pointer, base, draft, depth + 1, resource);
    }
  }
}

void Document::index_resources() {
  for (const Json* root : roots_) {
    std::vector<std::pair<const Json*, const Json*>> stack = {{root, root}};
    while (!stack.empty()) {
      auto [node, resource] = stack.back();
      stack.pop_back();
      if (resource_roots_.count(node)) resource = node;
      resource_of_[node] = resource;
      if (node->is_object() || node->is_array())
        for (const Json& child : *node) stack.emplace_back(&child, resource);
    }
  }
}

int Document::scope_id(const Bindings& bindings) {
  auto it = scope_ids_.find(bindings);
  if (it != scope_ids_.end()) return it->second;
  scopes_.push_back(bindings);
  return scope_ids_[bindings] = static_cast<int>(scopes_.size()) - 1;
}

int Document::extend(int scope, const Json* resource) {
  auto anchors = resource_anchors_.find(resource);
  if (anchors == resource_anchors_.end()) return scope;
  Bindings bindings = scopes_[scope];
  for (const auto& [name, node] : anchors->second) bindings.emplace(name, node);
  return scope_id(bindings);
}

const Json* Document::copy_of(const Json* node, int scope, const std::string& pointer) {
  auto found = copies_.find({node, scope});
  if (found == copies_.end()) {
    const Json* resource = resource_of_.at(node);
    if (copy_count_ >= options_.max_dynamic_scopes)
      refuse("$dynamicRef", pointer,
             "needs more than max_dynamic_scopes (" + std::to_string(options_.max_dynamic_scopes) +
                 ") copies of schema resources",
             ErrorCode::kLimitExceeded);
    ++copy_count_;
    copied_.push_back(*resource);
    struct Pair {
      const Json* original;
      const Json* copy;
      int scope;
    };
    std::vector<Pair> stack = {{resource, &copied_.back(), scope}};
    while (!stack.empty()) {
      Pair p = stack.back();
      stack.pop_back();
      // Copies of large resources count too, not only their number.
      if (++copied_nodes_ > kMaxCopiedNodes)
        refuse("$dynamicRef", pointer,
               "the copies of schema resources for max_dynamic_scopes (" +
                   std::to_string(options_.max_dynamic_scopes) + ") pass " +
                   std::to_string(kMaxCopiedNodes) + " JSON values",
               ErrorCode::kLimitExceeded);
      if (p.original != resource && resource_roots_.count(p.original))
        p.scope = extend(p.scope, p.original);
      copies_.emplace(std::make_pair(p.original, p.scope), p.copy);
      auto known = info_.find(p.original);
      if (known != info_.end()) {
        NodeInfo copy_info = known->second;
        copy_info.scope = p.scope;
        info_[p.copy] = copy_info;
      }
      if (p.original->is_object()) {
        auto o = p.original->begin();
        auto c = p.copy->begin();
        for (; o != p.original->end(); ++o, ++c) stack.push_back({&*o, &*c, p.scope});
      } else if (p.original->is_array()) {
        for (size_t i = 0; i < p.original->size(); ++i)
          stack.push_back({&(*p.original)[i], &(*p.copy)[i], p.scope});
      }
    }
    found = copies_.find({node, scope});
  }
  const Json* copy = found->second;
  if (info_.find(copy) == info_.end()) {
    NodeInfo copy_info = info(node);
    copy_info.scope = scope;
    info_[copy] = copy_info;
  }
  return copy;
}

}  // namespace grammask::internal::schema
