"""The papers' models on the Hugging Face hub: names, short aliases, sizes, memory, and where each fits.

Every official name that TransformerLens 3.9 supports in the papers' families is here: GPT-2 (study 1),
Llama 3.2, Gemma 2, Qwen3 and OLMo-2 (study 2), Pythia, OLMo-1 and OLMoE (study 3). Each has a short alias
(``"llama-3.2-1b"``, ``"qwen3-0.6b"``, ``"olmo-2-1b"`` ...); :func:`find` resolves either, in any case.

One model is here although TransformerLens 3.9 does not list it: ``allenai/OLMo-1B-0724-hf`` (``"olmo-1b-0724"``),
the OLMo-1 model the spectral paper's code studies, with its training checkpoints (``step1000-tokens2B`` ...).
:data:`NOT_IN_TRANSFORMERLENS` says why TransformerLens refuses its name and which official name's configuration
the course loads it under (:mod:`.loading` checks that configuration against the checkpoint's own).

>>> find("qwen3-0.6b").official
'Qwen/Qwen3-0.6B'
>>> find("meta-llama/Llama-3.2-1B").gated
True
>>> round(weights_gib(find("gpt2"), "float32"), 2)
0.61

**Parameters** are counted as TransformerLens holds the model, which is what takes memory: tied embeddings are
untied (``W_E`` and ``W_U`` are two tensors) and absent biases are zero tensors, so Qwen3-0.6B is 0.75 B here
against 0.60 B on its model card. The counts come from building each model on PyTorch's ``meta`` device (no
memory) from TransformerLens' own configuration: for Llama 3.2, Gemma 2 and OLMo-2 the one written inside
TransformerLens (for OLMo-2 it reads the hub's ``config.json`` only for the architecture's name); for Qwen3,
OLMoE, Pythia and GPT-2, whose dimensions TransformerLens reads from the hub's ``config.json``, from those in
:data:`HUB_CONFIG_FACTS`, copied from those files (OLMo-2's are there too, and agree with TransformerLens').
``tests/test_hub_models.py`` rebuilds every count and checks the Hugging Face totals these dimensions give against
the published ones (Pythia's to the parameter, the others to their model cards' rounding).

**Memory** follows from the count (:func:`requirements`): the weights at the dtype used on the device, plus 20%
on a GPU for a small batch's activations; loading holds the Hugging Face copy, TransformerLens' copy and the
conversion's temporaries in RAM at the same time (TransformerLens builds the model on the CPU before moving it):
2.4 times the weights at the peak, measured for GPT-2 small in float32 on this course's CPU (anonymous memory,
sampled every 5 ms; the checkpoint file's page cache comes on top but can be reclaimed), so RAM needs 2.5 times.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

GIB = 1024 ** 3
GPU_HEADROOM = 1.2  #: a GPU holds the weights plus 20% for a small batch's activations
LOAD_RAM_FACTOR = 2.5  #: loading's RAM peak, in weights (measured 2.4 for GPT-2 small: both copies + temporaries)
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class Place:
    """Somewhere a learner runs the course: its usable memory (GiB) and the dtype the loader picks there."""
    label: str
    ram_gib: float            # RAM usable for loading (what is left after the OS and the runtime)
    gpu_gib: float | None     # usable GPU memory; None for a CPU
    dtype: str


#: the places the models tables are computed for (usable memory, not the label's total)
LAPTOP_CPU = Place("laptop CPU, 16 GB RAM", ram_gib=12.0, gpu_gib=None, dtype="float32")
FREE_T4 = Place("free Colab T4 (15 GB GPU, 12.7 GB RAM)", ram_gib=11.0, gpu_gib=14.5, dtype="float16")
LARGER_GPUS = (24, 40, 80)  # GB; host RAM assumed ample (a lab machine, Colab's high-RAM runtimes)


@dataclass(frozen=True)
class HubModel:
    """One model on the hub, as the course loads it."""
    official: str             # the hub's repo id, as TransformerLens names it
    alias: str                # the short name
    family: str               # gpt2, pythia, llama, gemma2, qwen3, olmo2, olmo (OLMo-1), olmoe
    params: int               # parameters as TransformerLens holds them (see the module's docstring)

    @property
    def gated(self) -> bool:
        """True for the models whose licence must be accepted on the hub before downloading (Llama, Gemma)."""
        return self.family in GATED_FAMILIES

    @property
    def checkpoints(self) -> str | None:
        """How training checkpoints are named: ``"pythia"`` (step branches), ``"olmo2"``
        (``stage1-step1000-tokens5B`` branches), ``"olmo"`` (OLMo-1B-0724's ``step1000-tokens2B`` branches), or
        None (OLMo-1B-hf and OLMo-7B-hf: their checkpoints exist only in the non-``-hf`` repos, in the format of
        AI2's own ``hf_olmo`` code, which TransformerLens cannot read)."""
        if self.family == "olmo":
            return "olmo" if self.official in OLMO_CHECKPOINTED else None
        return {"pythia": "pythia", "olmo2": "olmo2"}.get(self.family)

    @property
    def in_transformerlens(self) -> bool:
        """False for a model TransformerLens 3.9 does not list by name (:data:`NOT_IN_TRANSFORMERLENS`)."""
        return self.official not in NOT_IN_TRANSFORMERLENS


FAMILY_LABELS = {
    "gpt2": "GPT-2 (study 1)", "llama": "Llama 3.2 (study 2; gated)", "gemma2": "Gemma 2 (study 2; gated)",
    "qwen3": "Qwen3 (study 2)", "olmo2": "OLMo-2, with training checkpoints (study 2)",
    "pythia": "Pythia, with training checkpoints (study 3)", "olmoe": "OLMoE, mixture of experts (study 3)",
    "olmo": "OLMo-1, Llama-style with non-parametric LayerNorm; OLMo-1B-0724 with training checkpoints (study 3)",
}
GATED_FAMILIES = ("llama", "gemma2")
#: Gemma 2 was trained in bfloat16 and overflows in float16: on a GPU without bfloat16 it is loaded in float32
NO_FLOAT16 = ("gemma2",)
#: where each family's configuration comes from (the parameter counts follow from it)
CONFIG_SOURCE = {
    "llama": "TransformerLens' own config (convert_hf_model_config, offline)",
    "gemma2": "TransformerLens' own config (convert_hf_model_config, offline)",
    "olmo2": "TransformerLens' own config (it reads config.json only for the architecture)",
    "olmo": "TransformerLens' own config (it reads config.json only for the architecture and clip_qkv)",
    **{f: "the hub's config.json (dimensions in HUB_CONFIG_FACTS)" for f in ("qwen3", "olmoe", "pythia", "gpt2")},
}

# The dimensions in each model's config.json on the hub (huggingface.co/<name>/blob/main/config.json): the facts
# behind the counts of the families TransformerLens configures from the hub. Pythia: (d_model, layers, heads,
# vocabulary), MLP 4 x d_model, rotary on 25% of each head, untied embeddings. Qwen3: (d_model, d_mlp, layers,
# query heads, tied embeddings), 8 key/value heads of 128, vocabulary 151,936. OLMo-2 / OLMoE: their own fields.
HUB_CONFIG_FACTS = {
    "pythia": {"14m": (128, 6, 4, 50304), "31m": (256, 6, 8, 50304), "70m": (512, 6, 8, 50304),
               "160m": (768, 12, 12, 50304), "410m": (1024, 24, 16, 50304), "1b": (2048, 16, 8, 50304),
               "1.4b": (2048, 24, 16, 50304), "2.8b": (2560, 32, 32, 50304), "6.9b": (4096, 32, 32, 50432),
               "12b": (5120, 36, 40, 50688)},
    "qwen3": {"0.6B": (1024, 3072, 28, 16, True), "1.7B": (2048, 6144, 28, 16, True),
              "4B": (2560, 9728, 36, 32, True), "8B": (4096, 12288, 36, 32, False),
              "14B": (5120, 17408, 40, 40, False)},
    "allenai/OLMo-2-0425-1B": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                   num_attention_heads=16, num_key_value_heads=16, vocab_size=100352),
    "allenai/OLMo-2-1124-7B": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=32, vocab_size=100352),
    "allenai/OLMoE-1B-7B-0924": dict(hidden_size=2048, intermediate_size=1024, num_hidden_layers=16,
                                     num_attention_heads=16, num_key_value_heads=16, num_experts=64,
                                     num_experts_per_tok=8, vocab_size=50304),
    "gpt2": {"gpt2": (768, 12, 12), "gpt2-medium": (1024, 24, 16), "gpt2-large": (1280, 36, 20),
             "gpt2-xl": (1600, 48, 25)},
}

