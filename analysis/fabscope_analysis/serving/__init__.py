"""Is the cluster fit to serve a model at a service-level objective (SLO)?

slo.py: the objectives (command line or a criteria file's `slo:` section);
measured.py: the serving classes' measured distributions at a deployment's sizes;
verdict.py: PASS / FAIL / CANNOT TELL composed from them; cif.py: congestion impact
factors; line_rate.py: bandwidth as a share of the path's line rate; command.py: `fit`;
placement.py: which operations of a deployment cross the fabric (placement_command.py:
`placement`); plan.py, plan_command.py: `plan`.
"""
