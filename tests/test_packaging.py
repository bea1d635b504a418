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


DATA_FILES = ["zoo/manifest.json", "zoo/zoo-multitask.safetensors", "zoo/tokenizer/tokenizer.json", "gpt2/encoder.json",
              "gpt2/vocab.bpe"]


def version() -> str:
    import tutorial_lib

    return tutorial_lib.__version__


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """The sdist, built as `python -m build` builds it (setuptools' PEP 517 hook)."""
    out = tmp_path_factory.mktemp("sdist")
    res = run([sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"], 300,
              cwd=ROOT, env=CLEAN_ENV)
    return out / res.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel(sdist, tmp_path_factory):
    """The wheel, built from the unpacked sdist (as `python -m build` does), so both are tested at once."""
    import tarfile

    src = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data")
    (tree,) = src.iterdir()
    out = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(tree)], 300,
        env=CLEAN_ENV)
    (whl,) = out.glob("circuits_course-*.whl")
    return whl


def test_sdist_carries_the_data_and_the_build_hook(sdist):
    import tarfile

    assert sdist.name == f"circuits_course-{version()}.tar.gz", sdist.name
    top = f"circuits_course-{version()}/"
    names = {n.removeprefix(top) for n in tarfile.open(sdist).getnames()}
    for f in ["setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "tutorial_lib/__init__.py",
              *(f"data/{d}" for d in DATA_FILES)]:
        assert f in names, f"{f} missing from the sdist"
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_wheel_carries_the_data_and_no_torch_pin(wheel):
    assert wheel.name == f"circuits_course-{version()}-py3-none-any.whl", wheel.name
    size_mb = wheel.stat().st_size / 1e6  # PyPI refuses a file over 100 MB unless the project asks for more
    print(f"\nwheel: {size_mb:.1f} MB")
    assert size_mb < 100, f"the wheel is {size_mb:.1f} MB, over PyPI's default limit of 100 MB a file"
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in DATA_FILES:
        assert f"tutorial_lib/data/{f}" in names, f"{f} missing from the wheel"
    manifest = json.loads(zipfile.ZipFile(wheel).read("tutorial_lib/data/zoo/manifest.json"))
    for name, entry in manifest["models"].items():
        assert f"tutorial_lib/data/zoo/{entry['file']}" in names, name
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    torch_reqs = [l for l in meta.splitlines() if l.startswith("Requires-Dist: torch")]
    assert torch_reqs == ["Requires-Dist: torch>=2.6"], torch_reqs
    assert f"Name: circuits-course\nVersion: {version()}\n" in meta
    assert "Requires-Dist: ipywidgets>=7.7" in meta and "Requires-Dist: plotly>=5.24" in meta  # Colab's 7.7.1 and 5.24.1


def test_the_wheel_installs_by_name_from_a_local_index(wheel, tmp_path):
    """A PEP 503 index on disk holding only the wheel; a fresh venv installs `circuits-course==<version>` by name
    (--no-deps: torch and the rest are not what is tested here), and the data lies inside the package."""
    index = tmp_path / "simple" / "circuits-course"
    index.mkdir(parents=True)
    (index / wheel.name).write_bytes(wheel.read_bytes())
    (index / "index.html").write_text(f'<!DOCTYPE html><html><body><a href="{wheel.name}">{wheel.name}</a></body></html>')
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], 120, env=CLEAN_ENV)
    py = str(venv / "bin" / "python")
    alone = {k: v for k, v in CLEAN_ENV.items() if not k.startswith("PIP_")}
    alone["PIP_CONFIG_FILE"] = os.devnull  # this machine's pip configuration adds indexes and find-links; not here
    from tutorial_lib.course import colab

    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--index-url", (tmp_path / "simple").as_uri(), colab.release_requirement()], 300, env=alone)
    check = textwrap.dedent(f"""
        import importlib.metadata as m, importlib.util, os
        assert m.version({colab.DISTRIBUTION!r}) == {version()!r}
        (pkg,) = importlib.util.find_spec("tutorial_lib").submodule_search_locations
        assert "site-packages" in pkg, pkg
        for f in {DATA_FILES!r}:
            assert os.path.isfile(os.path.join(pkg, "data", f)), f
        print("BY-NAME-OK")
    """)
    assert "BY-NAME-OK" in run([py, "-c", check], 60, cwd=tmp_path, env=alone).stdout


def test_release_workflow_builds_tests_and_publishes_on_a_tag():
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on == {"push": {"tags": ["v*"]}}, on
    build, publish = wf["jobs"]["build"], wf["jobs"]["publish"]
    runs = [st.get("run", "") for st in build["steps"]]
    uses = [st.get("uses", "") for st in build["steps"]]
    assert uses[0].startswith("actions/checkout@") and any(u.startswith("actions/setup-python@") for u in uses)
    at = lambda text: next(i for i, r in enumerate(runs) if text in r)
    assert at("GITHUB_REF_NAME") < at("bash scripts/course.sh test") < at("python -m build")  # version, tests, build
    assert "tutorial_lib/core/version.py" in runs[at("GITHUB_REF_NAME")]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert publish["needs"] == "build" and publish["permissions"] == {"id-token": "write"}
    assert publish["environment"] == "pypi"
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "with" not in publish["steps"][-1] or "password" not in publish["steps"][-1]["with"]  # trusted, no token
    # the tag check, run here as the workflow runs it: the right tag passes, another fails
    step = runs[at("GITHUB_REF_NAME")]
    for tag, rc in [(f"v{version()}", 0), ("v999.0.0", 1)]:
        got = subprocess.run(["bash", "-c", step], cwd=ROOT, env=dict(CLEAN_ENV, GITHUB_REF_NAME=tag)).returncode
        assert got == rc, (tag, got)


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
