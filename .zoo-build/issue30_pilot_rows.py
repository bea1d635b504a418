"""Issue 30 pilot F ("somerows"): as pilot taskdrop (m0 frozen, 10,000-step restart, seed 1, head dropout p 0.1 seed
4321, the induction and plain rows with every head), but the dropout only in the rows of greater-than, IOI and
addition: multiple choice and boolean logic train with every head too (under dropout on their rows, m0 left multiple
choice's EAP circuit and notebook 02's multiple-choice claims failed). Library code (restart["head_dropout"]["rows"]).
Resumable: run again to continue."""
from issue30_pilot_candidate import run_restart

if __name__ == "__main__":
    run_restart("somerows", rows=["greater_than", "greater_than_01", "ioi", "addition", "addition_small"],
                note="(head dropout on greater-than, IOI and addition rows only)")
