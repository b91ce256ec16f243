// The single doctest entry point of annealer_tests; every other .cc under tests/ only adds cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
