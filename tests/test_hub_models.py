"""The hub models' catalogue and the loader's checks that need no network (tutorial_lib.zoo.hub_models, loading):
every official name TransformerLens 3.9 has in the papers' families, the parameter counts rebuilt from the
configurations, the memory table and the README's copy of it, dtype by device, the too-large refusal, gated advice,
and bad arguments. The hub itself is exercised in test_models_hub.py."""
import time
from pathlib import Path

import pytest
import torch

import tutorial_lib.core.device as devices
import tutorial_lib.zoo.loading as loading
from tutorial_lib.zoo import hub_access, hub_models
from tutorial_lib.zoo.hub_models import MODELS, find

ROOT = Path(__file__).resolve().parents[1]
FAMILY_PREFIXES = ("gpt2", "meta-llama/Llama-3.2", "google/gemma-2-", "Qwen/Qwen3-", "allenai/OLMo-2-",
                   "allenai/OLMoE-", "EleutherAI/pythia-", "allenai/OLMo-1B", "allenai/OLMo-7B")
GIB = 1024 ** 3


@pytest.fixture(autouse=True)
def no_hub(monkeypatch):
    """Nothing here may reach a hub: offline mode, and a probe that fails the test if it is called."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def boom(*a, **k):
        raise AssertionError("the hub was asked before the check that should have refused")

    monkeypatch.setattr(hub_access, "repo_status", boom)


def test_every_official_name_in_the_families_and_their_aliases():
    from transformer_lens.loading_from_pretrained import MODEL_ALIASES, OFFICIAL_MODEL_NAMES

    official = {n for n in OFFICIAL_MODEL_NAMES if n.startswith(FAMILY_PREFIXES)}
    # every official name, plus the models TransformerLens does not list (OLMo-1B-0724), each with the official
    # name it is loaded under -- which TransformerLens does list
    assert official | set(hub_models.NOT_IN_TRANSFORMERLENS) == set(MODELS), (official ^ set(MODELS))
    assert not official & set(hub_models.NOT_IN_TRANSFORMERLENS)
    assert all(near in official for near, _ in hub_models.NOT_IN_TRANSFORMERLENS.values())
    assert [m.alias for m in MODELS.values() if not m.in_transformerlens] == ["olmo-1b-0724"]
    assert len([m for m in MODELS.values() if m.family == "pythia"]) == 37
    for short in ("llama-3.2-1b", "llama-3.2-3b", "llama-3.2-1b-instruct", "gemma-2-2b", "gemma-2-2b-it",
                  "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "olmo-2-1b", "olmoe-1b-7b", "pythia-70m",
                  "gpt2", "gpt2-small"):
        assert find(short) is not None and short in loading.valid_names(), short
    for m in MODELS.values():  # each by official name, alias, and case
        assert find(m.official) is m and find(m.alias) is m and find(m.official.upper()) is m
    for name, aliases in MODEL_ALIASES.items():  # TransformerLens' own aliases resolve too
        if name in MODELS:
            assert all(find(a) is MODELS[name] for a in aliases), (name, aliases)
    assert find("meta-llama/Llama-3.2-1B").gated and find("gemma-2-2b-it").gated
    assert not any(find(n).gated for n in ("qwen3-0.6b", "olmo-2-1b", "olmoe-1b-7b", "pythia-70m", "gpt2"))
    assert find("olmo-2-1b").checkpoints == "olmo2" and find("pythia-160m").checkpoints == "pythia"
    assert find("olmo-1b-0724").checkpoints == "olmo" and find("olmo-1b").checkpoints is None
    assert find("allenai/OLMo-1B-0724-hf") is find("olmo-1b-0724") and find("olmo-7b").official == "allenai/OLMo-7B-hf"
    assert find("gpt5-mega") is None and find("llama-9") is None


def _hf_config(official):
    """A transformers config with the real dimensions (HUB_CONFIG_FACTS), standing in for the hub's config.json."""
    import transformers as tf

    facts = hub_models.HUB_CONFIG_FACTS
    if official.startswith("EleutherAI/pythia-"):
        d, layers, heads, vocab = facts["pythia"][official.split("-")[1]]
        return tf.GPTNeoXConfig(hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=4 * d, vocab_size=vocab, rotary_pct=0.25, tie_word_embeddings=False,
                                use_parallel_residual=True, architectures=["GPTNeoXForCausalLM"])
    if official.startswith("Qwen/Qwen3-"):
        d, f, layers, heads, tie = facts["qwen3"][official.split("-")[1]]
        return tf.Qwen3Config(hidden_size=d, intermediate_size=f, num_hidden_layers=layers, num_attention_heads=heads,
                              num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=tie,
                              architectures=["Qwen3ForCausalLM"])
    if official.startswith("allenai/OLMo-2"):
        return tf.Olmo2Config(**facts[official], tie_word_embeddings=False, architectures=["Olmo2ForCausalLM"])
    if official in hub_models.OLMO1_FACTS:
        return tf.OlmoConfig(**hub_models.OLMO1_FACTS[official], architectures=["OlmoForCausalLM"])
    if official.startswith("allenai/OLMoE"):
        return tf.OlmoeConfig(**facts[official], tie_word_embeddings=False, architectures=["OlmoeForCausalLM"])
    if official.startswith("gpt2"):
        d, layers, heads = facts["gpt2"][official]
        c = tf.GPT2Config(n_embd=d, n_layer=layers, n_head=heads, vocab_size=50257, n_positions=1024,
                          architectures=["GPT2LMHeadModel"])
        c.n_ctx = 1024
        return c
    return None  # Llama 3.2, Gemma 2: TransformerLens holds their configs