#: OLMo-1's dimensions as TransformerLens 3.9 writes them for every name that starts ``allenai/OLMo-1B`` (or
#: ``-7B``) and ends ``hf`` (``convert_hf_model_config``: 16 layers, d_model 2048, 16 heads of 128, MLP 8192,
#: vocabulary 50,304, n_ctx 2048, LayerNorm without weights, rotary base 10,000, gated SiLU MLP; 7B: 32 layers, 4096,
#: 32 heads, MLP 11,008). OLMo-1B-0724's model card gives 16 layers, d_model 2048, 16 heads and a context of 4,096
#: (huggingface.co/allenai/OLMo-1B-0724-hf); its two float32 shards on the hub (4.71 GB + 412 MB) are what these
#: dimensions give with an untied unembedding (1.28 B parameters; checked in tests/test_hub_models.py).
OLMO1_FACTS = {
    "allenai/OLMo-1B-hf": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=16,
                               vocab_size=50304, max_position_embeddings=2048, tie_word_embeddings=True),
    "allenai/OLMo-1B-0724-hf": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                    num_attention_heads=16, vocab_size=50304, max_position_embeddings=4096,
                                    tie_word_embeddings=False),
    "allenai/OLMo-7B-hf": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                               num_attention_heads=32, vocab_size=50304, max_position_embeddings=2048),
}
#: the OLMo-1 models with training checkpoints in the transformers format (branches ``step{N}-tokens{M}B``)
OLMO_CHECKPOINTED = ("allenai/OLMo-1B-0724-hf",)
#: models the course loads that TransformerLens 3.9 does not list by name: official -> (the official name whose
#: configuration TransformerLens builds it under, why TransformerLens refuses the name itself)
NOT_IN_TRANSFORMERLENS = {
    "allenai/OLMo-1B-0724-hf": (
        "allenai/OLMo-1B-hf",
        "it is not among its official names: HookedTransformer.from_pretrained asks get_official_model_name "
        "first, which raises 'not found' for any name outside OFFICIAL_MODEL_NAMES (its OLMo-1 names are "
        "allenai/OLMo-1B-hf and allenai/OLMo-7B-hf), and a local folder of it fails too (its conversion knows "
        "OLMo-1 only by those names: 'OlmoForCausalLM is not currently supported'). Its OLMo-1B configuration "
        "(any name starting allenai/OLMo-1B and ending hf) and its OLMo weight conversion do fit the checkpoint"),
}

