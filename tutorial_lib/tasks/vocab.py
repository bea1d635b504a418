"""Every word the zoo tokenizer knows: the task generators' words plus filler words.

The zoo tokenizer (:mod:`tutorial_lib.tasks.word_tokenizer`) is word-level: a word it was not built with
becomes ``<|unk|>``. So this module lists *every* word any task generator writes, grouped by the task
that uses it, and the task modules import their word lists from here -- one source of truth, so a task
cannot use a word the tokenizer lacks. Numbers, punctuation and the newline need no listing: the
tokenizer adds ``"0"``..``"999"`` (with and without a leading space), ``"00"``..``"09"`` and the usual
punctuation marks itself.

Every noun, name, place, object, colour, animal and filler word here is also a single token in GPT-2's
tokenizer when written with a leading space (checked by ``tests/test_task_tokenizers.py``), so the
tasks drop nothing on either tokenizer. (Template words such as ``Compute`` may span several GPT-2
tokens; that is harmless because every prompt of a template then has the same length.)

>>> from tutorial_lib.tasks.vocab import WORDS, NOUNS, NAMES
>>> len(NOUNS), "war" in NOUNS, "Mary" in NAMES
(120, False, True)
"""
from __future__ import annotations

# --- greater-than (Hanna et al. 2023): the paper's 120 nouns, verbatim ---------------------------
NOUNS = """abduction accord affair agreement appraisal assaults assessment attack attempts campaign
captivity case challenge chaos clash collaboration coma competition confrontation consequence
conspiracy construction consultation contact contract convention cooperation custody deal decline
decrease demonstrations development disagreement disorder dispute domination dynasty effect effort
employment endeavor engagement epidemic evaluation exchange existence expansion expedition experiments
fall fame flights friendship growth hardship hostility illness impact imprisonment improvement
incarceration increase insurgency invasion investigation journey kingdom marriage modernization
negotiation notoriety obstruction operation order outbreak outcome overhaul patrols pilgrimage plague
plan practice process program progress project pursuit quest raids reforms reign relationship
retaliation riot rise rivalry romance rule sanctions shift siege slump stature stint strikes study test
testing tests therapy tour tradition treaty trial trip unemployment voyage warfare work""".split()
GREATER_THAN_WORDS = "The lasted from the year to started in and ended".split()

# --- IOI ----------------------------------------------------------------------------------------
NAMES = """Mary John Tom James Dan Sid Martin Amy Paul Kate Lisa Anna Mark David Michael Sarah Laura
Alex Ben Sam Jack Chris Matt Mike Steve Tim Eric Adam Andrew Brian Jason Kevin Peter Ryan Scott Jeff
Joe Bob Emma Grace Rose Jane Alice Emily Rachel Jessica Helen Claire Victoria Henry George Frank Lucy
Sophie Max Luke Carl Jim Bill Anne Maria Linda Susan Karen Nancy Daniel Thomas Robert William Richard
Charles Joseph Simon Jacob Jon Ann Eva Leo Ian Ray Roy Dave""".split()
PLACES = "store garden restaurant school hospital office station park house beach market library".split()
OBJECTS = "drink ring kiss bone basketball computer necklace snack apple book letter ball".split()
IOI_WORDS = "When After While and went to the were at arrived met gave handed a".split()

# --- addition and boolean logic (Li & Subramani 2026) -------------------------------------------
ADDITION_WORDS = ["Compute"]
BOOLEAN_WORDS = "Evaluate true false and or not".split()

# --- copy-colours multiple choice ----------------------------------------------------------------
COLORS = """red blue green yellow orange purple pink brown black white gray cyan tan gold silver
violet navy lime olive""".split()
ANIMALS = """owl dog cat horse cow pig fox wolf bear lion tiger mouse rabbit duck goat sheep eagle frog
snake bee ant elephant ape ox hawk crow deer bat whale shark seal monkey camel turtle spider""".split()
MULTIPLE_CHOICE_WORDS = "Question An A a an is What color Answer B C D".split()

# --- filler words (the induction task samples random word tokens from these) --------------------
FILLER = """time person way day thing man world life hand part child eye woman place week case point
government company number group problem fact water room mother area money story month lot right study
night word business issue side kind head service friend father power hour game line end member law car
city community name president team minute idea kid body information back parent face others level
office door health art war history party result change morning reason research girl guy moment air
teacher force education foot boy age policy music market sense nation plan college interest death
experience effect use class control care field development role effort rate heart drug show leader
light voice wife police mind price report decision son view relationship town road arm difference
value building action model season society tax director position player record paper space ground form
event official matter center couple site project activity star table need court oil situation cost
industry figure street image phone data picture practice piece land product doctor wall patient worker
news test movie north love support technology step baby computer type attention film tree source
organization hair window evidence population truth song energy river bird stone cloud rain snow wind
fire sea hill lake forest island bridge ship train boat plane glass chair bed cup box shoe coat hat
big small old new good bad long short high low hot cold fast slow happy sad early late young strong""".split()


def _unique(words):
    seen, out = set(), []
    for w in words:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


TASK_WORDS = _unique(
    NOUNS + GREATER_THAN_WORDS + NAMES + PLACES + OBJECTS + IOI_WORDS + ADDITION_WORDS
    + BOOLEAN_WORDS + COLORS + ANIMALS + MULTIPLE_CHOICE_WORDS
)
#: Filler words that no task template uses (safe for random-token sequences).
FILLER_WORDS = [w for w in _unique(FILLER) if w not in set(TASK_WORDS)]
#: Every word the zoo tokenizer is built with (each is added with and without a leading space).
WORDS = TASK_WORDS + FILLER_WORDS
