"""Settings precedence and manifest mapping (FinanceBench's document file as a manifest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewell import UsageError
from citewell.ingest.manifest import Manifest, entry_from_row, parse_quarter
from citewell.settings import Settings, default_store_path

from .conftest import CORPUS


def test_flag_beats_env_beats_config_beats_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "citewell.toml"
    config.write_text('store = "/from/config.sqlite"\nworkspace = "cfg"\n', encoding="utf-8")
    monkeypatch.delenv("CITEWELL_STORE", raising=False)
    monkeypatch.delenv("CITEWELL_WORKSPACE", raising=False)
    monkeypatch.setenv("CITEWELL_CONFIG", str(tmp_path / "absent-is-fine-only-when-implicit.toml"))
    with pytest.raises(UsageError):
        Settings.resolve()
    monkeypatch.delenv("CITEWELL_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data-home"))
    assert Settings.resolve() == Settings(store=default_store_path(), workspace="default")
    assert str(default_store_path()).startswith(str(tmp_path / "data-home"))
    assert Settings.resolve(config=config) == Settings(store=Path("/from/config.sqlite"), workspace="cfg")
    monkeypatch.setenv("CITEWELL_STORE", "/from/env.sqlite")
    monkeypatch.setenv("CITEWELL_WORKSPACE", "envws")
    assert Settings.resolve(config=config) == Settings(store=Path("/from/env.sqlite"), workspace="envws")
    assert Settings.resolve(store="/flag.sqlite", workspace="flagws", config=config) == \
        Settings(store=Path("/flag.sqlite"), workspace="flagws")


def test_a_postgresql_url_is_selected_by_flag_env_or_config_and_never_shown_with_its_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: ``--store``, ``CITEWELL_STORE`` and the config file's ``store`` take a
    PostgreSQL URL as it is (a path would fold its ``//``, a config file's folder is not
    its base); messages name it without the password."""
    url = "postgresql://app:s3cret@db.internal:5433/citewell"
    config = tmp_path / "conf" / "citewell.toml"
    config.parent.mkdir()
    config.write_text(f'store = "{url}"\n', encoding="utf-8")
    monkeypatch.delenv("CITEWELL_STORE", raising=False)
    monkeypatch.delenv("CITEWELL_WORKSPACE", raising=False)
    assert Settings.resolve(config=config).store == url
    monkeypatch.setenv("CITEWELL_STORE", "postgres://app@db.internal/other")
    assert Settings.resolve(config=config).store == "postgres://app@db.internal/other"
    settings = Settings.resolve(store=url, config=config)
    assert settings.store == url and settings.store_location == "postgresql://app@db.internal:5433/citewell"
    monkeypatch.setenv("CITEWELL_STORE", str(tmp_path / "file.sqlite"))
    assert Settings.resolve(config=config).store == tmp_path / "file.sqlite"


def test_broken_config_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("store = [unclosed\n", encoding="utf-8")
    with pytest.raises(UsageError):
        Settings.resolve(config=bad)


def _docs() -> dict[str, dict]:
    rows = [json.loads(line) for line in (CORPUS / "eval" / "financebench_dev_docs.jsonl").read_text().splitlines()]
    return {r["doc_name"]: r for r in rows}


def test_financebench_rows_map_to_seed_metadata() -> None:
    docs = _docs()
    mmm = entry_from_row(docs["3M_2022_10K"])
    assert mmm.title == "3M_2022_10K"
    assert mmm.metadata == {"tickers": ["MMM"], "company_names": ["3M"], "sector": ["Industrials"],
                            "fiscal_year": 2022, "document_category": "filing", "document_subcategory": "10-K",
                            "external_url": docs["3M_2022_10K"]["doc_link"]}
    assert mmm.custom_metadata["page_count"] == 252
    earnings = entry_from_row(docs["AMCOR_2023Q4_EARNINGS"])
    assert earnings.metadata["document_category"] == "corporate_data"
    assert earnings.metadata["document_subcategory"] == "earning"
    assert earnings.metadata["fiscal_quarter"] == 4
    q10 = entry_from_row(docs["AMCOR_2023Q2_10Q"])
    assert (q10.metadata["document_subcategory"], q10.metadata["fiscal_quarter"]) == ("10-Q", 2)
    k8 = entry_from_row(docs["PEPSICO_2023_8K_dated-2023-05-05"])
    assert k8.metadata["document_subcategory"] == "8-K" and "fiscal_quarter" not in k8.metadata


