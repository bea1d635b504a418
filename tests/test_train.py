"""Tests for tutorial_lib.zoo.train: determinism, checkpoints, the loss-mask convention, the schedule."""
import doctest
import math
import warnings

import pytest
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=DeprecationWarning)
from conftest import make_tiny_model  # noqa: E402

from tutorial_lib.zoo import train as train_mod  # noqa: E402
from tutorial_lib.zoo.train import (  # noqa: E402
    load_checkpoint,
    log_spaced_steps,
    grouped_next_token_loss,
    masked_next_token_loss,
    save_checkpoints,
    train,
)

torch.set_num_threads(1)
V, T = 23, 12


def tiny(seed=0, attn_only=False):
    """The trainer tests' model: 2 layers, d_model 16, 2 heads (an MLP of 32 unless attention-only)."""
    return make_tiny_model(d_model=16, n_heads=2, d_mlp=None if attn_only else 32, n_ctx=T, d_vocab=V,
                           attn_only=attn_only, seed=seed, train=True)


def batch_fn(step, g):
    x = torch.randint(0, V, (8, T), generator=g)
    mask = torch.zeros_like(x)
    mask[:, 3:7] = 1
    return x, mask


def reference_loss(model, tokens, mask):
    """Slow reference: loop over every (b, p), add CE of token p+1 where mask[b, p] = 1."""
    logits = model(tokens)
    total, count = 0.0, 0
    for b in range(tokens.shape[0]):
        for p in range(tokens.shape[1] - 1):
            if mask[b, p]:
                total = total + F.cross_entropy(logits[b, p][None], tokens[b, p + 1][None])
                count += 1
    return total / count


def test_module_doctests():
    assert doctest.testmod(train_mod).failed == 0


def test_same_seed_same_weights_and_different_seed_differs():
    a = tiny(0)
    b = tiny(0)
    c = tiny(0)
    ra = train(a, batch_fn, 30, lr=3e-3, seed=5, progress=False)
    rb = train(b, batch_fn, 30, lr=3e-3, seed=5, progress=False)
    train(c, batch_fn, 30, lr=3e-3, seed=6, progress=False)
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
    assert ra.losses == rb.losses
    assert any(not torch.equal(v, c.state_dict()[k]) for k, v in a.state_dict().items())


def test_log_spaced_steps_properties():
    for total, n in [(1000, 8), (6000, 20), (50, 20), (7, 20), (3, 3), (100, 50)]:
        s = log_spaced_steps(total, n)
        assert s[0] == 0 and s[1] == 1 and s[-1] == total
        assert s == sorted(set(s)), s
        assert len(s) == min(n, total + 1)
    s = log_spaced_steps(10_000, 10)  # 1, 10^0.5, ..., 10^4: equal ratios
    assert s == [0, 1, 3, 10, 32, 100, 316, 1000, 3162, 10000]
    s = log_spaced_steps(50_000, 12)
    ratios = [b / a for a, b in zip(s[2:], s[3:])]
    assert max(ratios) / min(ratios) < 1.2, ratios
    with pytest.raises(ValueError, match="total"):
        log_spaced_steps(0, 5)
    with pytest.raises(ValueError, match="n must"):
        log_spaced_steps(10, 2)


def test_checkpoints_at_log_spaced_steps_and_callbacks():
    model = tiny(1)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    calls = []

    def cb(step, m, tokens_seen):
        assert not m.training and not torch.is_grad_enabled()
        calls.append((step, tokens_seen))
        return float(m.W_E.norm())

    res = train(model, batch_fn, 40, lr=3e-3, checkpoint_steps="log", callbacks=[cb], progress=False)
    assert res.checkpoint_steps == log_spaced_steps(40, 20)
    assert sorted(res.checkpoints) == res.checkpoint_steps
    assert [c[0] for c in calls] == res.checkpoint_steps
    assert all(t == s * 8 * T for s, t in calls)  # tokens_seen = steps * batch * pos
    for k, v in init.items():  # step 0 = the initial weights, the final step = the trained model
        assert torch.equal(res.checkpoints[0][k], v)
        assert torch.equal(res.checkpoints[40][k], model.state_dict()[k])
    # the checkpoint of step s equals a fresh run stopped after s steps
    fresh = tiny(1)
    train(fresh, batch_fn, 40, lr=3e-3, checkpoint_steps=None, progress=False)
    assert all(torch.equal(v, res.checkpoints[40][k]) for k, v in fresh.state_dict().items())
    # callback outputs kept per step
    assert res.callback_outputs[0][0] == pytest.approx(float(init["embed.W_E"].norm()))
    assert model.training  # train mode restored after callbacks


