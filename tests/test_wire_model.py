"""The wire model is written once (citewell.wire): the server's response models, the typed
client's models and the canonical models agree on every shape they share.

:data:`SHAPES` pairs them explicitly; a shape that gains or loses a field on one side, or
changes a field's required-ness or type, fails :func:`test_shapes_agree`.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, get_args

import pytest
from pydantic import BaseModel, create_model

from citewell import models
from citewell.client import types as client
from citewell.web import agent_schemas, schemas
from citewell.wire import agents, analytics, chats, errors, resources, sessions
from citewell.wire.drift import field_drift, shape_name, type_shape
from citewell.wire.open_copy import OpenCopy, wire_class_of


@dataclass(frozen=True)
class Shape:
    """One wire shape: its server model, its client model, and the canonical model it
    renders (None: a profile's own shape). ``client_only`` are fields the client declares
    beyond the server's (each says why in ``citewell.client.types``); ``canonical_names``:
    the canonical model is the stored one (datetimes, defaults), so only field names are
    compared, less ``wire_omits`` (fields the API never shows)."""

    server: type[BaseModel]
    client: type[BaseModel]
    canonical: type[BaseModel] | None = None
    client_only: frozenset[str] = frozenset()
    canonical_names: bool = False
    wire_omits: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        """The test id: ``server/client``."""
        return f"{self.server.__name__}/{self.client.__name__}"


SHAPES: tuple[Shape, ...] = (
    # errors and warnings: derived from the canonical models
    Shape(schemas.ErrorInfo, client.ErrorInfo, models.ErrorInfo),
    Shape(schemas.Notice, client.Notice, models.Notice),
    # sessions (seed 001)
    Shape(schemas.Session, client.Session),
    Shape(schemas.SourceOut, client.Source, models.SourceRef, canonical_names=True),
    Shape(schemas.PartOut, client.Part),
    Shape(schemas.AnswerOut, client.Answer),
    Shape(schemas.CitationOut, client.Citation, models.Citation, canonical_names=True,
          wire_omits=frozenset({"chunk_indices"})),
    Shape(schemas.MessageOut, client.SessionMessage),
    Shape(schemas.SessionMessagesData, client.SessionMessages),
    Shape(schemas.TurnData, client.Turn),
    # resources
    Shape(schemas.ResourceOut, client.Resource, models.Resource, canonical_names=True,
          wire_omits=frozenset({"paths"})),
    Shape(schemas.ResourceListData, client.ResourceList),
    Shape(schemas.DeletedData, client.Deleted),
    # analytics (seeds 003/004)
    Shape(schemas.ReferenceMetadata, client.ReferenceMetadata),
    Shape(schemas.RMSReference, client.Reference, client_only=frozenset({"chat_message_id"})),
    Shape(analytics.PresignedUrl, client.PresignedUrl),
    # chats (seed 000)
    Shape(schemas.AskAccepted, client.AskAccepted),
    Shape(schemas.ChatReference, client.ChatReference,
          client_only=frozenset({"id", "source", "citation", "start_index", "end_index"})),
    Shape(schemas.ChatMessage, client.ChatMessage, client_only=frozenset({"error"})),
    Shape(schemas.ChatMessagesPage, client.ChatMessagesPage),
    Shape(schemas.ChatOut, client.Chat),
    Shape(schemas.MentionOut, client.Mention, models.Mention),
    Shape(schemas.MentionNotFound, client.MentionNotFound),
    Shape(schemas.MentionsPage, client.MentionsPage),
    Shape(schemas.DatasetOut, client.Dataset),
    Shape(schemas.ResearchPreviewOut, client.ResearchPreview),
    # tracking agents and patterns
    Shape(agent_schemas.PatternMemberOut, client.PatternMember),
    Shape(agent_schemas.PatternSummary, client.PatternSummary),
    Shape(agent_schemas.PatternOut, client.Pattern),
    Shape(agent_schemas.PatternList, client.PatternList),
    Shape(agent_schemas.TrackingAgentOut, client.TrackingAgent),
    Shape(agent_schemas.TrackingAgentList, client.TrackingAgentList),
    Shape(agent_schemas.RunOut, client.AgentRun),
    Shape(agent_schemas.AlertsPage, client.AlertsPage),
)

#: Wire shapes the client does not model: envelopes it unwraps, error bodies it turns
#: into exceptions, and answers it returns as plain data.
SERVER_ONLY: frozenset[str] = frozenset({
    "SessionsError", "AnalyticsErrorInfo", "AnalyticsError", "ChatsError",
    "SessionData", "SessionResponse", "SessionMessagesResponse", "TurnResponse",
    "ResourceData", "ResourceResponse", "ResourceListResponse", "DeletedResponse",
    "ReferencesResponse", "ReferencedMessage", "ConversationReferencesPayload", "ConversationReferencesResponse",
    "PresignedUrlResponse", "ChatList", "Deleted",
})

WIRE_MODULES = (agents, analytics, chats, errors, resources, sessions)


def _check(shape: Shape) -> list[str]:
    """Everything that differs within ``shape`` (empty: the sides agree)."""
    found = field_drift(shape.server, shape.client, ignore=shape.client_only)
    if shape.canonical is not None:
        found += [f"canonical: {line}" for line in field_drift(
            shape.canonical, shape.server, ignore=shape.wire_omits, compare_types=not shape.canonical_names)
            if not shape.canonical_names or ": only in " in line]
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The model classes named anywhere in a field's type."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_shapes_agree(shape: Shape) -> None:
    """Server, client and canonical model have the same fields, required-ness and types."""
    assert _check(shape) == []


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_client_models_are_open_copies_of_the_server_ones(shape: Shape) -> None:
    """Each client model is a thin open subclass of its wire class; the server keeps its
    own openness (closed pages, open items); client-only fields are optional and really
    absent from the server's model."""
    assert wire_class_of(shape.client) is shape.server
    assert shape.client.model_config.get("extra") == "allow"
    assert shape.server.model_config.get("extra") in ("allow", "forbid")
    for name in shape.client_only:
        assert name not in shape.server.model_fields and not shape.client.model_fields[name].is_required()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_client_models_nest_client_models(shape: Shape) -> None:
    """A nested shape of a client model is the client's (open) copy, never the server's class."""
    for name, info in shape.client.model_fields.items():
        for nested in _models_in(info.annotation):
            assert nested.__module__ == client.__name__, f"{shape.client.__name__}.{name}: {nested}"


def test_every_wire_shape_is_paired_or_server_only() -> None:
    """A new wire shape must be paired with a client model here or named server-only."""
    paired = {shape.server for shape in SHAPES}
    for module in WIRE_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseModel):
                assert obj in paired or name in SERVER_ONLY, f"{module.__name__}.{name} is in no table"
    copies = {cls for _, cls in inspect.getmembers(client, inspect.isclass)
              if issubclass(cls, OpenCopy) and wire_class_of(cls) is not None}
    assert copies == {shape.client for shape in SHAPES}


