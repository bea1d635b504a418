"""Answer-key models: transformers whose circuit is known by construction, weights set by hand.

Notebooks 01-04 find circuits in trained models whose true circuit nobody knows. These two models are built
instead, every weight written by hand into a TransformerLens ``HookedTransformer`` (2 layers, 4 heads per layer,
MLPs, no LayerNorm, residual stream of 256 dimensions of which the circuit uses a small part), plus seeded
Gaussian noise of standard deviation ``NOISE`` on every weight so that no score is exactly tied. Each comes with
its **ground-truth circuit** (:class:`~tutorial_lib.core.circuits.Circuit`: nodes, and edges named as in
:class:`~tutorial_lib.methods.eap_graph.EAPGraph`, q/k/v inputs included) and its task
(:mod:`tutorial_lib.tasks.answer_key`):

* :func:`induction_key` -- a **previous-token head** ``a0.h0`` (query and key read the position one-hot: position
  i attends to i - 1; value copies the token into a "previous token" subspace) and an **induction head** ``a1.h0``
  (query: the current token; key: the previous-token subspace, i.e. K-composition; value: the token, written to
  the subspace the unembedding reads as task-token logits).
* :func:`successor_key` -- a **mover head** ``a0.h0`` (query: the marker flag of the last token; key: the number
  flag; value: the token, moved to the last position) and a **lookup MLP** ``m1`` (one ReLU neuron per number,
  writing ``n + 1``): a head -> MLP edge, as in greater-than.

Around each circuit, **distractors** with weights of the same scale do real work on *other* tokens: heads that
attend to the first token, two back, themselves or uniformly, one that moves the very same number as the mover
head, MLPs that look tokens up; all of it written to the logits of a separate set of "other" tokens. Several of
them change between the clean and the corrupted prompt, so a method cannot win by ignoring everything that moves;
none of them changes the task's logit difference (up to the noise). :mod:`tutorial_lib.studies.answer_key` checks
all of it by ablation.

>>> key = induction_key(seed=0)
>>> sorted(key.circuit.nodes), len(key.circuit.edges)
(['a0.h0', 'a1.h0'], 7)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

from ..core.circuits import Circuit
from ..tasks.answer_key import make_repeat_task, make_successor_task

D_MODEL, N_HEADS, D_HEAD, N_CTX = 256, 4, 40, 16
ATTN = 12.0  # attention logit of a match: softmax weight ~1 - 15 e^-12 on it
UNEMBED = 8.0  # logit written per unit of the output subspaces
NOISE = 0.02  # seeded noise added to every weight


@dataclass
class AnswerKey:
    """One answer-key model: the model, its ground-truth circuit, its distractors, its task and its residual layout.

    ``circuit.edges``: the ground-truth edges (``("embed", "a0.h0.q")``, ``("a0.h0", "a1.h0.k")``, ...).
    ``layout``: residual subspace name -> ``slice`` (``"tok"``, ``"pos"``, ``"prev"``, ...).
    ``make_task(n, seed)``: the task's :class:`~tutorial_lib.tasks.base.TaskData`.
    ``roles``: component -> what it does, in words.
    """

    name: str
    model: HookedTransformer
    circuit: Circuit
    distractors: list
    layout: dict
    make_task: Callable
    roles: dict = field(default_factory=dict)
    vocab: dict = field(default_factory=dict)  # part -> token ids ("task", "other", "bos", ...)

    def task(self, n: int = 32, seed: int = 0):
        return self.make_task(n, seed)

    def __repr__(self) -> str:
        return (f"AnswerKey({self.name!r}: circuit {sorted(self.circuit.nodes)} with {len(self.circuit.edges)} edges, "
                f"{len(self.distractors)} distractors)")


class _Layout:
    """Hands out consecutive blocks of residual dimensions by name."""

    def __init__(self, d_model: int):
        self.d_model, self.next, self.blocks = d_model, 0, {}

    def add(self, name: str, size: int) -> slice:
        if self.next + size > self.d_model:
            raise ValueError(f"residual stream of {self.d_model} too small for block {name!r} of {size}")
        self.blocks[name] = slice(self.next, self.next + size)
        self.next += size
        return self.blocks[name]


def _blank_model(d_vocab: int, d_mlp: int, seed: int) -> HookedTransformer:
    cfg = HookedTransformerConfig(n_layers=2, d_model=D_MODEL, n_heads=N_HEADS, d_head=D_HEAD, d_mlp=d_mlp,
                                  d_vocab=d_vocab, n_ctx=N_CTX, act_fn="relu", normalization_type=None,
                                  use_attn_scale=False, seed=seed, device="cpu", default_prepend_bos=False)
    model = HookedTransformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def _add_noise(model: HookedTransformer, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith(("W_Q", "W_K", "W_V", "W_O", "W_in", "W_out", "W_E", "W_pos", "W_U")):
                p.add_(NOISE * torch.randn(p.shape, generator=g))


def set_qk_positions(model, layer: int, head: int, pos: slice, offset: int, scale: float = ATTN) -> None:
    """Make head ``a{layer}.h{head}`` attend from position i to position ``i - offset`` by its QK circuit alone:
    the query of position i and the key of position ``i - offset`` share one head dimension (the residual holds
    the position one-hot in ``pos``). ``offset`` 1: a previous-token head; 0: the head attends to itself."""
    attn = model.blocks[layer].attn
    n = pos.stop - pos.start
    with torch.no_grad():
        attn.W_Q[head, pos, :] = 0
        attn.W_K[head, pos, :] = 0
        for p in range(n):
            if p < D_HEAD:
                attn.W_Q[head, pos.start + p, p] = scale
            if 0 <= p + offset < min(n, D_HEAD):
                attn.W_K[head, pos.start + p, p + offset] = 1.0


def _qk_fixed_key(model, layer, head, query_rows, key_row, scale=ATTN) -> None:
    """Every query reading ``query_rows`` (a slice, or one row) matches the one key feature ``key_row``."""
    attn = model.blocks[layer].attn
    with torch.no_grad():
        attn.W_Q[head, query_rows, 0] = scale
        attn.W_K[head, key_row, 0] = 1.0


def _ov(model, layer, head, src: slice, dst: slice, perm=None) -> None:
    """Value reads dimension ``src.start + i`` and the output writes ``dst.start + perm[i]`` (identity by default)."""
    attn = model.blocks[layer].attn
    n = src.stop - src.start
    perm = list(range(n)) if perm is None else perm
    with torch.no_grad():
        for i in range(n):
            if perm[i] is None:
                continue
            attn.W_V[head, src.start + i, i] = 1.0
            attn.W_O[head, i, dst.start + perm[i]] = 1.0


def _mlp_lookup(model, layer, neurons: list) -> None:
    """``neurons``: ``(input row, output row)`` pairs; neuron j fires ``ReLU(x[in] - 0.5)`` and writes 2x to ``out``."""
    mlp = model.blocks[layer].mlp
    with torch.no_grad():
        for j, (i, o) in enumerate(neurons):
            mlp.W_in[i, j] = 1.0
            mlp.b_in[j] = -0.5
            mlp.W_out[j, o] = 2.0


def _other_map(n_from: int, n_other: int, seed: int) -> list:
    g = torch.Generator().manual_seed(10_000 + seed)
    return [int(x) % n_other for x in torch.randperm(max(n_from, n_other), generator=g)[:n_from]]


def induction_key(seed: int = 0, n_task: int = 12, n_other: int = 12) -> AnswerKey:
    """The induction answer key (see the module docstring): circuit ``a0.h0 -> a1.h0.k``."""
    V = 1 + n_task + n_other
    task_toks, other_toks = list(range(1, 1 + n_task)), list(range(1 + n_task, V))
    L = _Layout(D_MODEL)
    tok, pos, prev, ind = L.add("tok", V), L.add("pos", N_CTX), L.add("prev", V), L.add("induction out", V)
    first, two_back, self_, m0_out = L.add("first token", V), L.add("two back", V), L.add("self", V), L.add("m0 out", V)
    out = L.add("other out", n_other)
    model = _blank_model(V, 2 * V, seed)
    omap = _other_map(V, n_other, seed)
    with torch.no_grad():
        model.W_E[:, tok] = torch.eye(V)
        model.W_pos[:, pos] = torch.eye(N_CTX)
        for t in task_toks:
            model.W_U[ind.start + t, t] = UNEMBED
        for o in range(n_other):
            model.W_U[out.start + o, other_toks[o]] = UNEMBED
    # the circuit
    set_qk_positions(model, 0, 0, pos, 1)  # previous-token head
    _ov(model, 0, 0, tok, prev)
    attn = model.blocks[1].attn
    with torch.no_grad():  # induction head: query = current token, key = previous token (K-composition)
        for t in range(V):
            attn.W_Q[0, tok.start + t, t] = ATTN
            attn.W_K[0, prev.start + t, t] = 1.0
    _ov(model, 1, 0, tok, ind)
    # distractors: real work on the other tokens
    _qk_fixed_key(model, 0, 1, pos, pos.start + 1)  # a0.h1 attends to the first token after BOS
    _ov(model, 0, 1, tok, first)
    set_qk_positions(model, 0, 2, pos, 2)  # a0.h2 attends two back
    _ov(model, 0, 2, tok, two_back)
    set_qk_positions(model, 0, 3, pos, 0)  # a0.h3 attends to itself
    _ov(model, 0, 3, tok, self_)
    _mlp_lookup(model, 0, [(two_back.start + t, m0_out.start + (t * 5 + 3) % V) for t in range(1, V)])
    set_qk_positions(model, 1, 1, pos, 1)  # a1.h1: previous position's m0 output -> other tokens
    _ov(model, 1, 1, m0_out, out, omap)
    set_qk_positions(model, 1, 2, pos, 0)  # a1.h2: the first token (read at self) -> other tokens
    _ov(model, 1, 2, first, out, omap)
    _ov(model, 1, 3, self_, out, omap)  # a1.h3: uniform attention (no QK): the bag of tokens -> other tokens
    _mlp_lookup(model, 1, [(self_.start + t, out.start + omap[(t + 1) % V]) for t in range(1, V)]
                + [(first.start + t, out.start + omap[(t + 7) % V]) for t in range(1, V)])
    _add_noise(model, seed)
    truth = Circuit(["a0.h0", "a1.h0"], name="induction (ground truth)", edges=[
        ("embed", "a0.h0.q"), ("embed", "a0.h0.k"), ("embed", "a0.h0.v"), ("a0.h0", "a1.h0.k"),
        ("embed", "a1.h0.q"), ("embed", "a1.h0.v"), ("a1.h0", "logits")])
    roles = {"a0.h0": "previous-token head (circuit)", "a1.h0": "induction head, K-composition with a0.h0 (circuit)",
             "a0.h1": "attends to the first token", "a0.h2": "attends two back", "a0.h3": "attends to itself",
             "m0": "looks up the token two back", "a1.h1": "m0's output one back -> other tokens",
             "a1.h2": "the first token -> other tokens", "a1.h3": "uniform attention, bag of tokens -> other tokens",
             "m1": "current and first token -> other tokens"}
    return AnswerKey("induction", model, truth, [c for c in roles if c not in truth.nodes], dict(L.blocks),
                     lambda n, s: make_repeat_task(task_toks, 0, n, s), roles,
                     {"bos": [0], "task": task_toks, "other": other_toks})


def successor_key(seed: int = 0, n_numbers: int = 12, n_fillers: int = 8, n_other: int = 12) -> AnswerKey:
    """The lookup answer key (see the module docstring): circuit ``a0.h0 -> m1 -> logits``, answer ``n + 1``."""
    numbers = list(range(1, 1 + n_numbers))
    fillers = list(range(1 + n_numbers, 1 + n_numbers + n_fillers))
    marker = 1 + n_numbers + n_fillers
    other_toks = list(range(marker + 1, marker + 1 + n_other))
    V = marker + 1 + n_other
    succ = {n: numbers[(i + 1) % n_numbers] for i, n in enumerate(numbers)}
    L = _Layout(D_MODEL)
    tok, pos, flags = L.add("tok", V), L.add("pos", N_CTX), L.add("flags", 2)
    moved, prev, second, self_ = L.add("moved", V), L.add("prev", V), L.add("number copy", V), L.add("self", V)
    succ_out, out = L.add("successor out", V), L.add("other out", n_other)
    num_flag, mark_flag = flags.start, flags.start + 1
    model = _blank_model(V, 2 * V, seed)
    omap = _other_map(V, n_other, seed)
    with torch.no_grad():
        model.W_E[:, tok] = torch.eye(V)
        model.W_E[numbers, num_flag] = 1.0
        model.W_E[marker, mark_flag] = 1.0
        model.W_pos[:, pos] = torch.eye(N_CTX)
        for t in numbers:
            model.W_U[succ_out.start + t, t] = UNEMBED
        for o in range(n_other):
            model.W_U[out.start + o, other_toks[o]] = UNEMBED
    # the circuit: the mover head (marker query, number key) and the lookup neurons of m1
    _qk_fixed_key(model, 0, 0, mark_flag, num_flag)
    _ov(model, 0, 0, tok, moved)
    lookup = [(moved.start + n, succ_out.start + succ[n]) for n in numbers]
    # distractors
    set_qk_positions(model, 0, 1, pos, 1)  # a0.h1: previous token
    _ov(model, 0, 1, tok, prev)
    _qk_fixed_key(model, 0, 2, pos, num_flag)  # a0.h2: moves the same number, from every position
    _ov(model, 0, 2, tok, second)
    set_qk_positions(model, 0, 3, pos, 0)  # a0.h3: itself
    _ov(model, 0, 3, tok, self_)
    _mlp_lookup(model, 0, [(second.start + n, out.start + omap[n]) for n in numbers])  # m0: the number -> other
    set_qk_positions(model, 1, 0, pos, 0)  # a1.h0: previous token (read at self) -> other tokens
    _ov(model, 1, 0, prev, out, omap)
    _qk_fixed_key(model, 1, 1, pos, num_flag)  # a1.h1: attends to the number, copies it -> other tokens
    _ov(model, 1, 1, tok, out, omap)
    _ov(model, 1, 2, self_, out, omap)  # a1.h2: uniform -> other tokens
    set_qk_positions(model, 1, 3, pos, 1)  # a1.h3: previous position's number copy -> other tokens
    _ov(model, 1, 3, second, out, omap)
    # m1: the lookup (circuit) and neurons doing other work (fillers at the current position -> other tokens)
    _mlp_lookup(model, 1, lookup + [(self_.start + f, out.start + omap[(f + 3) % V]) for f in fillers])
    _add_noise(model, seed)
    truth = Circuit(["a0.h0", "m1"], name="successor (ground truth)", edges=[
        ("embed", "a0.h0.q"), ("embed", "a0.h0.k"), ("embed", "a0.h0.v"), ("a0.h0", "m1"), ("m1", "logits")])
    roles = {"a0.h0": "moves the number to the last position (circuit)",
             "m1": "looks up n + 1 (circuit; also has neurons for fillers)",
             "a0.h1": "attends to the previous token", "a0.h2": "moves the same number, from every position",
             "a0.h3": "attends to itself", "m0": "the copied number -> other tokens",
             "a1.h0": "the previous token -> other tokens", "a1.h1": "attends to the number -> other tokens",
             "a1.h2": "uniform attention -> other tokens", "a1.h3": "the number copy one back -> other tokens"}
    return AnswerKey("successor", model, truth, [c for c in roles if c not in truth.nodes], dict(L.blocks),
                     lambda n, s: make_successor_task(numbers, fillers, marker, 0, succ, n, s), roles,
                     {"bos": [0], "numbers": numbers, "fillers": fillers, "marker": [marker], "other": other_toks})


ANSWER_KEYS = {"induction": induction_key, "successor": successor_key}


def answer_key(name: str, seed: int = 0) -> AnswerKey:
    """``"induction"`` or ``"successor"`` (:data:`ANSWER_KEYS`), built with ``seed``."""
    if name not in ANSWER_KEYS:
        raise ValueError(f"unknown answer key {name!r}; accepted: {sorted(ANSWER_KEYS)}")
    return ANSWER_KEYS[name](seed=seed)
