"""The inline checks of notebook 02 accept right answers and reject wrong ones with a plain message."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.tasks.base import TaskData

torch.set_num_threads(1)
VOCAB = 40


@pytest.fixture(scope="module")
def model():
    return make_tiny_model(d_vocab=VOCAB, n_ctx=16)


@pytest.fixture(scope="module")
def task(model):
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, VOCAB, (10, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, VOCAB, (10,), generator=g)) % VOCAB
    return TaskData("toy", [""] * 10, [""] * 10, clean, corrupt, end_pos=torch.full((10,), 6),
                    answers=clean[:, 2], wrong=corrupt[:, 2:3])


# ------------------------------------------------------------------ exercise 1: one edge score
def edge_score(model, task, sender_hook, example, sign=1.0, leave_hook=False, batch_mean=False, at_sender=False):
    """An independent version: corrupted - clean output of the sender, dotted with d logit_diff / d resid_final
    (with the usual slips: the batch's mean metric backpropagated, the gradient taken at the sender)."""
    final = sender_hook if at_sender else f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
    with torch.no_grad():
        _, cc = model.run_with_cache(task.corrupt, names_filter=sender_hook)
    kept = {}

    def keep(act, hook):
        act.retain_grad()
        kept[hook.name] = act
        return act

    if leave_hook:
        model.add_hook(final, lambda act, hook: act)
    with model.hooks(fwd_hooks=[(sender_hook, keep), (final, keep)]):
        logits = model(task.clean)
    metric = task.logit_diff(logits)
    (metric.mean() if batch_mean else metric[example]).backward()
    delta = cc[sender_hook][example] - kept[sender_hook][example].detach()
    return sign * float((delta * kept[final].grad[example]).sum())


def test_edge_score_check_accepts_a_right_answer(model, task, capsys):
    checks.check_edge_score(edge_score, model, task)
    assert "check_edge_score passed" in capsys.readouterr().out


def test_edge_score_check_rejects_wrong_answers(model, task):
    with pytest.raises(ExerciseError, match=r"edge m0 -> logits, example 0: you have .*, expected .* -- the sign is "
                                            r"flipped: the difference is corrupted output minus clean output"):
        checks.check_edge_score(lambda *a: edge_score(*a, sign=-1.0), model, task)
    with pytest.raises(ExerciseError, match=r"edge m0 -> logits, example 0: .* -- that is 1/8 of the edge's score: you "
                                            r"backpropagated the mean metric over the batch's 8 prompts"):
        checks.check_edge_score(lambda *a: edge_score(*a, batch_mean=True), model, task)
    with pytest.raises(ExerciseError, match=r"edge m0 -> logits, example 0: .* -- that is the gradient taken at the "
                                            r"sender's own output, which sums every path from the sender"):
        checks.check_edge_score(lambda *a: edge_score(*a, at_sender=True), model, task)
    with pytest.raises(ExerciseError, match="expected"):
        checks.check_edge_score(lambda *a: edge_score(*a, sign=2.0), model, task)
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_edge_score(lambda *a: (_ for _ in ()).throw(NotImplementedError("Exercise: x")), model, task)
    with pytest.raises(ExerciseError, match="one number"):
        checks.check_edge_score(lambda *a: torch.zeros(3), model, task)
    try:
        with pytest.raises(ExerciseError, match="hook is still attached"):
            checks.check_edge_score(lambda *a: edge_score(*a, leave_hook=True), model, task)
    finally:
        model.reset_hooks(including_permanent=True)


# ------------------------------------------------------------------ exercise 2: reuse@P
def reuse_right(m, p):
    n = m.shape[0]
    shared = m.sum(0) >= math.ceil(p / 100 * n)
    return float(((m & shared).sum(1).float() / m.sum(1).float()).mean())


def test_reuse_check(capsys):
    g = torch.Generator().manual_seed(3)
    member = torch.rand(20, 10, generator=g) < 0.3
    member[:, 0] = True
    checks.check_reuse_at_p(reuse_right, member)
    assert "passed" in capsys.readouterr().out
    floor = lambda m, p: float(((m & (m.sum(0) >= math.floor(p / 100 * m.shape[0]))).sum(1).float() / m.sum(1).float()).mean())  # noqa: E731
    with pytest.raises(ExerciseError, match="ceil"):
        checks.check_reuse_at_p(floor, member)
    size_of_shared = lambda m, p: float((m.sum(0) >= math.ceil(p / 100 * m.shape[0])).sum())  # noqa: E731
    with pytest.raises(ExerciseError, match="reuse@"):
        checks.check_reuse_at_p(size_of_shared)


def reuse_slip(rounding=math.ceil, strict=False, size=False, by_shared=False, percent=True):
    def reuse_at_p(m, p):
        n = m.shape[0]
        need = rounding((p / 100 if percent else p) * n)
        shared = m.sum(0) > need if strict else m.sum(0) >= need
        if size:
            return float(shared.sum())
        covered = (m & shared).sum(1).float()
        return float((covered / (shared.sum().float() if by_shared else m.sum(1).float())).mean())
    return reuse_at_p


@pytest.mark.parametrize("slip,message", [
    (dict(rounding=math.floor), r"reuse@80 on a \(9, 12\) membership: you have .*, expected .* -- you rounded down: "
                                r"80/100 \* 9 = 7\.2, and S_P needs at least ceil of it, 8 circuits, not floor \(7\)"),
    (dict(rounding=round), r"reuse@80 on a \(9, 12\) membership: .* -- you rounded to the nearest integer \(7\)"),
    (dict(strict=True), r"reuse@100 on a \(9, 12\) membership: you have 0\.0000, expected .* -- you kept the "
                        r"components in \*more than\* 9 circuits \(`>`\)"),
    (dict(size=True), r"reuse@100 .* -- you returned \|S_P\|, the size of the shared set"),
    (dict(by_shared=True), r"reuse@\d+ .* -- you divided each example's overlap \|C_i ∩ S_P\| by \|S_P\|"),
    (dict(percent=False), r"reuse@100 .* -- you compared the counts with p \* n, not p/100 \* n"),
])
def test_reuse_check_names_each_slip(slip, message):
    g = torch.Generator().manual_seed(3)
    member = torch.rand(20, 10, generator=g) < 0.3
    member[:, 0] = True
    checks.check_reuse_at_p(reuse_slip(), member)
    with pytest.raises(ExerciseError, match=message):
        checks.check_reuse_at_p(reuse_slip(**slip), member)


# ------------------------------------------------------------------ exercise 3: the size-matched control
def control_right(circuit, heads, mlps, seed, check_shortfall=True):
    rng = np.random.default_rng(seed)
    fh, fm = [h for h in heads if h not in circuit], [m for m in mlps if m not in circuit]
    nh, nm = sum(c in heads for c in circuit), sum(c in mlps for c in circuit)
    if check_shortfall and (nh > len(fh) or nm > len(fm)):
        raise ValueError(f"need {nh} heads and {nm} MLPs outside the circuit, only {len(fh)} and {len(fm)} are left")
    return {str(c) for c in rng.choice(fh, nh, replace=False)} | {str(c) for c in rng.choice(fm, nm, replace=False)}


def test_size_matched_control_check(model, capsys):
    checks.check_size_matched_control(control_right, model)
    assert "passed" in capsys.readouterr().out

    def overlapping(circuit, heads, mlps, seed):  # draws from everything, circuit included
        rng = np.random.default_rng(seed)
        nh, nm = sum(c in heads for c in circuit), sum(c in mlps for c in circuit)
        return set(rng.choice(heads, nh, replace=False)) | set(rng.choice(mlps, nm, replace=False)) | set(list(circuit)[:1])

    with pytest.raises(ExerciseError):
        checks.check_size_matched_control(overlapping, model)

    def any_kind(circuit, heads, mlps, seed):  # right size, but ignores heads vs MLPs
        rng = np.random.default_rng(seed)
        pool = [c for c in heads + mlps if c not in circuit]
        return {str(c) for c in rng.choice(pool, len(circuit), replace=False)}

    with pytest.raises(ExerciseError, match="head"):
        checks.check_size_matched_control(any_kind, model)

    def circuit_heads_not_left_out(circuit, heads, mlps, seed):  # excludes the circuit's MLPs, not its heads
        rng = np.random.default_rng(seed)
        nh, nm = sum(c in heads for c in circuit), sum(c in mlps for c in circuit)
        fm = [m for m in mlps if m not in circuit]
        return {str(c) for c in rng.choice(heads, nh, replace=False)} | {str(c) for c in rng.choice(fm, nm, replace=False)}

    with pytest.raises(ExerciseError, match=r"overlaps the circuit in \['a0\.h[01]'"):
        checks.check_size_matched_control(circuit_heads_not_left_out, model)

    unseeded = lambda c, h, m, seed: control_right(c, h, m, int(np.random.randint(1 << 30)))  # noqa: E731
    with pytest.raises(ExerciseError, match="same seed"):
        checks.check_size_matched_control(unseeded, model)

    fixed = lambda c, h, m, seed: control_right(c, h, m, 0)  # noqa: E731
    with pytest.raises(ExerciseError, match="random"):
        checks.check_size_matched_control(fixed, model)


def test_size_matched_control_check_when_too_few_lie_outside(model, capsys):
    """The contract (as core.controls.size_matched_random): too few heads or MLPs outside the circuit ->
    a ValueError that gives the counts needed and left; never a smaller or overlapping control."""
    from tutorial_lib.core.controls import size_matched_random

    with pytest.raises(ValueError, match="need 2 heads and 2 MLPs .* only 6 heads and 0 MLPs"):
        size_matched_random(model, ["m0", "m1", "a0.h0", "a1.h1"])  # the library's behaviour, matched below

    def library_style(circuit, heads, mlps, seed):
        names = set(circuit)
        nh, nm = sum(c in heads for c in names), sum(c in mlps for c in names)
        fh, fm = [h for h in heads if h not in names], [m for m in mlps if m not in names]
        if nh > len(fh) or nm > len(fm):
            raise ValueError(f"cannot draw a size-matched control: need {nh} heads and {nm} MLPs outside the circuit, "
                             f"but only {len(fh)} heads and {len(fm)} MLPs are left")
        return control_right(circuit, heads, mlps, seed)

    checks.check_size_matched_control(library_style, model)
    assert "too-few-left error" in capsys.readouterr().out

    numpy_error = lambda c, h, m, seed: control_right(c, h, m, seed, check_shortfall=False)  # noqa: E731
    with pytest.raises(ExerciseError, match=r"it has 9 MLPs but only 3 lie outside it.*Cannot take a larger sample"
                                            r".*name the shortfall"):
        checks.check_size_matched_control(numpy_error, model)

    def what_is_left(circuit, heads, mlps, seed):  # draws what is available, silently smaller
        rng = np.random.default_rng(seed)
        fh, fm = [h for h in heads if h not in circuit], [m for m in mlps if m not in circuit]
        nh, nm = sum(c in heads for c in circuit), sum(c in mlps for c in circuit)
        return set(rng.choice(fh, min(nh, len(fh)), replace=False)) | set(rng.choice(fm, min(nm, len(fm)), replace=False))

    with pytest.raises(ExerciseError, match=r"no size-matched control exists; you returned \[.*Raise a ValueError"):
        checks.check_size_matched_control(what_is_left, model)

    def with_replacement_when_short(circuit, heads, mlps, seed):
        rng = np.random.default_rng(seed)
        fh, fm = [h for h in heads if h not in circuit], [m for m in mlps if m not in circuit]
        nh, nm = sum(c in heads for c in circuit), sum(c in mlps for c in circuit)
        return set(rng.choice(fh, nh, replace=nh > len(fh))) | set(rng.choice(fm, nm, replace=nm > len(fm)))

    with pytest.raises(ExerciseError, match="it has 9 MLPs but only 3 lie outside it, so no size-matched control"):
        checks.check_size_matched_control(with_replacement_when_short, model)

    def checks_only_mlps(circuit, heads, mlps, seed):  # the head shortfall is tested too
        if sum(c in mlps for c in circuit) > sum(m not in circuit for m in mlps):
            return library_style(circuit, heads, mlps, seed)
        return with_replacement_when_short(circuit, heads, mlps, seed)

    with pytest.raises(ExerciseError, match="it has 3 heads but only 1 lie outside it, so no size-matched control"):
        checks.check_size_matched_control(checks_only_mlps, model)

    def wrong_exception(circuit, heads, mlps, seed):
        try:
            return control_right(circuit, heads, mlps, seed, check_shortfall=False)
        except ValueError:
            raise RuntimeError("not enough components") from None

    with pytest.raises(ExerciseError, match=r"You raised RuntimeError\('not enough components'\); raise a ValueError"):
        checks.check_size_matched_control(wrong_exception, model)

    def counts_missing(circuit, heads, mlps, seed):
        try:
            return control_right(circuit, heads, mlps, seed)
        except ValueError:
            raise ValueError("not enough components outside the circuit") from None

    with pytest.raises(ExerciseError, match=r"how many MLPs are needed \(9\) and how many are left \(3\)"):
        checks.check_size_matched_control(counts_missing, model)


# ------------------------------------------------------------------ exercise 4: the paired permutation test
def perm_right(a, b, n, seed, strict=False, plus_one=True, two_sided=False, lower=False):
    d = (a - b).double()
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, (n, len(d)), generator=g).double() * 2 - 1
    stats = (signs * d).mean(1)
    obs = d.mean()
    if two_sided:
        stats, obs = stats.abs(), obs.abs()
    if lower:
        stats, obs = -stats, -obs
    k = int((stats > obs).sum()) if strict else int((stats >= obs - 1e-12).sum())
    return (k + 1) / (n + 1) if plus_one else k / n


