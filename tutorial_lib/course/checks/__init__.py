"""Inline checks a learner calls right after an exercise: ``checks.check_zero_head_hook(zero_head_hook)``.

Each check runs the learner's function on a small case, compares it with the library's answer, and
either prints a short success line or raises :class:`ExerciseError` saying plainly what is wrong (the
first mismatching value, a shape, a hook left attached). An unfinished exercise -- one that still
raises ``NotImplementedError`` -- gets a reminder instead of a traceback.

One module per notebook (``nb00.py``, ``nb01.py``, ...; 01's path-patching exercises in ``nb01_paths.py``, 02's
all-edges EAP in ``nb02_eap.py``, 04's edge patching in ``nb04_edges.py``); each ``check_*`` function is imported here by
name, so ``checks.check_prob_diff`` resolves statically (go to definition, autocompletion). A new check
must be added to the list below; ``tests/test_checks.py`` checks that every ``check_*`` of every module is.
The checks import the methods they compare against inside the function, so that ``import tutorial_lib``
(the first cell, before :func:`tutorial_lib.setup` has installed anything) stays light; the layer contract
(``tests/test_layers.py``) reads those imports too.
"""
from .common import ExerciseError, compare, passed  # noqa: F401
from .nb00 import (check_could_have_failed, check_head_output, check_logit_diff, check_patch_hook,  # noqa: F401
                   check_zero_head_hook)
from .nb01 import check_necessity, check_patch_each_head, check_prob_diff, check_sufficiency  # noqa: F401
from .nb01_paths import check_direct_path_patch, check_path_patch, check_search_step  # noqa: F401
from .nb02 import (check_cross_task_row, check_edge_score, check_jaccard, check_node_scores, check_permutation_test,  # noqa: F401
                   check_reuse_at_p, check_shared_set, check_size_matched_control)
from .nb02_eap import check_eap_edges  # noqa: F401
from .nb03 import (check_ablation_test, check_group_ablation, check_induction_scores,  # noqa: F401
                   check_induction_selectivity, check_k_composition, check_participation_ratio, check_pr_integral)
from .nb04 import check_cpr_cmd, check_faithfulness, check_ig_step, check_overlap_against_chance, check_random_circuit  # noqa: F401
from .nb05 import check_previous_token_head, check_roc, check_why_missed  # noqa: F401
