// The annealer program; every command lives in src/cli/cli.cc.
#include "src/cli/cli.h"

int main(int argc, char** argv) { return annealer::RunMain(argc, argv); }
