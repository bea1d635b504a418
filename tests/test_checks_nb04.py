"""The inline checks of notebook 04 accept right answers and reject the usual wrong ones with the intended message."""
from __future__ import annotations

import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.course import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.methods import faithfulness as fa
from tutorial_lib.methods.attribution import EAPGraph
from tutorial_lib.tasks.base import TaskData

torch.set_num_threads(1)
VOCAB = 40


@pytest.fixture(scope="module")
def model():
    # weights x2: far enough from linear that EAP-IG and EAP differ (test_ig_step_... checks that first)
    return make_tiny_model(d_vocab=VOCAB, n_ctx=16, scale=2.0)


class SaturatingTask(TaskData):
    """A metric that saturates (like a probability): gradients at the clean end say little about the whole way."""

    def metric(self, logits):
        return torch.sigmoid(3 * self.logit_diff(logits))


@pytest.fixture(scope="module")
def task(model):
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, VOCAB, (6, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, VOCAB, (6,), generator=g)) % VOCAB
    return SaturatingTask("toy", [""] * 6, [""] * 6, clean, corrupt, end_pos=torch.full((6,), 6),
                          answers=clean[:, 2], wrong=corrupt[:, 2:3])


# ------------------------------------------------------------------ exercise 3: CPR and CMD
def trap(x, y):
    return sum((x[i + 1] - x[i]) * (y[i] + y[i + 1]) / 2 for i in range(len(x) - 1))


WRONG_AREAS = {
    "the mean of f": lambda x, f: (sum(f) / len(f), sum(abs(1 - v) for v in f) / len(f)),
    "left rectangles": lambda x, f: (sum((x[i + 1] - x[i]) * f[i] for i in range(len(x) - 1)),
                                     sum((x[i + 1] - x[i]) * abs(1 - f[i]) for i in range(len(x) - 1))),
    "not 1 - CPR": lambda x, f: (trap(x, f), 1 - trap(x, f)),
    "absolute value is missing": lambda x, f: (trap(x, f), trap(x, [1 - v for v in f])),
    "the absolute value of the area": lambda x, f: (trap(x, f), abs(trap(x, [1 - v for v in f]))),
    "swapped": lambda x, f: (trap(x, [abs(1 - v) for v in f]), trap(x, f)),
}


def test_cpr_cmd_accepts_the_trapezoid_rule():
    checks.check_cpr_cmd(lambda x, f: (trap(x, f), trap(x, [abs(1 - v) for v in f])))
    checks.check_cpr_cmd(lambda x, f: (fa.cpr(x, f), fa.cmd(x, f)))


@pytest.mark.parametrize("name", list(WRONG_AREAS))
def test_cpr_cmd_rejects_the_usual_mistakes(name):
    # each slip is named from every curve together: |area of 1 - f| and the area of |1 - f| agree on curves that stay
    # below 1 (the curve with f above 1 tells them apart); a missing |.| is 1 - CPR on every curve over [0, 1]
    expected = {"absolute value is missing": "the absolute value is missing, and the area under 1 - f is just 1 - CPR",
                "the absolute value of the area": r"you took the absolute value of the area under 1 - f, \|∫\(1 - f\)\|",
                "not 1 - CPR": r"the absolute value is missing, and the area under 1 - f is just 1 - CPR"}.get(
        name, name.split(" ", 1)[-1])
    with pytest.raises(ExerciseError, match=expected):
        checks.check_cpr_cmd(WRONG_AREAS[name])


def test_cpr_cmd_unfinished_and_bad_returns():
    def unfinished(x, f):
        raise NotImplementedError("Exercise: ...")

    with pytest.raises(ExerciseError, match="is not written yet"):
        checks.check_cpr_cmd(unfinished)
    with pytest.raises(ExerciseError, match="pair"):
        checks.check_cpr_cmd(lambda x, f: trap(x, f))


