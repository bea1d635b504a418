"""Notebook 03's looks inside a found circuit: what the layer-matched control draws (and whether its heads pass
the same filters), how the previous-token heads feed the induction heads (K-composition, and the induction heads'
selectivity with the previous-token heads ablated), and which of a model's induction heads also belong to
notebook 01's greater-than circuit::

    control_filters(result, sel)                       # each drawn control head's selectivities, and the filters it passes
    control_choices_reading(result)                    # how many draws exist per layer; which layers are forced
    comp = composition_summary(model, prev, ind)       # per layer-0 head: mean K-, Q-, V-composition with the induction heads
    gt = greater_than_overlap(model, found.heads)      # path-patching circuit of greater-than, attention END -> YY
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from ..core.components import parse
from ..methods.composition import MODES, composition_scores, random_baseline
from ..methods.selectivity import bos_heads


def control_filters(result, sel, induction_threshold: float = 50.0, prev_threshold: float = 30.0):
    """A DataFrame, one row per head any distinct control draw ablated: its induction and previous-token
    selectivity (÷ random positions), whether it passes the induction filter or the previous-token filter (the
    latter counted in layer 0, as the candidate's), and how many of the distinct draws hold it."""
    import pandas as pd

    draws = [hs for hs, _, _ in result.distinct_controls()]
    bos = set(bos_heads(sel))
    rows = []
    for h in sorted({h for hs in draws for h in hs}, key=lambda n: (parse(n).layer, parse(n).head)):
        c = parse(h)
        ind, prev = float(sel["induction"][c.layer, c.head]), float(sel["previous-token"][c.layer, c.head])
        rows.append({"head": h, "induction ×": round(ind, 1), "previous-token ×": round(prev, 1),
                     "passes induction filter": ind >= induction_threshold and h not in bos,
                     "passes previous-token filter": c.layer == 0 and prev >= prev_threshold and h not in bos,
                     "draws holding it": sum(h in hs for hs in draws)})
    return pd.DataFrame(rows, columns=["head", "induction ×", "previous-token ×", "passes induction filter",
                                       "passes previous-token filter", "draws holding it"]).set_index("head")


def control_choices_reading(result, filtered: Optional[Sequence[str]] = None) -> str:
    """How many layer-matched draws exist in each layer of ``result`` (a
    :class:`~tutorial_lib.methods.head_ablation.VerificationResult`), which layers are forced, and how many distinct
    draws the seeds made, in words.

    ``filtered``: every head the filter selected (the tested ones are at most half of a layer). The paper's control
    draws heads the filter did *not* select; where a layer has more filtered heads than were tested, the draws can
    hold filtered heads too, and the reading names them: such a control is itself part of the candidate class, so
    beating it is harder than beating the paper's, and failing to beat it says the layer is redundant, not that the
    heads are not causal."""
    from collections import Counter
    from math import comb

    tested = Counter(parse(h).layer for h in result.heads)
    size = Counter(parse(h).layer for h in result.upper_bound_heads)
    per = result.possible_controls_by_layer
    draws = [hs for hs, _, _ in result.distinct_controls()]
    parts = []
    for l, n in per.items():
        part = f"layer {l}: {tested[l]} of {size[l]} heads tested, C({size[l] - tested[l]}, {tested[l]}) = {n} possible draw(s)"
        if n == 1:
            part += " (forced: every control ablates " + ", ".join(h for h in draws[0] if parse(h).layer == l) + ")"
        parts.append(part)
    free = [l for l, n in per.items() if n > 1]
    in_class = sorted({h for hs in draws for h in hs} & set(filtered or ()) - set(result.heads))
    tail = ""
    if in_class:
        tail = (f" The draws hold {len(in_class)} head(s) that pass the filter themselves ({', '.join(in_class)}): "
                "unlike the paper's control, this one compares filtered heads with filtered heads.")
    return ("Per layer: " + "; ".join(parts) + f". In all {result.n_possible_controls} possible control(s)"
            + (f", differing only in layer{'s' if len(free) > 1 else ''} {', '.join(map(str, free))}" if len(free) < len(per) and free else "")
            + f"; the {len(result.control_sets)} seeds drew {result.n_distinct_controls} distinct one(s). "
            + ("The control's spread comes from unforced layers only." if len(free) < len(per) else "No layer is forced.")
            + tail)


@dataclass
class Composition:
    """Each sender's mean Q-, K- and V-composition score with the receivers, and the random baseline of each."""

    senders: list
    receivers: list
    scores: dict          # mode -> {sender: mean score over the receivers}
    baseline: dict        # mode -> (mean, std) for random matrices of the same shapes

    def best(self, mode: str = "K") -> str:
        return max(self.scores[mode], key=self.scores[mode].get)

    def z(self, sender: str, mode: str = "K") -> float:
        """How many baseline standard deviations ``sender``'s mean score lies above the random mean."""
        m, s = self.baseline[mode]
        return (self.scores[mode][sender] - m) / s

    def table(self):
        import pandas as pd

        rows = [{"sender": s, **{f"{m}-composition": round(self.scores[m][s], 3) for m in MODES}} for s in self.senders]
        rows.append({"sender": "random matrices (mean ± sd)",
                     **{f"{m}-composition": f"{self.baseline[m][0]:.3f} ± {self.baseline[m][1]:.3f}" for m in MODES}})
        return pd.DataFrame(rows).set_index("sender")


def composition_summary(model, senders: Sequence[str], receivers: Sequence[str], n_random: int = 200,
                        seed: int = 0) -> Composition:
    """:func:`~tutorial_lib.methods.composition.composition_scores` of every sender with every receiver in each
    mode, averaged over the receivers, beside :func:`~tutorial_lib.methods.composition.random_baseline`."""
    if not senders or not receivers:
        raise ValueError("senders and receivers must both be non-empty")
    scores, base = {}, {}
    for mode in MODES:
        s = composition_scores(model, senders, receivers, mode)
        if not s:
            raise ValueError(f"no sender lies in an earlier layer than a receiver: {list(senders)} -> {list(receivers)}")
        scores[mode] = {h: float(np.mean([v for (a, _), v in s.items() if a == h])) for h in senders}
        base[mode] = random_baseline(model, mode, n_random, seed)
    return Composition(list(senders), list(receivers), scores, base)


@dataclass
class GreaterThanOverlap:
    """Which heads of a set also belong to the greater-than circuit, and where they look on greater-than prompts."""

    heads: list                 # the heads asked about (e.g. the induction filter's)
    circuit: list               # the greater-than circuit's heads (path patching, notebook 01's search)
    attention_yy: dict          # head -> mean attention from END (" 17") to YY (the token after the earlier " 17")
    n_prompts: int
    how: str

    @property
    def shared(self) -> list:
        return [h for h in self.heads if h in self.circuit]

    def reading(self) -> str:
        sh = self.shared
        if not self.circuit:
            return (f"The greater-than path-patching search ({self.how}, {self.n_prompts} prompts) kept no head, so "
                    "no filtered head is shared with it.")
        text = (f"The greater-than search ({self.how}, {self.n_prompts} prompts) keeps {', '.join(self.circuit)}; "
                f"{len(sh)} of the {len(self.heads)} heads that pass the induction filter are among them"
                f"{': ' + ', '.join(sh) if sh else ''}.")
        if sh:
            att = [self.attention_yy[h] for h in sh]
            text += (f" They put {100 * min(att):.0f}–{100 * max(att):.0f}% of their attention from the final \" 17\" on "
                     "YY: an induction pattern reading the start year. What a head is called depends on the probe.")
        return text


@torch.no_grad()
def greater_than_overlap(model, heads: Sequence[str], n_prompts: int = 32, seed: int = 0) -> Optional[GreaterThanOverlap]:
    """The greater-than circuit of ``model`` (notebook 01's path-patching search on the first ``n_prompts`` of its 200
    prompts) and
    each head's attention from END to YY there, for ``heads`` and the circuit's heads. ``None`` when the model's
    tokenizer cannot build the task (years not split as GPT-2 splits them)."""
    from ..tasks import TaskNotBuildable
    from .comparing import notebook01_search_task, path_patching_circuit

    try:  # notebook 01's prompts: 200 drawn with the seed, the search on the first n_prompts
        task = notebook01_search_task(model, n_prompts, seed=seed)
    except (TaskNotBuildable, ValueError):
        return None
    nodes, how = path_patching_circuit(model, task)
    circuit = sorted((c for c in nodes if c.startswith("a")), key=lambda n: (parse(n).layer, parse(n).head))
    names = {f"blocks.{l}.attn.hook_pattern" for l in range(model.cfg.n_layers)}
    _, cache = model.run_with_cache(task.clean.to(next(model.parameters()).device), names_filter=lambda n: n in names)
    rows = torch.arange(task.clean.shape[0])
    end, yy = task.positions["END"], task.positions["YY"]
    att = {}
    for h in dict.fromkeys(list(heads) + circuit):
        c = parse(h)
        att[h] = float(cache[f"blocks.{c.layer}.attn.hook_pattern"][rows, c.head, end, yy].float().mean())
    return GreaterThanOverlap(list(heads), circuit, att, int(task.clean.shape[0]), how)
