"""Load a model: GPT-2 / Pythia from the Hugging Face hub when it can be reached, the offline zoo always.

>>> model = load_model("auto")          # doctest: +SKIP
>>> model = load_model("zoo-multitask")  # doctest: +SKIP
>>> model = load_model("pythia-70m", checkpoint_index=40)  # doctest: +SKIP  (needs the hub)

``"auto"`` tries GPT-2 small when the hub is reachable (or GPT-2 is already in the local Hugging Face
cache) and otherwise loads the default zoo model, printing a banner that says which model was loaded and
why. Offline, the check takes at most ~2 seconds: loading never hangs waiting for the network.
"""
from __future__ import annotations

import os
import socket
import threading
import warnings
from typing import Optional

from .device import get_device
from .zoo import store

DEFAULT_ZOO_MODEL = "zoo-multitask"
HUB_FAMILIES = ("gpt2", "pythia")
HUB_EXAMPLES = ["gpt2", "gpt2-small", "gpt2-medium", "pythia-70m", "pythia-160m", "pythia-410m"]


def hub_reachable(timeout: float = 2.0) -> bool:
    """True if huggingface.co answers on port 443 within ``timeout`` seconds.

    Returns False at once when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set. DNS and the TCP
    connection both run in a daemon thread, so an unresponsive resolver cannot block the caller.
    """
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "0") not in ("", "0"):
        return False
    result = {"ok": False}

    def probe():
        try:
            with socket.create_connection(("huggingface.co", 443), timeout=timeout):
                result["ok"] = True
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return result["ok"]


def _hub_cached(official_name: str) -> bool:
    """True if the model's config is already in the local Hugging Face cache (usable offline)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        got = try_to_load_from_cache(official_name, "config.json")
        return isinstance(got, str)
    except Exception:
        return False


def _official_hub_name(name: str) -> Optional[str]:
    if not any(f in name.lower() for f in HUB_FAMILIES):
        return None
    from transformer_lens.loading_from_pretrained import get_official_model_name

    try:
        return get_official_model_name(name)
    except (ValueError, KeyError):
        return None


def default_zoo_model() -> str:
    """The zoo model ``"auto"`` falls back to: the multi-task model, or the untrained placeholder if the
    multi-task model has not been built yet."""
    from .zoo.placeholder import PLACEHOLDER_NAME

    names = store.zoo_names()
    if DEFAULT_ZOO_MODEL in names:
        return DEFAULT_ZOO_MODEL
    if PLACEHOLDER_NAME in names:
        return PLACEHOLDER_NAME
    raise FileNotFoundError("no zoo model is shipped in data/zoo; run `python -m tutorial_lib.zoo build`")


def valid_names() -> list[str]:
    """Names accepted by :func:`load_model`: ``auto``, the zoo's models, and hub examples."""
    return ["auto"] + store.zoo_names() + HUB_EXAMPLES


def _banner(lines: list[str]) -> None:
    width = max(len(l) for l in lines) + 4
    print("+" + "-" * (width - 2) + "+")
    for l in lines:
        print("| " + l.ljust(width - 4) + " |")
    print("+" + "-" * (width - 2) + "+")


def _load_hub(official: str, device, **kwargs):
    from transformer_lens import HookedTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = HookedTransformer.from_pretrained(official, device=str(device), **kwargs)
    model.eval()
    return model


def load_model(name: str = "auto", device=None, verbose: bool = True, **hub_kwargs):
    """Load a TransformerLens ``HookedTransformer`` by name.

    Args:
        name: ``"auto"`` (GPT-2 small if it can be loaded, else the default zoo model), a zoo name
            (``"zoo-multitask"``, see :func:`valid_names`), or a hub name (``"gpt2"``, ``"gpt2-small"``,
            ``"pythia-160m"`` ...). The environment variable ``TUTORIAL_MODEL`` overrides ``"auto"``.
        device: ``"cuda"``, ``"mps"``, ``"cpu"`` or None (chosen once: cuda, then mps, then cpu).
        verbose: print the banner saying which model was loaded and why.
        **hub_kwargs: passed to ``HookedTransformer.from_pretrained`` for hub models, e.g.
            ``checkpoint_index=`` or ``checkpoint_value=`` for Pythia training checkpoints.

    Raises:
        ValueError: the name is unknown (the message lists valid names).
        ConnectionError: a hub model was asked for explicitly but the hub cannot be reached and the
            model is not in the local cache (fails within seconds; the message says what to do).
        tutorial_lib.zoo.store.ZooIntegrityError: a zoo weight file is corrupted.
    """
    device = get_device(device)
    if not isinstance(name, str):
        raise ValueError(f"model name must be a string, got {name!r}; valid names: {valid_names()}")
    if name == "auto":
        name = os.environ.get("TUTORIAL_MODEL", "auto") or "auto"
    if name == "auto":
        official = _official_hub_name("gpt2")
        online = hub_reachable()
        if online or _hub_cached(official):
            try:
                model = _load_hub(official, device)
                if verbose:
                    _banner([f"Loaded GPT-2 small ({official}) on {device}.",
                             "This is the model the papers studied."])
                return model
            except Exception as err:  # hub reachable but loading failed: fall back, say why
                reason = f"loading GPT-2 failed ({type(err).__name__}: {str(err)[:80]})"
        else:
            reason = "the Hugging Face hub cannot be reached and GPT-2 is not cached locally"
        zoo_name = default_zoo_model()
        model = load_model(zoo_name, device=device, verbose=False)
        if verbose:
            _banner([f"Loaded the offline zoo model {zoo_name!r} on {device}:",
                     f"  {model.cfg.n_layers} layers, {model.cfg.n_heads} heads/layer, d_model {model.cfg.d_model}, "
                     f"vocabulary {model.cfg.d_vocab} words.",
                     f"Why: {reason}.",
                     "Results describe this small model's own circuit, not GPT-2's.",
                     "With internet access, set MODEL_NAME = 'gpt2' to follow the paper exactly."])
        return model
    if name in store.zoo_names():
        model = store.load_model_from_zoo(name, device=device)
        if verbose:
            _banner([f"Loaded zoo model {name!r} on {device} (offline, trained by this package).",
                     model.zoo_entry.get("description", "")])
        return model
    official = _official_hub_name(name)
    if official is None:
        raise ValueError(f"unknown model name {name!r}; valid names: {valid_names()} "
                         "(any GPT-2 or Pythia name that TransformerLens knows also works with the hub)")
    if not hub_reachable() and not _hub_cached(official):
        raise ConnectionError(
            f"cannot load {name!r}: the Hugging Face hub cannot be reached from here and the model is not in the "
            f"local cache. Use load_model('auto') or a zoo model ({store.zoo_names()}) offline, or connect to "
            "the internet (and unset HF_HUB_OFFLINE) to download it."
        )
    model = _load_hub(official, device, **hub_kwargs)
    if verbose:
        _banner([f"Loaded {official} from the Hugging Face hub on {device}."])
    return model
