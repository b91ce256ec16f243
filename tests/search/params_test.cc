// The search parameters (search/params.h): the table of keys and the validation's messages.
#include <doctest/doctest.h>

#include <string>

#include "search/params.h"

namespace annealer {
namespace {

TEST_CASE("search params: the table covers the defaults and validation quotes bad values") {
  SearchParams params;
  CHECK(ValidateParams(params) == "");
  bool found = false;
  for (const ParamSpec& spec : ParamTable()) {
    if (spec.key == "sa.cooling") {
      found = true;
      CHECK(spec.get(params) == doctest::Approx(0.95));
      spec.set(params, 1.5);
    }
  }
  CHECK(found);
  CHECK(ValidateParams(params) == "sa.cooling = 1.5 is out of range [0.5, 0.99999]");
  SearchParams bad_int;
  bad_int.ga.population = 2;
  bad_int.ga.tournament = 3;
  CHECK(ValidateParams(bad_int) == "ga.tournament = 3 exceeds ga.population = 2");
}

}  // namespace
}  // namespace annealer