# Published totals (Hugging Face's own count): Pythia's to the parameter (its README's table), GPT-2's as
# transformers counts it, the others as their model cards round them (billions).
PUBLISHED = {"EleutherAI/pythia-70m": 70_426_624, "EleutherAI/pythia-160m": 162_322_944,
             "EleutherAI/pythia-410m": 405_334_016, "EleutherAI/pythia-1b": 1_011_781_632,
             "EleutherAI/pythia-1.4b": 1_414_647_808, "EleutherAI/pythia-2.8b": 2_775_208_960,
             "EleutherAI/pythia-6.9b": 6_857_302_016, "EleutherAI/pythia-12b": 11_846_072_320,
             "gpt2": 124_439_808, "Qwen/Qwen3-0.6B": 0.6e9, "Qwen/Qwen3-1.7B": 1.7e9, "Qwen/Qwen3-4B": 4.0e9,
             "Qwen/Qwen3-8B": 8.2e9, "Qwen/Qwen3-14B": 14.8e9, "allenai/OLMo-2-1124-7B": 7.3e9,
             "allenai/OLMoE-1B-7B-0924": 6.9e9, "allenai/OLMo-7B-hf": 6.9e9}


def test_parameter_counts_rebuilt_from_the_configurations():
    """Each size's count, rebuilt on the meta device from TransformerLens' conversion of its configuration."""
    import transformers as tf
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens import loading_from_pretrained as lp

    from tutorial_lib.zoo.families import _offline_hub_config

    for m in hub_models.table_rows():
        hf_config = _hf_config(m.official)
        # a model TransformerLens does not list is built under the official name the loader uses for it
        tl_name = hub_models.NOT_IN_TRANSFORMERLENS.get(m.official, (m.official,))[0]
        with _offline_hub_config(hf_config):
            d = dict(lp.convert_hf_model_config(tl_name))
        d.pop("tokenizer_name", None)
        d["device"] = "meta"
        with torch.device("meta"):
            tl = HookedTransformer(HookedTransformerConfig(**d), move_to_device=False)
            assert sum(p.numel() for p in tl.parameters()) == m.params, m.official
            if m.official in PUBLISHED:
                n = sum(p.numel() for p in tf.AutoModelForCausalLM.from_config(hf_config).parameters())
                want = PUBLISHED[m.official]
                assert n == want if isinstance(want, int) else round(n / 1e9, 1) == round(want / 1e9, 1), m.official
    # OLMo-1B-0724's two float32 shards on the hub, 4.71 GB + 412 MB (huggingface.co/allenai/OLMo-1B-0724-hf, files):
    # its dimensions with an untied unembedding give that size; with a tied one (OLMo-1B-hf's) 0.41 GB less
    with torch.device("meta"):
        n = sum(p.numel() for p in tf.AutoModelForCausalLM.from_config(_hf_config("allenai/OLMo-1B-0724-hf")).parameters())
    assert abs(4 * n - (4.71e9 + 0.412e9)) < 0.01e9, n
    # twins share their base's count (Instruct / it / Base / deduped / v0 / seeds)
    assert find("llama-3.2-1b-instruct").params == find("llama-3.2-1b").params
    assert find("pythia-410m-deduped-v0").params == find("pythia-410m").params


