"""Load a model: GPT-2 / Pythia from the Hugging Face hub when it can be reached, the offline zoo always.

>>> model = load_model("auto")          # doctest: +SKIP
>>> model = load_model("zoo-multitask")  # doctest: +SKIP
>>> model = load_model("pythia-70m", checkpoint_index=40)  # doctest: +SKIP  (needs the hub)

``"auto"`` tries GPT-2 small when the hub answers (huggingface.co, or the mirror named by ``HF_ENDPOINT``,
through any proxy the environment names) or GPT-2 is already in the local Hugging Face cache, and otherwise
loads the default zoo model, printing a banner that says which model was loaded and why. Offline, the
check takes at most ~3.5 seconds, even against a hub that accepts the connection and never answers.
"""
from __future__ import annotations

import contextlib
import os
import threading
import warnings
from typing import Optional

from ..core.device import get_device
from . import store

DEFAULT_ZOO_MODEL = "zoo-multitask-medium"
FALLBACK_ZOO_MODELS = ("zoo-multitask",)  # used by "auto" when the default is not shipped
HUB_FAMILIES = ("gpt2", "pythia")
HUB_EXAMPLES = ["gpt2", "gpt2-small", "gpt2-medium", "pythia-70m", "pythia-160m", "pythia-410m"]


def hub_endpoint() -> str:
    """The hub address the loaders will use: ``HF_ENDPOINT`` (a mirror, or a test hub) or huggingface.co."""
    from huggingface_hub import constants

    return constants.ENDPOINT  # read from HF_ENDPOINT when huggingface_hub is imported, as the loaders do


def hub_offline_requested() -> bool:
    """True when the caller asked for offline mode (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE", ""), os.environ.get("TRANSFORMERS_OFFLINE", ""))
    return bool(constants.HF_HUB_OFFLINE) or any(f.strip().lower() in ("1", "true", "yes", "on") for f in flags)


def hub_status(timeout: float = 3.0, repo: str = "gpt2") -> tuple[bool, str]:
    """Ask the hub for ``/api/models/{repo}`` and say whether it answered, and if not, why.

    The request goes through ``huggingface_hub``'s own HTTP client, so it honours ``HF_ENDPOINT`` (a
    mirror) and the proxy variables (``HTTPS_PROXY`` ...) exactly as the download will. It runs in a
    daemon thread joined with ``timeout``: a hub that accepts the connection and then never answers costs
    ``timeout`` seconds, not a hang. Returns ``(True, endpoint)`` or ``(False, reason)``.
    """
    if hub_offline_requested():
        return False, "offline mode was asked for (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
    endpoint = hub_endpoint().rstrip("/")
    url = f"{endpoint}/api/models/{repo}"
    result: dict = {}

    def probe():
        try:
            from huggingface_hub.utils import get_session

            response = get_session().get(url, timeout=timeout, follow_redirects=True)
            result["status"] = response.status_code
        except Exception as err:  # DNS failure, refused, proxy error, timeout
            result["timeout" if "Timeout" in type(err).__name__ else "error"] = f"{type(err).__name__}: {str(err)[:80]}"

    t = threading.Thread(target=probe, daemon=True, name="tutorial_lib-hub-probe")
    t.start()
    t.join(timeout + 0.5)
    if t.is_alive() or "timeout" in result:
        return False, f"the hub at {endpoint} did not answer within {timeout:g} s"
    if "error" in result:
        return False, f"the hub at {endpoint} cannot be reached ({result['error']})"
    status = result["status"]
    if 200 <= status < 300:
        return True, endpoint
    return False, f"the hub at {endpoint} answered HTTP {status} for {url}"


def hub_reachable(timeout: float = 3.0) -> bool:
    """True if the hub (``HF_ENDPOINT`` or huggingface.co, through any proxy) answers within ``timeout``."""
    return hub_status(timeout)[0]


def _hub_cached(official_name: str) -> bool:
    """True if the model's config and weights are already in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return all(isinstance(try_to_load_from_cache(official_name, f), str)
                   for f in ("config.json", "model.safetensors"))
    except Exception:
        return False


@contextlib.contextmanager
def _hub_offline():
    """Load from the local cache only, for the duration of the block.

    ``huggingface_hub`` reads ``HF_HUB_OFFLINE`` once at import; its ``is_offline_mode()`` (which
    transformers asks) reads the module attribute, so this flips the attribute -- not ``os.environ`` --
    and restores it afterwards. Without it a cached model takes ~25 s of network retries to load offline.
    """
    from huggingface_hub import constants

    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


def _download_note(official: str, revision: str | None = None) -> str:
    """'gpt2: 498 MB to download into <cache>' (sizes from the hub's file list; best effort)."""
    from huggingface_hub import HfApi, constants

    where = constants.HF_HUB_CACHE
    try:
        info = HfApi(endpoint=hub_endpoint()).model_info(official, revision=revision, files_metadata=True, timeout=5)
        wanted = [s for s in info.siblings or [] if s.rfilename.endswith((".safetensors", ".json", ".txt"))]
        size = sum(s.size or 0 for s in wanted)
        return f"downloading {official} ({size / 1e6:,.0f} MB, first time only) into the Hugging Face cache at {where}"
    except Exception:
        return f"downloading {official} (first time only) into the Hugging Face cache at {where}"


