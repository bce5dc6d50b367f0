// `grammask schema-stats DIR [--vocab FILE] [--verbose]`: real-world JSON
// Schema coverage over a MaskBench-style directory (see schema_stats_command.cpp).
#ifndef GRAMMASK_EXAMPLES_SCHEMA_STATS_H_
#define GRAMMASK_EXAMPLES_SCHEMA_STATS_H_

namespace grammask_tool {

int run_schema_stats(int argc, char** argv);

}  // namespace grammask_tool

#endif  // GRAMMASK_EXAMPLES_SCHEMA_STATS_H_
