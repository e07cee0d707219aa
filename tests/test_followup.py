"""Follow-ups carry the previous turn's subject and filters only when they refer back."""

from __future__ import annotations

from pathlib import Path

from citewell import Engine
from citewell.question.followup import refers_back


def test_standalone_short_questions_do_not_refer_back() -> None:
    for question in ("Who is the head barista?", "When does the new oven arrive?", "Is this company profitable?",
                     "Revenue?"):
        assert not refers_back(question), question
    for question in ("Why?", "What is that?", "And in 2021?", "What about Globex?", "How did it change?",
                     "Also the margins?"):
        assert refers_back(question), question


def test_a_standalone_question_does_not_inherit_a_restriction(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "talk.txt").write_text("Alice: The new oven arrives in July.\n", encoding="utf-8")
    (folder / "notes.txt").write_text("The head barista is Marco.\n", encoding="utf-8")
    engine.ingest([folder])
    talk = next(r.id for r in engine.resources() if r.title == "talk")
    chat = engine.chat()
    first = engine.ask("When does the oven arrive?", chat_id=chat.id, filters={"resource_id": talk})
    assert "July" in first.text
    second = engine.ask("Who is the head barista?", chat_id=chat.id)
    assert second.text.startswith("The head barista is Marco [1].")
    # explicitly no filters on a follow-up: nothing is carried either
    third = engine.ask("And why?", chat_id=chat.id, filters=[])
    assert engine.history(chat.id)[4].resource_ids == []
    assert third.status == "settled"
