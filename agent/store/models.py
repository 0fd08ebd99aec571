"""The request and result types of the store seam (agent/store/base.py): plain dataclasses
named and shaped like qdrant-client's `models` (the Qdrant API's own schema), for the part of
it askdesk uses.

Why not qdrant-client's own: importing anything from `qdrant_client` loads the whole client
(gRPC, protobuf, httpx, hundreds of pydantic models: about 0.7 s), and the embedded store
(Qdrant Edge, the default) never needs it. So code above the seam builds these, the Edge
backend translates them to its native types (agent/store/edge_convert.py), and only the
server backend (agent/store/server.py) imports qdrant-client and converts them to its models
(`to_qdrant` there). Code above the seam reads like any Qdrant code: `models.Filter(must=[
models.FieldCondition(key=..., match=models.MatchValue(value=...))])`.

qdrant-client's models are accepted too wherever these are (`neutral` converts them by name),
so tests and benchmarks written against the Qdrant API run on either backend.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, Union


class PayloadSchemaType(str, Enum):
    KEYWORD = "keyword"
    INTEGER = "integer"
    FLOAT = "float"
    GEO = "geo"
    TEXT = "text"
    BOOL = "bool"
    DATETIME = "datetime"
    UUID = "uuid"


class Fusion(str, Enum):
    RRF = "rrf"
    DBSF = "dbsf"


@dataclass
class SparseVector:
    indices: list[int]
    values: list[float]


@dataclass
class PointStruct:
    id: Any
    vector: Any  # {name: dense list | SparseVector}
    payload: dict[str, Any] | None = None


# --- filters ---------------------------------------------------------------------------------
@dataclass
class MatchValue:
    value: Any


@dataclass
class MatchAny:
    any: list[Any]


@dataclass
class MatchExcept:
    except_: list[Any]


@dataclass
class MatchText:
    text: str


@dataclass
class Range:
    lt: float | None = None
    gt: float | None = None
    gte: float | None = None
    lte: float | None = None


@dataclass
class GeoPoint:
    lon: float
    lat: float


@dataclass
class GeoRadius:
    center: GeoPoint
    radius: float


@dataclass
class GeoBoundingBox:
    top_left: GeoPoint
    bottom_right: GeoPoint


@dataclass
class FieldCondition:
    key: str
    match: MatchValue | MatchAny | MatchExcept | MatchText | None = None
    range: Range | None = None
    geo_bounding_box: GeoBoundingBox | None = None
    geo_radius: GeoRadius | None = None
    is_empty: bool | None = None
    is_null: bool | None = None


@dataclass
class PayloadField:
    key: str


@dataclass
class IsEmptyCondition:
    is_empty: PayloadField


@dataclass
class IsNullCondition:
    is_null: PayloadField


@dataclass
class HasIdCondition:
    has_id: list[Any]


@dataclass
class Filter:
    should: Any = None  # a Condition or a list of them
    must: Any = None
    must_not: Any = None


Condition = Union[FieldCondition, IsEmptyCondition, IsNullCondition, HasIdCondition, Filter]


# --- queries ---------------------------------------------------------------------------------
@dataclass
class Rrf:
    k: int | None = None
    weights: list[float] | None = None


@dataclass
class RrfQuery:
    rrf: Rrf


@dataclass
class FusionQuery:
    fusion: Fusion


@dataclass
class NearestQuery:
    nearest: Any  # a dense list or a SparseVector


@dataclass
class Prefetch:
    prefetch: Any = None  # a Prefetch or a list of them
    query: Any = None
    using: str | None = None
    filter: Filter | None = None
    score_threshold: float | None = None
    limit: int | None = None


# --- results ---------------------------------------------------------------------------------
@dataclass
class ScoredPoint:
    id: Any
    version: int
    score: float
    payload: dict[str, Any] | None = None
    vector: Any = None


@dataclass
class Record:
    id: Any
    payload: dict[str, Any] | None = None
    vector: Any = None


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _from_qdrant(value: Any) -> Any:
    ours = globals().get(type(value).__name__)
    if isinstance(ours, type) and issubclass(ours, Enum):
        return ours(value.value)
    if not (isinstance(ours, type) and dataclasses.is_dataclass(ours)):
        raise TypeError(f"askdesk's store does not use qdrant-client's {type(value).__name__}")
    return ours(**{f.name: _deep(getattr(value, f.name)) for f in dataclasses.fields(ours)})


def inside(value: Any, convert: Any) -> Any:
    """`convert` applied to each item of a list or value of a dict (a list of plain values, such
    as a dense vector, ids or keywords, is returned as it is); anything else as it is. Both
    directions of conversion (here and agent/store/server.py) walk containers with it."""
    if isinstance(value, list):
        return value if _PLAIN.issuperset(map(type, value)) else [convert(v) for v in value]
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return value


def _deep(value: Any) -> Any:
    return _from_qdrant(value) if type(value).__module__.startswith("qdrant_client.") else inside(value, _deep)


def neutral(value: Any) -> Any:
    """One of qdrant-client's models (a pydantic model or enum of the same name as ours) as
    ours, with everything in it; anything else as it is. The Edge backend calls it wherever it
    expects one of these types, so either kind is accepted at any depth."""
    return _from_qdrant(value) if type(value).__module__.startswith("qdrant_client.") else value
