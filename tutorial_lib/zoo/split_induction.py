"""Induction rows that can be checked for generality: a seeded held-out half of the vocabulary is never repeated.

The shipped medium recipe repeats only the 241 filler words, and its heads copy only those (issue 30; see
:mod:`tutorial_lib.zoo.copying`). ``MixSpec(induction_vocab="split")`` draws the repeated segments from the
*trained* part of the ordinary tokens instead, and never repeats the seeded *held-out* part
(:func:`split_ids`; half of the ordinary tokens by default). Held-out tokens may still appear in the rows as
plain, unrepeated text (``MixSpec.induction_held_out_text``: the fraction of the plain positions they fill),
so that their embeddings and unembeddings are trained as inputs and as (unpredictable) targets, and the
softmax covers them. A test of copying on the held-out tokens is then a test of induction, not of memory.

The vocabulary can widen step by step (``MixSpec.induction_vocab_curriculum``: ``((step, k), ...)``, from
``step`` on the rows draw from the first ``k`` trained tokens, ``None`` for all of them): a closed softmax
over a few hundred tokens is what let induction heads form at all in this architecture (see
:mod:`tutorial_lib.zoo.multitask`). With ``induction_closed_vocab`` the softmax covers exactly the tokens the
rows can hold at that step; held-out text joins only once the trained vocabulary is at full width.

    >>> from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    >>> tok = zoo_tokenizer()
    >>> held, trained = split_ids(tok, seed=0, fraction=0.5)
    >>> len(held) + len(trained) == len(tok) - len(tok.all_special_ids), set(held.tolist()) & set(trained.tolist())
    (True, set())

The pilots (issue 30)
---------------------

The shipped medium model's heads copy only the 241 filler words its rows repeat
(:mod:`tutorial_lib.zoo.copying`, 32 repeated sequences of 24 tokens, full softmax: 7.41 -> 0.98 nats, 7 heads
>= 0.3, top-1 84%; on the other 2,928 ordinary tokens 9.70 -> 9.30, no head, best 0.18, top-1 0%).
``induction_vocab="split"`` (:mod:`tutorial_lib.zoo.split_induction`) repeats only a seeded half of the ordinary
tokens (1,585 "trained"), never the other half (1,584 "held out"), which joins the rows as unrepeated text.
Pilot A: the medium shape's induction-only warm-up (64 rows of 48 tokens, 3 segments of 2-8, every copy near,
weight 0.1 off the copies, closed softmax over the rows' tokens, the 6,500-step cosine at 3e-3), the vocabulary
widened by ``induction_vocab_curriculum=((0, 256), (2000, 1024), (2400, None))``, held-out text on half the
plain positions from step 2,400; one thread on a loaded 2-core machine, 1.0-1.7 s per step (3,000 steps in
2,527 s; stopped there, resumable from its state). Measured by
:func:`~tutorial_lib.zoo.copying.copying_on_tokens` (loss first -> second pass, heads >= 0.3 / best score, top-1):

====== ============================= ============================= =============================
step   first 256 trained tokens      the other 1,329 trained       1,584 held out
====== ============================= ============================= =============================
1,000  8.48 -> 8.38, 0 / 0.17, 0%    8.27 -> 8.30, 0 / 0.19, 0%    8.28 -> 8.30, 0 / 0.19, 0%
1,250  8.47 -> 5.20, 7 / 0.76, 50%   8.17 -> 8.21, 0 / 0.17, 0%    8.15 -> 8.20, 0 / 0.20, 0%
1,500  8.28 -> 5.96, 7 / 0.60, 31%   8.10 -> 8.11, 0 / 0.18, 0%    8.09 -> 8.10, 0 / 0.19, 0%
1,750  8.17 -> 5.85, 6 / 0.57, 34%   8.09 -> 8.11, 0 / 0.08, 0%    8.08 -> 8.08, 0 / 0.06, 0%
2,000  8.11 -> 6.92, 4 / 0.35, 23%   8.07 -> 8.07, 0 / 0.04, 0%    8.06 -> 8.06, 0 / 0.04, 0%
2,250  8.10 -> 6.13, 8 / 0.43, 33%   8.08 -> 7.69, 2 / 0.36, 10%   8.07 -> 8.09, 0 / 0.08, 0%
2,500  7.67 -> 5.27, 9 / 0.53, 43%   7.79 -> 5.38, 9 / 0.56, 39%   8.69 -> 8.98, 9 / 0.54, 0%
2,750  7.69 -> 6.25, 6 / 0.38, 27%   7.69 -> 6.05, 8 / 0.45, 33%   8.78 -> 8.81, 8 / 0.43, 0%
3,000  7.67 -> 5.39, 7 / 0.46, 39%   7.68 -> 5.58, 8 / 0.46, 37%   8.56 -> 8.51, 3 / 0.37, 0%
====== ============================= ============================= =============================

What it showed: with 256 tokens and a closed softmax the heads formed between steps 1,000 and 1,250 (earlier
than the filler-word recipe's ~1,700); each widening reached the newly admitted tokens within 100-250 steps (the
other trained tokens: 9 heads, 2.4 nats, 39% at 2,500; 8 heads, 2.1 nats, 37% at 3,000). The full softmax keeps
the loss high even on trained tokens (second pass 5.4-5.6 nats): the closed softmax never taught the model to
push the other 1,600-2,900 outputs down. On the held-out tokens the *attention* is general (9
heads >= 0.3, best 0.54: the heads find the token after the earlier occurrence of a token never repeated) but
nothing is copied (loss up 0.28 nats, top-1 0%): a held-out token's embedding and unembedding are never tied by
a copy, so the value/output path maps it to nothing useful (at step 3,000, the direct path E W_OV W_U of the
three best heads ranks a trained token itself ~250th of 3,172, a held-out one ~1,550th: chance). 9 of 32 heads
is also more than a quarter. So the held-out targets (>= 2 nats, top-1 >= 50%, 1-8 heads) are not met, and the
option stays off. What a full build would need: something that ties every token's unembedding to its embedding
without repeating held-out tokens in induction rows (tied or partly tied embeddings, or other copy tasks over the
whole vocabulary, e.g. held-out tokens copied in IOI-like rows), then the mixed phase and restart (9,500 steps,
~2-3 h on one thread here) with the held-out figures and every task target re-measured.

Pilot T (2026-12-03): pilot A's recipe, seed and curriculum with the unembedding *tied* to the embedding
(``W_U = W_E^T`` through a parametrization, so every token's output row is its input row), 3,000 steps on one thread
(3,103 s, the other core busy), the same measurement:

====== ============================= ============================= =============================
step   first 256 trained tokens      the other 1,329 trained       1,584 held out
====== ============================= ============================= =============================
1,000  8.93 -> 7.39, 3 / 0.39, 12%   8.29 -> 8.26, 0 / 0.15, 0%    8.27 -> 8.21, 0 / 0.17, 0%
1,500  8.70 -> 6.97, 5 / 0.40, 19%   8.15 -> 8.14, 0 / 0.06, 0%    8.14 -> 8.15, 0 / 0.05, 0%
2,000  8.39 -> 6.91, 1 / 0.42, 22%   8.09 -> 8.12, 0 / 0.03, 0%    8.09 -> 8.11, 0 / 0.02, 0%
2,250  8.20 -> 6.49, 2 / 0.42, 28%   8.23 -> 7.68, 0 / 0.28, 8%    8.18 -> 8.23, 0 / 0.03, 0%
2,500  7.71 -> 5.40, 4 / 0.61, 47%   7.79 -> 6.10, 4 / 0.53, 33%   8.60 -> 8.51, 0 / 0.18, 0%
2,750  7.76 -> 5.74, 3 / 0.48, 36%   7.77 -> 5.59, 3 / 0.50, 39%   8.63 -> 8.62, 0 / 0.04, 0%
3,000  7.64 -> 5.94, 3 / 0.41, 34%   7.64 -> 5.81, 3 / 0.42, 34%   8.42 -> 8.39, 0 / 0.04, 0%
====== ============================= ============================= =============================

Tying did not make the copy general: the trained tokens behave as in pilot A (a minority of 3-4 heads, a
1.7-2.3 nats drop, 30-39% top-1 once the vocabulary is widened), and on the held-out tokens nothing is copied and
not even the attention generalises any more (best head 0.04-0.18 against pilot A's 0.54). A shared input/output
row is not enough when the held-out embeddings are trained only as unrepeated text: their directions never enter
the subspace the heads' QK and OV circuits were fitted on. The next try is a copy signal over the whole vocabulary
that never repeats a held-out token as an induction target -- e.g. the held-out tokens as names in IOI-like rows,
or a previous-token auxiliary over every token -- and then the full build (~2-3 h on one thread).

Pilot E (2026-12-03): pilot A's recipe plus 32 echo rows per step in every phase (``echo_rows=32``,
:class:`~tutorial_lib.zoo.split_induction.EchoRows`: BOS, distinct ordinary tokens -- held-out ones included --
then a marker, ``' @'`` asking for the previous token or ``' #'`` for the first one; loss on the marker only), so
that every token's output is tied to its input by a copy that never repeats it in a row. One thread, 1.0-1.4 s per
step (3,000 steps in 2,919 s). The first 256 trained tokens: heads between steps 1,250 and 1,500 (1,500: 7 heads,
8.17 -> 5.89 nats, top-1 29%; 1,750: 9 heads, best 0.77, 8.00 -> 3.25, 66%; 2,000: 7.85 -> 4.67, 50%). The held-out
tokens (loss first -> second pass, heads >= 0.3 / best, top-1): 2,250: 8.19 -> 7.24, 3 / 0.41, 8%; 2,500:
8.73 -> 7.01, 9 / 0.48, 4%; 2,750: 8.70 -> 7.24, 9 / 0.54, 3%; 3,000: 8.75 -> 7.73, 7 / 0.50, 2% (all trained
tokens at 3,000: 7.74 -> 5.04, 9 heads, 43%). Better than pilots A and T (a 1.0-1.7 nats drop instead of <= 0.3,
top-1 2-8% instead of 0%), far from the targets, and the held-out top-1 fell as training went on.

Pilot F: from pilot E's state at step 2,500, the ``' #'`` echo rows replaced by marker-induction rows
(``d1 .. d(k-1) # dk .. dL #`` -> ``dk``, all distinct, ``dk`` drawn from every ordinary token, held-out ones
included: the copy (OV) is trained on every token, the match only on the marker). Held out: 2,750: 8.71 -> 7.11,
9 / 0.46, top-1 10% (all trained 7.74 -> 4.70, 46%); 3,000: 8.71 -> 7.27, 7 / 0.47, 7% (trained 49%). A copy
signal over the whole vocabulary helps a little (held-out top-1 2-10%), not enough: the targets (>= 2 nats,
top-1 >= 50%, 1-8 heads) are missed by 0.3-1.0 nats and 40-48 points of top-1.

Pilot G (2026-12-04): pilot A's recipe with a frozen random code shared by the embedding and the unembedding
(``W_E = A + C``, ``W_U = B + C^T`` through parametrizations; ``C`` seeded Gaussian rows scaled to norm 1, never
trained), so that every token, held out or not, has matching input and output directions and an OV/QK map fitted on
the 1,585 trained codes (which span all 128 dimensions) could carry over. One thread, the other core running the
test suite, 0.55-0.8 s per step (3,000 steps in 1,996 s). The same measurement:

====== ============================= ============================= =============================
step   first 256 trained tokens      the other 1,329 trained       1,584 held out
====== ============================= ============================= =============================
1,250  8.60 -> 4.86, 6 / 0.72, 47%   8.42 -> 8.32, 0 / 0.30, 0%    8.34 -> 8.23, 1 / 0.32, 0%
1,500  8.41 -> 3.73, 6 / 0.72, 60%   8.32 -> 8.06, 3 / 0.49, 0%    8.22 -> 7.95, 4 / 0.48, 0%
2,000  8.13 -> 4.09, 6 / 0.68, 54%   8.11 -> 8.10, 0 / 0.23, 0%    8.08 -> 8.08, 0 / 0.24, 0%
2,250  8.11 -> 4.92, 6 / 0.52, 46%   8.11 -> 6.22, 6 / 0.49, 20%   8.10 -> 7.60, 2 / 0.34, 0%
2,500  7.75 -> 5.13, 6 / 0.53, 40%   7.80 -> 5.10, 6 / 0.54, 41%   8.63 -> 8.05, 4 / 0.47, 0%
2,750  7.74 -> 5.13, 6 / 0.53, 41%   7.73 -> 5.39, 4 / 0.54, 37%   8.70 -> 8.27, 4 / 0.51, 0%
3,000  7.69 -> 5.65, 3 / 0.49, 32%   7.68 -> 5.48, 4 / 0.54, 35%   8.77 -> 8.53, 3 / 0.47, 0%
====== ============================= ============================= =============================

The shared code sped up the narrow phase (the first 256 tokens at 60% top-1 by step 1,500, against pilot A's 31%)
and the attention generalised as in pilot A (3-4 heads >= 0.3 on held-out tokens), but the held-out tokens were
still not copied (top-1 0%, a drop of 0.2-0.6 nats): a code of norm 1 beside the trained rows did not make the
value/output path act on it.

Pilot G at scale 4 (2026-12-04; ``C``'s rows of norm 4, everything else the same; one thread, 0.53-0.7 s per step,
the other core mostly idle; paused between steps 1,000 and 1,250). The code's self-match inflates every loss early
(a token's own code predicts the token itself: 12-14 nats, above ln 3,172 = 8.06, until the model cancels it):

====== ============================= ============================= =============================
step   first 256 trained tokens      the other 1,329 trained       1,584 held out
====== ============================= ============================= =============================
1,000  12.32 -> 7.03, 8 / 0.67, 8%   12.04 -> 10.96, 3 / 0.35, 1%  12.00 -> 10.83, 4 / 0.37, 1%
1,500  10.90 -> 5.92, 8 / 0.69, 26%  10.64 -> 9.75, 4 / 0.36, 1%   10.57 -> 9.60, 7 / 0.39, 1%
2,000  9.78 -> 4.28, 8 / 0.70, 49%   9.60 -> 8.42, 7 / 0.41, 2%    9.52 -> 8.33, 7 / 0.45, 3%
2,250  8.37 -> 3.62, 8 / 0.61, 60%   8.51 -> 5.02, 8 / 0.57, 39%   8.41 -> 5.75, 8 / 0.52, **28%**
2,500  7.80 -> 3.66, 8 / 0.61, 77%   7.91 -> 4.33, 8 / 0.56, 62%   8.57 -> 6.46, 8 / 0.49, 15%
2,750  7.71 -> 3.34, 8 / 0.60, 82%   7.84 -> 3.53, 8 / 0.61, 74%   8.69 -> 6.91, 8 / 0.48, 7%
====== ============================= ============================= =============================

The first copy that carried over to tokens never repeated: at step 2,250 (the rows widened to 1,024 trained tokens
at 2,000) the held-out tokens dropped 2.66 nats, with 8 heads >= 0.3 and top-1 28%, tracking the trained tokens not
yet admitted (39%). Then held-out text joined the rows (step 2,400) and their copying fell (15%, then 7%) while
the trained tokens' rose to 74-82%: a row holding a held-out token never repeats it, and the model learns exactly
that (the held-out text is negative evidence about those tokens). Hence pilot H: the same, with no held-out text
in the induction rows.

Pilot H (2026-12-04): pilot G at scale 4 (the code is :mod:`tutorial_lib.zoo.shared_code`) with no held-out text in
the induction rows (``induction_held_out_text=0``), run twice side by side, one thread each (0.6-0.7 s per step):
H2 with nothing else, H1 with 32 echo rows per step (held-out tokens as text and as copied targets, loss on the
marker only). H2 is pilot G's run bit for bit up to step 2,400, so its table continues pilot G's 2,250 row:

====== ============================= ============================= =============================
step   first 256 trained tokens      the other 1,329 trained       1,584 held out
====== ============================= ============================= =============================
H2     no held-out text, no echo rows
2,500  8.16 -> 3.52, 8 / 0.64, 76%   8.23 -> 3.76, 8 / 0.62, 71%   8.23 -> 4.88, 8 / 0.57, **52%**
2,750  8.08 -> 3.94, 8 / 0.63, 76%   8.13 -> 4.13, 8 / 0.64, 72%   8.09 -> 5.38, 8 / 0.58, **51%**
3,000  8.10 -> 4.12, 8 / 0.63, 77%   8.15 -> 3.86, 8 / 0.64, 76%   8.09 -> 5.16, 8 / 0.55, **53%**
H1     32 echo rows per step
1,000  8.01 -> 3.70, 8 / 0.70, 57%   8.91 -> 8.65, 0 / 0.16, 1%    8.97 -> 8.73, 0 / 0.18, 1%
2,000  8.43 -> 3.95, 8 / 0.70, 62%   8.31 -> 8.26, 0 / 0.08, 0%    8.33 -> 8.29, 0 / 0.10, 1%
2,500  8.17 -> 3.25, 8 / 0.69, 75%   8.31 -> 4.81, 8 / 0.54, 48%   8.13 -> 6.17, 7 / 0.39, 30%
3,000  8.19 -> 3.37, 8 / 0.67, 75%   8.23 -> 3.99, 8 / 0.57, 64%   8.10 -> 5.88, 7 / 0.41, 34%
====== ============================= ============================= =============================

H2 met the three held-out targets in the induction-only phase from step 2,500 on (a 2.7-3.4 nat drop, 8 of 32
heads >= 0.3 -- exactly a quarter, the most allowed -- and top-1 51-53%), the first recipe to do so. Echo rows
(H1) formed the heads sooner on the first 256 tokens (57% at step 1,000) but kept their attention narrow until
the rows widened, and reached 34% held-out top-1 by 3,000. In H2 the held-out tokens are in no induction row at
all: 320 of the 1,584 enter training as the task words they are (names, years, digits, colours of the held-out
half; counted over the medium mix's task pools), the other 1,264 only as outputs of every full-softmax row (pushed
down there), the code giving each of them matching input and output directions; held-out
text in the induction rows is what taught pilot G not to copy them. The full build of H2's recipe (the shipped
mix and schedule with ``induction_vocab="split"``, the curriculum above, ``train["shared_code"] = {"scale": 4.0,
"seed": 1234}``) is the candidate for the shipped medium model; whether the tasks and the mixed phase keep the
held-out copying is what it has to show.

The candidate's full build (``scripts/zoo_general_candidate.py``, one thread, 0.55 s per warm-up step and ~0.65 per
mixed step with tests on the other core; up to step 2,000 it matched H2 to every printed digit). Read from its
training state (trained tokens | held-out tokens, as above):

====== ================================ ================================
step   1,585 trained tokens             1,584 held out
====== ================================ ================================
2,000  9.59 -> 8.14, 8 / 0.44, 5%       9.52 -> 8.33, 7 / 0.45, 3%
2,750  8.10 -> 0.18, 8 / 0.91, 100%     8.30 -> 1.31, 8 / 0.82, 90%
3,000  8.19 -> 0.23, 8 / 0.92, 100%     8.16 -> 1.27, 8 / 0.84, 91%
3,250  8.20 -> 0.18, 8 / 0.90, 100%     8.02 -> 1.56, 8 / 0.81, 88%
4,250  8.08 -> 0.18, 8 / 0.91, 100%     8.12 -> 1.88, 8 / 0.81, 82%
5,250  8.03 -> 0.17, 8 / 0.89, 100%     8.14 -> 1.97, 8 / 0.78, 83%
6,500  8.05 -> 0.16, 8 / 0.89, 100%     8.11 -> 2.04, 8 / 0.77, 82%
7,750  7.97 -> 0.16, 8 / 0.89, 100%     8.21 -> 2.22, 8 / 0.77, 76%   (restart step 1,250)
9,500  7.96 -> 0.17, 8 / 0.90, 100%     8.21 -> 2.23, 8 / 0.79, **79%**  (the final weights)
====== ================================ ================================

The tasks joining at step 2,500 *sharpened* the copying (held-out top-1 52% -> 90% within 250 steps: the task rows'
full softmax taught the model to push every other output down), and it held at 82-91% through step 6,500. The
held-out task metrics at step 6,500 (end of the first cycle; ``evaluate_multitask``): greater-than 0.944 / 0.084,
IOI 99.75%, multiple choice 100%, boolean 90.0%, addition **24%** (the shipped recipe had 80% there, before its
restart lifted it to 95%). The 8 heads >= 0.3 are *all* of layer 1 (a1.h0-h7; 8 of 32, exactly a quarter), where
the shipped model's 7 sit in layers 2-3: notebook 03's layer-matched control, which ablates at most half a layer,
may find such a redundant layer's half non-causal. Both are what the restart and the notebook claims must settle.
At step 7,750 (1,250 steps into the restart): addition 42.25%, boolean 87.5%, greater-than 0.925 / 0.087, IOI and
multiple choice 100%. The final model (9,500 steps, 6,075 s of training on one thread): greater-than 0.949 / 0.096,
IOI 100%, multiple choice 100%, boolean 93.0%, addition **92.5%** (target 95%: the one target missed, by 2.5
points), and on the held-out tokens a 5.98-nat drop, 8 of 32 heads >= 0.3 (all of layer 1) and top-1 79%: every
held-out target met.

Notebook 03's step 3 on the candidate (``studies.spectral_loaded.induction_minority``, 128 probe sequences of its
held-out tokens, one thread, 2 s): all 8 layer-1 heads pass the 50x filter (98-132x; 8 of 32, a minority at its
limit); the tested half (a1.h0, h1, h3, h5, the most selective) takes planted-pair top-1 from 67% to 14.9%, and the
only possible layer-matched draw -- the layer's other four heads, themselves filtered induction heads -- to 19.8%
(p = 0.23): ``03.loaded-causal``, which holds on the shipped model, fails. The paper's matched-random control
ablates heads of the same layers that the filter did *not* select; a layer the filter selects whole has none, so
no recipe whose copying heads fill one layer can pass step 3. The candidate is therefore not shipped even with
addition fixed: the next recipe must spread its copying heads (at most half of any layer).

Pilot J (``--warmup-steps 0``: the candidate's recipe with the tasks from step 0, no induction-only phase; one
thread, 0.65 s per step): with the code, copying heads formed even so, by step 1,500 -- on the first 256 trained
tokens 7.76 -> 0.42 nats, 8 heads >= 0.3 (best 0.95), top-1 98%; held-out 2% (the rows' vocabulary was still 256
wide) -- and again they were all eight heads of layer 1. Having the tasks beside them does not spread them (stopped).

A longer restart for addition (pilot rA: the candidate's first cycle, then a restart of 4,000 steps instead of 3,000,
the same peak lr 1e-3; 4,000 steps in 2,800 s on one thread): at restart step 1,750 addition 91% (the 3,000-step
restart had 42% at 1,250), at 3,000 98.5%; final (10,500 steps): greater-than 0.953 / 0.095, IOI 100%, multiple
choice 100%, boolean 94.5%, addition **98.25%**, held-out tokens 8.26 -> 2.29 nats, 8 heads (all of layer 1), top-1
77%: every task and held-out target met -- and still no control for step 3.

Pilot K (``train["warmup_heads"] = 4``: through the 2,500-step induction-only warm-up only heads 0-3 of each layer
work -- the others' ``W_O`` is zero and gets no gradient -- and at its end those heads start from their initial
weights; otherwise the candidate's recipe, with rA's 4,000-step restart). The copying heads formed in the working
half (a1.h0-h3 at step 1,250: on the first 256 tokens 11.50 -> 6.65 nats, 4 heads, top-1 18%), and when the other
heads joined with the tasks they took no part in copying. Step 2,750 (250 steps after the tasks joined): held-out
tokens 8.92 -> 2.54 nats, 4 of 32 heads >= 0.3 (a1.h0-h3, best 0.86), top-1 62%; trained tokens 99%. Notebook 03's
step 3 there (as above): 4 of 32 heads pass the filter (a1.h0-h3), their ablation takes planted-pair top-1 from 64%
to 0.0%, the layer-matched control (a1.h4-h7, heads the filter did not select) leaves 61.2%, p = 1e-4: the control
exists and the claim holds. But the held-out copying then faded: step 3,750 8.41 -> 3.92 nats, top-1 32%; 4,250
8.30 -> 3.85, 35% (same 4 heads; trained tokens 100%). At 3,750 the wrong second-copy predictions (501 of 736) were
task words -- " 198", " 2", " 193", names -- half of them held out and half trained, and the right token's median
rank was 3: four heads' copy no longer beat the tasks' favourite outputs, which the induction rows' closed softmax
never sets a copy against. Pilots K2b and K3b resume K's step-3,750 state with one change each (K stopped there):

* K3b, the induction rows under the full softmax once the tasks join (``induction_closed_vocab_mixed=False``): the
  held-out tokens were pushed down with every other output the rows never hold -- step 4,000: 11.95 -> 7.09 nats,
  top-1 9% (stopped).
* K2b, 16 plain rows per step in the mixed phase (:class:`PlainRows`: 24 distinct tokens from every ordinary token,
  each next token a target at weight 0.25, full softmax): step 4,000: 8.06 -> 3.55 nats, top-1 41%; 4,500: 8.05 ->
  3.57, 48% (K without them: 35% at 4,250); 4,750: 48%; 5,250: 8.07 -> 3.38, **55%**; 6,000: 54%; 6,500 (the end
  of the first cycle): 8.07 -> 3.46, 54%, the same 4 heads throughout. Notebook 03's step 3 at 6,500: 4 of 32 heads
  pass, ablated 63% -> 0.0%, control (a1.h4-h7) 44.6%, p = 1e-4. 500 steps into the 4,000-step restart (fresh AdamW,
  peak lr 1e-3): 8.09 -> 3.72, **42%** -- the restart's first steps cost 12 points (the stop-38 candidate lost 6 over
  its restart); resumed later: restart step 1,250: 8.09 -> 3.62, 46%, the same 4 heads; task metrics there:
  greater-than 0.899 / 0.079, IOI 99.8%, multiple choice 100%, boolean 92.7%, addition 12% (addition rises late in a
  restart: rA had 91% only at 1,750).
* K2c, 32 plain rows at weight 0.5: step 4,000: 8.08 -> 3.70, top-1 45% (K2b 41% there; stopped to free the core).

K2b's restart, resumed to its end (2026-12-04; 4,000 steps in 2,664 s of one thread, the other core training too):
held-out top-1 45% at restart step 1,750, 53% at 2,500 and **57%** at the end (8.07 -> 3.66 nats, the same 4 heads,
best 0.84; trained tokens 100%): the restart first costs held-out copying and gives it back as its lr decays. But
addition ended at **51.75%** (from 23.7% at the end of the first cycle; greater-than 0.953 / 0.094, IOI 100%,
multiple choice 100%, boolean 95.0%), where rA's restart of the all-layer-1 candidate reached 98.25% from 24%.
Restart variants from K2b's first cycle (one thread each, both cores busy):

* RB, no plain rows in the restart: restart step 1,000: held-out top-1 36%, addition 9.2%; 1,750: addition 17.2%.
* RC, plain rows at weight 0.05 in the restart: 750: held-out 41%, addition 5.0%; 1,500: addition 17.5%.

Both as slow on addition as K2b's own restart (12% at 1,250), so the plain rows in the restart are not what slows
addition (rA: 91% at 1,750); both stopped at those steps.

Two more restart variants from the same state, run to the end or stopped early (one thread each):

* RE, the addition rows doubled in the restart (192 + 96 per step): addition 7.5% at 500, 16.3% at 1,250 -- barely
  faster than K2b's (stopped).
* RD, restart peak lr 2e-3 instead of 1e-3 (4,000 steps, 2,886 s): addition 6.8% at 750, 38% at 1,500, 82.8% at
  2,500 and **88.25%** at the end; held-out top-1 40% at 1,500, 43% at 2,500 and **50.4%** at the end (8.08 ->
  3.89 nats, 4 heads a1.h0-h3, best 0.84; trained tokens 100%); greater-than 0.953 / 0.089, IOI 100%, multiple
  choice 100%, boolean 96.25%. Every held-out target met (top-1 by 0.4 points) and every task target but addition
  (by 6.75 points): not shipped.

So with the copying heads in half of layer 1, addition is learned more slowly in the restart than with all 8 layer-1
heads copying (rA), and a faster restart costs held-out copying that the lr's decay only partly gives back. The
branch point matters too: K2b's first cycle had lost held-out copying (32% at 3,750) before its plain rows joined.

K2 (K's recipe with the plain rows from step 2,500, where the tasks join, built from step 0; stopped at 3,250 to
free the core for the restart variants): step 3,250: held-out 8.07 -> 2.79 nats, 4 heads (a1.h0-h3, best 0.88),
top-1 **66%** (K without plain rows: 32% at 3,750), trained tokens 100%. Resumed with a 6,000-step restart at peak
lr 2e-3 (``--plain 16 --plain-from 0 --restart-steps 6000 --restart-lr 2e-3``), the next candidate: step 5,500
63%; the end of its first cycle (6,500; 4,560 s of training, the other core busy): held-out 8.09 -> 3.21 nats,
4 heads (a1.h0-h3, best 0.88), top-1 **63%** (K2b: 54% there); greater-than 0.943 / 0.081, IOI 99.8%, multiple
choice 100%, boolean 92.0%, addition 23.3%; notebook 03's step 3 on 128 held-out probe sequences: 4 of 32 heads
pass, ablated 57% -> 0.0%, control (a1.h4-h7, unselected) 56.2%, p = 1e-4.

K2's restart (6,000 steps at peak lr 2e-3; 2026-12-04, resumed from restart step 250, one thread, 0.65-0.7 s per
step with a second pilot on the other core; 8,509 s of training for the whole 12,500-step build). Addition is
learned fast from this branch point -- 85.5% at restart step 1,500 (RD, from K2b's: 38%), 99.0% at 2,500 -- but
held-out copying fell and did not come back as the lr decayed: held-out top-1 36% at 1,500, 32% at 2,500, 39% at
3,500, 39% at 5,250, **42.7%** at the end (8.08 -> 4.28 nats, 4 heads a1.h0-h3, best 0.84; trained tokens 100%).
Every task target met with room -- greater-than 0.966 / 0.095, IOI 100%, multiple choice 100%, boolean 98.25%,
addition **99.75%** -- and notebook 03's step 3 holds (4 of 32 heads pass; ablated 46% -> 0.0%, control a1.h4-h7
43.0%, p = 1e-4), but held-out top-1 misses its target by 7.3 points: not shipped.

K2r1, the same branch point with a 4,000-step restart at peak lr 1e-3: held-out top-1 52% at restart step 750 and
50% at 1,750, but addition only 27.5% at 1,750 (greater-than 0.915 / 0.098, boolean 91.0%; stopped there). So from
K2's first cycle, 1e-3 keeps the copying and learns addition slowly, 2e-3 learns addition in 2,500 steps and costs
20 points of held-out top-1 for good. K2r15p (1.5e-3, 32 plain rows at weight 0.5 in the restart) went K2's way: 1,250
steps in, held-out top-1 42%, addition 39% (stopped).

Where K2's restart lost the copying: its final weights with some parameter groups put back as the first cycle left
them (held-out top-1; 43% as trained, 63% at the first cycle's end): ``W_E`` 47%, ``W_U`` and ``b_U`` 54%, both
**56%** (trained tokens 100% throughout); any block put back instead makes it worse (layer 0 28%, layer 1 32%,
layers 2-3 30%), as it breaks what the restart built on. So most of the loss is the drift of the embedding and
unembedding, which only the tasks' rows move in a restart (the held-out tokens are never a copy target there). The
swapped model is no recipe (addition 40.5%, multiple choice 75.2%: the blocks were fitted to the drifted embedding),
hence pilot K2f: a restart that leaves ``W_E``, ``W_U`` and ``b_U`` as the first cycle made them
(``train["restart"]["frozen"] = ["embed.", "unembed."]``), 3,000 steps at 2e-3. Restart step 1,250: held-out top-1
**57%** (8.10 -> 3.27 nats, 4 heads; K2 at 1,500: 36%), addition 22.3%, greater-than 0.886 / 0.070, boolean 85.0%;
2,250: held-out 66%, addition 64.7%; the end (9,500 steps; 6,381 s of training for the whole build, the other core
training too): held-out tokens 8.08 -> 3.08 nats, 4 of 32 heads >= 0.3 (a1.h0-h3, best 0.87), top-1 **66%** --
more than at the first cycle's end -- trained tokens 100%; greater-than 0.949 / 0.084, IOI 99.75%, multiple choice
100%, boolean 94.75%, addition **68.5%**: every target but addition. Freezing the embedding keeps the held-out
copying through a fast restart; 3,000 steps are too few for addition with the embedding frozen (K2, training it:
99% at 2,500). Pilot K2f6, the same restart over 6,000 steps, is the next candidate.

K2f6 (2026-12-04; 12,500 steps, 8,315 s of training for the whole build, one thread, pilot K2f and
the test suite on the other core): restart
step 2,500: addition 84.3%, held-out top-1 54%; 4,500: addition 97.0%, held-out 60%, greater-than 0.952 / 0.078,
boolean 96.5%; the end: greater-than 0.963 / 0.096, IOI 100%, multiple choice 100%, boolean 97.75%, addition
**97.0%**; held-out tokens 8.08 -> 3.20 nats (a 4.87-nat drop), 4 of 32 heads >= 0.3 (a1.h0-h3, best 0.88), top-1
**65.6%**; trained tokens 100%. Notebook 03's step 3 (128 held-out probe sequences): 4 of 32 heads pass, ablated 70%
-> 0.0%, control (a1.h4-h7) 67.8%, p = 1e-4. Every target met (the library build resumed from its state
reproduced these figures into a manifest; tests/test_zoo.py and tests/test_copying.py passed on it).

K2f6 rebuilt by the library (2026-12-05; one process from step 0, one thread, 7,759 s): greater-than 0.963 / 0.096,
IOI, multiple choice 100%, boolean 97.5%, addition 98.5%; held-out 8.07 -> 3.04 nats, 4 heads (a1.h0-h3), top-1 67.4%
(near the pilot's, not bit for bit; where they part was not traced). Not shipped: notebook 02's claims fail on
it (boolean reuse@75 at K = 10% 0.193 above random, needs 0.2; S_P vs type-matched control, boolean 0.203 vs 0.188,
p = 0.357, multiple choice 0.562 vs 0.750), and notebook 00's MLP claim at quick size (-12.11 vs heads' 13.30).
Notebooks 01, 03, 04, 05 pass. Edits: ``.zoo-build/issue30-ship.patch``; manifest entry (sha256):
``.zoo-build/issue30-rebuild-manifest-entry.json``.

The library build with K2b's settings, from step 0, matched pilot K's checkpoints at steps 0-1,000 bit for bit.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..tasks.induction import induction_batch


def ordinary_ids(tokenizer, exclude=()) -> Tensor:
    """Every non-special token id of ``tokenizer`` (less ``exclude``), in id order."""
    skip = set(tokenizer.all_special_ids) | set(exclude)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in skip], dtype=torch.long)


def split_ids(tokenizer, seed: int = 0, fraction: float = 0.5) -> tuple[Tensor, Tensor]:
    """``(held_out, trained)``: a seeded split of the ordinary (non-special) token ids. ``held_out`` is
    sorted; ``trained`` keeps the seeded order, so that its first ``k`` ids are a random ``k`` of them
    (the curriculum's narrow vocabularies)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the held-out fraction must lie strictly between 0 and 1, got {fraction!r}")
    ordinary = ordinary_ids(tokenizer)
    perm = ordinary[torch.randperm(len(ordinary), generator=torch.Generator().manual_seed(int(seed)))]
    k = int(round(fraction * len(ordinary)))
    return perm[:k].sort().values, perm[k:]


class SplitInductionRows:
    """``rows(step, g) -> (tokens, loss_mask, vocab)``: ``n`` induction rows whose repeats use trained tokens only.

    ``vocab`` is the closed softmax's token set (``None`` when ``spec.induction_closed_vocab`` is off).
    """

    def __init__(self, tokenizer, spec, n: int, near: float):
        self.spec, self.n, self.near = spec, n, near
        self.held, self.trained = split_ids(tokenizer, spec.induction_held_out_seed, spec.induction_held_out_fraction)
        self.bos = tokenizer.bos_token_id
        stages = sorted(spec.induction_vocab_curriculum or [(0, None)])
        if stages[0][0] != 0:
            raise ValueError(f"induction_vocab_curriculum must start at step 0, got {stages}")
        for _, k in stages:
            if k is not None and not spec.induction_seq_len <= k:
                raise ValueError(f"a curriculum width of {k} tokens is below the row length {spec.induction_seq_len}")
        self.stages = stages

    def width(self, step: int) -> int:
        """How many trained tokens the rows draw from at ``step``."""
        k = [k for s, k in self.stages if s <= step][-1]
        return len(self.trained) if k is None else min(int(k), len(self.trained))

    def __call__(self, step: int, g: torch.Generator) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        spec = self.spec
        k = self.width(step)
        allowed = self.trained[:k]
        lo, hi = spec.induction_len
        d = induction_batch(allowed, self.bos, self.n, spec.induction_seq_len, g, lo, hi, spec.induction_segments,
                            near=self.near)
        tokens, vocab = d.tokens, allowed
        if k == len(self.trained) and spec.induction_held_out_text:
            tokens = self._held_out_text(d.tokens, d.repeat_mask, g)
            vocab = torch.cat([allowed, self.held])
        return tokens, d.loss_mask, (vocab if spec.induction_closed_vocab else None)

    def _held_out_text(self, tokens: Tensor, repeat: Tensor, g: torch.Generator) -> Tensor:
        """Put distinct held-out tokens on a fraction of the plain positions (neither a copy nor its source)."""
        n, T = tokens.shape
        copied = torch.where(repeat, tokens, -1)
        source = (tokens[:, :, None] == copied[:, None, :]).any(-1) & ~repeat
        plain = ~repeat & ~source
        plain[:, 0] = False  # BOS
        pick = plain & (torch.rand(n, T, generator=g) < self.spec.induction_held_out_text)
        fresh = self.held[torch.rand(n, len(self.held), generator=g).argsort(1)[:, :T]]
        return torch.where(pick, fresh, tokens)


class EchoRows:
    """``rows(g) -> (tokens, loss_mask)``: copy rows over *every* ordinary token that never repeat one inside a row.

    A row is BOS, ``L`` distinct ordinary tokens (``lengths``: L drawn uniformly, both ends included), then a marker;
    the answer after the marker is a token of the row: the one just before it (marker ``" @"``, the first half of the
    rows) or the first one (marker ``" #"``, the second half). Every token, the held-out ones included, is thus an
    input and a copied output, so the path from a position's token to the output is trained for all of them, while no
    row holds a token twice: a held-out token is never the second occurrence an induction head could match
    (issue 30; figures in this module's docstring).
    """

    MARKERS = (" @", " #")

    def __init__(self, tokenizer, n: int, lengths: tuple = (6, 30)):
        lo, hi = (int(x) for x in lengths)
        if not 1 <= lo <= hi:
            raise ValueError(f"echo row lengths must satisfy 1 <= lo <= hi, got {lengths!r}")
        self.n, self.lo, self.hi = int(n), lo, hi
        self.markers = [tokenizer.convert_tokens_to_ids(m) for m in self.MARKERS]
        if any(m is None or m == tokenizer.unk_token_id for m in self.markers):
            raise ValueError(f"the tokenizer has no single token for the echo markers {self.MARKERS}")
        self.ordinary = ordinary_ids(tokenizer, exclude=self.markers)
        if len(self.ordinary) < hi:
            raise ValueError(f"echo rows of up to {hi} distinct tokens need that many ordinary tokens, "
                             f"the tokenizer has {len(self.ordinary)}")
        self.bos, self.pad = tokenizer.bos_token_id, tokenizer.pad_token_id

    def __call__(self, g: torch.Generator) -> tuple[Tensor, Tensor]:
        n, lo, hi = self.n, self.lo, self.hi
        L = torch.randint(lo, hi + 1, (n,), generator=g)
        T = int(L.max()) + 3
        pick = self.ordinary[torch.rand(n, len(self.ordinary), generator=g).argsort(1)[:, :hi]]
        rows = torch.arange(n)
        pos = torch.arange(T)[None, :]
        tokens = torch.full((n, T), self.pad, dtype=torch.long)
        tokens[:, 0] = self.bos
        inside = (pos >= 1) & (pos <= L[:, None])
        w = min(hi, T - 1)
        body = torch.full((n, T), self.pad, dtype=torch.long)
        body[:, 1: w + 1] = pick[:, :w]
        tokens = torch.where(inside, body, tokens)
        previous = rows < n // 2  # the first half copies the token before the marker, the rest the first token
        tokens[rows, L + 1] = torch.where(previous, self.markers[0], self.markers[1])
        tokens[rows, L + 2] = torch.where(previous, pick[rows, L - 1], pick[:, 0])
        mask = torch.zeros(n, T, dtype=torch.long)
        mask[rows, L + 1] = 1
        return tokens, mask


class PlainRows:
    """``rows(g) -> (tokens, loss_mask)``: rows of ``length`` distinct ordinary tokens after BOS, drawn uniformly
    from *every* ordinary token, every next token a target (weight ``weight``), under the full softmax.

    Nothing in a plain row repeats, for held-out and trained tokens alike, so the rows teach no rule about which
    tokens repeat; they make every held-out token what issue 30 asks it to be besides -- ordinary text and a
    prediction target -- so that the full-softmax task rows are not the only place its output is trained (there it
    is only ever pushed down). Pilot K2 (figures in the module docstring).
    """

    def __init__(self, tokenizer, n: int, length: int = 24, weight: float = 1.0):
        self.ordinary = ordinary_ids(tokenizer)
        if not 1 <= int(length) <= len(self.ordinary):
            raise ValueError(f"plain rows of {length!r} distinct tokens: need 1 to {len(self.ordinary)}")
        if not weight > 0:
            raise ValueError(f"plain row weight must be > 0, got {weight!r}")
        self.n, self.length, self.weight, self.bos = int(n), int(length), float(weight), tokenizer.bos_token_id

    def __call__(self, g: torch.Generator) -> tuple[Tensor, Tensor]:
        pick = self.ordinary[torch.rand(self.n, len(self.ordinary), generator=g).argsort(1)[:, :self.length]]
        tokens = torch.cat([torch.full((self.n, 1), self.bos, dtype=torch.long), pick], 1)
        mask = torch.full(tokens.shape, self.weight)
        mask[:, -1] = 0.0  # the last position has no next token
        return tokens, mask

