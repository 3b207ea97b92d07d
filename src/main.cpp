#include "cli/CommandLine.hpp"

int main(int argc, char** argv) { return fabscope::cli::runCommandLine(argc, argv); }
