"""Rebuild the shipped zoo models: ``python -m tutorial_lib.zoo build [--only NAME]``.

The default multi-task model is trained from scratch with a fixed seed and a fixed number of steps, then
evaluated on held-out data; weights, config, seed, steps, sha256 and the measured metrics go into
``data/zoo/manifest.json``. On one thread (the default) the rebuild reproduces the shipped weights bit for
bit; measured on the 2-core CPU machine: 18.5 min with the other core busy (0.28 s per step), 0.26 s per step
on a quiet machine (15.7 min of steps). ``--threads 2`` took 13 min 49 s in all on a quiet machine and met the
same targets, with different rounding (``benchmarks/zoo_training.py``).
"""
from __future__ import annotations

import time
from dataclasses import asdict
from typing import Optional

import torch

from ..tasks.tokenizers import zoo_tokenizer
from . import store
from .evaluate import evaluate_multitask, evaluation_options, missed_targets
from .induction_models import SHIPPED, build_induction_zoo
from .multitask import MixSpec, MultiTaskCorpus
from .train import train as run_training

MULTITASK_NAME = "zoo-multitask"
MULTITASK_CONFIG = dict(n_layers=2, d_model=128, n_heads=4, d_head=32, d_mlp=512, n_ctx=64, act_fn="gelu",
                        normalization_type="LN", positional_embedding_type="standard")
MULTITASK_TRAIN = dict(steps=3600, lr=3e-3, weight_decay=0.1, warmup=0.03, schedule="cosine", seed=0)


def make_multitask_model(tokenizer, seed: int = 0, **overrides):
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(**{**MULTITASK_CONFIG, **overrides}, d_vocab=len(tokenizer), seed=seed, device="cpu")
    return HookedTransformer(cfg, tokenizer=tokenizer)


def build_multitask(steps: Optional[int] = None, save: bool = True,
                    num_threads: Optional[int] = 1, config: Optional[dict] = None, train: Optional[dict] = None,
                    spec=None, progress: bool = True, directory=None):
    """Train, evaluate and (optionally) save the default multi-task zoo model; returns (model, metrics, result).

    One torch thread by default: a model this small gains ~10% from a second thread on a quiet machine, and
    on one thread the rebuild reproduces the shipped weights bit for bit (the sha256 in the manifest).
    ``directory``: where to save (default ``data/zoo``).
    """
    tcfg = {**MULTITASK_TRAIN, **(train or {})}
    if steps is not None:
        tcfg["steps"] = steps
    tok = zoo_tokenizer()
    spec = spec or MixSpec()
    t0 = time.time()
    corpus = MultiTaskCorpus(tok, spec, seed=tcfg["seed"])
    torch.manual_seed(tcfg["seed"])
    model = make_multitask_model(tok, seed=tcfg["seed"], **(config or {}))
    result = run_training(model, corpus.batch_fn, steps=tcfg["steps"], lr=tcfg["lr"], seed=tcfg["seed"],
                          weight_decay=tcfg["weight_decay"], warmup=tcfg["warmup"], schedule=tcfg["schedule"],
                          num_threads=num_threads, progress=progress, desc="zoo-multitask")
    train_s = time.time() - t0
    model.eval()
    metrics = evaluate_multitask(model, **evaluation_options(asdict(spec)))
    missed = missed_targets(metrics)
    print(f"[zoo] trained {tcfg['steps']} steps in {train_s:.0f}s; held-out metrics: {metrics}")
    if missed:
        print(f"[zoo] targets missed: {missed}")
    if save:
        store.save_model(model, MULTITASK_NAME, directory=directory, meta={
            "description": ("2-layer transformer with MLPs trained on the course's five tasks (greater-than, IOI, addition, "
                            "boolean logic, multiple choice)"),
            "seed": tcfg["seed"], "steps": tcfg["steps"], "train": tcfg, "mix": asdict(spec),
            "train_seconds": round(train_s, 1), "torch_threads": num_threads or torch.get_num_threads(),
            "metrics": metrics, "targets_missed": {k: list(v) for k, v in missed.items()}})
    return model, metrics, result


def build_all(only: Optional[str] = None, steps: Optional[int] = None, threads: int = 1) -> None:
    """Rebuild the shipped models: ``zoo-multitask`` and the induction models (``zoo-induction-*``);
    ``only`` picks one. ``steps`` and ``threads`` apply to the multi-task model."""
    known = [MULTITASK_NAME, *SHIPPED]
    if only is not None and only not in known:
        raise ValueError(f"unknown zoo model {only!r}; the shipped models are: {known}")
    if only in (None, MULTITASK_NAME):
        build_multitask(steps=steps, num_threads=threads)
    if only is None or only in SHIPPED:
        build_induction_zoo(only=only)
