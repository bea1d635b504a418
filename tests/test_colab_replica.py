"""A Colab replica: Colab's Python (3.13) with Colab's published package versions preinstalled, then the
notebooks' first cell run exactly as a learner runs it (in a kernel, with real pip), against the course's wheel
built here and offered from a local folder (`PIP_FIND_LINKS`; its dependencies come from the package index as
usual). Then notebooks 00 and 01 at `TUTORIAL_SIZE=quick` (offline: the zoo model), and notebook 00's ablation
panel driven from code. Asserts: no preinstalled distribution changed version; the notebooks run; the panel's
callback updates its readout. Records the timings in build/colab-replica.json.

Part of the README's test command: measured here it took 5.5 min cold (the 5.3 GB image with the CUDA torch built
in ~80 s, then the runtime copy, the install cell and the two notebooks) and about 1-4 min with the image kept in
.course-cache/ (figures in the README's Colab section). `bash scripts/course.sh colab-replica` runs it alone;
COURSE_COLAB_REPLICA=0 leaves it out; skipped without a Python 3.13 (set PYTHON313 to name one).

What differs from Colab: torch 2.13.0 (its CUDA 13.0 build, run on the CPU) instead of Colab's 2.11 (not
installable here); only the packages below are preinstalled, not Colab's ~600; `google.colab` is a stub whose
`output.enable_custom_widget_manager()` prints a line; no hub, so "auto" loads the zoo model.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".course-cache" / "colab-replica"
# Colab's default runtime, its published package list (August 2026), torch aside; nbclient/nbformat drive the kernel.
COLAB = ["transformers==5.15.0", "numpy==2.1.3", "ipywidgets==7.7.1", "plotly==5.24.1", "notebook==6.5.7",
         "ipykernel==6.17.1", "anywidget==0.9.21", "nbclient==0.10.2", "nbformat==5.10.4"]
TORCH = "torch==2.13.0"

pytestmark = pytest.mark.skipif(os.environ.get("COURSE_COLAB_REPLICA") == "0", reason="COURSE_COLAB_REPLICA=0")

STUB = '''"""A stand-in for Colab's google.colab (the replica test): only what the course calls."""
'''
STUB_OUTPUT = '''def enable_custom_widget_manager():
    print("[replica] google.colab.output.enable_custom_widget_manager() called")
'''

# Appended to notebook 00: drive its panel as a click would, and say which widget generation drew it.
DRIVE = '''
import ipywidgets, plotly
_text, _y = panel.readout.value, list(panel.figure.data[1].y) if len(panel.figure.data) > 1 else None
_name = sorted(panel.buttons)[-1]
panel.buttons[_name].value = True  # what a click does
assert panel.ablated == {_name} and panel.readout.value != _text and _name in panel.readout.value, panel.readout.value
assert _y is None or list(panel.figure.data[1].y) != _y
print("PANEL-DRIVEN", _name, "WIDGETS", ipywidgets.__version__, plotly.__version__)
'''

DRIVER = r'''
import json, sys, time, nbformat
from nbclient import NotebookClient
nb_path, out_path, cwd, extra = sys.argv[1:5]
nb = nbformat.read(nb_path, as_version=4)
if extra:
    nb.cells.append(nbformat.v4.new_code_cell(extra))