# Parameter counts in TransformerLens (rebuilt and checked by tests/test_hub_models.py).
_PYTHIA_PARAMS = {"14m": 14_118_016, "31m": 30_545_024, "70m": 70_476_928, "160m": 162_373_248,
                  "410m": 405_384_320, "1b": 1_011_831_936, "1.4b": 1_414_698_112, "2.8b": 2_775_259_264,
                  "6.9b": 6_857_352_448, "12b": 11_846_123_008}
_PYTHIA_VARIANTS = {"": list(_PYTHIA_PARAMS), "-deduped": list(_PYTHIA_PARAMS)[2:], "-v0": list(_PYTHIA_PARAMS)[2:],
                    "-deduped-v0": list(_PYTHIA_PARAMS)[2:], "-seed1": ["160m"], "-seed2": ["160m"],
                    "-seed3": ["160m"]}
_TABLE = [
    ("gpt2", "gpt2-small", "gpt2", 163_087_441), ("gpt2-medium", "gpt2-medium", "gpt2", 406_336_593),
    ("gpt2-large", "gpt2-large", "gpt2", 838_409_297), ("gpt2-xl", "gpt2-xl", "gpt2", 1_638_072_657),
    ("meta-llama/Llama-3.2-1B", "llama-3.2-1b", "llama", 1_498_856_704),
    ("meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b-instruct", "llama", 1_498_856_704),
    ("meta-llama/Llama-3.2-3B", "llama-3.2-3b", "llama", 3_607_425_280),
    ("meta-llama/Llama-3.2-3B-Instruct", "llama-3.2-3b-instruct", "llama", 3_607_425_280),
    ("google/gemma-2-2b", "gemma-2-2b", "gemma2", 3_204_887_808),
    ("google/gemma-2-2b-it", "gemma-2-2b-it", "gemma2", 3_204_887_808),
    ("google/gemma-2-9b", "gemma-2-9b", "gemma2", 10_160_713_216),
    ("google/gemma-2-9b-it", "gemma-2-9b-it", "gemma2", 10_160_713_216),
    ("google/gemma-2-27b", "gemma-2-27b", "gemma2", 28_409_528_832),
    ("google/gemma-2-27b-it", "gemma-2-27b-it", "gemma2", 28_409_528_832),
    ("Qwen/Qwen3-0.6B", "qwen3-0.6b", "qwen3", 752_042_368),
    ("Qwen/Qwen3-0.6B-Base", "qwen3-0.6b-base", "qwen3", 752_042_368),
    ("Qwen/Qwen3-1.7B", "qwen3-1.7b", "qwen3", 2_032_293_248),
    ("Qwen/Qwen3-4B", "qwen3-4b", "qwen3", 4_412_331_904),
    ("Qwen/Qwen3-8B", "qwen3-8b", "qwen3", 8_191_845_760),
    ("Qwen/Qwen3-14B", "qwen3-14b", "qwen3", 14_769_851_776),
    ("allenai/OLMo-2-0425-1B", "olmo-2-1b", "olmo2", 1_485_312_000),
    ("allenai/OLMo-2-1124-7B", "olmo-2-7b", "olmo2", 7_299_725_312),
    ("allenai/OLMoE-1B-7B-0924", "olmoe-1b-7b", "olmoe", 6_919_343_232),
    ("allenai/OLMo-1B-hf", "olmo-1b", "olmo", 1_280_267_392),
    ("allenai/OLMo-1B-0724-hf", "olmo-1b-0724", "olmo", 1_280_267_392),
    ("allenai/OLMo-7B-hf", "olmo-7b", "olmo", 6_889_686_144),
] + [(f"EleutherAI/pythia-{size}{variant}", f"pythia-{size}{variant}", "pythia", _PYTHIA_PARAMS[size])
     for variant, sizes in _PYTHIA_VARIANTS.items() for size in sizes]

