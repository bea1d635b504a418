"""Copying on chosen tokens (issue 30): general induction copies every token set, narrow copying does not."""
import pytest
import torch

from tutorial_lib.zoo import store
from tutorial_lib.zoo.copying import (INDUCTION_SCORE, Contrast, copy_token_sets, copying_contrast, copying_on_tokens,
                                      repeated_sequences)

MEDIUM = "zoo-multitask-medium"
V, P = 50, 32  # hand-built model: vocabulary (BOS = 0) and context


def hand_built_induction(copy_ids=None):
    """A 2-layer attention-only model with a previous-token head (a0.h0) and an induction head (a1.h0), written by
    hand on one-hot features: residual = [token | position | previous token | output]. ``copy_ids``: the tokens the
    induction head can match (default: all) -- a narrow copier when given a subset."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    d = 3 * V + P
    cfg = HookedTransformerConfig(n_layers=2, d_model=d, n_ctx=P, d_head=max(V, P), n_heads=1, d_vocab=V,
                                  attn_only=True, normalization_type=None, use_attn_scale=False, act_fn=None)
    model = HookedTransformer(cfg)
    for p in model.parameters():
        torch.nn.init.zeros_(p)
    tok, pos, prev, out = slice(0, V), slice(V, V + P), slice(V + P, 2 * V + P), slice(2 * V + P, d)
    eye = torch.eye(V)
    c = 30.0
    with torch.no_grad():
        model.embed.W_E[:, tok] = eye
        model.pos_embed.W_pos[:, pos] = torch.eye(P)
        a0, a1 = model.blocks[0].attn, model.blocks[1].attn
        # a0.h0: position p attends to p - 1 and writes that token into the "previous token" slot
        a0.W_Q[0, pos, :P] = c * torch.eye(P)
        a0.W_K[0, pos, :P] = torch.eye(P).roll(1, dims=1)  # key j answers query j + 1
        a0.W_V[0, tok, :V] = eye
        a0.W_O[0, :V, prev] = eye
        # a1.h0: a query holding token t attends to the key whose previous token is t, and copies that key's token
        match = eye.clone()
        if copy_ids is not None:
            keep = torch.zeros(V)
            keep[list(copy_ids)] = 1
            match = match * keep
        a1.W_Q[0, tok, :V] = c * match
        a1.W_K[0, prev, :V] = eye
        a1.W_V[0, tok, :V] = eye
        a1.W_O[0, :V, out] = eye
        model.unembed.W_U[out, :] = 10 * eye
    return model.eval()


def test_repeated_sequences_layout():
    t = repeated_sequences(range(1, 30), bos=0, n_seqs=5, length=8, seed=3)
    assert t.shape == (5, 17) and (t[:, 0] == 0).all()
    assert torch.equal(t[:, 1:9], t[:, 9:])
    assert all(len(set(r[1:9])) == 8 for r in t.tolist())
    assert torch.equal(t, repeated_sequences(range(1, 30), bos=0, n_seqs=5, length=8, seed=3))  # seeded
    with pytest.raises(ValueError, match="distinct tokens"):
        repeated_sequences(range(1, 5), bos=0, length=8)


def test_general_induction_copies_both_token_sets():
    model = hand_built_induction()
    for ids in (range(1, 25), range(25, V)):
        c = copying_on_tokens(model, ids, n_seqs=16, length=12, bos=0)
        assert c.drop >= 2.0 and c.top1 == 1.0, c.row()
        assert c.heads == ["a1.h0"] and c.best_score > 0.9, c.scores
    assert float(c.scores[0, 0]) < INDUCTION_SCORE  # the previous-token head is not counted


def test_narrow_copying_is_told_apart_from_induction():
    """The same circuit matching only tokens 1-24: copies those, and nothing on 25-49 (issue 30's shipped model)."""
    model = hand_built_induction(copy_ids=range(1, 25))
    trained = copying_on_tokens(model, range(1, 25), n_seqs=16, length=12, label="trained", bos=0)
    held = copying_on_tokens(model, range(25, V), n_seqs=16, length=12, label="held out", bos=0)
    assert trained.drop >= 2.0 and trained.heads == ["a1.h0"]
    assert held.drop < 1.0 and held.heads == [] and held.top1 < 0.2  # only "some token seen before"
    contrast = Contrast(trained, held)
    assert not contrast.general and "does not copy" in contrast.reading()
    assert list(contrast.table().index) == ["trained", "held out"]


def test_general_targets_and_the_manifest_record():
    """Issue 30's held-out targets (a 2-nat drop, a minority of heads, top-1 >= 50%) read off a contrast, and the
    manifest entry written from it."""
    general = hand_built_induction()
    narrow = hand_built_induction(copy_ids=range(1, 25))
    kw = dict(n_seqs=16, length=12, bos=0)
    ok = Contrast(copying_on_tokens(general, range(1, 25), **kw), copying_on_tokens(general, range(25, V), **kw))
    bad = Contrast(copying_on_tokens(narrow, range(1, 25), **kw), copying_on_tokens(narrow, range(25, V), **kw))
    # the hand-built model copies every token, but with 1 of its 2 heads: not a minority
    assert set(ok.missed()) == {"copying_held_out_heads"} and ok.missed()["copying_held_out_heads"][0] == 1
    assert set(bad.missed()) == {"copying_held_out_drop", "copying_held_out_heads", "copying_held_out_top1"}
    rec = bad.record(n_seqs=16, length=12, seed=0)
    assert rec["protocol"] == {"n_seqs": 16, "length": 12, "seed": 0}
    assert rec["held_out"] == {**bad.held_out.as_dict(), "tokens": bad.held_out.label}
    assert rec["trained"]["heads"] == ["a1.h0"] and rec["held_out"]["heads"] == []


def test_context_too_short_is_refused():
    with pytest.raises(ValueError, match="context"):
        copying_on_tokens(hand_built_induction(), range(1, V), length=20, bos=0)


@pytest.mark.skipif(MEDIUM not in store.zoo_names(), reason="zoo-multitask-medium not built")
def test_medium_model_copies_tokens_it_never_saw_repeated_as_the_manifest_records():
    """The shipped medium model's copying (issue 30), re-measured against the manifest's ``copying`` figures. Its
    training repeated only the trained half of a seeded split of the ordinary tokens; on the held-out half, which no
    training row repeated, issue 30's targets hold: a drop of >= 2 nats, a minority of heads >= 0.3 (1 to 8 of 32),
    top-1 >= 50% on the second pass."""
    model = store.load_model_from_zoo(MEDIUM)
    entry = store.read_manifest()["models"][MEDIUM]
    recorded, mix = entry["copying"], entry["mix"]
    assert (mix["induction_vocab"], mix["induction_held_out_seed"], mix["induction_held_out_fraction"]) == ("split", 0, 0.5)
    sets = copy_token_sets(model)
    tok = model.tokenizer
    ordinary = set(range(len(tok))) - set(tok.all_special_ids)
    assert (len(sets.trained), len(sets.held_out)) == (1585, 1584)
    assert set(sets.trained) | set(sets.held_out) == ordinary and not set(sets.trained) & set(sets.held_out)
    got = copying_contrast(model, **recorded["protocol"])
    for key, c in (("trained", got.trained), ("held_out", got.held_out)):
        want, now = recorded[key], c.as_dict()
        for k in ("first_loss", "second_loss", "drop", "top1", "best_score"):
            assert now[k] == pytest.approx(want[k], abs=0.02), (key, k)
        assert now["heads"] == want["heads"] and now["n_tokens"] == want["n_tokens"], key
    assert got.general and got.missed() == {}, got.missed()
    assert got.trained.drop >= 2.0 and got.trained.top1 >= 0.9  # the tokens it was trained to copy, copied surely


@pytest.mark.skipif(MEDIUM not in store.zoo_names(), reason="zoo-multitask-medium not built")
@pytest.mark.parametrize("seed", [1, 2])
def test_medium_model_copies_held_out_tokens_on_other_sequences(seed):
    """The same targets on other random sequences of held-out tokens than the manifest's (seeds 1 and 2), and at
    another length (16 tokens): the copying is not a property of one draw."""
    model = store.load_model_from_zoo(MEDIUM)
    got = copying_contrast(model, n_seqs=32, length=16 if seed == 2 else 24, seed=seed)
    assert got.missed() == {}, got.missed()


def test_token_sets_of_a_model_trained_on_no_particular_tokens():
    """GPT-2 (its tokenizer; any hub model): the filler words that are single tokens, and the other ordinary tokens."""
    import types

    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer

    sets = copy_token_sets(types.SimpleNamespace(tokenizer=gpt2_tokenizer()), held_out_cap=3000)
    assert len(sets.trained) == 241 and len(sets.held_out) == 3000 and not set(sets.trained) & set(sets.held_out)
    assert 50256 not in sets.held_out and "repeated in training" not in sets.trained_label
