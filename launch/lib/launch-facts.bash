# What a launcher needs to know about a "fabscope run ..." before it starts it:
# the output file the arguments name (in any spelling fabscope accepts: -o F,
# -oF, --output F, --output=F, an unambiguous prefix of --output) and whether
# the scenario fabscope loads (-s/--scenario, --set, the default scenario) has
# a fault drill. fabscope itself answers (run ... --launch-facts RANKS), so the
# launcher never parses fabscope's arguments or the scenario's YAML.
#
#   launch_facts BIN RANKS RUN_ARGS...   (RUN_ARGS start with "run"; RANKS 0 = not known)
# Sets LAUNCH_FACT_OUTPUT ("" when none given) and LAUNCH_FACT_FAULT_DRILL (0|1).
# Returns fabscope's exit status when it could not answer: 2 when it refused
# the arguments or the scenario (its error is on stderr; then nothing should be
# started), anything else when the binary failed otherwise.
launch_facts() {
  local bin=$1 ranks=$2 facts status
  shift 2
  LAUNCH_FACT_OUTPUT="" LAUNCH_FACT_FAULT_DRILL=0
  facts=$("$bin" "$@" --launch-facts "$ranks") && status=0 || status=$?
  ((status == 0)) || return "$status"
  LAUNCH_FACT_OUTPUT=$(sed -n 's/^launch-facts: output=//p' <<<"$facts" | tail -n 1)
  LAUNCH_FACT_FAULT_DRILL=$(sed -n 's/^launch-facts: fault_drill=\([01]\)$/\1/p' <<<"$facts" | tail -n 1)
  LAUNCH_FACT_FAULT_DRILL=${LAUNCH_FACT_FAULT_DRILL:-0}
  return 0
}
