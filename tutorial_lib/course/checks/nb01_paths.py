"""Checks for notebook 01's path-patching exercises: sender -> logits (exercise 3), then the engine written by the
learner: ``path_patch`` (one sender at one position into one receiver -- an MLP's input or one head's query, key or
value input -- every other component frozen at its clean output, exercise 4) and ``search_step`` (every sender into
one receiver: one step of the search, exercise 5).

Each check compares with the library's engine and, when the numbers differ, runs the usual slips (the ``_*variant``
functions, independent slow references with the slips as options) to say which one the learner made."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from .common import ExerciseError, call_exercise, compare, passed


def _direct_variant(model, task, sender: str, sign: float = 1.0, at: str = "final", replace: bool = False):
    """Sender -> logits by hand: the right answer (default arguments) and the usual slips -- the difference
    taken the wrong way round (``sign=-1``), added to the model's input (``at="input"``), sent through ``W_U``
    past the final LayerNorm (``at="logits"``), or the residual at END replaced by the sender's corrupted output
    (``replace``)."""
    from ...methods.lens import component_output

    dev = model.cfg.device
    clean, corrupt = task.clean.to(dev), task.corrupt.to(dev)
    rows, end = torch.arange(clean.shape[0], device=dev), task.end_pos.to(dev)
    new = component_output(model, corrupt, sender, end)
    delta = sign * (new - component_output(model, clean, sender, end))

    def hook(resid, hook):
        resid = resid.clone()
        if replace:
            resid[rows, end] = new.to(resid.dtype)
        else:
            resid[rows, end] += delta.to(resid.dtype)
        return resid

    if at == "logits":  # the change sent through W_U by hand, past the final LayerNorm
        with torch.no_grad():
            logits = model(clean).clone()
            logits[rows, end] += (delta @ model.W_U).to(logits.dtype)
        return task.metric(logits).float().cpu()
    name = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post" if at == "final" else "blocks.0.hook_resid_pre"
    with model.hooks(fwd_hooks=[(name, hook)]):
        return task.metric(model(clean)).float().cpu()


@torch.no_grad()
def _activation_patched(model, task, sender: str, end_only: bool = False):
    """The metric with the sender's output itself taken from the corrupted run (every path it feeds): at every
    position, or at END only."""
    from ...core.components import output_hook, parse

    comp = parse(sender, model)
    name = output_hook(comp)
    dev = model.cfg.device
    clean, corrupt = task.clean.to(dev), task.corrupt.to(dev)
    rows, end = torch.arange(clean.shape[0], device=dev), task.end_pos.to(dev)
    _, cache = model.run_with_cache(corrupt, names_filter=name)
    where = (rows, end) if end_only else (slice(None), slice(None))
    if comp.kind == "head":
        where = where + (comp.head,)

    def hook(act, hook):
        act = act.clone()
        act[where] = cache[name][where]
        return act

    with model.hooks(fwd_hooks=[(name, hook)]):
        return task.metric(model(clean)).float().cpu()


def _direct_slips(model, task, sender: str):
    """The usual wrong sender -> logits answers, as ``(message, function)`` for :func:`compare`."""
    every_path = ("you patched the sender's output for every path (activation patching); path patching adds its "
                  "change only to the final residual stream (the last layer's hook_resid_post), so that only the "
                  "direct path to the logits carries it")
    return [
        ("the sign is flipped: the difference to add is the corrupted output minus the clean one "
         "(component_output on task.corrupt minus on task.clean)", lambda: _direct_variant(model, task, sender, -1.0)),
        ("you replaced the residual stream at END by the sender's corrupted output (`=`): add the difference to it "
         "(`+=`), so that everything else the residual stream holds stays", lambda: _direct_variant(
             model, task, sender, replace=True)),
        ("you added the change to the logits through W_U, so the final LayerNorm was not recomputed on the patched "
         "residual: add it to the last layer's hook_resid_post, before ln_final, and let the model finish the run",
         lambda: _direct_variant(model, task, sender, at="logits")),
        ("you added the difference at blocks.0.hook_resid_pre, the model's input: then every layer sees it (every "
         "path). Add it to the last layer's hook_resid_post, so that only the direct path to the logits carries it",
         lambda: _direct_variant(model, task, sender, at="input")),
        (every_path, lambda: _activation_patched(model, task, sender)),
        (every_path, lambda: _activation_patched(model, task, sender, end_only=True)),
    ]


def check_direct_path_patch(direct_path_patch: Callable, model, task, sender: str = "m1") -> None:
    """``direct_path_patch(model, task, sender)`` must return the per-example metric when only the
    direct path sender -> logits carries the corrupted value at END (as
    ``path_patch(..., senders=[sender], receivers="logits", sender_positions=task.end_pos)``).

    Checked on ``sender`` and on ``m0`` (``a0.h0`` in a model without MLPs), whose output also reaches the
    logits through every later layer: for the last layer's MLP the direct path is its only one, so there
    patching its output on every path (activation patching) gives the same numbers."""
    from ...core.hooks import count_hooks
    from ...methods.path_patching import path_patch

    first_layer = "a0.h0" if getattr(model.cfg, "attn_only", False) else "m0"
    senders = [sender] + ([first_layer] if sender != first_layer and model.cfg.n_layers > 1 else [])
    with torch.no_grad():
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    means = []
    for s in senders:
        got = call_exercise(direct_path_patch, model, task, s)
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("direct_path_patch returned None: return the metric per prompt")
        expected = path_patch(model, task.clean, task.corrupt, [s], "logits", task.metric,
                              sender_positions=task.end_pos, logit_positions=task.end_pos)["patched"]
        expected = expected.detach().float().cpu()
        got_t = torch.as_tensor(got).detach().float().cpu()
        if got_t.shape == expected.shape and not torch.allclose(expected, clean_metric, atol=1e-4) \
                and torch.allclose(got_t, clean_metric, atol=1e-4):
            raise ExerciseError("your result equals the clean run's metric: the hook did not change anything "
                                "(is it attached to the right hook point, and does it return the patched tensor?)")
        compare(got_t, expected, f"metric per prompt with {s} -> logits patched at END", atol=1e-3,
                wrong=_direct_slips(model, task, s), dims=("batch",))
        means.append(float(expected.mean()))
    passed("check_direct_path_patch", f"{sender} -> logits: mean metric {means[0]:.3f}"
           + (f" (and {senders[1]} -> logits, whose output also reaches the logits through later layers: "
              f"{means[1]:.3f})" if len(senders) > 1 else ""))


# a head-input case is built only where a sweep over every sender is cheap enough for a check
HEAD_CASE_MAX_COMPONENTS = 400


def _positions(task, position: str) -> torch.Tensor:
    from ...tasks.base import task_positions

    return task_positions(task, position)


@torch.no_grad()
def _path_variant(model, task, sender: str, receiver: str, position: str = "END", *, sign: float = 1.0,
                  into: str = "input", every_position: bool = False, head_output: str = "END",
                  activation: bool = False) -> torch.Tensor:
    """The metric per prompt with ``sender`` (at ``position``) patched into ``receiver`` only: the right answer
    with the default arguments (an independent slow reference for the engine), and the usual slips:

    * ``sign=-1``: the change taken the wrong way round (clean minus corrupted);
    * ``into="resid"``: the change added to the residual stream the receiver reads (``hook_resid_pre`` of its
      layer for a head, ``hook_resid_mid`` for an MLP), so every later component sees it;
    * ``into="q"`` / ``"k"`` / ``"v"``: a head receiver's other input patched;
    * ``into="layer"``: the change added to that input of *every* head of the receiver's layer;
    * ``every_position``: the sender's change added at every position, not only at ``position``;
    * ``head_output="all"``: a head receiver's changed output kept at every position (the engine keeps it at END,
      where the circuit reads the head, and the clean output elsewhere);
    * ``activation``: the sender's own output replaced by its corrupted value (every path it feeds, not one).
    """
    from ...core.components import output_hook, parse
    from ...core.view import engine_view
    from ...methods.lens import component_output

    dev = model.cfg.device
    clean, corrupt = task.clean.to(dev), task.corrupt.to(dev)
    rows, end = torch.arange(clean.shape[0], device=dev), task.end_pos.to(dev)
    pos = _positions(task, position).to(dev)
    if activation:
        comp = parse(sender, model)
        name = output_hook(comp)
        _, cache = model.run_with_cache(corrupt, names_filter=name)
        where = (rows, pos) + ((comp.head,) if comp.kind == "head" else ())

        def swap(act, hook):
            act = act.clone()
            act[where] = cache[name][where]
            return act

        with model.hooks(fwd_hooks=[(name, swap)]):
            return task.metric(model(clean)).float().cpu()
    if every_position:
        T = clean.shape[1]
        delta = torch.stack([component_output(model, corrupt, sender, torch.full_like(pos, p))
                             - component_output(model, clean, sender, torch.full_like(pos, p)) for p in range(T)], 1)
    else:
        delta = component_output(model, corrupt, sender, pos) - component_output(model, clean, sender, pos)
    delta = sign * delta
    rec = parse(receiver, model)
    if rec.kind not in ("mlp", "head") or (rec.kind == "head" and not rec.input):
        raise ValueError(f"receiver {receiver!r}: give an MLP ('m2') or a head's input ('a2.h3.q', '.k' or '.v')")

    def add(x, head: Optional[int] = None):
        x = x.clone()
        sel = (slice(None), slice(None)) if every_position else (rows, pos)
        if head is None:
            x[sel] += delta.to(x.dtype)
        else:
            x[sel + (head,)] += delta.to(x.dtype)
        return x

    L = rec.layer
    with engine_view(model, split_qkv=True, mlp_in=True):
        if into == "resid":
            name = f"blocks.{L}.hook_resid_pre" if rec.kind == "head" else f"blocks.{L}.hook_resid_mid"
            hooks = [(name, lambda x, hook: add(x))]
        elif rec.kind == "mlp":
            hooks = [(f"blocks.{L}.hook_mlp_in", lambda x, hook: add(x))]
        else:
            which = rec.input if into in ("input", "layer") else into
            if into == "layer":
                hooks = [(f"blocks.{L}.hook_{which}_input",
                          lambda x, hook: x + (add(x[..., 0, :]) - x[..., 0, :]).unsqueeze(-2))]
            else:
                hooks = [(f"blocks.{L}.hook_{which}_input", lambda x, hook: add(x, rec.head))]
        if rec.kind == "head" and into not in ("resid", "layer") and head_output == "END":
            z_name = f"blocks.{L}.attn.hook_z"
            _, cache = model.run_with_cache(clean, names_filter=z_name)
            clean_z = cache[z_name]

            def only_end(z, hook):
                new = z.clone()
                new[:, :, rec.head] = clean_z[:, :, rec.head]
                new[rows, end, rec.head] = z[rows, end, rec.head]
                return new

            hooks.append((z_name, only_end))
        with model.hooks(fwd_hooks=hooks):
            return task.metric(model(clean)).float().cpu()


def _reference(model, task, receiver: str, position: str, senders="all"):
    from ...methods.path_discovery import discover_step

    return discover_step(model, task, receiver, sender_position=position, senders=senders, progress=False)


def _slips(model, task, sender: str, receiver: str, position: str) -> list:
    v = lambda **kw: (lambda: _path_variant(model, task, sender, receiver, position, **kw))  # noqa: E731
    head = "." in receiver
    resid_hook = "hook_resid_pre" if head else "hook_resid_mid"
    memo = {}

    def same_both():  # where nothing lies between the sender and the receiver's hook point the two slips coincide
        memo["act"], memo["resid"] = v(activation=True)(), v(into="resid")()
        return memo["act"] if torch.allclose(memo["act"], memo["resid"], atol=1e-6) else None

    wrong = [
        ("the sign is flipped: the change to add is the sender's corrupted output minus its clean output",
         v(sign=-1.0)),
        (f"you replaced the sender's own output by its corrupted value (activation patching) or added the change to "
         f"the residual stream ({resid_hook}); here both let every later component see it. Path patching sends the "
         "change into the receiver's input only", same_both),
        ("you replaced the sender's own output by its corrupted value, so every component after it saw the change "
         "(that is activation patching); path patching sends the change into the receiver's input only",
         v(activation=True)),
        (f"you added the change to the residual stream ({resid_hook}): then every later component reads it too, "
         "not only the receiver's input", v(into="resid")),
        (f"you added the sender's change at every position: only {position} carries it in this step",
         v(every_position=True)),
    ]
    if head:
        which = receiver.rsplit(".", 1)[1]
        for x in "qkv":
            if x == which:
                continue
            message = (f"you patched the head's {x} input, but the receiver is its {which} input "
                       f"(hook_{x}_input and hook_{which}_input are separate with split inputs)")
            if x == "q" and position != "END":
                message = ("your result equals the clean run's metric: either the change never reached the model, or "
                           f"you patched the head's q input, which at {position} does not change what the head writes "
                           f"at END; the receiver is its {which} input")
            wrong.append((message, v(into=x)))
        wrong += [
            (f"you added the change to the {which} input of every head in the layer: index the receiver's head "
             f"(the third axis of hook_{which}_input)", v(into="layer")),
            ("the receiver head's changed output was kept at every position: the search reads a circuit head at END, "
             "so keep its clean output elsewhere (hook_z at the other positions from the clean run)",
             v(head_output="all")),
        ]
    return wrong


def _head_case(model, task, head: str, which: str, position: str) -> Optional[tuple[str, str, str]]:
    """A sender with a clear effect into ``head``'s ``which`` input at ``position`` (the library's sweep picks it)."""
    if model.cfg.n_layers * (model.cfg.n_heads + 1) > HEAD_CASE_MAX_COMPONENTS:
        return None
    receiver = f"{head}.{which}"
    step = _reference(model, task, receiver, position)
    effects = {s: e for s, e in step.effects.items() if step.reaches(s) and e == e}
    if not effects:
        return None
    return max(effects, key=lambda s: abs(effects[s])), receiver, position


def _lower_head_case(model, task, layer: int, layers_tried: int = 2) -> list:
    """A last-layer head's output away from END never reaches the metric, so keeping it there is no slip: the key
    input of a head below, the one of ``layer`` (or of the layer under it, ...) where keeping its changed output at
    every position changes the metric most, if by more than 1e-4 (the check's tolerance is 1e-5)."""
    for lower in range(layer, max(layer - layers_tried, 0), -1):
        gaps = {}
        for h in range(model.cfg.n_heads):
            case = _head_case(model, task, f"a{lower}.h{h}", "k", "YY")
            if case is not None:
                right = _path_variant(model, task, *case)
                gaps[case] = float((_path_variant(model, task, *case, head_output="all") - right).abs().max())
        best = max(gaps, key=gaps.get, default=None)
        if best is not None and gaps[best] > 1e-4:
            return [best]
    return []


def check_path_patch(path_patch: Callable, model, task, sender: str, receiver: str, head: Optional[str] = None) -> None:
    """``path_patch(model, task, sender, receiver, position)`` must return the metric per prompt when ``sender``'s
    change at ``position`` reaches only ``receiver``'s input, as the library's ``discover_step`` computes it, to 1e-5.

    Cases: ``sender`` -> the MLP ``receiver`` at END; then, if ``head`` (e.g. a circuit head, not in layer 0) is
    given, the library's strongest sender at YY into its key and value inputs and at END into its query input (and,
    for a head of the last layer, into the key input of the same head one layer down)."""
    from ...core.hooks import count_hooks

    from ...core.components import parse

    cases = [(sender, receiver, "END")]
    if head is not None:
        for which, position in (("k", "YY"), ("v", "YY"), ("q", "END")):
            if position != "END" and position not in task.positions:
                continue
            case = _head_case(model, task, head, which, position)
            if case is not None:
                cases.append(case)
        layer = parse(head, model).layer
        if layer == model.cfg.n_layers - 1 and layer >= 2 and "YY" in task.positions:
            cases += _lower_head_case(model, task, layer - 1)
    with torch.no_grad():  # the same for every case
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    for s, r, position in cases:
        got = call_exercise(path_patch, model, task, s, r, position)
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("path_patch returned None: return the metric per prompt")
        expected = _reference(model, task, r, position, senders=[s]).per_example[s].detach().float().cpu()
        got_t = torch.as_tensor(got).detach().float().cpu()
        unchanged = ("your result equals the clean run's metric, so the change never reached the model (is the hook "
                     "on the receiver's input hook point, inside `engine_view`, and does it return the changed "
                     "activation?)")
        compare(got_t, expected, f"metric per prompt with {s} (at {position}) -> {r}", atol=1e-5, rtol=1e-5,
                wrong=_slips(model, task, s, r, position) + [(unchanged, clean_metric)], dims=("batch",))
    passed("check_path_patch", "; ".join(f"{s} -> {r} at {p}" for s, r, p in cases)
           + ": equal to discover_step's to 1e-5")


def check_search_step(search_step: Callable, model, task, receiver: str, position: str = "END") -> None:
    """``search_step(model, task, receiver, position)`` must return ``{sender: effect}`` for every sender that can
    reach ``receiver`` (a component that writes to the residual stream before the receiver reads it), with
    ``effect`` = the mean over prompts of (path-patched metric - clean metric), as ``discover_step``'s
    ``effects``, to 1e-5."""
    got = call_exercise(search_step, model, task, receiver, position)
    if not isinstance(got, dict):
        raise ExerciseError(f"search_step should return a dict {{sender name: effect}}; got {type(got).__name__}")
    step = _reference(model, task, receiver, position)
    expected = {s: e for s, e in step.effects.items() if step.reaches(s)}
    missing = [s for s in expected if s not in got]
    extra = [s for s in got if s not in expected]
    if extra:
        raise ExerciseError(f"{len(extra)} of your senders cannot reach {receiver} (e.g. {extra[:3]}): a sender must "
                            "write to the residual stream before the receiver reads it -- a head of the receiver's own "
                            "layer, or a later component, has no path into it")
    if missing:
        raise ExerciseError(f"{len(missing)} senders that reach {receiver} are missing (e.g. {missing[:3]}): loop over "
                            "every head, every MLP and 'embed' before the receiver")
    names = list(expected)
    got_t = torch.tensor([float(got[s]) for s in names])
    exp_t = torch.tensor([expected[s] for s in names])
    base = step.baseline_examples.float().cpu()
    patched = torch.tensor([float(step.per_example[s].float().mean()) for s in names])
    clean_mean = float(base.mean())
    wrong = [
        ("you returned the path-patched metric itself; the effect is its change from the clean run's metric",
         lambda: patched),
        ("the effect has the wrong sign: patched minus clean, not clean minus patched", lambda: -exp_t),
        ("the effects are divided by the clean metric: give them in the metric's own units",
         lambda: exp_t / clean_mean if abs(clean_mean) > 1e-9 else exp_t * float("nan")),
    ]
    compare(got_t, exp_t, f"effects of the {len(names)} senders into {receiver} at {position} (in residual order)",
            atol=1e-5, rtol=1e-5, wrong=wrong, dims=("sender",))
    top = min(expected, key=expected.get)
    passed("check_search_step", f"{len(names)} senders into {receiver} at {position}; the strongest negative: {top} "
                                f"{expected[top]:+.4f}; equal to discover_step's to 1e-5")
