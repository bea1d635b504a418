"""The rule for fair predictions (tutorial_lib.studies.fair): an option the run cannot tell from the best counts as
right, one it can does not; a number inside the run's interval counts, one outside does not."""
import pytest
import torch

from tutorial_lib.studies.fair import RULE, answers_every, interval_tolerance, runs_range, tied_with_best


def test_options_within_the_noise_of_the_best_tie_with_it():
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(200, generator=g)
    per = {"m0": -1.0 + 0.3 * noise, "m1": -0.99 + 0.3 * noise + 0.2 * torch.randn(200, generator=g),
           "m2": -0.5 + 0.3 * noise, "m3": 0.1 * torch.randn(200, generator=g)}
    assert tied_with_best(per) == {"m0", "m1"}
    assert tied_with_best({k: -v for k, v in per.items()}, best="max") == {"m0", "m1"}


def test_a_clear_gap_is_no_tie_and_a_tiny_sample_is_all_ties():
    """Notebook 01's case in the issue: 0.013 apart out of 1.84 is a tie only if the prompts' noise covers it."""
    g = torch.Generator().manual_seed(1)
    paired = torch.randn(200, generator=g) * 0.2
    clear = {"m0": -1.84 + paired, "m3": -1.827 + paired + 0.001 * torch.randn(200, generator=g)}
    assert tied_with_best(clear) == {"m0"}  # paired and nearly noiseless: the gap is real
    noisy = {"m0": -1.84 + paired, "m3": -1.827 + 0.2 * torch.randn(200, generator=g)}
    assert tied_with_best(noisy) == {"m0", "m3"}


