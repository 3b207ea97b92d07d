"""diagnose: is the fabric fit, and if not, which component to fix (docs/analysis.md).

diagnosis.core.diagnose(result, baseline=None) -> result.Diagnosis (plain data);
render.py prints it, writes its JSON and HTML, and gives accept its checks.
"""

from .core import diagnose
from .render import acceptance_checks, culprit_subject, culprits_html, print_diagnosis, write_json
from .result import Congestion, Culprit, Diagnosis, Finding

__all__ = ["diagnose", "Diagnosis", "Culprit", "Congestion", "Finding", "print_diagnosis",
           "write_json", "culprits_html", "culprit_subject", "acceptance_checks"]
