"""Checks for notebook 01 (greater-than): the probability difference and the sufficiency test (the path-patching
exercises' checks are in :mod:`.nb01_paths`)."""
from __future__ import annotations

from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed


def _prob_diff_of(final: torch.Tensor, task, over: str = "vocab", geq: bool = False) -> torch.Tensor:
    """The probability difference from logits ``[batch, d_vocab]`` already read at one position; ``over="years"``
    takes the softmax over the 100 year tokens only, ``geq`` counts YY itself as correct (two usual slips)."""
    final = final.float()
    ids = task.year_ids.to(final.device)
    probs = final[:, ids].softmax(-1) if over == "years" else final.softmax(-1)[:, ids]
    years, yy = torch.arange(100, device=final.device)[None], task.yy.to(final.device)[:, None]
    good = years >= yy if geq else years > yy
    return ((probs * good).sum(1) - (probs * ~good).sum(1)).cpu()


def _prob_diff_slips(task, logits):
    """The usual wrong probability differences, as ``(message, function)`` for :func:`compare`."""
    rows = torch.arange(len(task), device=logits.device)
    end = task.end_pos.to(logits.device)

    def at_end():
        return task.final_logits(logits)

    return [
        ("you took the softmax over the 100 year tokens only: take it over the whole vocabulary, then pick the "
         "year tokens", lambda: _prob_diff_of(at_end(), task, over="years")),
        ("YY itself counts as a wrong answer: correct years are strictly greater than YY",
         lambda: _prob_diff_of(at_end(), task, geq=True)),
        (("you read the last position (logits[:, -1]); read each prompt's END, task.final_logits(logits) -- prompts "
          "of different lengths are right-padded, so the last position can be padding"),
         lambda: _prob_diff_of(logits[:, -1], task)),
        (("you read position task.end_pos[0] for every prompt; read each prompt's own END, "
          "task.final_logits(logits)"), lambda: _prob_diff_of(logits[rows, end[:1].expand(len(end))], task)),
    ]


def check_prob_diff(prob_diff: Callable, task, logits) -> None:
    """``prob_diff(logits, task)`` must equal ``task.prob_diff(logits)`` per example: at END, the sum of
    p(year) over the 100 year tokens above YY minus the sum over those at or below YY (softmax over the
    full vocabulary). Checked on the given task and logits, and on the first prompts padded to different
    lengths (END differs per prompt and the last position is padding; every greater-than prompt has the
    same length, so only this case tells ``logits[:, -1]`` from END)."""
    from .nb00 import _varied_end_case

    with torch.no_grad():
        got = call_exercise(prob_diff, logits, task)
        expected = task.prob_diff(logits)
        compare(got, expected, "probability difference per example", wrong=_prob_diff_slips(task, logits),
                dims=("batch",))
        var, var_logits = _varied_end_case(task, logits)
        got = call_exercise(prob_diff, var_logits, var)
        compare(got, var.prob_diff(var_logits),
                f"probability difference per example, on {len(var)} prompts padded to different lengths "
                f"(END at positions {var.end_pos.tolist()}, the last position is padding)",
                wrong=_prob_diff_slips(var, var_logits), dims=("batch",))
    passed("check_prob_diff", f"mean probability difference {expected.mean().item():.3f}")


@torch.no_grad()


