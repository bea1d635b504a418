"""pyproject.toml and environment.yml must list the same packages with the same pins."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower().replace("_", "-")


def test_pyproject_and_environment_yml_agree():
    """The same packages; torch is the one difference: a lower bound in the package, the CPU pin in the
    environment file."""
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {norm(r) for r in py["dependencies"] + py["optional-dependencies"]["dev"]}
    wanted = {"torch==2.13.0" if r.startswith("torch>=") else r for r in wanted}
    env_lines = (ROOT / "environment.yml").read_text().splitlines()
    pip_reqs = {norm(l.strip()[2:]) for l in env_lines if l.startswith("      - ")}
    pip_reqs.discard("-e.")
    assert pip_reqs == wanted, f"only in environment.yml: {pip_reqs - wanted}; only in pyproject: {wanted - pip_reqs}"
    assert any(l.strip() == "- python=3.11" for l in env_lines)


def test_torch_has_a_lower_bound_only_and_transformer_lens_is_pinned():
    """Colab brings its own torch: the package must accept it (a lower bound), never replace it (no pin).
    TransformerLens 4 removed HookedTransformer, so it is pinned exactly."""
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_reqs = [r for r in py if norm(r).startswith("torch")]
    assert torch_reqs == ["torch>=2.6"], torch_reqs
    assert "transformer-lens==3.9.0" in py
    assert "torch==2.13.0" in (ROOT / "environment.yml").read_text()


def test_setup_script_installs_torch_first():
    script = (ROOT / "scripts" / "course.sh").read_text()
    torch_at = script.index('"torch==2.13.0"')
    rest_at = script.index('-e ".[dev]"')
    assert torch_at < rest_at
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/course.sh test" in ci
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/course.sh lab" in readme and "bash scripts/course.sh test" in readme
