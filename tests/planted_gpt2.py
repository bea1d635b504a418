"""A planted greater-than circuit for a GPT-2-shaped model with random weights.

Random weights give path effects below any threshold, so the path-patching search of notebook 01 finds
an empty circuit, steps 2-4 trace nothing, and the cells that use the circuit's END MLPs fall back to
defaults. :data:`PRELUDE` is a code cell run before the notebook (by ``tests/notebook_run.py``) that
makes ``top_senders`` return the paper's GPT-2 components among the senders a sweep reached, at the
sweep's position (END or YY). The sweeps still run in full; only the selection is planted. The circuit
has MLPs at END (m8-m11) and at YY (m0-m3), where string order (m0, m1, m10, m11, m2 ...) and layer
order differ, which is what notebook 01's selections must get right.
"""

PRELUDE = '''
import tutorial_lib.methods.path_patching as _pp, tutorial_lib.studies.greater_than as _gts
from tutorial_lib.methods.path_discovery import PAPER_GREATER_THAN as _PAPER

def _planted_top_senders(result, k=None, threshold=None, sign="abs"):
    where = "YY" if str(result.positions).upper().startswith("YY") else "END"
    picked = [c for c in _PAPER[where] if c in result.effects and result.effects[c] == result.effects[c]]
    return picked if k is None else picked[:k]

_pp.top_senders = _gts.top_senders = _planted_top_senders
print("[planted circuit: the paper's GPT-2 components, at END and YY]")
'''