@pytest.mark.parametrize("dense", [False, True])
def test_loss_matches_reference_and_ignores_masked_out_targets(dense):
    model = tiny(2)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, V, (6, T), generator=g)
    mask = torch.zeros_like(x)
    if dense:  # >= half the positions: the full-logits path
        mask[:, :-1] = (torch.rand(6, T - 1, generator=g) < 0.8).long()
    else:  # sparse: the unembed-only-selected path
        mask[torch.arange(6), torch.randint(0, 4, (6,), generator=g)] = 1
    with torch.no_grad():
        got = masked_next_token_loss(model, x, mask)
        assert got.item() == pytest.approx(reference_loss(model, x, mask).item(), rel=1e-5)
        # change every target that no masked position predicts, and only tokens whose change is
        # invisible to masked positions (positions after the last masked target, causally later)
        y = x.clone()
        for b in range(6):
            last = int(mask[b, :-1].nonzero().max()) + 1  # last target position used
            y[b, last + 1:] = (y[b, last + 1:] + 1) % V
        assert masked_next_token_loss(model, y, mask).item() == pytest.approx(got.item(), rel=1e-6)
        # ... while changing a masked target does change it
        z = x.clone()
        p = int(mask[0, :-1].nonzero()[0]) + 1
        z[0, p] = (z[0, p] + 1) % V
        assert masked_next_token_loss(model, z, mask).item() != pytest.approx(got.item(), rel=1e-6)
        # the last mask column is ignored; loss_mask=None counts every position
        m2 = mask.clone()
        m2[:, -1] = 1
        assert masked_next_token_loss(model, x, m2).item() == pytest.approx(got.item(), rel=1e-6)
        full = masked_next_token_loss(model, x, None)
        assert full.item() == pytest.approx(reference_loss(model, x, torch.ones_like(x)).item(), rel=1e-5)


def test_training_ignores_masked_out_tokens():
    """Two runs whose batches differ only after the last masked target give identical weights."""

    def bf(shift):
        def f(step, g):
            x, m = batch_fn(step, g)
            x[:, 8:] = (x[:, 8:] + shift) % V  # targets after position 7 (mask covers 3..6 -> 4..7)
            return x, m
        return f

    a, b = tiny(3), tiny(3)
    train(a, bf(0), 15, lr=3e-3, progress=False)
    train(b, bf(5), 15, lr=3e-3, progress=False)
    for k, v in a.state_dict().items():
        assert torch.allclose(v, b.state_dict()[k], atol=1e-6), k
    c = tiny(3)
    train(c, bf(5), 15, lr=3e-3, progress=False, loss_mask=False)  # ignoring the mask: now they differ
    assert any(not torch.allclose(v, c.state_dict()[k], atol=1e-4) for k, v in a.state_dict().items())


def test_schedule_warmup_cosine_and_constant():
    model = tiny(4)
    res = train(model, batch_fn, 20, lr=1e-2, warmup=4, progress=False)
    assert res.lrs[:4] == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2])
    for s in range(4, 20):
        want = 1e-2 * 0.5 * (1 + math.cos(math.pi * (s - 4) / 16))
        assert res.lrs[s] == pytest.approx(want)
    res = train(tiny(4), batch_fn, 10, lr=1e-2, warmup=0.2, schedule="constant", progress=False)
    assert res.lrs == pytest.approx([5e-3] + [1e-2] * 9)
    assert len(res.losses) == 10 and all(math.isfinite(v) for v in res.losses)


