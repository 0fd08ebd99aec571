"""Registry declarations: what a YAML file may say, the one-line errors when it is wrong, and
the registries of a deployment (ASKDESK_REGISTRIES and <data_dir>/registries/)."""

from __future__ import annotations

import json

import pytest
import yaml

from agent.config import Settings
from agent.registry.arguments import build_args_model
from agent.registry.declaration import DeclarationError, load_declaration, parse_declaration
from agent.registry.loader import load_declarations, registries_dir
from agent.registry.template import Piece, render_piece
from tests.conftest import REPO

DEMO = REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml"
OFFICE = REPO / "examples" / "hr-it-handbook" / "registries" / "office.yaml"

MINIMAL = {
    "name": "equipment", "collection": "equipment", "title": "IT equipment", "description": "laptops and screens",
    "record": {"singular": "item", "plural": "items"},
    "fields": {"sku": "id", "model": "name", "kind": {"type": "tags", "values": ["laptop", "monitor"]}},
    "command": {"name": "equipment", "usage": "Find equipment."},
    "tool": {"name": "search_equipment", "description": "Find equipment."},
}


def broken(**changes) -> dict:
    data = json.loads(json.dumps(MINIMAL))
    for key, value in changes.items():
        target = data
        *path, last = key.split("__")
        for part in path:
            target = target[part]
        target[last] = value
    return data


def error(data, source="equipment.yaml") -> str:
    with pytest.raises(DeclarationError) as exc:
        parse_declaration(data, source)
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"{source}: ")
    return message


def test_the_shipped_declarations_load():
    demo, office = load_declaration(DEMO), load_declaration(OFFICE)
    assert (demo.name, demo.id_field, demo.name_field, list(demo.places)) == (
        "facility", "operation_number", "name", ["city", "zip", "county"])
    assert demo.path == DEMO and office.geo[0] == "location" and office.gazetteer.all_states()[:2] == ["TX", "CO"]


def test_a_minimal_declaration_needs_no_places_or_display():
    decl = parse_declaration(MINIMAL, "m.yaml")
    model = build_args_model(decl)
    assert list(model.model_fields) == ["query", "kind", "limit"] and model.__name__ == "ItemSearchArgs"
    assert model(kind=["laptop"]).has_criteria() and not model(limit=0).has_criteria()


@pytest.mark.parametrize(("data", "says"), [
    (broken(fields={"model": "name"}), "fields: declare exactly one field of type id (found 0: none)"),
    (broken(fields__kind={"type": "colour"}), "fields.kind: Input tag 'colour' found using 'type' does not match"),
    (broken(fields__kind={"type": "flag", "ask": "x", "words": ["ok", "(bad"]}),
     "fields.kind.words: entry 2 ('(bad') is not a valid regular expression"),
    (broken(fields__kind={"type": "flag", "words": ["x"]}), "fields.kind.words: a flag the parser reads must be a filter"),
    (broken(fields__city={"type": "place", "level": "city"}), "fields.city.level: a level needs a `gazetteer`"),
    (broken(fields__city={"type": "place", "level": "town"}, gazetteer={"state": "TX"}), "unknown level 'town'"),
    (broken(fields__city={"type": "place", "around": True}), "fields.city.around: searching around a place needs a `geo`"),
    (broken(display={"line": ["{model}", "{nme} x"]}), "display.line.2: {nme} is not a field"),
    (broken(display={"details": ["{model|shout}"]}), "unknown filter 'shout'"),
    (broken(json=["price"]), "json: 'price' is not a field"),
    (broken(fields__limit="text"), "fields.limit: 'limit' is a name the engine uses"),
    (broken(name="Equipment List"), "name: use lower-case letters"),
    (broken(gazetteer={"country": "FR"}), "gazetteer.country: only US is shipped"),
    (broken(colour="blue"), "colour: Extra inputs are not permitted"),
])
def test_errors_name_the_file_and_the_key(data, says):
    assert says in error(data)


def test_yaml_and_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nfields: [a, b\n", encoding="utf-8")
    with pytest.raises(DeclarationError, match=r"bad.yaml: invalid YAML \(line 3\)"):
        load_declaration(bad)
    with pytest.raises(DeclarationError, match="cannot read the registry declaration"):
        load_declaration(tmp_path / "absent.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n", encoding="utf-8")
    with pytest.raises(DeclarationError, match="expected a mapping"):
        load_declaration(listed)


def test_templates():
    values = {"a": "1 MAIN ST", "c": "FORT WORTH", "z": "", "ages": ["infant", "toddler"], "n": 0, "d": 1.234}
    assert render_piece(Piece.model_validate({"parts": ["{a}", "{c|proper}", "{z}"]}), values) == "1 MAIN ST, Fort Worth"
    assert render_piece(Piece.model_validate("ages {ages|join(/)}"), values) == "ages infant/toddler"
    assert render_piece(Piece.model_validate("{ages|lower}"), values) == "infant, toddler"
    assert render_piece(Piece.model_validate("capacity {n}"), values) == "capacity 0"  # 0 is a value
    assert render_piece(Piece.model_validate("{d:.1f} mi"), values) == "1.2 mi"
    assert render_piece(Piece.model_validate("{z}"), values) is None
    assert render_piece(Piece.model_validate({"text": "{z}", "default": "none"}), values) == "none"
    assert render_piece(Piece.model_validate("{c|title}"), {"c": "O'DONNELL"}) == "O'donnell"
    assert render_piece(Piece.model_validate("{c|proper}"), {"c": "O'DONNELL"}) == "O'Donnell"


def _write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_a_deployment_has_the_listed_and_the_data_dir_registries(tmp_path, monkeypatch):
    settings = Settings(data_dir=tmp_path / "data", registries=[DEMO])
    _write(registries_dir(settings) / "equipment.yaml", MINIMAL)
    assert [d.name for d in load_declarations(settings)] == ["facility", "equipment"]
    monkeypatch.setenv("ASKDESK_REGISTRIES", f"{DEMO},{OFFICE}")
    assert [d.name for d in load_declarations(Settings(data_dir=tmp_path / "none"))] == ["facility", "office"]
    assert load_declarations(Settings(data_dir=tmp_path / "none", registries=[])) == []


def test_conflicts_fail_with_one_line(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", registries=[DEMO])
    (registries_dir(settings)).mkdir(parents=True)
    (registries_dir(settings) / "facility.yaml").write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    assert [d.name for d in load_declarations(settings)] == ["facility"]  # the same file twice counts once
    _write(registries_dir(settings) / "facility.yaml", {**MINIMAL, "name": "facility"})
    with pytest.raises(DeclarationError, match="registry 'facility' is already declared by"):
        load_declarations(settings)
    _write(registries_dir(settings) / "facility.yaml", {**MINIMAL, "command": {"name": "facility", "usage": "u"}})
    with pytest.raises(DeclarationError, match="command 'facility' is already registry 'facility''s"):
        load_declarations(settings)
    with pytest.raises(DeclarationError, match="no such registry declaration"):
        load_declarations(Settings(data_dir=tmp_path / "x", registries=[tmp_path / "absent.yaml"]))
