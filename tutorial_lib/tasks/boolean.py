"""Boolean logic (as in Li & Subramani 2026): "Evaluate: not (true and false) or false =" -> " true".

* Expressions: a random tree with ``min_ops``..``max_ops`` binary operators (``and`` / ``or``, default
  2..6). Every operand (a literal or a sub-expression) is negated with ``not`` with probability
  ``p_not`` (0.3), and every inner sub-expression is wrapped in parentheses with probability
  ``p_paren`` (0.5) -- always when it is negated. The value is that of the *printed string* under the
  usual precedence (``not`` > ``and`` > ``or``; Python's), which the model has to learn.
* Answer ``" true"`` / ``" false"``; ``wrong`` is the other one. Metric: logit difference.
* Corruption: one literal flipped (true <-> false) such that the value flips; the token length is
  unchanged (checked). Expressions where no single flip changes the value are redrawn and counted in
  ``dropped``.
* Prompts differ in length: they are right-padded with the pad token and ``end_pos`` is per example.
* Train/test split by the expression string (:func:`~tutorial_lib.tasks.tokenizers.split_of`). The
  train split also rejects any expression one of whose sub-expressions with two or more operators is
  a test expression, so held-out expressions never appear inside training data either.

>>> task = make_boolean("gpt2", 4, seed=0, max_ops=3)
>>> task.prompts[0]
'<|endoftext|> Evaluate: false and (false or true) and true ='
"""
from __future__ import annotations

from dataclasses import dataclass

import random

from .base import TaskData
from .tokenizers import Example, TrainBatch, assemble, check_n, check_split, get_tokenizer, split_of, train_batch

_VALUES = {"true": True, "false": False}


@dataclass(repr=False)
class BooleanData(TaskData):
    """Boolean-logic examples; ``metric`` = logit(correct) - logit(incorrect) of " true"/" false"."""

    metric_name: str = "logit difference (correct - incorrect)"


def _gen(rng, k: int, top: bool, p_not: float, p_paren: float, nodes: list) -> list[str]:
    """Words of a random expression with ``k`` binary operators; records inner sub-expressions."""
    if k == 0:
        words = ["true" if rng.random() < 0.5 else "false"]
    else:
        left = rng.randrange(k)
        op = "and" if rng.random() < 0.5 else "or"
        words = _gen(rng, left, False, p_not, p_paren, nodes) + [op] + _gen(rng, k - 1 - left, False, p_not,
                                                                            p_paren, nodes)
        if k >= 2 and not top:
            nodes.append(" ".join(words))
    if top:
        return words
    negate = rng.random() < p_not
    if k > 0 and (negate or rng.random() < p_paren):
        words = ["("] + words + [")"]
    return (["not"] + words) if negate else words


def evaluate(expr: str) -> bool:
    """Value of an expression of true/false/and/or/not/parentheses (precedence not > and > or).

    >>> evaluate("not true or false and true"), evaluate("not (true or false) or (true)")
    (False, True)
    """
    return _value(expr.replace("(", " ( ").replace(")", " ) ").split(), expr)


def _value(words: list[str], expr: str = "") -> bool:
    """Recursive-descent evaluation of a word list (what :func:`evaluate` does after splitting)."""
    pos = 0

    def fail(msg):
        raise ValueError(f"not a boolean expression: {expr or ' '.join(words)!r} ({msg})")

    def atom() -> bool:
        nonlocal pos
        if pos >= len(words):
            fail("ends too early")
        w = words[pos]
        pos += 1
        if w == "not":
            return not atom()
        if w == "(":
            v = disj()
            if pos >= len(words) or words[pos] != ")":
                fail("unbalanced parenthesis")
            pos += 1
            return v
        if w in _VALUES:
            return _VALUES[w]
        return fail(f"unexpected {w!r}")

    def conj() -> bool:
        nonlocal pos
        v = atom()
        while pos < len(words) and words[pos] == "and":
            pos += 1
            v = atom() and v
        return v

    def disj() -> bool:
        nonlocal pos
        v = conj()
        while pos < len(words) and words[pos] == "or":
            pos += 1
            v = conj() or v
        return v

    v = disj()
    if pos != len(words):
        fail(f"unexpected {words[pos]!r}")
    return v


