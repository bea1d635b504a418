"""The online path, end to end, against a Hugging Face-compatible hub on 127.0.0.1 (tests/local_hub.py):
TransformerLens' real ``from_pretrained``, the real cache, HF_ENDPOINT and a proxy, a hub that stalls and
one that fails. Each case runs in a fresh Python process, because huggingface_hub reads HF_ENDPOINT and
HF_HUB_OFFLINE once, at import."""
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from local_hub import GPT2_REPO, PYTHIA_REPO, LocalHub

ROOT = Path(__file__).resolve().parents[1]
BASE_ENV = {k: v for k, v in os.environ.items()
            if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TUTORIAL_MODEL", "HF_ENDPOINT", "HTTP_PROXY",
                         "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy")}


@pytest.fixture(scope="module")
def hub():
    with LocalHub() as h:
        h.prepare((GPT2_REPO, "main"))
        yield h


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hf-home"))


def py(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with BASE_ENV + ``env``; returns the finished process."""
    full = dict(BASE_ENV, PYTHONWARNINGS="ignore", **{k: str(v) for k, v in env.items()})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=full,
                          cwd=str(ROOT))


def ok(res):
    assert res.returncode == 0, f"exit {res.returncode}\n--- stdout\n{res.stdout[-3000:]}\n--- stderr\n{res.stderr[-3000:]}"
    return res.stdout


TIMED = """
import time, json
t = time.time()
{body}
print("RESULT", json.dumps(dict(seconds=time.time() - t, **result)))
"""


def result_of(stdout: str) -> dict:
    line = [l for l in stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_auto_loads_gpt2_from_the_hub_and_says_so(hub, hf_home):
    body = """
from tutorial_lib import load_model
m = load_model("auto")
result = dict(n_layers=m.cfg.n_layers, d_model=m.cfg.d_model, arch=m.cfg.original_architecture,
              tokens=m.to_str_tokens(" 1732"))
"""
    out = ok(py(TIMED.format(body=body), HF_ENDPOINT=hub.endpoint, HF_HOME=hf_home))
    r = result_of(out)
    assert (r["n_layers"], r["d_model"], r["arch"]) == (12, 768, "GPT2LMHeadModel")
    assert r["tokens"] == ["<|endoftext|>", " 17", "32"]
    assert "Loaded GPT-2 small" in out
    assert "MB, first time only" in out and str(Path(hf_home) / "hub") in out, out  # what is downloaded, and where
    assert any(p.startswith("/gpt2/resolve/") and p.endswith("model.safetensors") for _, p in hub.requests)


def test_gpt2_loads_after_a_gpt2_tokenizer_task_was_built(hub, hf_home):
    """Building a task on GPT-2's tokenizer must not switch the process to offline mode."""
    body = """
import os
from tutorial_lib.tasks.greater_than import make_greater_than
from tutorial_lib.tasks.tokenizers import gpt2_tokenizer
before = dict(os.environ)
task = make_greater_than(gpt2_tokenizer(), n=8, seed=0)
changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))
from tutorial_lib import load_model
m = load_model("gpt2")
result = dict(changed=changed, n_layers=m.cfg.n_layers, task=len(task))
"""
    r = result_of(ok(py(TIMED.format(body=body), HF_ENDPOINT=hub.endpoint, HF_HOME=hf_home)))
    assert r["changed"] == [], f"library code changed os.environ: {r['changed']}"
    assert r["n_layers"] == 12 and r["task"] == 8


def test_second_load_works_from_the_cache_with_the_hub_gone(hub, hf_home):
    ok(py("from tutorial_lib import load_model; load_model('gpt2')", HF_ENDPOINT=hub.endpoint, HF_HOME=hf_home))
    with LocalHub() as gone:
        dead = gone.endpoint  # a port that answers nothing once this hub is stopped
    body = """
from tutorial_lib import load_model
m = load_model("auto")
g = load_model("gpt2")
result = dict(auto=m.cfg.n_layers, gpt2=g.cfg.n_layers)
"""
    res = py(TIMED.format(body=body), HF_ENDPOINT=dead, HF_HOME=hf_home)
    r = result_of(ok(res))
    assert r["auto"] == 12 and r["gpt2"] == 12
    assert "from the local cache" in res.stdout
    assert r["seconds"] < 90, r


@pytest.mark.parametrize("mode", ["stall", "error"])
def test_a_stalling_or_failing_hub_falls_back_to_the_zoo_within_seconds(mode, tmp_path):
    with LocalHub(mode=mode) as bad:
        # the clock starts after the heavy libraries are imported: their import (5-9 s on a busy 2-core machine)
        # is not the fallback's time, which is the probe's 3 s plus loading the zoo model
        body = """
import torch, transformer_lens
t = time.time()
from tutorial_lib import load_model
m = load_model("auto")
t2 = time.time()
try:
    load_model("gpt2")
    err = None
except ConnectionError as e:
    err = str(e)
result = dict(auto_layers=m.cfg.n_layers, auto_seconds=t2 - t, gpt2_seconds=time.time() - t2, error=err)
"""
        res = py(TIMED.format(body=body), timeout=120, HF_ENDPOINT=bad.endpoint, HF_HOME=str(tmp_path))
        r = result_of(ok(res))
        assert bad.requests, "the probe never reached the hub"
    assert r["auto_layers"] != 12 and "Loaded the offline zoo model" in res.stdout
    assert r["auto_seconds"] < 12, r  # the probe's 3 s, plus loading the zoo model
    assert r["gpt2_seconds"] < 6, r
    why = "did not answer within" if mode == "stall" else "answered HTTP 500"
    assert why in r["error"] and bad.endpoint in r["error"] and "zoo" in r["error"], r["error"]


def test_reachability_goes_through_a_proxy(hub, tmp_path):
    """HTTP_PROXY is honoured: the probe reaches the hub through the proxy (which counts what it forwards)."""
    seen = []

    class Proxy(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append(self.path)
            with urllib.request.urlopen(self.path, timeout=10) as up:
                body = up.read()
                self.send_response(up.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = "from tutorial_lib.zoo.loading import hub_status; print('STATUS', hub_status())"
        proxy = f"http://127.0.0.1:{server.server_address[1]}"
        out = ok(py(code, timeout=60, HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path), HTTP_PROXY=proxy, NO_PROXY=""))
        assert "STATUS (True" in out, out
        assert any(p.startswith(hub.endpoint + "/api/models/gpt2") for p in seen), seen
        # and a proxy that is down makes the hub unreachable, fast, with the reason
        out = ok(py(code, timeout=60, HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path), HTTP_PROXY="http://127.0.0.1:9",
                    NO_PROXY=""))
        assert "STATUS (False" in out and "cannot be reached" in out, out
    finally:
        server.shutdown()


def test_pythia_checkpoints_load_by_index_and_differ(hub, hf_home):
    """Notebook 03's hub path: two training checkpoints by ``checkpoint_index``; distinct revisions must
    give distinct weights (some public step branches serve the final weights)."""
    body = """
from transformer_lens.loading_from_pretrained import get_checkpoint_labels
from tutorial_lib import load_model
labels, _ = get_checkpoint_labels("EleutherAI/pythia-70m")
a = load_model("pythia-70m", checkpoint_index=10)
b = load_model("pythia-70m", checkpoint_index=40)
result = dict(steps=[a.cfg.checkpoint_value, b.cfg.checkpoint_value], want=[labels[10], labels[40]],
              differ=float((a.W_Q - b.W_Q).abs().max()), layers=a.cfg.n_layers, d_vocab=a.cfg.d_vocab)
"""
    r = result_of(ok(py(TIMED.format(body=body), HF_ENDPOINT=hub.endpoint, HF_HOME=hf_home)))
    assert r["steps"] == r["want"]
    assert r["differ"] > 1e-3, "two checkpoints loaded the same weights"
    assert (r["layers"], r["d_vocab"]) == (6, 50304)
    revs = {p.split("/resolve/")[1].split("/")[0] for _, p in hub.requests if p.startswith(f"/{PYTHIA_REPO}/resolve/")}
    assert len(revs) >= 2, revs  # asked for by revision (or its commit), once each


def test_bad_checkpoint_index_is_named():
    code = "from tutorial_lib.zoo.loading import _checkpoint_step\n_checkpoint_step('EleutherAI/pythia-70m', {'checkpoint_index': 999})"
    res = py(code, timeout=60)
    assert res.returncode != 0 and "checkpoint_index=999 is out of range" in res.stderr and "154 checkpoints" in res.stderr
