"""Split induction rows (issue 30's general recipe, the shipped medium model's): held-out tokens are never repeated."""
from collections import Counter

import pytest
import torch

from tutorial_lib.tasks.tokenizers import zoo_tokenizer
from tutorial_lib.zoo.build import MEDIUM_MIX
from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus, induction_ids
from tutorial_lib.zoo.split_induction import split_ids

CURRICULUM = ((0, 256), (3, None))


@pytest.fixture(scope="module")
def corpus():
    spec = MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_vocab": "split", "induction_held_out_text": 0.5,
                      "induction_vocab_curriculum": CURRICULUM, "induction_warmup_steps": 5,
                      "plain_rows": 0, "plain_from": 0})
    return MultiTaskCorpus(zoo_tokenizer(), spec, seed=0)


def test_split_is_seeded_and_covers_the_ordinary_tokens():
    tok = zoo_tokenizer()
    held, trained = split_ids(tok, seed=0)
    assert len(held) == round(0.5 * (len(tok) - 3)) and not set(held.tolist()) & set(trained.tolist())
    assert torch.equal(split_ids(tok, seed=0)[1], trained) and not torch.equal(split_ids(tok, seed=1)[0], held)
    assert induction_ids(tok, "split") == trained.tolist()
    with pytest.raises(ValueError, match="fraction"):
        split_ids(tok, fraction=1.0)


def test_rows_repeat_trained_tokens_only_and_the_vocabulary_widens(corpus):
    rows = corpus.induction_warmup
    held = set(rows.held.tolist())
    assert [rows.width(s) for s in (0, 2, 3, 100)] == [256, 256, len(rows.trained), len(rows.trained)]
    narrow = corpus.batch_fn(0, torch.Generator().manual_seed(0))
    assert len(narrow) == 1 and set(narrow[0][2].tolist()) == set(rows.trained[:256].tolist())
    assert set(narrow[0][0][:, 1:].flatten().tolist()) <= set(rows.trained[:256].tolist())
    (tokens, mask, vocab), = corpus.batch_fn(3, torch.Generator().manual_seed(0))
    assert set(vocab.tolist()) == set(range(3, len(zoo_tokenizer())))  # every ordinary token in the softmax
    share = sum(t in held for t in tokens[:, 1:].flatten().tolist()) / tokens[:, 1:].numel()
    assert 0.1 < share < 0.5  # held-out tokens appear as plain text ...
    for row, m in zip(tokens.tolist(), mask.tolist()):
        repeated = {t for t, n in Counter(row[1:]).items() if n > 1}
        assert repeated and not repeated & held  # ... never repeated
        targets = {row[p + 1] for p, w in enumerate(m[:-1]) if w == 1.0}
        assert targets <= repeated
    # after the warm-up: the mixed phase's induction group, the same rule
    mixed = [g for g in corpus.batch_fn(5, torch.Generator().manual_seed(0)) if len(g) == 3]
    assert len(mixed) == 1 and mixed[0][0].shape[0] == MEDIUM_MIX["rows"]["induction"]


def test_shipped_recipe_is_the_split_recipe_and_never_repeats_a_held_out_token():
    """The shipped medium mix (pilot K2f6): split rows widening 256 -> 1,024 -> all, no held-out text, 16 plain rows
    from the start of the mixed phase; in its batches (the warm-up, each widening, the mixed phase, the restart) no
    induction row and no plain row repeats a held-out token. MixSpec's own default stays every ordinary token."""
    from tutorial_lib.zoo.build import restart_spec

    assert (MEDIUM_MIX["induction_vocab"], MEDIUM_MIX["induction_held_out_text"]) == ("split", 0.0)
    assert MEDIUM_MIX["induction_vocab_curriculum"] == ((0, 256), (2000, 1024), (2400, None))
    assert (MEDIUM_MIX["plain_rows"], MEDIUM_MIX["plain_from"]) == (16, 0)
    assert MixSpec().induction_vocab == "all" and MixSpec().induction_vocab_curriculum == ()
    tok = zoo_tokenizer()
    held = set(split_ids(tok)[0].tolist())
    spec = MixSpec(**{**MEDIUM_MIX, "pool_size": 200})
    for s, step in ((spec, 0), (spec, 2000), (spec, 2400), (spec, 2500), (restart_spec(spec), 0)):
        groups = MultiTaskCorpus(tok, s, seed=0).batch_fn(step, torch.Generator().manual_seed(step))
        # the induction group (tokens, weights, softmax vocabulary) and the plain rows (float weights)
        rows = [g[0] for g in groups if len(g) == 3 or g[1].is_floating_point()]
        assert len(rows) == (1 if s.induction_warmup_steps > step else 2), step
        for row in (r for t in rows for r in t.tolist()):
            repeated = {t for t, n in Counter(row[1:]).items() if n > 1}
            assert repeated or len(row) == 25, step  # an induction row repeats, a plain row does not
            assert not repeated & held, step