def test_wire_shapes_equal_to_canonical_models_derive_from_them() -> None:
    """Where a wire shape is a canonical model, it subclasses that model (no second copy)."""
    for shape in SHAPES:
        if shape.canonical is not None and not shape.canonical_names:
            assert issubclass(shape.server, shape.canonical) and issubclass(shape.client, shape.canonical)


def test_public_names_stay_where_they_were() -> None:
    """The server's names still import from citewell.web.schemas / agent_schemas (and
    citewell.web.routes.files), the client's from citewell.client.types."""
    files = importlib.import_module("citewell.web.routes.files")
    assert files.PresignedUrl is analytics.PresignedUrl and files.PresignedUrlResponse is analytics.PresignedUrlResponse
    for name in schemas.__all__:
        assert hasattr(schemas, name)
    for name in agent_schemas.__all__:
        assert hasattr(agent_schemas, name)
    for name in client.__all__:
        assert hasattr(client, name)


# -- the checker itself catches drift ---------------------------------------------------------

def _without(model: type[BaseModel], field: str) -> type[BaseModel]:
    """A copy of ``model`` without ``field`` (every other field as it is)."""
    kept = {name: (info.annotation, info) for name, info in model.model_fields.items() if name != field}
    return create_model(model.__name__, **kept)  # type: ignore[call-overload, no-any-return]


def test_the_checker_reports_a_field_gained_or_lost() -> None:
    gained = create_model("Session", __base__=client.Session, pinned=(bool, False))
    assert field_drift(schemas.Session, gained) == ["pinned: only in Session"]
    assert _check(Shape(schemas.Session, gained)) == ["pinned: only in Session"]
    lost = _without(schemas.Session, "workspace_id")
    assert field_drift(lost, client.Session) == ["workspace_id: only in Session"]
    assert _check(Shape(lost, client.Session)) == ["workspace_id: only in Session"]
    canonical_lost = _without(models.Mention, "author")
    assert _check(Shape(schemas.MentionOut, client.Mention, canonical_lost)) == ["canonical: author: only in MentionOut"]


def test_the_checker_reports_required_ness_and_type_changes() -> None:
    optional = create_model("Session", __base__=client.Session, workspace_id=(str | None, None))
    required, retyped_too = field_drift(schemas.Session, optional)
    assert required == "workspace_id: required only in Session"
    assert retyped_too.startswith("workspace_id: type <class 'str'> in Session, ('union', ")
    retyped = create_model("Dataset", __base__=client.Dataset, post_count=(str, ...))
    assert field_drift(schemas.DatasetOut, retyped) == [
        "post_count: type <class 'int'> in DatasetOut, <class 'str'> in Dataset"]
    nested = create_model("Turn", __base__=client.Turn, session=(client.Chat, ...))
    assert len(field_drift(schemas.TurnData, nested)) == 1


def test_type_shapes_see_through_copies_and_annotations() -> None:
    assert shape_name(client.Mention) == shape_name(schemas.MentionOut) == "citewell.wire.chats.MentionOut"
    assert type_shape(client.MentionsPage.model_fields["mentions"].annotation) == \
        type_shape(schemas.MentionsPage.model_fields["mentions"].annotation)
    assert type_shape(agent_schemas.TrackingAgentBody.model_fields["query"].annotation) is str