def check_sufficiency(sufficiency: Callable, model, task, components=("embed", "a0.h1", "m0", "m1")) -> None:
    """``sufficiency(model, task, components)`` must return the per-example metric when every head,
    MLP and the embedding *outside* ``components`` takes its output from the corrupted run (at every
    position) and the components themselves are recomputed on that mixed input, as
    ``circuit_sufficiency(model, task, Circuit(components))``.

    Checked on ``components``, on the same set with ``"embed"`` toggled (removed if it is there, added if
    not), so that a version which always keeps the embedding clean -- or always corrupts it -- gives a wrong
    answer on one of the two, and, when ``components`` holds MLPs, on the set without its MLPs (a circuit may
    hold every MLP, and then a version that never corrupts an MLP looks right), and on its first non-embedding
    component alone (which tells "always corrupts the embedding" from the necessity test). A wrong answer is named from
    all the results together (with the embedding corrupted and nothing else clean, several slips give the same
    fully corrupted run)."""
    from ...core.components import all_heads, all_mlps, parse
    from ...core.hooks import count_hooks

    comps = list(components)
    toggled = [c for c in comps if c != "embed"] if "embed" in comps else ["embed", *comps]
    cases = [comps, toggled]
    no_mlps = [c for c in comps if parse(c, model).kind != "mlp"]
    if len(no_mlps) < len(comps):
        cases.append(no_mlps)
    # one component without the embedding: where corrupting the embedding corrupts nearly everything (the YY
    # token is the only difference), "always corrupts the embedding" and the necessity test agree on the sets
    # above; on a single component they do not
    single = [c for c in comps if c != "embed"][:1]
    if single and single not in cases:
        cases.append(single)
    results = []  # (components, learner's metric, library's evaluation)
    for case in cases:
        got = call_exercise(sufficiency, model, task, list(case))
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("sufficiency returned None: return the metric per prompt")
        results.append((case, torch.as_tensor(got).detach().float().cpu(), _sufficiency(model, task, case)))

    def close(a, b):
        b = torch.as_tensor(b).detach().float().cpu()
        return a.shape == b.shape and torch.allclose(a, b, atol=1e-3, rtol=1e-4)

    wrong_ones = [case for case, got, ev in results if not close(got, ev.per_example)]
    if wrong_ones:
        mlps, heads = list(all_mlps(model)), list(all_heads(model))
        layer_mates = lambda c: [h for h in heads if any(x.startswith(h.split(".")[0] + ".") for x in c)]  # noqa: E731
        slips = [
            (("you kept a circuit head's whole layer clean (every head of its hook_z): only the circuit's own heads stay "
              "clean; corrupt the others of that layer (index the head axis, z[:, :, h])"),
             lambda c: _sufficiency(model, task, sorted({*c, *layer_mates(c)})).per_example
             if set(layer_mates(c)) - set(c) else None),
            (("you corrupted the circuit and kept the rest clean (that is the necessity test): "
              "sufficiency corrupts everything *outside* the circuit"),
             lambda c: _necessity(model, task, c)),
            (("the embedding was not corrupted: when 'embed' is not in components, hook_embed must take the "
              "corrupted run's value, like every other component outside the circuit"),
             lambda c: _sufficiency(model, task, c if "embed" in c else ["embed", *c]).per_example),
            (("you corrupted the embedding even though 'embed' is in components: the embedding is then part of "
              "the circuit and stays clean"),
             lambda c: _sufficiency(model, task, [x for x in c if x != "embed"]).per_example),
            (("the MLPs outside the circuit were not corrupted: every MLP not in components must take its output "
              "(blocks.{l}.hook_mlp_out) from the corrupted run, like the heads outside it"),
             lambda c: _sufficiency(model, task, [*c, *(m for m in mlps if m not in c)]).per_example),
            (("the heads outside the circuit were not corrupted: every head not in components must take its output "
              "(its slice of blocks.{l}.attn.hook_z) from the corrupted run"),
             lambda c: _sufficiency(model, task, [*c, *(h for h in heads if h not in c)]).per_example),
        ]
        for message, slip in slips:
            outs = [slip(case) for case, _, _ in results]
            if any(o is not None for o in outs) and all(o is None or close(got, o) for (_, got, _), o in zip(results, outs)) \
                    and any(o is not None and not close(ev.per_example, o) for (_, _, ev), o in zip(results, outs)):
                raise ExerciseError(f"metric per prompt with only {wrong_ones[0]} clean: {message}")
        for case, got, ev in results:
            compare(got, ev.per_example, f"metric per prompt with only {case} clean", atol=1e-3, dims=("batch",),
                    wrong=[(message, lambda slip=slip, case=case: slip(case)) for message, slip in slips])
    ev = results[0][2]
    passed("check_sufficiency", f"only {', '.join(comps)} clean: {ev.value:.3f} "
                                f"({100 * ev.fraction_of_clean:.0f}% of the full model's {ev.clean:.3f})")


