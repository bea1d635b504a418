"""Greater-than dataset: years, corruption, metrics against brute force, variants, splits."""
import pytest
import torch

from tutorial_lib.tasks.greater_than import (VARIANTS, make_greater_than, sample_greater_than_ids,
                                             valid_years)
from tutorial_lib.tasks.tokenizers import get_tokenizer, gpt2_tokenizer, zoo_tokenizer

torch.set_num_threads(1)
TOKS = ["gpt2", "zoo"]


def _reference_valid_years(tok, centuries):
    """The paper's rule, written out plainly."""
    out = []
    for c in centuries:
        ok = []
        for y in range(100 * c, 100 * c + 100):
            ids = tok(f" {y}", add_special_tokens=False)["input_ids"]
            want = [tok.convert_tokens_to_ids(tok.tokenize(f" {c}")[0]) if len(tok.tokenize(f" {c}")) == 1 else -1,
                    tok.convert_tokens_to_ids(tok.tokenize(f"{y % 100:02d}")[0]) if len(tok.tokenize(f"{y % 100:02d}")) == 1 else -2]
            if ids == want:
                ok.append(y)
        out += ok[1:-1]
    return out


def test_gpt2_has_768_valid_years():
    years = valid_years("gpt2")
    assert len(years) == 768
    assert years == _reference_valid_years(gpt2_tokenizer(), range(10, 19))
    # single-token years and years GPT-2 splits as " 110" + "2" are out
    assert 1100 not in years and 1102 not in years and 1732 in years


def test_zoo_valid_years():
    years = valid_years("zoo")
    assert years == _reference_valid_years(zoo_tokenizer(), range(10, 19))
    assert len(years) == 9 * 98  # every year splits cleanly; first (XX00) and last (XX99) dropped


class _ThreePieces:
    """GPT-2's tokenizer, except that " 1732" comes out in three pieces."""

    def __init__(self, tok):
        self.tok = tok
        for a in ("bos_token", "bos_token_id", "unk_token", "unk_token_id", "pad_token_id", "convert_tokens_to_ids"):
            setattr(self, a, getattr(tok, a))

    def __call__(self, text, add_special_tokens=False):
        if text == " 1732":
            return {"input_ids": [1596, 18, 17]}  # " 17", "3", "2"
        return self.tok(text, add_special_tokens=add_special_tokens)


def test_a_year_in_three_pieces_is_dropped():
    tok = _ThreePieces(gpt2_tokenizer())
    years = valid_years(tok, [17])
    assert 1732 not in years and 1733 in years
    task = make_greater_than(tok, 2000, seed=0, centuries=[17])
    assert 1732 not in {d["year"] for d in task.info}
    assert task.dropped["year not [' XX', 'YY']"] == 1 + valid_years_gap(gpt2_tokenizer(), 17)


def valid_years_gap(tok, c):
    return sum(tok(f" {y}")["input_ids"] != [tok(f" {c}")["input_ids"][0], tok(f"{y % 100:02d}")["input_ids"][0]]
               or len(tok(f"{y % 100:02d}")["input_ids"]) != 1 for y in range(100 * c, 100 * c + 100))


