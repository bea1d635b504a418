"""The spectral recipe on a model loaded by name (notebook 03, section 8): GPT-2 small online, the
medium zoo model offline -- models that learned much more than induction.

Steps 2-3 need only the final weights::

    probe = model_probe(model, n=128)                 # planted pairs in the model's own vocabulary
    found = induction_minority(model, probe)          # selectivity, the 50x filter, the causal test
    found.heads, found.fraction, found.result.causal
    found.table()                                     # both baselines, the attention on B and on BOS, per head

Step 1 needs training checkpoints; the medium zoo model ships 12 (fp16) and :func:`checkpoint_prs` reads
every head's PR at each of them::

    steps, tokens, pr = checkpoint_prs("zoo-multitask-medium", model, probe)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from ..core.components import parse
from ..core.minority import is_minority
from ..methods.head_ablation import VerificationResult, verify_circuit
from ..methods.selectivity import BOS_HEAD_ATTENTION, Baseline, PlantedPairProbe, classify_heads, induction_circuit, selectivity
from ..methods.spectral import head_participation_ratios, loaded_weights
from ..tasks.induction import make_planted_pair_batch
from ..zoo import store
from .spectral import candidate_circuit


def zoo_name(model) -> Optional[str]:
    """The zoo name of a model loaded from the zoo (``None`` for hub models and fresh ones)."""
    entry = getattr(model, "zoo_entry", None)
    return entry["file"].removesuffix(".safetensors") if entry else None


def probe_vocabulary(model) -> Optional[list[int]]:
    """The token ids a planted-pair probe for ``model`` draws from. A zoo model trained on split induction rows
    (``induction_vocab="split"``): its *held-out* tokens, never repeated in training, so that the probe tests
    induction and not a memory of trained repeats (the shipped medium model); the other multi-task zoo models: the
    filler words (a model trained with ``induction_vocab="filler"`` copies nothing else); every ordinary token otherwise
    (``None``: hub models)."""
    if getattr(model, "tokenizer", None) is None:
        raise ValueError("the model has no tokenizer; build a probe from a vocabulary size with "
                         "tutorial_lib.studies.spectral.planted_probe instead")
    if zoo_name(model) is not None:
        from ..zoo.copying import copy_token_sets, trained_copy_vocab
        from ..zoo.multitask import induction_ids

        if trained_copy_vocab(model.zoo_entry.get("mix", {})) == "split":
            return list(copy_token_sets(model).held_out)
        return induction_ids(model.tokenizer, "filler")
    return None


def model_probe(model, n: int = 128, seq_len: int = 48, seed: int = 0) -> PlantedPairProbe:
    """Planted-pair sequences ``BOS r .. A B r .. A`` in ``model``'s own tokens (held-out split), rows whose
    earlier ``A`` sits in the last 6 positions dropped (as :func:`~tutorial_lib.studies.spectral.planted_probe`)."""
    allowed = probe_vocabulary(model)
    if seq_len > model.cfg.n_ctx:
        raise ValueError(f"seq_len={seq_len} is longer than the model's context ({model.cfg.n_ctx} positions)")
    batch = make_planted_pair_batch(model.tokenizer, n, seq_len=seq_len, seed=seed, allowed=allowed)
    return PlantedPairProbe.from_tokens(batch.clean, drop_invalid=True)


@dataclass
class Minority:
    """What steps 2-3 find on one model: every head's selectivity and class, the heads that pass the induction
    filter, and (when some do) the causal test of their group ablation against layer-matched random heads.

    ``sel`` divides by the mean attention on random positions (the public code's baseline, which the 50×
    filter was set for); :meth:`table` and :meth:`passing` show the uniform ``1/T`` baseline beside it. BOS
    heads (most of their attention on position 0) are kept out of ``heads``."""

    sel: dict
    classes: dict
    heads: list          # heads with induction selectivity >= the threshold (BOS heads left out), best first
    tested: list         # the heads ablated in the test (at most half of a layer, so that a control exists)
    n_heads: int
    result: Optional[VerificationResult]
    induction_threshold: float = 50.0

    @property
    def fraction(self) -> float:
        return len(self.heads) / self.n_heads

    @property
    def minority(self) -> bool:
        """The filtered heads are a minority (:func:`~tutorial_lib.core.minority.is_minority`)."""
        return is_minority(len(self.heads), self.n_heads)

    def passing(self, baseline: "str | Baseline") -> list[str]:
        """Every head (BOS heads included) at or above the induction threshold on ``baseline``."""
        return induction_circuit(self.sel.with_baseline(baseline), self.induction_threshold, include_bos_heads=True)

    @property
    def bos_heads(self) -> list[str]:
        """Heads with at least half of their attention on position 0."""
        return self.sel.bos_heads()

    def table(self):
        """A DataFrame, one row per head that passes on either baseline: induction selectivity on random positions
        and on ``1/T``, the attention on ``B`` (the target) and on position 0, BOS head or not, in ``heads`` or not."""
        import pandas as pd

        uni = self.sel.with_baseline(Baseline.UNIFORM)
        names = sorted(set(self.passing(Baseline.RANDOM_POSITIONS)) | set(self.passing(Baseline.UNIFORM)),
                       key=lambda h: -float(self.sel["induction"][parse(h).layer, parse(h).head]))
        rows = []
        for h in names:
            c = parse(h)
            rows.append({"head": h, "× random positions": round(float(self.sel["induction"][c.layer, c.head]), 1),
                         "× 1/T": round(float(uni["induction"][c.layer, c.head]), 2),
                         "attention on B (%)": round(100 * float(self.sel.attention["induction"][c.layer, c.head]), 1),
                         "attention on BOS (%)": round(100 * float(self.sel.bos_attention[c.layer, c.head]), 1),
                         "BOS head": h in self.bos_heads, "in the circuit": h in self.heads})
        return pd.DataFrame(rows, columns=["head", "× random positions", "× 1/T", "attention on B (%)",
                                           "attention on BOS (%)", "BOS head", "in the circuit"]).set_index("head")

    def readme_figures(self, model_name: str, n_probe: int) -> dict:
        """Section 8's figures that the README quotes, as plain values for
        :func:`tutorial_lib.course.record.record` (``record("03", **found.readme_figures(...))``)."""
        at = lambda t, h: float(t[parse(h).layer, parse(h).head])  # noqa: E731
        att = [at(self.sel.attention["induction"], h) for h in self.heads] or [float("nan")]
        out = {"model": model_name, "probe": int(n_probe), "threshold": float(self.induction_threshold),
               "heads": list(self.heads), "n_heads": int(self.n_heads),
               "best": max((at(self.sel["induction"], h) for h in self.heads), default=0.0),
               "attention_min": min(att), "attention_max": max(att),
               "uniform_pass": len(self.passing(Baseline.UNIFORM)), "bos_heads": list(self.bos_heads)}
        r = self.result
        if r is not None:
            out.update(tested=len(self.tested), top1_clean=float(r.baseline["top1"]),
                       top1_candidate=float(r.candidate["top1"]), top1_control=float(r.control_mean()),
                       p=float(r.p_value))
        return out

    def baselines_reading(self) -> str:
        """How many heads pass on each baseline, and how many BOS heads the filter leaves out, in words."""
        rand, uni = self.passing(Baseline.RANDOM_POSITIONS), self.passing(Baseline.UNIFORM)
        bos_pass = [h for h in rand if h in self.bos_heads]
        att = [float(self.sel.attention["induction"][parse(h).layer, parse(h).head]) for h in self.heads]
        return (f"At {self.induction_threshold:g}×, {len(rand)} of {self.n_heads} heads pass on the random-positions "
                f"baseline and {len(uni)} on the uniform 1/T one (whose ceiling is T = {self.sel.seq_len}×); "
                f"{len(self.bos_heads)} BOS head(s) (≥ {100 * BOS_HEAD_ATTENTION:.0f}% on position 0"
                f"{': ' + ', '.join(self.bos_heads) if self.bos_heads else ''}), {len(bos_pass)} of "
                f"them passing{' (left out of the circuit: ' + ', '.join(bos_pass) + ')' if bos_pass else ''}. "
                + (f"The circuit's heads put {100 * min(att):.0f}–{100 * max(att):.0f}% of their attention on B."
                   if att else ""))

    def summary(self) -> str:
        if not self.heads:
            best = float(self.sel["induction"].max())
            return f"no head passes the induction filter (best selectivity {best:.0f}×)"
        out = (f"{len(self.heads)} of {self.n_heads} heads ({100 * self.fraction:.0f}%) pass the induction filter: "
               f"{', '.join(self.heads)}")
        if self.result is not None:
            r = self.result
            which = "all of them" if list(self.tested) == list(self.heads) else ", ".join(self.tested)
            out += (f". Ablating {which}: top-1 on B {100 * r.baseline['top1']:.0f}% → "
                    f"{100 * r.candidate['top1']:.1f}%; layer-matched random heads {100 * r.control_mean():.1f}% "
                    f"({r.n_distinct_controls} distinct draw(s) of {r.n_possible_controls} possible), p = {r.p_value:.2g}")
        return out

    @property
    def n_classed(self) -> int:
        """Heads that take some class (not "unclassified")."""
        return sum(c != "unclassified" for c in self.classes.values())

    def readings(self, class_threshold: float = 30.0) -> list[str]:
        """Notebook 03 section 8's "What you should see", in two paragraphs of at most 120 words (the filter and the
        causal test; the baselines and the classes), every number from this result."""
        if not self.heads:
            return [f"{self.summary()}. Without a head to test there is no step 3; on a model with random weights (the "
                    "course's GPT-2-shaped test model) this is the expected answer.", self.baselines_reading()]
        r = self.result
        first = f"{self.summary()}. "
        if r is not None and r.causal:
            first += "The filtered heads carry induction in a model that does much else."
        else:
            first += "The group ablation does not beat the matched random heads here (see the table above)."
        second = (f"{self.baselines_reading()} Best induction selectivity {float(self.sel['induction'].max()):.0f}×; "
                  f"{self.n_classed} of {self.n_heads} heads take some class at {class_threshold:g}× "
                  f"({100 * self.n_classed / self.n_heads:.0f}% specialised; paper: 17–19%).")
        return [first, second]

    def reading(self, class_threshold: float = 30.0) -> str:
        """:meth:`readings` as one text."""
        return " ".join(self.readings(class_threshold))


def induction_minority(model, probe: PlantedPairProbe, induction_threshold: float = 50.0,
                       class_threshold: float = 30.0, n_control_seeds: int = 5, seed: int = 0,
                       n_permutations: int = 10_000) -> Minority:
    """Step 2 (selectivity, classes, the induction filter) and step 3 (group ablation of the filtered heads
    against ``n_control_seeds`` layer-matched random draws, paired permutation test) on ``model``.

    A layer-matched control needs an unselected head in each of the circuit's layers, so at most half of a
    layer's heads (the most selective) are ablated; ``tested`` names them. Selectivity divides by the mean
    attention on random positions (the public code's baseline); BOS heads are left out of the filter.
    """
    sel = selectivity(model, probe)
    classes = classify_heads(sel, class_threshold, induction_threshold)
    heads = induction_circuit(sel, induction_threshold)
    s = sel["induction"]
    heads = sorted(heads, key=lambda h: -float(s[parse(h).layer, parse(h).head]))
    # the induction heads only, at most half of each layer, best first (the candidate rule of sections 4-7)
    tested = candidate_circuit(sel, model, induction_threshold, prev_threshold=None)
    H = model.cfg.n_heads
    result = (verify_circuit(model, tested, probe, n_control_seeds=n_control_seeds, seed=seed,
                             n_permutations=n_permutations) if tested else None)
    return Minority(sel, classes, heads, tested, model.cfg.n_layers * H, result, induction_threshold)


def checkpoint_prs(name: str, model, probe: PlantedPairProbe, definition: str = "exp_entropy", directory=None
                   ) -> tuple[list[int], list[int], Tensor]:
    """Every head's PR on ``probe`` at each shipped training checkpoint of zoo model ``name``.

    Returns ``(steps, tokens_seen, pr)`` with ``pr`` of shape ``[n_checkpoints, n_layers, n_heads]``. ``model``
    (the same architecture) lends its structure; its own weights are restored afterwards. ``directory``: the
    zoo folder (default ``data/zoo``).
    """
    ckpts = store.load_checkpoints(name, directory)
    prs = []
    for _, _, state in ckpts:
        full = {**model.state_dict(), **state}  # the checkpoints leave out the unchanging buffers
        with loaded_weights(model, full):
            prs.append(head_participation_ratios(model, probe, definition=definition))
    return [c[0] for c in ckpts], [c[1] for c in ckpts], torch.stack(prs)


def induction_count_range(model, probe: PlantedPairProbe, threshold: float = 50.0, n_boot: int = 200, seed: int = 0,
                          level: float = 0.95) -> tuple[int, tuple[float, float]]:
    """How many heads pass the induction filter (selectivity on the random-positions baseline ≥ ``threshold``, BOS
    heads left out, as :func:`~tutorial_lib.methods.selectivity.induction_circuit`), and the ``level`` bootstrap
    interval of that count over the probe's examples (:func:`tutorial_lib.studies.fair.bootstrap_range`): each
    resample recomputes every head's ratio of mean attentions from the resampled rows. One forward pass.

    Returns ``(count on all examples, (low, high))``.
    """
    from .fair import bootstrap_range
    from ..methods.selectivity import BOS_HEAD_ATTENTION, baseline_positions

    from .spectral import query_attention

    att = query_attention(model, probe).double()  # [n, L, H, T]
    rows = torch.arange(probe.n)
    target = att[rows, :, :, probe.a_pos + 1]  # [n, L, H]
    base_pos = baseline_positions(probe)
    base = att.gather(3, base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)).mean(3)
    bos = att[..., 0]

    def count(idx) -> int:
        ratio = target[idx].mean(0) / base[idx].mean(0).clamp(min=1e-8)
        return int(((ratio >= threshold) & (bos[idx].mean(0) < BOS_HEAD_ATTENTION)).sum())

    return count(rows), bootstrap_range(count, probe.n, seed=seed, level=level, n_boot=n_boot)
