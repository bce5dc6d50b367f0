// Helpers shared by the grammask tool's subcommands.
#ifndef GRAMMASK_EXAMPLES_TOOL_COMMON_H_
#define GRAMMASK_EXAMPLES_TOOL_COMMON_H_

#include <map>
#include <optional>
#include <string>

#include "grammask/status.h"
#include "grammask/vocabulary.h"

namespace grammask_tool {

constexpr int kExitOk = 0;
constexpr int kExitRejected = 1;
constexpr int kExitUsage = 2;

// The whole file, or nullopt (errno tells why).
std::optional<std::string> read_file(const std::string& path);

// Documents that JSON Schema references may reach (--document URI=FILE):
// absolute URI -> JSON text. Passed to the converter as
// JsonSchemaOptions::documents.
std::map<std::string, std::string>& schema_documents();

// How a constraint file is written.
enum class Constraint { kGbnf, kSchema, kStructuralTag };

// A grammar given as a GBNF file, a JSON Schema file or a structural tag
// (whose token names `vocabulary`, when given, resolves), as GBNF text.
// On failure prints "PATH:LINE:COL: error: ..." (or "PATH: error: ...") to
// stderr and returns nullopt; *io_error tells whether the file was unreadable.
std::optional<std::string> load_constraint_gbnf(const std::string& path, Constraint kind,
                                                bool* io_error,
                                                const grammask::Vocabulary* vocabulary = nullptr);

// A GGUF file (by its .gguf extension) or a Hugging Face tokenizer.json.
grammask::Result<grammask::Vocabulary> load_vocabulary(const std::string& path);

// "dir/name.ext" -> "name".
std::string file_stem(const std::string& path);

int run_bench(int argc, char** argv);
// `grammask tools` (tools_command.cpp).
int run_tools(int argc, char** argv);

}  // namespace grammask_tool

#endif  // GRAMMASK_EXAMPLES_TOOL_COMMON_H_