def test_the_interval_tolerance_shrinks_with_more_examples_and_is_seeded():
    few, many = [0.0, 1.0] * 10, [0.0, 1.0] * 1000
    assert interval_tolerance(few) > 3 * interval_tolerance(many)
    assert interval_tolerance(few, seed=3) == interval_tolerance(few, seed=3)
    assert 0.18 < interval_tolerance(few) < 0.26  # the mean's standard error is 0.112: 1.96 of them


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="best must be 'min' or 'max', got 'lowest'"):
        tied_with_best({"a": [1.0, 2.0]}, best="lowest")
    with pytest.raises(ValueError, match="the same examples; got sizes"):
        tied_with_best({"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="empty"):
        tied_with_best({})
    assert "bootstrap interval" in RULE


def test_a_saturated_sweep_cannot_rank_its_options():
    """Two MLPs that each cost the whole range (notebook 01 on the medium zoo model: -1.839 and -1.826 of -1.84)
    tie when the bound is given, however small the noise; one short of the bound by more than 5% does not."""
    g = torch.Generator().manual_seed(2)
    paired = 0.01 * torch.randn(200, generator=g)
    per = {"m0": -1.839 + paired, "m1": -0.867 + paired, "m2": -1.762 + paired, "m3": -1.826 + paired}
    assert tied_with_best(per) == {"m0"}
    assert tied_with_best(per, bound=-1.84) == {"m0", "m3", "m2"}  # -1.762 is 4.2% short of the range
    assert tied_with_best(per, bound=-2.5) == {"m0"}  # nothing at the bound: the interval alone decides


def test_auroc_ties_follow_the_items_noise_and_match_the_roc_module():
    from tutorial_lib.studies.fair import tied_auroc
    from tutorial_lib.methods.recovery import auroc

    g = torch.Generator().manual_seed(3)
    truth = torch.zeros(300, dtype=torch.bool)
    truth[:7] = True
    base = torch.rand(300, generator=g)
    a = base.clone()
    a[:7] += 0.6
    b = a.clone()
    b[6] = 0.05  # one circuit item ranked low: a small AUROC gap, within 7 items' noise
    c = base.clone()  # no signal
    assert abs(auroc(a, truth) - auroc(b, truth)) < 0.15
    assert tied_auroc({"a": a, "b": b, "c": c}, truth) == {"a", "b"}
    many = torch.zeros(300, dtype=torch.bool)
    many[:150] = True
    a2, b2 = base.clone(), base.clone()
    a2[:150] += 0.3
    b2[:150] += 0.1
    assert tied_auroc({"a": a2, "b": b2}, many) == {"a"}  # many items: the gap is real
    with pytest.raises(ValueError, match="at least 2 items in the circuit"):
        tied_auroc({"a": a}, torch.tensor([True] + [False] * 299))


def test_bootstrap_range_of_a_count_covers_it_and_is_seeded():
    from tutorial_lib.studies.fair import bootstrap_range

    g = torch.Generator().manual_seed(4)
    scores = torch.rand(50, generator=g)
    count = lambda idx: float((scores[idx] > 0.5).sum())  # noqa: E731
    lo, hi = bootstrap_range(count, 50)
    assert lo < float((scores > 0.5).sum()) < hi and hi - lo > 4  # a count of ~25 of 50 moves by several
    assert bootstrap_range(count, 50) == (lo, hi)
    with pytest.raises(ValueError, match="at least 2 items"):
        bootstrap_range(count, 1)


def test_whole_numbers_in_rounds_a_count_interval_outward_and_keeps_the_run_s_count():
    from tutorial_lib.studies.fair import whole_numbers_in

    assert whole_numbers_in(2.5, 4.0) == {2, 3, 4}
    assert whole_numbers_in(3.0, 3.0) == {3}
    assert whole_numbers_in(3.0, 3.0, actual=5) == {3, 5}  # the run's own answer is always right
    with pytest.raises(ValueError):
        whole_numbers_in(4.0, 3.0)


def test_tied_over_runs_ties_options_whose_range_over_the_seeds_reaches_the_best():
    """Notebook 03's flip-mode prediction: cell counts that only retraining could resample, two seeds."""
    from tutorial_lib.studies.fair import tied_over_runs

    assert tied_over_runs({"zero": [2, 1], "mean": [2, 3], "resample": [0, 0]}) == {"zero", "mean"}
    assert tied_over_runs({"zero": [2, 2], "mean": [1, 1]}) == {"zero"}  # a gap the seeds agree on is no tie
    assert tied_over_runs({"zero": [2], "mean": [2]}) == {"zero", "mean"}
    assert tied_over_runs({"a": [0.1, 0.2], "b": [0.15, 0.9], "c": [1.0]}, best="min") == {"a", "b"}
    with pytest.raises(ValueError):
        tied_over_runs({"zero": []})
    with pytest.raises(ValueError):
        tied_over_runs({"zero": [1]}, best="most")


def test_a_yes_no_answer_is_open_only_where_an_interval_straddles_the_threshold():
    assert answers_every({"a": (0.3, 0.5), "b": (0.21, 0.4)}, 0.2) == {True}
    assert answers_every({"a": (0.3, 0.5), "b": (0.0, 0.15)}, 0.2) == {False}  # one task wholly below: no
    assert answers_every({"a": (0.3, 0.5), "b": (0.1, 0.25)}, 0.2) == {True, False}
    assert answers_every({"n": (-0.5, -0.1)}, 0.0, side="<") == {True}
    assert answers_every({"n": (0.05, 0.2)}, 0.0, side="<") == {False}
    assert answers_every({"n": (-0.1, 0.2)}, 0.0, side="<") == {True, False}
    assert answers_every({}, 0.2) == {True}  # no task performed: every one of none, as all([]) says
    with pytest.raises(ValueError, match="side must be"):
        answers_every({"a": (0, 1)}, 0.5, side=">")
    with pytest.raises(ValueError, match="reversed"):
        answers_every({"a": (1, 0)}, 0.5)


def test_a_per_seed_number_is_known_to_the_seeds_range_and_the_grid():
    assert runs_range([0.3, 0.3]) == (0.3, 0.3)
    assert runs_range([0.2, 0.3], grid=[0.0, 0.1, 0.2, 0.3, 0.5, 1.0]) == (0.1, 0.5)
    assert runs_range([1.0], grid=[0.5, 1.0]) == (0.5, 1.0)  # the top of the grid: nothing above
    with pytest.raises(ValueError, match="empty"):
        runs_range([])
