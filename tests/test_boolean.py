"""Boolean logic dataset: evaluation, literal-flip corruption, padding, metric, splits."""
import re

import pytest
import torch

from tutorial_lib.tasks.boolean import evaluate, make_boolean, sample_boolean_ids
from tutorial_lib.tasks.tokenizers import get_tokenizer

torch.set_num_threads(1)


def _python_value(expr):
    return eval(expr.replace("true", "True").replace("false", "False"))


def _expr(prompt, bos):
    m = re.fullmatch(re.escape(bos) + r" Evaluate: (.*) =", prompt)
    assert m, prompt
    return m.group(1)


def test_evaluate_matches_python():
    task = make_boolean("zoo", 300, seed=0)
    for d in task.info:
        assert evaluate(d["expr"]) == _python_value(d["expr"]) == d["value"]
    assert evaluate("not (true and false) or false") is True
    with pytest.raises(ValueError, match="boolean"):
        evaluate("true xor false")


@pytest.mark.parametrize("tok", ["gpt2", "zoo"])
def test_prompts_answers_corruption_padding(tok):
    t = get_tokenizer(tok)
    task = make_boolean(tok, 150, seed=1)
    assert (task.clean[:, 0] == t.bos_token_id).all()
    true_id, false_id = (t(w, add_special_tokens=False)["input_ids"][0] for w in (" true", " false"))
    for i in range(len(task)):
        expr, cexpr = _expr(task.prompts[i], t.bos_token), _expr(task.corrupt_prompts[i], t.bos_token)
        value = _python_value(expr)
        assert _python_value(cexpr) != value  # the flip changes the answer
        w, cw = expr.replace("(", " ").replace(")", " ").split(), cexpr.replace("(", " ").replace(")", " ").split()
        assert len(w) == len(cw) and sum(a != b for a, b in zip(w, cw)) == 1
        assert task.answers[i] == (true_id if value else false_id)
        assert task.wrong[i, 0] == (false_id if value else true_id)
        n_ops = len(re.findall(r"\b(and|or)\b", expr))
        assert 2 <= n_ops <= 6
        ids = t(task.prompts[i])["input_ids"]
        e = task.end_pos[i].item()
        assert task.clean[i, : e + 1].tolist() == ids and e == len(ids) - 1
        assert (task.clean[i, e + 1:] == t.pad_token_id).all()
        assert (task.corrupt[i, e + 1:] == t.pad_token_id).all()
        assert len(t(task.corrupt_prompts[i])["input_ids"]) == len(ids)
        assert (task.clean[i] != task.corrupt[i]).sum() == 1


def test_max_ops_and_options():
    task = make_boolean("zoo", 200, seed=2, min_ops=1, max_ops=2, p_not=0.0, p_paren=0.0)
    for d in task.info:
        assert 1 <= len(re.findall(r"\b(and|or)\b", d["expr"])) <= 2
        assert "not" not in d["expr"] and "(" not in d["expr"]
    with pytest.raises(ValueError, match="max_ops"):
        make_boolean("zoo", 5, min_ops=3, max_ops=2)
    with pytest.raises(ValueError, match="p_not"):
        make_boolean("zoo", 5, p_not=1.5)


def test_metric_matches_brute_force():
    task = make_boolean("zoo", 40, seed=3)
    logits = torch.randn(40, task.clean.shape[1], len(get_tokenizer("zoo")), generator=torch.Generator().manual_seed(1))
    t = get_tokenizer("zoo")
    ref = []
    for i, d in enumerate(task.info):
        row = logits[i, task.end_pos[i]]  # read at each example's own end position, not the last column
        good, bad = (" true", " false") if d["value"] else (" false", " true")
        ref.append(row[t.convert_tokens_to_ids(good)] - row[t.convert_tokens_to_ids(bad)])
    assert torch.allclose(task.metric(logits), torch.stack(ref))


def test_split_disjoint_and_no_test_subexpressions_in_train():
    train = make_boolean("zoo", 3000, seed=0, split="train", max_ops=4)
    test = make_boolean("zoo", 1500, seed=0, split="test", max_ops=4)
    train_exprs = {d["expr"] for d in train.info}
    test_exprs = {d["expr"] for d in test.info}
    assert not train_exprs & test_exprs
    multi = [e for e in test_exprs if len(re.findall(r"\b(and|or)\b", e)) >= 2]
    for e in train_exprs:  # no held-out expression appears parenthesised inside a training one
        assert not any(f"({m})" in e for m in multi)
    assert train.dropped.get("train expression containing a test sub-expression", 0) > 0


def test_determinism_and_sampler():
    a = make_boolean("gpt2", 30, seed=7)
    assert a.prompts == make_boolean("gpt2", 30, seed=7).prompts
    assert a.prompts != make_boolean("gpt2", 30, seed=8).prompts
    b = sample_boolean_ids(300, seed=1, max_ops=3)
    t = get_tokenizer("zoo")
    true_id = t.convert_tokens_to_ids(" true")
    for i in range(300):
        text = t.decode(b.tokens[i, 1: b.end_pos[i] + 1])
        expr = re.fullmatch(r" Evaluate: (.*) =", text).group(1)
        assert (b.answers[i] == true_id) == _python_value(expr)