def test_learns_and_safetensors_round_trip(tmp_path):
    model = tiny(5, attn_only=True)

    def copy_prev(step, g):  # every even position predicts a copy of itself
        x = torch.randint(0, V, (16, T), generator=g)
        x[:, 1::2] = x[:, 0::2]
        m = torch.zeros_like(x)
        m[:, 0::2] = 1
        return x, m

    res = train(model, copy_prev, 150, lr=1e-2, checkpoint_steps=[0, 150], progress=False)
    first, last = sum(res.losses[:10]) / 10, sum(res.losses[-10:]) / 10
    assert last < 0.3 * first, (first, last)
    paths = save_checkpoints(res, tmp_path)
    assert [p.name for p in paths] == ["step_0000000.safetensors", "step_0000150.safetensors"]
    other = tiny(9, attn_only=True)
    load_checkpoint(other, paths[1])
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in other.state_dict().items())
    res.load_into(other, 0)
    assert torch.equal(other.W_E, res.checkpoints[0]["embed.W_E"])


def test_bad_input_raises():
    model = tiny(0)
    with pytest.raises(ValueError, match="steps"):
        train(model, batch_fn, 0, progress=False)
    with pytest.raises(ValueError, match="schedule"):
        train(model, batch_fn, 5, schedule="linear", progress=False)
    with pytest.raises(ValueError, match="outside"):
        train(model, batch_fn, 5, checkpoint_steps=[0, 9], progress=False)
    with pytest.raises(ValueError, match="checkpoint_steps"):
        train(model, batch_fn, 5, checkpoint_steps="every", progress=False)
    x = torch.zeros(2, T, dtype=torch.long)
    with pytest.raises(ValueError, match="selects no position"):
        masked_next_token_loss(model, x, torch.zeros_like(x))
    with pytest.raises(ValueError, match="shape"):
        masked_next_token_loss(model, x, torch.ones(2, T - 1))
    with pytest.raises(ValueError, match="no checkpoint"):
        train(model, batch_fn, 2, progress=False).load_into(model, 1)


@pytest.mark.parametrize("pos", ["standard", "rotary"])
@pytest.mark.parametrize("norm", ["LN", "LNPre", None])
@pytest.mark.parametrize("attn_only", [True, False])
def test_fast_forward_matches_hooked_transformer(pos, norm, attn_only):
    model = make_tiny_model(d_model=16, n_heads=2, d_mlp=None if attn_only else 32, n_ctx=T, d_vocab=V,
                            act_fn=None if attn_only else "gelu_new", attn_only=attn_only, normalization_type=norm,
                            positional_embedding_type=pos, rotary_dim=4 if pos == "rotary" else None, train=True)
    with torch.no_grad():
        for p in model.parameters():  # non-trivial biases and LayerNorm weights
            p.add_(0.2 * torch.randn_like(p))
    assert train_mod.supports_fast_forward(model)
    x = torch.randint(0, V, (5, T))
    with torch.no_grad():
        ref = model(x)
        got = train_mod.fast_forward(model, x)
        assert torch.allclose(got, ref, atol=1e-5), (got - ref).abs().max()
        resid = train_mod.fast_forward(model, x, stop_at_layer=2)
        assert torch.allclose(resid, model(x, stop_at_layer=2), atol=1e-5)
    with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", lambda a, hook: a)]):
        assert not train_mod.supports_fast_forward(model)  # hooks attached: the slow path must run
    assert train_mod.supports_fast_forward(model)


def test_fast_and_slow_training_agree():
    a, b = tiny(6), tiny(6)
    train(a, batch_fn, 10, lr=3e-3, progress=False, fast=True)
    train(b, batch_fn, 10, lr=3e-3, progress=False, fast=False)
    for k, v in a.state_dict().items():
        if k.endswith("b_K"):
            # b_K's gradient is exactly zero in exact arithmetic (softmax ignores a per-query constant), so
            # its float32 rounding noise, normalised by Adam, differs between two forward implementations
            continue
        assert torch.allclose(v, b.state_dict()[k], atol=1e-4), k


