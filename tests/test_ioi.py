"""IOI dataset: templates, ABC corruption, positions, metric against brute force, splits."""
import pytest
import torch

from tutorial_lib.tasks.ioi import TEMPLATES, make_ioi, sample_ioi_ids
from tutorial_lib.tasks.tokenizers import get_tokenizer
from tutorial_lib.tasks.vocab import NAMES

torch.set_num_threads(1)


@pytest.mark.parametrize("tok", ["gpt2", "zoo"])
def test_prompts_corruption_and_positions(tok):
    t = get_tokenizer(tok)
    task = make_ioi(tok, 200, seed=0)
    assert task.clean.shape == task.corrupt.shape == (200, 15)  # all templates: 14 tokens + BOS
    assert (task.clean[:, 0] == t.bos_token_id).all()
    assert task.dropped == {}
    name_id = lambda n: t(" " + n, add_special_tokens=False)["input_ids"][0]  # noqa: E731
    for i, d in enumerate(task.info):
        io, s, (a, b, c) = d["IO"], d["S"], d["corrupt_names"]
        assert io != s and len({a, b, c, io, s}) == 5
        first, second = (io, s) if d["order"] == "ABBA" else (s, io)
        text = d["template"].format(A=first, B=second, C=s, PLACE="{PLACE}", OBJECT="{OBJECT}")
        # the clean prompt is the template with the names filled in (place/object as sampled)
        prompt = task.prompts[i][len(t.bos_token):]
        head, tail = text.split("{PLACE}")
        assert prompt.startswith(head)
        # ABC: the same text with the three name slots replaced
        corr = task.corrupt_prompts[i][len(t.bos_token):]
        assert corr == prompt.replace(f" {first} and {second}", f" {a} and {b}", 1).replace(f", {s} ", f", {c} ")
        assert t(task.prompts[i])["input_ids"] == task.clean[i].tolist()
        pos = {k: v[i].item() for k, v in task.positions.items()}
        assert task.clean[i, pos["IO"]] == name_id(io) == task.answers[i]
        assert task.clean[i, pos["S1"]] == task.clean[i, pos["S2"]] == name_id(s) == task.wrong[i, 0]
        assert pos["END"] == 14 and pos["S2"] == 10
        # corruption changes exactly the three name positions
        changed = (task.clean[i] != task.corrupt[i]).nonzero()[:, 0].tolist()
        assert changed == sorted([pos["IO"], pos["S1"], pos["S2"]])


def test_all_templates_same_length():
    for tok in ("gpt2", "zoo"):
        lengths = {make_ioi(tok, 10, seed=0, templates=[tpl]).clean.shape[1] for tpl in TEMPLATES}
        assert lengths == {15}


def test_orders():
    mixed = make_ioi("zoo", 100, seed=1)
    orders = [d["order"] for d in mixed.info]
    assert orders.count("ABBA") == orders.count("BABA") == 50
    abba = make_ioi("zoo", 20, seed=1, order="ABBA")
    assert (abba.positions["IO"] < abba.positions["S1"]).all()
    baba = make_ioi("zoo", 20, seed=1, order="BABA")
    assert (baba.positions["IO"] > baba.positions["S1"]).all()
    with pytest.raises(ValueError, match="order"):
        make_ioi("zoo", 5, order="AB")
    with pytest.raises(ValueError, match="templates"):
        make_ioi("zoo", 5, templates=[" When {A} went"])


def test_metric_matches_brute_force():
    task = make_ioi("zoo", 30, seed=2)
    logits = torch.randn(30, task.clean.shape[1], len(get_tokenizer("zoo")), generator=torch.Generator().manual_seed(0))
    t = get_tokenizer("zoo")
    ref = []
    for i, d in enumerate(task.info):
        row = logits[i, task.end_pos[i]]
        ref.append(row[t.convert_tokens_to_ids(" " + d["IO"])] - row[t.convert_tokens_to_ids(" " + d["S"])])
    assert torch.allclose(task.metric(logits), torch.stack(ref))
    assert torch.equal(task.accuracy(logits), (torch.stack(ref) > 0).float())


def test_determinism_and_split():
    a, b = make_ioi("gpt2", 50, seed=4), make_ioi("gpt2", 50, seed=4)
    assert a.prompts == b.prompts and torch.equal(a.corrupt, b.corrupt)
    assert make_ioi("gpt2", 50, seed=5).prompts != a.prompts
    pair = lambda d: frozenset((d["IO"], d["S"]))  # noqa: E731
    train = {pair(d) for d in make_ioi("zoo", 3000, seed=0, split="train").info}
    test = {pair(d) for d in make_ioi("zoo", 1000, seed=0, split="test").info}
    assert train and test and not train & test
    assert {n for p in train for n in p} <= set(NAMES)


def test_training_sampler():
    b = sample_ioi_ids(300, seed=3)
    task = make_ioi("zoo", 300, seed=3, split="train")
    assert torch.equal(b.tokens, task.clean) and torch.equal(b.answers, task.answers)
    assert torch.equal(b.end_pos, task.end_pos)


def test_unknown_words_are_an_error_and_missing_names_are_dropped():
    from tutorial_lib.tasks import word_tokenizer as zt
    from tutorial_lib.tasks.vocab import WORDS

    tok = zt.wrap(zt.build_tokenizer([w for w in WORDS if w not in ("met", "Mary", "John")]))
    task = make_ioi(tok, 50, seed=0, templates=[TEMPLATES[0]])
    assert task.dropped == {"name not a single token": 2}
    assert not {"Mary", "John"} & {n for d in task.info for n in (d["IO"], d["S"], *d["corrupt_names"])}
    with pytest.raises(ValueError, match="met"):
        make_ioi(tok, 50, seed=0, templates=[TEMPLATES[3]])
