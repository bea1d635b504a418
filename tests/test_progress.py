"""core.progress: a bar in an executed notebook ends in its final state (not the widget's stale 0%)."""
import nbformat
from nbclient import NotebookClient
from tqdm.std import tqdm as std_tqdm

from tutorial_lib.core import progress


def test_outside_a_kernel_it_is_the_terminal_bar():
    assert not progress.in_kernel()
    bar = progress.tqdm(range(3), disable=True)
    assert type(bar) is std_tqdm
    assert list(bar) == [0, 1, 2]


def test_an_executed_notebook_keeps_the_final_state(tmp_path):
    code = ("import time\n"
            "from tutorial_lib.core.progress import tqdm, DisplayBar\n"
            "bar = tqdm(range(12), desc='kept')\n"
            "assert isinstance(bar, DisplayBar)\n"
            "for i in bar:\n    time.sleep(0.06)\n"
            "for i in tqdm(range(5), desc='dropped', leave=False):\n    time.sleep(0.06)\n"
            "for i in tqdm(range(4), desc='off', disable=True):\n    pass\n"
            "print('end')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(nb, timeout=100, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outs = nb.cells[0].outputs
    texts = ["".join(o.get("data", {}).get("text/plain", "")) for o in outs if o.output_type == "display_data"]
    assert len(texts) == 2, outs
    assert texts[0].startswith("kept: 100%") and "12/12" in texts[0], texts[0]
    assert "0%" not in texts[0].split("|")[0].replace("100%", ""), texts[0]
    assert texts[1] == ""  # leave=False: the bar is gone from the saved copy, as from the live one
    assert outs[-1].output_type == "stream" and outs[-1].text == "end\n"
