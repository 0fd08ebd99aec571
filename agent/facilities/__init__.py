"""The licensed-facility registry: CSV ingestion, offline geocoding, search and `/facility`.

registry.py      CSV row -> typed `Facility` (column mapping from settings)
geocode.py       zip / city / county / "lat,lon" -> coordinates, fuzzy place suggestions
places.py        the registry's known places, cached per process
store.py         the Qdrant collection: payload, vectors, payload indexes
ingest.py        idempotent, incremental `ingest-facilities`
search.py        `FacilitySearchArgs` -> `FacilityResults` (payload filters, geo radius, ranking)
query_parser.py  deterministic `/facility` text -> `FacilitySearchArgs`
command.py       `run_facility_command`: parse + search + summary, for every surface
"""
