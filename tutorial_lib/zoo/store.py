"""Saving and loading zoo models: safetensors weights, a JSON manifest, sha256 checked before loading.

``data/zoo/manifest.json`` lists every shipped model::

    {"models": {"zoo-multitask": {"file": "zoo-multitask.safetensors", "sha256": "...",
                                  "config": {...HookedTransformerConfig fields...},
                                  "tokenizer": "tokenizer", "seed": 0, "steps": 3000,
                                  "metrics": {...held-out metrics measured after training...},
                                  "description": "..."}}}

Nothing is unpickled: weights are safetensors, everything else is JSON. A weight file whose hash does
not match the manifest (truncated download, edited by hand) is refused with :class:`ZooIntegrityError`.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

import torch

from ..core.paths import zoo_dir


class ZooIntegrityError(RuntimeError):
    """A zoo weight file is missing, truncated or does not match the sha256 in the manifest."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_path(directory: Optional[Path] = None) -> Path:
    return Path(directory or zoo_dir()) / "manifest.json"


def read_manifest(directory: Optional[Path] = None) -> dict:
    path = manifest_path(directory)
    if not path.exists():
        return {"models": {}}
    return json.loads(path.read_text())


def zoo_names(directory: Optional[Path] = None) -> list[str]:
    """Names of the zoo models shipped in ``data/zoo`` (empty if none were built yet)."""
    return sorted(read_manifest(directory)["models"])


def _config_dict(cfg) -> dict:
    """The JSON-safe fields of a HookedTransformerConfig needed to rebuild the model."""
    keep = [
        "n_layers", "d_model", "n_ctx", "d_head", "n_heads", "d_mlp", "d_vocab", "d_vocab_out", "act_fn",
        "normalization_type", "attn_only", "positional_embedding_type", "rotary_dim", "original_architecture",
        "seed", "init_weights", "default_prepend_bos", "use_attn_scale", "parallel_attn_mlp",
    ]
    out = {}
    for k in keep:
        v = getattr(cfg, k, None)
        if v is None or isinstance(v, (int, float, str, bool)):
            out[k] = v
    return {k: v for k, v in out.items() if v is not None}


def save_model(model, name: str, meta: dict, directory: Optional[Path] = None,
               tokenizer_dir: Optional[str] = "tokenizer") -> Path:
    """Save ``model``'s weights as ``<name>.safetensors`` and record it (with ``meta``) in the manifest.

    ``tokenizer_dir=None`` records a model trained on bare token ids (the induction models)."""
    from safetensors.torch import save_file

    directory = Path(directory or zoo_dir())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.safetensors"
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))
    path.chmod(0o644)  # safetensors writes 0600; the shipped files are world-readable
    manifest = read_manifest(directory)
    entry = dict(meta)
    entry.update(file=path.name, sha256=sha256_file(path), config=_config_dict(model.cfg), tokenizer=tokenizer_dir)
    manifest["models"][name] = entry
    manifest_path(directory).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def load_model_from_zoo(name: str, device=None, directory: Optional[Path] = None):
    """Build the zoo model ``name`` from its manifest entry and load its checked weights."""
    from safetensors.torch import load_file
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from ..tasks.word_tokenizer import load as load_tokenizer  # lazy, as the heavy libraries above

    directory = Path(directory or zoo_dir())
    manifest = read_manifest(directory)["models"]
    if name not in manifest:
        raise ValueError(f"unknown zoo model {name!r}; the zoo has: {sorted(manifest) or 'nothing yet'}")
    entry = manifest[name]
    path = directory / entry["file"]
    if not path.exists():
        raise ZooIntegrityError(f"zoo weights {path} are missing; rebuild them with `python -m tutorial_lib.zoo build`")
    got = sha256_file(path)
    if got != entry["sha256"]:
        raise ZooIntegrityError(
            f"zoo weights {path} do not match the manifest (sha256 {got[:12]}… expected {entry['sha256'][:12]}…): "
            "the file is corrupted or truncated. Restore it with `git checkout -- data/zoo` or rebuild it with "
            "`python -m tutorial_lib.zoo build`"
        )
    tok_dir = entry.get("tokenizer", "tokenizer")
    tokenizer = load_tokenizer(directory / tok_dir) if tok_dir is not None else None
    cfg = HookedTransformerConfig(**entry["config"], device=str(device) if device is not None else "cpu")
    model = HookedTransformer(cfg, tokenizer=tokenizer, move_to_device=False)
    state = load_file(str(path))
    model.load_state_dict(state, strict=False)
    missing = set(model.state_dict()) - set(state)
    real_missing = [k for k in missing if not k.endswith(("IGNORE", "mask", ".W_O_bias"))]
    if real_missing:
        raise ZooIntegrityError(f"zoo weights {path} lack parameters {sorted(real_missing)[:5]}")
    if device is not None:
        model = model.to(device, print_details=False)
    model.eval()
    model.zoo_entry = entry  # the manifest entry, for banners and checks
    return model