t0 = time.time()
try:
    NotebookClient(nb, timeout=1800, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": cwd}}).execute()
finally:
    nbformat.write(nb, out_path)
def seconds(cell):
    t = cell.metadata.get("execution", {})
    from datetime import datetime
    a, b = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    return (datetime.fromisoformat(b.replace("Z", "+00:00")) - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds() if a and b else None
code = [c for c in nb.cells if c.cell_type == "code"]
print("DRIVER " + json.dumps({"total_s": time.time() - t0, "first_cell_s": seconds(code[0]),
      "outputs": ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in code]}))
'''


def python313() -> str | None:
    for cand in [os.environ.get("PYTHON313"), *sorted(Path.home().glob(".pyenv/versions/3.13*/bin/python3.13")),
                 shutil.which("python3.13")]:  # a pyenv shim may exist and refuse to run: try each
        if cand and subprocess.run([str(cand), "-c", "import sys; assert sys.version_info[:2] == (3, 13)"],
                                   capture_output=True).returncode == 0:
            return str(cand)
    return None


def sh(cmd, timeout, **kw):
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    assert res.returncode == 0, f"{cmd[:5]} failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res


def installed(py: Path) -> dict:
    script = ("import json; from importlib.metadata import distributions\n"
              "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in distributions()}))")
    return json.loads(sh([py, "-c", script], 120, cwd=py.parents[2]).stdout)  # not the checkout: its *.egg-info


def colab_image(py313: str, timings: dict) -> Path:
    """Colab's preinstalled set in a venv, built once and kept (by a hash of the pins) in .course-cache/."""
    import hashlib

    tag = hashlib.sha256(" ".join([py313, TORCH, *COLAB]).encode()).hexdigest()[:12]
    base = CACHE / f"image-{tag}"
    if (base / ".ready").exists():
        timings["image_s"] = 0.0
        return base
    t0 = time.time()
    final, base = base, base.with_name(base.name + f".tmp{os.getpid()}")  # built aside, renamed when complete
    shutil.rmtree(base, ignore_errors=True)
    sh([py313, "-m", "venv", base], 300)
    py = base / "bin" / "python"
    sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", TORCH], 1800)  # torch first, as Colab's image
    cons = base / "torch.txt"
    cons.write_text(TORCH + "\n")
    sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", cons, *COLAB], 1800)
    site = Path(sh([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60).stdout.strip())
    (site / "google" / "colab").mkdir(parents=True, exist_ok=True)  # `google` stays a namespace package
    (site / "google" / "colab" / "__init__.py").write_text(STUB)
    (site / "google" / "colab" / "output.py").write_text(STUB_OUTPUT)
    dist = site / "google_colab-1.0.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: google-colab\nVersion: 1.0.0\n")
    (base / ".ready").write_text(" ".join([TORCH, *COLAB]) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    base.rename(final)  # the venv is used with `python -m` / `python script` only, so its new path is fine
    timings["image_s"] = round(time.time() - t0, 1)
    return final


def test_colab_replica(tmp_path):
    py313 = python313()
    if py313 is None:
        pytest.skip("no Python 3.13 (Colab's Python) on this machine: set PYTHON313")
    timings: dict = {}
    image = colab_image(py313, timings)

    t0 = time.time()  # a fresh runtime: the image hard-linked (pip only adds files; nothing is changed in place)
    runtime = tmp_path / "runtime"  # one per run (same file system as .course-cache/ for the hard links, else a copy)
    if subprocess.run(["cp", "-al", str(image), str(runtime)], capture_output=True).returncode != 0:
        shutil.rmtree(runtime, ignore_errors=True)
        sh(["cp", "-a", image, runtime], 1200)
    py = runtime / "bin" / "python"
    timings["runtime_copy_s"] = round(time.time() - t0, 1)

    t0 = time.time()  # the course's wheel, built here, offered from a folder as the index would offer it
    wheels = tmp_path / "wheels"
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, ROOT], 600)
    (wheel,) = wheels.glob("circuits_course-*.whl")
    timings["wheel_s"] = round(time.time() - t0, 1)

    before = installed(py)
    assert "circuits-course" not in before and before["ipywidgets"] == "7.7.1" and before["plotly"] == "5.24.1"
    learner = tmp_path / "learner"  # outside the repository, as a Colab runtime is
    learner.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TUTORIAL_DATA", "TUTORIAL_MODEL", "HF_ENDPOINT", "JUPYTER_PATH")}
    env.update(PATH=f"{runtime / 'bin'}:{env.get('PATH', '')}", COLAB_RELEASE_TAG="replica", TUTORIAL_SIZE="quick",
               HF_HUB_OFFLINE="1", JUPYTER_DATA_DIR=str(tmp_path / "jupyter"), TUTORIAL_CACHE=str(tmp_path / "cache"),
               PIP_FIND_LINKS=" ".join(filter(None, [str(wheels), os.environ.get("PIP_FIND_LINKS")])))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    results = {}
    for name, extra in [("00_start_here", DRIVE), ("01_greater_than", "")]:
        nb = ROOT / "notebooks" / "solutions" / f"{name}.ipynb"
        out = tmp_path / f"{name}.out.ipynb"
        res = sh([py, driver, nb, out, learner, extra], 3000, cwd=learner, env=env)
        results[name] = json.loads(res.stdout.split("DRIVER ", 1)[1])
        timings[f"{name}_s"] = round(results[name]["total_s"], 1)
        timings[f"{name}_first_cell_s"] = round(results[name]["first_cell_s"] or -1, 1)
    after = installed(py)

    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    assert not changed, f"the install cell changed preinstalled packages: {changed}"
    assert after.get("circuits-course") == wheel.name.split("-")[1]
    first = results["00_start_here"]["outputs"][0]
    assert "Would install" in first and "circuits-course" in first, first
    assert "packages already here are unchanged" in first, first
    assert "enable_custom_widget_manager() called" in first, first
    assert results["01_greater_than"]["outputs"][0].count("Would install") == 0  # installed: the cell does nothing
    drove = results["00_start_here"]["outputs"][-1]
    assert "PANEL-DRIVEN" in drove and "WIDGETS 7.7.1 5.24.1" in drove, drove
    timings["added_packages"] = len(after) - len(before)
    timings["python"] = sh([py, "-c", "import sys; print(sys.version.split()[0])"], 60).stdout.strip()
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "colab-replica.json").write_text(json.dumps(timings, indent=1) + "\n")
    print("REPLICA", json.dumps(timings))
