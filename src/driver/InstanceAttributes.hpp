#pragma once
// The attributes of an instance's group in /tests, built in one place: every
// instance, finished, skipped or interrupted by a lost rank, carries the same
// core set (coreInstanceAttributes), so a reader finds the same keys on each.
#include <cstdint>
#include <string>

#include "driver/InstanceResult.hpp"
#include "driver/Planning.hpp"
#include "kinds/Roles.hpp"
#include "output/ResultFile.hpp"

namespace fabscope::driver {

// What the plan alone says of the instance of `index`: index, name, kind,
// case, condition, transport, memory, bytes, iterations, pattern, pass,
// retest_of (-1 unless a serial retest) and, for a test with `repeats`,
// replicate and repeats.
output::Attributes coreInstanceAttributes(int index, const PlannedInstance& planned);

// The fields of rank 0's InstanceResult that the plan alone fills.
InstanceResult coreInstanceResult(int index, const PlannedInstance& planned);

// A finished instance's attributes before its statistics: the core set, the
// rest of its plan (and its family's, PlanPart::addAttributes), when it ran
// on the global clock and who measured and who loaded.
output::Attributes finishedAttributes(int index, const PlannedInstance& planned, std::int64_t tStartNs,
                                      std::int64_t tEndNs, const suite::RoleAssignment& roles);

// A skipped instance's, or one a lost rank interrupted: the core set, its
// status and why it did not finish.
output::Attributes unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                        const std::string& why);

}  // namespace fabscope::driver
