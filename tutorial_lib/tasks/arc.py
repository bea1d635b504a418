"""ARC Easy and ARC Challenge (Clark et al. 2018; ``allenai/ai2_arc`` on the Hugging Face hub), the knowledge
tasks of Li & Subramani 2026, as multiple choice scored on the answer letter::

    Question: Which of these is a source of light?
    A. the Moon
    B. a mirror
    C. the Sun
    D. a window
    Answer:                                   -> " C"

* Data: the dataset's own parquet files (``ARC-Easy/test-00000-of-00001.parquet`` ...; columns ``id``,
  ``question``, ``choices`` = ``{"text": [...], "label": [...]}``, ``answerKey``), downloaded with
  ``huggingface_hub`` once and then read from its cache (CC BY-SA 4.0). ``HF_ENDPOINT`` (a mirror) is honoured.
  Offline, with nothing cached, :func:`make_arc` raises :class:`~tutorial_lib.tasks.base.TaskNotBuildable`
  saying so (notebook 02 then skips ARC and prints why).
* Questions with exactly four choices are kept (labels ``A``-``D`` or ``1``-``4``, written as A-D; the few with 3
  or 5 choices are counted in ``dropped``); ``n`` of them are drawn with ``seed`` (the same seed, the same subset).
* Corruption, as CopyColors' (and MIB's ARC counterfactual, which the paper's code uses): the same four options
  with the correct one swapped to another letter. The prompts are tokenized whole (ARC's text is free text; the
  word-piece assembly of the generated tasks does not apply); a question whose corrupted prompt tokenizes to a
  different length is dropped and counted.
* Metric: the correct letter's logit minus the mean of the other three letters; accuracy: the correct letter beats
  the other three (as :class:`~tutorial_lib.tasks.multiple_choice.MultipleChoiceData`). Answers are `` A``..`` D``
  (one token in GPT-2, Llama 3, Qwen3 and Gemma).
* BOS as in the other tasks (:func:`~tutorial_lib.tasks.tokenizers.bos_id`); no chat template (the paper used plain
  prompts for the -IT / -Instruct models too).

>>> task = make_arc("gpt2", n=64, name="arc_easy", seed=0)     # doctest: +SKIP
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch

from .base import TaskNotBuildable
from .multiple_choice import LETTERS, MultipleChoiceData
from .tokenizers import bos_id, bos_text, check_n, get_tokenizer, pad_id, pad_right, single_ids, pieces_for

REPO = "allenai/ai2_arc"
#: task name -> the dataset's config (folder)
CONFIGS = {"arc_easy": "ARC-Easy", "arc_challenge": "ARC-Challenge"}
SPLITS = ("train", "validation", "test")


def arc_file(name: str, split: str = "test") -> str:
    """The file of ``name``'s ``split`` inside the dataset repo."""
    if name not in CONFIGS:
        raise ValueError(f"unknown ARC task {name!r}; accepted: {sorted(CONFIGS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown ARC split {split!r}; accepted: {SPLITS}")
    return f"{CONFIGS[name]}/{split}-00000-of-00001.parquet"


def arc_cached(name: str, split: str = "test") -> str | None:
    """The cached parquet file of ``name`` / ``split``, or None (no network)."""
    from huggingface_hub import try_to_load_from_cache

    got = try_to_load_from_cache(REPO, arc_file(name, split), repo_type="dataset")
    return got if isinstance(got, str) else None


def download_arc(name: str, split: str = "test", download: bool = True) -> Path:
    """Path of the parquet file: from the cache, else (``download=True``) from the hub; raises
    :class:`TaskNotBuildable` with the reason when neither works."""
    cached = arc_cached(name, split)
    if cached:
        return Path(cached)
    where = f"{REPO} ({arc_file(name, split)})"
    if not download:
        raise TaskNotBuildable(f"{CONFIGS[name]} is not in the local cache and downloading was not asked for; it comes "
                               f"from the Hugging Face hub, {where}")
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "0") not in ("", "0"):
        raise TaskNotBuildable(f"{CONFIGS[name]} comes from the Hugging Face hub ({where}), and offline mode was asked "
                               "for (HF_HUB_OFFLINE) with nothing cached")
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(REPO, arc_file(name, split), repo_type="dataset", etag_timeout=10))
    except Exception as err:  # no network, a mirror without it, a proxy refusing: one reason, no traceback
        raise TaskNotBuildable(f"{CONFIGS[name]} could not be downloaded from the Hugging Face hub ({where}): "
                               f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}") from None