def test_permutation_check(capsys):
    checks.check_permutation_test(perm_right)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="no difference"):
        checks.check_permutation_test(lambda *a: perm_right(*a, strict=True))
    with pytest.raises(ExerciseError, match="never 0"):
        checks.check_permutation_test(lambda *a: perm_right(*a, plus_one=False))
    with pytest.raises(ExerciseError, match=r"a small effect: you have p = .*, expected about .* -- that is the "
                                            r"two-sided p-value"):
        checks.check_permutation_test(lambda *a: perm_right(*a, two_sided=True))
    with pytest.raises(ExerciseError, match=r"a clear effect: you have p = 1, expected about 9\.999e-05 -- you counted "
                                            r"the permuted means at or \*below\* the observed one \(the wrong tail"):
        checks.check_permutation_test(lambda *a: perm_right(*a, lower=True))
    with pytest.raises(ExerciseError, match=r"the wrong tail, or a - b taken the wrong way round"):
        checks.check_permutation_test(lambda a, b, n, seed: perm_right(b, a, n, seed))


def test_permutation_check_cases_are_informative():
    """The 'small effect' case must sit mid-range, so that a p-value off by more than noise is caught."""
    from tutorial_lib.core.controls import paired_permutation_test

    gen = torch.Generator().manual_seed(0)
    base = torch.rand(60, generator=gen)
    a = base + 0.05 * torch.randn(60, generator=gen) + 0.004
    p = paired_permutation_test(a, base, 10_000, seed=0)
    assert 0.03 < p < 0.6, p


