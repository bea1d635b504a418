"""Tests for tutorial_lib.tasks.induction: data layout, no positional shortcut, metrics vs slow references,
the planted-pair probe batch, and a short training run that must form an induction head."""
import doctest
import warnings

import pytest
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=DeprecationWarning)
from conftest import make_tiny_model  # noqa: E402

from tutorial_lib.tasks import induction as ind  # noqa: E402

torch.set_num_threads(1)


def test_doctests():
    assert doctest.testmod(ind).failed == 0


def test_layout_matches_a_brute_force_search():
    d = ind.make_induction(200, n=100, seq_len=48, seed=3, min_len=3, max_len=12)
    assert (d.tokens[:, 0] == 0).all() and (d.tokens[:, 1:] != 0).all()
    for b in range(len(d)):
        row = d.tokens[b].tolist()
        (src, dst, L), = d.segments[b]
        assert 3 <= L <= 12 and src + L <= dst and dst + L <= 48
        assert row[dst:dst + L] == row[src:src + L]
        assert d.repeat_mask[b].nonzero()[:, 0].tolist() == list(range(dst, dst + L))
        # reference: every position whose token occurred earlier (exactly once, fillers are distinct)
        # and whose earlier occurrence's successor equals the next token is an induction target
        want = {}
        for q in range(1, 47):
            earlier = [e for e in range(1, q) if row[e] == row[q]]
            if earlier:
                assert len(earlier) == 1
                if row[earlier[0] + 1] == row[q + 1] and earlier[0] + 1 < q:
                    want[q] = earlier[0] + 1
        got = {q: int(d.target_pos[b, q]) for q in d.loss_mask[b].nonzero()[:, 0].tolist()}
        assert got == want
        assert (d.target_pos[b][~d.loss_mask[b]] == -1).all()


def test_no_fixed_position_shortcut():
    d = ind.make_induction(500, n=400, seq_len=64, seed=0)
    off = d.offsets().float()
    dst = torch.tensor([s[0][1] for s in d.segments]).float()
    lens = torch.tensor([s[0][2] for s in d.segments])
    assert off.std() > 8 and len(off.unique()) > 30, (off.std(), len(off.unique()))
    assert dst.std() > 8 and len(dst.unique()) > 30
    assert lens.min() == 4 and lens.max() == 20 and len(lens.unique()) == 17
    # no single query->key distance serves most induction targets
    b, q = d.loss_mask.nonzero(as_tuple=True)
    dist = q - d.target_pos[b, q]
    assert torch.bincount(dist).max().item() / len(dist) < 0.1


def test_seeds_splits_allowed_and_special_tokens():
    a = ind.make_induction(100, 8, 32, seed=1)
    assert torch.equal(a.tokens, ind.make_induction(100, 8, 32, seed=1).tokens)
    assert not torch.equal(a.tokens, ind.make_induction(100, 8, 32, seed=2).tokens)
    assert not torch.equal(a.tokens, ind.make_induction(100, 8, 32, seed=1, split="train").tokens)
    allowed = list(range(40, 90))
    d = ind.make_induction(100, 20, 32, seed=0, allowed=allowed)
    assert set(d.tokens[:, 1:].unique().tolist()) <= set(allowed)
    small = ind.make_induction(10, 50, 32, seed=0, n_segments=3, min_len=2, max_len=5)  # repeats allowed
    assert (small.tokens[:, 1:] != 0).all()
    assert max(len(s) for s in small.segments) == 3
    with pytest.raises(ValueError, match="special"):
        ind.make_induction(100, 4, 32, allowed=[0, 5, 6])
    with pytest.raises(ValueError, match="split"):
        ind.make_induction(100, 4, 32, split="valid")
    with pytest.raises(ValueError, match="too short"):
        ind.make_induction(100, 4, 8, min_len=4)
    with pytest.raises(ValueError, match="vocabulary size"):
        ind.make_induction("gpt2", 4, 32)


