"""ARC Easy / Challenge (tutorial_lib.tasks.arc) through the loopback hub (tests/local_hub.py), offline.

The hub serves ``allenai/ai2_arc`` with small parquet files written here in the dataset's real layout and schema
(``ARC-Easy/test-00000-of-00001.parquet``; ``id``, ``question``, ``choices`` = struct of ``text`` and ``label``
lists, ``answerKey``), questions written for this test. Each case runs in a fresh interpreter, because
huggingface_hub reads ``HF_ENDPOINT`` / ``HF_HUB_OFFLINE`` once, at import.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from local_hub import ARC_REPO, LocalHub, arc_questions, write_arc

ROOT = Path(__file__).resolve().parents[1]
BASE_ENV = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT")}
N_EASY = 12


def _questions(config: str) -> list[dict]:
    return arc_questions(config, N_EASY)


@pytest.fixture(scope="module")
def arc_hub(tmp_path_factory):
    folder = write_arc(tmp_path_factory.mktemp("ai2_arc"), N_EASY)
    with LocalHub() as hub:
        hub.serve_dataset(ARC_REPO, folder)
        yield hub


CODE = """
import json
from tutorial_lib.tasks import make_task
from tutorial_lib.tasks.base import TaskNotBuildable
out = {}
try:
    for name in ("arc_easy", "arc_challenge"):
        t = make_task(name, "gpt2", n=8, seed=0)
        again = make_task(name, "gpt2", n=8, seed=0)
        other = make_task(name, "gpt2", n=8, seed=1)
        out[name] = dict(name=t.name, prompts=t.prompts, corrupt=t.corrupt_prompts, info=t.info, dropped=t.dropped,
                         same=t.prompts == again.prompts, other=[i["id"] for i in other.info],
                         answers=[int(a) for a in t.answers], wrong=t.wrong.tolist(), end=t.end_pos.tolist(),
                         shapes=[list(t.clean.shape), list(t.corrupt.shape)], metric=t.metric_name,
                         equal_len=bool((t.clean != 50256).sum(1).eq((t.corrupt != 50256).sum(1)).all()))
except TaskNotBuildable as err:
    out["skipped"] = str(err)
print("RESULT", json.dumps(out))
"""


def run(hf_home, **env):
    full = dict(BASE_ENV, HF_HOME=str(hf_home), PYTHONWARNINGS="ignore", **env)
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, env=full,
                         cwd=str(ROOT))
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads([line for line in res.stdout.splitlines() if line.startswith("RESULT ")][-1][7:])


def test_arc_from_the_hub_then_from_the_cache(arc_hub, tmp_path):
    got = run(tmp_path, HF_ENDPOINT=arc_hub.endpoint)
    assert "skipped" not in got, got
    asked = [p for _, p in arc_hub.requests if "ai2_arc" in p]
    assert any(p.endswith("/datasets/allenai/ai2_arc/resolve/main/ARC-Easy/test-00000-of-00001.parquet") for p in asked)
    for name, config in (("arc_easy", "ARC-Easy"), ("arc_challenge", "ARC-Challenge")):
        r = got[name]
        assert r["name"] == config and r["same"] and r["metric"].startswith("logit difference (correct letter")
        assert r["dropped"] == {"not exactly four choices": 1}  # the five-choice question
        assert r["other"] != [i["id"] for i in r["info"]]  # another seed, another subset
        assert r["shapes"][0] == r["shapes"][1] and r["equal_len"]
        questions = {q["id"]: q for q in _questions(config)}
        for b, info in enumerate(r["info"]):
            q = questions[info["id"]]
            k = q["choices"]["label"].index(q["answerKey"])
            assert info["letter"] == "ABCD"[k] and info["corrupt_letter"] != info["letter"]
            assert r["prompts"][b] == ("<|endoftext|> Question: " + " ".join(q["question"].split()) + "\n"
                                       + "\n".join(f"{L}. {o}" for L, o in zip("ABCD", q["choices"]["text"])) + "\nAnswer:")
            moved = r["corrupt"][b].split("\n")[1:5]
            assert moved[ord(info["corrupt_letter"]) - 65].endswith(q["choices"]["text"][k])  # the answer moved
            assert r["answers"][b] == [317, 347, 327, 360]["ABCD".index(info["letter"])]  # GPT-2's " A".." D"
            assert sorted(r["wrong"][b]) == sorted(set([317, 347, 327, 360]) - {r["answers"][b]})
    n_files = len(asked)
    offline = run(tmp_path, HF_HUB_OFFLINE="1")  # the same HF_HOME: from the cache, no hub at all
    assert offline["arc_easy"]["prompts"] == got["arc_easy"]["prompts"]
    assert len([p for _, p in arc_hub.requests if "ai2_arc" in p]) == n_files


def test_arc_offline_without_a_cache_says_why(tmp_path):
    got = run(tmp_path, HF_HUB_OFFLINE="1")
    assert "skipped" in got and "ARC-Easy comes from the Hugging Face hub" in got["skipped"]
    assert "offline mode" in got["skipped"]


def test_arc_on_a_hub_without_the_dataset_says_why(tmp_path):
    with LocalHub() as empty:
        got = run(tmp_path, HF_ENDPOINT=empty.endpoint)
    assert "could not be downloaded from the Hugging Face hub (allenai/ai2_arc" in got["skipped"]


def test_numeric_labels_are_read_as_letters(arc_hub, tmp_path):
    code = ("import json; from tutorial_lib.tasks.arc import arc_questions; qs, d = arc_questions('arc_easy'); "
            "print('RESULT', json.dumps([q for q in qs if q['id'].endswith('q1')]))")
    full = dict(BASE_ENV, HF_HOME=str(tmp_path), HF_ENDPOINT=arc_hub.endpoint, PYTHONWARNINGS="ignore")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=full, cwd=str(ROOT))
    q = json.loads(res.stdout.split("RESULT ")[-1])[0]
    assert q["answer"] == 2 and q["question"] == "Which item is number 1 in the list?"  # "3" -> C; spaces collapsed
