"""Checks for notebook 01's path-patching exercises: sender -> logits (exercise 2), sender -> an MLP's input
(exercise 3), chaining steps 1 and 2 (exercise 4)."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from .common import ExerciseError, call_exercise, compare, passed


def _direct_variant(model, task, sender: str, sign: float = 1.0, at: str = "final", replace: bool = False):
    """Sender -> logits by hand: the right answer (default arguments) and the usual slips -- the difference
    taken the wrong way round (``sign=-1``), added to the model's input (``at="input"``), or the residual at
    END replaced by the sender's corrupted output (``replace``)."""
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


def _mlp_layer(model, receiver: str) -> int:
    from ...core.components import parse

    c = parse(receiver, model)
    if c.kind != "mlp":
        raise ValueError(f"receiver {receiver!r} is not an MLP; give 'm<layer>', e.g. 'm{model.cfg.n_layers - 1}'")
    return c.layer


@torch.no_grad()
def _mlp_path_variant(model, task, sender: str, receiver: str, sign: float = 1.0, frozen_ln: bool = False,
                      into: str = "mlp", all_positions: bool = False, downstream: bool = True) -> torch.Tensor:
    """Sender -> MLP ``receiver`` by hand, with hooks: the right answer (default arguments, an independent
    slow reference for the path-patching engine) and the usual slips (the other arguments).

    ``into="mlp"``: only the MLP's input sees the sender's change (recomputed through ``ln2``; ``frozen_ln``
    keeps the clean run's LayerNorm scale); ``"resid_mid"`` / ``"resid_pre"``: the change is added to the
    residual stream before the MLP / before the receiver's layer, so every later component sees it.
    ``downstream=False``: the MLP's changed output reaches the logits directly only (later layers frozen)."""
    from ...methods.lens import component_output

    layer = _mlp_layer(model, receiver)
    clean, corrupt = task.clean.to(model.cfg.device), task.corrupt.to(model.cfg.device)
    rows, end = torch.arange(clean.shape[0]), task.end_pos.to(clean.device)
    if all_positions:
        T = clean.shape[1]
        delta = torch.stack([component_output(model, corrupt, sender, torch.full_like(end, p))
                             - component_output(model, clean, sender, torch.full_like(end, p)) for p in range(T)], 1)
    else:
        delta = component_output(model, corrupt, sender, end) - component_output(model, clean, sender, end)

    def add(resid):
        resid = resid.clone()
        if all_positions:
            resid += sign * delta
        else:
            resid[rows, end] += sign * delta
        return resid

    if into in ("resid_mid", "resid_pre"):
        hook = f"blocks.{layer}.hook_{into}"
        with model.hooks(fwd_hooks=[(hook, lambda r, hook: add(r))]):
            return task.metric(model(clean))
    mid, scale = f"blocks.{layer}.hook_resid_mid", f"blocks.{layer}.ln2.hook_scale"
    _, cache = model.run_with_cache(clean, names_filter=lambda n: n in (mid, scale, f"blocks.{layer}.hook_mlp_out"))
    block = model.blocks[layer]
    x = add(cache[mid])
    if frozen_ln and scale in cache:
        x = x - x.mean(-1, keepdim=True)
        x = x / cache[scale]
        if hasattr(block.ln2, "w"):
            x = x * block.ln2.w + block.ln2.b
    else:
        x = block.ln2(x)
    new_out = block.mlp(x)
    if not downstream:
        last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
        change = new_out - cache[f"blocks.{layer}.hook_mlp_out"]
        with model.hooks(fwd_hooks=[(last, lambda r, hook: r + change)]):
            return task.metric(model(clean))
    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
        return task.metric(model(clean))


