"""The figures the documentation quotes, recorded by the runs that measure them, never typed in.

A notebook calls :func:`record` with the numbers the zoo page (``docs/zoo.md``) repeats (notebook 02's reuse and
necessity, notebook 03's induction filter and ablation); the README's test command records each notebook's wall time
with :func:`record_time` (``tests/conftest.py``). With ``TUTORIAL_RECORD`` naming a folder (the test command sets
it), each call writes into ``<folder>/<notebook>.json`` or ``<folder>/times.json``. :func:`render` turns one block's
figures into its markdown (``"times"``: the README's course table), and :func:`update_readme` writes that between a
file's markers ``<!-- figures:NN -->`` and ``<!-- /figures:NN -->``. ``scripts/readme_figures.py`` rewrites the
blocks; tests after the notebook run fail when a block no longer says what the run measured.

>>> render("02", {"model": "m", "n": 4, "k": 0.1, "p": 95, "tasks": {}})[:24]
'On `m` (4 prompts per tas'
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional

RECORD_ENV = "TUTORIAL_RECORD"
FIGURES: dict = {}  # notebook -> {name: value}, this process's records


def record(notebook: str, **figures) -> dict:
    """Keep ``figures`` for ``notebook`` (``"02"``, ``"03"``); with ``TUTORIAL_RECORD`` set, also write them."""
    if notebook not in RENDERERS:
        raise ValueError(f"unknown notebook {notebook!r}; accepted: {sorted(RENDERERS)}")
    FIGURES.setdefault(notebook, {}).update(json.loads(json.dumps(figures)))  # plain JSON values only
    folder = os.environ.get(RECORD_ENV)
    if folder:
        path = Path(folder) / f"{notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**old, **FIGURES[notebook]}, indent=1, sort_keys=True))
    return FIGURES[notebook]


def _update_record(name: str, update) -> None:
    """With ``TUTORIAL_RECORD`` set, read ``<folder>/<name>``, apply ``update(dict)`` to it and write it back."""
    folder = os.environ.get(RECORD_ENV)
    if not folder:
        return
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.exists() else {}
    update(old)
    path.write_text(json.dumps(old, indent=1, sort_keys=True))


def record_time(notebook: str, seconds: float, run: str = "zoo", model: Optional[str] = None) -> None:
    """With ``TUTORIAL_RECORD`` set, add one notebook's wall time on ``run`` (``"zoo"``: the README's test command
    on the offline default; ``"gpt2"``: ``benchmarks/notebooks_gpt2.py``) to ``<folder>/times.json``."""
    def update(old: dict) -> None:
        old.setdefault(run, {})[notebook] = round(float(seconds))
        if model:
            old.setdefault("models", {})[run] = model
    _update_record("times.json", update)


SLOW_CELL_S = 20  #: a cell that keeps a learner waiting longer is listed in the README's course table


def record_slow_cells(notebook: str, cells: list, run: str = "zoo") -> None:
    """With ``TUTORIAL_RECORD`` set, keep one notebook's cells over :data:`SLOW_CELL_S` seconds on ``run``, each
    ``(section, seconds)`` (the section: its ``##`` header's number or title), replacing that notebook's earlier list."""
    rows = [[str(sec), round(float(t))] for sec, t in cells if t > SLOW_CELL_S]
    _update_record("times.json", lambda old: old.setdefault("slow", {}).setdefault(run, {}).__setitem__(notebook, rows))


def record_claims(notebook: str, counts: dict, outcomes: list, model: Optional[str] = None) -> None:
    """With ``TUTORIAL_RECORD`` set, keep one notebook's claim outcomes (:func:`tutorial_lib.course.claims.summary`)
    in ``<folder>/claims.json``, under the name of the ``model`` they were measured on: ``{model: {notebook: {"counts",
    "claims"}}}`` (the zoo run and the GPT-2-shaped run of the test command each keep their own)."""
    entry = {"counts": dict(counts), "claims": dict(outcomes)}
    FIGURES.setdefault("claims", {}).setdefault(model or "unknown", {})[notebook] = entry
    _update_record("claims.json", lambda old: old.setdefault(model or "unknown", {}).__setitem__(notebook, entry))


ANSWER_KEYS = "the answer keys"  # notebook 05's claims are about models built by hand, whatever model is loaded


def claims_for(figures: dict, model: str) -> dict:
    """The part of a claims record measured on ``model``, and notebook 05's on the answer keys (what the README's
    claims block shows)."""
    return {m: figures[m] for m in (model, ANSWER_KEYS) if m in figures}


def _render_claims(f: dict) -> str:
    lines = []
    for model, notebooks in sorted(f.items(), key=lambda kv: (kv[0] == ANSWER_KEYS, kv[0])):
        lines += ([""] if lines else []) + [f"On `{model}`, from the README's test command:", "",
                  "| notebook | holds | fails | not testable |", "| --- | --- | --- | --- |"]
        for nb in sorted(notebooks):
            c = notebooks[nb]["counts"]
            lines.append(f"| {nb} | {c['holds']} | {c['fails']} | {c['not testable']} |")
    return "\n".join(lines)


def _p(x: float) -> str:
    return f"{x:.2g}" if x >= 0.001 else f"{x:.1e}"


def _render_02(f: dict) -> str:
    setting = f" ({f['setting']})" if f.get("setting") else ""
    lines = [f"On `{f['model']}` ({f['n']} prompts per task, K = {f['k']:.0%}, P = {f['p']}{setting}, zero ablation, "
             f"{f.get('seeds', 5)} control seeds):", "",
             "| task | clean accuracy | reuse@P | random reuse@P | S_P | S_P's drop | control's drop | control | p |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, t in f["tasks"].items():
        lines.append(f"| {name} | {t['clean']:.2f} | {t['reuse']:.2f} | {t['random_reuse']:.2f} | "
                     f"{', '.join(t['shared']) or '(empty)'} | {t['drop']:.2f} | {t['control_drop']:.2f} | "
                     f"{t['control']} | {_p(t['p'])} |")
    if f.get("modes"):
        lines += ["", "Necessity (excess > 0, p < 0.05) holds under each ablation mode on: "
                  + "; ".join(f"{m}: {len(v)} of {f['n_performed']} performed tasks" for m, v in f["modes"].items()) + "."]
    return "\n".join(lines)


def _render_03(f: dict) -> str:
    lines = [f"On `{f['model']}` ({f['probe']} planted-pair probe sequences, section 8): the {f['threshold']:g}× "
             f"induction filter (random-position baseline) selects {len(f['heads'])} of {f['n_heads']} heads "
             f"({', '.join(f['heads'])}; best {f['best']:.0f}×; attention on the target {f['attention_min']:.0%}-"
             f"{f['attention_max']:.0%}); on the uniform 1/T baseline {f['uniform_pass']} pass. BOS heads: "
             f"{', '.join(f['bos_heads']) or 'none'}."]
    if f.get("top1_clean") is not None:
        lines.append(f"Ablating the {f['tested']} tested heads takes planted-pair top-1 from {f['top1_clean']:.1%} to "
                     f"{f['top1_candidate']:.1%}, against {f['top1_control']:.1%} for layer-matched random heads "
                     f"(p = {_p(f['p'])}).")
    if f.get("greater_than_circuit") is not None:
        lines.append(f"{len(f['greater_than_shared'])} of the {len(f['heads'])} filtered heads are also heads of notebook "
                     f"01's greater-than circuit ({', '.join(f['greater_than_circuit']) or 'no head'}; its search on "
                     f"{f.get('greater_than_prompts', '?')} prompts), where they attend from the final \" 17\" to the "
                     "token after the earlier one.")
    if f.get("pr_ranks"):
        lines.append(f"Step 1 over its {f['n_checkpoints']} checkpoints: the PR integral ranks "
                     + ", ".join(f"{h} {k}" for h, k in f["pr_ranks"].items()) + f" of {f['n_heads']} (first: "
                     f"{f['pr_first']}).")
    return " ".join(lines)


# The course table: each notebook's file, and what it has the learner do (no finding, no prediction), and what it follows.
COURSE = {
    "00": ("00_start_here", "start here", "check the setup, load a model, hooks, caches, the task objects, a first patching "
           "experiment", "—"),
    "01": ("01_greater_than", "greater-than", "find the greater-than circuit by path patching with MLPs, step by step; logit lens, "
           "attention, a probe, sufficiency and necessity", "Hanna, Liu & Variengien 2023"),
    "02": ("02_consistency_specificity", "consistency and specificity", "per-example EAP circuits over five tasks: reuse, necessity against "
           "matched controls, specificity across tasks", "Li & Subramani 2026"),
    "03": ("03_spectral_recipe", "spectral recipe", "participation ratio over training, attention-pattern filters, group ablation "
           "against matched-random controls", "Xu 2026"),
    "04": ("04_comparing_methods", "comparing methods", "one task, four methods (path patching, EAP, EAP-IG, exact node patching), one "
           "yardstick: faithfulness curves against random circuits", "MIB (Mueller et al. 2025); Hanna et al. 2024"),
    "05": ("05_answer_key", "answer key", "models whose circuit is known by construction; score every method by how well it "
           "recovers it (ROC / AUROC) beside faithfulness", "InterpBench; auto-circuit's tracr benchmark"),
}


LOADS_NO_MODEL = {"05"}  # builds its models by hand: the same time on every model


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "not measured"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _render_times(f: dict) -> str:
    models = f.get("models", {})
    slow = f.get("slow", {}).get("zoo", {})
    lines = [f"| notebook | what you do | follows | offline (`{models.get('zoo', 'zoo')}`) | offline cells over "
             f"{SLOW_CELL_S} s | GPT-2 small | GPU, the papers' sizes |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for nb, (stem, title, what, follows) in COURSE.items():
        gpt2, gpu = (("loads no model",) * 2 if nb in LOADS_NO_MODEL else
                     (_duration(f.get("gpt2", {}).get(nb)), _duration(f.get("gpu", {}).get(nb))))
        cells = "; ".join(f"§{sec}: {_duration(t)}" for sec, t in slow[nb]) if slow.get(nb) else (
            "none" if nb in slow else "not measured")
        lines.append(f"| [{nb} {title}](notebooks/{stem}.ipynb) | {what} | {follows} | "
                     f"{_duration(f.get('zoo', {}).get(nb))} | {cells} | {gpt2} | {gpu} |")
    lines.append(f"<!-- times {json.dumps(f, sort_keys=True)} -->")
    return "\n".join(lines)


def times_figures(block: Optional[str]) -> dict:
    """The figures a rendered course table was written from (its last line keeps them), ``{}`` without one."""
    m = re.search(r"<!-- times (\{.*\}) -->", block or "")
    return json.loads(m.group(1)) if m else {}


RENDERERS = {"02": _render_02, "03": _render_03, "times": _render_times, "claims": _render_claims}


def render(notebook: str, figures: dict) -> str:
    """The block for ``notebook`` (``"02"``, ``"03"``, ``"times"``) from its recorded ``figures``."""
    if notebook not in RENDERERS:
        raise ValueError(f"unknown notebook {notebook!r}; accepted: {sorted(RENDERERS)}")
    return RENDERERS[notebook](figures)


def _marker(notebook: str) -> re.Pattern:
    return re.compile(rf"(<!-- figures:{notebook} -->\n)(.*?)(\n<!-- /figures:{notebook} -->)", re.S)


def readme_block(readme: str, notebook: str) -> Optional[str]:
    """The text between ``notebook``'s markers in ``readme`` (any markdown file; None when the markers are missing)."""
    m = _marker(notebook).search(readme)
    return m.group(2) if m else None


def update_readme(readme: str, notebook: str, figures: dict) -> str:
    """``readme`` with ``notebook``'s block replaced by :func:`render` of ``figures``."""
    if readme_block(readme, notebook) is None:
        raise ValueError(f"the README has no <!-- figures:{notebook} --> ... <!-- /figures:{notebook} --> block")
    if notebook == "times":  # a run times some notebooks (or one model): keep the block's other figures
        old = times_figures(readme_block(readme, notebook))
        figures = {k: {**old.get(k, {}), **figures.get(k, {})} for k in {*old, *figures}}
    return _marker(notebook).sub(lambda m: m.group(1) + render(notebook, figures) + m.group(3), readme)