MODELS: dict[str, HubModel] = {official: HubModel(official, alias, family, params)
                               for official, alias, family, params in _TABLE}
#: further spellings accepted (TransformerLens' own aliases are accepted too, see :func:`find`)
EXTRA_ALIASES = {"gpt2-small": "gpt2", "openai-community/gpt2": "gpt2", "olmoe": "allenai/OLMoE-1B-7B-0924",
                 "pythia": "EleutherAI/pythia-70m"}
_KEYWORDS = ("gpt2", "pythia", "llama", "gemma", "qwen", "olmo")
_BY_NAME = {k.lower(): m for m in MODELS.values() for k in (m.official, m.alias)}
_BY_NAME.update({k.lower(): MODELS[v] for k, v in EXTRA_ALIASES.items()})


def find(name: str) -> HubModel | None:
    """The model ``name`` stands for (official name or alias, any case), or None if it is not one of these.

    Names TransformerLens itself accepts for these models (``"pythia-125m"``, ``"EleutherAI/pythia-19m"`` ...)
    are resolved through its alias table.
    """
    if not isinstance(name, str):
        return None
    hit = _BY_NAME.get(name.strip().lower())
    if hit is not None or not any(k in name.lower() for k in _KEYWORDS):
        return hit
    try:
        from transformer_lens.loading_from_pretrained import get_official_model_name

        return MODELS.get(get_official_model_name(name))
    except (ValueError, KeyError):
        return None


