// The main command: `annealer [--time 60s] PROBLEM.json [OUT.json]` searches for a schedule.
#pragma once

namespace annealer {

// argv as given to main (argv[0] is the program name). Returns the process exit code.
int RunSearchCommand(int argc, char** argv);

// The search command's usage text with every option; the top-level --help prints it too.
const char* SearchCommandUsage();

}  // namespace annealer
