"""Checks for notebook 00 (hooks, logit difference, a patching hook)."""
from __future__ import annotations

import copy
from typing import Callable

import torch

from ...core.view import engine_view
from .common import ExerciseError, call_exercise, compare, passed


def _zero_slips(z: torch.Tensor, head: int):
    """The usual wrong zeroings: the right index in the wrong dimension of z [batch, pos, head_index, d_head]."""
    def zeroed(index):
        def alt():
            dim = len(index) - 1 if index[0] is not Ellipsis else z.ndim - 1
            if head >= z.shape[dim]:
                return None  # that slip would have raised an IndexError in the learner's function
            out = z.clone()
            out[index] = 0.0
            return out
        return alt

    layout = "z is [batch, pos, head_index, d_head], so the head is the third index: z[:, :, head] = 0"
    return [
        (f"you zeroed position {head} of every head (z[:, head] indexes the pos dimension): {layout}",
         zeroed((slice(None), head))),
        (f"you zeroed example {head} of the batch (z[head] indexes the batch dimension): {layout}", zeroed((head,))),
        (f"you zeroed entry {head} of d_head in every head (z[..., head] indexes the last dimension): {layout}",
         zeroed((Ellipsis, head))),
    ]


def check_zero_head_hook(zero_head_hook: Callable, model=None) -> None:
    """``zero_head_hook(z, hook, head)`` must return ``z`` with ``z[:, :, head, :]`` set to 0, others intact."""
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(2, 5, 4, 3, generator=gen)
    for head in (0, 2):
        out = call_exercise(zero_head_hook, z.clone(), None, head)
        if out is None:
            raise ExerciseError("zero_head_hook returned None: return the (modified) activation")
        expected = z.clone()
        expected[:, :, head, :] = 0.0
        compare(out, expected, f"zero_head_hook with head={head}", dims=("batch", "pos", "head_index", "d_head"),
                wrong=_zero_slips(z, head))
    if model is not None:
        from ...core.hooks import count_hooks

        tokens = torch.zeros(1, 4, dtype=torch.long)
        with model.hooks(fwd_hooks=[("blocks.0.attn.hook_z", lambda z, hook: zero_head_hook(z, hook, 0))]):
            model(tokens)
        if count_hooks(model):
            raise ExerciseError("a hook is still attached to the model after the run")
    passed("check_zero_head_hook", "only the chosen head's slice is zeroed")


def _answer_minus_wrong(final: torch.Tensor, task, wrong_reduce: str = "mean") -> torch.Tensor:
    """answer logit minus the wrong answers' logits, from logits ``[batch, d_vocab]`` already read at one position."""
    dev = final.device
    right = final.gather(1, task.answers.to(dev)[:, None])[:, 0]
    wrong = final.gather(1, task.wrong.to(dev))
    wrong = {"mean": lambda w: w.mean(1), "sum": lambda w: w.sum(1), "first": lambda w: w[:, 0]}[wrong_reduce](wrong)
    return right - wrong


def _varied_end_case(task, logits, n: int = 8, seed: int = 0):
    """The first ``n`` examples as if they had prompts of different lengths, right-padded: example ``i`` gets
    ``i % 3`` extra positions before its prompt and padding after it, so ``task.end_pos`` differs between
    examples and the last position is always padding. Each example also gets a second wrong answer.
    The logits at the prompt's own positions are the given ones; the added positions get random logits of
    the same scale. Returns ``(task, logits)``."""
    n = min(n, len(task))
    sub = task.subset(range(n))
    lg = logits[:n].detach()
    B, T, V = lg.shape
    lead = torch.arange(n) % 3
    P = 3  # every row ends with at least one padding position
    gen = torch.Generator().manual_seed(seed)
    std = float(lg.float().std()) or 1.0
    mean = float(lg.float().mean())
    out = (torch.randn(B, T + P, V, generator=gen) * std + mean).to(dtype=lg.dtype, device=lg.device)
    var = copy.copy(sub)
    clean = sub.clean[:, :1].repeat(1, T + P)
    corrupt = sub.corrupt[:, :1].repeat(1, T + P)
    for i in range(B):
        s = int(lead[i])
        out[i, s:s + T] = lg[i]
        clean[i, s:s + T] = sub.clean[i]
        corrupt[i, s:s + T] = sub.corrupt[i]
    var.clean, var.corrupt = clean, corrupt
    var.end_pos = sub.end_pos + lead.to(sub.end_pos.device)
    var.positions = {k: v + lead.to(v.device) for k, v in sub.positions.items()}
    if V > sub.wrong.shape[1] + 2:
        extra = torch.randint(0, V, (B,), generator=gen).to(sub.wrong.device)
        for _ in range(sub.wrong.shape[1] + 2):
            taken = (extra == sub.answers.to(extra.device)) | (sub.wrong == extra[:, None]).any(1)
            extra = torch.where(taken, (extra + 1) % V, extra)
        var.wrong = torch.cat([sub.wrong, extra[:, None]], dim=1)
    return var, out


