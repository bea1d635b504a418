"""Load a model by name: the papers' models from the Hugging Face hub when it can be reached, the offline zoo always.

>>> model = load_model("auto")                                   # doctest: +SKIP
>>> model = load_model("zoo-multitask")                          # doctest: +SKIP
>>> model = load_model("qwen3-0.6b")                             # doctest: +SKIP  (needs the hub)
>>> model = load_model("pythia-70m", checkpoint_index=40)        # doctest: +SKIP  (a training checkpoint)
>>> model = load_model("olmo-2-1b", checkpoint_step=1000)        # doctest: +SKIP  (stage1-step1000-tokens...)
>>> model = load_model("olmo-1b-0724", checkpoint_tokens=2)      # doctest: +SKIP  (step1000-tokens2B)

``"auto"`` tries GPT-2 small when the hub answers (huggingface.co, or the mirror named by ``HF_ENDPOINT``,
through any proxy the environment names) or GPT-2 is already in the local Hugging Face cache, and otherwise
loads the default zoo model, printing a banner that says which model was loaded and why. Offline, the
check takes at most ~3.5 seconds, even against a hub that accepts the connection and never answers.

A hub name (an official name or a short alias, see :func:`valid_names` and :mod:`.hub_models`) is checked
before anything is downloaded, in this order: the arguments (dtype, revision, checkpoint); the memory it needs
against what is free on the device (:class:`ModelTooLargeError`, with the figures); the hub's answer for the
repo (:class:`~.hub_access.GatedModelError` for a gated model without access, saying what to do; a missing
revision named). The dtype follows the device (bfloat16 on a GPU that computes in it, else float16; float32 on a
CPU; ``dtype=`` overrides) and the banner says it, with the revision for a training checkpoint.

``allenai/OLMo-1B-0724-hf`` (the spectral paper's OLMo-1) is not in TransformerLens 3.9's list, which refuses its
name (:data:`.hub_models.NOT_IN_TRANSFORMERLENS`). The course loads it with transformers (at any revision) and hands
it to TransformerLens under ``allenai/OLMo-1B-hf``'s configuration -- TransformerLens' own OLMo-1B configuration
and weight conversion -- after checking that configuration against the checkpoint's ``config.json`` field by field;
``clip_qkv`` and the context length are the checkpoint's. Where a field differs it refuses, says which, and names
the model TransformerLens does load (``olmo-1b``).
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Optional

import torch

from ..core import device as devices
from ..core.device import get_device
from ..core.view import unembedding_stored_transposed
from . import hub_access, hub_models, store
from .hub_access import (GatedModelError, hub_endpoint, hub_offline_requested, hub_reachable,  # noqa: F401
                         hub_status)

DEFAULT_ZOO_MODEL = "zoo-multitask-medium"
FALLBACK_ZOO_MODELS = ("zoo-multitask",)  # used by "auto" when the default is not shipped


class ModelTooLargeError(MemoryError):
    """A hub model needs more memory than the device has free: refused before the download, with the figures."""


def _hub_cached(official_name: str, revision: Optional[str] = None) -> bool:
    """The model is in the local cache (for a model TransformerLens does not list, also the ``config.json`` of
    the official name it is loaded under, which TransformerLens reads)."""
    if not hub_access.hub_cached(official_name, revision):
        return False
    nearest = hub_models.NOT_IN_TRANSFORMERLENS.get(official_name, (None,))[0]
    return nearest is None or hub_access.config_cached(nearest)


def _official_hub_name(name: str) -> Optional[str]:
    entry = hub_models.find(name)
    return entry.official if entry else None


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
    """Names accepted by :func:`load_model`: ``auto``, the zoo's models, the hub models' short aliases
    (``qwen3-0.6b`` ...) and their official names (``Qwen/Qwen3-0.6B`` ...); :mod:`.hub_models` has their sizes."""
    return ["auto"] + store.zoo_names() + hub_models.hub_names()


def _banner(lines: list[str]) -> None:
    width = max(len(l) for l in lines) + 4
    print("+" + "-" * (width - 2) + "+")
    for l in lines:
        print("| " + l.ljust(width - 4) + " |")
    print("+" + "-" * (width - 2) + "+")


def _checkpoint_step(official: str, hub_kwargs: dict) -> Optional[int]:
    """The Pythia training step that ``checkpoint_index`` / ``checkpoint_value`` name, or None for the final model."""
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


_STEP, _TOKENS = re.compile(r"(?:^|-)step(\d+)(?:-|$)"), re.compile(r"(?:^|-)tokens(\d+)B(?:-|$)")


def _number(pattern, revision: str) -> Optional[int]:
    m = pattern.search(revision)
    return int(m.group(1)) if m else None


def olmo_revision(official: str, revisions: list[str], step: Optional[int] = None,
                  tokens: Optional[int] = None) -> str:
    """The OLMo-2 branch (``stage1-step1000-tokens5B``) with training ``step`` and/or ``tokens`` (billions).

    Stage 1 (pre-training) wins when a later stage reuses the step number; otherwise an ambiguous or missing
    step is an error that lists what exists.
    """
    named = [r for r in revisions if _number(_STEP, r) is not None]
    hits = [r for r in named if (step is None or _number(_STEP, r) == step)
            and (tokens is None or _number(_TOKENS, r) == tokens)]
    if len(hits) > 1 and len([r for r in hits if r.startswith("stage1-")]) == 1:
        hits = [r for r in hits if r.startswith("stage1-")]
    asked = ", ".join(f"{k}={v!r}" for k, v in (("checkpoint_step", step), ("checkpoint_tokens", tokens)) if v is not None)
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise ValueError(f"{asked} matches {len(hits)} revisions of {official}: {hits[:6]}; pass revision= one of them")
    steps = sorted({_number(_STEP, r) for r in named})
    span = f"steps {steps[0]}..{steps[-1]}, e.g. {named[:3]}" if steps else "none is named by step"
    raise ValueError(f"no revision of {official} matches {asked}: it has {len(named)} checkpoint revisions ({span})")


#: the families whose checkpoints are hub branches named by step and tokens (OLMo-2's ``stage1-`` prefix included)
BRANCH_CHECKPOINTS = ("olmo2", "olmo")


def training_checkpoints(name: str) -> list[tuple[int, str]]:
    """``[(step, revision), ...]`` for a model with training checkpoints: Pythia (offline, from TransformerLens'
    list), OLMo-2 or OLMo-1B-0724 (asks the hub for its branches). Raises ValueError for any other model."""
    entry = hub_models.find(name)
    if entry is None or entry.checkpoints is None:
        raise ValueError(f"{name!r} has no training checkpoints; Pythia (pythia-70m ...), OLMo-2 (olmo-2-1b) and "
                         "OLMo-1B-0724 (olmo-1b-0724) have")
    if entry.checkpoints == "pythia":
        from transformer_lens.loading_from_pretrained import get_checkpoint_labels

        return [(step, f"step{step}") for step in get_checkpoint_labels(entry.official)[0]]
    revs = [r for r in hub_access.list_revisions(entry.official) if _number(_STEP, r) is not None]
    return sorted(((_number(_STEP, r), r) for r in revs), key=lambda sr: (not sr[1].startswith("stage1-"), sr))


def _choose_dtype(entry, device, dtype) -> tuple[str, str]:
    """(dtype name, why) for ``entry`` on ``device``."""
    if dtype is not None:
        return hub_models.dtype_name(dtype), "asked for with dtype="
    name = hub_models.dtype_name(devices.default_dtype(device))
    if entry is not None and name == "float16" and entry.family in hub_models.NO_FLOAT16:
        return "float32", "this GPU has no bfloat16, and Gemma 2 overflows in float16"
    why = {"bfloat16": "this GPU computes in it", "float16": "this GPU has no bfloat16",
           "float32": "the CPU's default"}[name]
    return name, why + "; dtype= overrides"


def _check_memory(entry, device, dtype: str) -> None:
    """Refuse ``entry`` before the download if it cannot fit: figures needed against free, and what to do."""
    gib = hub_models.GIB
    on_gpu = device.type == "cuda"
    need = hub_models.requirements(entry, dtype, on_gpu)
    ram = devices.available_ram_bytes()
    gpu = devices.free_memory_bytes(device) if on_gpu else None
    short = []
    if gpu is not None and need["gpu"] * gib > gpu:
        short.append(f"{need['gpu']:.1f} GiB of GPU memory (its weights, {need['weights']:.1f} GiB, plus 20% for "
                     f"activations), but {gpu / gib:.1f} GiB is free on {device}")
    if ram is not None and need["ram"] * gib > ram:
        short.append(f"{need['ram']:.1f} GiB of RAM to load it ({hub_models.LOAD_RAM_FACTOR:g} x the weights: the "
                     "Hugging Face copy, TransformerLens' copy and the conversion's temporaries exist together "
                     f"while loading), but {ram / gib:.1f} GiB is available")
    if not short:
        return

    def fits_here(m) -> bool:
        n = hub_models.requirements(m, dtype, on_gpu)
        return (ram is None or n["ram"] * gib <= ram) and (gpu is None or n["gpu"] * gib <= gpu)

    smaller = [m.alias for m in hub_models.table_rows()
               if m.family == entry.family and m.params < entry.params and fits_here(m)]
    todo = []
    if smaller:
        todo.append(f"a smaller model of the family that fits here: {', '.join(smaller[-3:])}")
    if dtype == "float32":
        todo.append(f"dtype=torch.bfloat16 halves it ({need['ram'] / 2:.1f} GiB to load; slower and less exact on a CPU)")
    if not on_gpu:
        gpu_where = ("a free Colab T4 holds it" if hub_models.fits(entry, hub_models.FREE_T4) else
                     f"it needs a GPU of {hub_models.smallest_gpu(entry) or '> 80'} GB in bfloat16")
        todo.append(f"a GPU ({gpu_where})")
    todo.append("free memory (close other notebooks, restart the kernel), or check_memory=False to try anyway")
    raise ModelTooLargeError(
        f"not loading {entry.official} ({entry.params / 1e9:.2f} B parameters in TransformerLens) in {dtype} on "
        f"{device}, before downloading it: it needs " + "; and ".join(short) + ". What to do: " + "; ".join(todo) + ".")


def _load_hub(official: str, device, offline: bool = False, dtype: Optional[str] = None,
              revision: Optional[str] = None, **hub_kwargs):
    """``HookedTransformer.from_pretrained`` at ``dtype``; a ``revision`` (a training checkpoint) is loaded with
    transformers at that revision and handed to TransformerLens as ``hf_model``.

    TransformerLens 3.9 loads Pythia checkpoints itself with ``token=os.environ.get("HF_TOKEN", "")``, and an
    empty token makes the HTTP client reject its own ``Bearer `` header, so every checkpoint load failed for a
    learner without a token; its checkpoint support covers no OLMo-2 revision at all. Pythia's
    ``checkpoint_index`` / ``checkpoint_value`` become the revision ``step{N}``, kept in ``cfg.checkpoint_value``.
    """
    from transformer_lens import HookedTransformer

    step = _checkpoint_step(official, hub_kwargs)
    if step is not None:
        revision = f"step{step}"
    torch_dtype = getattr(torch, dtype or hub_models.dtype_name(devices.default_dtype(device)))
    with contextlib.ExitStack() as stack:
        if offline:
            stack.enter_context(hub_access.offline_cache_only())
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        # the course's tasks pad on the right and mask the padding themselves (core.circuits.real_token_mask); Gemma 2's
        # tokenizer_config asks for left padding, with which TransformerLens would build its own attention mask
        hub_kwargs.setdefault("default_padding_side", "right")
        if official in hub_models.NOT_IN_TRANSFORMERLENS:
            model = _load_under_official(official, device, torch_dtype, revision, **hub_kwargs)
        else:
            if revision is not None:
                from transformers import AutoModelForCausalLM

                hub_kwargs["hf_model"] = AutoModelForCausalLM.from_pretrained(official, revision=revision,
                                                                              dtype=torch_dtype)
            model = HookedTransformer.from_pretrained(official, device=str(device), dtype=torch_dtype, **hub_kwargs)
    if revision is not None:
        model.cfg.checkpoint_value = step if step is not None else _number(_STEP, revision)
    model.hub_revision = revision
    model.eval()
    unembedding_stored_transposed(model)  # no copy of W_U at every forward
    return model


def _rope_theta(hf_config) -> Optional[float]:
    params = getattr(hf_config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    return theta if theta is not None else getattr(hf_config, "rope_theta", None)


def config_mismatches(tl_config: dict, hf_config) -> list[str]:
    """The fields where TransformerLens' configuration ``tl_config`` (a ``convert_hf_model_config`` dict) would
    compute something other than the checkpoint whose ``config.json`` is ``hf_config`` (a transformers
    ``OlmoConfig``). Empty when the two agree. ``clip_qkv`` and the context length are not compared: the loader
    takes the checkpoint's."""
    pairs = [("d_model", "hidden_size"), ("n_layers", "num_hidden_layers"), ("n_heads", "num_attention_heads"),
             ("d_mlp", "intermediate_size"), ("d_vocab", "vocab_size"), ("act_fn", "hidden_act")]
    out = [f"{tl} {tl_config.get(tl)!r} against {hf} {getattr(hf_config, hf, None)!r}" for tl, hf in pairs
           if tl_config.get(tl) != getattr(hf_config, hf, None)]
    theta = _rope_theta(hf_config)
    if theta is not None and float(theta) != float(tl_config.get("rotary_base", 10000)):
        out.append(f"rotary_base {tl_config.get('rotary_base')!r} against rope_theta {theta!r}")
    params = getattr(hf_config, "rope_parameters", None) or getattr(hf_config, "rope_scaling", None) or {}
    scaling = params.get("rope_type", params.get("type", "default")) if isinstance(params, dict) else "default"
    if scaling not in (None, "default"):
        out.append(f"rope scaling {scaling!r} (TransformerLens' OLMo-1 configuration has plain rotary)")
    kv = getattr(hf_config, "num_key_value_heads", None)
    if kv is not None and kv != getattr(hf_config, "num_attention_heads", None):
        out.append(f"num_key_value_heads {kv} (TransformerLens' OLMo-1 configuration has one per query head)")
    if getattr(hf_config, "attention_bias", False):
        out.append("attention_bias True (TransformerLens' OLMo weight conversion sets every bias to zero)")
    return out


