"""The store seam's models (agent/store/models.py, shaped like the Qdrant API's) to and from
Qdrant Edge's native types. qdrant-client's own models are taken too (`models.neutral`), but
qdrant-client is never imported here. Only what askdesk uses is translated; anything else
raises `TypeError` so a new kind of query fails loudly in the contract tests, not silently."""

from __future__ import annotations

from typing import Any

import numpy as np
import qdrant_edge as qe

import agent.store.models as models
from agent.store.models import neutral

_SCHEMA_TYPES = {
    models.PayloadSchemaType.KEYWORD.value: qe.PayloadSchemaType.Keyword,
    models.PayloadSchemaType.INTEGER.value: qe.PayloadSchemaType.Integer,
    models.PayloadSchemaType.FLOAT.value: qe.PayloadSchemaType.Float,
    models.PayloadSchemaType.GEO.value: qe.PayloadSchemaType.Geo,
    models.PayloadSchemaType.TEXT.value: qe.PayloadSchemaType.Text,
    models.PayloadSchemaType.BOOL.value: qe.PayloadSchemaType.Bool,
    models.PayloadSchemaType.DATETIME.value: qe.PayloadSchemaType.Datetime,
    models.PayloadSchemaType.UUID.value: qe.PayloadSchemaType.Uuid,
}


def schema_type(schema: Any) -> Any:
    """A payload index type (ours, qdrant-client's, or its string) as Edge's."""
    return _SCHEMA_TYPES[getattr(schema, "value", schema)]


def _value(value: Any) -> Any:
    """qdrant-edge-py 0.9 reads a Python bool as the integer 1/0 (it tries int before bool),
    so `flag == True` matched nothing; numpy's bool is not an int and arrives as a bool."""
    return np.bool_(value) if isinstance(value, bool) else value


def _match(match: Any) -> Any:
    match = neutral(match)
    if isinstance(match, models.MatchValue):
        return qe.MatchValue(value=_value(match.value))
    if isinstance(match, models.MatchAny):
        return qe.MatchAny(any=list(match.any))
    if isinstance(match, models.MatchExcept):
        return qe.MatchExcept(list(match.except_))  # its keyword is `except` (the stub says except_)
    if isinstance(match, models.MatchText):
        return qe.MatchText(text=match.text)
    raise TypeError(f"unsupported match for Qdrant Edge: {match!r}")


def _field(cond: models.FieldCondition) -> qe.FieldCondition:
    cond = neutral(cond)
    kwargs: dict[str, Any] = {}
    if cond.match is not None:
        kwargs["match"] = _match(cond.match)
    if cond.range is not None:
        r = cond.range
        kwargs["range"] = qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)  # type: ignore[arg-type]
    if cond.geo_radius is not None:
        center = cond.geo_radius.center
        kwargs["geo_radius"] = qe.GeoRadius(center=qe.GeoPoint(lon=center.lon, lat=center.lat),
                                            radius=cond.geo_radius.radius)
    if cond.geo_bounding_box is not None:
        box = cond.geo_bounding_box
        kwargs["geo_bounding_box"] = qe.GeoBoundingBox(
            top_left=qe.GeoPoint(lon=box.top_left.lon, lat=box.top_left.lat),
            bottom_right=qe.GeoPoint(lon=box.bottom_right.lon, lat=box.bottom_right.lat),
        )
    if cond.is_empty is not None:
        kwargs["is_empty"] = cond.is_empty
    if cond.is_null is not None:
        kwargs["is_null"] = cond.is_null
    if not kwargs:
        raise TypeError(f"unsupported field condition for Qdrant Edge: {cond!r}")
    return qe.FieldCondition(key=cond.key, **kwargs)


def _condition(cond: Any) -> Any:
    cond = neutral(cond)
    if isinstance(cond, models.FieldCondition):
        return _field(cond)
    if isinstance(cond, models.Filter):
        return to_filter(cond)
    if isinstance(cond, models.HasIdCondition):
        return qe.HasIdCondition(point_ids={str(i) for i in cond.has_id})
    if isinstance(cond, models.IsEmptyCondition):
        return qe.IsEmptyCondition(key=cond.is_empty.key)
    if isinstance(cond, models.IsNullCondition):
        return qe.IsNullCondition(key=cond.is_null.key)
    raise TypeError(f"unsupported condition for Qdrant Edge: {cond!r}")


def _conditions(conds: Any) -> list[Any] | None:
    if conds is None:
        return None
    if not isinstance(conds, list):
        conds = [conds]
    return [_condition(c) for c in conds]


def to_filter(flt: models.Filter | None) -> qe.Filter | None:
    if flt is None:
        return None
    flt = neutral(flt)
    if not isinstance(flt, models.Filter):
        raise TypeError(f"not a filter: {flt!r}")
    return qe.Filter(must=_conditions(flt.must), should=_conditions(flt.should), must_not=_conditions(flt.must_not))


def to_vector(vector: Any) -> Any:
    """A dense list or a sparse vector, as Edge wants it."""
    vector = neutral(vector)
    if isinstance(vector, models.SparseVector):
        return qe.SparseVector(indices=list(vector.indices), values=list(vector.values))
    return [float(x) for x in vector]


def to_point(point: models.PointStruct) -> qe.Point:
    point = neutral(point)
    vector = point.vector
    if not isinstance(vector, dict):
        raise TypeError("askdesk points carry named vectors")
    return qe.Point(str(point.id), {name: to_vector(v) for name, v in vector.items()}, point.payload or {})


def to_query(query: Any, using: str | None) -> Any:
    """A vector (nearest neighbours `using` a named vector) or a fusion of prefetches."""
    if query is None:
        return None
    query = neutral(query)
    if isinstance(query, models.RrfQuery):
        return qe.Fusion.Rrf(k=query.rrf.k if query.rrf.k is not None else 2, weights=query.rrf.weights)
    if isinstance(query, models.FusionQuery) and query.fusion == models.Fusion.RRF:
        return qe.Fusion.Rrf(k=2)
    if isinstance(query, models.FusionQuery) and query.fusion == models.Fusion.DBSF:
        return qe.Fusion.Dbsf()
    if isinstance(query, models.NearestQuery):
        query = neutral(query.nearest)
    if isinstance(query, (list, models.SparseVector)):
        return qe.Query.Nearest(to_vector(query), using=using)
    raise TypeError(f"unsupported query for Qdrant Edge: {type(query).__name__}")


def to_prefetch(prefetch: models.Prefetch) -> qe.Prefetch:
    prefetch = neutral(prefetch)
    nested = prefetch.prefetch
    if nested is not None and not isinstance(nested, list):
        nested = [nested]
    return qe.Prefetch(
        limit=prefetch.limit or 10,
        query=to_query(prefetch.query, prefetch.using),
        prefetches=[to_prefetch(p) for p in nested] if nested else None,
        filter=to_filter(prefetch.filter),
        score_threshold=prefetch.score_threshold,
    )


def with_payload(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else bool(value)


def from_vector(vector: Any) -> Any:
    if vector is None:
        return None
    if isinstance(vector, dict):
        return {name: from_vector(v) for name, v in vector.items()}
    if isinstance(vector, qe.SparseVector):
        return models.SparseVector(indices=list(vector.indices), values=list(vector.values))
    return vector


def from_scored(point: Any) -> models.ScoredPoint:
    return models.ScoredPoint(
        id=str(point.id), version=point.version, score=point.score,
        payload=point.payload, vector=from_vector(point.vector),
    )


def from_record(record: Any) -> models.Record:
    return models.Record(id=str(record.id), payload=record.payload, vector=from_vector(record.vector))
