"""Issue 30 pilot G ("nogt"): as pilot somerows, but head dropout only in the IOI and addition rows: greater-than
trains with every head too (under dropout on its rows, notebook 01's path-patching circuit recovered 57% of the
model's probability difference, needs 80%). Library code. Resumable: run again to continue."""
from issue30_pilot_candidate import run_restart

if __name__ == "__main__":
    run_restart("nogt", rows=["ioi", "addition", "addition_small"],
                note="(head dropout on IOI and addition rows only)")
