"""Run a notebook cell by cell in a fresh kernel, timing every cell (used by the GPT-2-shape test and by
``benchmarks/notebooks_gpt2.py``)."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

CLAIM_LINE = re.compile(r"\[claim not met on this model: (.*)\]")


@dataclass
class CellTiming:
    index: int
    seconds: float
    source: str


@dataclass
class NotebookRun:
    path: Path
    seconds: float = 0.0
    cells: list = field(default_factory=list)
    claims_not_met: list = field(default_factory=list)
    error: str | None = None
    notebook: object = None  # the executed notebook, outputs included

    def text(self) -> str:
        """Every cell's printed text and plain-text results, in order."""
        return "".join(_text_of(c.get("outputs", [])) for c in self.notebook.cells if c.cell_type == "code")

    def slowest(self, k: int = 5) -> list:
        return sorted(self.cells, key=lambda c: -c.seconds)[:k]


def _text_of(outputs) -> str:
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"])
    return "".join(parts)


def run_notebook(path, env: dict, timeout: int = 900, cwd=None, prelude: str | None = None) -> NotebookRun:
    """Execute ``path`` in a kernel started with ``env``; never raises for a failing cell (see ``.error``).

    ``prelude``: code run in the kernel before the notebook's first cell (e.g. a planted circuit).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    # only the README's own notebook run records the README's figures (TUTORIAL_RECORD), never these test runs
    env = {k: v for k, v in env.items() if k != "TUTORIAL_RECORD"}
    nb = nbformat.read(path, as_version=4)
    if prelude:
        nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    run = NotebookRun(path)
    run.notebook = nb
    starts: dict = {}

    def on_start(cell, cell_index, **_):
        starts[cell_index] = time.time()

    def on_done(cell, cell_index, **_):
        took = time.time() - starts.get(cell_index, time.time())
        run.cells.append(CellTiming(cell_index, took, cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""))
        run.claims_not_met += CLAIM_LINE.findall(_text_of(cell.get("outputs", [])))

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd or path.parent)}},
                            on_cell_execute=on_start, on_cell_executed=on_done)
    t0 = time.time()
    try:
        client.execute(env=env)
    except CellExecutionError as err:
        run.error = str(err)[-3000:]
    except Exception as err:  # kernel death, timeout
        run.error = f"{type(err).__name__}: {str(err)[-3000:]}"
    run.seconds = time.time() - t0
    return run
