"""`diagnose FILE [--json OUT] [--baseline B.h5]`: the names other modules import.

The diagnosis lives in the diagnosis package (model, evidence, retest, rules,
validity, render); this module keeps `from .diagnose import ...` working.
"""

from .diagnosis import (Congestion, Culprit, Diagnosis, Finding, acceptance_checks,
                        culprit_subject, culprits_html, diagnose, print_diagnosis, write_json)

__all__ = ["diagnose", "Diagnosis", "Culprit", "Congestion", "Finding", "print_diagnosis",
           "write_json", "culprits_html", "culprit_subject", "acceptance_checks"]