def _logit_diff_slips(task, logits):
    """The usual wrong logit differences, as ``(message, function)`` for :func:`compare`."""
    rows = torch.arange(len(task), device=logits.device)
    end = task.end_pos.to(logits.device)

    def at_end():
        return task.final_logits(logits)

    return [
        (("you read the last position (logits[:, -1]); read each example's task.end_pos -- prompts of different "
          "lengths are right-padded, so the last position can be padding"),
         lambda: _answer_minus_wrong(logits[:, -1], task)),
        (("you read position task.end_pos[0] for every example; read each example's own task.end_pos "
          "(logits[torch.arange(len(task)), task.end_pos])"),
         lambda: _answer_minus_wrong(logits[rows, end[:1].expand(len(end))], task)),
        ("you used only the first wrong answer: subtract the mean logit over all of task.wrong's columns",
         lambda: _answer_minus_wrong(at_end(), task, "first")),
        ("you subtracted the sum of the wrong answers' logits: take their mean",
         lambda: _answer_minus_wrong(at_end(), task, "sum")),
        ("you took probabilities (a softmax): the logit difference uses the raw logits",
         lambda: _answer_minus_wrong(at_end().float().softmax(-1), task)),
    ]


def check_logit_diff(logit_diff: Callable, task=None, logits=None) -> None:
    """``logit_diff(logits, task)`` must match ``task.logit_diff(logits)`` per example: on the given
    task and logits, and on the first examples padded to different lengths (``task.end_pos`` differs
    per example, the last position is padding) with two wrong answers each."""
    if task is None or logits is None:
        raise ValueError("pass the task and the logits you computed: check_logit_diff(fn, task, logits)")
    with torch.no_grad():
        got = call_exercise(logit_diff, logits, task)
        compare(got, task.logit_diff(logits), "logit difference per example", wrong=_logit_diff_slips(task, logits),
                dims=("batch",))
        var, var_logits = _varied_end_case(task, logits)
        got = call_exercise(logit_diff, var_logits, var)
        compare(got, var.logit_diff(var_logits),
                f"logit difference per example, on {len(var)} prompts padded to different lengths "
                f"(end_pos {var.end_pos.tolist()}, {var.wrong.shape[1]} wrong answers each)",
                wrong=_logit_diff_slips(var, var_logits), dims=("batch",))
    passed("check_logit_diff", f"mean logit difference {task.logit_diff(logits).mean().item():.3f}")


def _patched_logits(model, run_tokens, source_tokens, layer: int, last_only: bool = False):
    """Logits of ``run_tokens`` with MLP ``layer``'s output taken from the run on ``source_tokens``."""
    name = f"blocks.{layer}.hook_mlp_out"
    with torch.no_grad():
        _, cache = model.run_with_cache(source_tokens, names_filter=name)

        def hook(act, hook):
            if not last_only:
                return cache[name]
            act = act.clone()
            act[:, -1] = cache[name][:, -1]
            return act

        with model.hooks(fwd_hooks=[(name, hook)]):
            return model(run_tokens)