# ------------------------------------------------------------------------------------ training checkpoints
def checkpoints_file(name: str) -> str:
    return f"{name}-checkpoints.safetensors"


def save_checkpoints(name: str, checkpoints: dict, tokens_seen: dict, directory: Optional[Path] = None,
                     dtype=torch.float16) -> Path:
    """Save a model's training checkpoints (``{step: state_dict}``) as one safetensors file in ``dtype``
    (keys ``step<S>/<parameter>``), and record the steps, tokens seen and sha256 in its manifest entry
    (the model must be saved first). Buffers that do not change in training (masks, rotary tables) are left out."""
    from safetensors.torch import save_file

    directory = Path(directory or zoo_dir())
    manifest = read_manifest(directory)
    if name not in manifest["models"]:
        raise ValueError(f"save the model {name!r} before its checkpoints; the manifest has {sorted(manifest['models'])}")
    steps = sorted(int(s) for s in checkpoints)
    if not steps:
        raise ValueError("no checkpoints to save")
    flat = {}
    for step in steps:
        for k, v in checkpoints[step].items():
            if k.endswith(("IGNORE", "mask")) or "rotary" in k:
                continue
            flat[f"step{step}/{k}"] = (v.to(dtype) if v.is_floating_point() else v).detach().cpu().contiguous()
    path = directory / checkpoints_file(name)
    save_file(flat, str(path))
    path.chmod(0o644)
    manifest["models"][name]["checkpoints"] = {
        "file": path.name, "sha256": sha256_file(path), "steps": steps, "dtype": str(dtype).replace("torch.", ""),
        "tokens_seen": [int(tokens_seen[s]) for s in steps]}
    manifest_path(directory).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def has_checkpoints(name: str, directory: Optional[Path] = None) -> bool:
    return "checkpoints" in read_manifest(directory)["models"].get(name, {})


def load_checkpoints(name: str, directory: Optional[Path] = None) -> list[tuple[int, int, dict]]:
    """The shipped training checkpoints of zoo model ``name``: ``[(step, tokens_seen, state_dict), ...]`` in
    float32 (sha256 checked; the state dicts lack the unchanging buffers: load them with ``strict=False``)."""
    from safetensors.torch import load_file

    directory = Path(directory or zoo_dir())
    entry = read_manifest(directory)["models"].get(name)
    if entry is None:
        raise ValueError(f"unknown zoo model {name!r}; the zoo has: {zoo_names(directory) or 'nothing yet'}")
    info = entry.get("checkpoints")
    if info is None:
        with_ckpt = [n for n in zoo_names(directory) if has_checkpoints(n, directory)]
        raise ValueError(f"zoo model {name!r} ships no training checkpoints; models with checkpoints: {with_ckpt or 'none'}")
    path = directory / info["file"]
    if not path.exists() or sha256_file(path) != info["sha256"]:
        raise ZooIntegrityError(f"checkpoint file {path} is missing or does not match the manifest; restore it with "
                                "`git checkout -- data/zoo` or rebuild the model")
    flat = load_file(str(path))
    out = []
    for step, seen in zip(info["steps"], info["tokens_seen"]):
        pre = f"step{step}/"
        out.append((step, seen, {k[len(pre):]: v.float() for k, v in flat.items() if k.startswith(pre)}))
    return out
