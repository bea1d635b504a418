"""A Hugging Face-compatible hub on 127.0.0.1, for testing the online path without the internet.

It serves, under ``HF_ENDPOINT=http://127.0.0.1:PORT``, what ``HookedTransformer.from_pretrained`` asks
for (measured with huggingface_hub 2.4 / transformers 5.24 / TransformerLens 3.9):

* ``gpt2`` (also as ``openai-community/gpt2``): a GPT-2-small-shaped ``GPT2LMHeadModel`` checkpoint --
  GPT-2's own ``config.json`` values, random weights drawn from a seed at first use, safetensors -- with
  GPT-2's real tokenizer files built from ``data/gpt2/``;
* ``EleutherAI/pythia-70m``: a Pythia-70m-shaped ``GPTNeoXForCausalLM`` (float16 on disk) with one
  revision per training step (``step1000`` ...) and ``main``; each revision's weights come from its own
  seed, so distinct revisions really differ;
* ``Qwen/Qwen3-0.6B``, ``allenai/OLMo-2-0425-1B``, ``allenai/OLMoE-1B-7B-0924``: *tiny* random checkpoints of
  each family (2 layers, d_model 64; ``transformers``' own ``Qwen3Config`` / ``Olmo2Config`` / ``OlmoeConfig``,
  ``save_pretrained``), under the official names, with GPT-2's tokenizer as a stand-in (their vocabulary is
  50,304 so it covers GPT-2's 50,257 ids). OLMo-2 also has its training branches :data:`OLMO2_REVISIONS`
  (``stage1-step1000-tokens5B`` ...), each from its own seed. ``LocalHub(qwen3_tokenizer=folder)`` serves Qwen3
  with its *real* tokenizer instead (the ``tokenizer.json`` in ``folder``, e.g. from tests/family_tokenizers.py)
  and Qwen3's real vocabulary size, 151,936; ``LocalHub(tokenizers={"llama": folder, "gemma2": folder})`` does the
  same for the tiny Llama (Llama 3's 128,256 entries) and Gemma 2 (256,000), ``{"olmo2": folder}`` for every
  OLMo-2 revision (dolma2, 100,278 entries, in OLMo-2's 100,352 embedding rows) and ``{"pythia": folder}`` for
  every Pythia revision (GPT-NeoX-20B's 50,277 entries; Pythia's 50,304 rows, as before);
* ``allenai/OLMo-1B-hf`` and ``allenai/OLMo-1B-0724-hf`` (OLMo-1): tiny ``OlmoForCausalLM`` checkpoints
  (``OlmoConfig``), the 0724 one with the branches :data:`OLMO1_REVISIONS` (``step1000-tokens2B`` ..., the names
  the spectral paper's code loads), each from its own seed. The 0724 checkpoint sets ``clip_qkv`` to
  :data:`OLMO1_CLIP` (small enough that it clips most of a tiny model's q/k/v) and a context of 512, and
  OLMo-1B-hf's does neither, so a test can tell whether a loader took the checkpoint's values or OLMo-1B-hf's
  (whose configuration TransformerLens builds the 0724 model under);
* ``meta-llama/Llama-3.2-1B``, ``google/gemma-2-2b`` (and the other gated names in :data:`GATED`): gated, as
  the real hub does it for an account that has not accepted the licence: the model's info answers, every file
  answers 401 ``X-Error-Code: GatedRepo`` without a token and 403 with any token but :data:`GRANTED_TOKEN`,
  which is served a tiny Llama / Gemma 2 checkpoint. TransformerLens 3.9 writes these families' dimensions
  (and OLMo-2's) inside itself, so loading a tiny one needs :func:`read_fixed_configs_from_checkpoint` in the
  loading process.

Endpoints: ``/api/models/{repo}[/revision/{rev}]``, ``/api/models/{repo}/tree/{rev}``, ``/api/models/{repo}/refs``,
``/{repo}/resolve/{rev}/{file}`` (HEAD and GET, with ``Range``); for datasets (:meth:`LocalHub.serve_dataset`, e.g.
``allenai/ai2_arc`` in tests/test_arc.py) ``/api/datasets/{repo}`` and ``/datasets/{repo}/resolve/{rev}/{path}``; 404s carry ``X-Error-Code`` as the real
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

QWEN3_REPO, OLMO2_REPO, OLMOE_REPO = "Qwen/Qwen3-0.6B", "allenai/OLMo-2-0425-1B", "allenai/OLMoE-1B-7B-0924"
#: OLMo-2's branch names have this form on the hub; stage 2 reuses step numbers
OLMO2_REVISIONS = ("stage1-step0-tokens0B", "stage1-step1000-tokens5B", "stage1-step2000-tokens9B",
                   "stage2-ingredient1-step1000-tokens5B")
LLAMA_REPO, GEMMA2_REPO = "meta-llama/Llama-3.2-1B", "google/gemma-2-2b"
OLMO1_REPO, OLMO1_0724_REPO = "allenai/OLMo-1B-hf", "allenai/OLMo-1B-0724-hf"
#: three of the OLMo-1B-0724 branches the spectral paper's code loads (cross_architecture/scripts/olmo/olmo_per_head.py)
OLMO1_REVISIONS = ("step1000-tokens2B", "step2000-tokens4B", "step5000-tokens10B")
OLMO1_CLIP = 0.05  #: the tiny 0724 checkpoint's clip_qkv
GATED = (LLAMA_REPO, "meta-llama/Llama-3.2-3B", GEMMA2_REPO, "google/gemma-2-2b-it")
GRANTED_TOKEN = "hf_licence_accepted"  #: the one token the gated repos accept
#: the tiny families: repo -> (kind, the revisions besides main)
TINY = {QWEN3_REPO: ("qwen3", ()), OLMO2_REPO: ("olmo2", OLMO2_REVISIONS), OLMOE_REPO: ("olmoe", ()),
        LLAMA_REPO: ("llama", ()), GEMMA2_REPO: ("gemma2", ()), OLMO1_REPO: ("olmo", ()),
        OLMO1_0724_REPO: ("olmo-0724", OLMO1_REVISIONS)}
TINY_SIZE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 vocab_size=50304, max_position_embeddings=256)


#: Qwen3's real vocabulary size (its embedding rows; the tokenizer has 151,669 entries)
QWEN3_VOCAB = 151_936
#: the embedding rows of a tiny model that carries its family's real tokenizer (kind -> rows)
REAL_VOCAB = {"qwen3": QWEN3_VOCAB, "llama": 128_256, "gemma2": 256_000, "olmo2": 100_352}


def tiny_model(kind: str):
    """A tiny random ``transformers`` model of ``kind`` (qwen3, olmo2, olmoe, llama, gemma2) with its family's real
    flags.

    ``<kind>-realtok`` (qwen3, llama, gemma2, olmo2): the tiny model with its family's real vocabulary size
    (:data:`REAL_VOCAB`), to carry the family's own tokenizer."""
    import transformers as tf

    dims = TINY_SIZE
    if kind.endswith("-realtok"):
        kind = kind[: -len("-realtok")]
        dims = dict(TINY_SIZE, vocab_size=REAL_VOCAB[kind])
    if kind == "qwen3":
        size = dims
        config = tf.Qwen3Config(**size, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True)
        return tf.Qwen3ForCausalLM(config)
    if kind == "olmo2":
        # rope base and norm eps as OLMo-2-0425-1B's config.json (TransformerLens writes them in its own code)
        return tf.Olmo2ForCausalLM(tf.Olmo2Config(**dims, num_key_value_heads=4, tie_word_embeddings=False,
                                                  rope_theta=500000.0, rms_norm_eps=1e-6))
    if kind == "olmo":  # OLMo-1B-hf: tied embeddings, no clipping
        return tf.OlmoForCausalLM(tf.OlmoConfig(**dims, tie_word_embeddings=True, clip_qkv=None))
    if kind == "olmo-0724":  # OLMo-1B-0724-hf: untied, its own clip_qkv and context length
        return tf.OlmoForCausalLM(tf.OlmoConfig(**dict(dims, max_position_embeddings=512), tie_word_embeddings=False,
                                                clip_qkv=OLMO1_CLIP))
    if kind == "olmoe":
        config = tf.OlmoeConfig(**dict(dims, intermediate_size=32), num_key_value_heads=4, num_experts=4,
                                num_experts_per_tok=2, tie_word_embeddings=False)
        return tf.OlmoeForCausalLM(config)
    if kind == "llama":
        # Llama 3.2's rope (base 500,000, "llama3" scaling), as TransformerLens writes it in its own code
        rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
        return tf.LlamaForCausalLM(tf.LlamaConfig(**dims, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5,
                                                  tie_word_embeddings=True, rope_parameters=rope))
    if kind == "gemma2":
        # the query scale is 1/sqrt(head_dim), as in Gemma-2-2b (query_pre_attn_scalar = head_dim = 256)
        return tf.Gemma2ForCausalLM(tf.Gemma2Config(**dims, num_key_value_heads=2, head_dim=16,
                                                    query_pre_attn_scalar=16, sliding_window=8))
    raise ValueError(f"unknown tiny kind {kind!r}; accepted: qwen3, olmo2, olmoe, llama, gemma2, olmo, olmo-0724")