def hub_names() -> list[str]:
    """Every accepted hub name: the short aliases, then the official names."""
    return [m.alias for m in MODELS.values() if m.alias != m.official] + list(MODELS)


def describe_names(bad: str | None = None) -> str:
    """The accepted hub names, compactly (Pythia's 37 folded into one pattern), with close matches to ``bad``."""
    short = [m.alias for m in MODELS.values() if m.family != "pythia"]
    sizes = ", ".join(_PYTHIA_PARAMS)
    text = (f"short names: {', '.join(short)}; pythia-SIZE[-deduped][-v0] for SIZE in {sizes} "
            "(and pythia-160m-seed1..3); or the official names ("
            + ", ".join(m.official for m in MODELS.values() if m.family != "pythia")
            + ", EleutherAI/pythia-...)")
    if bad:
        close = difflib.get_close_matches(bad.lower(), list(_BY_NAME), n=3, cutoff=0.6)
        if close:
            text = f"did you mean {' or '.join(repr(c) for c in close)}? Accepted {text}"
    return text


def dtype_name(dtype) -> str:
    """``torch.bfloat16`` / ``"bf16"`` / ``"bfloat16"`` -> ``"bfloat16"``; a bad value names what is accepted."""
    text = str(dtype).replace("torch.", "").lower()
    text = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}.get(text, text)
    if text not in BYTES:
        raise ValueError(f"dtype={dtype!r} is not supported; use torch.float32, torch.bfloat16 or torch.float16 "
                         "(or 'float32', 'bfloat16', 'float16'), or None for the device's default")
    return text


def weights_gib(model: HubModel, dtype) -> float:
    """Memory the weights take in TransformerLens at ``dtype``, in GiB."""
    return model.params * BYTES[dtype_name(dtype)] / GIB


def requirements(model: HubModel, dtype, on_gpu: bool) -> dict:
    """What loading ``model`` at ``dtype`` needs, in GiB: ``{"weights", "ram", "gpu"}`` (``gpu`` None on a CPU)."""
    w = weights_gib(model, dtype)
    return {"weights": w, "ram": LOAD_RAM_FACTOR * w, "gpu": GPU_HEADROOM * w if on_gpu else None}


def place_dtype(model: HubModel, place: Place) -> str:
    """The dtype the loader picks for ``model`` at ``place`` (float32 for Gemma 2 on a GPU without bfloat16)."""
    return "float32" if place.dtype == "float16" and model.family in NO_FLOAT16 else place.dtype


def fits(model: HubModel, place: Place) -> bool:
    """True if ``model`` loads at ``place`` by :func:`requirements` (RAM to load it; GPU memory to hold it)."""
    need = requirements(model, place_dtype(model, place), on_gpu=place.gpu_gib is not None)
    return need["ram"] <= place.ram_gib and (need["gpu"] is None or need["gpu"] <= place.gpu_gib)


def smallest_gpu(model: HubModel) -> int | None:
    """The smallest of :data:`LARGER_GPUS` (GB) that holds ``model`` in bfloat16, or None if none does."""
    need = requirements(model, "bfloat16", on_gpu=True)["gpu"]
    return next((g for g in LARGER_GPUS if need <= 0.95 * g), None)