@functools.lru_cache(maxsize=8)
def _rows(path: str) -> tuple:
    import pyarrow.parquet as pq

    return tuple(pq.read_table(path).to_pylist())


def arc_questions(name: str = "arc_easy", split: str = "test", download: bool = True) -> tuple[list[dict], dict]:
    """The four-choice questions of ``name`` / ``split`` as ``{"id", "question", "options", "answer"}`` (answer:
    0-3), and the drop counts."""
    rows = _rows(str(download_arc(name, split, download)))
    out, dropped = [], {}
    for r in rows:
        labels, texts = list(r["choices"]["label"]), list(r["choices"]["text"])
        if len(labels) != 4 or r["answerKey"] not in labels:
            key = "not exactly four choices" if len(labels) != 4 else "answer key not among the labels"
            dropped[key] = dropped.get(key, 0) + 1
            continue
        out.append({"id": r["id"], "question": " ".join(r["question"].split()),
                    "options": [" ".join(t.split()) for t in texts], "answer": labels.index(r["answerKey"])})
    return out, dropped


def _prompt(question: str, options: list[str]) -> str:
    lines = [f" Question: {question}"] + [f"{L}. {o}" for L, o in zip(LETTERS, options)] + ["Answer:"]
    return "\n".join(lines)


def make_arc(tokenizer="gpt2", n: int = 100, seed: int = 0, split: str = "test", name: str = "arc_easy",
             download: bool = True) -> MultipleChoiceData:
    """``n`` seeded ARC questions (``name``: ``"arc_easy"`` or ``"arc_challenge"``) with moved-answer corruptions."""
    tokenizer = get_tokenizer(tokenizer)
    questions, dropped = arc_questions(name, split, download)
    n = check_n(n)
    p = pieces_for(tokenizer)
    letters = single_ids(p, [" " + L for L in LETTERS], "ARC answer letter")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(questions)).tolist()
    bos = [] if bos_id(tokenizer) is None else [bos_id(tokenizer)]
    clean, corrupt, prompts, cprompts, answers, wrong, info = [], [], [], [], [], [], []
    for i in order:
        if len(clean) == n:
            break
        q = questions[i]
        k = q["answer"]
        k2 = (k + int(rng.integers(1, 4))) % 4
        swapped = list(q["options"])
        swapped[k], swapped[k2] = swapped[k2], swapped[k]
        a, b = _prompt(q["question"], q["options"]), _prompt(q["question"], swapped)
        ta = bos + tokenizer(a, add_special_tokens=False)["input_ids"]
        tb = bos + tokenizer(b, add_special_tokens=False)["input_ids"]
        unknown = p.unk is not None and p.unk in ta[len(bos):]
        if len(ta) != len(tb) or unknown:
            key = "unknown words" if unknown else "corrupted prompt of another token length"
            dropped[key] = dropped.get(key, 0) + 1
            continue
        clean.append(ta)
        corrupt.append(tb)
        prompts.append(bos_text(tokenizer) + a)
        cprompts.append(bos_text(tokenizer) + b)
        answers.append(letters[k])
        wrong.append([letters[j] for j in range(4) if j != k])
        info.append({"id": q["id"], "options": q["options"], "letter": LETTERS[k], "corrupt_letter": LETTERS[k2]})
    if len(clean) < n:
        raise TaskNotBuildable(f"{CONFIGS[name]} {split} has {len(clean)} usable questions on this tokenizer, fewer "
                               f"than n={n} (dropped: {dropped})")
    clean_t, end = pad_right(clean, pad_id(tokenizer))
    corrupt_t, _ = pad_right(corrupt, pad_id(tokenizer))
    return MultipleChoiceData(
        name=CONFIGS[name], prompts=prompts, corrupt_prompts=cprompts, clean=clean_t, corrupt=corrupt_t, end_pos=end,
        answers=torch.tensor(answers), wrong=torch.tensor(wrong), positions={"END": end.clone()}, info=info,
        dropped=dropped)


def make_arc_easy(tokenizer="gpt2", n: int = 100, seed: int = 0, split: str = "test", **options) -> MultipleChoiceData:
    """:func:`make_arc` on ARC-Easy."""
    return make_arc(tokenizer, n, seed, split, name="arc_easy", **options)


def make_arc_challenge(tokenizer="gpt2", n: int = 100, seed: int = 0, split: str = "test", **options) -> MultipleChoiceData:
    """:func:`make_arc` on ARC-Challenge."""
    return make_arc(tokenizer, n, seed, split, name="arc_challenge", **options)