def test_grouped_batches_equal_the_padded_batch():
    """A batch given as groups of different lengths trains exactly like the groups padded and stacked."""
    pad = V - 1

    def groups_fn(step, g):
        out = []
        for n, L in ((5, 6), (3, 11), (4, 8)):
            x = torch.randint(0, V - 1, (n, L), generator=g)
            m = torch.zeros_like(x)
            m[:, 2:L - 1] = 1
            out.append((x, m))
        return out

    def padded_fn(step, g):
        out = groups_fn(step, g)
        L = max(t.shape[1] for t, _ in out)
        return (torch.cat([F.pad(t, (0, L - t.shape[1]), value=pad) for t, _ in out]),
                torch.cat([F.pad(m, (0, L - m.shape[1])) for _, m in out]))

    model = tiny(3)
    g = torch.Generator().manual_seed(0)
    grouped = grouped_next_token_loss(model, groups_fn(0, g))
    g = torch.Generator().manual_seed(0)
    tokens, mask = padded_fn(0, g)
    assert torch.allclose(grouped, reference_loss(model, tokens, mask), atol=1e-5)
    a, b = tiny(4), tiny(4)
    ra = train(a, groups_fn, 8, lr=3e-3, progress=False)
    rb = train(b, padded_fn, 8, lr=3e-3, progress=False)
    assert ra.losses == pytest.approx(rb.losses, abs=1e-5)
    for k, v in a.state_dict().items():
        if not k.endswith("b_K"):  # see test_fast_and_slow_training_agree
            assert torch.allclose(v, b.state_dict()[k], atol=1e-4), k
    with pytest.raises(ValueError, match="selects a position"):
        grouped_next_token_loss(model, [(tokens, torch.zeros_like(tokens))])
    with pytest.raises(ValueError, match="pair"):
        grouped_next_token_loss(model, [tokens])


def test_weighted_mask_matches_a_weighted_reference():
    """A float loss_mask holds weights: sum(w * ce) / sum(w) over positions with w > 0 (slow loop as reference)."""
    model = tiny(3)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, V, (4, T), generator=g)
    w = torch.rand(4, T, generator=g)
    w[:, ::3] = 0.0
    logits = model(x)
    num, den = 0.0, 0.0
    for b in range(4):
        for p in range(T - 1):
            if w[b, p] > 0:
                num = num + w[b, p] * F.cross_entropy(logits[b, p][None], x[b, p + 1][None])
                den += float(w[b, p])
    assert masked_next_token_loss(model, x, w).item() == pytest.approx((num / den).item(), rel=1e-5)
    # weights of one reduce to the 0/1 mask; a group's weight counts in the grouped mean
    ones = (w > 0).float()
    assert masked_next_token_loss(model, x, ones).item() == pytest.approx(
        masked_next_token_loss(model, x, ones.long()).item(), rel=1e-6)
    both = grouped_next_token_loss(model, [(x[:2], w[:2]), (x[2:], w[2:])])
    assert both.item() == pytest.approx((num / den).item(), rel=1e-5)
    with pytest.raises(ValueError, match="finite and >= 0"):
        masked_next_token_loss(model, x, -w)


def test_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """A run stopped at step 13 (an exception inside the batch function) and resumed from its last saved
    state (step 10) ends with the same weights, losses and checkpoints, bit for bit, as one never stopped."""
    steps = 25
    whole = tiny(0)
    ref = train(whole, batch_fn, steps, lr=3e-3, seed=2, progress=False, checkpoint_steps=[0, 5, 20])

    def stopping(step, g):
        if step == 13:
            raise KeyboardInterrupt
        return batch_fn(step, g)

    part = tiny(0)
    with pytest.raises(KeyboardInterrupt):
        train(part, stopping, steps, lr=3e-3, seed=2, progress=False, checkpoint_steps=[0, 5, 20],
              resume_dir=tmp_path, save_every=5)
    assert torch.load(tmp_path / "train_state.pt", weights_only=False)["step"] == 10
    again = tiny(7)  # different initial weights: everything must come from the saved state
    res = train(again, batch_fn, steps, lr=3e-3, seed=2, progress=False, checkpoint_steps=[0, 5, 20],
                resume_dir=tmp_path, save_every=5, resume=True)
    for k, v in whole.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k
    assert res.losses == ref.losses and sorted(res.checkpoints) == [0, 5, 20]
    assert all(torch.equal(res.checkpoints[20][k], ref.checkpoints[20][k]) for k in ref.checkpoints[20])
    with pytest.raises(ValueError, match="a run of 25 steps, not 30"):
        train(tiny(0), batch_fn, 30, progress=False, resume_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="need resume_dir"):
        train(tiny(0), batch_fn, 3, progress=False, save_every=2)


