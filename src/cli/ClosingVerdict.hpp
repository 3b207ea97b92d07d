#pragma once
// The run's closing line is the verdict of the criteria in force, computed by the
// one code that computes it everywhere (the analysis: `fabscope_analysis verdict`),
// so `fabscope run`, summary, report and accept cannot disagree.
#include <string>

namespace fabscope::cli {

// Runs `python3 -m fabscope_analysis verdict FILE --brief` as a program and its
// arguments, never through a shell (FILE is one argument whatever it holds),
// bounded by `timeoutSeconds`, and returns its verdict line; when the analysis cannot run
// here, a line that says so and how to get the verdict. Rank 0 only, after the
// file is closed. Python: $FABSCOPE_PYTHON, else /usr/bin/python3, else python3 on
// PATH; the package: $FABSCOPE_ANALYSIS_DIR, else this build's source tree, else
// wherever Python finds it (an installed package).
std::string closingVerdict(const std::string& resultPath, double timeoutSeconds);

}  // namespace fabscope::cli