# ------------------------------------------------------------------ exercise 1: one EAP-IG step
def make_ig_step(interpolate=True, sign=1.0, backwards=False, metric="metric", as_tensor=False):
    """An independent version of the exercise (the notebook's solution, written again), with the usual slips."""
    def out(model, tokens, sender):
        with torch.no_grad():
            _, cache = model.run_with_cache(tokens)
        if sender == "embed":
            return cache["blocks.0.hook_resid_pre"]
        if sender.startswith("m"):
            return cache[f"blocks.{sender[1:]}.hook_mlp_out"]
        layer, head = (int(x[1:]) for x in sender.split("."))
        return cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.blocks[layer].attn.W_O[head]

    def edge_score_at_alpha(model, task, sender, example, alpha):
        clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
        xc, xk = out(model, clean, "embed"), out(model, corrupt, "embed")
        delta = sign * (out(model, corrupt, sender) - out(model, clean, sender))
        kept = {}

        def interp(act, hook):
            if not interpolate:
                return act
            return (xc + alpha * (xk - xc) if backwards else xk + alpha * (xc - xk)).requires_grad_(True)

        def keep(act, hook):
            kept["final"] = act
            return act

        with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interp),
                                    (f"blocks.{model.cfg.n_layers - 1}.hook_resid_post", keep)]):
            logits = model(clean)
        grad, = torch.autograd.grad(getattr(task.subset([example]), metric)(logits).sum(), kept["final"])
        return delta * grad if as_tensor else (delta * grad).sum().item()

    return edge_score_at_alpha


def test_ig_step_accepts_a_right_answer(model, task):
    checks.check_ig_step(make_ig_step(), model, task, sender="a0.h1")
    checks.check_ig_step(make_ig_step(), model, task, sender="m0")


def test_ig_step_rejects_no_interpolation_and_a_flipped_sign(model, task):
    from tutorial_lib.methods.attribution import eap_scores

    sub = task.subset(range(4))
    ig = eap_scores(model, sub, metric="metric", logits_at="all", progress=False, ig_steps=3).edges[:, 2, -1]
    eap = eap_scores(model, sub, metric="metric", logits_at="all", progress=False).edges[:, 2, -1]
    assert abs(ig[1] - eap[1]) > 0.05 * abs(eap[1]) > 0  # example 1 can tell EAP-IG from EAP apart
    with pytest.raises(ExerciseError, match="not being interpolated"):
        checks.check_ig_step(make_ig_step(interpolate=False), model, task, sender="a0.h1", examples=(1,))
    with pytest.raises(ExerciseError, match="sign is flipped"):
        checks.check_ig_step(make_ig_step(sign=-1.0), model, task, sender="a0.h1", examples=(1,))


