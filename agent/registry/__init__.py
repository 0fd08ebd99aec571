"""The registry engine: a registry declared in YAML, loaded from CSV, searched by command, tool
and route — with no word of any registry in Python (docs/registries.md).

declaration.py  the YAML's model (fields.py: the field types; checks.py: the rules between keys)
records.py      CSV rows -> typed records, row errors, point ids, content hashes (values.py: cells)
keys.py         place names as filter keys
places.py       place fields by role, the registry's known places; gazetteer.py: offline US places;
                geocoder.py: a place text -> coordinates or suggestions
store.py        the collection, payload indexes, upserts; ingest.py: idempotent, incremental ingest
arguments.py    the search arguments (the model's tool schema), generated with create_model
parsing/        the `/`-command parser, data-driven
filters.py      arguments -> payload and geo filters; search.py: ranking and hits
format.py       the summary line and the text for the model; template.py: display templates;
                views.py: RecordView, Reference, `--json`
command.py      the command on every surface; extraction.py: the router model's one call
claims.py       does a message's wording make it a search of this registry?
evaluation.py   the eval section named after the registry
registry.py     `Registry`: one registry over one runtime, owning its caches
loader.py       the declarations of a deployment (ASKDESK_REGISTRIES, <data_dir>/registries/)
"""
