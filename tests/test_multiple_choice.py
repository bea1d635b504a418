"""Copy-colours multiple choice: options, moved-answer corruption, metric and accuracy, splits."""
import pytest
import torch

from tutorial_lib.tasks.multiple_choice import LETTERS, letter_ids, make_multiple_choice, sample_multiple_choice_ids
from tutorial_lib.tasks.tokenizers import get_tokenizer

torch.set_num_threads(1)


def _parse(prompt, bos):
    lines = prompt[len(bos):].split("\n")
    q, opts, last = lines[0], lines[1:5], lines[5]
    assert last == "Answer:" and [o[:2] for o in opts] == ["A.", "B.", "C.", "D."]
    return q, [o[3:] for o in opts]


@pytest.mark.parametrize("tok", ["gpt2", "zoo"])
def test_prompts_and_corruption(tok):
    t = get_tokenizer(tok)
    task = make_multiple_choice(tok, 120, seed=0)
    assert task.dropped == {} and (task.clean[:, 0] == t.bos_token_id).all()
    assert len({len(r) for r in task.clean.tolist()}) == 1
    lids = letter_ids(t).tolist()
    for i, d in enumerate(task.info):
        q, opts = _parse(task.prompts[i], t.bos_token)
        art = "An" if d["animal"][0] in "aeiou" else "A"
        assert q == f" Question: {art} {d['animal']} is {d['color']}. What color is {art.lower()} {d['animal']}?"
        assert len(set(opts)) == 4 and opts[LETTERS.index(d["letter"])] == d["color"]
        cq, copts = _parse(task.corrupt_prompts[i], t.bos_token)
        assert cq == q and sorted(copts) == sorted(opts)
        k2 = copts.index(d["color"])
        assert LETTERS[k2] == d["corrupt_letter"] != d["letter"]
        assert sum(a != b for a, b in zip(opts, copts)) == 2  # the answer swapped with one other option
        assert task.answers[i] == lids[LETTERS.index(d["letter"])]
        assert sorted(task.wrong[i].tolist() + [task.answers[i].item()]) == sorted(lids)
        assert t(task.prompts[i])["input_ids"] == task.clean[i].tolist()
        col = t(" " + d["color"], add_special_tokens=False)["input_ids"][0]
        assert task.clean[i, task.positions["COLOR"][i]] == col == task.clean[i, task.positions["ANSWER_OPT"][i]]


def test_letters_balanced():
    task = make_multiple_choice("zoo", 100, seed=1)
    letters = [d["letter"] for d in task.info]
    assert [letters.count(L) for L in LETTERS] == [25, 25, 25, 25]


def test_metric_and_accuracy_match_brute_force():
    task = make_multiple_choice("zoo", 30, seed=2)
    t = get_tokenizer("zoo")
    logits = torch.randn(30, task.clean.shape[1], len(t), generator=torch.Generator().manual_seed(0))
    md, acc = [], []
    for i, d in enumerate(task.info):
        row = logits[i, -1]
        scores = {L: row[t.convert_tokens_to_ids(" " + L)] for L in LETTERS}
        right = scores[d["letter"]]
        others = [v for L, v in scores.items() if L != d["letter"]]
        md.append(right - sum(others) / 3)
        acc.append(float(max(scores, key=lambda L: scores[L]) == d["letter"]))
    assert torch.allclose(task.metric(logits), torch.stack(md), atol=1e-6)
    assert torch.equal(task.accuracy(logits), torch.tensor(acc))


def test_determinism_split_sampler():
    a = make_multiple_choice("gpt2", 40, seed=3)
    assert a.prompts == make_multiple_choice("gpt2", 40, seed=3).prompts
    assert a.prompts != make_multiple_choice("gpt2", 40, seed=4).prompts
    key = lambda d: (d["animal"], d["color"])  # noqa: E731
    train = {key(d) for d in make_multiple_choice("zoo", 2000, seed=0, split="train").info}
    test = {key(d) for d in make_multiple_choice("zoo", 500, seed=0, split="test").info}
    assert not train & test
    b = sample_multiple_choice_ids(100, seed=5)
    task = make_multiple_choice("zoo", 100, seed=5, split="train")
    assert torch.equal(b.tokens, task.clean) and torch.equal(b.answers, task.answers)