def _load_under_official(official: str, device, torch_dtype, revision: Optional[str] = None, **hub_kwargs):
    """A model TransformerLens 3.9 does not list (:data:`.hub_models.NOT_IN_TRANSFORMERLENS`): the checkpoint from
    transformers at ``revision``, handed to TransformerLens under the official name whose configuration fits it
    (checked field by field, :func:`config_mismatches`); ``clip_qkv`` and the context length are the checkpoint's,
    the tokenizer is the model's own (as TransformerLens loads OLMo's: no BOS added by the tokenizer)."""
    import logging

    from transformer_lens import HookedTransformer
    from transformer_lens import loading_from_pretrained as lp
    from transformers import AutoModelForCausalLM, AutoTokenizer

    nearest, why = hub_models.NOT_IN_TRANSFORMERLENS[official]
    alias = hub_models.find(nearest).alias
    hf_model = AutoModelForCausalLM.from_pretrained(official, revision=revision or "main", dtype=torch_dtype)
    problems = config_mismatches(lp.convert_hf_model_config(nearest), hf_model.config)
    if problems:
        raise ValueError(
            f"TransformerLens 3.9 cannot load {official}{f' at {revision}' if revision else ''}: {why}; and here "
            f"the checkpoint's config.json differs from the configuration it writes for {nearest}: "
            + "; ".join(problems) + f". The nearest model it does load: {alias!r} ({nearest}).")
    token = os.environ.get("HF_TOKEN") or None
    tokenizer = AutoTokenizer.from_pretrained(official, add_bos_token=False, token=token)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # TransformerLens warns that n_ctx exceeds OLMo-1B-hf's 2,048: it is the checkpoint's
    try:
        model = HookedTransformer.from_pretrained(
            nearest, hf_model=hf_model, tokenizer=tokenizer, device=str(device), dtype=torch_dtype,
            n_ctx=hf_model.config.max_position_embeddings, **hub_kwargs)
    finally:
        root.setLevel(level)
    model.cfg.clip_qkv = getattr(hf_model.config, "clip_qkv", None)  # TransformerLens reads it from the config it loads
    model.cfg.model_name, model.cfg.tokenizer_name = official.split("/")[-1], official
    model.hub_loaded_under = nearest
    return model


