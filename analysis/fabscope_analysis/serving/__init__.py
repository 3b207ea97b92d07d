"""Is the cluster fit to serve a model at a service-level objective (SLO)?

slo.py: the objectives (command line or a criteria file's `slo:` section);
measured.py: the serving classes' measured distributions at a deployment's sizes;
series.py: raw samples to the sequences composed (impact reads them too); compose.py: a
step composed from them; resample.py: their intervals and the rule-of-three bound;
checks.py: one check's PASS / FAIL / CANNOT TELL; fit.py: the verdict composed from them;
cif.py: congestion impact factors; attribution.py: what a named component costs, the
whole-cluster check; line_rate.py: bandwidth as a share of the path's line rate;
command.py: `fit`; placement.py: which operations of a deployment cross the fabric
(placement_command.py: `placement`); plan.py, plan_budget.py, plan_command.py: `plan`;
impact.py: `impact` (impact_rows.py: the api and mix rows; impact_text.py: its text, JSON
and report block).
"""
