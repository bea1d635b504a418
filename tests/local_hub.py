"""A Hugging Face-compatible hub on 127.0.0.1, for testing the online path without the internet.

It serves, under ``HF_ENDPOINT=http://127.0.0.1:PORT``, what ``HookedTransformer.from_pretrained`` asks
for (measured with huggingface_hub 2.4 / transformers 5.24 / TransformerLens 3.9):

* ``gpt2`` (also as ``openai-community/gpt2``): a GPT-2-small-shaped ``GPT2LMHeadModel`` checkpoint --
  GPT-2's own ``config.json`` values, random weights drawn from a seed at first use, safetensors -- with
  GPT-2's real tokenizer files built from ``data/gpt2/``;
* ``EleutherAI/pythia-70m``: a Pythia-70m-shaped ``GPTNeoXForCausalLM`` (float16 on disk) with one
  revision per training step (``step1000`` ...) and ``main``; each revision's weights come from its own
  seed, so distinct revisions really differ.

Endpoints: ``/api/models/{repo}[/revision/{rev}]``, ``/api/models/{repo}/tree/{rev}``,
``/{repo}/resolve/{rev}/{file}`` (HEAD and GET, with ``Range``); 404s carry ``X-Error-Code`` as the real
hub's do. ``mode="stall"`` accepts connections and never answers; ``mode="error"`` answers 500.

    python tests/local_hub.py --port 8765        # serve until Ctrl-C (repos built under $TUTORIAL_CACHE)

Nothing here is used by the course itself: tests and benchmarks only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parents[1]
GPT2_FILES = ROOT / "data" / "gpt2"
GPT2_REPO = "gpt2"
PYTHIA_REPO = "EleutherAI/pythia-70m"
ALIASES = {"openai-community/gpt2": GPT2_REPO}

# GPT-2 small's own config.json (the values the real hub serves; TransformerLens 3.9 reads n_ctx from it).
GPT2_CONFIG = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
    "summary_use_proj": True, "vocab_size": 50257,
}
# Pythia-70m's config.json values.
PYTHIA_CONFIG = {
    "architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu",
    "hidden_size": 512, "initializer_range": 0.02, "intermediate_size": 2048, "layer_norm_eps": 1e-05,
    "max_position_embeddings": 2048, "model_type": "gpt_neox", "num_attention_heads": 8,
    "num_hidden_layers": 6, "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": False,
    "torch_dtype": "float16", "use_cache": True, "use_parallel_residual": True, "vocab_size": 50304,
}
_REVISION = re.compile(r"^(main|step\d+)$")


def cache_root() -> Path:
    return Path(os.environ.get("TUTORIAL_CACHE") or Path.home() / ".cache" / "tutorial_lib") / "local-hub"


def _write_tokenizer(target: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer_dir

    src = gpt2_tokenizer_dir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copy(f, target / f.name)


def _build(target: Path, kind: str, seed: int) -> Path:
    """Write one repo revision to ``target`` (atomically: a half-written folder is never served)."""
    if (target / "model.safetensors").exists():
        return target
    import torch

    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.manual_seed(seed)
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = dict(GPT2_CONFIG)
        model = GPT2LMHeadModel(GPT2Config(**{k: v for k, v in config.items() if k != "architectures"}))
    else:
        from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

        config = dict(PYTHIA_CONFIG)
        model = GPTNeoXForCausalLM(GPTNeoXConfig(**{k: v for k, v in config.items() if k != "architectures"}))
        model = model.half()
    model.save_pretrained(str(tmp), safe_serialization=True)
    (tmp / "config.json").write_text(json.dumps(config, indent=2))  # the hub's own values, not transformers' rewrite
    for extra in ("generation_config.json",):
        (tmp / extra).unlink(missing_ok=True)
    _write_tokenizer(tmp)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target


class Repos:
    """Where each (repo, revision) lives on disk; built lazily, one at a time."""

    def __init__(self, root: Path | None = None, seed: int = 0):
        self.root = Path(root or cache_root())
        self.seed = seed
        self._lock = threading.Lock()
        self._by_commit: dict = {}

    def folder(self, repo: str, revision: str) -> Path | None:
        repo = ALIASES.get(repo, repo)
        if repo not in (GPT2_REPO, PYTHIA_REPO):
            return None
        revision = self._by_commit.get((repo, revision), revision)
        if not _REVISION.match(revision):
            return False  # unknown revision
        if repo == GPT2_REPO:
            if revision != "main":
                return False
            kind, seed, name = "gpt2", self.seed, f"gpt2-seed{self.seed}"
        else:
            step = int(revision[4:]) if revision.startswith("step") else 143000
            kind, seed, name = "pythia", self.seed * 1_000_003 + step, f"pythia-70m-seed{self.seed}-{revision}"
        with self._lock:
            return _build(self.root / name, kind, seed)

    def commit(self, repo: str, revision: str) -> str:
        """The commit id a revision resolves to (clients then ask for files by this id)."""
        repo = ALIASES.get(repo, repo)
        revision = self._by_commit.get((repo, revision), revision)
        sha = hashlib.sha1(f"{repo}@{revision}".encode()).hexdigest()
        self._by_commit[(repo, sha)] = revision
        return sha


def _etag(path: Path) -> str:
    st = path.stat()
    return hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tutorial-lib-local-hub"

    def log_message(self, fmt, *args):  # quiet; requests are recorded in server.requests
        pass

    # ---- helpers
    def _send(self, code: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
        self.send_response(code)
        headers = dict(headers or {})
        headers.setdefault("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _json(self, obj, head=False, extra=None):
        self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json", **(extra or {})}, head)

    def _not_found(self, code: str, head=False):
        body = json.dumps({"error": code}).encode()
        self._send(404, body, {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"}, head)

    # ---- routing
    def do_HEAD(self):
        self._route(head=True)

    def do_GET(self):
        self._route(head=False)

    def _route(self, head: bool):
        hub = self.server.hub
        hub.requests.append((self.command, self.path))
        if hub.mode == "stall":
            hub.stalled.wait(600)  # hold the connection open, answer nothing
            return
        if hub.mode == "error":
            return self._send(500, b'{"error":"internal"}', {"Content-Type": "application/json"}, head)
        path = unquote(urlparse(self.path).path)
        m = re.match(r"^/api/models/(.+?)/(tree|revision)/([^/]+)(?:/(.*))?$", path)
        if m:
            repo, what, rev, rest = m.groups()
            return self._tree(repo, rev, head) if what == "tree" else self._info(repo, rev, head)
        m = re.match(r"^/api/models/(.+)$", path)
        if m:
            return self._info(m.group(1), "main", head)
        m = re.match(r"^/(.+?)/resolve/([^/]+)/(.+)$", path)
        if m:
            return self._file(*m.groups(), head=head)
        return self._not_found("EndpointNotFound", head)

    def _resolve(self, repo, rev, head):
        folder = self.server.hub.repos.folder(repo, rev)
        if folder is None:
            self._not_found("RepoNotFound", head)
        elif folder is False:
            self._not_found("RevisionNotFound", head)
        return folder or None

    def _files(self, folder: Path):
        return sorted(f for f in folder.iterdir() if f.is_file())

    def _info(self, repo, rev, head):
        folder = self._resolve(repo, rev, head)
        if folder is None:
            return
        sha = self.server.hub.repos.commit(repo, rev)
        siblings = [{"rfilename": f.name, "size": f.stat().st_size, "blobId": _etag(f)[:40]} for f in self._files(folder)]
        self._json({"id": ALIASES.get(repo, repo), "modelId": ALIASES.get(repo, repo), "sha": sha, "private": False,
                    "disabled": False, "gated": False, "tags": ["transformers", "safetensors"], "downloads": 0,
                    "library_name": "transformers", "pipeline_tag": "text-generation", "siblings": siblings},
                   head, {"X-Repo-Commit": sha})

    def _tree(self, repo, rev, head):
        folder = self._resolve(repo, rev, head)
        if folder is None:
            return
        entries = [{"type": "file", "oid": _etag(f)[:40], "size": f.stat().st_size, "path": f.name}
                   for f in self._files(folder)]
        self._json(entries, head, {"X-Repo-Commit": self.server.hub.repos.commit(repo, rev)})

    def _file(self, repo, rev, name, head):
        folder = self._resolve(repo, rev, head)
        if folder is None:
            return
        f = folder / name
        sha = self.server.hub.repos.commit(repo, rev)
        if "/" in name or not f.is_file():
            return self._not_found("EntryNotFound", head)
        size = f.stat().st_size
        etag = _etag(f)
        headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if size > 10_000_000:
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(size)})
        start, end, code = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng and not head:
            m = re.match(r"bytes=(\d+)-(\d*)", rng)
            if m:
                start = int(m.group(1))
                end = int(m.group(2)) if m.group(2) else size - 1
                code = 206
                headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        with open(f, "rb") as fh:
            fh.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = fh.read(min(1 << 20, left))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)


class LocalHub:
    """A hub on 127.0.0.1 in a background thread. Use as a context manager, or ``start()`` / ``stop()``.

    >>> with LocalHub() as hub:                      # doctest: +SKIP
    ...     env = {"HF_ENDPOINT": hub.endpoint}
    """

    def __init__(self, mode: str = "ok", port: int = 0, root: Path | None = None, seed: int = 0):
        if mode not in ("ok", "stall", "error"):
            raise ValueError(f"mode must be 'ok', 'stall' or 'error', got {mode!r}")
        self.mode = mode
        self.repos = Repos(root, seed)
        self.requests: list = []
        self.stalled = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.hub = self
        self._thread = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self, *repos: tuple[str, str]) -> None:
        """Build repos ahead of the first request (e.g. ``("gpt2", "main")``)."""
        for repo, rev in repos:
            self.repos.folder(repo, rev)

    def start(self) -> "LocalHub":
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stalled.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--mode", default="ok", choices=["ok", "stall", "error"])
    p.add_argument("--port-file", help="write the chosen port here once serving")
    p.add_argument("--prepare", action="store_true", help="build the GPT-2 repo before serving")
    a = p.parse_args(argv)
    hub = LocalHub(mode=a.mode, port=a.port)
    if a.prepare:
        t0 = time.time()
        hub.prepare((GPT2_REPO, "main"))
        print(f"[local hub] GPT-2-shaped repo ready in {time.time() - t0:.0f} s under {hub.repos.root}", flush=True)
    hub.start()
    if a.port_file:
        Path(a.port_file).write_text(str(hub.port))
    print(f"[local hub] serving on {hub.endpoint}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
