#!/usr/bin/env bash
# fit_emulated.sh with the plan's own iteration counts and an incast condition (the
# congestion impact factors shown, not judged): a few minutes on 2 CPUs.
# ctest-labels: full
exec bash "$(dirname "${BASH_SOURCE[0]}")/fit_emulated.sh" full