def test_echo_rows_copy_every_token_without_repeating_one():
    """Each echo row: BOS, distinct ordinary tokens, a marker, then the token the marker names; loss on the marker only.
    Over a few batches the answers cover held-out and trained tokens alike."""
    from tutorial_lib.zoo.split_induction import EchoRows

    tok = zoo_tokenizer()
    echo = EchoRows(tok, 16, lengths=(3, 9))
    prev, first = (tok.convert_tokens_to_ids(m) for m in EchoRows.MARKERS)
    held = set(split_ids(tok, seed=0)[0].tolist())
    g = torch.Generator().manual_seed(0)
    answers, kinds = [], Counter()
    for _ in range(20):
        tokens, mask = echo(g)
        assert tokens.shape == mask.shape and int(mask.sum()) == 16
        for row, m in zip(tokens.tolist(), mask.tolist()):
            at = m.index(1)  # the marker's position: the prediction is made there
            body = row[1:at]
            assert row[0] == tok.bos_token_id and 3 <= len(body) <= 9 and len(set(body)) == len(body)
            assert not set(body) & (set(tok.all_special_ids) | {prev, first})
            assert row[at] in (prev, first) and sum(m) == 1
            want = body[-1] if row[at] == prev else body[0]
            assert row[at + 1] == want and all(t == tok.pad_token_id for t in row[at + 2:])
            kinds[row[at]] += 1
            answers.append(want)
    assert kinds[prev] == kinds[first] == 160
    assert 0.4 < sum(a in held for a in answers) / len(answers) < 0.6  # held-out tokens are copied as often as any
    with pytest.raises(ValueError, match="lo <= hi"):
        EchoRows(tok, 4, lengths=(5, 2))


def test_echo_rows_join_both_phases_and_leave_the_other_rows_unchanged(corpus):
    spec = corpus.spec
    with_echo = MultiTaskCorpus(zoo_tokenizer(), MixSpec(**{**spec.__dict__, "echo_rows": 8}), seed=0)
    for step in (0, 7):  # the warm-up (induction rows only) and the whole mix
        plain = corpus.batch_fn(step, torch.Generator().manual_seed(step))
        more = with_echo.batch_fn(step, torch.Generator().manual_seed(step))
        assert len(more) == len(plain) + 1
        for p, q in zip(plain, more):
            assert all(torch.equal(x, y) for x, y in zip(p, q))
        tokens, mask = more[-1]
        assert tokens.shape[0] == 8 and int(mask.sum()) == 8


def test_restarted_cycle_draws_from_the_full_trained_vocabulary(corpus):
    """The second cycle of a restarted build starts at the curriculum's end, not at its first width."""
    from tutorial_lib.zoo.build import restart_spec

    spec = restart_spec(corpus.spec)
    assert spec.induction_warmup_steps == 0 and spec.induction_vocab_curriculum == ()
    again = MultiTaskCorpus(zoo_tokenizer(), spec, seed=1)
    assert again.induction.width(0) == len(split_ids(zoo_tokenizer())[1]) > corpus.induction.width(0) == 256
    assert restart_spec(MixSpec(**MEDIUM_MIX)) == MixSpec(**{**MEDIUM_MIX, "induction_warmup_steps": 0,  # shipped
                                                             "induction_vocab_curriculum": ()})


