"""Tests for tutorial_lib.zoo.induction_models: configs, seeding, and the pair check on a hand-built circuit."""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
from transformer_lens import HookedTransformer, HookedTransformerConfig  # noqa: E402

from tutorial_lib.tasks import induction as ind  # noqa: E402
from tutorial_lib.zoo import induction_models as im  # noqa: E402

torch.set_num_threads(1)


def test_configs_and_seeding():
    small, large = im.config("small"), im.config("large")
    assert (small.d_model, small.n_heads, small.n_layers) == (64, 4, 2)
    assert (large.d_model, large.n_heads, large.n_layers) == (128, 8, 2)
    assert small.attn_only and small.positional_embedding_type == "rotary" and small.rotary_dim == small.d_head
    assert small.d_vocab == im.RECIPE.vocab_size and small.n_ctx == im.RECIPE.seq_len
    assert im.config("deep").n_layers == 3 and set(im.SIZE_LR) == set(im.SIZES)
    assert im.config("small", positional="standard").positional_embedding_type == "standard"
    assert im.config("small", n_layers=3).n_layers == 3
    a, b, c = im.make_model("small", 0), im.make_model("small", 0), im.make_model("small", 1)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert not torch.equal(a.W_Q, c.W_Q)
    with pytest.raises(ValueError, match="size"):
        im.config("medium")
    with pytest.raises(ValueError, match="positional"):
        im.config("small", positional="alibi")
    with pytest.raises(ValueError, match="vocab"):
        im.config("small", vocab="gpt2")


def hand_built_induction_model(V=20, T=16, big=40.0, n_layers=2):
    """A 2-layer attention-only model whose weights implement the textbook circuit exactly.

    Residual layout: [token one-hot (V) | position one-hot (T) | previous token (V) | output (V)].
    a0.h0 attends to q-1 by position and writes the token there into 'previous token';
    a1.h0 matches the current token against 'previous token' (K-composition) and copies the key's
    token into 'output', which is all the unembedding reads. Every other head (and any layer 2) is zero.
    """
    d = 3 * V + T
    cfg = HookedTransformerConfig(n_layers=n_layers, d_model=d, n_heads=2, d_head=max(V, T), n_ctx=T, d_vocab=V,
                                  attn_only=True, act_fn=None, normalization_type=None,
                                  positional_embedding_type="standard")
    m = HookedTransformer(cfg)
    tok, pos, prv, out = 0, V, V + T, 2 * V + T
    sd = {k: torch.zeros_like(v) for k, v in m.state_dict().items()}
    sd.update({k: v for k, v in m.state_dict().items() if k.endswith(("mask", "IGNORE"))})
    dh = cfg.d_head
    scale = dh ** 0.5
    for v in range(V):
        sd["embed.W_E"][v, tok + v] = 1
        sd["unembed.W_U"][out + v, v] = 1
    for p in range(T):
        sd["pos_embed.W_pos"][p, pos + p] = 1
    # layer 0, head 0: query at p looks for key position p-1; copies the key's token into 'prev'
    for p in range(1, T):
        sd["blocks.0.attn.W_Q"][0, pos + p, p - 1] = big * scale
    for p in range(T):
        sd["blocks.0.attn.W_K"][0, pos + p, p] = 1
    for v in range(V):
        sd["blocks.0.attn.W_V"][0, tok + v, v] = 1
        sd["blocks.0.attn.W_O"][0, v, prv + v] = 1
        # layer 1, head 0: query = current token, key = previous token; copies the key's token to 'out'
        sd["blocks.1.attn.W_Q"][0, tok + v, v] = big * scale
        sd["blocks.1.attn.W_K"][0, prv + v, v] = 1
        sd["blocks.1.attn.W_V"][0, tok + v, v] = 1
        sd["blocks.1.attn.W_O"][0, v, out + v] = 10
    m.load_state_dict(sd)
    return m


def test_check_induction_pair_on_a_hand_built_circuit():
    model = hand_built_induction_model()
    data = ind.make_induction(20, 64, 16, seed=0, min_len=2, max_len=5, n_segments=2)
    r = im.check_induction_pair(model, data)
    assert r["prev_heads"] == ["a0.h0"] and r["prev_score"] > 0.99
    assert r["induction_head"] == "a1.h0" and r["induction_heads"] == ["a1.h0"] and r["induction_score"] > 0.99
    assert r["loss"] < 0.01 and r["accuracy"] == 1.0 and r["formed"]
    # ablating the previous-token head destroys induction; ablating the idle head changes nothing
    assert r["induction_score_prev_ablated"] < 0.2 and r["loss_prev_ablated"] > 2.0
    assert r["control_heads"] == ["a0.h1"]
    assert r["loss_control_ablated"] == pytest.approx(r["loss"], abs=1e-6)
    assert r["prev_scores"].shape == (2, 2) and r["induction_scores"][1, 1] < 0.2
    # a random model forms nothing
    rnd = im.check_induction_pair(im.make_model("small", 0), n=32)
    assert not rnd["formed"] and rnd["induction_score"] < 0.2


def test_check_induction_pair_in_a_deeper_model():
    """With an idle third layer the pair is still found in layers 0-1, controls drawn from layer 0."""
    model = hand_built_induction_model(n_layers=3)
    data = ind.make_induction(20, 64, 16, seed=1, min_len=2, max_len=5, n_segments=2)
    r = im.check_induction_pair(model, data)
    assert r["induction_head"] == "a1.h0" and r["prev_heads"] == ["a0.h0"] and r["formed"]
    assert r["control_heads"] == ["a0.h1"] and r["loss_prev_ablated"] > 2.0
    with pytest.raises(ValueError, match="2 layers"):
        im.check_induction_pair(im.make_model("small", 0, n_layers=1))
