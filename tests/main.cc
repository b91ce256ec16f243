// The single doctest entry point of annealer_tests; every other tests/*.cc only adds cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
