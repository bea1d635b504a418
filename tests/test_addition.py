"""Addition dataset: answers, re-paired corruption, drops, metric and accuracy against brute force."""
import pytest
import torch

from tutorial_lib.tasks.addition import make_addition, sample_addition_ids, sample_small_addition_ids
from tutorial_lib.tasks.tokenizers import get_tokenizer, split_of

torch.set_num_threads(1)


@pytest.mark.parametrize("tok", ["gpt2", "zoo"])
def test_prompts_answers_and_corruption(tok):
    t = get_tokenizer(tok)
    task = make_addition(tok, 200, seed=0)
    assert task.dropped == {}
    assert (task.clean[:, 0] == t.bos_token_id).all()
    pairs = {(d["a"], d["b"]) for d in task.info}
    one = lambda s: t(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    for i, d in enumerate(task.info):
        a, b, c, e = d["a"], d["b"], d["corrupt_a"], d["corrupt_b"]
        assert 10 <= a <= 99 and 10 <= b <= 99
        assert task.prompts[i] == f"{t.bos_token} Compute: {a} + {b} ="
        assert task.corrupt_prompts[i] == f"{t.bos_token} Compute: {c} + {e} ="
        assert (c, e) in pairs and c + e != a + b  # re-paired from another example, sum changed
        assert [task.answers[i].item()] == one(f" {a + b}")
        assert [task.wrong[i, 0].item()] == one(f" {c + e}")
        assert t(task.prompts[i])["input_ids"] == task.clean[i].tolist()
        assert task.clean[i, task.positions["A"][i]].item() == one(f" {a}")[0]
        assert task.clean[i, task.positions["B"][i]].item() == one(f" {b}")[0]
    assert len({len(r) for r in task.clean.tolist()}) == 1


def test_sums_that_are_not_one_token_are_dropped():
    # the zoo tokenizer has numbers up to 999 as single tokens; " 1000" and above split
    task = make_addition("zoo", 300, seed=0, low=450, high=549)
    assert all(d["a"] + d["b"] <= 999 for d in task.info)
    expected = sum(1 for a in range(450, 550) for b in range(450, 550)
                   if a + b > 999 and split_of(f"{min(a, b)}+{max(a, b)}") == "test")
    assert task.dropped == {"operand or sum not a single token": expected}
    assert expected > 0


def test_metric_and_accuracy_match_brute_force():
    task = make_addition("zoo", 25, seed=1)
    V = len(get_tokenizer("zoo"))
    logits = torch.randn(25, task.clean.shape[1], V, generator=torch.Generator().manual_seed(0))
    for i in range(0, 25, 3):  # make some examples right
        logits[i, task.end_pos[i], task.answers[i]] = 50.0
    md, acc = [], []
    for i in range(25):
        row = logits[i, task.end_pos[i]]
        md.append(row[task.answers[i]] - row[task.wrong[i, 0]])
        acc.append(float(int(row.argmax()) == int(task.answers[i])))
    assert torch.allclose(task.metric(logits), torch.stack(md))
    assert torch.equal(task.accuracy(logits), torch.tensor(acc))
    assert task.accuracy(logits).sum() == len(range(0, 25, 3))


def test_single_example_still_gets_a_different_sum():
    task = make_addition("zoo", 1, seed=3)
    assert task.info[0]["a"] + task.info[0]["b"] != task.info[0]["corrupt_a"] + task.info[0]["corrupt_b"]


def test_determinism_split_and_sampler():
    a = make_addition("gpt2", 40, seed=2)
    assert a.prompts == make_addition("gpt2", 40, seed=2).prompts
    assert a.prompts != make_addition("gpt2", 40, seed=3).prompts
    key = lambda d: (min(d["a"], d["b"]), max(d["a"], d["b"]))  # noqa: E731
    train = {key(d) for d in make_addition("zoo", 3000, seed=0, split="train").info}
    test = {key(d) for d in make_addition("zoo", 1000, seed=0, split="test").info}
    assert not train & test
    b = sample_addition_ids(200, seed=4)
    task = make_addition("zoo", 200, seed=4, split="train")
    assert torch.equal(b.tokens, task.clean) and torch.equal(b.answers, task.answers)
    with pytest.raises(ValueError, match="low"):
        make_addition("zoo", 5, low=50, high=20)


def test_small_operand_rows_are_correct_and_never_test_prompts():
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer

    tok = zoo_tokenizer()
    b = sample_small_addition_ids(300, seed=1)
    assert torch.equal(b.tokens, sample_small_addition_ids(300, seed=1).tokens)
    assert not torch.equal(b.tokens, sample_small_addition_ids(300, seed=2).tokens)
    test_prompts = set(make_addition("zoo", 2000, seed=0, split="test").prompts)
    firsts = []
    for row, end, ans in zip(b.tokens, b.end_pos, b.answers):
        words = tok.convert_ids_to_tokens(row[: int(end) + 1].tolist())
        text = tok.decode(row[: int(end) + 1])
        assert text not in test_prompts
        x, y = int(tok.decode(row[3])), int(tok.decode(row[5]))  # BOS Compute : x + y =
        assert min(x, y) <= 9 and 0 <= max(x, y) <= 99, words
        assert tok.decode(ans) == f" {x + y}"
        firsts.append(x <= 9)
    assert 0.3 < sum(firsts) / len(firsts) < 0.7  # the one-digit operand comes first about half the time
    with pytest.raises(ValueError, match="not single tokens"):
        sample_small_addition_ids(5, seed=0, tokenizer="gpt2", high=99_999)


class _Writes:
    """A stand-in model whose greedy next token at every position is ``next_of(tokens)``; ``wrong_second`` makes it
    write the second token of each answer wrong (the first digit right, the sum wrong)."""

    def __init__(self, task, vocab, wrong_second=False):
        self.task, self.vocab, self.wrong_second = task, vocab, wrong_second

    def __call__(self, tokens):
        B, P = tokens.shape
        logits = torch.zeros(B, P, self.vocab)
        for b in range(B):
            row = tokens[b].tolist()
            for i in range(len(self.task)):
                ids = self.task.info[i]["answer_ids"]
                end = int(self.task.end_pos[i])
                if row[: end + 1] == self.task.clean[i, : end + 1].tolist():
                    for k, t in enumerate(ids[: P - end]):
                        want = t if not (self.wrong_second and k == 1) else (t + 1) % self.vocab
                        logits[b, end + k, want] = 1.0
                    break
        return logits


def test_whole_answer_accuracy_reads_every_digit_on_a_digit_by_digit_tokenizer():
    import family_tokenizers as ft

    try:
        tok = ft.load("qwen3")
    except ft.Unavailable as err:
        pytest.skip(f"Qwen3's tokenizer is not available here: {err}")
    task = make_addition(tok, 6, seed=0)
    # digit by digit: ' 86 + 60 = ' -> '1', '4', '6'
    assert task.layout == "spaced" and all(len(i["answer_ids"]) == len(str(i["a"] + i["b"])) for i in task.info)
    vocab = len(tok)
    right, slip = _Writes(task, vocab), _Writes(task, vocab, wrong_second=True)
    assert task.whole_answer_accuracy(right, batch_size=4).tolist() == [1.0] * 6
    assert task.whole_answer_accuracy(slip, batch_size=4).tolist() == [0.0] * 6
    # the paper's reading (the first token) cannot tell them apart
    logits = slip(task.clean)
    assert task.accuracy(logits).tolist() == [1.0] * 6


@pytest.mark.parametrize("tok", ["gpt2", "zoo"])
def test_whole_answer_accuracy_is_accuracy_where_the_sum_is_one_token(tok):
    task = make_addition(tok, 8, seed=1)
    torch.manual_seed(0)
    logits = torch.randn(*task.clean.shape, task.clean.max().item() + 300)
    logits[torch.arange(8), task.end_pos, task.answers] += 100 * (torch.arange(8) % 2 == 0)
    model = lambda tokens: logits[:, : tokens.shape[1]]  # noqa: E731
    assert torch.equal(task.whole_answer_accuracy(model), task.accuracy(logits))
