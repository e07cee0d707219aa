"""The cite stage (docs/architecture.md, "The citation contract", rules 1–7).

Public names:

- :func:`cite` — generator markdown → canonical :class:`~citewell.models.Message`
  (numbered ``[N]`` markers, references with offsets, parts, citations, warnings);
- :func:`build_citations` — ``(citations, resource_ids)`` from parts (rule 7);
- :func:`build_parts` — parts of a cited text (rule 6);
- :func:`convert_offsets`, :class:`OffsetMap` — code point / UTF-16 / UTF-8 offsets (rule 3);
- :class:`SourceResolver` (protocol the store implements), :class:`InMemoryResolver`;
- :func:`scan`, :class:`Token`, :class:`Target`, :func:`parse_target` — the link scanner;
- :func:`format_link`, :func:`encode_id`, :func:`decode_id` — writing links generators emit;
- :func:`escape_numbers`, :func:`unescape_numbers` — rule 5 escapes;
- :class:`StreamingCiter`, :func:`stream_cite`, :class:`Event` — the streaming citer (rule 9);
- :func:`check_support`, :func:`apply_support`, :class:`Support` — support checks (rule 8);
- :func:`expand_numbered` — the ``[1]``/``[1, 2]``/``[1-3]``/``【1】`` forms of numbered passages;
- :func:`cite_sources`, :func:`read_sources`, :class:`GivenSource` — the cite stage on a
  caller's own sources (inline ``{chunk_id|source+id, text, title?, metadata?}`` or by id).
"""

from .links import (
    Target,
    Token,
    decode_id,
    encode_id,
    escape_numbers,
    format_link,
    parse_target,
    scan,
    unescape_numbers,
)
from .offsets import UNITS, OffsetMap, convert_offsets
from .parts import Marker, build_citations, build_parts, source_ref
from .numbered import NumberedExpander, expand_numbered
from .processor import cite
from .resolver import InMemoryResolver, SourceResolver, post_key
from .stream import Event, StreamingCiter, stream_cite
from .support import Embedder, apply_support, part_support
from .verdict import Support, check_support
from .given import GivenSource, GivenSources, cite_sources, read_sources

__all__ = [
    "UNITS",
    "Embedder",
    "Event",
    "GivenSource",
    "GivenSources",
    "StreamingCiter",
    "Support",
    "apply_support",
    "check_support",
    "expand_numbered",
    "part_support",
    "stream_cite",
    "InMemoryResolver",
    "NumberedExpander",
    "Marker",
    "OffsetMap",
    "SourceResolver",
    "Target",
    "Token",
    "build_citations",
    "build_parts",
    "cite",
    "cite_sources",
    "convert_offsets",
    "decode_id",
    "encode_id",
    "escape_numbers",
    "format_link",
    "parse_target",
    "post_key",
    "read_sources",
    "scan",
    "source_ref",
    "unescape_numbers",
]
