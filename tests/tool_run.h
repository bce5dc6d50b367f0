// Runs the grammask tool (GRAMMASK_TOOL_PATH, a compile definition of the
// tests that use it) with a shell command line, for the tool's tests.
#ifndef GRAMMASK_TESTS_TOOL_RUN_H_
#define GRAMMASK_TESTS_TOOL_RUN_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace grammask::testing {

struct ToolRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `arguments` go to the shell as written (quoting and redirections included).
inline ToolRun run_tool(const std::string& arguments) {
  ToolRun run;
  const std::string command = std::string("\"") + GRAMMASK_TOOL_PATH + "\" " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace grammask::testing

#endif  // GRAMMASK_TESTS_TOOL_RUN_H_