def test_tokenizer_special_tokens_never_drawn():
    from tokenizers import Tokenizer, models

    from tutorial_lib.tasks.word_tokenizer import wrap

    vocab = {"<|endoftext|>": 0, "<|pad|>": 1, "<|unk|>": 2, **{f"w{i}": i + 3 for i in range(60)}}
    tok = wrap(Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>")))
    d = ind.make_induction(tok, 30, 40, seed=0)
    assert d.bos == 0 and (d.tokens[:, 0] == 0).all()
    assert d.tokens[:, 1:].min() >= 3
    p = ind.make_planted_pair_batch(tok, 10, 20, seed=0)
    assert p.clean[:, 1:].min() >= 3 and isinstance(p.prompts[0], str)


def slow_attention_reference(model, d):
    """Loop over examples and positions with the model's own cache."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    ind_sum, ind_n = torch.zeros(L, H), 0
    prev_sum, prev_n = torch.zeros(L, H), 0
    for b in range(len(d)):
        _, cache = model.run_with_cache(d.tokens[b:b + 1])
        for layer in range(L):
            pat = cache["pattern", layer][0]
            for q in range(d.tokens.shape[1]):
                if d.loss_mask[b, q]:
                    ind_sum[layer] += pat[:, q, d.target_pos[b, q]]
                if q >= 2:
                    prev_sum[layer] += pat[:, q, q - 1]
        ind_n += int(d.loss_mask[b].sum())
        prev_n += d.tokens.shape[1] - 2
    return ind_sum / ind_n, prev_sum / prev_n


def test_metrics_match_slow_references():
    model = make_tiny_model(d_model=16, n_heads=2, attn_only=True, seed=1, train=True)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    d = ind.make_induction(50, 12, 32, seed=0)
    ia, pa = slow_attention_reference(model, d)
    assert torch.allclose(ind.induction_attention(model, d, batch_size=5), ia, atol=1e-5)
    assert torch.allclose(ind.previous_token_attention(model, d, batch_size=5), pa, atol=1e-5)
    m = ind.induction_metrics(model, d, batch_size=5)
    logits = model(d.tokens)
    for b in range(len(d)):
        qs = d.loss_mask[b].nonzero()[:, 0]
        ce = F.cross_entropy(logits[b, qs], d.tokens[b, qs + 1])
        acc = (logits[b, qs].argmax(-1) == d.tokens[b, qs + 1]).float().mean()
        assert m["loss"][b].item() == pytest.approx(ce.item(), rel=1e-5)
        assert m["accuracy"][b].item() == pytest.approx(acc.item())
    # hooks are honoured: zeroing every layer-0 head changes layer-1 attention, and leaves no hook behind
    from tutorial_lib.core.circuits import ablation_hooks

    ab = ind.induction_attention(model, d, ablation_hooks(model, ["a0.h0", "a0.h1"]))
    assert not torch.allclose(ab[1], ia[1], atol=1e-4) and torch.allclose(ab[0], ia[0], atol=1e-5)
    assert all(not h.fwd_hooks for h in model.hook_dict.values())


def test_planted_pair_batch():
    p = ind.make_planted_pair_batch(300, n=64, seq_len=24, seed=5)
    r = torch.arange(64)
    a1 = p.positions["A1"]
    assert (p.clean[:, 0] == 0).all() and (p.end_pos == 23).all()
    assert (p.clean[:, -1] == p.clean[r, a1]).all() and (p.answers == p.clean[r, a1 + 1]).all()
    assert ((p.clean == p.clean[:, -1:]).sum(1) == 2).all()  # A exactly twice
    assert ((p.clean == p.answers[:, None]).sum(1) == 1).all()  # B exactly once
    assert ((p.corrupt == p.clean[:, -1:]).sum(1) == 1).all()  # corrupt: no earlier A
    assert (p.corrupt != p.clean).sum(1).eq(1).all()
    assert (p.answers != p.wrong[:, 0]).all()
    assert a1.min() >= 1 and a1.max() <= 20 and len(a1.unique()) > 10
    assert torch.equal(p.positions["B1"], a1 + 1)
    # small vocabulary (fillers repeat): A still appears exactly twice, B != A
    s = ind.make_planted_pair_batch(8, n=64, seq_len=24, seed=0)
    assert ((s.clean == s.clean[:, -1:]).sum(1) == 2).all() and (s.answers != s.clean[:, -1]).all()
    assert ((s.corrupt == s.clean[:, -1:]).sum(1) == 1).all()
    # metrics read the final position
    logits = torch.zeros(64, 24, 300)
    logits[r, -1, p.answers] = 5.0
    assert (p.accuracy(logits) == 1).all() and (p.target_logit(logits) == 5).all()
    assert torch.allclose(p.metric(logits), logits[:, -1].log_softmax(-1)[r, p.answers])
    assert torch.equal(p.clean, ind.make_planted_pair_batch(300, n=64, seq_len=24, seed=5).clean)



def test_short_training_run_learns_induction():
    """A real ~1000-step run of a tiny model (d_model 32, 2 heads, 16 tokens over 23 symbols; about
    10-25 s on one thread) must form a previous-token -> induction pair: the layer-1 head's attention to
    the token after the earlier occurrence beats uniform attention by a clear factor, the loss on the
    repeated tokens falls far below guessing, and zeroing the previous-token head undoes both."""
    import math

    from tutorial_lib.core.circuits import ablation_hooks
    from tutorial_lib.zoo.train import train

    V, T = 24, 16
    torch.manual_seed(0)
    model = make_tiny_model(n_heads=2, n_ctx=T, d_vocab=V, attn_only=True, positional_embedding_type="rotary",
                            rotary_dim=16, seed=0, train=True)
    test = ind.make_induction(V, 256, T, seed=99, min_len=2, max_len=4, n_segments=2)
    b, q = test.loss_mask.nonzero(as_tuple=True)
    chance = (1.0 / (q.float() + 1)).mean().item()  # uniform causal attention over q + 1 keys
    assert ind.induction_attention(model, test)[1].max() < 2 * chance  # untrained: near chance
    train(model, ind.induction_batch_fn(V, 64, T, 2, 4, 2), 1000, lr=5e-3, seed=0, progress=False)
    att = ind.induction_attention(model, test)[1]
    prev = ind.previous_token_attention(model, test)[0]
    loss = ind.induction_metrics(model, test)["loss"].mean().item()
    assert att.max() > 5 * chance, (att, chance)
    assert prev.max() > 0.5, prev
    assert loss < 0.25 * math.log(V - 1), loss
    hooks = ablation_hooks(model, [f"a0.h{int(prev.argmax())}"])
    ab_att = ind.induction_attention(model, test, hooks)[1, int(att.argmax())]
    ab_loss = ind.induction_metrics(model, test, hooks)["loss"].mean().item()
    assert ab_att < 0.5 * att.max() and ab_loss > loss + 1.0, (ab_att, ab_loss)


def test_near_copies_follow_their_source_and_keep_the_default_stream():
    ids, bos, _ = ind.resolve_vocab(300)
    base = ind.induction_batch(ids, bos, 200, 48, torch.Generator().manual_seed(4), 2, 8, 3)
    again = ind.induction_batch(ids, bos, 200, 48, torch.Generator().manual_seed(4), 2, 8, 3, near=0.0)
    assert torch.equal(base.tokens, again.tokens) and base.segments == again.segments  # near=0: the old stream
    d = ind.induction_batch(ids, bos, 200, 48, torch.Generator().manual_seed(4), 2, 8, 3, near=1.0)
    gaps = []
    for b, segs in enumerate(d.segments):
        row = d.tokens[b].tolist()
        for src, dst, L in segs:
            assert row[dst:dst + L] == row[src:src + L] and 2 <= L <= 8 and dst + L <= 48
            gaps.append(dst - src - L)
    assert min(gaps) >= 0 and max(gaps) <= 2 and len(set(gaps)) == 3
    b, q = d.loss_mask.nonzero(as_tuple=True)
    dist = q - d.target_pos[b, q]  # near copies still need content: no one distance serves most targets
    assert torch.bincount(dist).max().item() / len(dist) < 0.25
    half = ind.induction_batch(ids, bos, 400, 48, torch.Generator().manual_seed(4), 2, 8, 3, near=0.5)
    share = sum(dst - src - L <= 2 for segs in half.segments for src, dst, L in segs) / sum(map(len, half.segments))
    assert 0.5 < share < 0.85  # near candidates fit more often, so they are kept a little more than half the time