def test_memory_figures_and_where_each_model_fits():
    qwen = find("qwen3-0.6b")
    assert hub_models.weights_gib(qwen, "float32") == pytest.approx(qwen.params * 4 / GIB)
    assert hub_models.weights_gib(qwen, torch.bfloat16) == pytest.approx(qwen.params * 2 / GIB)
    need = hub_models.requirements(qwen, "bfloat16", on_gpu=True)
    assert need["gpu"] == pytest.approx(1.2 * need["weights"]) and need["ram"] == pytest.approx(2.5 * need["weights"])
    assert hub_models.requirements(qwen, "float32", on_gpu=False)["gpu"] is None
    t4 = hub_models.FREE_T4
    # the account of a free T4: Llama-3.2-1B, Qwen3-0.6B/1.7B and Pythia up to 1.4B fit; the others do not
    for name in ("llama-3.2-1b", "qwen3-0.6b", "qwen3-1.7b", "pythia-1.4b", "olmo-2-1b", "gpt2"):
        assert hub_models.fits(find(name), t4), name
    for name in ("gemma-2-2b", "llama-3.2-3b", "qwen3-4b", "qwen3-8b", "olmoe-1b-7b", "pythia-2.8b"):
        assert not hub_models.fits(find(name), t4), name
    assert hub_models.place_dtype(find("gemma-2-2b"), t4) == "float32"  # Gemma 2 overflows in float16
    assert hub_models.smallest_gpu(find("gemma-2-2b")) == 24 and hub_models.smallest_gpu(find("qwen3-14b")) == 40
    for name in ("qwen3-0.6b", "pythia-1b", "gpt2-large"):
        assert hub_models.fits(find(name), hub_models.LAPTOP_CPU), name
    for name in ("llama-3.2-1b", "olmo-2-1b", "gemma-2-2b"):  # 14 GiB and more to load in float32
        assert not hub_models.fits(find(name), hub_models.LAPTOP_CPU), name


@pytest.mark.parametrize("doc, markers, table", [
    ("docs/models-and-devices.md", hub_models.README_MARKERS, hub_models.markdown_table),
    ("README.md", hub_models.DEVICE_MARKERS, hub_models.device_table)])
def test_the_docs_carry_the_models_tables(doc, markers, table):
    text = (ROOT / doc).read_text()
    start, end = markers
    assert start in text and end in text, f"{doc} lacks the {start} markers"
    block = text[text.index(start) + len(start): text.index(end)].strip()
    assert block == table(), f"{doc}'s table drifted: run `python -m tutorial_lib.zoo.hub_models --readme {doc}`"


def test_the_device_table_places_every_model_once():
    text = hub_models.device_table()
    for m in hub_models.table_rows():
        assert text.count(f"`{m.alias}`") == 1, m.alias


def test_dtype_follows_the_device(monkeypatch):
    assert devices.default_dtype("cpu") == torch.float32
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (8, 0))
    assert devices.default_dtype("cuda") == torch.bfloat16  # A100, L4, H100
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (7, 5))
    assert devices.default_dtype("cuda") == torch.float16  # T4
    assert loading._choose_dtype(find("qwen3-0.6b"), torch.device("cuda"), None)[0] == "float16"
    dtype, why = loading._choose_dtype(find("gemma-2-2b"), torch.device("cuda"), None)
    assert dtype == "float32" and "Gemma 2 overflows in float16" in why
    assert loading._choose_dtype(find("gemma-2-2b"), torch.device("cpu"), torch.bfloat16) == (
        "bfloat16", "asked for with dtype=")
    assert loading._choose_dtype(find("qwen3-0.6b"), torch.device("cpu"), "bf16")[0] == "bfloat16"
    with pytest.raises(ValueError, match=r"dtype='int8' is not supported; use torch.float32, torch.bfloat16"):
        loading.load_model("qwen3-0.6b", dtype="int8", verbose=False)


