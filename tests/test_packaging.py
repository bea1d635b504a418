"""The course as a learner installs it: a wheel with its data, into an environment whose torch is kept
(the Colab situation), used from outside the repository. The install cell itself: tests/test_colab_install.py."""
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TUTORIAL_DATA", "TUTORIAL_MODEL", "HF_ENDPOINT")}


def run(cmd, timeout, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert res.returncode == 0, f"{cmd[:4]} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)], 300,
        env=CLEAN_ENV)
    (whl,) = out.glob("circuits_course-*.whl")
    return whl


def test_wheel_carries_the_data_and_no_torch_pin(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ["tutorial_lib/data/zoo/manifest.json", "tutorial_lib/data/zoo/zoo-multitask.safetensors",
              "tutorial_lib/data/zoo/tokenizer/tokenizer.json", "tutorial_lib/data/gpt2/encoder.json",
              "tutorial_lib/data/gpt2/vocab.bpe"]:
        assert f in names, f"{f} missing from the wheel"
    manifest = json.loads(zipfile.ZipFile(wheel).read("tutorial_lib/data/zoo/manifest.json"))
    for name, entry in manifest["models"].items():
        assert f"tutorial_lib/data/zoo/{entry['file']}" in names, name
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    torch_reqs = [l for l in meta.splitlines() if l.startswith("Requires-Dist: torch")]
    assert torch_reqs == ["Requires-Dist: torch>=2.6"], torch_reqs


def test_wheel_in_a_fresh_environment_keeps_torch_and_runs_notebook_00_outside_the_repo(wheel, tmp_path):
    """Fresh venv, torch installed first and kept by a constraint; then the wheel with its dependencies
    (from the package index); then notebook 00 executed offline from a folder outside the checkout."""
    import torch

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], 120, env=CLEAN_ENV)
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"torch=={torch.__version__.split('+')[0]}"], 600,
        env=CLEAN_ENV)
    before = run([py, "-c", "import torch; print(torch.__version__, torch.__file__)"], 60, env=CLEAN_ENV).stdout
    cons = tmp_path / "keep.txt"
    cons.write_text(f"torch=={torch.__version__.split('+')[0]}\n")
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(cons), str(wheel),
         "ipykernel", "nbclient", "nbformat"], 900, env=CLEAN_ENV)
    after = run([py, "-c", "import torch; print(torch.__version__, torch.__file__)"], 60, env=CLEAN_ENV).stdout
    assert after == before, f"installing the course replaced torch: {before!r} -> {after!r}"

    outside = tmp_path / "learner"
    outside.mkdir()
    nb = ROOT / "notebooks" / "solutions" / "00_start_here.ipynb"
    script = textwrap.dedent(f"""
        import nbformat, tutorial_lib, tutorial_lib.core.paths as p
        from nbclient import NotebookClient
        assert "site-packages" in tutorial_lib.__file__, tutorial_lib.__file__
        assert p.data_dir() == p.PACKAGED_DATA, p.data_dir()
        nb = nbformat.read({str(nb)!r}, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={{"metadata": {{"path": {str(outside)!r}}}}}).execute()
        out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
        assert "Loaded the offline zoo model" in out, out[-2000:]
        print("NOTEBOOK-OK")
    """)
    env = dict(CLEAN_ENV, HF_HUB_OFFLINE="1", PATH=f"{venv / 'bin'}:{CLEAN_ENV.get('PATH', '')}",
               TUTORIAL_CACHE=str(tmp_path / "cache"))
    res = run([py, "-c", script], 900, cwd=outside, env=env)
    assert "NOTEBOOK-OK" in res.stdout