def _patch_slips(model, clean, corrupt, l: int, layers):
    """The usual wrong patched logits at layer ``l``, as ``(message, function)`` for :func:`compare`."""
    def run(tokens):
        return lambda: model(tokens).detach()

    def patched(run_tokens, source_tokens, layer, last_only=False):
        return lambda: _patched_logits(model, run_tokens, source_tokens, layer, last_only)

    slips = [
        ((f"your logits are the corrupted run's with the clean MLP {l} output patched in: clean and corrupted "
          f"are swapped -- cache blocks.{l}.hook_mlp_out on `corrupt`, then run `clean` with the hook"),
         patched(corrupt, clean, l)),
        (("your logits equal the clean run's: the patch changed nothing (does the hook return the cached "
          f"corrupted value, and is it attached to blocks.{l}.hook_mlp_out?)"), run(clean)),
        (("your logits equal the corrupted run's: run the *clean* tokens, with only MLP "
          f"{l}'s output taken from the corrupted run"), run(corrupt)),
        (f"you patched only the last position: replace MLP {l}'s output at every position",
         patched(clean, corrupt, l, last_only=True)),
    ]
    for other in sorted({*layers, l - 1, l + 1} - {l}):
        if 0 <= other < model.cfg.n_layers:
            slips.append(((f"you patched MLP {other} instead of MLP {l}: use the `layer` argument "
                           "(blocks.{layer}.hook_mlp_out)"), patched(clean, corrupt, other)))
    return slips


def check_patch_hook(patch_mlp_output: Callable, model, clean, corrupt, layer: int = 0) -> None:
    """``patch_mlp_output(model, clean, corrupt, layer)`` -> logits of the clean run with MLP ``layer``'s
    output replaced by its corrupted value (at every position). Checked at ``layer`` and at a
    neighbouring layer (so that the ``layer`` argument must be used)."""
    from ...core.hooks import count_hooks

    n_layers = model.cfg.n_layers
    layers = [layer] + ([layer + 1 if layer + 1 < n_layers else layer - 1] if n_layers > 1 else [])
    for l in layers:
        got = call_exercise(patch_mlp_output, model, clean, corrupt, l)
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        expected = _patched_logits(model, clean, corrupt, l)
        with torch.no_grad():
            compare(got, expected, f"logits with MLP {l} patched", atol=1e-3,
                    wrong=_patch_slips(model, clean, corrupt, l, layers), dims=("batch", "pos", "d_vocab"))
    passed("check_patch_hook", f"MLP {layer} patched from the corrupted run")


def _head_result(model, tokens, layer: int, head: int) -> torch.Tensor:
    """Head ``head`` of ``layer``'s output in the residual stream, from TransformerLens's own per-head result
    (``hook_result``, switched on for this one run): the independent reference for :func:`check_head_output`."""
    with engine_view(model, attn_result=True), torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=f"blocks.{layer}.attn.hook_result")
    return cache[f"blocks.{layer}.attn.hook_result"][:, :, head].detach()


def check_head_output(head_output: Callable, model, tokens) -> None:
    """``head_output(cache, model, layer, head)`` must return ``[batch, pos, d_model]``: head ``head``'s output
    written into the residual stream, ``z[:, :, head] @ W_O[layer, head]`` (no bias: ``b_O`` belongs to the layer).
    Compared with TransformerLens's own per-head result (``hook_result``) at two (layer, head) pairs."""
    cfg = model.cfg
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens)
    pairs = [(0, min(1, cfg.n_heads - 1)), (cfg.n_layers - 1, 0)]
    for layer, head in pairs:
        got = call_exercise(head_output, cache, model, layer, head)
        z = cache[f"blocks.{layer}.attn.hook_z"]
        slips = [
            ("you added the layer's bias b_O: it is added once to the sum of all heads, not to each head's output",
             lambda: z[:, :, head] @ model.W_O[layer, head] + model.b_O[layer]),
            ((f"you returned blocks.{layer}.hook_attn_out, the whole layer's attention output (all heads summed, plus "
              "b_O): take only head `head`'s slice of hook_z through its own W_O"), lambda: cache[f"blocks.{layer}.hook_attn_out"]),
            ((f"you used hook_v (the values before the attention pattern mixes positions): the head's output is "
              "hook_z (the pattern-weighted values) through W_O"), lambda: cache[f"blocks.{layer}.attn.hook_v"][:, :, head] @ model.W_O[layer, head]),
        ]
        for other in sorted({(layer, h) for h in range(cfg.n_heads)} | {(l, head) for l in range(cfg.n_layers)} - {(layer, head)}):
            slips.append((f"you computed the output of a{other[0]}.h{other[1]}, not a{layer}.h{head}: use the `layer` and "
                          "`head` arguments", lambda o=other: cache[f"blocks.{o[0]}.attn.hook_z"][:, :, o[1]] @ model.W_O[o]))
        compare(got, _head_result(model, tokens, layer, head), f"the output of a{layer}.h{head}", atol=1e-4,
                wrong=slips, dims=("batch", "pos", "d_model"))
    passed("check_head_output", f"a{pairs[0][0]}.h{pairs[0][1]} and a{pairs[1][0]}.h{pairs[1][1]} match TransformerLens's own per-head result")