def test_closed_vocabulary_loss_matches_a_reference():
    """``vocab``: the softmax runs over those ids only; a target outside them is refused."""
    model = tiny(4)
    g = torch.Generator().manual_seed(2)
    vocab = torch.tensor([2, 5, 7, 11, 13])
    x = vocab[torch.randint(0, len(vocab), (3, T), generator=g)]
    mask = torch.zeros_like(x)
    mask[:, 2:9] = 1
    logits = model(x)[:, :, vocab]
    want = []
    for b in range(3):
        for p in range(T - 1):
            if mask[b, p]:
                want.append(F.cross_entropy(logits[b, p][None], (vocab == x[b, p + 1]).nonzero()[0]))
    got = masked_next_token_loss(model, x, mask, vocab=vocab)
    assert got.item() == pytest.approx(torch.stack(want).mean().item(), rel=1e-5)
    assert got.item() < masked_next_token_loss(model, x, mask).item()  # fewer classes in the softmax
    grouped = grouped_next_token_loss(model, [(x, mask, vocab)])
    assert grouped.item() == pytest.approx(got.item(), rel=1e-6)
    with pytest.raises(ValueError, match="not in the closed vocabulary"):
        masked_next_token_loss(model, x, mask, vocab=vocab[:2])


@pytest.mark.parametrize("family", ["llama", "gemma2", "olmo2", "pythia", "olmoe"])
def test_the_papers_families_train_fused_as_they_train_hooked(family):
    """On the papers' families the trainer picks the fused forward by itself (``fast=None``) and trains exactly as
    the hooked forward does (float64; ``b_K``'s zero gradient left out, see test_fast_and_slow_training_agree); the
    sparse-mask loss equals the slow reference (Gemma 2's logit soft cap included)."""
    from tutorial_lib.zoo.families import tiny_family_model

    def family_batch(step, g):
        x = torch.randint(0, 61, (4, 12), generator=g)
        mask = torch.zeros_like(x)
        mask[:, 3:6] = 1
        return x, mask

    a, b = (tiny_family_model(family, dtype=torch.float64, seed=2).train() for _ in range(2))
    assert train_mod.supports_fast_forward(a)
    x, mask = family_batch(0, torch.Generator().manual_seed(0))
    assert masked_next_token_loss(a, x, mask, fast=True).item() == pytest.approx(
        reference_loss(a, x, mask).item(), abs=1e-10)
    ra = train(a, family_batch, 4, lr=3e-3, progress=False)
    rb = train(b, family_batch, 4, lr=3e-3, progress=False, fast=False)
    assert ra.losses == pytest.approx(rb.losses, abs=1e-9)
    for k, v in a.state_dict().items():
        if not k.endswith("b_K"):
            assert torch.allclose(v, b.state_dict()[k], atol=1e-8), k