def table_rows() -> list[HubModel]:
    """One model per size for the tables: no Pythia deduped / v0 / seed twins, no -Instruct / -it twins."""
    twin = ("-deduped", "-v0", "-seed", "-instruct", "-it", "-base")
    return [m for m in MODELS.values() if not any(t in m.alias for t in twin)]


def markdown_table() -> str:
    """The full models table (``docs/models-and-devices.md``), computed from :data:`MODELS` and the places above."""
    head = ["short name", "official name", "parameters", "weights bf16", "weights fp32", "laptop CPU (fp32)",
            "free Colab T4 (fp16)", "else: GPU size (bf16)"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    rows = table_rows()
    for m in rows:
        twins = [t.alias[len(m.alias):] for t in MODELS.values() if t not in rows
                 and t.params == m.params and t.alias.startswith(m.alias) and t.family != "pythia"]
        short = f"`{m.alias}`" + "".join(f" (`{t}`)" for t in twins)
        cpu = requirements(m, "float32", on_gpu=False)["ram"]
        t4 = "yes" if fits(m, FREE_T4) else "no"
        if m.family in NO_FLOAT16:
            t4 += " (fp32: fp16 overflows)"
        gpu = "—" if fits(m, FREE_T4) else (f"{smallest_gpu(m)} GB" if smallest_gpu(m) else "> 80 GB")
        lines.append("| " + " | ".join([
            short, m.official + (" (gated)" if m.gated else "")
            + ("" if m.in_transformerlens else " (not in TransformerLens' list: loaded under "
               f"{NOT_IN_TRANSFORMERLENS[m.official][0]}'s configuration)"), _count(m.params),
            _gib(weights_gib(m, "bfloat16")), _gib(weights_gib(m, "float32")),
            ("yes" if fits(m, LAPTOP_CPU) else "no") + f" ({_gib(cpu)} to load)", t4, gpu]) + " |")
    return "\n".join(lines)


def _count(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.0f} M"


def _gib(x: float) -> str:
    return f"{x:.2f} GiB" if x < 1 else f"{x:.1f} GiB"


def device_table() -> str:
    """The README's short table: on each place, the papers' models that first fit there (the full table:
    :func:`markdown_table`, in ``docs/models-and-devices.md``)."""
    rows, placed = [], set()
    places = [("laptop CPU (16 GB RAM, float32)", lambda m: fits(m, LAPTOP_CPU)),
              ("free Colab T4 (float16), in addition", lambda m: fits(m, FREE_T4))]
    places += [(f"GPU with {g} GB (bfloat16), in addition", lambda m, g=g: smallest_gpu(m) == g) for g in LARGER_GPUS]
    for label, ok in places:
        names = [m.alias for m in table_rows() if m.alias not in placed and ok(m)]
        placed.update(names)
        rows.append(f"| {label} | " + (", ".join(f"`{n}`" for n in names) or "—") + " |")
    return "\n".join(["| where | the papers' models that fit (estimated from their size) |", "| --- | --- |", *rows])


README_MARKERS = ("<!-- models-table -->", "<!-- /models-table -->")
DEVICE_MARKERS = ("<!-- devices-table -->", "<!-- /devices-table -->")


def _main(argv=None) -> int:
    """``python -m tutorial_lib.zoo.hub_models [--readme FILE]``: print the table, or rewrite the blocks of it (the
    full table, ``docs/models-and-devices.md``) and of :func:`device_table` (``README.md``) that FILE holds."""
    import argparse
    from pathlib import Path

    p = argparse.ArgumentParser(description="print the models table, or rewrite its blocks in a markdown file")
    p.add_argument("--readme", help="rewrite the models-table (or devices-table) block in this file")
    a = p.parse_args(argv)
    if not a.readme:
        print(markdown_table())
        return 0
    path = Path(a.readme)
    text = path.read_text()
    for markers, table in ((README_MARKERS, markdown_table), (DEVICE_MARKERS, device_table)):
        if markers[0] in text:
            start, end = (text.index(m) for m in markers)
            text = text[: start + len(markers[0])] + "\n" + table() + "\n" + text[end:]
    path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
