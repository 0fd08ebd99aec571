"""One declared registry over one runtime: ingest, parse, search, claims — and its caches.

The places the parser and the filters need (the registry's own place names and centroids) are
counted at ingest from the records that changed and saved beside the store; they are read once
and kept here, per registry object, not per process: a re-read happens when the collection's
version (written by every ingest that changed something, in any process) differs, checked at
most every `CHECK_SECONDS`. When that version's places are not on this machine (another host's
ingest into a shared server) they are read from the records in the background, and searches
keep the previous places meanwhile. The gazetteer is built on first use and may be shared by the
registries of one deployment.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import agent.store.models as models
from agent import sidecar
from agent.prompts import PromptSet, default_prompts
from agent.registry.arguments import MAX_RESULTS, build_args_model
from agent.registry.cue import records_cue, registry_cue
from agent.registry.declaration import Declaration
from agent.registry.filters import Resolver
from agent.registry.format import Formatter
from agent.registry.gazetteer import Gazetteer
from agent.registry.geocoder import Geocoder
from agent.registry.ingest import IngestReport, ingest_rows
from agent.registry.places import KnownPlaces, PlaceLevels
from agent.registry.records import ParsedRows, RecordSchema
from agent.registry.results import RegistryResults
from agent.registry.search import Searcher
from agent.registry.store import PLACES_KEY, VERSION_KEY
from agent.registry.views import Views
from agent.registry.words import GenericWords, load_generic_words

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.registry.claims import Claims
    from agent.registry.parsing.index import PlaceIndex
    from agent.registry.parsing.parser import ParsedQuery, QueryParser
    from agent.registry.parsing.spec import ParserSpec
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

PLACES = "places"  # the sidecar kind of a registry's saved places
CHECK_SECONDS = 2.0  # how stale the known places may be after another process's ingest
READ_PAGE = 512  # records read per store call when places are read from the records (~1 ms of counting)


@dataclass
class _Places:
    version: Any
    exists: bool
    checked: float
    known: KnownPlaces
    index: "PlaceIndex"


def make_gazetteer(decl: Declaration, schema: RecordSchema) -> Gazetteer | None:
    if decl.gazetteer is None:
        return None
    suffixes = {p.level: p.suffix for p in decl.places.values() if p.level and p.suffix}
    return Gazetteer(decl.gazetteer.all_states(), decl.gazetteer.state_names, schema.keys, suffixes)


class Registry:
    def __init__(self, decl: Declaration, runtime: "Runtime", *, collection: str | None = None,
                 words: GenericWords | None = None, gazetteer: Gazetteer | None = None,
                 prompts: PromptSet | None = None) -> None:
        self.decl = decl
        self.name = decl.name
        self.runtime = runtime
        self.collection = collection or decl.collection
        self.words = words or load_generic_words()
        self.schema = RecordSchema(decl)
        self.levels = PlaceLevels.of(decl, self.schema.keys)
        built = make_gazetteer(decl, self.schema)
        self.gazetteer = gazetteer if gazetteer is not None and built is not None \
            and gazetteer.signature() == built.signature() else built
        self.args_model = build_args_model(decl)
        self.formatter = Formatter(self.schema, prompts or default_prompts())
        self.views = Views(self.formatter)
        self.cue = registry_cue(decl, self.words)  # what a message must hold for `claims` to be asked
        self.records_cue = records_cue(decl, self.words)  # a request for its records by their noun
        self.searcher = Searcher(runtime, decl, self.collection)
        self._places: _Places | None = None
        self._loading = asyncio.Lock()
        self._reading: asyncio.Task | None = None  # places read in the background

    @property
    def prompts(self) -> PromptSet:
        """The sentences of its notes and replies, said in the language being spoken
        (agent/prompts.py `speaking`): the formatter's, one set for the whole registry."""
        return self.formatter.prompts

    @prompts.setter
    def prompts(self, prompts: PromptSet) -> None:
        self.formatter.prompts = prompts

    # --- the parser, built on first use: a process whose messages never hold the registry's cue
    # (a knowledge base's questions) does not even import it (agent/registry/parsing/) ---------
    @cached_property
    def spec(self) -> "ParserSpec":
        from agent.registry.parsing.spec import ParserSpec

        return ParserSpec(self.decl, self.words)

    @cached_property
    def parser(self) -> "QueryParser":
        from agent.registry.parsing.parser import QueryParser

        return QueryParser(self.spec, self.args_model)

    @cached_property
    def claims(self) -> "Claims":
        """The pre-filter's rule: the wording makes a message a search of this registry (test
        `cue` first: what it does not match, this never claims)."""
        from agent.registry.claims import Claims

        return Claims(self.decl, self.words, self.parser)

    # --- places --------------------------------------------------------------------------
    async def places(self) -> _Places:
        now = time.monotonic()
        cached = self._places
        if cached is not None and now - cached.checked < CHECK_SECONDS and \
                cached.checked > self.runtime.written_at(self.collection):
            return cached
        async with self._loading:
            meta = await self.runtime.store.collection_metadata(self.collection)
            version = (meta or {}).get(VERSION_KEY)
            cached = self._places
            if cached is not None and cached.version == version and cached.exists == (meta is not None):
                cached.checked = time.monotonic()
                return cached
            known = self._saved(version, meta) if meta is not None else KnownPlaces.from_records(self.levels, [])
            if known is None and cached is not None and cached.exists and meta is not None:
                # another host changed the registry (a shared server) and this machine has not its
                # places: they are read in the background while searches keep the previous ones
                cached.checked = time.monotonic()
                if self._reading is None or self._reading.done():
                    self._reading = self.runtime.spawn(self._read_in_background(version))
                return cached
            if known is None:  # none saved yet (a registry from an older build): read once
                known = await self._read_places(version)
            return self._keep(version, meta is not None, known)

    def _keep(self, version: Any, exists: bool, known: KnownPlaces) -> _Places:
        from agent.registry.parsing.index import PlaceIndex

        index = PlaceIndex(known, self.levels, self.gazetteer, self.decl.place_aliases, self.spec.filler)
        self._places = _Places(version, exists, time.monotonic(), known, index)
        return self._places

    def _saved(self, version: str | None, meta: dict[str, Any] | None = None) -> KnownPlaces | None:
        """The places saved for this registry version (read in time proportional to their size):
        this host's, or those the ingesting host put in a shared store's metadata."""
        saved = sidecar.load(self.runtime, self.collection, PLACES)
        if saved is not None and version is not None and saved.get("version") == version:
            return KnownPlaces.from_json(saved["places"])
        shared = (meta or {}).get(PLACES_KEY)
        if isinstance(shared, dict) and version is not None and shared.get("version") == version:
            sidecar.save(self.runtime, self.collection, PLACES, shared)
            return KnownPlaces.from_json(shared["places"])
        return None

    async def _read_places(self, version: str | None) -> KnownPlaces:
        """All the records' places, counted a page at a time between searches, saved for `version`."""
        known = KnownPlaces.from_records(self.levels, [])
        offset = None
        while True:
            points, offset = await self.runtime.store.scroll(self.collection, limit=READ_PAGE, offset=offset,
                                                             with_payload=self.levels.stored_fields(), with_vectors=False)
            known.count(self.levels, [self.levels.located(p.payload or {}) for p in points])
            if offset is None:
                break
            await self.runtime.idle()
        if version is not None:
            sidecar.save(self.runtime, self.collection, PLACES, {"version": version, "places": known.to_json()})
        return known

    async def _read_in_background(self, version: str | None) -> None:
        try:
            known = await self._read_places(version)
            async with self._loading:
                self._keep(version, True, known)
        except Exception as exc:  # the store is down: keep the previous places, try again later
            log.warning("places of %s not refreshed: %s", self.collection, type(exc).__name__)

    async def warm(self) -> None:
        """What a first search would otherwise load in a user's wait: the places, the collection
        read from disk (one record) and the zip-code data."""
        await self.places()
        if self._places is not None and self._places.exists:
            await self.runtime.store.scroll(self.collection, limit=1, with_payload=False, with_vectors=False)
        if self.gazetteer is not None:
            self.gazetteer.warm()

    def forget_places(self) -> None:
        self._places = None

    # --- ingest, parse, search -------------------------------------------------------------
    async def ingest(self, path: Path, *, embedder: "Embedder | None" = None) -> IngestReport:
        return await self.ingest_rows(self.schema.parse_file(Path(path)), embedder=embedder)

    async def ingest_rows(self, parsed: ParsedRows, *, embedder: "Embedder | None" = None) -> IngestReport:
        report = await ingest_rows(self.runtime, self.schema, parsed, collection=self.collection, embedder=embedder,
                                   levels=self.levels, known=await self._saved_places())
        if report.places is not None:  # counted from what changed: saved for every process
            version = ((await self.runtime.store.collection_metadata(self.collection)) or {}).get(VERSION_KEY)
            if version is not None:
                sidecar.save(self.runtime, self.collection, PLACES, {"version": version, "places": report.places.to_json()})
        self.forget_places()
        await self.places()  # ready now, at ingest, not at the next process's first search
        return report

    async def _saved_places(self) -> KnownPlaces | None:
        """The places saved for the registry as it is now (none before its first ingest), or None."""
        meta = await self.runtime.store.collection_metadata(self.collection)
        return KnownPlaces.from_records(self.levels, []) if meta is None else self._saved(meta.get(VERSION_KEY), meta)

    async def parse(self, text: str) -> "ParsedQuery":
        """The deterministic reading of `text` (see agent/registry/parsing/)."""
        return self.parser.parse(text, (await self.places()).index, self.prompts)

    def not_loaded(self) -> str:
        return self.prompts.text("registry_not_loaded", record=self.decl.record.singular, collection=self.collection,
                                 name=self.name)

    async def search(self, args: Any) -> RegistryResults:
        """Run a search; never raises for bad places (they come back as `message`)."""
        if isinstance(args, dict):
            args = self.args_model.model_validate(args)
        places = await self.places()
        if not places.exists:
            return RegistryResults(registry=self.name, text=self.not_loaded(), message=self.not_loaded(), args=args)
        geocoder = Geocoder(places.known, self.levels, self.gazetteer)
        resolved = Resolver(self.decl, places.known, geocoder, self.prompts).resolve(args)
        if resolved.message:
            return RegistryResults(registry=self.name, text=resolved.message, message=resolved.message, args=args)
        flt = models.Filter(must=resolved.conditions) if resolved.conditions else None
        limit = args.limit or MAX_RESULTS
        near, notes, ranked = resolved.near, list(resolved.notes), None
        s = self.searcher
        if args.query:
            try:
                ranked = await s.ranked(flt, args.query, limit)
            except Exception as exc:  # embedder missing or mismatched: the filters still answer
                notes.append(self.prompts.text("registry_name_matching_unavailable",
                                               error=f"{type(exc).__name__}: {exc}"))
        if ranked is not None:
            points, total, closest = ranked
            if closest:  # no record holds the words: the closest by meaning, said so
                notes.append(self.prompts.text("registry_closest", record=self.decl.record.singular, query=args.query))
            hits = [s.hit(p, args, near, round(p.score, 4) if p.score is not None else None) for p in points]
            if near:  # relevance picks, distance orders
                hits.sort(key=lambda h: (h.distance_miles is None, h.distance_miles or 0.0))
        else:
            keys = await s.scroll_all(flt)  # every match's sort keys, then full records for the page only
            total = len(keys)
            keys.sort(key=lambda p: s.sort_key(p.payload or {}, near))
            page = [p.id for p in keys[:limit]]
            records = await s.retrieve(page)
            hits = [s.hit(records[pid], args, near, None) for pid in page if pid in records]
        if total == 0:
            notes.append(self.prompts.text("registry_no_match", record=self.decl.record.singular,
                                           criteria=self.formatter.describe(args, resolved.near, resolved.radius_miles)))
        results = RegistryResults(registry=self.name, hits=hits, total=total, message=" ".join(notes) or None,
                                  near=near, radius_miles=resolved.radius_miles, args=args)
        results.text = self.formatter.results_text(results)
        return results
