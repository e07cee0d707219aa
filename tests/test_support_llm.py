"""Issue 28: a model's claim is `supported` only when its cited passage states the figure
for the claim's period, measure, segment and company; a model scripted on 127.0.0.1
writes each kind of false claim, and true paraphrases next to them. (Tables: the same
kinds in tests/test_support_bench.py and tests/test_support.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from citewell import Engine
from citewell.settings import LLMSettings

from .llm_server import LLMServer, Stream

REPORT = ("Zorblax revenue was 5,000 million dollars in 2023, up from 4,000 million dollars in 2022. "
          "The company had 3,100 employees at year end, compared with 2,900 a year earlier. "
          "Cost of sales was 3,200 million dollars in 2023. Net sales of the Flexibles segment were 10,200 million "
          "dollars in 2023, and net sales of the Rigid Packaging segment were 3,100 million dollars in 2023.")
QUESTION = "What was Zorblax revenue in 2023?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    """An engine answering with a scripted endpoint over one annual-report text, and the
    fake: ``(engine, fake)``."""
    root = tmp_path_factory.mktemp("support_llm")
    docs = root / "docs"
    docs.mkdir()
    (docs / "ZORBLAX_2023_annual_report.txt").write_text(REPORT, encoding="utf-8")
    with LLMServer() as fake:
        llm = LLMSettings(base_url=fake.base_url, model="fake-model", timeout=5.0, retries=0)
        with Engine(Path(root) / "store.sqlite", generator="llm", llm=llm, mode="lexical") as eng:
            eng.sync(docs)
            yield eng, fake


@pytest.mark.parametrize(("claim", "verdict", "reason"), [
    # true, as a model writes them
    ("Zorblax revenue was $5 billion in 2023", "supported", None),
    ("Revenue rose 25% in 2023", "supported", "computed:25%"),
    ("Zorblax revenue grew by $1,000 million in 2023", "supported", "computed:$1,000 million"),
    ("The company had 2,900 employees at the end of 2022", "supported", None),
    ("Net sales of the Rigid Packaging segment were $3.1 billion in 2023", "supported", None),
    # false, one change each
    ("Net sales of the Rigid Packaging segment were 10,200 million dollars in 2023", "unsupported",
     "scope_mismatch:10,200 million"),
    ("Zorblax revenue was 4,000 million dollars in 2023", "unsupported", "period_mismatch:2023"),
    ("The company had 2,900 employees at the end of 2023", "unsupported", "period_mismatch:2023"),
    ("Zorblax revenue was 3,200 million dollars in 2023", "unsupported", "measure_mismatch:3,200 million"),
    ("Globex's revenue was 5,000 million dollars in 2023", "unsupported", "scope_mismatch:globex"),
    ("Zorblax revenue did not rise in 2023", "unsupported", "negation_mismatch"),
    ("Zorblax revenue fell in 2023", "unsupported", "direction_mismatch"),
    ("Revenue rose 20% in 2023", "unsupported", "number_not_found:20%"),  # the base is 2022's figure
    ("Zorblax revenue grew by 200 million dollars in 2023", "unsupported",  # two headcounts' difference
     "number_not_found:200 million"),
])
def test_a_models_claim_is_checked_for_what_it_says(engine, claim: str, verdict: str, reason: str | None) -> None:
    eng, fake = engine
    fake.script(Stream([f"{claim} [S1]."]))
    message = eng.ask(QUESTION)
    (cited,) = [p for p in message.parts if p.source is not None]
    assert cited.support is not None
    assert (cited.support["verdict"], claim) == (verdict, claim), cited.support["reasons"]
    if reason is not None:
        assert reason in cited.support["reasons"]