def test_plain_rows_hold_every_token_once_and_join_the_mixed_phase_only(corpus):
    """Plain rows (pilot K2): BOS then distinct ordinary tokens drawn from all of them (held-out ones as often as
    trained ones), every next token a target at the row weight; only the mixed phase gets them, after the other
    rows, which stay as they were."""
    from tutorial_lib.zoo.split_induction import PlainRows

    tok = zoo_tokenizer()
    held = set(split_ids(tok, seed=0)[0].tolist())
    rows = PlainRows(tok, 8, length=20, weight=0.25)
    g = torch.Generator().manual_seed(0)
    seen = []
    for _ in range(10):
        tokens, mask = rows(g)
        assert tokens.shape == mask.shape == (8, 21) and (tokens[:, 0] == tok.bos_token_id).all()
        assert mask.is_floating_point() and (mask[:, :-1] == 0.25).all() and (mask[:, -1] == 0).all()
        for row in tokens[:, 1:].tolist():
            assert len(set(row)) == 20 and not set(row) & set(tok.all_special_ids)
            seen += row
    assert 0.4 < sum(t in held for t in seen) / len(seen) < 0.6
    with pytest.raises(ValueError, match="distinct tokens"):
        PlainRows(tok, 4, length=0)
    spec = corpus.spec
    more = MultiTaskCorpus(tok, MixSpec(**{**spec.__dict__, "plain_rows": 8, "plain_len": 20}), seed=0)
    for step, extra in ((0, 0), (7, 1)):  # the warm-up: none; the whole mix: one group more
        a = corpus.batch_fn(step, torch.Generator().manual_seed(step))
        b = more.batch_fn(step, torch.Generator().manual_seed(step))
        assert len(b) == len(a) + extra
        for p, q in zip(a, b):
            assert all(torch.equal(x, y) for x, y in zip(p, q))
        # each group names its task; the induction and plain groups no task (head dropout's rows="tasks" spares them)
        n_task = len(b) - 1 - extra
        assert all(q.task in spec.rows and q.task != "induction" for q in b[:n_task])
        assert [q.task for q in b[n_task:]] == [False] * (1 + extra)
    assert {q.task for q in b[:-2]} == set(spec.rows) - {"induction"}
    assert b[-1][0].shape == (8, 21)


def test_plain_rows_can_start_later_and_the_restart_can_change_them(corpus):
    """``plain_from`` (pilot K2b's recipe): before that step the batches are exactly those without plain rows, from
    it on exactly those with them; a restarted cycle has them from its first step, and its ``mix`` entry overrides
    MixSpec fields (pilots RB/RC: no plain rows, or a lighter weight, in the restart)."""
    from tutorial_lib.zoo.build import restart_spec

    tok, spec = zoo_tokenizer(), corpus.spec
    always = MultiTaskCorpus(tok, MixSpec(**{**spec.__dict__, "plain_rows": 4}), seed=0)
    later = MultiTaskCorpus(tok, MixSpec(**{**spec.__dict__, "plain_rows": 4, "plain_from": 9}), seed=0)
    for step, ref in ((7, corpus), (8, corpus), (9, always), (12, always)):
        a = ref.batch_fn(step, torch.Generator().manual_seed(step))
        b = later.batch_fn(step, torch.Generator().manual_seed(step))
        assert len(a) == len(b) and all(torch.equal(x, y) for p, q in zip(a, b) for x, y in zip(p, q))
    again = restart_spec(later.spec)
    assert again.plain_from == 0 and again.plain_rows == 4
    assert restart_spec(later.spec, {"plain_rows": 0}).plain_rows == 0
    assert restart_spec(later.spec, {"plain_weight": 0.05}).plain_weight == 0.05
    with pytest.raises(TypeError):
        restart_spec(later.spec, {"plain_rowz": 0})


def test_induction_rows_softmax_can_open_in_the_mixed_phase(corpus):
    """``induction_closed_vocab_mixed=False`` (pilot K3): the warm-up's induction rows keep their closed softmax, the
    mixed phase's are plain (tokens, mask) pairs -- the same rows, under the full softmax."""
    spec = corpus.spec
    assert spec.induction_closed_vocab
    opened = MultiTaskCorpus(zoo_tokenizer(), MixSpec(**{**spec.__dict__, "induction_closed_vocab_mixed": False}), seed=0)
    for step, closed_after in ((0, True), (7, False)):
        a = corpus.batch_fn(step, torch.Generator().manual_seed(step))
        b = opened.batch_fn(step, torch.Generator().manual_seed(step))
        assert len(a[-1]) == 3 and len(b[-1]) == (3 if closed_after else 2)
        assert all(torch.equal(x, y) for x, y in zip(a[-1][:2], b[-1][:2]))