# ------------------------------------------------------------------ node scores by hand
@pytest.fixture(scope="module")
def scores(model, task):
    from tutorial_lib.methods.attribution import eap_scores

    return eap_scores(model, task, metric="logit_diff", progress=False)


def node_scores_slip(signed=False, keep_embed=False, by_receivers=False, swap=False):
    def node_scores(edges, edge_mask):
        e = edges if signed else edges.abs()
        n_out = torch.full((edges.shape[0],), float(edges.shape[1])) if by_receivers else edge_mask.sum(1).float()
        total, mean = e.sum(1), e.sum(1) / n_out
        if not keep_embed:
            total, mean = total[1:], mean[1:]
        return (mean, total) if swap else (total, mean)
    return node_scores


@pytest.mark.parametrize("slip,message", [
    ({}, None),
    (dict(signed=True), r"example 0, sum scores: you summed the signed edge scores"),
    (dict(keep_embed=True), r"example 0, sum scores: that is one row per \*sender\*: the first sender, embed"),
    (dict(by_receivers=True), r"example 0, mean scores: you divided by the number of receivers"),
    (dict(swap=True), r"example 0, sum scores: you returned \(mean, sum\)"),
])
def test_node_scores_check(scores, slip, message, capsys):
    if message is None:
        checks.check_node_scores(node_scores_slip(), scores)
        assert "check_node_scores passed" in capsys.readouterr().out
    else:
        with pytest.raises(ExerciseError, match=message):
            checks.check_node_scores(node_scores_slip(**slip), scores)