def _sufficiency(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_sufficiency

    return circuit_sufficiency(model, task, Circuit(list(comps), name="exercise"))


def _necessity(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_necessity

    return circuit_necessity(model, task, Circuit(list(comps), name="exercise")).per_example


# ------------------------------------------------------------------ activation patching over heads (section 3)
@torch.no_grad()
def _head_patch_variant(model, task, denoise: bool = False, end_only: bool = False, whole_layer: bool = False,
                        minus_clean: bool = True) -> torch.Tensor:
    """``[n_layers, n_heads]`` mean metric change with one head's ``hook_z`` slice taken from the other run, by hand:
    the right answer (defaults) and the usual slips (the runs swapped, only END patched, the whole layer patched,
    the clean metric not subtracted)."""
    cfg, dev = model.cfg, model.cfg.device
    clean, corrupt = task.clean.to(dev), task.corrupt.to(dev)
    run, source = (corrupt, clean) if denoise else (clean, corrupt)
    rows, end = torch.arange(clean.shape[0], device=dev), task.end_pos.to(dev)
    _, cache = model.run_with_cache(source, names_filter=lambda n: n.endswith("attn.hook_z"))
    base = float(task.metric(model(run)).float().mean()) if minus_clean else 0.0
    out = torch.zeros(cfg.n_layers, cfg.n_heads)
    for layer in range(cfg.n_layers):
        name = f"blocks.{layer}.attn.hook_z"
        for head in range(cfg.n_heads):
            def hook(z, hook, head=head):
                z = z.clone()
                h = slice(None) if whole_layer else head
                if end_only:
                    z[rows, end, h] = cache[name][rows, end, h]
                else:
                    z[:, :, h] = cache[name][:, :, h]
                return z

            with model.hooks(fwd_hooks=[(name, hook)]):
                out[layer, head] = float(task.metric(model(run)).float().mean()) - base
    return out


def check_patch_each_head(patch_each_head: Callable, model, task) -> None:
    """``patch_each_head(model, task)`` must return ``[n_layers, n_heads]``: for each head, the mean over prompts of
    ``task.metric`` when that head's output (its slice of ``blocks.L.attn.hook_z``) takes the corrupted run's value
    at every position, minus the mean metric of the clean run. Compared with the library's engine,
    :func:`tutorial_lib.methods.patching.patch_heads` (noising)."""
    from ...core.hooks import count_hooks
    from ...methods.patching import patch_heads

    got = call_exercise(patch_each_head, model, task)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    expected = patch_heads(model, task.clean, task.corrupt, task.metric, logit_positions=task.end_pos,
                           progress=False).values
    slips = [
        ("you patched the clean head into the corrupted run (denoising): run the *clean* prompts and give one head "
         "its corrupted output", lambda: _head_patch_variant(model, task, denoise=True)),
        ("you returned the patched metric itself: subtract the clean run's mean metric, so that 0 means 'no effect'",
         lambda: _head_patch_variant(model, task, minus_clean=False)),
        ("you patched only at END: give the head its corrupted output at every position (the prompts differ at YY, "
         "and the head's output after YY carries it)", lambda: _head_patch_variant(model, task, end_only=True)),
        ("you patched every head of the layer at once (z[:, :, :] or the whole hook_z): patch only z[:, :, head]",
         lambda: _head_patch_variant(model, task, whole_layer=True)),
    ]
    compare(got, expected, "Δ metric per head", atol=1e-4, wrong=slips, dims=("layer", "head"))
    l, h = divmod(int(torch.as_tensor(expected).argmin()), model.cfg.n_heads)
    passed("check_patch_each_head", f"matches patch_heads; a{l}.h{h} costs most ({float(expected[l, h]):+.3f})")


# ------------------------------------------------------------------ necessity (section 6)
def check_necessity(necessity: Callable, model, task, components=("a0.h1", "m0")) -> None:
    """``necessity(model, task, components)`` must return the per-prompt metric when the listed components
    (heads, MLPs, ``"embed"``) take their output from the corrupted run at every position and everything else runs
    on the clean prompt, as ``circuit_necessity(model, task, Circuit(components))``. Checked on ``components``, on
    them with ``"embed"`` toggled, and on the first one alone."""
    from ...core.components import parse
    from ...core.hooks import count_hooks

    comps = [c for c in components if c != "embed"]
    cases = [comps, ["embed", *comps], comps[:1]]
    mlps_of = lambda case: [c for c in case if parse(c, model).kind == "mlp"]  # noqa: E731
    clean_metric = lambda: task.metric(model(task.clean)).detach()  # noqa: E731
    slips = [
        (("you corrupted everything *outside* the components (that is the sufficiency test): necessity corrupts "
          "only the listed components"), lambda case: _sufficiency(model, task, case).per_example),
        (("the embedding was corrupted although 'embed' is not in components: hook_embed stays clean unless it "
          "is listed"), lambda case: _necessity(model, task, ["embed", *case])),
        ("'embed' is in components but the embedding stayed clean: corrupt hook_embed when it is listed",
         lambda case: _necessity(model, task, rest) if (rest := [c for c in case if c != "embed"]) else clean_metric()),
        (("the listed MLPs were not corrupted: an MLP in components takes blocks.{l}.hook_mlp_out from the "
          "corrupted run"),
         lambda case: _necessity(model, task, rest) if (rest := [c for c in case if c not in mlps_of(case)]) else clean_metric()),
    ]
    results = []
    for case in cases:
        got = call_exercise(necessity, model, task, list(case))
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("necessity returned None: return the metric per prompt")
        results.append((case, torch.as_tensor(got).detach().float().cpu(), _necessity(model, task, case)))

    def close(a, b):
        b = torch.as_tensor(b).detach().float().cpu()
        return a.shape == b.shape and torch.allclose(a, b, atol=1e-3, rtol=1e-4)

    wrong_ones = [case for case, got, exp in results if not close(got, exp)]
    if wrong_ones:  # name a slip only if it explains every case (several give the fully corrupted run on one case)
        for message, slip in slips:
            if all(close(got, slip(case)) for case, got, _ in results):
                raise ExerciseError(f"metric per prompt with {wrong_ones[0]} corrupted: {message}")
        for case, got, exp in results:
            compare(got, exp, f"metric per prompt with {case} corrupted", atol=1e-3, dims=("batch",),
                    wrong=[(m, lambda slip=slip, case=case: slip(case)) for m, slip in slips])
    ev = _necessity(model, task, comps).mean().item()
    passed("check_necessity", f"{', '.join(comps)} corrupted: {ev:.3f}")