def check_path_patch_to_mlp(path_patch_to_mlp: Callable, model, task, sender: str, receiver: str) -> None:
    """``path_patch_to_mlp(model, task, sender, receiver)`` must return the per-prompt metric when the
    sender's corrupted output at END reaches *only the input of MLP* ``receiver`` (its LayerNorm recomputed),
    every other component keeps its clean output, and everything after the MLP is recomputed -- the value
    ``discover_step(model, task, receiver, "END", senders=[sender])`` holds for that sender, to 1e-5."""
    from ...core.hooks import count_hooks
    from ...methods.path_discovery import discover_step

    got = call_exercise(path_patch_to_mlp, model, task, sender, receiver)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    if got is None:
        raise ExerciseError("path_patch_to_mlp returned None: return the metric per prompt")
    step = discover_step(model, task, receiver, sender_position="END", senders=[sender], progress=False)
    expected = step.per_example[sender].detach().float().cpu()
    got_t = torch.as_tensor(got).detach().float().cpu()
    with torch.no_grad():
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    if got_t.shape == expected.shape and torch.allclose(got_t, clean_metric, atol=1e-6) \
            and not torch.allclose(expected, clean_metric, atol=1e-6):
        raise ExerciseError("your result equals the clean run's metric: the MLP's new output never reached the "
                            "model (does the hook on hook_mlp_out return the new output?)")
    v = lambda **kw: (lambda: _mlp_path_variant(model, task, sender, receiver, **kw))  # noqa: E731
    wrong = [
        ("the sign is flipped: the change to add is corrupted minus clean (the sender's corrupted output "
         "replaces its clean one)", v(sign=-1.0)),
        ("you added the change to hook_resid_mid, so every component after it saw the sender's corrupted value "
         "too (that is activation patching of the residual stream); only the MLP's input should see it",
         v(into="resid_mid")),
        ("you added the change to the receiver's hook_resid_pre: then its layer's attention and every later "
         "component see it, not only the MLP's input", v(into="resid_pre")),
        ("the LayerNorm scale was kept at the clean run's value: recompute ln2 on the patched residual "
         "(call block.ln2 on it), as the paper does", v(frozen_ln=True)),
        ("you patched the sender at every position: only END carries the change in this step",
         v(all_positions=True)),
        ("the MLP's new output was added to the final residual stream only, so later layers never saw it: replace "
         "hook_mlp_out and let the rest of the model run", v(downstream=False)),
    ]
    compare(got_t, expected, f"metric per prompt with {sender} -> {receiver} (input) patched at END",
            atol=1e-5, rtol=1e-5, wrong=wrong, dims=("batch",))
    _check_mlp_second_pair(path_patch_to_mlp, model, task, receiver)
    effect = float((expected - step.baseline_examples.float().cpu()).mean())
    passed("check_path_patch_to_mlp", f"{sender} -> {receiver}: effect {effect:+.4f} on the mean metric, "
                                      "equal to discover_step's to 1e-5")


def _check_mlp_second_pair(path_patch_to_mlp: Callable, model, task, receiver: str) -> None:
    """A second case for ``check_path_patch_to_mlp`` when the given receiver is the last layer's MLP: there only
    END reaches the logits, so patching the sender at every position gives the same metric. Into m0, from the
    layer-0 head for which that slip differs most, the other positions reach END through later layers. Skipped on
    models with more than SECOND_CASE_MAX_COMPONENTS heads + MLPs (it would cost minutes on a CPU)."""
    from ...methods.path_discovery import discover_step

    L, H = model.cfg.n_layers, model.cfg.n_heads
    if L < 2 or int(receiver[1:]) != L - 1 or L * (H + 1) > SECOND_CASE_MAX_COMPONENTS:
        return
    senders = [f"a0.h{h}" for h in range(H)]
    step = discover_step(model, task, "m0", sender_position="END", senders=senders, progress=False)
    gap = {s: float((_mlp_path_variant(model, task, s, "m0", all_positions=True)
                     - step.per_example[s].detach().float().cpu()).abs().max()) for s in senders}
    sender = max(gap, key=gap.get)
    if gap[sender] < 1e-4:
        return
    got = call_exercise(path_patch_to_mlp, model, task, sender, "m0")
    if got is None:
        raise ExerciseError("path_patch_to_mlp returned None: return the metric per prompt")
    compare(torch.as_tensor(got).detach().float().cpu(), step.per_example[sender].detach().float().cpu(),
            f"metric per prompt with {sender} -> m0 (input) patched at END", atol=1e-5, rtol=1e-5, dims=("batch",),
            wrong=[("you patched the sender at every position: only END carries the change in this step (into m0, "
                    "the other positions reach END through the later layers)",
                    lambda: _mlp_path_variant(model, task, sender, "m0", all_positions=True))])


