"""The zoo's word-level tokenizer: whole words, GPT-2-style leading spaces, years split like GPT-2.

GPT-2 reads the year 1732 as two tokens, ``" 17"`` and ``"32"``; the zoo tokenizer does the same, and
has single tokens ``"00"`` ... ``"99"`` (and ``" 00"`` ... ``" 99"``), so the greater-than task lines up
token for token with the paper's. Every other piece of text is a whole word with its leading space
(``" lasted"``), a punctuation mark, or a newline. Numbers of one to three digits standing alone are one
token (``" 7"``, ``" 45"``, ``" 123"``), which keeps addition answers to a single token.

The tokenizer is a real Hugging Face ``PreTrainedTokenizerFast`` (built with the ``tokenizers``
library, saved as ``tokenizer.json``), so TransformerLens' ``to_tokens``, ``to_str_tokens`` and
``to_single_token`` work on it unchanged, with no network access.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

BOS = "<|endoftext|>"
UNK = "<|unk|>"
PAD = "<|pad|>"
# Alone-standing 1-3 digit numbers are one token; a 4-digit year splits as " 17" + "32" like GPT-2.
PATTERN = r" ?\d{1,3}(?!\d)| ?\d\d|\d\d| ?[A-Za-z]+(?:'[a-z]+)?|\n| ?[^\sA-Za-z\d]"


def number_tokens() -> list[str]:
    """Number tokens: '0'..'999' and ' 0'..' 999' (covers '00'..'99' two-digit forms too)."""
    out = []
    for n in range(1000):
        out += [str(n), f" {n}"]
    for n in range(10):  # zero-padded two-digit forms used by years: "02", " 05"
        out += [f"0{n}", f" 0{n}"]
    return out


def build_tokenizer(words: list[str], extra_tokens: list[str] = ()) -> Tokenizer:
    """Build the word-level tokenizer for ``words`` (each added with and without a leading space)."""
    vocab: dict[str, int] = {}

    def add(tok: str) -> None:
        if tok not in vocab:
            vocab[tok] = len(vocab)

    for special in (BOS, PAD, UNK):
        add(special)
    for w in words:
        add(w)
        add(" " + w)
    for t in number_tokens():
        add(t)
    for t in list(extra_tokens) + ["\n"] + [c for c in ".,:;?!()+-=*/'\"<>[]{}&|#%$@_"]:
        add(t)
        if t != "\n":
            add(" " + t)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


def wrap(tok: Tokenizer):
    """Wrap a ``tokenizers.Tokenizer`` as the ``PreTrainedTokenizerFast`` TransformerLens expects."""
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=BOS, unk_token=UNK, pad_token=PAD
    )
    fast.padding_side = "right"
    return fast


def save(tok: Tokenizer, directory: str | Path) -> Path:
    """Save as ``tokenizer.json`` plus the Hugging Face side files, loadable with ``from_pretrained``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    wrap(tok).save_pretrained(str(directory))
    return directory


def load(directory: str | Path):
    """Load a saved zoo tokenizer (offline) as a ``PreTrainedTokenizerFast``."""
    from transformers import PreTrainedTokenizerFast

    directory = Path(directory)
    if not (directory / "tokenizer.json").exists():
        raise FileNotFoundError(f"no zoo tokenizer at {directory}; run `python -m tutorial_lib.zoo build`")
    fast = PreTrainedTokenizerFast.from_pretrained(str(directory), local_files_only=True)
    fast.padding_side = "right"
    return fast


def vocab_size(directory: str | Path) -> int:
    return len(json.loads((Path(directory) / "tokenizer.json").read_text())["model"]["vocab"])
