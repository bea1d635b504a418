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