@pytest.mark.parametrize("tok", TOKS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_prompts_tokens_and_corruption(tok, variant):
    t = get_tokenizer(tok)
    task = make_greater_than(tok, 150, seed=3, variant=variant)
    assert (task.clean[:, 0] == t.bos_token_id).all()
    for i in range(len(task)):
        assert t(task.prompts[i])["input_ids"] == task.clean[i].tolist()
        assert t(task.corrupt_prompts[i])["input_ids"] == task.corrupt[i].tolist()
        year = task.info[i]["year"]
        xx, yy = divmod(year, 100)
        assert task.yy[i] == yy
        # the 01 corruption keeps the noun and century and replaces YY by 01
        if variant == "sequence":
            expect = f" {year - 2}, {year - 1}, {year}, {xx}"
            expect_c = f" {xx}01, {xx}01, {xx}01, {xx}"
        else:
            expect = {"lasted": f" The {task.info[i]['noun']} lasted from the year {year} to the year {xx}",
                      "started": f" The {task.info[i]['noun']} started in the year {year} and ended in the year {xx}",
                      "reversed": f" The {task.info[i]['noun']} ended in the year {year} and started in the year {xx}",
                      }[variant]
            expect_c = expect.replace(f" {year} ", f" {xx}01 ")
        assert task.prompts[i] == t.bos_token + expect
        assert task.corrupt_prompts[i] == t.bos_token + expect_c
        pos = {k: v[i].item() for k, v in task.positions.items()}
        assert task.clean[i, pos["XX"]] == t(f" {xx}")["input_ids"][0] == task.clean[i, pos["END"]]
        assert task.clean[i, pos["YY"]] == t(f"{yy:02d}")["input_ids"][0]
        assert task.corrupt[i, pos["YY"]] == t("01")["input_ids"][0]
        assert pos["END"] == task.end_pos[i] == task.clean.shape[1] - 1
    diff = (task.clean != task.corrupt).sum(1)
    assert (diff == (3 if variant == "sequence" else 1)).all()
    assert task.direction == ("<" if variant == "reversed" else ">")


def test_gpt2_drops_the_tenth_century_for_its_01_corruption():
    task = make_greater_than("gpt2", 500, seed=0)
    assert {d["year"] // 100 for d in task.info} == set(range(11, 19))
    n10 = sum(1 for y in valid_years("gpt2") if y // 100 == 10)
    assert task.dropped["century whose ' XX01' is not [' XX', '01']"] == n10 > 0
    task = make_greater_than("gpt2", 300, seed=0, centuries=range(11, 18))
    assert {d["year"] // 100 for d in task.info} == set(range(11, 18))


def test_balanced_yy_and_determinism():
    task = make_greater_than("zoo", 97 * 3, seed=5)
    counts = torch.bincount(task.yy, minlength=100)
    assert (counts[2:99] == 3).all() and counts[:2].sum() == 0 and counts[99] == 0
    again = make_greater_than("zoo", 97 * 3, seed=5)
    assert torch.equal(task.clean, again.clean) and task.prompts == again.prompts
    other = make_greater_than("zoo", 97 * 3, seed=6)
    assert not torch.equal(task.clean, other.clean)


def test_train_and_test_are_disjoint():
    for variant in ("lasted", "sequence"):
        tr = make_greater_than("zoo", 3000, seed=0, split="train", variant=variant)
        te = make_greater_than("zoo", 1000, seed=0, split="test", variant=variant)
        key = (lambda d: d["year"]) if variant == "sequence" else (lambda d: (d["noun"], d["year"]))
        assert not {key(d) for d in tr.info} & {key(d) for d in te.info}


def _brute_force(task, logits):
    pd, sharp, acc = [], [], []
    for b in range(len(task)):
        lp = logits[b, task.end_pos[b]]
        p = torch.exp(lp - torch.logsumexp(lp, 0))
        py = [p[task.year_ids[y]].item() for y in range(100)]
        yy = task.yy[b].item()
        if task.direction == ">":
            good = sum(py[y] for y in range(100) if y > yy)
            bad = sum(py[y] for y in range(100) if y <= yy)
            sharp.append(py[yy + 1] - py[yy - 1])
            acc.append(float(max(range(100), key=lambda y: py[y]) > yy))
        else:
            good = sum(py[y] for y in range(100) if y < yy)
            bad = sum(py[y] for y in range(100) if y >= yy)
            sharp.append(py[yy - 1] - py[yy + 1])
            acc.append(float(max(range(100), key=lambda y: py[y]) < yy))
        pd.append(good - bad)
    return torch.tensor(pd), torch.tensor(sharp), torch.tensor(acc)


@pytest.mark.parametrize("variant", ["lasted", "reversed"])
def test_metrics_match_brute_force(variant):
    task = make_greater_than("zoo", 40, seed=1, variant=variant)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(len(task), task.clean.shape[1], len(zoo_tokenizer()), generator=g) * 3
    # make the year tokens matter: boost some of them
    logits[:, :, task.year_ids] += torch.randn(len(task), task.clean.shape[1], 100, generator=g) * 4
    pd, sharp, acc = _brute_force(task, logits)
    assert torch.allclose(task.metric(logits), pd, atol=1e-5)
    assert torch.allclose(task.prob_diff(logits), pd, atol=1e-5)
    assert torch.allclose(task.cutoff_sharpness(logits), sharp, atol=1e-6)
    assert torch.equal(task.accuracy(logits), acc)
    sub = task.subset([3, 1])
    assert torch.allclose(sub.metric(logits[[3, 1]]), pd[[3, 1]], atol=1e-5)


def test_training_sampler_matches_task():
    b = sample_greater_than_ids(500, seed=2, window=10)
    task = make_greater_than("zoo", 500, seed=2, split="train")
    assert torch.equal(b.tokens, task.clean) and torch.equal(b.end_pos, task.end_pos)
    ans = (b.answers[:, None] == task.year_ids[None]).float().argmax(1)
    assert ((ans > task.yy) & (ans <= (task.yy + 10).clamp(max=99))).all()
    seq = sample_greater_than_ids(200, seed=2, variant="sequence", tokenizer="gpt2")
    seq_task = make_greater_than("gpt2", 200, seed=2, split="train", variant="sequence")
    assert torch.equal(seq.answers, seq_task.year_ids[seq_task.yy + 1])


def test_bad_options_raise():
    with pytest.raises(ValueError, match="variant"):
        make_greater_than("zoo", 5, variant="lasting")
    with pytest.raises(ValueError, match="centuries"):
        make_greater_than("zoo", 5, centuries=[3])
    with pytest.raises(ValueError, match="split"):
        make_greater_than("zoo", 5, split="dev")
    with pytest.raises(ValueError, match="window"):
        sample_greater_than_ids(5, window=0)


def test_unknown_template_word_is_an_error_not_unk_tokens():
    from tutorial_lib.tasks import word_tokenizer as zt
    from tutorial_lib.tasks.vocab import WORDS

    tok = zt.wrap(zt.build_tokenizer([w for w in WORDS if w != "lasted"]))
    with pytest.raises(ValueError, match="lasted"):
        make_greater_than(tok, 10)
    assert len(make_greater_than(tok, 10, variant="started")) == 10


def test_rows_starting_at_01_are_the_corrupted_prompts_form_and_held_out_safe():
    from tutorial_lib.tasks.greater_than import sample_greater_than_01_ids
    from tutorial_lib.tasks.tokenizers import split_of

    tok = zoo_tokenizer()
    b = sample_greater_than_01_ids(300, seed=0, window=10)
    test = make_greater_than(tok, 50, seed=0)
    assert b.tokens.shape[1] == test.corrupt.shape[1] and (b.end_pos == test.end_pos[0]).all()
    texts = [tok.decode(r) for r in b.tokens]
    years = sorted({int(t.split("the year ")[1].split()[0]) for t in texts})
    assert all(y % 100 == 1 for y in years) and len(years) > 3
    answers = sorted({int(tok.decode([a])) for a in b.answers})
    assert answers[0] >= 2 and answers[-1] <= 11 and len(answers) == 10
    for t in texts[:50]:  # only training-split pairs, and never a held-out clean prompt (those start at 02..98)
        noun, year = t.split("The ")[1].split(" lasted")[0], int(t.split("the year ")[1].split()[0])
        assert split_of(f"{noun}|{year}") == "train"
    assert not set(texts) & {p for p in test.prompts}
    assert sorted(texts[:5]) != sorted(tok.decode(r) for r in sample_greater_than_01_ids(5, seed=1).tokens)