def test_head_dropout_trains_differently_and_resumes_bit_for_bit(tmp_path):
    """``head_dropout``: 0 is the plain run, bit for bit; p > 0 changes the weights, the same seed gives the same
    weights, and a run stopped and resumed (the dropout generator saved with the state) ends where one never
    stopped would. Bad probabilities and the hooked forward are refused."""
    plain, zero, a, b = tiny(0), tiny(0), tiny(0), tiny(0)
    train(plain, batch_fn, 12, lr=3e-3, seed=2, progress=False)
    train(zero, batch_fn, 12, lr=3e-3, seed=2, progress=False, head_dropout=0.0, head_dropout_seed=9)
    ra = train(a, batch_fn, 12, lr=3e-3, seed=2, progress=False, head_dropout=0.5, head_dropout_seed=9)
    train(b, batch_fn, 12, lr=3e-3, seed=2, progress=False, head_dropout=0.5, head_dropout_seed=9)
    assert all(torch.equal(v, zero.state_dict()[k]) for k, v in plain.state_dict().items())
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert any(not torch.equal(v, plain.state_dict()[k]) for k, v in a.state_dict().items() if k.endswith("W_Q"))

    def stopping(step, g):
        if step == 7:
            raise KeyboardInterrupt
        return batch_fn(step, g)

    kw = dict(lr=3e-3, seed=2, progress=False, head_dropout=0.5, head_dropout_seed=9, resume_dir=tmp_path, save_every=5)
    with pytest.raises(KeyboardInterrupt):
        train(tiny(0), stopping, 12, **kw)
    again = tiny(3)
    res = train(again, batch_fn, 12, resume=True, **kw)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in a.state_dict().items())
    assert res.losses == ra.losses
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="head_dropout is the probability"):
            train(tiny(0), batch_fn, 2, progress=False, head_dropout=bad)
    with pytest.raises(ValueError, match="needs the fast forward"):
        train(tiny(0), batch_fn, 2, progress=False, head_dropout=0.2, fast=False)


def test_head_dropout_on_some_rows_only_matches_a_reference(monkeypatch):
    """``head_dropout_rows`` (multitask.dropout_rows) keeps head dropout to the groups it picks: ``"tasks"`` spares
    the groups of no task (``task = False``), bit for bit the pilot's reference (taskdrop: a grouped loss that hands
    the dropout to the other groups only, under ``"all"``); a list of names picks those tasks' groups. Picking every
    group is ``"all"``; picking none is no dropout. A bad value raises."""
    from tutorial_lib.zoo.multitask import Group, dropout_rows

    names = ["x", False, "y"]

    def fn(step, g):
        out = []
        for name, (n, L) in zip(names, ((5, 6), (3, 11), (4, 8))):
            x = torch.randint(0, V - 1, (n, L), generator=g)
            m = torch.zeros_like(x)
            m[:, 2:L - 1] = 1
            out.append(Group((x, m), name))
        return out

    kw = dict(lr=3e-3, seed=2, progress=False, head_dropout=0.5, head_dropout_seed=9)

    def run(rows, **extra):
        model = tiny(5)
        res = train(model, fn, 10, **{**kw, "head_dropout_rows": rows, **extra})
        return model.state_dict(), res.losses

    tasks, tasks_losses = run(dropout_rows("tasks", ["x", "y"]))
    every, _ = run("all")
    none, _ = run("all", head_dropout=0.0)
    only_x, _ = run(dropout_rows(["x"], ["x", "y"]))
    same = lambda a, b: all(torch.equal(v, b[k]) for k, v in a.items())  # noqa: E731
    assert not same(tasks, every) and not same(tasks, none) and not same(only_x, tasks) and not same(only_x, none)
    assert same(run(dropout_rows(["x", "y"], ["x", "y"]))[0], tasks)
    assert same(run(lambda g: True)[0], every) and same(run(lambda g: False)[0], none)

    def reference(model, groups, fast=False, head_keep=None):  # the pilot's grouped loss, written apart
        total, count = 0.0, 0
        for i, (tokens, mask) in enumerate(groups):
            n = int(mask[:, :-1].sum())
            total = total + masked_next_token_loss(model, tokens, mask, fast=fast,
                                                   head_keep=None if i == 1 else head_keep) * n
            count += n
        return total / count

    monkeypatch.setattr(train_mod, "grouped_next_token_loss", reference)
    model = tiny(5)
    res = train(model, lambda step, g: [tuple(x) for x in fn(step, g)], 10, **kw)
    assert same(model.state_dict(), tasks) and res.losses == tasks_losses
    monkeypatch.undo()
    with pytest.raises(ValueError, match="'all' or a function"):
        train(tiny(0), batch_fn, 2, progress=False, head_dropout=0.2, head_dropout_rows="tasks")
    for bad in ("task", ["z"], [], "x"):
        with pytest.raises(ValueError, match="list of task names out of"):
            dropout_rows(bad, ["x", "y"])
