// The schema document and the other documents its references reach:
// where each node is (its JSON pointer), its base URI and draft, the
// resources ($id) and anchors, and the copies that dynamic scopes need.
#ifndef GRAMMASK_SRC_SCHEMA_DOCUMENT_H_
#define GRAMMASK_SRC_SCHEMA_DOCUMENT_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammask/json_schema.h"
#include "schema/drafts.h"
#include "schema/json_value.h"

namespace grammask::internal::schema {

// Where a schema node is: its JSON pointer in its document, its base URI
// and the draft it is read in.
struct NodeInfo {
  std::string pointer;
  std::string base;
  Draft draft = Draft::kDraft2020_12;
  int scope = -1;  // the dynamic scope of a copy (see Document), else -1
};

// The schema and the other documents its references reach, indexed: where
// each node is, its base URI and draft, the resources ($id) and anchors.
//
// $dynamicRef: when an anchor name is defined by more than one resource,
// what a $dynamicRef to it means depends on the resources that evaluation
// went through to get there (the outermost one that defines the name
// wins). The bindings that matter, name -> anchor node, form a "scope";
// each resource is then converted as a copy per scope it is reached in,
// so that a copy's nodes (and the rules made from them) carry their
// scope. Copies are made only for such documents, and bounded by
// max_dynamic_scopes.
//
// Nodes (of the documents and of the copies) keep their addresses for the
// Document's lifetime; converters key their memos by them.
class Document {
 public:
  Document(Json root, const JsonSchemaOptions& options)
      : root_(std::move(root)), options_(options) {}

  // Indexes the schema, then reads and indexes every document that a
  // reference names (options.documents, else options.fetch_document).
  // Refuses past max_schema_depth, max_documents and max_dynamic_scopes.
  void index();

  // Where conversion starts: the root, or its copy for the scope of the
  // root resource.
  const Json* start();

  // Where `node` is; a default NodeInfo (empty pointer) for nodes outside
  // the documents, such as false_node().
  const NodeInfo& info(const Json* node) const;

  // Resolves a reference written in `from` ($ref, $dynamicRef or
  // $recursiveRef); refuses documents that were not supplied, fragments
  // that point nowhere, and copies past max_dynamic_scopes.
  const Json* resolve(const Json* from, const std::string& keyword, const std::string& ref);

  bool dynamic_scopes() const { return dynamic_; }
  bool has_unevaluated() const { return has_unevaluated_; }
  bool has_recursive_anchor() const { return has_recursive_anchor_; }

 private:
  // The node a reference names, before dynamic scopes.
  const Json* resolve_static(const Json* from, const std::string& keyword, const std::string& ref);
  // Reads, before conversion, every document that a reference in the
  // schema (or in a document read so far) names and that is not already
  // known: from options.documents, else options.fetch_document. A document
  // that cannot be had is remembered with the reason; only following a
  // reference into it refuses.
  void load_referenced_documents();
  // Indexes `node` and the schemas below it; refuses past max_schema_depth.
  void walk(const Json& node, const std::string& pointer, std::string base, Draft draft,
            uint32_t depth, const Json* resource);

  // --- dynamic scopes ---------------------------------------------------

  using Bindings = std::map<std::string, const Json*>;

  // The resource of every node of every document (nodes outside schema
  // positions too: a reference may point anywhere).
  void index_resources();
  int scope_id(const Bindings& bindings);
  // The scope after entering `resource`: its dynamic anchors bind the names
  // that no outer resource bound.
  int extend(int scope, const Json* resource);
  // The copy of `node` (a node of a document) seen in `scope`, made with
  // the copy of its whole resource on first use.
  const Json* copy_of(const Json* node, int scope, const std::string& pointer);

  Json root_;
  const JsonSchemaOptions& options_;
  std::deque<Json> documents_;                                // other documents (stable addresses)
  std::vector<const Json*> roots_;                            // the schema and the other documents
  std::unordered_map<std::string, std::string> unavailable_;  // URI -> why (may be empty)
  std::vector<std::pair<const Json*, const char*>> references_;
  std::unordered_map<const Json*, NodeInfo> info_;
  std::unordered_map<std::string, const Json*> resources_;
  std::unordered_set<const Json*> resource_roots_;  // nodes with a $id (not an anchor)
  std::unordered_map<const Json*, std::vector<std::pair<std::string, const Json*>>>
      resource_anchors_;  // resource -> its $dynamicAnchors
  std::unordered_map<std::string, int> dynamic_anchors_;
  bool has_recursive_anchor_ = false;
  bool dynamic_ = false;
  bool has_unevaluated_ = false;
  std::unordered_map<const Json*, const Json*> resource_of_;
  std::vector<Bindings> scopes_;
  std::map<Bindings, int> scope_ids_;
  std::map<std::pair<const Json*, int>, const Json*> copies_;
  std::deque<Json> copied_;
  uint32_t copy_count_ = 0;
  static constexpr size_t kMaxCopiedNodes = size_t{1} << 20;
  size_t copied_nodes_ = 0;
};

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_DOCUMENT_H_
