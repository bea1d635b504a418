"""Notebook 04's closing section: the same heads as each study of the course sees them, on the loaded model.

* **01** -- in the path-patching circuit (the search of notebook 01, or the paper's circuit on GPT-2 small);
* **02** -- EAP per example: the share of examples whose own top-``k`` heads and MLPs (by |signed node score|) hold
  the component, ``k`` the path-patching circuit's size (notebook 02's reuse, at one size);
* **03** -- the attention filters: induction selectivity on planted pairs (:func:`~tutorial_lib.methods.selectivity.
  selectivity`, random-position baseline) and, on greater-than, each head's mean attention from END (the second
  ``" 17"``) to YY, the token after the earlier ``" 17"``: the induction pattern, on the task's own prompts;
* **04** -- each component's rank by |exact node effect| and by |EAP-IG node score|.

>>> links = study_links(model, task, comparison, eap)                    # doctest: +SKIP
>>> links.table, links.reading()                                         # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.circuits import jaccard
from ..core.components import sort_key
from ..methods.selectivity import induction_circuit, selectivity
from .comparing import MethodComparison, expected_jaccard
from .spectral_loaded import model_probe

INDUCTION_THRESHOLD = 50.0  # notebook 03's filter


@dataclass
class StudyLinks:
    table: object  # pandas DataFrame, one row per component
    pp_heads: list
    filter_heads: list  # heads passing 03's induction filter
    n_heads: int
    attention_to_yy: dict  # head -> mean attention END -> YY (greater-than only; empty otherwise)

    def reading(self) -> str:
        """What the table shows, every number from the run (at most 120 words)."""
        both = sorted(set(self.pp_heads) & set(self.filter_heads), key=sort_key)
        j = jaccard(self.pp_heads, self.filter_heads)
        chance = expected_jaccard(self.n_heads, len(self.pp_heads), len(self.filter_heads))
        text = (f"{len(both)} of the path-patching circuit's {len(self.pp_heads)} heads pass notebook 03's "
                f"{INDUCTION_THRESHOLD:.0f}× induction filter ({', '.join(both) or 'none'}), which passes "
                f"{len(self.filter_heads)} of {self.n_heads} heads: Jaccard {j:.2f}, random sets {chance:.2f}. ")
        if self.attention_to_yy and self.pp_heads:
            inside = sum(self.attention_to_yy[h] for h in self.pp_heads) / len(self.pp_heads)
            rest = [v for h, v in self.attention_to_yy.items() if h not in self.pp_heads]
            out = sum(rest) / max(1, len(rest))
            text += (f"At END the circuit's heads put {inside:.2f} of their attention on YY, other heads {out:.2f} "
                     "(the induction pattern). ")
        if both:
            return text + ("03's \"induction heads\" serve this task: a label names a pattern on one probe, not a "
                           "head's one task.")
        return text + "The two studies pick no common head."


def attention_to(model, task, position: str = "YY", batch_size: int = 32) -> torch.Tensor:
    """Each head's mean attention from ``END`` to ``task.positions[position]``: ``[n_layers, n_heads]``."""
    src, dst = task.end_pos, task.positions[position]
    rows = torch.arange(len(task))
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    names = [f"blocks.{l}.attn.hook_pattern" for l in range(model.cfg.n_layers)]
    with torch.no_grad():
        for i in range(0, len(task), batch_size):
            r = rows[i:i + batch_size]
            _, cache = model.run_with_cache(task.clean[r], names_filter=lambda n: n in names)
            for l, name in enumerate(names):
                total[l] += cache[name][torch.arange(len(r)), :, src[r], dst[r]].float().sum(0).cpu()
    return total / len(task)


def study_links(model, task, c: MethodComparison, eap, probe_n: int = 64) -> StudyLinks:
    """The table of the closing section (see the module docstring). ``eap``: the EAP scores of every example
    (``eap_scores(..., keep_edges=True)``, as notebook 04 computes them)."""
    import pandas as pd

    comps = c.components
    k = max(1, len(c.pp_nodes))
    per_example = eap.signed_nodes.abs()
    top = per_example.argsort(dim=1, descending=True, stable=True)[:, :k]
    reuse = torch.zeros(len(comps)).index_add_(0, top.flatten(), torch.ones(top.numel())) / per_example.shape[0]
    sel = selectivity(model, model_probe(model, n=probe_n))
    ind = sel["induction"]
    filter_heads = induction_circuit(sel, threshold=INDUCTION_THRESHOLD)
    to_yy = {}
    if "YY" in getattr(task, "positions", {}):
        att = attention_to(model, task, "YY")
        to_yy = {f"a{l}.h{h}": float(att[l, h]) for l in range(att.shape[0]) for h in range(att.shape[1])}

    def rank(scores):
        order = scores.abs().argsort(descending=True, stable=True).tolist()
        return {comps[i]: r + 1 for r, i in enumerate(order)}

    exact, ig = rank(c.node_scores["exact node patching"][1:]), rank(c.node_scores["EAP-IG"][1:])
    shown = set(c.pp_nodes) | set(filter_heads) | {n for n, r in exact.items() if r <= k}
    rows = []
    for name in sorted(shown, key=sort_key):
        head = name.startswith("a")
        l, h = (int(x[1:]) for x in name.split(".")) if head else (None, None)
        rows.append({"component": name, "01: in path-patching circuit": name in c.pp_nodes,
                     f"02: EAP reuse (top-{k} per example)": float(reuse[comps.index(name)]),
                     "03: induction ×": float(ind[l, h]) if head else float("nan"),
                     "03: passes 50× filter": name in filter_heads,
                     **({"END → YY attention": to_yy[name] if head else float("nan")} if to_yy else {}),
                     "04: rank by exact effect": exact[name], "04: rank by EAP-IG": ig[name]})
    table = pd.DataFrame(rows).set_index("component").round(3)
    pp_heads = [n for n in c.pp_nodes if n.startswith("a")]
    return StudyLinks(table, pp_heads, list(filter_heads), model.cfg.n_layers * model.cfg.n_heads, to_yy)
