"""The README is a user's guide: short, its sections in a fixed order, its links resolving, no findings given away.

Everything else lives in ``docs/``, one page per topic; links between the README and those pages must resolve.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_WORDS = 1500
SECTIONS = ["What this course is, and who it is for", "How to start", "The course", "Models, by device",
            "What a claim's outcome means", "Running the tests", "Read more"]
DOCS = ["models-and-devices", "zoo", "methods-and-architectures", "performance", "colab-and-release", "development"]


def visible(text: str) -> str:
    """The text a reader sees: HTML comments (the figure blocks' markers and records) removed."""
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", path.read_text()) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", path.read_text(), re.M)


def test_readme_is_at_most_about_1500_words():
    words = len(visible(README.read_text()).split())
    assert words <= MAX_WORDS, f"README.md has {words} words (at most {MAX_WORDS}): move the detail to docs/"


def test_readme_sections_in_order():
    found = re.findall(r"^## (.+?)\s*$", README.read_text(), re.M)
    assert found == SECTIONS, f"README's sections are {found}, expected {SECTIONS} in that order"


def test_every_docs_page_exists_and_the_readme_links_it():
    targets = links(README)
    for page in DOCS:
        assert (ROOT / "docs" / f"{page}.md").is_file(), f"docs/{page}.md is missing"
        assert f"docs/{page}.md" in targets, f"README does not link docs/{page}.md"


@pytest.mark.parametrize("path", [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path):
    broken = []
    for link in links(path):
        if re.match(r"[a-z]+:", link):  # http(s), mailto: checked elsewhere (the Colab links) or not at all
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            broken.append(link)
        elif anchor and file.suffix == ".md":
            slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                     for h in re.findall(r"^#+ (.+?)\s*$", file.read_text(), re.M)}
            if anchor not in slugs:
                broken.append(link)
    assert not broken, f"{path.relative_to(ROOT)} links to what is not there: {broken}"


def test_readme_gives_no_notebook_findings_away():
    """No recorded figure block of a notebook's results, and no scores that a notebook asks the learner to predict."""
    text = README.read_text()
    for nb in ("01", "02", "03", "04", "05"):
        assert f"figures:{nb}" not in text, f"README carries notebook {nb}'s figures: they belong on a docs page"
    spoilers = re.findall(r"(?:AUROC|reuse@P|top-1|recovers)[^|\n.]{0,60}?\d\.\d{2}|\d+(?:\.\d+)?% (?:top-1|recovery)",
                          visible(text))
    assert not spoilers, f"README gives results away: {spoilers}"
