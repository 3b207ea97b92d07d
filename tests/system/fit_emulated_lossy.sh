#!/usr/bin/env bash
# fit_emulated.sh's lossy case: a host outside the first KV pair losing 3 % of its packets
# fails the deployment naming the host: the plan's KV push rotates over every host, so
# fit's nodes check (and, where its probes see it, the diagnosis's cluster check) names it
# (about 45 s on a busy machine). tests/bench/fit_rotation_emulated.sh counts it: on
# 2026-12-05 (load 17-23) named 5 of 5, and healthy runs PASSed 5 of 5.
# ctest-labels: full
exec bash "$(dirname "${BASH_SOURCE[0]}")/fit_emulated.sh" lossy