def test_manifest_lookup_by_sha_then_path(tmp_path: Path) -> None:
    manifest = Manifest()
    manifest.load(CORPUS / "eval" / "financebench_dev_docs.jsonl", roots=[CORPUS])
    sha = _docs()["ULTABEAUTY_2023Q4_EARNINGS"]["sha256"]
    assert manifest.lookup(sha256=sha, path=tmp_path / "renamed.pdf").title == "ULTABEAUTY_2023Q4_EARNINGS"
    by_path = manifest.lookup(sha256="0" * 64, path=CORPUS / "pdf" / "BOEING_2022_10K.pdf")
    assert by_path is not None and by_path.metadata["tickers"] == ["BA"]
    assert manifest.lookup(sha256="0" * 64, path=tmp_path / "other.pdf") is None


def test_bad_manifest_rows_are_skipped_and_named(tmp_path: Path) -> None:
    bad = tmp_path / "m.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    bad.write_text('{"path": "a.pdf", "title": "A", "fiscal_year": "FY2021"}\n'
                   '{"path": "b.pdf", "fiscal_quarter": 7}\n'
                   '{"path": "c.pdf", "calendar_date": "yesterday"}\n'
                   f'{deep}\n[1, 2]\n', encoding="utf-8")
    manifest = Manifest()
    manifest.load(bad)
    assert [e.split(": ")[0] for e in manifest.errors] == [f"{bad}:2", f"{bad}:3", f"{bad}:4", f"{bad}:5"]
    assert "fiscal_quarter" in manifest.errors[0] and "calendar_date" in manifest.errors[1]
    entry = manifest.lookup(sha256="0" * 64, path=tmp_path / "a.pdf")
    assert entry is not None and entry.title == "A" and entry.metadata["fiscal_year"] == 2021


@pytest.mark.parametrize("raw, quarter", [(4, 4), ("4", 4), ("Q4", 4), ("q1", 1), (None, None), ("", None)])
def test_quarters(raw: object, quarter: int | None) -> None:
    assert parse_quarter(raw) == quarter


def test_config_mistakes_are_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CITEWELL_STORE", raising=False)
    monkeypatch.delenv("CITEWELL_WORKSPACE", raising=False)
    typo = tmp_path / "typo.toml"
    typo.write_text('stor = "x.sqlite"\n', encoding="utf-8")
    with pytest.raises(UsageError) as info:
        Settings.resolve(config=typo)
    assert "stor" in info.value.message
    with pytest.raises(UsageError):
        Settings.resolve(workspace="  ", config=None)
    relative = tmp_path / "conf" / "citewell.toml"
    relative.parent.mkdir()
    relative.write_text('store = "data/c.sqlite"\n', encoding="utf-8")
    assert Settings.resolve(config=relative).store == tmp_path / "conf" / "data" / "c.sqlite"


def test_manifest_rows_with_fields_of_the_wrong_kind_are_refused_with_a_clear_reason() -> None:
    """Issue 14: ``custom_metadata: "notadict"`` raised Python's own message; a NUL title passed."""
    from citewell.ingest.manifest import entry_from_row

    for row, reason in (({"custom_metadata": "notadict"}, "custom_metadata must be a JSON object of fields"),
                        ({"metadata": 7}, "metadata must be a JSON object of fields"),
                        ({"title": "Annual\nreport"}, "title: a title may not contain control characters"),
                        ({"doc_name": "x\x00"}, "doc_name: a title may not contain control characters"),
                        ({"title": True}, "title must be text, not true or false")):
        with pytest.raises(ValueError) as refused:
            entry_from_row(row)
        assert str(refused.value).startswith(reason), row
    entry = entry_from_row({"title": "Annual report 2022", "custom_metadata": {"team": "ocr"}, "region": "EU"})
    assert (entry.title, entry.custom_metadata) == ("Annual report 2022", {"team": "ocr", "region": "EU"})