def _checkpoint_args(entry, revision, checkpoint_step, checkpoint_tokens, hub_kwargs) -> None:
    """Check the checkpoint arguments against the model before any network call (errors name the value)."""
    pythia_args = [k for k in ("checkpoint_index", "checkpoint_value") if hub_kwargs.get(k) is not None]
    given = pythia_args + [k for k, v in (("revision", revision), ("checkpoint_step", checkpoint_step),
                                          ("checkpoint_tokens", checkpoint_tokens)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give one of revision=, checkpoint_step=, checkpoint_tokens=, checkpoint_index=, "
                         f"checkpoint_value=; got {', '.join(given)}")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ValueError(f"revision={revision!r} must be a branch name or commit of {entry.official}, "
                         "e.g. 'stage1-step1000-tokens5B' for OLMo-2, 'step1000-tokens2B' for OLMo-1B-0724 or "
                         "'step1000' for Pythia")
    for key, value in (("checkpoint_step", checkpoint_step), ("checkpoint_tokens", checkpoint_tokens)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{key}={value!r} must be a non-negative integer (tokens in billions)")
    if (pythia_args or checkpoint_step is not None or checkpoint_tokens is not None) and entry.checkpoints is None:
        raise ValueError(f"{entry.official} has no training checkpoints ({given[0]} was given); Pythia "
                         "(checkpoint_index=, checkpoint_step=), OLMo-2 and OLMo-1B-0724 (checkpoint_step=, "
                         "checkpoint_tokens=, revision=) have them"
                         + ("; OLMo-1B-hf's checkpoints are not in the transformers format: use olmo-1b-0724"
                            if entry.family == "olmo" else ""))
    if entry.checkpoints == "pythia" and checkpoint_tokens is not None:
        raise ValueError(f"checkpoint_tokens={checkpoint_tokens!r}: Pythia's checkpoints are named by step; "
                         "use checkpoint_step= or checkpoint_index=")
    if entry.checkpoints in BRANCH_CHECKPOINTS and pythia_args:
        raise ValueError(f"{pythia_args[0]}= is Pythia's; {entry.alias}'s checkpoints are chosen by checkpoint_step=, "
                         "checkpoint_tokens= or revision= (e.g. 'stage1-step1000-tokens5B')")
    if entry.checkpoints == "pythia" and checkpoint_step is not None:
        hub_kwargs["checkpoint_value"] = checkpoint_step


def _fetch_hub(entry, device, verbose: bool, dtype: str, revision: Optional[str] = None,
               checkpoint_step: Optional[int] = None, checkpoint_tokens: Optional[int] = None, **hub_kwargs):
    """Load a hub model: asks the hub about the repo first (gated? revision?), then downloads (saying what and
    where) or loads from the local cache when the hub cannot be reached. Raises ConnectionError when neither
    can serve it, GatedModelError when the hub refuses it."""
    official = entry.official
    status = hub_access.repo_status(official, gated=entry.gated)
    if status.state == "gated":
        raise GatedModelError(hub_access.gated_advice(official, status))
    if status.state == "not_found":
        raise ConnectionError(f"cannot load {official!r}: {status.detail}. A mirror (HF_ENDPOINT) may not carry "
                              "it; unset HF_ENDPOINT to use huggingface.co.")
    online = status.state == "ok"
    by_branch = entry.checkpoints in BRANCH_CHECKPOINTS
    if online and by_branch and (checkpoint_step is not None or checkpoint_tokens is not None):
        revision = olmo_revision(official, hub_access.list_revisions(official), checkpoint_step, checkpoint_tokens)
    elif not online and (checkpoint_step is not None or checkpoint_tokens is not None) and by_branch:
        raise ConnectionError(f"cannot find {official}'s checkpoint by step or tokens: {status.detail}. Offline, "
                              "pass revision= with a revision already in the local cache")
    if online and revision is not None:
        at = hub_access.repo_status(official, revision, timeout=10.0, gated=entry.gated)  # the hub is up
        if at.state == "no_revision":
            try:
                known = [r for _, r in training_checkpoints(official)] if entry.checkpoints else ["main"]
            except Exception:
                known = []
            raise ValueError(f"revision={revision!r} does not exist for {official}"
                             + (f"; it has {len(known)}, e.g. {known[:3]} ... {known[-1]}" if known else ""))
    cached = _hub_cached(official, revision) if revision else _hub_cached(official)
    if not online and not cached:
        raise ConnectionError(
            f"cannot load {official!r}: {status.detail}, and the model is not in the local Hugging Face cache. "
            f"Offline, use load_model('auto') or a zoo model ({store.zoo_names()}); online, check the network, "
            "HF_ENDPOINT (a mirror) or HTTPS_PROXY, and unset HF_HUB_OFFLINE.")
    if verbose:
        if not online:
            print(f"[tutorial_lib] {status.detail}; loading {official} from the local cache")
        elif not cached:
            print(f"[tutorial_lib] {hub_access.download_note(official, revision)}")
    return _load_hub(official, device, offline=not online, dtype=dtype, revision=revision, **hub_kwargs)


def load_model(name: str = "auto", device=None, verbose: bool = True, dtype=None, revision: Optional[str] = None,
               checkpoint_step: Optional[int] = None, checkpoint_tokens: Optional[int] = None,
               check_memory: bool = True, **hub_kwargs):
    """Load a TransformerLens ``HookedTransformer`` by name.

    Args:
        name: ``"auto"`` (GPT-2 small if it can be loaded, else the default zoo model), a zoo name
            (``"zoo-multitask"``), or a hub model by short alias or official name (``"gpt2"``, ``"qwen3-0.6b"``,
            ``"meta-llama/Llama-3.2-1B"``, ``"olmo-2-1b"``, ``"pythia-160m"`` ...; all in :func:`valid_names`,
            sizes in :mod:`tutorial_lib.zoo.hub_models`). The environment variable ``TUTORIAL_MODEL`` overrides
            ``"auto"``.
        device: ``"cuda"``, ``"mps"``, ``"cpu"`` or None (chosen once: cuda, then mps, then cpu).
        verbose: print the banner saying which model was loaded, in which dtype, and why.
        dtype: hub models only; ``torch.bfloat16`` / ``"float16"`` / ... or None: bfloat16 on a GPU that
            computes in it, float16 on an older GPU (float32 for Gemma 2), float32 on a CPU.
        revision: a hub revision (branch or commit), e.g. OLMo-2's ``"stage1-step1000-tokens5B"``, OLMo-1B-0724's
            ``"step1000-tokens2B"``.
        checkpoint_step: a training checkpoint by step (Pythia, OLMo-2, OLMo-1B-0724); ``checkpoint_tokens``: by
            billions of tokens; Pythia also takes ``checkpoint_index=`` / ``checkpoint_value=``.
        check_memory: refuse, before downloading, a model the device's free memory cannot hold (default).
        **hub_kwargs: passed to ``HookedTransformer.from_pretrained`` for hub models.

    Raises:
        ValueError: the name or an argument is unknown or out of range (the message names it and what is accepted).
        ModelTooLargeError: the model needs more memory than is free (figures, and what to do).
        GatedModelError: the hub refuses a gated model (Llama, Gemma): the message says how to get access.
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
        return _load_auto(device, verbose, dtype)
    if name in store.zoo_names():
        model = store.load_model_from_zoo(name, device=device)
        if dtype is not None:
            model.to(getattr(torch, hub_models.dtype_name(dtype)))
        unembedding_stored_transposed(model)  # no copy of W_U at every forward
        if verbose:
            _banner([f"Loaded zoo model {name!r} on {device} (offline, trained by this package).",
                     model.zoo_entry.get("description", "")])
        return model
    entry = hub_models.find(name)
    if entry is None:
        raise ValueError(f"unknown model name {name!r}. Accepted: 'auto'; zoo models {store.zoo_names()}; "
                         + hub_models.describe_names(name) + ". valid_names() lists them all")
    _checkpoint_args(entry, revision, checkpoint_step, checkpoint_tokens, hub_kwargs)
    dtype, why = _choose_dtype(entry, device, dtype)
    if check_memory:
        _check_memory(entry, device, dtype)
    model = _fetch_hub(entry, device, verbose, dtype, revision, checkpoint_step, checkpoint_tokens, **hub_kwargs)
    if verbose:
        revision = getattr(model, "hub_revision", None)
        step = getattr(model.cfg, "checkpoint_value", None)
        n = sum(p.numel() for p in model.parameters())
        size = next(model.parameters()).element_size()
        lines = [f"Loaded {entry.official} ({entry.alias}) from the Hugging Face hub on {device}.",
                 f"dtype {dtype} ({why}); {n / 1e9:.2f} B parameters, {n * size / hub_models.GIB:.2f} GiB of weights.",
                 f"Revision: {revision}" + (f" (training step {step})" if step is not None else "")
                 if revision else "Revision: main (the final model)."]
        _banner(lines)
    return model


def _load_auto(device, verbose: bool, dtype=None):
    """``"auto"``: GPT-2 small from the hub or the cache, else the default zoo model; the banner says why."""
    official = "gpt2"
    online, reason = hub_status()
    if online or _hub_cached(official):
        try:
            if verbose and not online:
                print(f"[tutorial_lib] {reason}; loading GPT-2 from the local cache")
            elif verbose and not _hub_cached(official):
                print(f"[tutorial_lib] {hub_access.download_note(official)}")
            dtype, why = _choose_dtype(None, device, dtype)
            model = _load_hub(official, device, offline=not online, dtype=dtype)
            if verbose:
                _banner([f"Loaded GPT-2 small ({official}) on {device}, dtype {dtype} ({why}).",
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
