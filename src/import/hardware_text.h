// What `annealer hardware` prints: the table of the built-in profiles, one profile's figures
// with the arithmetic of its derived problem numbers, and both as JSON.
#pragma once

#include <string>
#include <vector>

#include "src/import/hardware_profile.h"

namespace annealer {

// One row per profile: name, n, capacity, bandwidth, MatMul and Pointwise base, balance,
// native tiles that fit, description.
std::string HardwareTableText(const std::vector<HardwareProfile>& profiles);

// Every figure of `profile`, the derived numbers with their arithmetic, sources and notes.
std::string HardwareProfileText(const HardwareProfile& profile);

// One JSON object: the profile's figures, "derived": {...}, sources and notes.
std::string HardwareProfileJson(const HardwareProfile& profile, int indent = 0);

// A JSON array of HardwareProfileJson objects.
std::string HardwareListJson(const std::vector<HardwareProfile>& profiles);

}  // namespace annealer
