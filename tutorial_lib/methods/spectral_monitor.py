"""Watch the spectral recipe's signals while a model trains, and cache runs so notebooks do not retrain.

:class:`SpectralMonitor` is a training callback (``callback(step, model, tokens_seen)``, the signature
``tutorial_lib.zoo.train`` calls at its log-spaced checkpoints). At each call it runs the probe once
and records every head's participation ratio and attention-pattern selectivity, then calls its
``on_record(monitor)`` callback if it has one: :class:`tutorial_lib.viz.spectral.LiveTrainingFigure`
redraws a two-panel plot (PR and induction selectivity against tokens seen) in a notebook as training
goes. The monitor itself draws nothing; ``mon.plot()`` returns the static figure.

The cache keeps a run under ``$TUTORIAL_CACHE`` (default ``~/.cache/tutorial_lib``) in
``spectral/<key>/``: ``meta.json`` (written last: a run without it is incomplete and ignored),
``trajectories.safetensors`` and, optionally, one ``ckpt_XXXX.safetensors`` per checkpoint. The key
comes from :func:`run_key` (a hash of the config, seed, checkpoint steps and the *source code* that
produced the run: :func:`source_hash` of the recording modules, plus any the caller names, e.g. the
trainer's), so changing any of them -- an edit of the trainer included -- trains afresh.

>>> key = run_key({"n_layers": 2, "d_model": 64}, seed=0, steps=[0, 10, 100])
>>> key.startswith("run-"), len(key)
(True, 20)
>>> from tutorial_lib.core import minority
>>> run_key({"n_layers": 2}, 0, [0, 10], code=[minority]) != run_key({"n_layers": 2}, 0, [0, 10])
True
>>> mon = SpectralMonitor.load(key, probe) or SpectralMonitor(probe, on_record=LiveTrainingFigure())  # doctest: +SKIP
>>> if not mon.steps:                                                      # doctest: +SKIP
...     result = train(model, batch_fn, steps=3000, checkpoint_steps="log", callbacks=[mon])
...     mon.save(key, checkpoints=result)      # a TrainResult or a list of (step, tokens, state_dict)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional, Sequence

import torch
from safetensors.torch import load_file, save_file

from ..core.components import parse_many
from . import planted_probe, selectivity, spectral
from .selectivity import (PATTERNS, Baseline, PlantedPairProbe, accumulate_attention, baseline_positions,
                          collect_query_activations, ratios)
from .spectral import PR_DEFINITIONS, as_checkpoint_list, head_outputs, prs_from_outputs

_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def cache_dir(root: "str | Path | None" = None) -> Path:
    """The cache root: ``root`` if given, else ``$TUTORIAL_CACHE``, else ``~/.cache/tutorial_lib``."""
    return Path(root or os.environ.get("TUTORIAL_CACHE") or Path.home() / ".cache" / "tutorial_lib")


def source_hash(modules: Sequence["ModuleType | str | Path"]) -> str:
    """SHA-256 (16 hex digits) of the source files of ``modules`` (module objects or file paths), in order."""
    h = hashlib.sha256()
    for m in modules:
        path = Path(m.__file__) if isinstance(m, ModuleType) else Path(m)
        if not path.is_file():
            raise ValueError(f"no source file for {m!r} (looked for {path})")
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


# the modules whose code decides what a monitor records: a cached run made by other code is not reused
RECORDING_CODE = (planted_probe, selectivity, spectral)


def run_key(config: dict, seed: int, steps: Sequence[int], code: Sequence = ()) -> str:
    """A short stable key for a training run: ``"run-"`` + 16 hex digits of a SHA-256.

    It hashes ``config``, ``seed``, ``steps`` and :func:`source_hash` of this module, :data:`RECORDING_CODE`
    and ``code`` (pass the trainer's modules): edit any of those files and the key changes.
    """
    version = source_hash([Path(__file__), *RECORDING_CODE, *code])
    blob = json.dumps({"config": config, "seed": seed, "steps": [int(s) for s in steps], "code": version},
                      sort_keys=True, default=str)
    return "run-" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def _run_path(key: str, root) -> Path:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"run key {key!r} must be letters, digits, '_', '.' or '-' (use run_key())")
    return cache_dir(root) / "spectral" / key


def save_run(key: str, trajectories: dict, meta: Optional[dict] = None, checkpoints=None, root=None) -> Path:
    """Store ``trajectories`` (name → tensor), ``meta`` (JSON-able) and optional checkpoints.

    ``checkpoints`` is a list of ``(step, tokens_seen, state_dict)`` or a trainer result (see
    :func:`tutorial_lib.methods.spectral.as_checkpoint_list`). Returns the run's folder.
    """
    path = _run_path(key, root)
    checkpoints = as_checkpoint_list(checkpoints) if checkpoints is not None else []
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in trajectories.items()}, str(path / "trajectories.safetensors"))
    for i, (step, tokens, sd) in enumerate(checkpoints):
        tensors = {k: v.detach().cpu().clone().contiguous() for k, v in sd.items()}
        save_file(tensors, str(path / f"ckpt_{i:04d}.safetensors"), metadata={"step": str(int(step)), "tokens_seen": str(int(tokens))})
    info = {"meta": meta or {}, "n_checkpoints": len(checkpoints)}
    (path / "meta.json").write_text(json.dumps(info, indent=1, default=str))
    return path


def load_run(key: str, root=None, load_checkpoints: bool = True) -> Optional[dict]:
    """``{"trajectories", "meta", "checkpoints"}`` for a cached run, or ``None`` if there is none."""
    path = _run_path(key, root)
    if not (path / "meta.json").exists():
        return None
    info = json.loads((path / "meta.json").read_text())
    ckpts = []
    if load_checkpoints:
        from safetensors import safe_open

        for i in range(info["n_checkpoints"]):
            f = str(path / f"ckpt_{i:04d}.safetensors")
            with safe_open(f, "pt") as fh:
                md = fh.metadata()
            ckpts.append((int(md["step"]), int(md["tokens_seen"]), load_file(f)))
    return {"trajectories": load_file(str(path / "trajectories.safetensors")), "meta": info["meta"], "checkpoints": ckpts}


class SpectralMonitor:
    """Training callback recording every head's PR and selectivity at each checkpoint.

    Args:
        probe: the :class:`PlantedPairProbe` read at every checkpoint.
        heads: heads to *plot* (all heads are recorded); default: every head.
        on_record: called as ``on_record(monitor)`` after each checkpoint is recorded (e.g. a
            :class:`tutorial_lib.viz.spectral.LiveTrainingFigure`, which draws in a Jupyter kernel).
        definition: PR definition (``"exp_entropy"`` or ``"order2"``).
        patterns, n_baseline, seed, baseline: passed to the selectivity computation (``baseline``: a
            :class:`~tutorial_lib.methods.selectivity.Baseline`, random positions by default).
        plot_pattern: which selectivity the right-hand panel shows.

    After training: ``mon.steps``, ``mon.tokens_seen`` (lists), ``mon.pr`` (``[n_ckpt, L, H]``),
    ``mon.sel[pattern]`` (``[n_ckpt, L, H]``).
    """

    def __init__(self, probe: PlantedPairProbe, heads: Optional[Sequence[str]] = None,
                 on_record: Optional[Callable[["SpectralMonitor"], None]] = None,
                 definition: str = "exp_entropy", patterns: Sequence[str] = PATTERNS, n_baseline: int = 50,
                 seed: int = 0, batch_size: int = 64, plot_pattern: str = "induction",
                 baseline: "str | Baseline" = Baseline.RANDOM_POSITIONS):
        if not isinstance(probe, PlantedPairProbe):
            raise ValueError(f"probe must be a PlantedPairProbe, got {type(probe).__name__}")
        if definition not in PR_DEFINITIONS:
            raise ValueError(f"unknown PR definition {definition!r}; accepted: {PR_DEFINITIONS}")
        if plot_pattern not in patterns:
            raise ValueError(f"plot_pattern {plot_pattern!r} is not among the recorded patterns {tuple(patterns)}")
        self.probe, self.definition, self.patterns = probe, definition, tuple(patterns)
        self.n_baseline, self.seed, self.batch_size, self.plot_pattern = n_baseline, seed, batch_size, plot_pattern
        self.baseline = Baseline.parse(baseline)
        self.heads = None if heads is None else [str(c) for c in parse_many(list(heads))]
        self.on_record = on_record
        self.steps: list[int] = []
        self.tokens_seen: list[int] = []
        self._pr: list[torch.Tensor] = []
        self._sel: dict[str, list[torch.Tensor]] = {p: [] for p in self.patterns}
        self._base_pos = baseline_positions(probe, n_baseline, seed)

    # ------------------------------------------------------------------ the callback
    def __call__(self, step: int, model, tokens_seen: int) -> None:
        was_training = model.training
        model.eval()
        try:
            zs, sums = [], {}

            def on_chunk(rows, z, rows_p):
                zs.append(z)
                accumulate_attention(sums, rows_p, self.probe.subset(rows), self._base_pos[rows], self.patterns)

            collect_query_activations(model, self.probe.tokens, self.probe.query_pos, on_chunk, batch_size=self.batch_size)
            pr = prs_from_outputs(head_outputs(model, torch.cat(zs)).cpu(), self.definition)
        finally:
            model.train(was_training)
        att = {k: (v / self.probe.n).float().cpu() for k, v in sums.items()}
        self.steps.append(int(step))
        self.tokens_seen.append(int(tokens_seen))
        self._pr.append(pr)
        for p, v in ratios(att, self.baseline, self.probe.seq_len, self.patterns).items():
            self._sel[p].append(v)
        if self.on_record is not None:
            self.on_record(self)

    @property
    def pr(self) -> torch.Tensor:
        return torch.stack(self._pr) if self._pr else torch.empty(0)

    @property
    def sel(self) -> dict[str, torch.Tensor]:
        return {p: torch.stack(v) for p, v in self._sel.items() if v}

    def plotted_heads(self) -> list[str]:
        """The heads a figure of this monitor shows: ``heads`` if given, else every head."""
        if self.heads is not None:
            return self.heads
        L, H = self.pr.shape[1:]
        return [f"a{l}.h{h}" for l in range(L) for h in range(H)]

    def plot(self):
        """A static plotly figure of the trajectories so far (:func:`tutorial_lib.viz.spectral.monitor_figure`)."""
        from ..viz.spectral import monitor_figure

        return monitor_figure(self)

    # ------------------------------------------------------------------ cache
    def trajectories(self) -> dict[str, torch.Tensor]:
        """Everything recorded, as tensors: ``steps``, ``tokens_seen``, ``pr``, ``sel/<pattern>``."""
        out = {"steps": torch.tensor(self.steps, dtype=torch.long), "tokens_seen": torch.tensor(self.tokens_seen, dtype=torch.long),
               "pr": self.pr}
        out.update({f"sel/{p}": v for p, v in self.sel.items()})
        return out

    def save(self, key: str, checkpoints=None, root=None, meta: Optional[dict] = None) -> Path:
        """Cache the trajectories (and optionally the checkpoints) under ``key``."""
        if not self.steps:
            raise ValueError("nothing recorded yet: call the monitor at least once before saving")
        info = {"definition": self.definition, "patterns": list(self.patterns), "n_baseline": self.n_baseline,
                "baseline": self.baseline.value,
                "seed": self.seed, "probe_shape": list(self.probe.tokens.shape), **(meta or {})}
        return save_run(key, self.trajectories(), info, checkpoints, root)

    @classmethod
    def load(cls, key: str, probe: PlantedPairProbe, root=None, **kwargs) -> Optional["SpectralMonitor"]:
        """A monitor filled from the cache (``None`` if ``key`` is not cached). Checkpoints: :func:`load_run`."""
        run = load_run(key, root, load_checkpoints=False)
        if run is None:
            return None
        meta, tr = run["meta"], run["trajectories"]
        if list(meta.get("probe_shape", probe.tokens.shape)) != list(probe.tokens.shape):
            raise ValueError(f"run {key!r} was recorded on a probe of shape {meta['probe_shape']}, not {list(probe.tokens.shape)}")
        mon = cls(probe, definition=meta.get("definition", "exp_entropy"),
                  patterns=meta.get("patterns", PATTERNS), n_baseline=meta.get("n_baseline", 50), seed=meta.get("seed", 0),
                  baseline=meta.get("baseline", Baseline.RANDOM_POSITIONS), **kwargs)
        mon.steps, mon.tokens_seen = tr["steps"].tolist(), tr["tokens_seen"].tolist()
        mon._pr = list(tr["pr"])
        mon._sel = {p: list(tr[f"sel/{p}"]) for p in mon.patterns}
        return mon
