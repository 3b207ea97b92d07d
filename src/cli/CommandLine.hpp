#pragma once

namespace fabscope::cli {

// Entry point of the `fabscope` command; returns the process exit code
// (0 ok, 1 a check failed, 2 bad usage or scenario, 3 runtime failure).
int runCommandLine(int argc, char** argv);

}  // namespace fabscope::cli