# --------------------------------------------------------------------------- could the claim have failed?
def claim_table():
    """The rows shown to the learner: a claim's test result beside what its run says about the control, the baseline
    and the noise (``draws``: distinct control draws possible; ``baseline`` and its ``range``; ``interval``: the 95%
    bootstrap interval of the margin)."""
    return [
        {"claim": "circuit beats a layer-matched control", "holds": True, "draws": 1, "baseline": 0.42,
         "range": (0.0, 1.0), "interval": (0.10, 0.30)},
        {"claim": "reuse above random", "holds": True, "draws": 5_000, "baseline": 0.0, "range": (0.0, 1.0),
         "interval": (0.15, 0.40)},
        {"claim": "MLPs beat random heads", "holds": True, "draws": 35_960, "baseline": 0.55, "range": (0.0, 1.0),
         "interval": (-0.05, 0.20)},
        {"claim": "circuit recovers the metric", "holds": True, "draws": 4_960, "baseline": 0.30, "range": (0.0, 1.0),
         "interval": (0.35, 0.52)},
    ]


_HELD_BACK = [  # rows the table does not show, near each threshold
    {"draws": 19, "baseline": 0.5, "range": (0.0, 1.0), "interval": (0.2, 0.4)},
    {"draws": 20, "baseline": 0.5, "range": (0.0, 1.0), "interval": (0.2, 0.4)},
    {"draws": 500, "baseline": 1.0, "range": (0.0, 1.0), "interval": (0.2, 0.4)},
    {"draws": 500, "baseline": 0.02, "range": (0.0, 1.0), "interval": (0.2, 0.4)},
    {"draws": 500, "baseline": 3.0, "range": (0.0, 10.0), "interval": (0.2, 0.4)},
    {"draws": 500, "baseline": 0.5, "range": (0.0, 1.0), "interval": (-0.4, -0.1)},  # clearly worse: a real failure
    {"draws": 500, "baseline": 0.5, "range": (0.0, 1.0), "interval": (-0.1, 0.1)},
]
_SLIPS = {
    "draws": "a control with fewer than 20 distinct draws cannot stand for 'components like these': count the draws",
    "ceiling": "a baseline at its ceiling (or within 5% of its range of it) cannot be beaten at all",
    "floor": "a baseline at its floor (exactly 0, say) is beaten by anything above 0: it leaves no room to fail",
    "noise": "a margin whose 95% interval includes 0 is within the run's own noise, whichever way the test came out",
    None: "every power check passes (20+ draws, a baseline inside its range, an interval that excludes 0), so the "
          "claim could have failed: it is a real test, whichever way it came out",
}


def _first_weak(row) -> "str | None":
    from ..claims import away_from_bounds, beyond_noise_interval, enough_draws

    lo, hi = row["range"]
    if not enough_draws(row["draws"]).ok:
        return "draws"
    if not away_from_bounds(row["baseline"], lo, hi).ok:
        return "floor" if row["baseline"] <= (lo + hi) / 2 else "ceiling"
    if not beyond_noise_interval(*row["interval"]).ok:
        return "noise"
    return None


def check_could_have_failed(could_have_failed: Callable) -> None:
    """``could_have_failed(row) -> bool``: True when the claim in ``row`` was a real test (every power check passes),
    whatever its result; checked on the table's rows and on held-back rows near each threshold."""
    rows = [dict(r) for r in claim_table()] + [{**r, "claim": "a held-back row", "holds": False} for r in _HELD_BACK]
    for row in rows:
        weak = _first_weak(row)
        got = call_exercise(could_have_failed, dict(row))
        if not isinstance(got, bool):
            raise ExerciseError(f"could_have_failed must return True or False, got {got!r}")
        if got != (weak is None):
            raise ExerciseError(f"for {row['claim']!r} (draws {row['draws']}, baseline {row['baseline']} in "
                                f"{row['range']}, interval {row['interval']}) you said {got}: {_SLIPS[weak]}")
    passed("check_could_have_failed", f"{len(rows)} rows, {len(_HELD_BACK)} of them held back")