# ------------------------------------------------------------------ S_P
def shared_slip(rounding=math.ceil, strict=False, percent=True, all_only=False):
    def shared_set_p(membership, components, p):
        if all_only:
            keep = membership.all(0)
        else:
            need = rounding((p / 100 if percent else p) * membership.shape[0])
            keep = membership.sum(0) > need if strict else membership.sum(0) >= need
        return {c for c, k in zip(components, keep.tolist()) if k}
    return shared_set_p


@pytest.mark.parametrize("slip,message", [
    ({}, None),
    (dict(rounding=math.floor), r"S_34 of 9 circuits: .* -- you rounded down"),
    (dict(strict=True), r"S_100 of 9 circuits: .* -- you kept the components in \*more than\* 9 circuits"),
    (dict(percent=False), r"S_100 of 9 circuits: .* -- you compared the counts with p \* n"),
    (dict(all_only=True), r"S_80 of 9 circuits: .* -- you kept only the components in \*every\* circuit"),
])
def test_shared_set_check(slip, message, capsys):
    if message is None:
        g = torch.Generator().manual_seed(5)
        checks.check_shared_set(shared_slip(), torch.rand(16, 6, generator=g) < 0.5, [f"a0.h{i}" for i in range(6)])
        assert "check_shared_set passed" in capsys.readouterr().out
    else:
        with pytest.raises(ExerciseError, match=message):
            checks.check_shared_set(shared_slip(**slip))