class _EndSearch:
    """The steps of the END search on one task, each run once, and the sets that the right answer and the usual
    slips return at a given threshold."""

    def __init__(self, model, task):
        self.model, self.task, self.steps = model, task, {}

    def step(self, receiver: str, position: str = "END"):
        from ...methods.path_discovery import discover_step

        if (receiver, position) not in self.steps:
            self.steps[receiver, position] = discover_step(self.model, self.task, receiver, sender_position=position,
                                                           progress=False)
        return self.steps[receiver, position]

    def first(self, t: Optional[float], sign: str = "negative") -> list:
        from ...methods.path_patching import top_senders

        return top_senders(self.step("logits"), threshold=t, sign=sign)

    def mlps(self, t: Optional[float], sign: str = "negative") -> list:
        """Step 1's MLPs, strongest first."""
        return [c for c in self.first(t, sign) if c.startswith("m")]

    def into(self, m: str, t: Optional[float], sign: str = "negative", position: str = "END") -> set:
        from ...methods.path_patching import top_senders

        return set(top_senders(self.step(m, position), threshold=t, sign=sign))

    def search(self, t: Optional[float], sign: str = "negative", position: str = "END", strongest_only: bool = False,
               keep_first: bool = True) -> set:
        mlps = self.mlps(t, sign)
        found = set(self.first(t, sign)) if keep_first else set()
        for m in mlps[:1] if strongest_only else mlps:
            found |= self.into(m, t, sign, position)
        return found

    def positive_extra(self, t: float) -> set:
        """Senders with a positive effect of at least ``t`` in step 1 or in a step into one of step 1's MLPs that
        the right search does not keep: a version that keeps both signs returns them too (no extra step run)."""
        extra = set(self.first(t, "positive"))
        for m in self.mlps(t):
            extra |= self.into(m, t, "positive")
        return extra - self.search(t)

    def tells_apart(self, t: float) -> tuple[bool, bool]:
        """(both signs kept, step 2 into the strongest MLP only): does each give a set of its own at ``t``?"""
        return bool(self.positive_extra(t)), self.search(t, strongest_only=True) != self.search(t)

    def threshold_for(self, threshold: float, need: Sequence[bool], extra_steps: int = 2
                      ) -> tuple[Optional[float], bool]:
        """The largest threshold, ``threshold`` itself or lower, at which the slips flagged in ``need`` (both signs
        kept, step 2 into the strongest MLP only) give sets of their own, running at most ``extra_steps`` steps
        into MLPs beyond those that ``threshold`` needs, and ``True``; failing that, one where some of them do, and
        ``False``; else ``(None, False)``. The candidates are the steps' own effect sizes (the sets change only
        there)."""
        budget = len(self.mlps(threshold)) + extra_steps
        fallback, t = None, threshold
        while t is not None:
            if len(self.mlps(t)) > budget:
                break
            apart = [ok for ok, n in zip(self.tells_apart(t), need) if n]  # runs the steps into any new MLP
            if all(apart):
                return t, True
            if any(apart) and fallback is None:
                fallback = t
            below = [abs(e) * (1 - 1e-4) for res in list(self.steps.values()) for e in res.effects.values()
                     if e == e and 0 < abs(e) * (1 - 1e-4) < t]
            t = max(below, default=None)
        return fallback, False


