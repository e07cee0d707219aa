"""Mentions: the posts of posts files (schema v9: each posts file keeps its own copy of a
post, docs/architecture.md "Posts"), found by (source, id) or listed in keyset pages. A full-text
term filter goes through the lexical index's ``_match_clause`` hook (a dialect piece)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Protocol, Sequence

from ..models import Mention, Passage
from .sqlbase import SQLBase


class MentionStore(Protocol):
    """The posts of posts files, as :class:`~citewell.models.Mention` (each posts file keeps
    its own copy of a post) or as the :class:`~citewell.models.Passage` of a post's chunk
    (the mentions concern of :class:`~citewell.store.base.Store`). Unknown posts are None
    or left out, never an error."""

    def post_passage(self, workspace_id: str, source: str, post_id: str, *,
                     dataset_id: str | None = None) -> Passage | None:
        """The (first) chunk of post (source, id) as a passage, or None: the copy of posts
        file ``dataset_id`` when given, else the copy :meth:`mentions` chooses."""
        ...

    def mentions(self, workspace_id: str, refs: Sequence[tuple[str, str]], *,
                 dataset_ids: Sequence[str | None] | None = None) -> list[Mention | None]:
        """Mentions for (source, id) pairs, in the order asked (None where unknown).

        Each posts file (dataset) keeps its own copy of a post (docs/architecture.md "Posts"). With
        ``dataset_ids`` (one per ref, None for "any"), the copy of that dataset; otherwise
        the copy of the most recently added ready dataset holding the post (a dataset no
        longer ready only when no ready one does)."""
        ...

    def list_mentions(self, workspace_id: str, *, source: str | None = None, terms: Sequence[str] = (),
                      created_after: str | None = None, created_before: str | None = None,
                      dataset_id: str | None = None, limit: int = 50,
                      after: tuple[str, ...] | None = None) -> list[Mention]:
        """Mentions of the workspace's ready posts files, ordered by ``(created_at, source
        lower-cased, id, dataset_id)`` (a post two datasets hold is listed once per
        dataset), at most ``limit``: of ``source``, whose text (any piece of it) matches any
        of ``terms`` (full-text), created in ``[created_after, created_before]`` (ISO strings,
        compared as text), in posts file ``dataset_id``; only after the ``after`` key
        (keyset paging: the key of the last mention of the previous page; a three-part key
        of an older cursor continues after every copy of that post)."""
        ...


class Mentions(SQLBase):
    """Posts of the workspace's posts files (see the module docstring)."""

    @staticmethod
    def _match_clause(alias: str, terms: Sequence[str]) -> tuple[str, list[Any]] | None:
        raise NotImplementedError  # lexical index hook (dialect)

    #: The order in which the copies of one post are chosen when no dataset is named (see
    #: :meth:`Store.mentions`): ready datasets first, the most recently added first.
    _COPY_ORDER = " ORDER BY r.status = 'ready' DESC, r.created_at DESC, r.id DESC LIMIT 1"

    def post_passage(self, workspace_id: str, source: str, post_id: str, *,
                     dataset_id: str | None = None) -> Passage | None:
        """The first chunk of post (source, id) as a passage (source compared lower-cased):
        the copy of posts file ``dataset_id``, or without one the copy
        :meth:`mentions` chooses."""
        row = self._mention_row(self._conn(), workspace_id, source, post_id, dataset_id)
        return self.chunks(workspace_id, [row["chunk_id"]]).get(row["chunk_id"]) if row is not None else None

    def _mention_row(self, conn: sqlite3.Connection, workspace_id: str, source: str, post_id: str,
                     dataset_id: str | None) -> sqlite3.Row | None:
        sql = ("SELECT m.* FROM mentions m JOIN resources r ON r.id = m.dataset_id WHERE m.workspace_id = ? "
               "AND m.source_key = ? AND m.id = ?")
        args: list[Any] = [workspace_id, source.lower(), post_id]
        if dataset_id is not None:
            sql += " AND m.dataset_id = ?"
            args.append(dataset_id)
        return conn.execute(sql + self._COPY_ORDER, args).fetchone()

    def mentions(self, workspace_id: str, refs: Sequence[tuple[str, str]], *,
                 dataset_ids: Sequence[str | None] | None = None) -> list[Mention | None]:
        """Mentions for (source, id) pairs in the order asked, each the copy of its
        ``dataset_ids`` entry when given (see :meth:`Store.mentions`); None for unknown pairs."""
        conn = self._conn()
        wanted = list(dataset_ids) if dataset_ids is not None else [None] * len(refs)
        out: list[Mention | None] = []
        for (source, post_id), dataset_id in zip(refs, wanted):
            row = self._mention_row(conn, workspace_id, source, post_id, dataset_id)
            out.append(self._mention_from_row(row) if row is not None else None)
        return out

    def list_mentions(self, workspace_id: str, *, source: str | None = None, terms: Sequence[str] = (),
                      created_after: str | None = None, created_before: str | None = None,
                      dataset_id: str | None = None, limit: int = 50,
                      after: tuple[str, ...] | None = None) -> list[Mention]:
        """Mentions of the workspace by ``(created_at, source, id, dataset_id)`` (see
        :meth:`Store.list_mentions`); a post held by two datasets is listed once per dataset."""
        sql = ("SELECT m.* FROM mentions m JOIN resources r ON r.id = m.dataset_id "
               "WHERE m.workspace_id = ? AND r.status = 'ready'")
        args: list[Any] = [workspace_id]
        if source is not None:
            sql += " AND m.source_key = ?"
            args.append(source.lower())
        if dataset_id is not None:
            sql += " AND m.dataset_id = ?"
            args.append(dataset_id)
        if created_after is not None:
            sql += " AND COALESCE(m.created_at, '') >= ?"
            args.append(created_after)
        if created_before is not None:
            sql += " AND COALESCE(m.created_at, '') <= ?"
            args.append(created_before)
        match = self._match_clause("p", terms)
        if match is not None:  # any piece of the post (only the current version's pieces are indexed)
            sql += (" AND EXISTS (SELECT 1 FROM chunks p WHERE p.resource_id = m.dataset_id AND p.post_source = "
                    f"m.source_key AND p.post_id = m.id AND {match[0]})")
            args += match[1]
        if after is not None:
            key = (list(after) + ["\uffff"])[:4]  # a three-part key (before v9): after every copy of the post
            sql += " AND (COALESCE(m.created_at, ''), m.source_key, m.id, m.dataset_id) > (?, ?, ?, ?)"
            args += key
        sql += " ORDER BY COALESCE(m.created_at, ''), m.source_key, m.id, m.dataset_id LIMIT ?"
        args.append(limit)
        return [self._mention_from_row(row) for row in self._conn().execute(sql, args).fetchall()]

    @staticmethod
    def _mention_from_row(row: sqlite3.Row) -> Mention:
        fields = json.loads(row["fields"])
        fields.update(source=row["source"], id=row["id"], text=row["text"], dataset_id=row["dataset_id"],
                      chunk_id=row["chunk_id"])
        return Mention(**fields)