def read_fixed_configs_from_checkpoint() -> None:
    """Make TransformerLens 3.9 take Llama 3.2's, Gemma 2's, OLMo-2's and OLMo-1's *dimensions* from the checkpoint's
    ``config.json`` (as it does for Qwen3, OLMoE and Pythia) instead of the real models' sizes it writes in its
    own code, so that the tiny checkpoints above load. Every architecture flag stays TransformerLens' own.
    Call it in the process that loads (tests only)."""
    from transformer_lens import loading_from_pretrained as lp

    original = lp.convert_hf_model_config
    if getattr(original, "_reads_checkpoint", False):
        return

    def convert(name, **kwargs):
        d = original(name, **kwargs)
        if not any(k in name for k in ("Llama-3.2", "gemma-2-", "OLMo-2", "OLMo-1B", "OLMo-7B")):
            return d
        c = lp.AutoConfig.from_pretrained(name)
        head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        d.update(d_model=c.hidden_size, d_head=head, n_heads=c.num_attention_heads, d_mlp=c.intermediate_size,
                 n_layers=c.num_hidden_layers, d_vocab=c.vocab_size, n_ctx=c.max_position_embeddings)
        if d.get("n_key_value_heads") is not None:
            d["n_key_value_heads"] = c.num_key_value_heads
        if d.get("rotary_dim") is not None:
            d["rotary_dim"] = head
        if d.get("attn_types"):
            d["attn_types"] = [d["attn_types"][i % len(d["attn_types"])] for i in range(c.num_hidden_layers)]
        if d.get("use_local_attn") and getattr(c, "sliding_window", None):
            d["window_size"] = c.sliding_window
        return d

    convert._reads_checkpoint = True
    lp.convert_hf_model_config = convert