def _pieces(words: list[str]) -> list[str]:
    """Word-boundary pieces: a space before each word, none after '(' or before ')'; runs of
    parentheses stay one piece (GPT-2 has tokens such as "))" that span them)."""
    out = [" Evaluate", ":"]
    for w in words:
        if w in "()" and out[-1].strip() and set(out[-1].strip()) == {w}:
            out[-1] += w  # extend a run "((" / "))"
        elif w == ")":
            out.append(")")
        else:
            out.append(w if out[-1].endswith("(") else " " + w)
    return out + [" ="]


def _check(min_ops, max_ops, p_not, p_paren):
    if not (isinstance(min_ops, int) and isinstance(max_ops, int) and 1 <= min_ops <= max_ops):
        raise ValueError(f"need integers 1 <= min_ops <= max_ops, got min_ops={min_ops!r}, max_ops={max_ops!r}")
    for name, v in (("p_not", p_not), ("p_paren", p_paren)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")


def _sample(n, seed, split, min_ops, max_ops, p_not, p_paren, corrupt: bool = True, max_tries: int = 1000):
    _check(min_ops, max_ops, p_not, p_paren)
    check_split(split)
    rng = random.Random(f"boolean-{seed}")  # scalar draws: much faster than numpy here
    out, dropped = [], {}

    def count(reason):
        dropped[reason] = dropped.get(reason, 0) + 1

    for _ in range(check_n(n)):
        for _try in range(max_tries):
            nodes: list[str] = []
            words = _gen(rng, rng.randint(min_ops, max_ops), True, p_not, p_paren, nodes)
            expr = " ".join(words).replace("( ", "(").replace(" )", ")")
            if split_of(expr) != split:
                continue  # the other split's expression: not a drop, just not ours
            if split == "train" and any(split_of(s.replace("( ", "(").replace(" )", ")")) == "test" for s in nodes):
                count("train expression containing a test sub-expression")
                continue
            value = _value(words)
            if not corrupt:
                break
            lits = [i for i, w in enumerate(words) if w in _VALUES]
            flips = []
            for i in lits:
                alt = list(words)
                alt[i] = "false" if words[i] == "true" else "true"
                if _value(alt) != value:
                    flips.append(alt)
            if flips:
                break
            count("no single-literal flip changes the value")
        else:
            raise ValueError(f"boolean: no usable expression in {max_tries} tries (min_ops={min_ops}, "
                             f"max_ops={max_ops}, split={split!r})")
        ans = " true" if value else " false"
        other = " false" if value else " true"
        cw = flips[rng.randrange(len(flips))] if corrupt else []
        out.append(Example(_pieces(words), _pieces(cw) if corrupt else [], ans, [other],
                           info={"expr": expr, "value": value}))
    return out, dropped


def make_boolean(tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test", min_ops: int = 2,
                 max_ops: int = 6, p_not: float = 0.3, p_paren: float = 0.5) -> BooleanData:
    """Build ``n`` boolean-logic examples with literal-flip corruptions (see the module docstring)."""
    tokenizer = get_tokenizer(tokenizer)
    examples, dropped = _sample(n, seed, split, min_ops, max_ops, p_not, p_paren)
    return assemble(BooleanData, "boolean", tokenizer, examples, dropped)


def sample_boolean_ids(n: int, seed: int = 0, split: str = "train", tokenizer="zoo", min_ops: int = 2,
                       max_ops: int = 6, p_not: float = 0.3, p_paren: float = 0.5) -> TrainBatch:
    """Fast training pairs: prompt ids (with BOS, right-padded) and the " true"/" false" token."""
    tokenizer = get_tokenizer(tokenizer)
    return train_batch(tokenizer, _sample(n, seed, split, min_ops, max_ops, p_not, p_paren, corrupt=False)[0])
