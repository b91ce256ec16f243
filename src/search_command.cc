#include "src/search_command.h"

#include <cstdio>

namespace annealer {

// Placeholder until the search command lands (owned by the "program" helper).
int RunSearchCommand(int, char**) {
  std::fputs("annealer: the search command is not built yet\n", stderr);
  return 2;
}

}  // namespace annealer
