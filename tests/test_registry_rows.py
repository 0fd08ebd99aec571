"""A registry's CSV -> typed records through its declaration (the demo's facility registry):
types, hours and days, bad rows with line numbers, another registry's headers by declaration."""

from __future__ import annotations

import csv

import pytest
import yaml

from agent.registry.declaration import load_declaration
from agent.registry.records import RecordSchema, RegistryFormatError
from agent.yamlio import safe_load
from tests.conftest import REPO, SAMPLE_FACILITIES

DEMO = REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml"
HEADER = (
    "operation_id,operation_number,operation_type,name,address,city,zip,county,phone,issuance_type,ages_served,"
    "hours,days,capacity,special_needs,accredited,get_well_care,after_school_care,drop_in_care,pre_k,"
    "special_skills,part_time_care,transportation,email,website,last_modified,latitude,longitude"
)


def schema(path=DEMO) -> RecordSchema:
    return RecordSchema(load_declaration(path))


def _row(num: str, name: str = "Sunny Days", *, capacity: str = "50", accredited: str = "N",
         hours: str = "07:00 AM-06:00 PM", ages: str = '"Infant, Toddler"', lat: str = "30.1",
         days: str = "MonTueWedThuFri") -> str:
    return (f"1,{num},Licensed Child-Care Center,{name},1 MAIN ST,AUSTIN,78702-1111,TRAVIS,512-000-0000,"
            f"Full Permit,{ages},{hours},{days},{capacity},N,{accredited},N,N,N,N,N,N,N,,,2015-01-16,"
            f"{lat},-97.7")


def parse(*rows: str):
    return schema().parse_text("\n".join([HEADER, *rows]) + "\n", source="t.csv")


def test_the_sample_registry_is_fully_typed():
    parsed = schema().parse_file(SAMPLE_FACILITIES)
    assert parsed.rows == 121 and len(parsed.records) == 121 and parsed.errors == []
    raw = {r["operation_number"]: r for r in csv.DictReader(SAMPLE_FACILITIES.open(encoding="utf-8"))}
    for f in parsed.records:
        r = raw[f["operation_number"]]
        assert f["capacity"] == int(r["capacity"])
        assert f["accredited"] is (r["accredited"] == "Y") and f["transportation"] is (r["transportation"] == "Y")
        assert f["location"]["lat"] == pytest.approx(float(r["latitude"]))
        assert f["zip5"] == r["zip"][:5] and f["city_key"] == r["city"].lower()
        assert ("infant" in f["ages"]) is ("Infant" in r["ages_served"])
        assert ("pre-k" in f["ages"]) is ("Pre-Kindergarten" in r["ages_served"])
    ebenezer = next(f for f in parsed.records if f["operation_number"] == "139")
    assert (ebenezer["open_minutes"], ebenezer["close_minutes"]) == (7 * 60, 17 * 60 + 30)


@pytest.mark.parametrize("hours,expected", [("06:30 AM-06:00 PM", (390, 1080)), ("6:30am - 6pm", (390, 1080)),
                                            ("07:00-18:30", (420, 1110)), ("12:12 PM-05:30 PM", (732, 1050))])
def test_hours_formats(hours, expected):
    (record,) = parse(_row("1", hours=hours)).records
    assert (record["open_minutes"], record["close_minutes"]) == expected


@pytest.mark.parametrize("days,expected", [("Mon-Fri", ["mon", "tue", "wed", "thu", "fri"]), ('"Sat, Sun"', ["sat", "sun"])])
def test_days_formats(days, expected):
    (record,) = parse(_row("1", days=days)).records
    assert record["days"] == expected


def test_bad_rows_are_reported_with_line_numbers_and_skipped():
    parsed = parse(
        _row("100"),                                        # 2 ok
        _row("101", capacity="lots"),                       # 3 bad capacity
        _row("102", name=""),                               # 4 missing name
        _row("103", accredited="maybe"),                    # 5 bad flag
        _row("104", name='"Two\nLine Name"'),               # 6-7 ok, quoted newline
        _row("100"),                                        # 8 duplicate of line 2
        _row("105", hours="sometimes"),                     # 9 bad hours
        _row("106", lat="north"),                           # 10 bad coordinates
        _row("107", ages='"Teen"'),                         # 11 unknown age group
        _row("108") + ",extra,values",                      # 12 too many values
        _row("109"),                                        # 13 ok
    )
    assert [f["operation_number"] for f in parsed.records] == ["100", "104", "109"]
    assert parsed.rows == 11
    by_line = {e.line: e.message for e in parsed.errors}
    assert sorted(by_line) == [3, 4, 5, 8, 9, 10, 11, 12]
    assert "lots" in by_line[3] and "name" in by_line[4] and "maybe" in by_line[5]
    assert "duplicate" in by_line[8] and "line 2" in by_line[8]
    assert "sometimes" in by_line[9] and "north" in by_line[10] and "Teen" in by_line[11]
    assert parsed.unparsed_ids >= {"101", "103", "105"}


def test_another_registrys_headers_are_its_declaration_not_code(tmp_path):
    """A registry with other headers loads by changing the columns in its YAML."""
    data = safe_load(DEMO.read_text(encoding="utf-8"))
    renamed = {"operation_number": "License", "name": "Facility Name", "city": "Town", "zip": "Postal",
               "county": "Parish", "ages": "Ages", "hours": "Open", "capacity": "Max", "accredited": "Accredited?"}
    fields = {n: f if isinstance(f, dict) else {"type": f} for n, f in data["fields"].items()}  # `phone: text`
    for field, header in renamed.items():
        fields[field]["column"] = header
    data["fields"] = fields
    geo = next(n for n, f in fields.items() if f.get("type") == "geo")
    data["fields"][geo].update({"latitude": "Lat", "longitude": "Lng"})
    declaration = tmp_path / "other.yaml"
    declaration.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    other = schema(declaration).parse_text(
        "License,Facility Name,Town,Postal,Parish,Ages,Open,Max,Accredited?,Lat,Lng,Region\n"
        '77-1,Bayou Kids,SHREVEPORT,71101,CADDO,"Infant, School",6:00 AM-6:00 PM,80,Yes,32.5,-93.75,NW\n', source="o.csv")
    assert other.errors == []
    (f,) = other.records
    assert (f["operation_number"], f["name"], f["city_key"], f["zip5"], f["capacity"]) == ("77-1", "Bayou Kids", "shreveport", "71101", 80)
    assert f["accredited"] is True and f["ages"] == ["infant", "school"] and f["open_minutes"] == 360
    assert f["location"]["lon"] == -93.75 and f["extra"] == {"Region": "NW"}  # unmapped columns are kept
    with pytest.raises(RegistryFormatError, match="License|operation"):
        schema().parse_text("License,Facility Name\n1,x\n", source="o.csv")  # the demo's headers are missing