# ------------------------------------------------------------------ one row of the cross-task matrix
def row_slip(what="drop", leave_hook=False):
    from tutorial_lib.core.circuits import ablation_hooks

    def cross_task_row(model, tasks, circuit):
        out = {}
        for name, t in tasks.items():
            with torch.no_grad():
                clean = t.accuracy(model(t.clean)).mean().item()
                with model.hooks(fwd_hooks=ablation_hooks(model, circuit, "zero")):
                    ablated = t.accuracy(model(t.clean)).mean().item()
            out[name] = {"drop": clean - ablated, "ablated": ablated, "flipped": ablated - clean}[what]
        if leave_hook:
            model.add_hook("blocks.0.hook_resid_pre", lambda act, hook: act)
        return out
    return cross_task_row


@pytest.fixture(scope="module")
def two_tasks(model, task):
    # a second task: the answer is the model's own top token, so clean accuracy is 1 and an ablation can only lower it
    with torch.no_grad():
        top = model(task.clean)[:, 6].argsort(-1, descending=True)
    other = TaskData("toy2", [""] * 10, [""] * 10, task.clean, task.corrupt, end_pos=task.end_pos,
                     answers=top[:, 0], wrong=top[:, 1:3])
    return {"toy": task, "toy2": other}


def test_cross_task_row_check(model, two_tasks, capsys):
    circuit = ["m0", "a0.h0", "a1.h1"]
    checks.check_cross_task_row(row_slip(), model, two_tasks, circuit)
    assert "check_cross_task_row passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match=r"toy2? with .* -- that is the accuracy \*with\* the circuit ablated"):
        checks.check_cross_task_row(row_slip("ablated"), model, two_tasks, circuit)
    with pytest.raises(ExerciseError, match=r"toy2? with .* -- the sign is flipped"):
        checks.check_cross_task_row(row_slip("flipped"), model, two_tasks, circuit)
    with pytest.raises(ExerciseError, match="it needs every task"):
        checks.check_cross_task_row(lambda m, t, c: {"toy": 0.0}, model, two_tasks, circuit)
    try:
        with pytest.raises(ExerciseError, match="hook was still attached"):
            checks.check_cross_task_row(row_slip(leave_hook=True), model, two_tasks, circuit)
        from tutorial_lib.core.hooks import count_hooks

        assert not count_hooks(model)  # the check removed it: a right answer now passes
        checks.check_cross_task_row(row_slip(), model, two_tasks, circuit)
    finally:
        model.reset_hooks(including_permanent=True)


# ------------------------------------------------------------------ Jaccard against chance
def jaccard_slip(kind="right", typed=True):
    def jaccard_vs_chance(a, b, heads, mlps, n_random, seed):
        def j(x, y):
            if kind == "min":
                return len(x & y) / min(len(x), len(y))
            return len(x & y) / len(x | y)

        rng = np.random.default_rng(seed)

        def draw(s):
            if not typed:
                return set(rng.choice(heads + mlps, len(s), replace=False).tolist())
            nh, nm = sum(c in heads for c in s), sum(c in mlps for c in s)
            return set(rng.choice(heads, nh, replace=False).tolist()) | set(rng.choice(mlps, nm, replace=False).tolist())

        return j(a, b), float(np.mean([j(draw(a), draw(b)) for _ in range(n_random)]))
    return jaccard_vs_chance