def test_too_large_is_refused_before_any_request_with_the_figures(monkeypatch):
    monkeypatch.setattr(devices, "available_ram_bytes", lambda: 8 * GIB)
    t = time.time()
    with pytest.raises(loading.ModelTooLargeError) as err:
        loading.load_model("Qwen/Qwen3-8B", device="cpu", verbose=False)
    assert time.time() - t < 2
    msg = str(err.value)
    for part in ("Qwen/Qwen3-8B", "float32", "76.3 GiB of RAM", "8.0 GiB is available", "before downloading",
                 "qwen3-0.6b", "dtype=torch.bfloat16", "needs a GPU of 24 GB", "check_memory=False"):
        assert part in msg, (part, msg)
    assert isinstance(err.value, MemoryError)
    # a GPU: its free memory against weights + 20%, and RAM for loading
    monkeypatch.setattr(devices, "free_memory_bytes", lambda d=None: 10 * GIB)
    monkeypatch.setattr(devices, "available_ram_bytes", lambda: 64 * GIB)
    with pytest.raises(loading.ModelTooLargeError, match=r"18\.3 GiB of GPU memory .* 10\.0 GiB is free on cuda"):
        loading._check_memory(find("qwen3-8b"), torch.device("cuda"), "bfloat16")
    loading._check_memory(find("llama-3.2-3b"), torch.device("cuda"), "bfloat16")  # 8.1 GiB: fits in 10
    # the same model fits when memory is there; unknown memory (None) never refuses
    monkeypatch.setattr(devices, "available_ram_bytes", lambda: None)
    loading._check_memory(find("qwen3-8b"), torch.device("cpu"), "float32")


def test_bad_names_and_arguments_name_the_value_and_what_is_accepted():
    with pytest.raises(ValueError) as err:
        loading.load_model("qwen3-0.5b", verbose=False)
    msg = str(err.value)
    assert "'qwen3-0.5b'" in msg and "did you mean 'qwen3-0.6b'" in msg
    for part in ("auto", "zoo-multitask", "llama-3.2-1b", "gemma-2-2b-it", "olmoe-1b-7b", "pythia-SIZE",
                 "meta-llama/Llama-3.2-1B", "Qwen/Qwen3-0.6B", "valid_names()"):
        assert part in msg, part
    cases = [
        (dict(name="qwen3-0.6b", checkpoint_step=1000), "Qwen/Qwen3-0.6B has no training checkpoints"),
        (dict(name="olmo-2-1b", checkpoint_step=1000, revision="main"), "give one of revision="),
        (dict(name="olmo-2-1b", checkpoint_step=-5), "checkpoint_step=-5 must be a non-negative integer"),
        (dict(name="olmo-2-1b", checkpoint_index=3), "checkpoint_index= is Pythia's"),
        (dict(name="pythia-70m", checkpoint_tokens=5), "checkpoint_tokens=5: Pythia's checkpoints are named by step"),
        (dict(name="olmo-2-1b", revision=""), "revision='' must be a branch name"),
    ]
    for kwargs, want in cases:
        with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
            loading.load_model(verbose=False, check_memory=False, **kwargs)


def test_olmo_revision_by_step_or_tokens():
    revs = ["main", "stage1-step0-tokens0B", "stage1-step1000-tokens5B", "stage1-step2000-tokens9B",
            "stage2-ingredient1-step1000-tokens5B", "stage2-ingredient2-step1000-tokens5B"]
    name = "allenai/OLMo-2-0425-1B"
    assert loading.olmo_revision(name, revs, step=1000) == "stage1-step1000-tokens5B"  # stage 1 first
    assert loading.olmo_revision(name, revs, tokens=9) == "stage1-step2000-tokens9B"
    with pytest.raises(ValueError, match=r"no revision of .* matches checkpoint_step=1500: .*steps 0..2000"):
        loading.olmo_revision(name, revs, step=1500)
    two = [r for r in revs if r.startswith("stage2")]
    with pytest.raises(ValueError, match=r"matches 2 revisions .* pass revision="):
        loading.olmo_revision(name, two, step=1000)


def test_gated_advice_says_what_to_do():
    no_token = hub_access.RepoStatus("gated", "", 401, token_sent=False)
    text = hub_access.gated_advice("meta-llama/Llama-3.2-1B", no_token)
    for part in ("gated", "HTTP 401", "/meta-llama/Llama-3.2-1B", "accept the licence", "huggingface-cli login",
                 "HF_TOKEN", "qwen3-0.6b"):
        assert part in text, part
    refused = hub_access.gated_advice("google/gemma-2-2b", hub_access.RepoStatus("gated", "", 403, token_sent=True))
    assert "HTTP 403" in refused and "not been granted access" in refused and "accept the licence" in refused