# ------------------------------------------------------------------ exercise 2: faithfulness by edge patching
@pytest.fixture(scope="module")
def circuits(model):
    graph = EAPGraph.from_model(model)
    return [fa.top_edges(graph, fa.random_scores(graph, s), [f])[0] for s, f in [(0, 0.3), (1, 0.6), (2, 0.9)]]


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama-family model (grouped-query attention, RMSNorm, rotary), a toy task and three random circuits."""
    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model("llama", scale=3.0, seed=1)
    assert model.cfg.n_key_value_heads < model.cfg.n_heads  # grouped: the check's k and v receivers are ungrouped
    V = model.cfg.d_vocab
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, V, (6, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, V, (6,), generator=g)) % V
    task = TaskData("toy", [""] * 6, [""] * 6, clean, corrupt, torch.full((6,), 6), clean[:, 2], corrupt[:, 2:3])
    graph = EAPGraph.from_model(model)
    return model, task, [fa.top_edges(graph, fa.random_scores(graph, s), [f])[0] for s, f in [(0, 0.3), (1, 0.6), (2, 0.9)]]


def edge_faith(slip=None):
    """The exercise written with hooks (independently of the notebook's solution), with one slip at a time."""
    from tutorial_lib.core.view import engine_view

    def faithfulness_of(model, task, circuit):
        graph = EAPGraph.from_model(model)
        edge = graph.edge_mask()
        cut = (edge & circuit) if slip == "swapped" else (edge & ~circuit)
        if slip == "nodes":  # a sender with no edge in the circuit is corrupted for everyone; the others never
            cut = edge & ~circuit.any(1, keepdim=True)
        cut = cut.float()
        H, R = graph.n_heads, len(graph.receivers)
        with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
            def outputs(store):
                return [("blocks.0.hook_resid_pre", lambda act, hook: store.append(act)),
                        (lambda n: n.endswith("attn.hook_result"), lambda act, hook: store.extend(act.unbind(2))),
                        (lambda n: n.endswith("hook_mlp_out"), lambda act, hook: store.append(act))]
            bad, good, live = [], [], []
            with model.hooks(fwd_hooks=outputs(bad)):
                m_empty = task.metric(model(task.corrupt)).mean().item()
            with model.hooks(fwd_hooks=outputs(good)):
                m_full = task.metric(model(task.clean)).mean().item()
            bad, good = torch.stack(bad), torch.stack(good)

            def patch(act, r):
                n = graph.n_upstream[r]
                now = good[:n] if slip == "clean cache" else torch.stack(live[:n])
                return act - torch.einsum("s,sbpd->bpd", cut[:n, r], now - bad[:n])

            seen = {}

            def heads(act, hook):
                l = hook.layer()
                if slip == "after norm":
                    letter = "qkv"[seen.get(l, 0)]
                    seen[l] = seen.get(l, 0) + 1
                else:
                    letter = hook.name[-7]
                j = 0 if slip == "qkv alike" else "qkv".index(letter)
                return torch.stack([patch(act[:, :, h], graph.receiver_base(l) + j * H + h) for h in range(H)], 2)

            mlp = lambda act, hook: patch(act, graph.receiver_base(hook.layer()) + 3 * H)  # noqa: E731
            final = lambda act, hook: patch(act, R - 1)  # noqa: E731
            if slip == "after norm":
                hooks = [(lambda n: n.endswith("ln1.hook_normalized"), heads),
                         (lambda n: n.endswith("ln2.hook_normalized"), mlp), ("ln_final.hook_normalized", final)]
            else:
                letters = ("hook_q_input",) if slip == "only q" else ("hook_q_input", "hook_k_input", "hook_v_input")
                hooks = [(lambda n: n.endswith(letters), heads), (lambda n: n.endswith("hook_mlp_in"), mlp)]
                if slip != "no logits":
                    hooks.append((f"blocks.{graph.n_layers - 1}.hook_resid_post", final))
            with model.hooks(fwd_hooks=outputs(live) + hooks):
                m_c = task.metric(model(task.clean)).mean().item()
        if slip == "no m(empty)":
            return m_c / (m_full - m_empty)
        return (m_c - m_empty) / (m_full - m_empty)
    return faithfulness_of


EDGE_SLIPS = {
    "no m(empty)": r"the numerator lacks the empty circuit's metric m\(∅\)",
    "swapped": r"clean and corrupted are swapped",
    "nodes": r"that is node patching",
    "no logits": r"the logits receiver is missing",
    "qkv alike": r"a head's q, k and v inputs got the same treatment",
    "only q": r"only the query inputs were patched",
    "clean cache": r"the circuit's edges carried the sender's output from the \*clean\* run",
    "after norm": r"the correction was made after the receiver's norm",
}


def test_faithfulness_accepts_edge_patching(model, task, circuits, llama, capsys):
    checks.check_faithfulness(edge_faith(), model, task, circuits)
    checks.check_faithfulness(edge_faith(), *llama)
    assert capsys.readouterr().out.count("check_faithfulness passed") == 2


@pytest.mark.parametrize("on", ["tiny", "llama"])
@pytest.mark.parametrize("slip", list(EDGE_SLIPS))
def test_faithfulness_names_each_slip(model, task, circuits, llama, on, slip):
    args = (model, task, circuits) if on == "tiny" else llama
    with pytest.raises(ExerciseError, match=EDGE_SLIPS[slip]):
        checks.check_faithfulness(edge_faith(slip), *args)


def test_faithfulness_formula_slips_and_unfinished(model, task, circuits):
    def library(kind):
        def faithfulness_of(model, task, circuit):
            full = fa.full_circuit(EAPGraph.from_model(model))
            m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
            return {"ratio": m_c / m_full, "one minus": 1 - (m_c - m_empty) / (m_full - m_empty), "raw": m_c}[kind]
        return faithfulness_of

    for kind, message in [("ratio", r"m\(C\) / m\(M\)"), ("one minus", "1 - f"), ("raw", r"m\(C\) itself")]:
        with pytest.raises(ExerciseError, match=message):
            checks.check_faithfulness(library(kind), model, task, circuits)

    def unfinished(model, task, circuit):
        raise NotImplementedError("Exercise: ...")

    with pytest.raises(ExerciseError, match="is not written yet"):
        checks.check_faithfulness(unfinished, model, task, circuits)


def test_faithfulness_on_a_model_with_normed_attention_output_checks_a_stand_in(capsys):
    """Gemma 2's heads reach the residual stream through a norm: the exercise's additive edges do not cover it, and
    the check runs on a tiny Llama-family model instead (and says so)."""
    from tutorial_lib.zoo.families import tiny_family_model

    gemma = tiny_family_model("gemma2", seed=0)
    checks.check_faithfulness(edge_faith(), gemma, None, [])
    assert "tiny Llama-family model" in capsys.readouterr().out


def test_ig_step_picks_edges_that_tell_the_slips_apart(model, task, capsys):
    """Without a sender the check picks the strongest edge into the logits and the one EAP-IG moves furthest from
    EAP, so that an answer of 0, no interpolation, a flipped sign or the path walked backwards is named."""
    checks.check_ig_step(make_ig_step(), model, task)
    out = capsys.readouterr().out
    assert "check_ig_step passed" in out and "2 edges x 3 steps" in out
    with pytest.raises(ExerciseError, match=r"your score is 0 at every alpha"):
        checks.check_ig_step(lambda *a: 0.0, model, task)
    with pytest.raises(ExerciseError, match=r"every alpha gives the same score, plain EAP's .*: the input is not being "
                                            r"interpolated"):
        checks.check_ig_step(make_ig_step(interpolate=False), model, task)
    with pytest.raises(ExerciseError, match=r"the sign is flipped"):
        checks.check_ig_step(make_ig_step(sign=-1.0), model, task)
    with pytest.raises(ExerciseError, match=r"you walked from the clean input towards the corrupted one"):
        checks.check_ig_step(make_ig_step(backwards=True), model, task)
    with pytest.raises(ExerciseError, match=r"you took the gradient of the logit difference; take it of the task's own "
                                            r"metric"):
        checks.check_ig_step(make_ig_step(metric="logit_diff"), model, task)
    with pytest.raises(ExerciseError, match=r"edge_score_at_alpha\(model, task, '.*', \d, alpha=1/3\): expected one "
                                            r"number, got a tensor of shape \(1, 7, \d+\)"):
        checks.check_ig_step(make_ig_step(as_tensor=True), model, task)


def test_ig_step_with_a_weak_sender_still_catches_a_zero(model, task):
    """A sender whose scores are tiny (as a0.h0's are on the zoo model) is checked on top of the strongest edge."""
    from tutorial_lib.methods.attribution import eap_scores

    ig = eap_scores(model, task.subset(range(4)), metric="metric", logits_at="all", progress=False, ig_steps=3)
    edges = ig.edges[:, 1:, -1].abs()
    weakest = ig.graph.senders[1 + int(edges.max(0).values.argmin())]
    assert float(edges.max(0).values.min()) < 1e-3 < float(edges.max())  # the weakest sender's scores hide a 0
    with pytest.raises(ExerciseError, match=r"your score is 0 at every alpha"):
        checks.check_ig_step(lambda *a: 0.0, model, task, sender=weakest)


# ------------------------------------------------------------------ exercise 4: overlap against chance
def overlap(jac="jaccard", chance="both", p=">=", draws_same=False):
    """A Monte Carlo answer, with one slip at a time."""
    def fn(a, b, n, draws, seed):
        a, b = set(a), set(b)
        j = {"jaccard": len(a & b) / len(a | b), "min": len(a & b) / min(len(a), len(b)), "count": len(a & b)}[jac]
        g = torch.Generator().manual_seed(seed)
        ka, kb = len(a), len(a) if chance == "same" else len(b)
        rand = []
        for _ in range(draws):
            ra, rb = set(torch.randperm(n, generator=g)[:ka].tolist()), set(torch.randperm(n, generator=g)[:kb].tolist())
            rand.append(len(ra & rb) / len(ra | rb))
        ch = len(b) / n if chance == "share" else sum(rand) / draws
        if p == ">=":
            pv = (1 + sum(r >= j - 1e-12 for r in rand)) / (1 + draws)
        elif p == ">":
            pv = (1 + sum(r > j + 1e-12 for r in rand)) / (1 + draws)
        else:
            pv = sum(r < j - 1e-12 for r in rand) / draws
        return j, ch, pv
    return fn


def test_overlap_accepts_monte_carlo_and_exact_answers():
    from tutorial_lib.studies.comparing import expected_jaccard, overlap_p

    checks.check_overlap_against_chance(overlap())
    exact = lambda a, b, n, draws, seed: (cm_j := len(set(a) & set(b)) / len(set(a) | set(b)),  # noqa: E731
                                          expected_jaccard(n, len(set(a)), len(set(b))),
                                          overlap_p(n, len(set(a)), len(set(b)), cm_j))
    checks.check_overlap_against_chance(exact, cases=[(["x", "y"], ["y", "z", "w"], 12)])


@pytest.mark.parametrize("kw,message", [
    (dict(jac="min"), "overlap coefficient"), (dict(jac="count"), "size of the intersection"),
    (dict(chance="same"), "two random sets of the same size"), (dict(chance="share"), "share of the n items"),
    (dict(p=">"), "only random overlaps \\*larger\\*"), (dict(p="<"), "\\*below\\*")])
def test_overlap_rejects_the_usual_mistakes(kw, message):
    with pytest.raises(ExerciseError, match=message):
        checks.check_overlap_against_chance(overlap(**kw))


def test_exact_overlap_law_against_monte_carlo():
    """The check's reference: the exact hypergeometric mean and p against a slow draw."""
    from tutorial_lib.studies.comparing import expected_jaccard, overlap_p

    j, ch, p = overlap()(list(range(5)), list(range(3, 10)), 25, 20000, 1)
    assert ch == pytest.approx(expected_jaccard(25, 5, 7), abs=0.005)
    assert p == pytest.approx(overlap_p(25, 5, 7, j), abs=0.01)
    assert expected_jaccard(5, 0, 0) == 1.0 and overlap_p(10, 3, 3, 0.0) == pytest.approx(1.0)


# ------------------------------------------------------------------ exercise 5: a random circuit of a given size
def random_circuit(slip=None):
    def fn(graph, fraction, seed):
        valid = graph.edge_mask()
        g = torch.Generator().manual_seed(seed) if slip != "unseeded" else None
        if slip == "all pairs":
            k = fa.size_to_count(fraction, valid.numel())
            idx = torch.arange(valid.numel())
        else:
            total = fa.n_edges(graph)
            k = int(fraction * total) if slip == "floor" else fa.size_to_count(fraction, total)
            idx = valid.flatten().nonzero().squeeze(1)
        if slip == "first":
            chosen = idx[:k]
        elif slip == "sender first":
            rows = valid.nonzero()
            by_sender = [rows[rows[:, 0] == s] for s in range(valid.shape[0]) if bool(valid[s].any())]
            picked = set()
            while len(picked) < k:
                group = by_sender[int(torch.randint(len(by_sender), (1,), generator=g))]
                e = group[int(torch.randint(len(group), (1,), generator=g))]
                picked.add(int(e[0]) * valid.shape[1] + int(e[1]))
            chosen = torch.tensor(sorted(picked), dtype=torch.long)
        else:
            chosen = idx[torch.randperm(len(idx), generator=g)[:k]]
        mask = torch.zeros(valid.numel(), dtype=torch.bool)
        mask[chosen] = True
        return mask.view(valid.shape)
    return fn


def test_random_circuit_accepts_the_library_draw(model):
    graph = EAPGraph.from_model(model)
    checks.check_random_circuit(random_circuit(), graph)
    checks.check_random_circuit(lambda g, f, s: fa.top_edges(g, fa.random_scores(g, s), [f])[0], graph)


@pytest.mark.parametrize("slip,message", [
    ("all pairs", "not edges of the graph"), ("floor", "the library rounds"), ("unseeded", "different circuits"),
    ("first", "the draw must depend on the seed"), ("sender first", "not uniform over the graph's edges")])
def test_random_circuit_rejects_the_usual_mistakes(model, slip, message):
    with pytest.raises(ExerciseError, match=message):
        checks.check_random_circuit(random_circuit(slip), EAPGraph.from_model(model))