def _separating_case(alternatives, done, ref, few, threshold: float, extra_steps: int = 2):
    """A (steps, threshold) case, not among ``done``, where the sets that ``alternatives`` give all differ (failing
    that, where some do), or ``None``: ``threshold`` and lower thresholds taken from the steps' own effects
    (largest first), on the few prompts first, then on all of them; at most ``extra_steps`` steps into MLPs
    beyond what ``threshold`` needs."""
    budget = len(ref.mlps(threshold)) + extra_steps
    partial = None
    for r in [x for x in (few, ref) if x is not None]:
        t = threshold
        while t is not None and len(r.mlps(t)) <= budget:
            if (r, t) not in done:
                sets = {frozenset(alt(r, t)) for alt in alternatives}  # runs the steps the slips need
                if len(sets) == len(alternatives):
                    return r, t
                if len(sets) > 1 and partial is None:
                    partial = (r, t)
            t = max((abs(e) * (1 - 1e-4) for res in list(r.steps.values()) for e in res.effects.values()
                     if e == e and 0 < abs(e) * (1 - 1e-4) < t), default=None)
    return partial


SECOND_CASE_MAX_COMPONENTS = 64  # heads + MLPs; GPT-2 small has 156, the medium zoo model 36


def check_end_search(end_search: Callable, model, task, threshold: float, second_prompts: int = 2) -> None:
    """``end_search(model, task, threshold)`` chains steps 1 and 2 by hand and must return the set of
    components found at END: the senders into the logits (step 1, negative effects of at least
    ``threshold``) plus, for every MLP among them, the senders into that MLP's input (step 2).

    Where ``threshold`` cannot tell the right set from that of a version which keeps both signs, or which runs
    step 2 into the strongest MLP only (on a model where no positive effect reaches the threshold, or where the
    other MLPs add nothing new), the check also runs it in a second case where they differ: on the first
    ``second_prompts`` prompts (cheap: the steps' cost grows with the prompts) at the largest threshold up to
    ``threshold`` where they do, or, if there is none, on all the prompts at a lower threshold (the steps run for
    the first case are reused). The thresholds are chosen from the steps' own effects, and the second case runs
    into at most 2 MLPs more than the first. A wrong answer is named from all the results together; where
    several usual slips explain them (on the zoo model, step 2 run at YY finds nothing that step 1 has not), the
    check runs the answer once more, on a case where those slips' sets differ, if it finds one."""
    ref = _EndSearch(model, task)

    def run(on, t):
        got = call_exercise(end_search, model, on, t)
        if got is None:
            raise ExerciseError("end_search returned None: return the set of component names found at END")
        if isinstance(got, dict):
            got = set(got)
        if not isinstance(got, (set, frozenset, list, tuple)) or not all(isinstance(c, str) for c in got):
            raise ExerciseError(f"end_search should return a set of component names like {{'m1', 'a0.h3'}}; "
                                f"got {got!r}")
        return set(got)

    cases = [(ref, threshold, run(task, threshold), "")]  # (steps, threshold, the learner's set, where)
    few = _EndSearch(model, task.subset(range(second_prompts))) if second_prompts < len(task) else None
    need = [not x for x in ref.tells_apart(threshold)]
    # the second case costs extra path-patching steps: only on models small enough for them to be quick (the zoo's)
    if any(need) and model.cfg.n_layers * (model.cfg.n_heads + 1) <= SECOND_CASE_MAX_COMPONENTS:
        # first on a few prompts (cheap); if no threshold there tells every slip apart, on all of them (reusing
        # the steps run above), lower than ``threshold``
        t_few, complete = few.threshold_for(threshold, need) if few is not None else (None, False)
        t_all, complete_all = (None, False) if complete else ref.threshold_for(threshold, need)
        second, t2 = (ref, t_all) if t_all is not None and (complete_all or t_few is None) else (few, t_few)
        if t2 is not None:
            label = f"on the first {len(second.task)} prompts" if second is few else "on the same prompts"
            cases.append((second, t2, run(second.task, t2),
                          f"{label} at threshold {t2:.3g} (a second case the check adds, where the usual slips give "
                          "sets of their own): "))
    wrong = [(r, t, got, where) for r, t, got, where in cases if got != r.search(t)]
    if not wrong:
        first = ref.first(threshold)
        extra = ", ".join(f"{m}: {sorted(ref.into(m, threshold))}" for m in ref.mlps(threshold)) or \
            "no MLP found in step 1"
        passed("check_end_search", f"step 1 found {sorted(first)}; step 2 into {extra}"
               + (f"; also right on {len(cases[1][0].task)} prompts at threshold {cases[1][1]:.3g}"
                  if len(cases) > 1 else ""))
        return

    r, t, got, where = wrong[0]
    right = r.search(t)

    def message_step1_only(r, t, got, right):
        adds = {m: sorted(r.into(m, t) - set(r.first(t))) for m in r.mlps(t)}
        adds = "; ".join(f"into {m} it finds {v}" for m, v in adds.items() if v)
        return (f"you returned step 1's senders only ({sorted(got)}), nothing from step 2. For every MLP among them "
                "run a second step into that MLP's input, with the senders at END (sender_position=\"END\"), and "
                f"add what it finds ({adds})")

    slips = [  # (the set the slip gives, with the steps of a case and its threshold; the message)
        (lambda r, t: set(r.first(t)), message_step1_only),
        (lambda r, t: r.search(t, position="YY"),
         lambda r, t, got, right: ("you ran step 2 with the senders at YY (sender_position=\"YY\"): step 2 looks for "
                                   "the senders at END that feed each MLP's input at END; use sender_position=\"END\" "
                                   f"(steps 3 and 4 look at YY). Missing {sorted(right - got)}"
                                   + (f", not found at END {sorted(got - right)}" if got - right else ""))),
        (lambda r, t: r.search(t, keep_first=False),
         lambda r, t, got, right: ("you returned only what step 2 found: add step 1's own senders (the senders into "
                                   f"the logits) too -- missing {sorted(right - got)}")),
        (lambda r, t: r.search(t, strongest_only=True),
         lambda r, t, got, right: (f"you ran step 2 into {r.mlps(t)[0]} only: run a step into every MLP that step 1 "
                                   f"found ({', '.join(r.mlps(t))}); the others add {sorted(right - got)}")),
        (lambda r, t: r.search(t, sign="abs"),
         lambda r, t, got, right: (f"you kept {sorted(got - right)}, whose effects are positive (patching them "
                                   "*raises* the metric): keep only senders whose path lowers it, sign='negative'")),
        (lambda r, t: r.search(None),
         lambda r, t, got, right: (f"you kept senders whose effects are below the threshold ({sorted(got - right)}): "
                                   "pass threshold=threshold to top_senders, in both steps")),
    ]
    if "YY" not in getattr(task, "positions", {}):
        del slips[1]

    def explains(slips, cases):
        return [(alternative, message) for alternative, message in slips
                if all(got_c == alternative(r_c, t_c) for r_c, t_c, got_c, _ in cases)]

    matched = explains(slips, cases)
    if len(matched) > 1:  # several slips explain the results: run once more where they differ, if there is a case
        separating = _separating_case([alt for alt, _ in matched], [c[:2] for c in cases], ref, few, threshold)
        if separating is not None:
            r_x, t_x = separating
            with_extra = cases + [(r_x, t_x, run(r_x.task, t_x), "")]
            matched = explains(matched, with_extra) or matched
    named = [message(r, t, got, right) for _, message in matched]
    if len(named) == 1:
        raise ExerciseError(where + named[0])
    if named:  # on this model and these prompts several slips give the same set: say so
        raise ExerciseError(where + f"your set ({sorted(got)}) is what {len(named)} usual slips give here: "
                            + "; or ".join(named))
    missing, extra = sorted(right - got), sorted(got - right)
    raise ExerciseError(where + "your set differs from the two steps' result: "
                        + (f"missing {missing}" if missing else "")
                        + ("; " if missing and extra else "") + (f"not found by the steps {extra}" if extra else "")
                        + " -- step 1: the senders at END into the logits; step 2: the senders at END into the input "
                          "of each MLP that step 1 found; in both, the senders with an effect of -threshold or lower")
