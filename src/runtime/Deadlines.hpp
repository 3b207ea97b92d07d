#pragma once
// The control plane's deadlines, named once. A test's own data-path deadline
// is its scenario `timeout`; these bound everything around it.
namespace fabscope::runtime::deadlines {

// Start of a run: rank identity, clock sync, the seed, opening a transport,
// agreeing on the scenario.
inline constexpr double setupSeconds = 120;
// Extra time the control plane grants after a test's own deadline before a
// silent rank is declared lost (the scenario's control_grace by default); also
// the bound of one step of the result file outside a test (a header, a table,
// a flush) unless the scenario gives control_timeout.
inline constexpr double controlGraceSeconds = 30;
// After a run that lost ranks: the survivors wait for rank 0 to close the file.
inline constexpr double survivorsCloseSeconds = 30;
// A loss round: how long rank 0 waits for the ranks it calls to answer, and
// for those that answered to print its conclusion; how long a rank that
// reported a loss waits to be ended by rank 0 before it ends the job itself;
// how long rank 0 may take to record the loss alone.
inline constexpr double lossAnswerSeconds = 5;
inline constexpr double lossAckSeconds = 2;
inline constexpr double lossEndSeconds = 10;
inline constexpr double lossRecordSeconds = 10;
// Teardown calls that have no deadline of their own, bounded by the watchdog
// (which adds its grace): MPI_Finalize, and MPI_Abort or MPI_Comm_free.
inline constexpr double finalizeSeconds = 30;
inline constexpr double abortSeconds = 10;
// A fault drill's goodbye to peers that may be gone, and its stop message.
inline constexpr double goodbyeSeconds = 1;
inline constexpr double drillStopSeconds = 5;

}  // namespace fabscope::runtime::deadlines