def test_jaccard_check(model, capsys):
    checks.check_jaccard(jaccard_slip(), model)
    assert "check_jaccard passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match=r"observed: .* -- that is \|A ∩ B\| / min\(\|A\|, \|B\|\)"):
        checks.check_jaccard(jaccard_slip("min"), model)
    with pytest.raises(ExerciseError, match=r"chance: .* -- your random sets ignore the kinds"):
        checks.check_jaccard(jaccard_slip(typed=False), model)


# ------------------------------------------------------------------ exercise 2: every edge, per example
def eap_edges_slip(sign=1.0, batch_mean=False, transpose=False, masked=True, at="input", end_only=False,
                   per_position=False, per_head=False, leave_flags=False):
    """An independent all-edges EAP (one corrupted run, one clean forward + backward), with the usual slips."""
    from tutorial_lib.core.view import engine_view

    def eap_edge_scores(model, task, graph):
        L = model.cfg.n_layers

        def out_hook(s):
            if s == "embed":
                return "blocks.0.hook_resid_pre", None
            if s.startswith("m"):
                return f"blocks.{s[1:]}.hook_mlp_out", None
            return f"blocks.{s[1:].split('.h')[0]}.attn.hook_result", int(s.split(".h")[1])

        def in_hook(r):
            if r == "logits":
                return f"blocks.{L - 1}.hook_resid_post", None
            if at == "receiver_output":
                return out_hook(r.rsplit(".", 1)[0] if r.startswith("a") else r)
            if r.startswith("m"):
                return f"blocks.{r[1:]}.hook_mlp_in", None
            head, letter = r.rsplit(".", 1)
            return f"blocks.{head[1:].split('.h')[0]}.hook_{letter}_input", int(head.split(".h")[1])

        def pick(acts, where):
            return acts[where[0]] if where[1] is None else acts[where[0]][:, :, where[1]]

        receivers = graph.receivers
        if per_head:  # one receiver per head (its q input) instead of q, k and v
            receivers = [r for r in receivers if not r.endswith((".k", ".v"))]
        senders = [out_hook(s) for s in graph.senders]
        recv = [in_hook(r) for r in receivers]
        names = {h for h, _ in senders + recv}
        with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True, frozen=True):
            with torch.no_grad():
                _, corrupt = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)
            kept = {}

            def keep(act, hook):
                if hook.name == "blocks.0.hook_resid_pre":
                    act = act.detach().requires_grad_(True)
                act.retain_grad()
                kept[hook.name] = act
                return act

            with model.hooks(fwd_hooks=[(lambda n: n in names, keep)]):
                logits = model(task.clean)
            metric = task.logit_diff(logits)
            (metric.mean() if batch_mean else metric.sum()).backward()
            grads = {k: v.grad for k, v in kept.items()}
            diff = sign * torch.stack([pick(corrupt, s) - pick(kept, s).detach() for s in senders], 1)
            grad = torch.stack([pick(grads, w) for w in (senders if at == "sender_output" else recv)], 1)
        if leave_flags:
            model.cfg.use_hook_mlp_in = not model.cfg.use_hook_mlp_in
        mask = graph.edge_mask() if not per_head else torch.ones(len(senders), len(recv), dtype=torch.bool)
        if at == "sender_output":
            out = (diff * grad).sum((2, 3))[:, :, None] * graph.edge_mask()
        elif end_only:
            rows = torch.arange(diff.shape[0])
            out = torch.einsum("bsd,brd->bsr", diff[rows, :, task.end_pos], grad[rows, :, task.end_pos])
        elif per_position:
            out = torch.einsum("bspd,brpd->bsrp", diff, grad) * mask[..., None]
        else:
            out = torch.einsum("bspd,brpd->bsr", diff, grad)
        if masked and not per_position and at != "sender_output":
            out = out * mask
        return out.transpose(1, 2) if transpose else out

    return eap_edge_scores


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama-3-family model: grouped-query attention (2 key/value heads for 4 query heads), RMSNorm, rotary."""
    from tutorial_lib.zoo.families import tiny_family_model

    return tiny_family_model("llama", scale=3.0)


@pytest.fixture(scope="module")
def llama_task(llama):
    v = llama.cfg.d_vocab
    g = torch.Generator().manual_seed(1)
    clean = torch.randint(0, v, (8, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, v, (8,), generator=g)) % v
    return TaskData("toy", [""] * 8, [""] * 8, clean, corrupt, end_pos=torch.full((8,), 6),
                    answers=clean[:, 2], wrong=corrupt[:, 2:3])


EAP_SLIPS = [
    (dict(sign=-1.0), r"edge scores of examples 0-5: every score has the wrong sign: you took the sender's clean output "
                      r"minus its corrupted one"),
    (dict(batch_mean=True), r"edge scores of examples 0-5: every score is 1/6 of the library's: you backpropagated the "
                            r"mean of the batch's 6 metrics"),
    (dict(transpose=True), r"edge scores of examples 0-5: your matrix is \[receivers, senders\], transposed"),
    (dict(masked=False), r"edge scores of examples 0-5: the entries that are not edges are not 0 .* graph.edge_mask\(\)"),
    (dict(at="sender_output"), r"every edge out of a sender has the same score: that is the gradient at the sender's own "
                               r"output"),
    (dict(at="receiver_output"), r"you took the gradient at each receiver's \*output\*"),
    (dict(end_only=True), r"you kept the final position only: an edge's score sums over every position"),
    (dict(per_position=True), r"you kept one score per position \(the last dimension\): sum over the positions too"),
    (dict(per_head=True), r"you have \d+ receivers, \d+ expected: one per head, where each head has three, its query, "
                          r"key and value inputs"),
    (dict(leave_flags=True), r"your function left the model's settings changed \(use_hook_mlp_in\)"),
]


@pytest.mark.parametrize("which", ["tiny", "llama"])
def test_eap_edges_check_accepts_the_right_answer(which, model, task, llama, llama_task, capsys):
    m, t = (model, task) if which == "tiny" else (llama, llama_task)
    checks.check_eap_edges(eap_edges_slip(), m, t)
    assert "check_eap_edges passed" in capsys.readouterr().out
    assert m.cfg.use_split_qkv_input is False and m.cfg.use_hook_mlp_in is False


@pytest.mark.parametrize("which", ["tiny", "llama"])
@pytest.mark.parametrize("slip,message", EAP_SLIPS, ids=[next(iter(s)) + ("" if next(iter(s.values())) is True else
                                                                          f"={next(iter(s.values()))}") for s, _ in EAP_SLIPS])
def test_eap_edges_check_names_each_slip(which, slip, message, model, task, llama, llama_task):
    m, t = (model, task) if which == "tiny" else (llama, llama_task)
    try:
        with pytest.raises(ExerciseError, match=message):
            checks.check_eap_edges(eap_edges_slip(**slip), m, t)
    finally:
        if slip.get("leave_flags"):
            m.cfg.use_hook_mlp_in = False


def test_eap_edges_check_unfinished_and_hooks(model, task):
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_eap_edges(lambda *a: (_ for _ in ()).throw(NotImplementedError("Exercise: x")), model, task)
    with pytest.raises(ExerciseError, match="expected shape"):
        checks.check_eap_edges(lambda *a: torch.zeros(3), model, task)

    def leaves_a_hook(m, t, g):
        m.add_hook("blocks.0.hook_resid_post", lambda act, hook: act)
        return eap_edges_slip()(m, t, g)

    with pytest.raises(ExerciseError, match="hook is still attached"):
        checks.check_eap_edges(leaves_a_hook, model, task)
    assert not model._forward_hooks and all(not h.fwd_hooks for h in model.hook_dict.values())


def test_eap_edges_check_on_a_model_with_a_norm_on_the_attention_output(capsys):
    """Gemma 2 scores a head's edges through the norm on the summed attention output: the heads' rows are left out,
    and the check says so; the other rows still catch a slip."""
    from tutorial_lib.zoo.families import tiny_family_model

    gemma = tiny_family_model("gemma2", scale=3.0)
    v = gemma.cfg.d_vocab
    g = torch.Generator().manual_seed(2)
    clean = torch.randint(0, v, (6, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, v, (6,), generator=g)) % v
    toy = TaskData("toy", [""] * 6, [""] * 6, clean, corrupt, end_pos=torch.full((6,), 6), answers=clean[:, 2],
                   wrong=corrupt[:, 2:3])
    checks.check_eap_edges(eap_edges_slip(), gemma, toy)
    assert "the heads' rows are not compared" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="every score has the wrong sign"):
        checks.check_eap_edges(eap_edges_slip(sign=-1.0), gemma, toy)