def cache_root() -> Path:
    return Path(os.environ.get("TUTORIAL_CACHE") or Path.home() / ".cache" / "tutorial_lib") / "local-hub"


def _write_tokenizer(target: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer_dir

    src = gpt2_tokenizer_dir()
    for f in src.iterdir():
        if f.is_file():
            shutil.copy(f, target / f.name)


def _build(target: Path, kind: str, seed: int, tokenizer_dir: Path | None = None) -> Path:
    """Write one repo revision to ``target`` (atomically: a half-written folder is never served); its tokenizer is
    GPT-2's, or the ``tokenizer.json`` + ``tokenizer_config.json`` in ``tokenizer_dir``."""
    if (target / "model.safetensors").exists():
        return target
    import torch

    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.manual_seed(seed)
    config = None
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = dict(GPT2_CONFIG)
        model = GPT2LMHeadModel(GPT2Config(**{k: v for k, v in config.items() if k != "architectures"}))
    elif kind.removesuffix("-realtok") in ("qwen3", "olmo2", "olmoe", "llama", "gemma2", "olmo", "olmo-0724"):
        model = tiny_model(kind)  # its config.json as transformers writes it (architectures included)
    else:
        from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

        config = dict(PYTHIA_CONFIG)
        model = GPTNeoXForCausalLM(GPTNeoXConfig(**{k: v for k, v in config.items() if k != "architectures"}))
        model = model.half()
    model.save_pretrained(str(tmp), safe_serialization=True)
    if config is not None:
        (tmp / "config.json").write_text(json.dumps(config, indent=2))  # the hub's own values, not transformers' rewrite
    for extra in ("generation_config.json",):
        (tmp / extra).unlink(missing_ok=True)
    if tokenizer_dir is not None:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(Path(tokenizer_dir) / f, tmp / f)
    else:
        _write_tokenizer(tmp)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target


class Repos:
    """Where each (repo, revision) lives on disk; built lazily, one at a time."""

    def __init__(self, root: Path | None = None, seed: int = 0, qwen3_tokenizer: Path | None = None,
                 tokenizers: dict | None = None):
        self.root = Path(root or cache_root())
        self.seed = seed
        #: kind -> folder of that family's real tokenizer files (the tiny model then has the real vocabulary size)
        self.tokenizers = dict(tokenizers or {})
        if qwen3_tokenizer is not None:
            self.tokenizers["qwen3"] = qwen3_tokenizer
        self._lock = threading.Lock()
        self._by_commit: dict = {}

    def folder(self, repo: str, revision: str, granted: bool = False) -> Path | None:
        """The folder serving ``repo`` at ``revision``; None: no such repo; False: no such revision;
        ``"gated"``: a gated repo (its files are refused)."""
        repo = ALIASES.get(repo, repo)
        if repo in GATED and (repo not in TINY or not granted):
            return "gated"
        revision = self._by_commit.get((repo, revision), revision)
        if repo in TINY:
            kind, revisions = TINY[repo]
            if revision not in ("main", *revisions):
                return False
            seed = self.seed * 1_000_003 + (revisions.index(revision) + 1 if revision in revisions else 0)
            tokenizer = None
            if kind in self.tokenizers:
                kind, tokenizer = f"{kind}-realtok", self.tokenizers[kind]
            with self._lock:
                return _build(self.root / f"{kind}-tiny-seed{self.seed}-{revision}", kind, seed, tokenizer)
        if repo not in (GPT2_REPO, PYTHIA_REPO):
            return None
        if not _REVISION.match(revision):
            return False  # unknown revision
        if repo == GPT2_REPO:
            if revision != "main":
                return False
            kind, seed, name = "gpt2", self.seed, f"gpt2-seed{self.seed}"
        else:
            step = int(revision[4:]) if revision.startswith("step") else 143000
            real = "-realtok" if "pythia" in self.tokenizers else ""
            kind, seed, name = "pythia", self.seed * 1_000_003 + step, f"pythia-70m{real}-seed{self.seed}-{revision}"
        with self._lock:
            return _build(self.root / name, kind, seed, self.tokenizers.get(kind))

    def branches(self, repo: str) -> list[str] | None:
        """The repo's branch names (None for an unknown repo)."""
        repo = ALIASES.get(repo, repo)
        if repo in TINY:
            return ["main", *TINY[repo][1]]
        if repo in GATED or repo == GPT2_REPO:
            return ["main"]
        if repo == PYTHIA_REPO:
            return ["main", "step0", "step1000", "step143000"]
        return None

    def commit(self, repo: str, revision: str) -> str:
        """The commit id a revision resolves to (clients then ask for files by this id)."""
        repo = ALIASES.get(repo, repo)
        revision = self._by_commit.get((repo, revision), revision)
        sha = hashlib.sha1(f"{repo}@{revision}".encode()).hexdigest()
        self._by_commit[(repo, sha)] = revision
        return sha


ARC_REPO = "allenai/ai2_arc"


def arc_questions(config: str, n: int = 12) -> list[dict]:
    """``n`` made-up questions in ARC's schema (``id``, ``question``, ``choices`` {text, label}, ``answerKey``):
    mostly A-D, question 1 labelled 1-4 (as some of ARC's are), question 2 with five choices (dropped by the task)."""
    things = ["a rock", "a leaf", "ice", "a magnet", "sand", "a cloud", "steam", "a seed", "a shell", "salt", "wood",
              "glass", "iron", "water"]
    rows = []
    for i in range(n):
        opts = [things[(i + j) % len(things)] for j in range(4)]
        rows.append({"id": f"{config}-q{i}", "question": f"Which item is number {i} in the  list?",
                     "choices": {"text": opts, "label": list("ABCD")}, "answerKey": "ABCD"[i % 4]})
    rows[1]["choices"]["label"] = ["1", "2", "3", "4"]
    rows[1]["answerKey"] = "3"
    rows[2]["choices"] = {"text": ["a", "b", "c", "d", "e"], "label": list("ABCDE")}
    rows[2]["answerKey"] = "E"
    return rows


def write_arc(folder: Path, n: int = 12) -> Path:
    """Write ARC-Easy's and ARC-Challenge's test files under ``folder`` in the dataset's real layout and schema
    (``ARC-Easy/test-00000-of-00001.parquet``) for :meth:`LocalHub.serve_dataset`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.string()), ("question", pa.string()),
                        ("choices", pa.struct([("text", pa.list_(pa.string())), ("label", pa.list_(pa.string()))])),
                        ("answerKey", pa.string())])
    for config in ("ARC-Easy", "ARC-Challenge"):
        (Path(folder) / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(arc_questions(config, n), schema=schema),
                       Path(folder) / config / "test-00000-of-00001.parquet")
    return Path(folder)


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
        m = re.match(r"^/datasets/(.+?)/resolve/([^/]+)/(.+)$", path)
        if m:
            return self._dataset_file(*m.groups(), head=head)
        m = re.match(r"^/api/datasets/(.+?)(?:/(?:revision|tree)/.*)?$", path)
        if m:
            return self._dataset_info(m.group(1), head)
        m = re.match(r"^/api/models/(.+)/refs$", path)
        if m:
            return self._refs(m.group(1), head)
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

    def _refs(self, repo, head):
        names = self.server.hub.repos.branches(repo)
        if names is None:
            return self._not_found("RepoNotFound", head)
        repos = self.server.hub.repos
        self._json({"branches": [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": repos.commit(repo, n)}
                                 for n in names], "converts": [], "tags": []}, head)

    def _granted(self) -> bool:
        return self.headers.get("Authorization", "") == f"Bearer {GRANTED_TOKEN}"

    def _gated(self, repo, head):
        """What the real hub answers for a gated repo's file: 401 without a token, 403 with one."""
        token = self.headers.get("Authorization", "").startswith("Bearer ")
        msg = (f"Access to model {repo} is restricted and you are not in the authorized list." if token else
               f"Access to model {repo} is restricted. You must have access to it and be authenticated to access it.")
        self._send(403 if token else 401, json.dumps({"error": msg}).encode(),
                   {"X-Error-Code": "GatedRepo", "X-Error-Message": msg, "Content-Type": "application/json"}, head)

    def _resolve(self, repo, rev, head):
        folder = self.server.hub.repos.folder(repo, rev, granted=self._granted())
        if folder == "gated":
            self._gated(repo, head)
            return None
        if folder is None:
            self._not_found("RepoNotFound", head)
        elif folder is False:
            self._not_found("RevisionNotFound", head)
        return folder or None

    def _files(self, folder: Path):
        return sorted(f for f in folder.iterdir() if f.is_file())

    def _info(self, repo, rev, head):
        if ALIASES.get(repo, repo) in GATED and not self._granted():
            sha = self.server.hub.repos.commit(repo, rev)
            return self._json({"id": repo, "modelId": repo, "sha": sha, "private": False, "gated": "manual",
                               "disabled": False, "siblings": []}, head, {"X-Repo-Commit": sha})
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

    def _dataset_folder(self, repo, head):
        folder = self.server.hub.datasets.get(repo)
        if folder is None:
            self._not_found("RepoNotFound", head)
        return folder

    def _dataset_info(self, repo, head):
        folder = self._dataset_folder(repo, head)
        if folder is None:
            return
        sha = self.server.hub.repos.commit(f"datasets/{repo}", "main")
        siblings = [{"rfilename": f.relative_to(folder).as_posix(), "size": f.stat().st_size}
                    for f in sorted(folder.rglob("*")) if f.is_file()]
        self._json({"id": repo, "sha": sha, "private": False, "gated": False, "disabled": False, "siblings": siblings},
                   head, {"X-Repo-Commit": sha})

    def _dataset_file(self, repo, rev, name, head):
        """A dataset's file (``/datasets/{repo}/resolve/{rev}/{path}``; paths may hold folders, as ARC's do)."""
        folder = self._dataset_folder(repo, head)
        if folder is None:
            return
        f = folder / name
        if ".." in name.split("/") or not f.is_file():
            return self._not_found("EntryNotFound", head)
        self._stream(f, self.server.hub.repos.commit(f"datasets/{repo}", "main"), head)

    def _file(self, repo, rev, name, head):
        folder = self._resolve(repo, rev, head)
        if folder is None:
            return
        f = folder / name
        sha = self.server.hub.repos.commit(repo, rev)
        if "/" in name or not f.is_file():
            return self._not_found("EntryNotFound", head)
        self._stream(f, sha, head)

    def _stream(self, f: Path, sha: str, head: bool):
        """Send file ``f`` as the hub does (ETag, X-Repo-Commit, ranges)."""
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

    def __init__(self, mode: str = "ok", port: int = 0, root: Path | None = None, seed: int = 0,
                 qwen3_tokenizer: Path | None = None, tokenizers: dict | None = None):
        if mode not in ("ok", "stall", "error"):
            raise ValueError(f"mode must be 'ok', 'stall' or 'error', got {mode!r}")
        self.mode = mode
        self.repos = Repos(root, seed, qwen3_tokenizer, tokenizers)
        self.requests: list = []
        self.datasets: dict = {}  # dataset repo -> folder holding its files (serve_dataset)
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
            self.repos.folder(repo, rev, granted=True)

    def serve_dataset(self, repo: str, folder) -> None:
        """Serve the files under ``folder`` as the dataset ``repo`` (e.g. ``allenai/ai2_arc``; subfolders kept)."""
        self.datasets[repo] = Path(folder)

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
