// The annealer program; every command lives in src/cli.cc.
#include "src/cli.h"

int main(int argc, char** argv) { return annealer::RunMain(argc, argv); }