def _official_hub_name(name: str) -> Optional[str]:
    if not any(f in name.lower() for f in HUB_FAMILIES):
        return None
    from transformer_lens.loading_from_pretrained import get_official_model_name

    try:
        return get_official_model_name(name)
    except (ValueError, KeyError):
        return None


def default_zoo_model() -> str:
    """The zoo model ``"auto"`` falls back to: the medium multi-task model, else the small one, else the
    untrained placeholder if no multi-task model has been built yet."""
    from .placeholder import PLACEHOLDER_NAME

    names = store.zoo_names()
    for name in (DEFAULT_ZOO_MODEL, *FALLBACK_ZOO_MODELS):
        if name in names:
            return name
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


def _checkpoint_step(official: str, hub_kwargs: dict) -> Optional[int]:
    """The training step that ``checkpoint_index`` / ``checkpoint_value`` name, or None for the final model."""
    index, value = hub_kwargs.pop("checkpoint_index", None), hub_kwargs.pop("checkpoint_value", None)
    if index is None and value is None:
        return None
    from transformer_lens.loading_from_pretrained import get_checkpoint_labels

    try:
        labels, _ = get_checkpoint_labels(official)
    except ValueError as err:
        raise ValueError(f"{official} has no training checkpoints ({err}); checkpoints exist for Pythia models") from None
    if index is not None:
        if not isinstance(index, int) or not -len(labels) <= index < len(labels):
            raise ValueError(f"checkpoint_index={index!r} is out of range: {official} has {len(labels)} checkpoints "
                             f"(0..{len(labels) - 1}, steps {labels[0]}..{labels[-1]})")
        return labels[index]
    if value not in labels:
        raise ValueError(f"checkpoint_value={value!r} is not one of {official}'s checkpoint steps "
                         f"({labels[0]}, {labels[1]}, ..., {labels[-1]})")
    return value


def _load_hub(official: str, device, offline: bool = False, **hub_kwargs):
    """``HookedTransformer.from_pretrained``, with Pythia checkpoints loaded by their revision.

    TransformerLens 3.9 loads a Pythia checkpoint with ``token=os.environ.get("HF_TOKEN", "")``, and an
    empty token makes the HTTP client reject its own ``Bearer `` header, so every checkpoint load fails
    for a learner without a token. Here the checkpoint's revision (``step{N}``) is loaded with
    transformers and handed to TransformerLens as ``hf_model``; the step is kept in ``cfg.checkpoint_value``.
    """
    from transformer_lens import HookedTransformer

    step = _checkpoint_step(official, hub_kwargs)
    with contextlib.ExitStack() as stack:
        if offline:
            stack.enter_context(_hub_offline())
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        if step is not None:
            from transformers import AutoModelForCausalLM

            hub_kwargs["hf_model"] = AutoModelForCausalLM.from_pretrained(official, revision=f"step{step}")
        model = HookedTransformer.from_pretrained(official, device=str(device), **hub_kwargs)
    if step is not None:
        model.cfg.checkpoint_value = step
    model.eval()
    return model


def _fetch_hub(official: str, device, verbose: bool, **hub_kwargs):
    """Load a hub model: from the hub when it answers (saying what is downloaded and where it is kept),
    from the local cache when it does not. Raises ConnectionError when neither can serve it."""
    online, why = hub_status()
    cached = _hub_cached(official)
    if not online and not cached:
        raise ConnectionError(
            f"cannot load {official!r}: {why}, and the model is not in the local Hugging Face cache. "
            f"Offline, use load_model('auto') or a zoo model ({store.zoo_names()}); online, check the network, "
            "HF_ENDPOINT (a mirror) or HTTPS_PROXY, and unset HF_HUB_OFFLINE.")
    if verbose:
        if not online:
            print(f"[tutorial_lib] {why}; loading {official} from the local cache")
        elif not cached:
            print(f"[tutorial_lib] {_download_note(official)}")
    return _load_hub(official, device, offline=not online, **hub_kwargs)


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
        online, reason = hub_status()
        if online or _hub_cached(official):
            try:
                if verbose and not online:
                    print(f"[tutorial_lib] {reason}; loading GPT-2 from the local cache")
                elif verbose and not _hub_cached(official):
                    print(f"[tutorial_lib] {_download_note(official)}")
                model = _load_hub(official, device, offline=not online)
                if verbose:
                    _banner([f"Loaded GPT-2 small ({official}) on {device}.",
                             "This is the model the papers studied."])
                return model
            except Exception as err:  # hub reachable but loading failed: fall back, say why
                reason = f"loading GPT-2 failed ({type(err).__name__}: {str(err)[:120]})"
        else:
            reason = f"{reason}, and GPT-2 is not in the local cache"
        zoo_name = default_zoo_model()
        model = load_model(zoo_name, device=device, verbose=False)
        if verbose:
            _banner([f"Loaded the offline zoo model {zoo_name!r} on {device}:",
                     f"  {model.cfg.n_layers} layers, {model.cfg.n_heads} heads/layer, d_model {model.cfg.d_model}, "
                     f"vocabulary {model.cfg.d_vocab} words.",
                     f"Why: {reason}."[:160],
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
    model = _fetch_hub(official, device, verbose, **hub_kwargs)
    if verbose:
        step = getattr(model.cfg, "checkpoint_value", None)
        _banner([f"Loaded {official}" + (f" at training step {step}" if step is not None else "")
                 + f" from the Hugging Face hub on {device}."])
    return model
